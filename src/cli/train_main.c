// train_main.c: shakespeare-train, the command-line trainer.
// Parses options strictly (cli_args.h), runs the trainer (trainer.h) and prints progress:
// one live line on a terminal, plain lines otherwise. Exit codes: 0 done, 2 bad input (and an
// out-dir in use or holding a run), 1 other failure (divergence, device, a failed checkpoint or
// log write), 128 + the signal after SIGHUP, SIGINT or SIGTERM (129, 130, 143: checkpoint saved).
// Under mpirun (comm.h) every rank runs this program and only rank 0 prints.
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_args.h"
#include "cli_paths.h"
#include "shakespeare/trainer.h"

static volatile sig_atomic_t g_stop = 0; // 0, or the stop signal: SIGHUP, SIGINT or SIGTERM
static sk_comm *g_comm;                  // the job's communicator, finalized at exit
static pthread_t g_main_thread;          // the thread that prints and writes checkpoints

static void free_comm(void) {
    sk_comm_free(g_comm);
    g_comm = NULL;
}

// The first SIGHUP, SIGINT or SIGTERM (a closed terminal, Ctrl-C, a scheduler's stop) asks for
// a clean stop (finish the step, save, exit 128 + the signal); a second one ends the process at once, which the atomic checkpoint writes make safe.
// Once a stop is asked for, nothing more is printed to stdout before the checkpoint (see the
// callbacks): under mpirun, OpenMPI 4.1 stops draining the ranks' output when it gets SIGINT and
// kills them a second later, so rank 0 must not block on a full pipe. A write already blocked
// when the signal comes returns (EINTR: the handler has no SA_RESTART), and a signal that lands
// on another thread (the MPI library's, a worker's) is passed on to the main thread for that.
static void on_signal(int sig) {
    if (!pthread_equal(pthread_self(), g_main_thread)) {
        pthread_kill(g_main_thread, sig);
        return;
    }
    if (g_stop) {
        signal(sig, SIG_DFL);
        raise(sig);
    }
    g_stop = sig;
}

enum {
    OPT_DATA = 256, OPT_OUT_DIR, OPT_EMBED, OPT_HIDDEN, OPT_LAYERS, OPT_DROPOUT, OPT_WEIGHT_DROP, OPT_BATCH, OPT_SEQ,
    OPT_TRAIN_FRAC, OPT_VAL_FRAC, OPT_LR, OPT_LR_SCHEDULE, OPT_MIN_LR, OPT_WARMUP, OPT_LR_DECAY, OPT_LR_DECAY_AFTER,
    OPT_BETA1, OPT_BETA2, OPT_EPS, OPT_WD, OPT_CLIP, OPT_INIT, OPT_INIT_SCALE, OPT_FORGET_BIAS, OPT_MAX_EPOCHS,
    OPT_MAX_ITERS, OPT_EVAL_EVERY, OPT_CKPT_EVERY, OPT_SAMPLE_EVERY, OPT_SAMPLE_LENGTH, OPT_LOG_EVERY, OPT_SEED,
    OPT_THREADS, OPT_DEVICE, OPT_RNN_IMPL, OPT_PRECISION, OPT_INIT_FROM, OPT_INIT_WEIGHTS, OPT_EVAL_ONLY, OPT_LOG, OPT_OVERWRITE,
    OPT_VOCAB, OPT_CACHE_DIR, OPT_EVAL_TOKENS, OPT_CUDA_GRAPH, OPT_TENSOR_CORES, OPT_KEEP_CKPT, OPT_HELP, OPT_VERSION,
};

