// trainer.h: the training loop: data, backend, optimizer, evaluation, checkpoints, logs.
// defines: sk_train_options, sk_train_options_default, sk_trainer_init, sk_trainer_run,
//          sk_trainer_evaluate, sk_trainer_info, sk_train_info, sk_trainer_failed_alone, sk_trainer_free,
//          sk_train_callbacks, sk_progress, sk_train_summary
// The trainer never prints: it reports progress through callbacks, and the CLI prints.
#ifndef SHAKESPEARE_TRAINER_H
#define SHAKESPEARE_TRAINER_H

#include <signal.h>
#include <stdint.h>

#include "shakespeare/backend.h"
#include "shakespeare/batcher.h"
#include "shakespeare/checkpoint.h"
#include "shakespeare/comm.h"
#include "shakespeare/corpus.h"
#include "shakespeare/model.h"
#include "shakespeare/optim.h"
#include "shakespeare/status.h"
#include "shakespeare/token_cache.h"

enum { SK_SET_EMBED = 1, SK_SET_HIDDEN = 2, SK_SET_LAYERS = 4, SK_SET_DROPOUT = 8, SK_SET_VOCAB = 16,
       SK_SET_WEIGHT_DROP = 32, SK_SET_SEED = 64, SK_SET_MAX_ITERS = 128, SK_SET_MAX_EPOCHS = 256,
       SK_SET_CELL = 512 };

typedef struct sk_train_options_s {
    const char *data_path;   // UTF-8 text (any bytes with SK_VOCAB_BYTES)
    sk_vocab_mode vocab_mode;// code points or byte values; a resumed run takes the checkpoint's
    const char *cache_dir;   // token caches (NULL: "shakespeare-cache" beside out_dir)
    double train_frac, val_frac;
    sk_model_config model;   // vocab_size is taken from the data
    int model_set;           // SK_SET_* bits: options the user gave that a model file also holds (its shape
                             // and vocabulary, checked against it; dropout, weight drop and the seed,
                             // which replace its own), and the limits named (SK_SET_MAX_*: one named
                             // alone, above 0, is the run's only limit, the other becomes 0)
    sk_init_scheme init;
    float init_scale;        // SK_INIT_UNIFORM's a
    float forget_bias;
    int batch_size, seq_len;
    sk_lr_schedule lr;       // max_iters of a cosine schedule defaults to the run's end (below);
                             // decay_after -1 (step schedule): derived from the run's length, a fifth of
                             // its epochs as char-rnn's 10 of 50 (resolved before it is recorded);
                             // lr 0: the optimizer's default_lr (optim.h's table), resolved likewise
    sk_optim_hparams optim;  // the optimizer (its kind, recorded and kept on resume) and its hyperparameters
    int64_t max_iters;       // total optimizer steps (absolute: a resumed run counts from 0); 0 = no limit
    int max_epochs;          // 0 = no limit. Both are recorded; a resume keeps them unless named (model_set)
    int64_t eval_every;      // steps between evaluations (0: only at the end)
    int64_t eval_tokens;     // evaluate the first ceil(N / B) positions of every stream (0: all)
    int64_t checkpoint_every;// steps between last.* checkpoints (0: only at the end)
    int keep_checkpoints;    // a checkpoint at each epoch's end, epoch-NNNN-valL.LLLL.* (char-rnn's per-epoch
                             // files; epoch-NNNN.* without a validation split), keeping the last N of
                             // them (older ones removed); 0: none; -1: all
    int64_t sample_every;    // steps between printed samples (0: never)
    int sample_length;
    int64_t log_every;       // steps between metrics records / progress callbacks
    const char *out_dir;
    const char *log_path;    // JSON Lines metrics (NULL: OUT_DIR/metrics.jsonl)
    const char *init_from;   // checkpoint to resume from (NULL: fresh start)
    const char *init_weights;// a model file whose weights start a new run, fresh optimizer (NULL: none)
    int overwrite;           // a fresh run, or one from another directory's checkpoint, may replace
                             // the run in out_dir (at its first checkpoint)
    int eval_only;
    uint64_t seed;
    const char *device;      // auto | cpu | cuda | cuda:N
    // The backend's settings as given (backend.h: threads, rnn_impl, precision, whose auto is tf32
    // on CUDA and fp32 on the CPU, cuda_graph, plstm_tensor_cores, cudnn_chunk_steps); the run
    // fills the rest per rank (sk_backend_config_make). Once the backend exists, take_resolved
    // copies back what it resolved, so that the options record names what ran.
    sk_backend_config backend;
    // The options record stored in checkpoints (train_config): JSON of the options it is given,
    // returned malloc'd (NULL: out of memory). The trainer calls it once the backend has
    // resolved the settings left to it (precision auto), so the record names what ran. NULL: none.
    char *(*options_json)(const struct sk_train_options_s *o);
    // What every data-parallel rank must agree on: "--name=value;" pairs (each rank's paths
    // and threads left out), returned malloc'd (NULL: out of memory); rank 0 names the first
    // pair that differs. NULL: the ranks compare their options records (options_json), or
    // nothing without one.
    char *(*options_identity)(const struct sk_train_options_s *o);
    // --init-from (a resume, --eval-only): the options the checkpoint records (train_config, as
    // options_json wrote it) replace the given ones, except those the user named; notes gets a
    // line ('\n'-separated) for each named option whose value differs from the record. Called
    // once the checkpoint is read, before its data is; the options are then checked again. NULL:
    // the run keeps the options as given.
    sk_status (*inherit_options)(struct sk_train_options_s *o, const char *train_config, char *notes,
                                 size_t notes_size, sk_error *err);
    // The settings the backend resolves (precision auto, rnn_impl auto and the inner products it
    // chose): copies them from `from` into o->backend and returns how many differed, naming those
    // in took ("--precision tf32, --rnn-impl cudnn", o's values before the copy; took may be NULL).
    // The trainer calls it with the created backend's cfg (the record), and with the options as
    // given when the device refuses a checkpoint's choices. NULL: neither happens.
    int (*take_resolved)(struct sk_train_options_s *o, const sk_backend_config *from, char *took, size_t n);
    volatile sig_atomic_t *stop_flag; // set by a signal handler: finish the step, save, return
    sk_comm *comm;           // borrowed; NULL: one process. With N ranks (data-parallel, see below)
                             // every rank runs the same options.
    int data_parallel_step;  // 1: take the data-parallel step (forward, backward, gradient all-reduce,
                             // norm and update, every step agreed) even with one rank, so that one
                             // process on one GPU tests that path; a single process then sums device
                             // gradients with a one-rank NCCL communicator. The same run bit for bit.
    int64_t poison_step;     // tests only: just before optimizer step N (1-based), fc.bias[0] becomes
                             // NaN, so step N's loss is NaN on any machine (a divergence recipe's
                             // step moves with the BLAS kernel's rounding); 0: never
} sk_train_options;

