// run_plan.c: a run's end and what hangs on it (see trainer_internal.h): the limit that ends
// the run and at what step, the learning-rate schedule's length, and the validation set that a
// best validation loss is measured on.
// A resume compares them with its checkpoint's options record: the limits and the schedule's
// length are options like any other (recorded as resolved, kept unless named); "val_set" (the
// validation set's CRC-32) is added to the record here. A record without them (checkpoints of
// 773fb49 and before) resumes as it did then, the validation set told by the options that make it.
// defines: sk_plan_limits, sk_plan_run
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "distributed/shard.h"
#include "io/fsutil.h"
#include "trainer_internal.h"

// A line told with the option notes, once the run is sure to start (sk_trainer_init).
static void plan_note(sk_trainer *t, const char *line) {
    const size_t used = strlen(t->option_notes);
    snprintf(t->option_notes + used, sizeof t->option_notes - used, "%s\n", line);
}

void sk_plan_limits(sk_trainer *t) {
    sk_train_options *o = &t->o;
    const int iters = o->model_set & SK_SET_MAX_ITERS, epochs = o->model_set & SK_SET_MAX_EPOCHS;
    if (iters && !epochs && o->max_iters > 0) o->max_epochs = 0; // a named 0 is no limit: the other stays
    if (epochs && !iters && o->max_epochs > 0) o->max_iters = 0;
    // A named limit that differs from the record is told by the resume line (sk_plan_run), with
    // where the run was to end: not as an option note too.
    char *notes = t->option_notes, *line = notes;
    while (*line) {
        char *next = line + strcspn(line, "\n");
        next += *next == '\n';
        if (strncmp(line, "--max-iters ", 12) == 0 || strncmp(line, "--max-epochs ", 13) == 0)
            memmove(line, next, strlen(next) + 1);
        else
            line = next;
    }
}

static int64_t windows_of(const sk_trainer *t) { return (int64_t)sk_batcher_windows(&t->train, 0); }

// The step at which the run has completed `epochs` epochs, from where it stands.
static int64_t epochs_end(const sk_trainer *t, int64_t epochs) {
    const int64_t W = windows_of(t);
    if (t->st.epoch >= epochs) return t->st.step;
    return t->st.step + (W - t->st.window) + (epochs - t->st.epoch - 1) * W;
}

// The run's last step under the limits max_iters and max_epochs (0: none; not both), and the
// limit that sets it (limit_reached's order: --max-iters on a tie), said as "--max-epochs 9 (56
// steps an epoch)", with the later limit when both are set.
static int64_t run_end(const sk_trainer *t, int64_t max_iters, int max_epochs, char *said, size_t n) {
    const int64_t by_epochs = max_epochs > 0 ? epochs_end(t, max_epochs) : INT64_MAX;
    const int iters_first = max_iters > 0 && max_iters <= by_epochs;
    char epochs[96], iters[48];
    snprintf(epochs, sizeof epochs, "--max-epochs %d (%" PRId64 " steps an epoch)", max_epochs, windows_of(t));
    snprintf(iters, sizeof iters, "--max-iters %" PRId64, max_iters);
    const int both = max_iters > 0 && max_epochs > 0;
    snprintf(said, n, "%s%s%s", iters_first ? iters : epochs, both ? ", before " : "",
             both ? (iters_first ? epochs : iters) : "");
    return iters_first ? max_iters : by_epochs;
}

// The recorded integer under key, or -1 when the record has none.
static int64_t recorded_i64(const char *recorded, const char *key) {
    char v[32], *end;
    if (!recorded || sk_train_config_value(recorded, key, v, sizeof v) != SK_OK) return -1;
    long long x = strtoll(v, &end, 10);
    return *end == '\0' && x >= 0 ? (int64_t)x : -1;
}

// The learning rate's schedule: a cosine's length is the run's unless set (a resume keeps its
// recorded one: past it the rate stays at min-lr, said once); a step schedule's start derived
// when auto, and said when it cannot decay in this run.
static void plan_schedule(sk_trainer *t) {
    sk_lr_schedule *s = &t->o.lr;
    char line[SK_ERROR_MSG_MAX];
    if (s->kind == SK_LR_COSINE) {
        if (s->max_iters <= 0) s->max_iters = t->end_step;
        if (s->max_iters < t->end_step) {
            snprintf(line, sizeof line, "the cosine schedule ends at step %" PRId64 " (--cosine-iters), before the "
                     "run's end at step %" PRId64 ": the steps after it run at --min-lr %g (name --cosine-iters to "
                     "stretch it)", s->max_iters, t->end_step, (double)s->min_lr);
            plan_note(t, line);
        }
        return;
    }
    if (s->kind != SK_LR_STEP_DECAY) return; // --lr-decay-after stays auto in the record
    // The epoch (0-based) of the run's last step. --lr-decay-after auto: a fifth of the run's
    // epochs (char-rnn's 10 of 50); decay acts in epochs past it, E - 1 - E/5 of E, so in any
    // run of 2 epochs or more.
    const int64_t W = windows_of(t), steps = t->end_step - t->st.step;
    const int64_t last_epoch = steps > 0 ? t->st.epoch + (t->st.window + steps - 1) / W : t->st.epoch;
    if (s->decay_after < 0) s->decay_after = (int)((last_epoch + 1) / 5 < INT32_MAX ? (last_epoch + 1) / 5 : INT32_MAX);
    if (steps > 0 && last_epoch <= s->decay_after) {
        snprintf(line, sizeof line, "lr-schedule step decays after --lr-decay-after %d epochs, and this run ends in "
                 "epoch %" PRId64 ": the learning rate stays at --lr", s->decay_after, last_epoch + 1);
        plan_note(t, line);
    }
}

