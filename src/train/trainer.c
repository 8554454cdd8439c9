// trainer.c: the training loop (see trainer.h): steps, evaluation, checkpoints, samples and
// progress. trainer_setup.c makes the trainer it runs: the token cache (memory-mapped ids),
// the batchers, the training backend, and the output directory (outdir.h: its lock and the
// metrics log, held by rank 0 alone); an optional batch-1 backend for samples is made here
// on first use.
// Data-parallel: the batchers stay global (B streams); this rank's backend runs streams
// [b_off, b_off + b_local) of every window, and distributed/shard.h does the rest.
// The loop is the step (take_step: backend.h's one entry point, with the ranks' reduce hook
// when data-parallel) and the schedule (run_schedule: what is due after it).
// defines: sk_trainer_evaluate, sk_trainer_run, sk_progress_eta_s
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "distributed/shard.h"
#include "shakespeare/sampler.h"
#include "shakespeare/step_math.h"
#include "trainer_internal.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// The run's wall-clock seconds: those its checkpoint recorded when this process resumed it,
// and this process's since its run started (the metrics log's elapsed_s, the state's).
static double run_elapsed(const sk_trainer *t) {
    return t->elapsed_base + (now_s() - t->t0);
}

// The validation loss of the model as it stands, NaN when it was not evaluated at this step.
static double val_loss_now(const sk_trainer *t) {
    return t->last_eval_step == t->st.step ? t->last_val_loss : NAN;
}

sk_status sk_trainer_evaluate(sk_trainer *t, int which, double *mean_loss, sk_error *err) {
    const sk_batcher *bt = which == 1 ? &t->test : &t->val;
    if (!(which == 1 ? t->has_test : t->has_val))
        return sk_fail(err, SK_ERR_ARG, "there is no %s split to evaluate", which == 1 ? "test" : "validation");
    sk_backend *be = t->be;
    // Keep the carried training state aside; evaluation starts every stream from zero.
    // Each rank scores its own streams; the sums meet in one reduction at the end.
    sk_status st = sk_backend_get_state(be, t->state_local);
    if (st == SK_OK) st = sk_backend_set_state(be, NULL);
    double total = 0.0;
    size_t windows = sk_batcher_windows(bt, 1);
    for (size_t w = 0; w < windows && st == SK_OK; w++) {
        int len = sk_batcher_window(bt, w, t->x, t->y);
        double s = 0.0;
        const size_t first = (size_t)t->b_off * (size_t)len;
        st = sk_backend_forward(be, t->x + first, t->y + first, len, SK_MODE_EVAL, 0, &s);
        total += s;
    }
    sk_status restored = sk_backend_set_state(be, t->state_local);
    if (st == SK_OK) st = restored;
    if (st != SK_OK) sk_backend_fail(err, st, be, "during evaluation");
    if ((st = sk_shard_reduce(t->comm, st, &total, 1, err)) != SK_OK) return st;
    *mean_loss = total / ((double)bt->B * (double)bt->P);
    return SK_OK;
}

// Collective, data-parallel only: every rank's parameters and optimizer slots (just read back)
// have rank 0's bits. They must (the same summed gradients and the same update everywhere);
// a difference means the ranks compute differently (other GPU models or library versions),
// and a checkpoint of rank 0's alone would hide it.
static sk_status check_ranks_agree(sk_trainer *t, sk_error *err) {
    if (t->nranks == 1) return SK_OK;
    const size_t bytes = sizeof(float) * t->layout.total;
    uint32_t crc = sk_crc32(0, t->params, bytes);
    crc = sk_crc32(crc, t->st.slots, bytes * (size_t)t->st.n_slots);
    return sk_shard_check_same(t->comm, crc, t->st.step, err);
}

