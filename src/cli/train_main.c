// train_main.c: shakespeare-train, the command-line trainer.
// Parses options strictly (cli_args.h), runs the trainer (trainer.h) and prints progress:
// one live line on a terminal, plain lines otherwise. Exit codes: 0 done, 2 bad input (and an
// out-dir in use or holding a run), 1 other failure (a non-finite loss, device, a failed checkpoint
// or log write), 3 the run finished diverging (last.* written, best.* kept), 128 + the signal
// after SIGHUP, SIGINT or SIGTERM (129, 130, 143: checkpoint saved).
// Under mpirun (comm.h) every rank runs this program and only rank 0 prints.
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_args.h"
#include "cli_paths.h"
#include "cli_train_options.h"
#include "shakespeare/trainer.h"

static volatile sig_atomic_t g_stop = 0; // 0, or the stop signal: SIGHUP, SIGINT or SIGTERM
static sk_comm *g_comm;                  // the job's communicator, finalized at exit
static pthread_t g_main_thread;          // the thread that prints and writes checkpoints
static volatile sig_atomic_t g_signal_note; // the first stop signal's note, while the run trains on rank 0:
                                            // 0 none, 1 plain, 2 on a terminal

static unsigned char *g_named;          // which of the options the command line named
static cli_kept g_kept;                  // strings a resume took from its checkpoint's options record

static void free_globals(void) {
    sk_comm_free(g_comm);
    g_comm = NULL;
    free(g_named);
    cli_kept_free(&g_kept);
}

// The trainer's inherit_options: a resume's options from its checkpoint, unless named here.
static sk_status inherit_options(sk_train_options *o, const char *record, char *notes, size_t n, sk_error *err) {
    return cli_options_inherit(&cli_train_program, o, g_named, record, &g_kept, notes, n, err);
}

