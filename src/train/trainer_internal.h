// trainer_internal.h: the trainer's state, shared by its two halves (private to src/):
// trainer_setup.c (options, out-dir claim, data, checkpoint resume, backend) and trainer.c
// (the loop: steps, evaluation, checkpoints, samples).
// defines: struct sk_trainer, STEP_TIMES_MAX
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
    float *h_local, *c_local; // (L, b_local, H) this rank's carried state
    float *gathered;     // (nranks, L, b_local, H) every rank's state, on rank 0
    int failed_alone;    // the last error was this rank's alone (see trainer.h)
    int stop;            // a stop was requested on some rank (agreed every step)
    sk_backend *sampler; // batch-1 inference backend, created on first use
    sk_train_state st;   // step, epoch, window, best, rng, and host copies of m, v, h, c
    float *params;       // (total,) host copy for checkpoints and the sampler
    char *train_config;  // o.options_json of the options as run (precision resolved), or NULL
    int64_t graph_steps; // CUDA: steps replayed as captured graphs (read_stats)
    char resumed[SK_ERROR_MSG_MAX]; // "resumed from FILE at step N (epoch E)", told when the run starts; or ""
    char option_notes[4096]; // the named options that differ from a resumed checkpoint's, a line each; or ""
    int32_t *x, *y;      // (B, T) current window
    sk_outdir od;        // the out-dir's lock and the metrics log (not used by --eval-only)
    double step_times[STEP_TIMES_MAX];
    size_t n_step_times;
    size_t n_step_times_read; // n_step_times at the last read of a deferred step's statistics
    int64_t last_eval_step; // step of the latest evaluation (-1: none in this run)
    double t0;           // when this process's run started (monotonic s): the metrics log's elapsed_s counts from it
    int diverged;        // the last training loss read, after warm-up, was far above ln(V) (trainer.c)
};

#endif