static sk_status save_checkpoint(sk_trainer *t, const char *name, sk_error *err) {
    sk_backend *be = t->be;
    const int L = t->o.model.num_layers, H = t->o.model.hidden_size, B = t->o.batch_size;
    sk_status st = sk_backend_get_params(be, t->params);
    for (int k = 0; k < t->st.n_slots && st == SK_OK; k++)
        st = sk_backend_get_optimizer_state(be, k, t->st.slots + (size_t)k * t->st.n_params);
    if (st == SK_OK) st = sk_backend_get_state(be, t->state_local);
    if (st != SK_OK) sk_backend_fail(err, st, be, "to hand over its state for %s", name);
    // Every rank's streams into rank 0's (S, L, B, H) state, one state tensor at a time; rank 0
    // alone writes what it holds, so the ranks must first be seen to hold the same model and moments.
    if ((st = sk_comm_agree(t->comm, st, err)) != SK_OK || (st = check_ranks_agree(t, err)) != SK_OK) return st;
    t->st.elapsed_s = run_elapsed(t);
    t->st.val_loss = val_loss_now(t);
    for (int s = 0; s < t->n_states; s++)
        if ((st = sk_shard_gather_state(t->comm, t->state_local + (size_t)s * L * t->b_local * H, t->gathered,
                                        t->st.state + (size_t)s * L * B * H, L, B, t->b_local, H, 0, err)) != SK_OK)
            return st;
    if (t->rank == 0) {
        st = sk_checkpoint_save(t->o.out_dir, name, &t->o.model, &t->vocab, t->params, t->train_config,
                                &t->st, err);
        if (st == SK_OK) st = sk_outdir_checkpoint_written(&t->od, name, err); // --overwrite: the old run goes now
    }
    if ((st = sk_comm_agree(t->comm, st, err)) == SK_OK && t->rank == 0 && t->cb.on_checkpoint) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s.safetensors", t->o.out_dir, name);
        t->cb.on_checkpoint(t->cb.ctx, path);
    }
    return st;
}

typedef struct {
    char *buf;
    size_t n, cap;
    const sk_vocab *vocab;
} text_sink;

static int append_char(int32_t id, void *ctx) {
    text_sink *s = ctx;
    char u[4];
    int k = sk_vocab_char_bytes(s->vocab, id, u);
    if (s->n + (size_t)k + 1 > s->cap) return 1;
    memcpy(s->buf + s->n, u, (size_t)k);
    s->n += (size_t)k;
    s->buf[s->n] = '\0';
    return 0;
}

static sk_status print_sample(sk_trainer *t, sk_error *err) {
    sk_status st;
    if (!t->sampler) {
        const sk_backend_shape shape = {.model = t->o.model, .batch_size = 1, .seq_len = t->o.seq_len,
                                        .training = 0, .seed = t->st.seed};
        const sk_backend_config bc = sk_backend_config_make(&t->o.backend, &shape); // as recorded: what ran
        char dev[32] = "cpu"; // the trainer's own device
        if (strcmp(sk_backend_name(t->be), "cuda") == 0) snprintf(dev, sizeof dev, "cuda:%d", sk_backend_cfg(t->be)->device_index);
        if ((st = sk_backend_create(&bc, dev, &t->sampler, NULL, 0, err)) != SK_OK) return st;
    }
    if ((st = sk_backend_get_params(t->be, t->params)) != SK_OK)
        return sk_backend_fail(err, st, t->be, "to hand over the parameters for a sample");
    if ((st = sk_backend_set_params(t->sampler, t->params)) != SK_OK)
        return sk_backend_fail(err, st, t->sampler, "to take the parameters for a sample");
    int newline = sk_vocab_index(&t->vocab, '\n');
    int32_t prime = newline >= 0 ? newline : 0;
    sk_sample_opts so = {.temperature = 1.0f};
    size_t cap = (size_t)t->o.sample_length * 4 + 1;
    text_sink sink = {.buf = malloc(cap), .n = 0, .cap = cap, .vocab = &t->vocab};
    if (!sink.buf) return sk_fail(err, SK_ERR_NOMEM, "out of memory");
    sink.buf[0] = '\0';
    // The run's generator gives each sample its seed: one draw per sample, so a resumed run
    // (which restores the generator) samples what the uninterrupted one samples.
    st = sk_generate(t->sampler, &prime, 1, (size_t)t->o.sample_length, &so, sk_rng_u64(&t->st.rng), append_char,
                     &sink, err);
    if (st == SK_OK && t->cb.on_sample) t->cb.on_sample(t->cb.ctx, t->st.step, sink.buf, sink.n);
    free(sink.buf);
    return st;
}