// The first SIGHUP, SIGINT or SIGTERM (a closed terminal, Ctrl-C, a scheduler's stop) asks for
// a clean stop (finish the step, save, exit 128 + the signal); a second one ends the process at once, which the atomic checkpoint writes make safe.
// Once a stop is asked for, nothing more is printed to stdout before the checkpoint (see the
// callbacks): under mpirun, OpenMPI 4.1 stops draining the ranks' output when it gets SIGINT and
// kills them a second later, so rank 0 must not block on a full pipe. A write already blocked
// when the signal comes returns (EINTR: the handler has no SA_RESTART), and a signal that lands
// on another thread (the MPI library's, a worker's) is passed on to the main thread for that.
// The first one during training says at once what happens (a long step may take a while yet),
// on rank 0; on a terminal from a line of its own, as a live progress line (or the terminal's ^C)
// may be on it. Not while the run starts or after it ended (an error line may be the last one).
static void on_signal(int sig) {
    if (!pthread_equal(pthread_self(), g_main_thread)) {
        pthread_kill(g_main_thread, sig);
        return;
    }
    if (g_stop) { // delivered, now with the default action, as the handler returns
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    g_stop = sig;
    static const char line[] = "\nnote: stopping after this step, which then writes last.*; a second signal "
                               "ends the process at once\n";
    if (g_signal_note) {
        const int tty = g_signal_note > 1;
        ssize_t ignored = write(STDERR_FILENO, line + !tty, sizeof line - 1 - !tty);
        (void)ignored;
    }
}

typedef struct {
    int tty;
    int live; // a live line is on screen and must be ended before other output
} printer;

static void end_live(printer *p) {
    if (p->live) fputc('\n', stdout), p->live = 0;
}

// A library message as the user reads it: a leading setting name becomes its flag.
static const char *said(const char *msg) {
    static char line[SK_ERROR_MSG_MAX + 8];
    return cli_message(&cli_train_program, msg, line, sizeof line);
}

static void cb_notice(void *ctx, const char *line) {
    end_live(ctx);
    fprintf(stderr, "note: %s\n", said(line));
}

static void cb_warning(void *ctx, const char *line) {
    end_live(ctx);
    fprintf(stderr, "warning: %s\n", said(line));
}

static void cb_progress(void *ctx, const sk_progress *p) {
    printer *pr = ctx;
    if (g_stop) return; // stopping: nothing that could block before the checkpoint
    int64_t total = p->max_iters;
    char eta[32] = "?";
    cli_format_eta(sk_progress_eta_s(p), eta, sizeof eta); // "?" when unknown
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
    cli_format_eta(rate > 0 ? (double)(total - done) / mb / rate : -1.0, eta, sizeof eta);
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

// Ends the program on an evaluation's failure, agreed by every rank. The trainer goes first:
// it lets go of NCCL while the CUDA runtime is alive, which the exit handlers may not find.
static void die_evaluating(sk_trainer *t, const sk_error *err) {
    sk_trainer_free(t);
    cli_die(CLI_EXIT_FAILURE, "%s", said(err->msg));
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

// The job's communicator (comm.h), finalized at exit; returns this process's rank, and
// quiets every rank but 0.
static int start_comm(int *argc, char ***argv) {
    sk_error err = {{0}};
    char comm_note[256];
    if (sk_comm_init(&g_comm, argc, argv, comm_note, sizeof comm_note, &err) != SK_OK)
        cli_die(CLI_EXIT_FAILURE, "%s", err.msg);
    atexit(free_globals);
    const int rank = sk_comm_rank(g_comm);
    cli_set_quiet(rank != 0);
    if (comm_note[0]) fprintf(stderr, "note: %s\n", comm_note);
    return rank;
}

// --help or --version (action >= 0): printed on rank 0, returning 1; 0 for a run.
static int print_info(int action, int rank) {
    if (action >= 0 && strcmp(cli_train_program.opts[action].name, "help") == 0) {
        sk_train_options d;
        sk_train_options_default(&d);
        if (rank == 0) cli_print_help(&cli_train_program, &d);
        return 1;
    }
    if (action >= 0) { // --version
        if (rank == 0) cli_print_version("shakespeare-train");
        return 1;
    }
    return 0;
}

// What the trainer takes from this program besides the flags: the options record, the stop
// flag, the communicator, and the test hooks of the environment.
static void connect_options(sk_train_options *o) {
    o->options_json = cli_train_options_json;
    o->options_identity = cli_train_options_identity;
    o->inherit_options = inherit_options;
    o->take_resolved = cli_train_take_resolved;
    o->stop_flag = &g_stop;
    o->comm = g_comm;
    // For the tests of data-parallel training on one process and one GPU (README, Tests): not
    // an option a run needs, so not a flag.
    const char *dp_step = getenv("SHAKESPEARE_TEST_DATA_PARALLEL_STEP");
    o->data_parallel_step = dp_step && strcmp(dp_step, "1") == 0;
    // For the divergence tests (tests/cli/test_divergence*.sh): a NaN loss at a known step.
    const char *poison = getenv("SHAKESPEARE_TEST_POISON_STEP");
    sk_error err = {{0}};
    if (poison && cli_parse_i64("SHAKESPEARE_TEST_POISON_STEP", poison, 1, INT64_MAX, &o->poison_step, &err) != SK_OK)
        cli_die(CLI_EXIT_USAGE, "%s", err.msg);
}

// --init-from DIR (a run's out-dir, as shakespeare-sample's --checkpoint takes it): DIR/last.safetensors,
// continued in DIR unless --out-dir is named. buf (n bytes) holds the file's path.
static void init_from_dir(sk_train_options *o, char *buf, size_t n) {
    struct stat sb;
    if (!o->init_from || stat(o->init_from, &sb) != 0 || !S_ISDIR(sb.st_mode)) return;
    size_t len = strlen(o->init_from);
    while (len > 1 && o->init_from[len - 1] == '/') len--;
    snprintf(buf, n, "%.*s/last.safetensors", (int)len, o->init_from);
    if (stat(buf, &sb) != 0)
        cli_die(CLI_EXIT_USAGE, "--init-from %s: the directory holds no last.safetensors (a run writes it at its "
                "first checkpoint); name a checkpoint file of it instead", o->init_from);
    for (size_t i = 0; i < cli_train_program.n_opts; i++)
        if (strcmp(cli_train_program.opts[i].name, "out-dir") == 0 && !g_named[i]) o->out_dir = o->init_from;
    o->init_from = buf;
}

// SIGHUP, SIGINT and SIGTERM stop the run at the next step (a checkpoint saved).
static void handle_signals(void) {
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
}

// The trainer for the options, reporting through pr; a refusal is an error line.
static sk_trainer *start_trainer(const sk_train_options *o, printer *pr) {
    sk_error err = {{0}};
    sk_train_callbacks cb = {.ctx = pr, .on_notice = cb_notice, .on_progress = cb_progress, .on_eval = cb_eval,
                             .on_sample = cb_sample, .on_checkpoint = cb_checkpoint, .on_tokenize = cb_tokenize,
                             .on_warning = cb_warning};
    sk_trainer *t;
    sk_status st = sk_trainer_init(&t, o, &cb, &err);
    if (st != SK_OK) {
        // An explicitly requested device that is not usable is bad input; a GPU that
        // fails after --device auto picked it, or memory running out, is not.
        int usage = st == SK_ERR_DEVICE ? strcmp(o->device, "auto") != 0 : st != SK_ERR_NOMEM;
        if (st == SK_ERR_ENCODING) // the data file: say what trains on it
            cli_die(CLI_EXIT_USAGE, "%s; --vocab bytes trains on any file", said(err.msg));
        cli_die(usage ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE, "%s", said(err.msg));
    }
    return t;
}

// --eval-only: the validation (and test) loss of the model as it is; the exit status.
static int evaluate_only(sk_trainer *t, int rank) {
    sk_error err = {{0}};
    double val;
    if (sk_trainer_evaluate(t, 0, &val, &err) != SK_OK) die_evaluating(t, &err);
    if (rank == 0) printf("val_loss %.6f nats/char (%.6f bits/char)\n", val, val / log(2.0));
    print_test_loss(t, rank);
    sk_trainer_free(t);
    return 0;
}

// The run itself; a failure on this rank alone ends the whole job here.
static sk_status run_training(sk_trainer *t, printer *pr, int rank, sk_train_summary *sum, sk_error *err) {
    g_signal_note = rank != 0 ? 0 : isatty(STDERR_FILENO) ? 2 : 1; // not while it starts or after it ends
    sk_status st = sk_trainer_run(t, sum, err);
    g_signal_note = 0;
    end_live(pr);
    if (st != SK_OK && sk_trainer_failed_alone(t)) {
        // The other ranks wait for this one in a collective: end the whole job.
        fprintf(stderr, "error: rank %d: %s\n", rank, said(err->msg));
        sk_comm_abort(g_comm, CLI_EXIT_FAILURE);
    }
    return st;
}

// A resume whose run had already reached its limit.
static void print_already_done(const sk_train_summary *sum) {
    if (strcmp(sum->ended_by, "max-iters") == 0)
        printf("already at step %lld >= --max-iters %lld; nothing to do (a larger --max-iters goes on)\n",
               (long long)sum->steps, (long long)sum->max_iters);
    else
        printf("already at epoch %d >= --max-epochs %d (step %lld); nothing to do (a larger --max-epochs "
               "goes on)\n", sum->max_epochs, sum->max_epochs, (long long)sum->steps);
}

// What the run is about to do, in one line: the model, the data, and where it ends.
static void print_start(const sk_trainer *t) {
    sk_train_info in;
    sk_trainer_info(t, &in);
    if (in.start_step >= in.end_step) return; // a resume already at its end: its own line says so
    char from[48] = "";
    if (in.start_step > 0) snprintf(from, sizeof from, "from step %lld, ", (long long)in.start_step);
    printf("run: %zu parameters, vocabulary %d, corpus %zu characters (train %zu, val %zu, test %zu), %lld steps "
           "per epoch; %sends at step %lld (--%s)\n", in.n_params, in.vocab_size, in.corpus_chars, in.n_train, in.n_val,
           in.n_test, (long long)in.steps_per_epoch, from, (long long)in.end_step, in.ended_by ? in.ended_by : "?");
}

// The run's one summary line.
static void print_done(const sk_train_summary *sum) {
    char best[64] = "best_val_loss=none best_step=none"; // no validation ran, or none of a sound state
    if (sum->best_step >= 0)
        snprintf(best, sizeof best, "best_val_loss=%.4f best_step=%lld", sum->best_val_loss, (long long)sum->best_step);
    printf("done: steps=%lld ended_by=--%s %s final_train_loss=%.4f median_tokens_per_s=%.0f wall_s=%.1f backend=%s "
           "precision=%s cuda_graph_steps=%lld\n", (long long)sum->steps, sum->ended_by, best, sum->final_train_loss,
           sum->median_tokens_per_s, sum->wall_s, sum->backend_name, sum->precision_name, (long long)sum->graph_steps);
}

int main(int argc, char **argv) {
    sk_train_options o;
    sk_train_options_default(&o);
    char default_data[4096];
    o.data_path = cli_default_data(default_data, sizeof default_data);
    const int rank = start_comm(&argc, &argv);
    if (!(g_named = calloc(cli_train_program.n_opts, 1))) cli_die(CLI_EXIT_FAILURE, "out of memory");
    if (print_info(cli_parse_options(&cli_train_program, argc, argv, &o, g_named), rank)) return 0;
    char init_file[4200];
    init_from_dir(&o, init_file, sizeof init_file);
    connect_options(&o);
    if (rank == 0) cli_warn_threads(o.backend.threads);
    char cache_dir[4096];
    if (!o.cache_dir) o.cache_dir = cli_default_cache_dir(cache_dir, sizeof cache_dir);
    handle_signals();
    // Line by line into a file or a pipe too, so that stdout's lines (steps, checkpoints) keep
    // their order with stderr's (notes, the stop) where both go to one file.
    setvbuf(stdout, NULL, _IOLBF, 0);
    printer pr = {.tty = cli_live_terminal(STDOUT_FILENO), .live = 0};
    sk_trainer *t = start_trainer(&o, &pr);
    if (o.eval_only) return evaluate_only(t, rank);
    if (rank == 0) print_start(t); // nothing for a resume already at its end
    sk_train_summary sum;
    sk_error err = {{0}};
    const sk_status st = run_training(t, &pr, rank, &sum, &err);
    if (st == SK_OK && sum.already_done) {
        sk_trainer_free(t);
        if (rank == 0) print_already_done(&sum);
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
    if (st != SK_OK) cli_die(CLI_EXIT_FAILURE, "%s", said(err.msg));
    if (rank == 0) print_done(&sum);
    if (sum.diverged) { // finished, but not to a model worth keeping: a script must see it
        if (rank == 0)
            fprintf(stderr, "error: the run ended diverging (training loss %.4f at step %lld, far above what a model "
                    "that has learnt nothing scores); last.* holds that state, %s; try a lower --lr\n",
                    sum.final_train_loss, (long long)sum.steps,
                    sum.best_step >= 0 ? "best.* the last one below it" : "and no best.* was written");
        return CLI_EXIT_DIVERGED;
    }
    return 0;
}