// Data-parallel training (o->comm of N > 1 ranks): batch_size B stays the global batch and
// rank r owns streams [r*B/N, (r+1)*B/N) of the layout one process uses (B % N != 0 is
// an error). Gradients are summed over ranks before the norm, clipping and the optimizer, so every
// rank holds the same parameters; loss, tokens/s and validation are reduced over ranks;
// only rank 0 calls the callbacks, holds the out-dir and log locks and writes logs and
// checkpoints (holding every stream's state, gathered), so a checkpoint resumes under any N
// dividing B. Every rank reads the data and --init-from itself. Errors: every error
// sk_trainer_init/run/evaluate return is the same on every rank (the lowest failing rank's,
// "rank R: ..." when R > 0), except when sk_trainer_failed_alone() says this rank failed on
// its own mid-step (a device error): the caller then ends the job (sk_comm_abort), as the
// other ranks wait for it.

// char-rnn / nanoGPT-style defaults (see README).
void sk_train_options_default(sk_train_options *o);

typedef struct {
    int64_t step, epoch, window, windows_per_epoch;
    int64_t start_step;      // the step this process started from (a resumed run's checkpoint)
    int64_t max_iters;       // the run's length in steps: the nearer of --max-iters and --max-epochs
    float train_loss, lr;
    double grad_norm;
    double tokens_per_s;     // of the steps since the previous report
    double elapsed_s;        // since this process's first step (start_step)
} sk_progress;

// Seconds left in the run at p's step, at the rate of this process's own steps (a resumed run's
// earlier steps took none of its time): elapsed_s / (step - start_step) * (max_iters - step).
// Negative when unknown (no length, or no step of this process yet).
double sk_progress_eta_s(const sk_progress *p);