// Once a stop is agreed (on any rank), rank 0 reports nothing more through the callbacks that
// print: under mpirun its stdout may no longer be drained (train_main.c), and nothing may block
// it before the final checkpoint.
static void go_quiet(sk_trainer *t) {
    t->cb.on_progress = NULL, t->cb.on_eval = NULL, t->cb.on_sample = NULL, t->cb.on_checkpoint = NULL;
    t->cb.on_warning = NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_tokens_per_s(sk_trainer *t) {
    if (t->n_step_times == 0) return 0.0;
    size_t n = t->n_step_times < STEP_TIMES_MAX ? t->n_step_times : STEP_TIMES_MAX;
    double *s = malloc(sizeof(double) * n);
    if (!s) return 0.0;
    memcpy(s, t->step_times, sizeof(double) * n);
    qsort(s, n, sizeof(double), cmp_double);
    double med = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    free(s);
    return (double)t->o.batch_size * t->o.seq_len / med;
}

// A loss far above ln(V), what a model that has learnt nothing scores (and a fresh one starts
// from): half as much again, and at least 1 nat more.
static double far_above_chance(const sk_trainer *t) {
    const double chance = log((double)t->o.model.vocab_size);
    return fmax(1.5 * chance, chance + 1.0);
}

// After warm-up, a training loss far above ln(V) means the run is diverging: warned once when it
// starts (again should it come back after recovering); while it lasts, no evaluation saves best.*.
static void watch_divergence(sk_trainer *t, float loss) {
    const int diverged = t->st.step > t->o.lr.warmup_iters && (double)loss > far_above_chance(t);
    if (diverged && !t->diverged && t->rank == 0 && t->cb.on_warning) {
        char line[SK_ERROR_MSG_MAX];
        snprintf(line, sizeof line, "the run is diverging: training loss %.4f at step %lld is far above ln(V) = %.4f, "
                 "what a model that has learnt nothing scores; best.* keeps the last state below it (try a lower "
                 "--lr)", (double)loss, (long long)t->st.step, log((double)t->o.model.vocab_size));
        t->cb.on_warning(t->cb.ctx, line);
    }
    t->diverged = diverged;
}

// An evaluation at the last training loss read (the state's: a diverged state is never best).
static sk_status run_eval(sk_trainer *t, float loss, sk_error *err) {
    double val;
    sk_status st = sk_trainer_evaluate(t, 0, &val, err);
    if (st != SK_OK) return st;
    if (!isfinite(val))
        return sk_fail(err, SK_ERR_NUMERIC, "validation loss is %g at step %lld; try a lower learning rate (--lr)",
                       val, (long long)t->st.step);
    t->last_eval_step = t->st.step, t->last_val_loss = val;
    watch_divergence(t, loss);
    int best = val < t->st.best_val_loss && !t->diverged && val <= far_above_chance(t);
    if (best) t->st.best_val_loss = val, t->st.best_step = t->st.step;
    // Rank 0 writes the log; a failed write stops every rank.
    st = t->rank == 0 ? sk_outdir_log(&t->od, err, "{\"iter\":%lld,\"val_loss\":%.6f,\"elapsed_s\":%.3f}\n",
                                      (long long)t->st.step, val, run_elapsed(t))
                      : SK_OK;
    if ((st = sk_comm_agree(t->comm, st, err)) != SK_OK) return st;
    if (t->rank == 0 && t->cb.on_eval) t->cb.on_eval(t->cb.ctx, t->st.step, val, best);
    return best ? save_checkpoint(t, "best", err) : SK_OK;
}

// The messages of a non-finite step, at once (data-parallel) or read back later (one process).
static sk_status loss_failure(sk_error *err, float loss, int64_t step) {
    return sk_fail(err, SK_ERR_NUMERIC,
                   "training loss is %g at step %lld; stopping (the last checkpoint is kept); try a lower "
                   "learning rate (--lr)",
                   (double)loss, (long long)step);
}

static sk_status norm_failure(sk_error *err, double norm, int64_t step) {
    return sk_fail(err, SK_ERR_NUMERIC,
                   "gradient norm is %g at step %lld; stopping (the last checkpoint is kept); try a lower "
                   "learning rate (--lr)",
                   norm, (long long)step);
}

// Asynchronous steps (sk_step_stats.asynchronous) only enqueue work: a step's own host time
// is its enqueue, plus a wait for the device whenever the host runs out of staging slots,
// so the time of one step says little (on a GPU, or its emulation, most are a few
// microseconds and a few carry the waits of several). What the steps since the last read
// cost is their wall time together, the wait of this read (dt) included: it is spread
// evenly over them, so that the median is that of the device's throughput over intervals,
// not of the host's enqueues.
static void spread_step_times(sk_trainer *t, double dt) {
    size_t from = t->n_step_times_read, to = t->n_step_times;
    if (to - from > STEP_TIMES_MAX) from = to - STEP_TIMES_MAX; // the older ones are gone
    t->n_step_times_read = to;
    if (to == from) return;
    double total = dt;
    for (size_t i = from; i < to; i++) total += t->step_times[i % STEP_TIMES_MAX];
    for (size_t i = from; i < to; i++) t->step_times[i % STEP_TIMES_MAX] = total / (double)(to - from);
}

// The statistics of the steps since the last read (backend.h): the last step's loss and
// norm, or the failure of the first non-finite step, named by its step. The wait for the
// device's outstanding work counts as training time.
static sk_status read_stats(sk_trainer *t, float *loss, double *gnorm, double *step_time, sk_error *err) {
    sk_step_stats ss;
    const double t0 = now_s();
    sk_status st = sk_backend_read_stats(t->be, &ss, err);
    if (st != SK_OK) return st;
    const double dt = now_s() - t0;
    if (ss.notice[0] && t->rank == 0 && t->cb.on_notice) t->cb.on_notice(t->cb.ctx, ss.notice);
    *step_time += dt;
    if (ss.asynchronous)
        spread_step_times(t, dt);
    else if (t->n_step_times > 0)
        t->step_times[(t->n_step_times - 1) % STEP_TIMES_MAX] += dt;
    const double rows = (double)t->o.batch_size * t->o.seq_len;
    if (ss.bad_step)
        return ss.bad_is_norm ? norm_failure(err, ss.bad_norm, ss.bad_step)
                              : loss_failure(err, sk_mean_loss(ss.bad_loss_sum, rows), ss.bad_step);
    *loss = sk_mean_loss(ss.loss_sum, rows);
    *gnorm = ss.grad_norm;
    t->graph_steps = ss.graph_launches;
    return SK_OK;
}

// --keep-checkpoints: the checkpoint of the epoch just ended, its validation loss in its name
// (outdir.h; the evaluation of this step, run now unless it just ran or the run is stopping),
// replacing another of the same epoch (a resume that replays it), and the one N epochs older removed.
static sk_status keep_epoch_checkpoint(sk_trainer *t, float loss, sk_error *err) {
    sk_status st;
    if (t->has_val && t->last_eval_step != t->st.step && !t->stop && (st = run_eval(t, loss, err)) != SK_OK) return st;
    char name[64];
    sk_outdir_epoch_name(t->st.epoch, val_loss_now(t), name, sizeof name);
    if ((st = save_checkpoint(t, name, err)) != SK_OK) return st;
    const int64_t old = t->st.epoch - t->o.keep_checkpoints;
    st = t->rank == 0 ? sk_outdir_remove_epochs(t->o.out_dir, t->st.epoch, name, err) : SK_OK;
    if (st == SK_OK && t->rank == 0 && t->o.keep_checkpoints > 0 && old >= 1)
        st = sk_outdir_remove_epochs(t->o.out_dir, old, NULL, err);
    return sk_comm_agree(t->comm, st, err);
}

// sk_train_options.poison_step: fc.bias[0] set to NaN in the backend's parameters, which makes
// every logit row, and so the loss, NaN.
static sk_status poison_params(sk_trainer *t, sk_error *err) {
    sk_backend *be = t->be;
    sk_status st = sk_backend_get_params(be, t->params);
    if (st != SK_OK) return sk_backend_fail(err, st, be, "to hand over its parameters");
    t->params[sk_param_find(&t->layout, "fc.bias")->offset] = NAN;
    if ((st = sk_backend_set_params(be, t->params)) != SK_OK) return sk_backend_fail(err, st, be, "to take its parameters");
    return SK_OK;
}

double sk_progress_eta_s(const sk_progress *p) {
    const int64_t done = p->step - p->start_step;
    if (p->max_iters <= 0 || done <= 0) return -1.0;
    return p->elapsed_s / (double)done * (double)(p->max_iters - p->step);
}

// The run's end: --max-iters steps or --max-epochs epochs done, whichever comes first: the
// setting reached ("max-iters", "max-epochs"), or NULL.
static const char *limit_reached(const sk_trainer *t) {
    const sk_train_options *o = &t->o;
    if (o->max_iters > 0 && t->st.step >= o->max_iters) return "max-iters";
    if (o->max_epochs > 0 && t->st.epoch >= o->max_epochs) return "max-epochs";
    return NULL;
}

// What the loop carries from one step to the next.
typedef struct {
    size_t windows;     // windows per epoch
    int64_t total;      // the run's last step, whichever limit comes first (progress, ETA)
    sk_lr_schedule sched;
    double t0;          // the run's start
    double step_time;   // seconds in training steps since the last report (not evaluation)
    int64_t start_step, report_step;
    float loss, lr;
    double gnorm;
    int unread;         // steps whose statistics were not read back yet
    int epoch_done;     // the last step ended an epoch
} run_state;

static run_state start_run(const sk_trainer *t) {
    const sk_train_options *o = &t->o;
    run_state r = {.windows = sk_batcher_windows(&t->train, 0), .sched = o->lr, .t0 = now_s(),
                   .start_step = t->st.step, .report_step = t->st.step, .loss = NAN};
    r.total = t->end_step; // run_plan.c: the first limit reached, from where the run stands
    // The cosine anneals over that same length (run_plan.c resolves it; here for a run it did not
    // plan): with --max-epochs 10 --max-iters 10^6 the run ends after 10 epochs, and so does its schedule.
    if (r.sched.max_iters <= 0) r.sched.max_iters = r.total;
    return r;
}

static sk_status read_back(sk_trainer *t, run_state *r, sk_error *err) {
    if (!r->unread) return SK_OK;
    r->unread = 0;
    return read_stats(t, &r->loss, &r->gnorm, &r->step_time, err);
}

// Data-parallel: the reduce hook (backend.h). The loss sum and any stop request are summed
// over ranks with any rank's failure, then the gradients in place.
static sk_status reduce_over_ranks(void *ctx, sk_status st, double *loss_sum, float *grads, size_t n, int on_device,
                                   sk_error *err) {
    sk_trainer *t = ctx;
    double red[2] = {*loss_sum, t->o.stop_flag && *t->o.stop_flag ? 1.0 : 0.0}; // loss sum, stop requests
    if ((st = sk_shard_reduce(t->comm, st, red, 2, err)) != SK_OK) return st;
    *loss_sum = red[0];
    t->stop = red[1] > 0.0;
    if ((st = sk_comm_allreduce_sum_f32(t->comm, grads, n, on_device, err)) != SK_OK) t->failed_alone = t->nranks > 1;
    return st;
}

// One training step on the current window. One process enqueues it and reads nothing back
// (the statistics come back before the next log line, evaluation, checkpoint, sample or stop);
// data-parallel ranks sum through the reduce hook and read the statistics every step.
static sk_status take_step(sk_trainer *t, run_state *r, sk_error *err) {
    const sk_train_options *o = &t->o;
    sk_backend *be = t->be;
    sk_status st;
    if (t->st.window == 0 && (st = sk_backend_set_state(be, NULL)) != SK_OK) { // streams restart each epoch
        t->failed_alone = t->nranks > 1;
        return sk_backend_fail(err, st, be, "to reset its state");
    }
    sk_batcher_window(&t->train, (size_t)t->st.window, t->x, t->y);
    if (o->poison_step == t->st.step + 1 && (st = poison_params(t, err)) != SK_OK) return st;
    r->lr = sk_lr_at(&r->sched, t->st.step, t->st.epoch);
    const size_t first = (size_t)t->b_off * (size_t)o->seq_len;
    const sk_grad_reduce reduce = {.fn = reduce_over_ranks, .ctx = t};
    const sk_train_step_args a = {.x = t->x + first, .y = t->y + first, .len = o->seq_len, .step = t->st.step,
                                  .opt_step = t->st.step + 1, .optim = &o->optim, .lr = r->lr,
                                  .reduce = t->data_parallel ? &reduce : NULL};
    const double ts = now_s();
    st = sk_backend_train_step(be, &a, err);
    // Data-parallel: a rank that failed alone (its device) or differs stops every rank here,
    // instead of leaving them waiting in the next step's collectives.
    if (t->data_parallel && !t->failed_alone) st = sk_comm_agree(t->comm, st, err);
    if (st != SK_OK) return st;
    if (!t->data_parallel) t->stop = o->stop_flag && *o->stop_flag;
    if (t->stop) go_quiet(t); // nothing printed from here to the final checkpoint
    const double dt = now_s() - ts;
    t->step_times[t->n_step_times++ % STEP_TIMES_MAX] = dt;
    r->step_time += dt;
    r->unread = 1;
    t->st.step++;
    r->epoch_done = (size_t)++t->st.window >= r->windows;
    if (r->epoch_done) t->st.window = 0, t->st.epoch++;
    return t->data_parallel ? read_back(t, r, err) : SK_OK;
}

// A progress report: the log's record (rank 0 writes it; a failed write stops every rank)
// and on_progress.
static sk_status report_progress(sk_trainer *t, run_state *r, sk_error *err) {
    const int64_t s = t->st.step;
    const double B = t->o.batch_size, T = t->o.seq_len;
    sk_progress p = {.step = s, .epoch = t->st.epoch, .window = t->st.window, .windows_per_epoch = (int64_t)r->windows,
                     .start_step = r->start_step, .max_iters = r->total, .train_loss = r->loss, .lr = r->lr,
                     .grad_norm = r->gnorm, .tokens_per_s = (double)(s - r->report_step) * B * T / r->step_time,
                     .elapsed_s = now_s() - r->t0};
    r->step_time = 0.0, r->report_step = s;
    watch_divergence(t, r->loss);
    sk_status st = t->rank != 0 ? SK_OK
                                : sk_outdir_log(&t->od, err,
                                                "{\"iter\":%lld,\"epoch\":%.4f,\"train_loss\":%.6f,\"lr\":%.6g,"
                                                "\"tokens_per_s\":%.1f,\"elapsed_s\":%.3f}\n",
                                                (long long)s, (double)p.epoch + (double)p.window / (double)r->windows,
                                                (double)r->loss, (double)r->lr, p.tokens_per_s, run_elapsed(t));
    if ((st = sk_comm_agree(t->comm, st, err)) != SK_OK) return st;
    if (t->rank == 0 && t->cb.on_progress) t->cb.on_progress(t->cb.ctx, &p);
    return SK_OK;
}

// The schedule after a step: what is due at this step (log, evaluation, checkpoints, sample),
// with the statistics read back first when anything is.
static sk_status run_schedule(sk_trainer *t, run_state *r, sk_error *err) {
    const sk_train_options *o = &t->o;
    const int64_t s = t->st.step;
    const int log_now = o->log_every > 0 && (s % o->log_every == 0 || s == r->total);
    const int eval_now = o->eval_every > 0 && s % o->eval_every == 0 && t->has_val;
    // The run's last step (a limit, a stop) is finish_run's to write, once, after any evaluation.
    const int ckpt_now = o->checkpoint_every > 0 && s % o->checkpoint_every == 0 && !limit_reached(t) && !t->stop;
    const int keep_now = r->epoch_done && o->keep_checkpoints != 0;
    const int sample_now = o->sample_every > 0 && s % o->sample_every == 0 && t->rank == 0;
    sk_status st = SK_OK;
    if ((log_now || eval_now || ckpt_now || keep_now || sample_now || t->stop) && (st = read_back(t, r, err)) != SK_OK)
        return st;
    if (log_now && (st = report_progress(t, r, err)) != SK_OK) return st;
    if (eval_now && (st = run_eval(t, r->loss, err)) != SK_OK) return st;
    if (ckpt_now && (st = save_checkpoint(t, "last", err)) != SK_OK) return st;
    if (keep_now && (st = keep_epoch_checkpoint(t, r->loss, err)) != SK_OK) return st;
    if (sample_now && (st = print_sample(t, err)) != SK_OK) t->failed_alone = t->nranks > 1;
    return st;
}

// The run's end: the final evaluation (after a stop only when the run has no best checkpoint
// yet, so that a run stopped before its first evaluation leaves best.* to sample from), the
// last checkpoint and the summary.
static sk_status finish_run(sk_trainer *t, run_state *r, sk_train_summary *sum, sk_error *err) {
    sk_status st;
    const int interrupted = t->stop;
    const int eval_end = !interrupted || t->st.best_step < 0;
    if (eval_end && t->has_val && t->last_eval_step != t->st.step && (st = run_eval(t, r->loss, err)) != SK_OK)
        return st;
    if ((st = save_checkpoint(t, "last", err)) != SK_OK) return st;
    sum->steps = t->st.step;
    sum->best_val_loss = t->st.best_val_loss;
    sum->best_step = t->st.best_step;
    sum->median_tokens_per_s = median_tokens_per_s(t);
    sum->final_train_loss = r->loss;
    sum->wall_s = now_s() - r->t0;
    sum->graph_steps = t->graph_steps;
    sum->ended_by = interrupted ? NULL : limit_reached(t);
    sum->diverged = t->diverged;
    if (interrupted)
        return sk_fail(err, SK_ERR_INTERRUPTED, "interrupted at step %lld; checkpoint saved to %s/last.safetensors",
                       (long long)t->st.step, t->o.out_dir);
    return SK_OK;
}

sk_status sk_trainer_run(sk_trainer *t, sk_train_summary *sum, sk_error *err) {
    memset(sum, 0, sizeof *sum);
    sum->backend_name = sk_backend_name(t->be);
    sum->precision_name = sk_precision_name(sk_backend_cfg(t->be)->precision);
    sum->max_iters = t->o.max_iters, sum->max_epochs = t->o.max_epochs;
    if ((sum->ended_by = limit_reached(t))) { // a resume past its limit: no evaluation, no checkpoint, no log record
        sum->already_done = 1, sum->steps = t->st.step;
        sum->best_val_loss = t->st.best_val_loss, sum->best_step = t->st.best_step;
        return SK_OK;
    }
    if (t->resumed[0] && t->rank == 0 && t->cb.on_notice) t->cb.on_notice(t->cb.ctx, t->resumed);
    if (!t->has_val && t->rank == 0 && t->cb.on_notice) {
        char line[160];
        snprintf(line, sizeof line, "val-frac %g leaves no validation split: the run is not evaluated and writes no "
                 "best.*", t->o.val_frac);
        t->cb.on_notice(t->cb.ctx, line);
    }
    run_state r = start_run(t);
    t->t0 = r.t0, t->elapsed_base = t->st.elapsed_s;
    sk_status st;
    while (!limit_reached(t) && !t->stop) {
        if ((st = take_step(t, &r, err)) != SK_OK || (st = run_schedule(t, &r, err)) != SK_OK) return st;
    }
    if ((st = read_back(t, &r, err)) != SK_OK) return st;
    return finish_run(t, &r, sum, err);
}
