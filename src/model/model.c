// model.c: model.h: the shape check, the parameter layout (PyTorch's names, shapes and order) and
// initialization.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shakespeare/model.h"
#include "shakespeare/rng.h"

// Limits that keep every size well inside size_t and int arithmetic.
#define SK_MAX_DIM 65536
#define SK_MAX_VOCAB (1 << 21) // every Unicode scalar value fits

sk_status sk_model_config_check(const sk_model_config *c, sk_error *err) {
    if (c->vocab_size < 1 || c->vocab_size > SK_MAX_VOCAB)
        return sk_fail(err, SK_ERR_ARG, "vocabulary size must be in [1, %d], got %d", SK_MAX_VOCAB, c->vocab_size);
    if (c->embed_size < 1 || c->embed_size > SK_MAX_DIM)
        return sk_fail(err, SK_ERR_ARG, "embedding size must be in [1, %d], got %d", SK_MAX_DIM, c->embed_size);
    if (c->hidden_size < 1 || c->hidden_size > SK_MAX_DIM)
        return sk_fail(err, SK_ERR_ARG, "hidden size must be in [1, %d], got %d", SK_MAX_DIM, c->hidden_size);
    if (c->num_layers < 1 || c->num_layers > SK_MAX_LAYERS)
        return sk_fail(err, SK_ERR_ARG, "number of layers must be in [1, %d], got %d", SK_MAX_LAYERS, c->num_layers);
    if (!(c->dropout >= 0.0f && c->dropout < 1.0f))
        return sk_fail(err, SK_ERR_ARG, "dropout must be in [0, 1), got %g", (double)c->dropout);
    if (!(c->weight_drop >= 0.0f && c->weight_drop < 1.0f))
        return sk_fail(err, SK_ERR_ARG, "weight drop must be in [0, 1), got %g", (double)c->weight_drop);
    if (!sk_cell_get(c->cell))
        return sk_fail(err, SK_ERR_ARG, "cell %d is not one of %s", (int)c->cell, sk_cell_names());
    return SK_OK;
}

const sk_cell *sk_model_cell(const sk_model_config *cfg) { return sk_cell_get(cfg->cell); }

