// trainer_internal.h: the trainer's state, shared by its two halves (private to src/):
// trainer_setup.c (options, out-dir claim, data, checkpoint resume, backend), run_plan.c (the
// run's end, its schedule's length and the validation set its best is measured on) and
// trainer.c (the loop: steps, evaluation, checkpoints, samples).
// defines: struct sk_trainer, STEP_TIMES_MAX, sk_plan_limits, sk_plan_run
#ifndef SK_TRAINER_INTERNAL_H
#define SK_TRAINER_INTERNAL_H

#include "shakespeare/trainer.h"

#include "outdir.h"

#define STEP_TIMES_MAX 4096 // tokens/s median over the most recent steps

struct sk_trainer {
    sk_train_options o;
    sk_train_callbacks cb;
    sk_token_cache cache; // the data's ids, memory-mapped: memory does not grow with the corpus
    sk_vocab vocab;       // the model's: the model file's, which may hold symbols the data lacks, or the data's
    sk_param_layout layout; // of o.model, owned: built once where the model's config is checked (trainer_setup.c)
    int32_t *id_map;      // (cache.vocab.size,) the model's id of each of the data's ids; NULL when they are the same
    size_t n_train, n_val, n_test;
    sk_batcher train;
    sk_batcher val;      // eval window length min(T, S_val)
    sk_batcher test;
    int has_val, has_test;
    sk_backend *be;      // training backend (b_local, T)
    sk_comm *comm;       // o.comm (borrowed) or own_comm
    sk_comm *own_comm;   // single-process communicator when o.comm is NULL
    int rank, nranks;
    int data_parallel;   // the data-parallel step: several ranks, or o.data_parallel_step
    int b_off, b_local;  // this rank's streams [b_off, b_off + b_local) of B
    int n_states;        // S: the cell's state tensors (cell.h)
    float *state_local;  // (S, L, b_local, H) this rank's carried state
    float *gathered;     // (nranks, L, b_local, H) every rank's part of one state tensor, on rank 0
    int failed_alone;    // the last error was this rank's alone (see trainer.h)
    int stop;            // a stop was requested on some rank (agreed every step)
    sk_backend *sampler; // batch-1 inference backend, created on first use
    sk_train_state st;   // step, epoch, window, best, rng, and host copies of m, v, h, c
    float *params;       // (total,) host copy for checkpoints and the sampler
    char *train_config;  // o.options_json of the options as run (precision resolved), or NULL
    int64_t graph_steps; // CUDA: steps replayed as captured graphs (read_stats)
    char resumed[2 * SK_ERROR_MSG_MAX]; // "resumed from FILE at step N (epoch E); the run ends ...", or for a
                         // fresh run "the run ends at step N ...": told when the run starts
    int64_t end_step;    // the step the run ends at: the first of its limits reached (run_plan.c)
    uint32_t val_set;    // CRC-32 of what a validation loss is measured on: the split's ids and
                         // symbols, B, the window, the positions walked (run_plan.c)
    char option_notes[4096]; // the named options that differ from a resumed checkpoint's, a line each; or ""
    int32_t *x, *y;      // (B, T) current window
    sk_outdir od;        // the out-dir's lock and the metrics log (not used by --eval-only)
    double step_times[STEP_TIMES_MAX];
    size_t n_step_times;
    size_t n_step_times_read; // n_step_times at the last read of a deferred step's statistics
    int64_t last_eval_step; // step of the latest evaluation (-1: none in this run)
    double last_val_loss; // its validation loss
    double t0;           // when this process's run started (monotonic s)
    double elapsed_base; // the run's elapsed seconds then (a resumed state's elapsed_s, 0 for a fresh run):
                         // the metrics log's and the checkpoints' elapsed_s count on from it
    int diverged;        // the last training loss read, after warm-up, was far above ln(V) (trainer.c)
};

// A limit named alone (model_set's SK_SET_MAX_*), above 0, is the run's only one: the other becomes 0.
// After the recorded options are taken (their notes then hold no line on the limits).
void sk_plan_limits(sk_trainer *t);

// Once the run's position is known (fresh, or resumed from the model file whose options record is
// `recorded`, NULL when none): its end, the schedule's length and start (--cosine-iters and
// --lr-decay-after resolved), the validation set and whether a recorded best still compares (else
// it starts over, the out-dir's best.* kept under another name), the start line, and the options
// record made again with all of it.
// Collective (the ranks agree on the best). from: the --init-from file, or NULL.
sk_status sk_plan_run(sk_trainer *t, const char *recorded, const char *from, sk_error *err);

#endif
