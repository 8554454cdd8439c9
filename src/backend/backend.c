// backend.c: the backend-independent entry points: the settings' parsers and names, errors,
// freeing, and the calls that hand each operation to the backend's table (backend_impl.h).
// Which backend a device makes is src/registry/device.c's (it calls the backends' constructors).
// defines: sk_device_parse, sk_rnn_impl_parse, sk_cuda_graph_parse, sk_cuda_graph_name,
//          sk_tensor_cores_parse, sk_tensor_cores_name,
//          sk_precision_parse, sk_backend_error, sk_backend_fail, sk_backend_free, sk_backend_name,
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

// The index of s among the n names of flag's values, or SK_ERR_ARG naming them all.
static sk_status parse_choice(const char *s, const char *const *names, int n, const char *flag, int *out,
                              sk_error *err) {
    char list[160] = "";
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return SK_OK;
        }
        if (at < sizeof list)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ",
                                   names[i]);
    }
    return sk_fail(err, SK_ERR_ARG, "%s expects %s, got \"%s\"", flag, list, s);
}

static const char *const rnn_impl_names[SK_RNN_IMPL_COUNT] = {"auto", "cudnn", "persistent", "cudnn-persist",
                                                              "persistent-layerwise", "persistent-cluster"};

sk_status sk_rnn_impl_parse(const char *s, sk_rnn_impl *out, sk_error *err) {
    int i = 0;
    sk_status st = parse_choice(s, rnn_impl_names, SK_RNN_IMPL_COUNT, "rnn-impl", &i, err);
    if (st == SK_OK) *out = (sk_rnn_impl)i;
    return st;
}

static const char *const cuda_graph_names[] = {"auto", "on", "off", "try"};

sk_status sk_cuda_graph_parse(const char *s, sk_cuda_graph *out, sk_error *err) {
    int i = 0;
    sk_status st = parse_choice(s, cuda_graph_names, 4, "cuda-graph", &i, err);
    if (st == SK_OK) *out = (sk_cuda_graph)i;
    return st;
}

const char *sk_cuda_graph_name(sk_cuda_graph g) {
    return (unsigned)g < 4 ? cuda_graph_names[g] : "unknown";
}

static const char *const tensor_cores_names[] = {"auto", "on", "off"}; // sk_tensor_cores' order

sk_status sk_tensor_cores_parse(const char *s, sk_tensor_cores *out, sk_error *err) {
    int i = 0;
    sk_status st = parse_choice(s, tensor_cores_names, 3, "tensor-cores", &i, err);
    if (st == SK_OK) *out = (sk_tensor_cores)i;
    return st;
}

const char *sk_tensor_cores_name(sk_tensor_cores t) {
    return (unsigned)t < 3 ? tensor_cores_names[t] : "unknown";
}

sk_status sk_precision_parse(const char *s, sk_precision *out, sk_error *err) {
    const char *const names[4] = {sk_precision_name(SK_PRECISION_FP32), sk_precision_name(SK_PRECISION_TF32),
                                  sk_precision_name(SK_PRECISION_BF16), sk_precision_name(SK_PRECISION_AUTO)};
    int i = 0;
    sk_status st = parse_choice(s, names, 4, "precision", &i, err);
    if (st == SK_OK) *out = (sk_precision)i;
    return st;
}

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
