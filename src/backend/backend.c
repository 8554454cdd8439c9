// backend.c: the backend-independent entry points: the settings' parsers and names, errors,
// freeing, and the calls that hand each operation to the backend's table (backend_impl.h).
// Which backend a device makes is src/registry/device.c's (it calls the backends' constructors).
// defines: sk_device_parse, sk_rnn_impl_words, sk_rnn_impl_parse, sk_rnn_impl_name, sk_cuda_graph_words,
//          sk_cuda_graph_parse, sk_cuda_graph_name, sk_tensor_cores_words, sk_tensor_cores_parse,
//          sk_tensor_cores_name, sk_precision_words, sk_precision_parse, sk_precision_name,
//          sk_backend_config_make, sk_backend_cfg, sk_backend_layout, sk_backend_notice,
//          sk_backend_device, sk_backend_device_uuid, sk_backend_error, sk_backend_fail, sk_backend_free, sk_backend_name,
//          sk_backend_set_params, sk_backend_get_params, sk_backend_get_grads,
//          sk_backend_set_optimizer_state, sk_backend_get_optimizer_state, sk_backend_set_state,
//          sk_backend_get_state, sk_backend_state_floats, sk_backend_forward, sk_backend_get_logits, sk_backend_backward,
//          sk_backend_grad_buffer, sk_backend_grad_norm, sk_backend_update, sk_backend_has_sampler,
//          sk_backend_sample
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"

sk_status sk_device_parse(const char *device, int *is_auto, int *is_cuda, int *index, sk_error *err) {
    *is_auto = 0, *is_cuda = 0, *index = 0;
    if (strcmp(device, "auto") == 0) {
        *is_auto = 1;
        return SK_OK;
    }
    if (strcmp(device, "cpu") == 0) return SK_OK;
    if (strcmp(device, "cuda") == 0) {
        *is_cuda = 1;
        return SK_OK;
    }
    if (strncmp(device, "cuda:", 5) == 0 && device[5] >= '0' && device[5] <= '9') {
        char *end;
        errno = 0;
        long n = strtol(device + 5, &end, 10);
        if (*end == '\0' && errno == 0 && n >= 0 && n < 1024) {
            *is_cuda = 1;
            *index = (int)n;
            return SK_OK;
        }
    }
    return sk_fail(err, SK_ERR_ARG, "device expects auto, cpu, cuda or cuda:N, got \"%s\"", device);
}

#define RNN_IMPL_ROW(id, tag, w, h) {.value = id, .word = w, .help = h},
static const sk_word rnn_impl_rows[] = {SK_RNN_IMPLS(RNN_IMPL_ROW)};
#undef RNN_IMPL_ROW
const sk_words sk_rnn_impl_words = SK_WORDS("rnn-impl", rnn_impl_rows);
SK_WORDS_FNS(sk_rnn_impl_parse, sk_rnn_impl_name, sk_rnn_impl, sk_rnn_impl_words)

static const sk_word cuda_graph_rows[] = {
    {.value = SK_GRAPH_AUTO, .word = "auto", .help = NULL},
    {.value = SK_GRAPH_ON, .word = "on", .help = NULL},
    {.value = SK_GRAPH_OFF, .word = "off", .help = NULL},
    {.value = SK_GRAPH_TRY, .word = "try", .help = NULL},
};
const sk_words sk_cuda_graph_words = SK_WORDS("cuda-graph", cuda_graph_rows);
SK_WORDS_FNS(sk_cuda_graph_parse, sk_cuda_graph_name, sk_cuda_graph, sk_cuda_graph_words)

static const sk_word tensor_cores_rows[] = {
    {.value = SK_TENSOR_CORES_DEFAULT, .word = "auto", .help = NULL},
    {.value = SK_TENSOR_CORES_ON, .word = "on", .help = NULL},
    {.value = SK_TENSOR_CORES_OFF, .word = "off", .help = NULL},
};
const sk_words sk_tensor_cores_words = SK_WORDS("tensor-cores", tensor_cores_rows);
SK_WORDS_FNS(sk_tensor_cores_parse, sk_tensor_cores_name, sk_tensor_cores, sk_tensor_cores_words)

static const sk_word precision_rows[] = {
    {.value = SK_PRECISION_FP32, .word = "fp32", .help = NULL},
    {.value = SK_PRECISION_TF32, .word = "tf32", .help = NULL},
    {.value = SK_PRECISION_BF16, .word = "bf16", .help = NULL},
    {.value = SK_PRECISION_AUTO, .word = "auto", .help = NULL},
};
const sk_words sk_precision_words = SK_WORDS("precision", precision_rows);
SK_WORDS_FNS(sk_precision_parse, sk_precision_name, sk_precision, sk_precision_words)