static const struct option long_options[] = {
    {"data", required_argument, 0, OPT_DATA}, {"out-dir", required_argument, 0, OPT_OUT_DIR},
    {"embed-size", required_argument, 0, OPT_EMBED}, {"hidden-size", required_argument, 0, OPT_HIDDEN},
    {"num-layers", required_argument, 0, OPT_LAYERS}, {"dropout", required_argument, 0, OPT_DROPOUT},
    {"weight-drop", required_argument, 0, OPT_WEIGHT_DROP},
    {"batch-size", required_argument, 0, OPT_BATCH}, {"seq-length", required_argument, 0, OPT_SEQ},
    {"train-frac", required_argument, 0, OPT_TRAIN_FRAC}, {"val-frac", required_argument, 0, OPT_VAL_FRAC},
    {"lr", required_argument, 0, OPT_LR}, {"lr-schedule", required_argument, 0, OPT_LR_SCHEDULE},
    {"min-lr", required_argument, 0, OPT_MIN_LR}, {"warmup-iters", required_argument, 0, OPT_WARMUP},
    {"lr-decay", required_argument, 0, OPT_LR_DECAY}, {"lr-decay-after", required_argument, 0, OPT_LR_DECAY_AFTER},
    {"beta1", required_argument, 0, OPT_BETA1}, {"beta2", required_argument, 0, OPT_BETA2},
    {"eps", required_argument, 0, OPT_EPS}, {"weight-decay", required_argument, 0, OPT_WD},
    {"grad-clip", required_argument, 0, OPT_CLIP}, {"init", required_argument, 0, OPT_INIT},
    {"init-scale", required_argument, 0, OPT_INIT_SCALE}, {"forget-bias", required_argument, 0, OPT_FORGET_BIAS},
    {"max-epochs", required_argument, 0, OPT_MAX_EPOCHS}, {"max-iters", required_argument, 0, OPT_MAX_ITERS},
    {"eval-every", required_argument, 0, OPT_EVAL_EVERY}, {"checkpoint-every", required_argument, 0, OPT_CKPT_EVERY},
    {"sample-every", required_argument, 0, OPT_SAMPLE_EVERY}, {"sample-length", required_argument, 0, OPT_SAMPLE_LENGTH},
    {"log-every", required_argument, 0, OPT_LOG_EVERY}, {"seed", required_argument, 0, OPT_SEED},
    {"threads", required_argument, 0, OPT_THREADS}, {"device", required_argument, 0, OPT_DEVICE},
    {"rnn-impl", required_argument, 0, OPT_RNN_IMPL}, {"precision", required_argument, 0, OPT_PRECISION},
    {"init-from", required_argument, 0, OPT_INIT_FROM}, {"init-weights", required_argument, 0, OPT_INIT_WEIGHTS},
    {"eval-only", no_argument, 0, OPT_EVAL_ONLY}, {"log", required_argument, 0, OPT_LOG},
    {"overwrite", no_argument, 0, OPT_OVERWRITE}, {"vocab", required_argument, 0, OPT_VOCAB},
    {"cache-dir", required_argument, 0, OPT_CACHE_DIR}, {"eval-tokens", required_argument, 0, OPT_EVAL_TOKENS},
    {"cuda-graph", required_argument, 0, OPT_CUDA_GRAPH}, {"tensor-cores", required_argument, 0, OPT_TENSOR_CORES},
    {"keep-checkpoints", required_argument, 0, OPT_KEEP_CKPT}, {"help", no_argument, 0, OPT_HELP},
    {"version", no_argument, 0, OPT_VERSION}, {0, 0, 0, 0},
};

