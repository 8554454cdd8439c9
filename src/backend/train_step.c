// train_step.c: the training step's one entry point (backend.h): a backend's deferred step
// where it has one and no reduce hook is set, else the eager sequence of its ops, which keeps
// its statistics in b->stats until they are read.
// defines: sk_backend_train_step, sk_backend_read_stats, sk_backend_step
#include <math.h>

#include "backend/backend_impl.h"
#include "shakespeare/step_math.h"

sk_status sk_backend_step(sk_backend *b, const sk_optim_hparams *h, float lr, int64_t step, double *grad_norm) {
    double norm = 0.0;
    sk_status st = b->ops->grad_norm(b, &norm);
    if (grad_norm) *grad_norm = norm;
    if (st != SK_OK) return st;
    // Named without printf's sign of a NaN, which depends on how the NaN arose.
    if (!isfinite(norm))
        return sk_fail(&b->err, SK_ERR_NUMERIC, "the gradient norm is %s", isnan(norm) ? "nan" : "inf");
    return sk_backend_update(b, h, lr, sk_clip_scale(norm, h->grad_clip), step);
}

// Records step a as the first bad one (see sk_step_stats).
static void record_bad(sk_step_stats *s, const sk_train_step_args *a, int is_norm, double loss_sum, double norm) {
    s->bad_step = a->opt_step, s->bad_is_norm = is_norm, s->bad_loss_sum = loss_sum, s->bad_norm = norm;
}

// forward, backward, the reduce hook, the mean-loss test (before the norm, which a non-finite
// loss makes meaningless), then sk_backend_step. A failure leaves its whole message in err.
static sk_status eager_step(sk_backend *b, const sk_train_step_args *a, sk_error *err) {
    sk_step_stats *s = &b->stats;
    double loss_sum = 0.0, norm = 0.0;
    float *grads = NULL;
    int on_device = 0;
    sk_status st = b->ops->forward(b, a->x, a->y, a->len, SK_MODE_TRAIN, a->step, &loss_sum);
    if (st == SK_OK) st = b->ops->backward(b);
    if (st == SK_OK && a->reduce) st = b->ops->grad_buffer(b, &grads, &on_device);
    if (st != SK_OK) sk_backend_fail(err, st, b, "at step %lld", (long long)a->opt_step);
    // Every rank calls the hook, failed or not; it keeps a failure's message in err.
    if (a->reduce) st = a->reduce->fn(a->reduce->ctx, st, &loss_sum, grads, b->layout.total, on_device, err);
    if (st != SK_OK) return st;
    s->loss_sum = loss_sum;
    const int rows_b = b->cfg.global_batch > 0 ? b->cfg.global_batch : b->cfg.batch_size;
    if (!isfinite(sk_mean_loss(loss_sum, (double)rows_b * a->len))) {
        record_bad(s, a, 0, loss_sum, 0.0);
        return SK_OK;
    }
    st = sk_backend_step(b, a->optim, a->lr, a->opt_step, &norm);
    s->grad_norm = norm;
    if (st == SK_ERR_NUMERIC) {
        record_bad(s, a, 1, loss_sum, norm);
        return SK_OK;
    }
    return st == SK_OK ? st : sk_backend_fail(err, st, b, "in the optimizer step %lld", (long long)a->opt_step);
}

sk_status sk_backend_train_step(sk_backend *b, const sk_train_step_args *a, sk_error *err) {
    if (a->optim->kind != b->cfg.optimizer)
        return sk_fail(err, SK_ERR_ARG, "a training step of optimizer %s on a backend whose state is %s's",
                       sk_optim_kind_name(a->optim->kind), sk_optim_kind_name(b->cfg.optimizer));
    if (b->ops->train_step && !a->reduce) {
        sk_status st = b->ops->train_step(b, a);
        return st == SK_OK ? st : sk_backend_fail(err, st, b, "at step %lld", (long long)a->opt_step);
    }
    if (b->stats.bad_step) return SK_OK; // after a bad step: parameters and moments stay as they were
    return eager_step(b, a, err);
}

sk_status sk_backend_read_stats(sk_backend *b, sk_step_stats *stats, sk_error *err) {
    if (b->ops->read_stats) {
        sk_status st = b->ops->read_stats(b, stats);
        return st == SK_OK ? st : sk_backend_fail(err, st, b, "in the steps read back");
    }
    *stats = b->stats;
    b->stats.bad_step = 0, b->stats.bad_is_norm = 0, b->stats.bad_loss_sum = 0.0, b->stats.bad_norm = 0.0;
    return SK_OK;
}