typedef struct {
    void *ctx;
    void (*on_notice)(void *ctx, const char *line);            // e.g. device fallback
    void (*on_progress)(void *ctx, const sk_progress *p);       // every log_every steps
    void (*on_eval)(void *ctx, int64_t step, double val_loss, int is_best);
    // text[0, len): UTF-8, or raw bytes for a byte vocabulary (NUL bytes included)
    void (*on_sample)(void *ctx, int64_t step, const char *text, size_t len);
    void (*on_checkpoint)(void *ctx, const char *path);
    void (*on_tokenize)(void *ctx, uint64_t done, uint64_t total, double elapsed_s, double cpu_s); // building a token cache
    // Something is wrong with the run, though it goes on: a training loss far above ln(V) after
    // warm-up (diverging: no evaluation saves best.* while it lasts).
    void (*on_warning)(void *ctx, const char *line);
} sk_train_callbacks;

typedef struct sk_trainer sk_trainer;

// Unless eval_only, locks out_dir for the trainer's life (SK_ERR_BUSY when another run holds
// it or the metrics log) and refuses (SK_ERR_ARG) a fresh run, or one --init-from a checkpoint
// of another directory, into an out_dir that holds a checkpoint, unless overwrite
// (src/train/outdir.h has the rules).
sk_status sk_trainer_init(sk_trainer **out, const sk_train_options *o, const sk_train_callbacks *cb, sk_error *err);

typedef struct {
    int64_t steps;             // optimizer steps at the end
    double best_val_loss;      // INFINITY when never evaluated
    int64_t best_step;         // -1 when never evaluated (no validation split: see on_notice)
    double median_tokens_per_s;
    double final_train_loss;
    double wall_s;
    const char *backend_name;
    const char *precision_name; // what the backend computed in (--precision auto resolved)
    int64_t graph_steps;       // steps replayed as captured CUDA graphs (0 on the CPU)
    int already_done;          // 1: a resumed run already at --max-iters or --max-epochs; nothing ran,
                               // nothing was written (steps: the checkpoint's step)
    const char *ended_by;      // the limit that ended the run (or that it was already at): "max-iters" or
                               // "max-epochs", the setting's name; NULL when a stop ended it
    int64_t max_iters;         // the run's limits as it ran them (a resume's: its checkpoint's unless named)
    int max_epochs;
    int diverged;              // 1: the run ended diverging (on_warning's: the last training loss read, after
                               // warm-up, far above ln(V)); last.* holds that state, best.* none of it
} sk_train_summary;

// Trains until max_iters / max_epochs / stop_flag. Returns SK_ERR_INTERRUPTED after
// saving when stopped by the flag (from the step where a stop is agreed on, on_progress,
// on_eval, on_sample and on_checkpoint are no longer called: nothing that prints), SK_ERR_NUMERIC (with the step in the message) on a
// non-finite loss or gradient, SK_ERR_IO naming the file and the system's reason when a
// checkpoint or metrics write fails (no space, quota, file size limit, I/O error), each
// leaving the last good checkpoint untouched.
sk_status sk_trainer_run(sk_trainer *t, sk_train_summary *summary, sk_error *err);

// Mean loss per character over the validation split (or test split when which == 1), from a
// zero state, without touching the training state: the whole split, or with eval_tokens the
// first ceil(eval_tokens / B) positions of each of its B streams.
sk_status sk_trainer_evaluate(sk_trainer *t, int which, double *mean_loss, sk_error *err);

// What a run is about to do, for a summary at its start (after sk_trainer_init).
typedef struct {
    size_t n_params;         // floats in the model
    int vocab_size;          // V, the model's
    size_t corpus_chars;     // symbols of the data file
    size_t n_train, n_val, n_test; // its splits, in symbols
    int64_t steps_per_epoch; // training windows per epoch (0 for --eval-only)
    int64_t start_step;      // the step the run starts from (a resumed checkpoint's)
    int64_t end_step;        // the step it ends at: the nearer of --max-iters and --max-epochs
    const char *ended_by;    // which of them: "max-iters" or "max-epochs" (the setting's name)
} sk_train_info;
void sk_trainer_info(const sk_trainer *t, sk_train_info *info);

// 1 when the last error was this rank's alone (see data-parallel training above).
int sk_trainer_failed_alone(const sk_trainer *t);

void sk_trainer_free(sk_trainer *t);

#endif