static void usage(const sk_train_options *d) {
    printf("Usage: shakespeare-train [OPTIONS]\n"
           "Trains a character-level LSTM language model (embedding -> LSTM stack -> linear -> softmax).\n\n"
           "Data:\n"
           "  --data FILE              training text, UTF-8 unless --vocab bytes (default: %s, found from the\n"
           "                           program's directory: ../share/shakespeare/ installed, ../data/ in the source tree)\n"
           "  --vocab utf8|bytes       symbols: Unicode code points, or byte values (any file trains);\n"
           "                           a resumed run keeps the checkpoint's (default: utf8)\n"
           "  --cache-dir DIR          where the data's token cache lives, tokenized once and\n"
           "                           memory-mapped by later runs (default: shakespeare-cache beside --out-dir)\n"
           "  --train-frac F           leading fraction used for training (default: %g)\n"
           "  --val-frac F             next fraction used for validation; the rest is test (default: %g)\n"
           "Model:\n"
           "  --embed-size N           embedding width E (default: %d)\n"
           "  --hidden-size N          LSTM width H (default: %d)\n"
           "  --num-layers N           LSTM layers L (default: %d)\n"
           "  --dropout P              dropout between layers and before the output layer, in [0, 1) (default: %g)\n"
           "  --weight-drop P          DropConnect on the recurrent weights W_hh (AWD-LSTM's weight drop): each\n"
           "                           training step drops a fraction P of them, in [0, 1) (default: %g)\n"
           "  --init uniform|pytorch   initialization: U(+-init-scale) as char-rnn, or PyTorch's defaults (default: pytorch)\n"
           "  --init-scale A           the uniform initialization's bound (default: %g)\n"
           "  --forget-bias F          added to the forget-gate bias at initialization (default: %g)\n"
           "Batching:\n"
           "  --batch-size N           parallel streams B (default: %d)\n"
           "  --seq-length N           window length T for truncated back-propagation (default: %d)\n"
           "Optimization (Adam):\n"
           "  --lr F                   learning rate (default: %g)\n"
           "  --lr-schedule S          constant | step (char-rnn: x lr-decay per epoch after lr-decay-after epochs)\n"
           "                           | cosine (to min-lr at the run's end: max-iters or max-epochs) "
           "(default: constant)\n"
           "  --warmup-iters N         linear warm-up steps, any schedule (default: %lld)\n"
           "  --min-lr F               cosine floor (default: %g)\n"
           "  --lr-decay F             step decay factor per epoch (default: %g)\n"
           "  --lr-decay-after N       epochs before step decay starts (default: %d)\n"
           "  --beta1 F                (default: %g)\n"
           "  --beta2 F                (default: %g)\n"
           "  --eps F                  (default: %g)\n"
           "  --weight-decay F         decoupled weight decay on weight matrices (default: %g)\n"
           "  --grad-clip F            clip the global gradient norm to F; 0 disables (default: %g)\n"
           "Length:\n"
           "  --max-epochs N           stop after N epochs; 0 = no limit (default: %d)\n"
           "  --max-iters N            stop after N optimizer steps in total; 0 = no limit (default: %lld)\n"
           "Evaluation, checkpoints, logs:\n"
           "  --out-dir DIR            checkpoints (last.*, best.*) and metrics.jsonl (default: %s);\n"
           "                           one run at a time; a fresh run, or one --init-from another directory,\n"
           "                           refuses a DIR holding a checkpoint\n"
           "  --eval-every N           validation every N steps and at the end; 0 = only at the end (default: %lld)\n"
           "  --eval-tokens N          validate on the first ceil(N/B) positions of each of the B streams of\n"
           "                           the validation (and test) split; 0 = the whole split (default: %lld)\n"
           "  --checkpoint-every N     write last.* every N steps and at the end; 0 = only at the end (default: %lld)\n"
           "  --keep-checkpoints N|all also write epoch-NNNN.* at each epoch's end, keeping the last N of them\n"
           "                           (or all); 0 = none (default: 0)\n"
           "  --sample-every N         print a sample every N steps; 0 = never (default: %lld)\n"
           "  --sample-length N        characters per printed sample (default: %d)\n"
           "  --log-every N            steps between progress lines and metrics records (default: %lld)\n"
           "  --log FILE               JSON Lines metrics log, one run at a time (default: OUT_DIR/metrics.jsonl)\n"
           "  --init-from CKPT         resume from a checkpoint (model, optimizer, data position, RNG)\n"
           "                           (default: none, a fresh start)\n"
           "  --init-weights FILE      start a new run from a model file's weights (fine-tuning; a file from\n"
           "                           PyTorch's save_checkpoint), with a fresh optimizer (default: none)\n"
           "  --overwrite              let a fresh run (or one --init-from another directory) replace the run in\n"
           "                           --out-dir; the old files go when the new run writes its first checkpoint,\n"
           "                           not before (default: off)\n"
           "  --eval-only              with --init-from: print the validation loss and exit (default: off)\n"
           "Runtime:\n"
           "  --seed N                 seed for initialization, dropout and samples (default: %llu)\n"
           "  --threads N              CPU threads; 0 = all cores (default: 0)\n"
           "  --device D               auto | cpu | cuda | cuda:N (default: %s)\n"
           "  --rnn-impl I             the CUDA LSTM implementation: auto (the fastest validated one that supports\n"
           "                           the model) | cudnn | cudnn-persist (cuDNN's persistent algorithms) |\n"
           "                           persistent; the CPU takes only auto (default: auto)\n"
           "  --cuda-graph G           replay each CUDA training step as one captured graph: on (a failed capture\n"
           "                           is an error) | try (a failed capture: eager from there, with a notice) |\n"
           "                           auto (= try) | off; graphs are for one process; the CPU runs eagerly and\n"
           "                           refuses on (default: auto)\n"
           "  --precision P            the arithmetic: auto (tf32 on CUDA, as PyTorch's cuDNN RNNs; fp32 on the\n"
           "                           CPU) | fp32 (strict fp32) | tf32 (TF32 tensor cores: 10-bit mantissa\n"
           "                           operands, fp32 accumulation) | bf16 (bf16 LSTM operands, fp32\n"
           "                           accumulation, cell state and master weights); the CPU takes only fp32\n"
           "                           (default: auto)\n"
           "  --tensor-cores T         the persistent LSTM kernel's inner products: auto (tensor cores for tf32\n"
           "                           and bf16) | on | off (CUDA cores); others ignore it (default: auto)\n"
           "  --help, --version\n",
           "tinyshakespeare.txt", d->train_frac, d->val_frac, d->model.embed_size, d->model.hidden_size, d->model.num_layers,
           (double)d->model.dropout, (double)d->model.weight_drop, (double)d->init_scale, (double)d->forget_bias,
           d->batch_size, d->seq_len,
           (double)d->lr.lr, (long long)d->lr.warmup_iters, (double)d->lr.min_lr, (double)d->lr.decay,
           d->lr.decay_after, (double)d->adam.beta1, (double)d->adam.beta2, (double)d->adam.eps,
           (double)d->adam.weight_decay, (double)d->adam.grad_clip, d->max_epochs, (long long)d->max_iters,
           d->out_dir, (long long)d->eval_every, (long long)d->eval_tokens, (long long)d->checkpoint_every, (long long)d->sample_every,
           d->sample_length, (long long)d->log_every, (unsigned long long)d->seed, d->device);
}