// What a validation loss is measured on: the split's ids and symbols, the streams, the
// positions walked. (The window length is left out: it only cuts the same streams.)
static uint32_t val_set_of(const sk_trainer *t) {
    const sk_batcher *v = &t->val;
    uint32_t crc = sk_crc32(0, v->ids.data, (size_t)v->ids.width * v->n);
    crc = sk_crc32(crc, t->cache.vocab.chars, sizeof t->cache.vocab.chars[0] * (size_t)t->cache.vocab.size);
    const int64_t shape[4] = {(int64_t)v->n, v->B, (int64_t)v->P, t->cache.vocab.bytes};
    return sk_crc32(crc, shape, sizeof shape);
}

// Whether the recorded validation set is this run's. A record without "val_set" (773fb49 and
// before) is compared by the options that make the set: the data, the split, B, --eval-tokens.
static int same_val_set(const sk_trainer *t, const char *recorded) {
    char was[64], now[4096];
    if (sk_train_config_value(recorded, "val_set", was, sizeof was) == SK_OK) {
        snprintf(now, sizeof now, "crc32:%08" PRIx32, t->val_set);
        return strcmp(was, now) == 0;
    }
    static const char *const keys[] = {"data", "train_frac", "val_frac", "batch_size", "eval_tokens"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char rec[4096];
        if (sk_train_config_value(t->train_config, keys[i], now, sizeof now) != SK_OK) continue;
        if (sk_train_config_value(recorded, keys[i], rec, sizeof rec) != SK_OK)
            snprintf(rec, sizeof rec, "%s", strcmp(keys[i], "eval_tokens") == 0 ? "0" : now); // absent: as run then
        if (strcmp(rec, now) != 0) return 0;
    }
    return 1;
}