sk_backend_config sk_backend_config_make(const sk_backend_config *settings, const sk_backend_shape *shape) {
    sk_backend_config c = *settings;
    c.model = shape->model;
    c.batch_size = shape->batch_size, c.seq_len = shape->seq_len, c.training = shape->training;
    c.seed = shape->seed;
    c.stream_offset = shape->stream_offset, c.global_batch = shape->global_batch;
    return c;
}

const sk_backend_config *sk_backend_cfg(const sk_backend *b) { return &b->cfg; }
const sk_param_layout *sk_backend_layout(const sk_backend *b) { return &b->layout; }
const char *sk_backend_notice(const sk_backend *b) { return b->notice; }
const char *sk_backend_device(const sk_backend *b) { return b->device; }
const char *sk_backend_device_uuid(const sk_backend *b) { return b->device_uuid; }

const char *sk_backend_error(const sk_backend *b) {
    return b && b->err.msg[0] ? b->err.msg : "no message";
}

sk_status sk_backend_fail(sk_error *err, sk_status st, const sk_backend *b, const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return sk_fail(err, st, "the %s backend failed %s: %s", b->ops->name, what, sk_backend_error(b));
}

void sk_backend_free(sk_backend *b) {
    if (b) b->ops->destroy(b);
}

const char *sk_backend_name(const sk_backend *b) { return b->ops->name; }

sk_status sk_backend_set_params(sk_backend *b, const float *params) { return b->ops->set_params(b, params); }

sk_status sk_backend_get_params(sk_backend *b, float *params) { return b->ops->get_params(b, params); }

sk_status sk_backend_get_grads(sk_backend *b, float *grads) { return b->ops->get_grads(b, grads); }

// The slots of cfg.optimizer (optim.h's table) on a training backend.
static sk_status check_slot(sk_backend *b, int slot, const char *what) {
    const sk_optim_info *o = sk_optim_of(b->cfg.optimizer);
    if (!b->cfg.training) return sk_fail(&b->err, SK_ERR_ARG, "%s on an inference-only backend", what);
    if (!o || slot < 0 || slot >= o->n_slots)
        return sk_fail(&b->err, SK_ERR_ARG, "%s: optimizer %s has no state slot %d", what,
                       sk_optim_kind_name(b->cfg.optimizer), slot);
    return SK_OK;
}

sk_status sk_backend_set_optimizer_state(sk_backend *b, int slot, const float *x) {
    sk_status st = check_slot(b, slot, "set_optimizer_state");
    return st == SK_OK ? b->ops->set_optimizer_state(b, slot, x) : st;
}

sk_status sk_backend_get_optimizer_state(sk_backend *b, int slot, float *x) {
    sk_status st = check_slot(b, slot, "get_optimizer_state");
    return st == SK_OK ? b->ops->get_optimizer_state(b, slot, x) : st;
}

sk_status sk_backend_set_state(sk_backend *b, const float *state) { return b->ops->set_state(b, state); }

sk_status sk_backend_get_state(sk_backend *b, float *state) { return b->ops->get_state(b, state); }
size_t sk_backend_state_floats(const sk_backend *b) {
    const sk_model_config *m = &b->layout.cfg;
    return (size_t)sk_model_cell(m)->n_states * m->num_layers * b->cfg.batch_size * m->hidden_size;
}

sk_status sk_backend_forward(sk_backend *b, const int32_t *x, const int32_t *y, int len, sk_mode mode, int64_t step,
                             double *loss_sum) {
    return b->ops->forward(b, x, y, len, mode, step, loss_sum);
}

sk_status sk_backend_get_logits(sk_backend *b, float *logits) { return b->ops->get_logits(b, logits); }

sk_status sk_backend_backward(sk_backend *b) { return b->ops->backward(b); }

sk_status sk_backend_grad_buffer(sk_backend *b, float **grads, int *on_device) {
    return b->ops->grad_buffer(b, grads, on_device);
}

sk_status sk_backend_grad_norm(sk_backend *b, double *norm) { return b->ops->grad_norm(b, norm); }

sk_status sk_backend_update(sk_backend *b, const sk_optim_hparams *h, float lr, float clip_scale, int64_t step) {
    if (h->kind != b->cfg.optimizer)
        return sk_fail(&b->err, SK_ERR_ARG, "an optimizer step of %s on a backend whose state is %s's",
                       sk_optim_kind_name(h->kind), sk_optim_kind_name(b->cfg.optimizer));
    return b->ops->update(b, h, lr, clip_scale, step);
}

int sk_backend_has_sampler(const sk_backend *b) { return b->ops->sample != NULL; }

sk_status sk_backend_sample(sk_backend *b, const int32_t *x, int n, const sk_sample_opts *o, const uint64_t *keys,
                            int64_t position, int32_t *out) {
    return b->ops->sample(b, x, n, o, keys, position, out);
}