typedef struct {
    int tty;
    int live; // a live line is on screen and must be ended before other output
} printer;

static void end_live(printer *p) {
    if (p->live) fputc('\n', stdout), p->live = 0;
}

static void cb_notice(void *ctx, const char *line) {
    end_live(ctx);
    fprintf(stderr, "note: %s\n", line);
}

static void format_eta(double s, char *buf, size_t n) {
    if (!(s >= 0) || !isfinite(s)) snprintf(buf, n, "?");
    else if (s >= 3600) snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
}

static void cb_progress(void *ctx, const sk_progress *p) {
    printer *pr = ctx;
    if (g_stop) return; // stopping: nothing that could block before the checkpoint
    int64_t total = p->max_iters;
    char eta[32] = "?";
    format_eta(sk_progress_eta_s(p), eta, sizeof eta); // "?" when unknown
    double epoch = (double)p->epoch + (double)p->window / (double)p->windows_per_epoch;
    if (pr->tty) {
        printf("\r\033[Kepoch %.3f  iter %lld%s%.0lld  loss %.4f  lr %.2e  %.0f tok/s  eta %s", epoch,
               (long long)p->step, total > 0 ? "/" : "", (long long)(total > 0 ? total : 0), (double)p->train_loss,
               (double)p->lr, p->tokens_per_s, eta);
        pr->live = 1;
    } else {
        printf("epoch %.3f iter %lld loss %.4f lr %.3e grad_norm %.3f tokens_per_s %.0f eta %s\n", epoch,
               (long long)p->step, (double)p->train_loss, (double)p->lr, p->grad_norm, p->tokens_per_s, eta);
    }
    fflush(stdout);
}

// Tokenizing a large corpus: a live line on a terminal (after half a second), else a line
// every 5 s; the last call (done == total) prints the rate for a corpus of 16 MB or more, or
// one that took a second or more.
static void cb_tokenize(void *ctx, uint64_t done, uint64_t total, double elapsed, double cpu) {
    printer *pr = ctx;
    if (g_stop) return;
    static double last_plain = 0.0;
    const double mb = 1e6;
    double rate = elapsed > 0 ? (double)done / mb / elapsed : 0.0;
    char eta[32];
    format_eta(rate > 0 ? (double)(total - done) / mb / rate : -1.0, eta, sizeof eta);
    if (done == total) {
        end_live(pr);
        if (elapsed >= 1.0 || total >= 2 * 16 * mb) // a large corpus
            printf("tokenized %.1f MB in %.2f s: %.0f MB/s of source (%.2f CPU s: %.0f MB/s per CPU second)\n",
                   (double)total / 2 / mb, elapsed, rate / 2, cpu, cpu > 0 ? (double)total / 2 / mb / cpu : 0.0);
    } else if (pr->tty && elapsed >= 0.5) {
        printf("\r\033[Ktokenizing: %.0f/%.0f MB  %.0f MB/s  eta %s", (double)done / mb, (double)total / mb, rate, eta);
        pr->live = 1;
    } else if (!pr->tty && elapsed - last_plain >= 5.0) {
        last_plain = elapsed;
        printf("tokenizing %.0f/%.0f MB %.0f MB/s eta %s\n", (double)done / mb, (double)total / mb, rate, eta);
    }
    fflush(stdout);
}