// Whether two paths name one file.
static int same_file(const char *a, const char *b) {
    struct stat x, y;
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

// Rank 0: <out-dir>/best.* renamed to keep (model and state, written anew under that name, then
// best.* removed); *moved 0 when there is no best.* to keep.
static sk_status keep_old_best(const sk_trainer *t, const char *keep, int *moved, sk_error *err) {
    char *path = sk_path_join(t->o.out_dir, "best.safetensors");
    if (!path) return sk_fail(err, SK_ERR_NOMEM, "out of memory");
    struct stat sb;
    *moved = stat(path, &sb) == 0;
    sk_model_file model = {0};
    sk_train_state state = {0};
    int has_state = 0;
    sk_status st = *moved ? sk_checkpoint_load(path, &model, &state, &has_state, err) : SK_OK;
    if (st == SK_OK && *moved)
        st = sk_checkpoint_save(t->o.out_dir, keep, &model.cfg, &model.vocab, model.params, model.train_config,
                                has_state ? &state : NULL, err);
    if (st == SK_OK && *moved) st = sk_checkpoint_remove(t->o.out_dir, "best", err);
    sk_model_file_free(&model);
    sk_train_state_free(&state);
    free(path);
    return st;
}

// A resumed best compares only with losses on the same validation set, and the done line names
// the out-dir's best.*: into another out-dir, or on another validation set, the best starts over,
// with one line that says where the previous best stays. Collective: rank 0 looks at the out-dir.
static sk_status plan_best(sk_trainer *t, const char *recorded, const char *from, sk_error *err) {
    if (!from || t->st.best_step < 0 || t->end_step <= t->st.step) return SK_OK; // at its end: nothing changes
    double here = t->rank == 0 && sk_outdir_contains(t->o.out_dir, from);
    sk_status st = sk_shard_reduce(t->comm, SK_OK, &here, 1, err);
    if (st != SK_OK) return st;
    const int same_set = t->has_val && same_val_set(t, recorded);
    if (here > 0 && same_set) return SK_OK;
    const double loss = t->st.best_val_loss;
    const int64_t step = t->st.best_step;
    t->st.best_val_loss = INFINITY, t->st.best_step = -1;
    char line[SK_ERROR_MSG_MAX + 64], keep[48], *dir = sk_path_dir(from);
    if (here == 0) {
        snprintf(line, sizeof line, "the best validation loss starts over in %s; the resumed run's best (%.4f at "
                 "step %" PRId64 ") stays in %s", t->o.out_dir, loss, step, dir ? dir : from);
        free(dir);
        plan_note(t, line);
        return SK_OK;
    }
    free(dir);
    snprintf(keep, sizeof keep, "best-step%" PRId64, step);
    int moved = 0;
    st = t->rank == 0 ? keep_old_best(t, keep, &moved, err) : SK_OK;
    if ((st = sk_comm_agree(t->comm, st, err)) != SK_OK) return st;
    snprintf(line, sizeof line, "the validation set differs from the checkpoint's (its data, split, --batch-size or "
             "--eval-tokens): the best validation loss starts over; the previous best (%.4f at step %" PRId64
             ") %s%s%s", loss, step, moved ? "is kept as " : "was not in ", moved ? keep : t->o.out_dir,
             moved ? ".safetensors" : "");
    plan_note(t, line);
    return SK_OK;
}

// Resuming in the out-dir from a checkpoint behind its last.* (an older best.*) trains those
// steps again and overwrites last.*: said once. Rank 0 alone (a notice).
static void note_replay(sk_trainer *t, const char *from) {
    char *last = sk_path_join(t->o.out_dir, "last.safetensors");
    sk_model_file model = {0};
    sk_train_state state = {0};
    int has_state = 0;
    sk_error ignored;
    if (t->rank == 0 && last && sk_outdir_contains(t->o.out_dir, from) && !same_file(from, last) &&
        sk_checkpoint_load(last, &model, &state, &has_state, &ignored) == SK_OK && has_state &&
        state.step > t->st.step) {
        char line[SK_ERROR_MSG_MAX];
        snprintf(line, sizeof line, "%s is at step %" PRId64 ", behind last.safetensors at step %" PRId64 ": steps %"
                 PRId64 " to %" PRId64 " are trained again, and last.* is overwritten", from, t->st.step, state.step,
                 t->st.step + 1, state.step);
        plan_note(t, line);
    }
    sk_model_file_free(&model);
    sk_train_state_free(&state);
    free(last);
}

// The options record of the run as planned (its limits, schedule and validation set resolved):
// options_json's, with "val_set":"crc32:..." added, which the table does not hold (not an option).
static sk_status record(sk_trainer *t, sk_error *err) {
    if (!t->o.options_json) return SK_OK;
    free(t->train_config);
    if (!(t->train_config = t->o.options_json(&t->o)))
        return sk_fail(err, SK_ERR_NOMEM, "out of memory for the training options");
    const size_t n = strlen(t->train_config);
    if (!t->has_val || n < 2 || t->train_config[n - 1] != '}') return SK_OK;
    char extra[48];
    snprintf(extra, sizeof extra, "%s\"val_set\":\"crc32:%08" PRIx32 "\"}", n > 2 ? "," : "", t->val_set);
    char *grown = realloc(t->train_config, n + strlen(extra));
    if (!grown) return sk_fail(err, SK_ERR_NOMEM, "out of memory for the training options");
    t->train_config = grown;
    memcpy(grown + n - 1, extra, strlen(extra) + 1);
    return SK_OK;
}

// After the resume line's end: where the checkpoint's run was to end, when its limits were
// others (named now), or that it records none (773fb49 and before: the command line's apply).
static void say_recorded_end(const sk_trainer *t, const char *recorded, char *out, size_t n) {
    const int64_t iters = recorded_i64(recorded, "max_iters"), epochs = recorded_i64(recorded, "max_epochs");
    if (iters < 0 && epochs < 0) {
        snprintf(out, n, " (the checkpoint records no limits: the command line's)");
        return;
    }
    const int64_t max_iters = iters > 0 ? iters : 0;
    const int max_epochs = epochs > 0 && epochs <= (1 << 30) ? (int)epochs : 0;
    if (max_iters == t->o.max_iters && max_epochs == t->o.max_epochs) return;
    char said[200];
    const int64_t end = max_iters || max_epochs ? run_end(t, max_iters, max_epochs, said, sizeof said) : -1;
    if (end >= 0) snprintf(out, n, " (named; the checkpoint's run was to end at step %" PRId64 ": %s)", end, said);
}

sk_status sk_plan_run(sk_trainer *t, const char *recorded, const char *from, sk_error *err) {
    char said[200];
    t->end_step = run_end(t, t->o.max_iters, t->o.max_epochs, said, sizeof said);
    if (t->has_val) t->val_set = val_set_of(t);
    plan_schedule(t);
    sk_status st = plan_best(t, recorded, from, err);
    if (st != SK_OK) return st;
    if (from) note_replay(t, from);
    size_t k = strlen(t->resumed);
    k += (size_t)snprintf(t->resumed + k, sizeof t->resumed - k, "%sthe run ends at step %" PRId64 ": %s",
                          k ? "; " : "", t->end_step, said);
    if (from && k < sizeof t->resumed) say_recorded_end(t, recorded, t->resumed + k, sizeof t->resumed - k);
    return record(t, err);
}