static void add_tensor(sk_param_layout *l, const char *name, int ndim, int d0, int d1) {
    sk_tensor_info *t = &l->tensors[l->n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    t->shape[0] = d0;
    t->shape[1] = ndim == 2 ? d1 : 0;
    t->numel = (size_t)d0 * (size_t)(ndim == 2 ? d1 : 1);
    t->offset = l->total;
    l->total += t->numel;
}

sk_status sk_param_layout_init(sk_param_layout *l, const sk_model_config *cfg, sk_error *err) {
    memset(l, 0, sizeof *l);
    sk_status st = sk_model_config_check(cfg, err);
    if (st != SK_OK) return st;
    int V = cfg->vocab_size, E = cfg->embed_size, H = cfg->hidden_size, L = cfg->num_layers;
    const sk_cell *cell = sk_model_cell(cfg);
    const int GH = cell->gates * H;
    l->cfg = *cfg;
    l->tensors = calloc((size_t)(3 + 4 * L), sizeof *l->tensors);
    if (!l->tensors) return sk_fail(err, SK_ERR_NOMEM, "out of memory for the parameter layout");
    char name[SK_TENSOR_NAME_MAX];
    add_tensor(l, "embedding.weight", 2, V, E);
    const char *p = cell->torch_prefix;
    for (int k = 0; k < L; k++) {
        snprintf(name, sizeof name, "%s.weight_ih_l%d", p, k);
        add_tensor(l, name, 2, GH, k == 0 ? E : H);
        snprintf(name, sizeof name, "%s.weight_hh_l%d", p, k);
        add_tensor(l, name, 2, GH, H);
        snprintf(name, sizeof name, "%s.bias_ih_l%d", p, k);
        add_tensor(l, name, 1, GH, 0);
        snprintf(name, sizeof name, "%s.bias_hh_l%d", p, k);
        add_tensor(l, name, 1, GH, 0);
    }
    add_tensor(l, "fc.weight", 2, V, H);
    add_tensor(l, "fc.bias", 1, V, 0);
    return SK_OK;
}

void sk_param_layout_free(sk_param_layout *l) {
    free(l->tensors);
    l->tensors = NULL;
    l->n_tensors = 0;
    l->total = 0;
}

const sk_tensor_info *sk_param_find(const sk_param_layout *l, const char *name) {
    for (int i = 0; i < l->n_tensors; i++)
        if (strcmp(l->tensors[i].name, name) == 0) return &l->tensors[i];
    return NULL;
}

sk_layer_offsets sk_layer_at(const sk_param_layout *l, int k) {
    // Tensor 0 is the embedding; layer k's four tensors follow in order.
    const sk_tensor_info *t = &l->tensors[1 + 4 * k];
    return (sk_layer_offsets){.w_ih = t[0].offset, .w_hh = t[1].offset, .b_ih = t[2].offset, .b_hh = t[3].offset,
                              .in = t[0].shape[1]};
}

sk_param_tensors sk_point_params(const sk_param_layout *l, float *buf) {
    sk_param_tensors v;
    memset(&v, 0, sizeof v);
    v.embedding = buf + sk_param_find(l, "embedding.weight")->offset;
    for (int k = 0; k < l->cfg.num_layers; k++) {
        const sk_layer_offsets o = sk_layer_at(l, k);
        v.layer[k] = (sk_layer_tensors){.w_ih = buf + o.w_ih, .w_hh = buf + o.w_hh, .b_ih = buf + o.b_ih,
                                        .b_hh = buf + o.b_hh};
    }
    v.fc_w = buf + sk_param_find(l, "fc.weight")->offset;
    v.fc_b = buf + sk_param_find(l, "fc.bias")->offset;
    return v;
}

static void fill_uniform(float *p, size_t n, float a, sk_rng *r) {
    for (size_t i = 0; i < n; i++) p[i] = (2.0f * sk_rng_uniform(r) - 1.0f) * a;
}

static const sk_word init_scheme_rows[] = {
    {.value = SK_INIT_UNIFORM, .word = "uniform", .help = NULL},
    {.value = SK_INIT_PYTORCH, .word = "pytorch", .help = NULL},
};
const sk_words sk_init_scheme_words = SK_WORDS("init", init_scheme_rows);

SK_WORDS_FNS(sk_init_scheme_parse, sk_init_scheme_name, sk_init_scheme, sk_init_scheme_words)

void sk_params_init(float *params, const sk_param_layout *l, sk_init_scheme scheme, float init_scale,
                    float forget_bias, uint64_t seed) {
    sk_rng r;
    sk_rng_seed(&r, seed);
    int H = l->cfg.hidden_size;
    for (int i = 0; i < l->n_tensors; i++) {
        const sk_tensor_info *t = &l->tensors[i];
        float *p = params + t->offset;
        if (scheme == SK_INIT_UNIFORM) {
            fill_uniform(p, t->numel, init_scale, &r);
        } else if (i == 0) { // nn.Embedding: N(0, 1)
            for (size_t j = 0; j < t->numel; j++) p[j] = sk_rng_normal(&r);
        } else { // nn.LSTM, nn.GRU, nn.RNN: U(+-1/sqrt(H)); nn.Linear(H, V): U(+-1/sqrt(fan_in = H))
            fill_uniform(p, t->numel, 1.0f / sqrtf((float)H), &r);
        }
    }
    const int fg = sk_model_cell(&l->cfg)->forget_gate;
    if (forget_bias != 0.0f && fg >= 0) {
        for (int k = 0; k < l->cfg.num_layers; k++) {
            float *b = params + sk_layer_at(l, k).b_ih;
            for (int j = fg * H; j < (fg + 1) * H; j++) b[j] += forget_bias;
        }
    }
}