static void cb_eval(void *ctx, int64_t step, double val, int best) {
    if (g_stop) return;
    end_live(ctx);
    printf("iter %lld val_loss %.4f%s\n", (long long)step, val, best ? " (best)" : "");
    fflush(stdout);
}

// The sample's bytes as they are (a byte model's may hold NUL bytes).
static void cb_sample(void *ctx, int64_t step, const char *text, size_t len) {
    if (g_stop) return;
    end_live(ctx);
    printf("---- sample at iter %lld ----\n", (long long)step);
    fwrite(text, 1, len, stdout);
    printf("\n----\n");
    fflush(stdout);
}

static void cb_checkpoint(void *ctx, const char *path) {
    printer *pr = ctx;
    if (!pr->tty && !g_stop) printf("checkpoint %s\n", path);
}

// s as a JSON string body: quotes, backslashes and control characters escaped.
static void json_escape(const char *s, char *out, size_t n) {
    size_t k = 0;
    for (; *s && k + 7 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') out[k++] = '\\', out[k++] = (char)c;
        else if (c < 0x20) k += (size_t)snprintf(out + k, n - k, "\\u%04x", c);
        else out[k++] = (char)c;
    }
    out[k] = '\0';
}

// The options that shaped the run, as JSON for the checkpoint's metadata.
static void options_json(const sk_train_options *o, const char *init, char *buf, size_t n) {
    char data[1024];
    json_escape(o->data_path, data, sizeof data);
    snprintf(buf, n,
             "{\"data\":\"%s\",\"train_frac\":%g,\"val_frac\":%g,\"batch_size\":%d,\"seq_length\":%d,"
             "\"lr\":%g,\"lr_schedule\":\"%s\",\"warmup_iters\":%lld,\"min_lr\":%g,\"beta1\":%g,\"beta2\":%g,"
             "\"eps\":%g,\"weight_decay\":%g,\"grad_clip\":%g,\"dropout\":%g,\"weight_drop\":%g,\"init\":\"%s\","
             "\"seed\":%llu,"
             "\"eval_tokens\":%lld,\"precision\":\"%s\",\"tensor_cores\":\"%s\"}",
             data, o->train_frac, o->val_frac, o->batch_size, o->seq_len, (double)o->lr.lr,
             sk_lr_kind_name(o->lr.kind), (long long)o->lr.warmup_iters, (double)o->lr.min_lr,
             (double)o->adam.beta1, (double)o->adam.beta2, (double)o->adam.eps, (double)o->adam.weight_decay,
             (double)o->adam.grad_clip, (double)o->model.dropout, (double)o->model.weight_drop, init,
             (unsigned long long)o->seed,
             (long long)o->eval_tokens, sk_precision_name(o->precision), sk_tensor_cores_name(o->tensor_cores));
}

static const char *opt_name(int id) {
    static char buf[64];
    for (const struct option *p = long_options; p->name; p++)
        if (p->val == id) return snprintf(buf, sizeof buf, "--%s", p->name), buf;
    return "?";
}

// Ends the program on an evaluation's failure, agreed by every rank. The trainer goes first:
// it lets go of NCCL while the CUDA runtime is alive, which the exit handlers may not find.
static void die_evaluating(sk_trainer *t, const sk_error *err) {
    sk_trainer_free(t);
    cli_die(CLI_EXIT_FAILURE, "%s", err->msg);
}

// With a test split (--train-frac + --val-frac < 1), its loss under the current model.
static void print_test_loss(sk_trainer *t, int rank) {
    sk_error err;
    double loss;
    sk_status st = sk_trainer_evaluate(t, 1, &loss, &err);
    if (st == SK_ERR_ARG) return; // no test split
    if (st != SK_OK) die_evaluating(t, &err);
    if (rank == 0) printf("test_loss %.6f nats/char (%.6f bits/char)\n", loss, loss / log(2.0));
}

int main(int argc, char **argv) {
    sk_train_options o;
    sk_train_options_default(&o);
    char default_data[4096];
    o.data_path = cli_default_data(default_data, sizeof default_data);
    sk_error err = {{0}};
    char comm_note[256];
    sk_status st = sk_comm_init(&g_comm, &argc, &argv, comm_note, sizeof comm_note, &err);
    if (st != SK_OK) cli_die(CLI_EXIT_FAILURE, "%s", err.msg);
    atexit(free_comm);
    const int rank = sk_comm_rank(g_comm);
    cli_set_quiet(rank != 0);
    if (comm_note[0]) fprintf(stderr, "note: %s\n", comm_note);
    const char *init_name = "pytorch";
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, ":", long_options, NULL);
        if (c == -1) break;
        const char *name = opt_name(c), *v = optarg;
        switch (c) {
        case OPT_DATA: o.data_path = v; break;
        case OPT_OUT_DIR: o.out_dir = v; break;
        case OPT_EMBED: st = cli_parse_int(name, v, 1, 65536, &o.model.embed_size, &err); o.model_set |= SK_SET_EMBED; break;
        case OPT_HIDDEN: st = cli_parse_int(name, v, 1, 65536, &o.model.hidden_size, &err); o.model_set |= SK_SET_HIDDEN; break;
        case OPT_LAYERS: st = cli_parse_int(name, v, 1, 64, &o.model.num_layers, &err); o.model_set |= SK_SET_LAYERS; break;
        case OPT_DROPOUT: st = cli_parse_float(name, v, 0, 0, 1, 1, &o.model.dropout, &err); o.model_set |= SK_SET_DROPOUT; break;
        case OPT_WEIGHT_DROP:
            st = cli_parse_float(name, v, 0, 0, 1, 1, &o.model.weight_drop, &err);
            o.model_set |= SK_SET_WEIGHT_DROP;
            break;
        case OPT_BATCH: st = cli_parse_int(name, v, 1, 1 << 20, &o.batch_size, &err); break;
        case OPT_SEQ: st = cli_parse_int(name, v, 1, 1 << 20, &o.seq_len, &err); break;
        case OPT_TRAIN_FRAC: st = cli_parse_double(name, v, 0, 1, 1, 0, &o.train_frac, &err); break;
        case OPT_VAL_FRAC: st = cli_parse_double(name, v, 0, 0, 1, 1, &o.val_frac, &err); break;
        case OPT_LR: st = cli_parse_float(name, v, 0, 1, 10, 0, &o.lr.lr, &err); break;
        case OPT_LR_SCHEDULE: st = sk_lr_kind_parse(v, &o.lr.kind, &err); break;
        case OPT_MIN_LR: st = cli_parse_float(name, v, 0, 0, 10, 0, &o.lr.min_lr, &err); break;
        case OPT_WARMUP: st = cli_parse_i64(name, v, 0, INT64_MAX / 2, &o.lr.warmup_iters, &err); break;
        case OPT_LR_DECAY: st = cli_parse_float(name, v, 0, 1, 1, 0, &o.lr.decay, &err); break;
        case OPT_LR_DECAY_AFTER: st = cli_parse_int(name, v, 0, 1 << 30, &o.lr.decay_after, &err); break;
        case OPT_BETA1: st = cli_parse_double(name, v, 0, 0, 1, 1, &o.adam.beta1, &err); break;
        case OPT_BETA2: st = cli_parse_double(name, v, 0, 0, 1, 1, &o.adam.beta2, &err); break;
        case OPT_EPS: st = cli_parse_double(name, v, FLT_MIN, 0, 1, 0, &o.adam.eps, &err); break; // 0 in float below
        case OPT_WD: st = cli_parse_double(name, v, 0, 0, 1, 0, &o.adam.weight_decay, &err); break;
        case OPT_CLIP: st = cli_parse_double(name, v, 0, 0, 1e30, 0, &o.adam.grad_clip, &err); break;
        case OPT_INIT:
            if (strcmp(v, "uniform") == 0) o.init = SK_INIT_UNIFORM, init_name = "uniform";
            else if (strcmp(v, "pytorch") == 0) o.init = SK_INIT_PYTORCH, init_name = "pytorch";
            else st = sk_fail(&err, SK_ERR_ARG, "--init expects uniform or pytorch, got \"%s\"", v);
            break;
        case OPT_INIT_SCALE: st = cli_parse_float(name, v, 0, 1, 100, 0, &o.init_scale, &err); break;
        case OPT_FORGET_BIAS: st = cli_parse_float(name, v, -100, 0, 100, 0, &o.forget_bias, &err); break;
        case OPT_MAX_EPOCHS: st = cli_parse_int(name, v, 0, 1 << 30, &o.max_epochs, &err); break;
        case OPT_MAX_ITERS: st = cli_parse_i64(name, v, 0, INT64_MAX / 2, &o.max_iters, &err); break;
        case OPT_EVAL_EVERY: st = cli_parse_i64(name, v, 0, INT64_MAX / 2, &o.eval_every, &err); break;
        case OPT_CKPT_EVERY: st = cli_parse_i64(name, v, 0, INT64_MAX / 2, &o.checkpoint_every, &err); break;
        case OPT_SAMPLE_EVERY: st = cli_parse_i64(name, v, 0, INT64_MAX / 2, &o.sample_every, &err); break;
        case OPT_SAMPLE_LENGTH: st = cli_parse_int(name, v, 1, 1 << 20, &o.sample_length, &err); break;
        case OPT_LOG_EVERY: st = cli_parse_i64(name, v, 1, INT64_MAX / 2, &o.log_every, &err); break;
        case OPT_SEED: st = cli_parse_u64(name, v, &o.seed, &err); break;
        case OPT_THREADS: st = cli_parse_int(name, v, 0, 1024, &o.threads, &err); break;
        case OPT_DEVICE: {
            int a, cu, ix;
            st = sk_device_parse(v, &a, &cu, &ix, &err);
            o.device = v;
            break;
        }
        case OPT_RNN_IMPL: st = sk_rnn_impl_parse(v, &o.rnn_impl, &err); break;
        case OPT_CUDA_GRAPH: st = sk_cuda_graph_parse(v, &o.cuda_graph, &err); break;
        case OPT_PRECISION: st = sk_precision_parse(v, &o.precision, &err); break;
        case OPT_TENSOR_CORES: st = sk_tensor_cores_parse(v, &o.tensor_cores, &err); break;
        case OPT_INIT_FROM: o.init_from = v; break;
        case OPT_INIT_WEIGHTS: o.init_weights = v; break;
        case OPT_KEEP_CKPT:
            if (strcmp(v, "all") == 0) o.keep_checkpoints = -1;
            else st = cli_parse_int(name, v, 0, 1000000, &o.keep_checkpoints, &err);
            break;
        case OPT_EVAL_ONLY: o.eval_only = 1; break;
        case OPT_LOG: o.log_path = v; break;
        case OPT_OVERWRITE: o.overwrite = 1; break;
        case OPT_VOCAB: st = sk_vocab_mode_parse(v, &o.vocab_mode, &err); o.model_set |= SK_SET_VOCAB; break;
        case OPT_CACHE_DIR: o.cache_dir = v; break;
        case OPT_EVAL_TOKENS: st = cli_parse_i64(name, v, 0, INT64_MAX / 2, &o.eval_tokens, &err); break;
        case OPT_HELP: {
            sk_train_options d;
            sk_train_options_default(&d);
            if (rank == 0) usage(&d);
            return 0;
        }
        case OPT_VERSION:
            if (rank == 0) cli_print_version("shakespeare-train");
            return 0;
        default: cli_bad_option(c, argv);
        }
        if (st != SK_OK) cli_die(CLI_EXIT_USAGE, "%s", err.msg);
    }
    if (optind < argc) cli_die(CLI_EXIT_USAGE, "unexpected argument \"%s\" (see --help)", argv[optind]);
    if (o.train_frac + o.val_frac > 1.0 + 1e-9)
        cli_die(CLI_EXIT_USAGE, "--train-frac + --val-frac must not exceed 1, got %g + %g", o.train_frac, o.val_frac);
    if (o.lr.kind == SK_LR_COSINE && o.lr.min_lr > o.lr.lr)
        cli_die(CLI_EXIT_USAGE, "--min-lr (%g) must not exceed --lr (%g)", (double)o.lr.min_lr, (double)o.lr.lr);

    char config_json[2048];
    options_json(&o, init_name, config_json, sizeof config_json);
    o.train_config_json = config_json;
    o.stop_flag = &g_stop;
    o.comm = g_comm;
    // For the tests of data-parallel training on one process and one GPU (README, Tests): not
    // an option a run needs, so not a flag.
    const char *dp_step = getenv("SHAKESPEARE_DATA_PARALLEL_STEP");
    o.data_parallel_step = dp_step && strcmp(dp_step, "1") == 0;
    // For the divergence tests (tests/cli/test_divergence*.sh): a NaN loss at a known step.
    const char *poison = getenv("SHAKESPEARE_TEST_POISON_STEP");
    if (poison && cli_parse_i64("SHAKESPEARE_TEST_POISON_STEP", poison, 1, INT64_MAX, &o.poison_step, &err) != SK_OK)
        cli_die(CLI_EXIT_USAGE, "%s", err.msg);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = 0; // no SA_RESTART: a write blocked on a full pipe returns at the signal
    g_main_thread = pthread_self();
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    // A write past the file size limit (ulimit -f) then fails with EFBIG, which ends the run
    // with a message and the previous checkpoint intact, instead of killing the process.
    signal(SIGXFSZ, SIG_IGN);

    printer pr = {isatty(STDOUT_FILENO), 0};
    sk_train_callbacks cb = {&pr, cb_notice, cb_progress, cb_eval, cb_sample, cb_checkpoint, cb_tokenize};
    sk_trainer *t;
    st = sk_trainer_init(&t, &o, &cb, &err);
    if (st != SK_OK) {
        // An explicitly requested device that is not usable is bad input; a GPU that
        // fails after --device auto picked it, or memory running out, is not.
        int usage = st == SK_ERR_DEVICE ? strcmp(o.device, "auto") != 0 : st != SK_ERR_NOMEM;
        if (st == SK_ERR_FORMAT && strstr(err.msg, "invalid UTF-8")) // the data file: say what trains on it
            cli_die(CLI_EXIT_USAGE, "%s; --vocab bytes trains on any file", err.msg);
        cli_die(usage ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE, "%s", err.msg);
    }
    if (o.eval_only) {
        double val;
        st = sk_trainer_evaluate(t, 0, &val, &err);
        if (st != SK_OK) die_evaluating(t, &err);
        if (rank == 0) printf("val_loss %.6f nats/char (%.6f bits/char)\n", val, val / log(2.0));
        print_test_loss(t, rank);
        sk_trainer_free(t);
        return 0;
    }
    sk_train_summary sum;
    st = sk_trainer_run(t, &sum, &err);
    end_live(&pr);
    if (st != SK_OK && sk_trainer_failed_alone(t)) {
        // The other ranks wait for this one in a collective: end the whole job.
        fprintf(stderr, "error: rank %d: %s\n", rank, err.msg);
        sk_comm_abort(g_comm, CLI_EXIT_FAILURE);
    }
    if (st == SK_OK && sum.already_done) {
        sk_trainer_free(t);
        if (rank == 0) {
            if (o.max_iters > 0 && sum.steps >= o.max_iters)
                printf("already at step %lld >= --max-iters %lld; nothing to do\n", (long long)sum.steps,
                       (long long)o.max_iters);
            else
                printf("already at epoch %d >= --max-epochs %d (step %lld); nothing to do\n", o.max_epochs,
                       o.max_epochs, (long long)sum.steps);
        }
        return 0;
    }
    if (st == SK_OK) print_test_loss(t, rank); // of the final model
    sk_trainer_free(t);
    if (st == SK_ERR_INTERRUPTED) {
        if (rank == 0) fprintf(stderr, "%s\n", err.msg);
        return 128 + (g_stop ? g_stop : SIGINT); // 129, 130, 143; a rank told to stop by another: 130
    }
    // Bad input was refused before the run started; what fails now (a checkpoint or log write
    // without space, a device, divergence) is not the user's input.
    if (st != SK_OK) cli_die(CLI_EXIT_FAILURE, "%s", err.msg);
    if (rank == 0)
        printf("done: steps=%lld best_val_loss=%.4f best_step=%lld final_train_loss=%.4f median_tokens_per_s=%.0f "
           "wall_s=%.1f backend=%s precision=%s cuda_graph_steps=%lld\n",
           (long long)sum.steps, sum.best_val_loss, (long long)sum.best_step, sum.final_train_loss,
           sum.median_tokens_per_s, sum.wall_s, sum.backend_name, sum.precision_name, (long long)sum.graph_steps);
    return 0;
}
