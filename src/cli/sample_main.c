// sample_main.c: shakespeare-sample: generate text from a checkpoint, or score a file.
// Exit codes: 0 done, 2 bad input (flags, files, checkpoint, prime text), 1 other failure.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_args.h"
#include "cli_paths.h"
#include "cli_sample_options.h"
#include "shakespeare/backend.h"
#include "shakespeare/checkpoint.h"
#include "shakespeare/corpus.h"
#include "shakespeare/sampler.h"
#include "shakespeare/token_cache.h"
#include "shakespeare/utf8.h"

#define SCORE_WINDOW 256 // characters per forward call when scoring (the state carries over)
#define BATCH_WINDOW 32  // the same for the prime of a batch of samples (activations scale with B * T)

typedef struct {
    const sk_vocab *vocab;
} emitter;

static int emit_char(int32_t id, void *ctx) {
    const emitter *e = ctx;
    char u[4];
    int n = sk_vocab_char_bytes(e->vocab, id, u);
    fwrite(u, 1, (size_t)n, stdout); // buffered as main set it up: no system call per character
    return 0;
}

static char *path_in(const char *dir, size_t dir_len, const char *name);

// --num-samples: every sample's text (prime, continuation, newline), kept until all are drawn
// so that a failure prints none of them.
typedef struct {
    const sk_vocab *vocab;
    char **text; // (n) each cap bytes
    size_t *len;
    size_t cap;
    int n;
} sample_texts;

static void put_char(sample_texts *t, int i, int32_t id) {
    char u[4];
    int k = sk_vocab_char_bytes(t->vocab, id, u);
    if (t->len[i] + (size_t)k + 1 < t->cap) // one byte kept for the final newline
        memcpy(t->text[i] + t->len[i], u, (size_t)k), t->len[i] += (size_t)k;
}

static int collect_char(int stream, int32_t id, void *ctx) {
    put_char(ctx, stream, id);
    return 0;
}

// Room for n samples of up to `chars` characters (4 bytes each at most, and a newline); an
// error before anything runs when that is more than the machine's memory.
static void sample_texts_init(sample_texts *t, const sk_vocab *v, int n, size_t chars) {
    *t = (sample_texts){.vocab = v, .n = n, .cap = chars * 4 + 2};
    const double need = (double)n * (double)t->cap, have = (double)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE);
    if (need > have)
        cli_die(CLI_EXIT_USAGE, "%d samples of %zu characters need %.0f MiB, more than this machine's %.0f MiB; ask "
                "for fewer --num-samples or a shorter --length", n, chars, need / 1048576.0, have / 1048576.0);
    t->text = calloc((size_t)n, sizeof *t->text);
    t->len = calloc((size_t)n, sizeof *t->len);
    for (int i = 0; t->text && t->len && i < n; i++)
        if (!(t->text[i] = malloc(t->cap))) break;
    if (!t->text || !t->len || (n > 0 && !t->text[n - 1]))
        cli_die(CLI_EXIT_USAGE, "%d samples of %zu characters do not fit in memory (%.0f MiB); ask for fewer "
                "--num-samples or a shorter --length", n, chars, (double)n * (double)t->cap / 1048576.0);
}

// --output-dir DIR: created when missing (not its parent); no sample file already in it.
static void prepare_output_dir(const char *dir, int n) {
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        if (mkdir(dir, 0777) != 0) cli_die(CLI_EXIT_USAGE, "--output-dir %s: cannot create it: %s", dir, strerror(errno));
    } else if (!S_ISDIR(sb.st_mode)) {
        cli_die(CLI_EXIT_USAGE, "--output-dir %s exists and is not a directory", dir);
    }
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "sample-%04d.txt", i + 1);
        char *p = path_in(dir, strlen(dir), name);
        if (stat(p, &sb) == 0)
            cli_die(CLI_EXIT_USAGE, "--output-dir %s already holds %s; choose another directory (no sample is "
                    "replaced)", dir, name);
        free(p);
    }
}

// The samples, to DIR/sample-NNNN.txt or stdout (under a header line when there are several).
static void write_samples(const sample_texts *t, const char *dir, uint64_t seed) {
    for (int i = 0; i < t->n; i++) {
        if (!dir) {
            if (t->n > 1)
                printf("%s==> sample %d of %d (seed %llu) <==\n", i ? "\n" : "", i + 1, t->n,
                       (unsigned long long)(seed + (uint64_t)i));
            fwrite(t->text[i], 1, t->len[i], stdout);
            continue;
        }
        char name[32];
        snprintf(name, sizeof name, "sample-%04d.txt", i + 1);
        char *p = path_in(dir, strlen(dir), name);
        FILE *f = fopen(p, "wx");
        if (!f || fwrite(t->text[i], 1, t->len[i], f) != t->len[i] || fclose(f) != 0)
            cli_die(CLI_EXIT_FAILURE, "writing %s failed: %s", p, strerror(errno));
        free(p);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) cli_die(CLI_EXIT_FAILURE, "writing the samples to stdout failed");
}

// Maps a text (file or literal) onto the vocabulary: UTF-8 code points, or bytes for a byte
// vocabulary; exits on bad input.
static int32_t *encode_text(const uint8_t *bytes, size_t nbytes, const char *what, const sk_vocab *v, size_t *n) {
    sk_error err;
    uint32_t *cps;
    if (v->bytes) {
        if (!(cps = malloc(sizeof *cps * (nbytes ? nbytes : 1)))) cli_die(CLI_EXIT_FAILURE, "out of memory");
        for (size_t i = 0; i < nbytes; i++) cps[i] = bytes[i];
        *n = nbytes;
    } else if (sk_utf8_decode(bytes, nbytes, what, &cps, n, &err) != SK_OK) {
        cli_die(CLI_EXIT_USAGE, "%s", err.msg);
    }
    int32_t *ids = malloc(sizeof(int32_t) * (*n ? *n : 1));
    if (!ids) cli_die(CLI_EXIT_FAILURE, "out of memory");
    if (sk_vocab_encode(v, cps, *n, ids, what, &err) != SK_OK) cli_die(CLI_EXIT_USAGE, "%s", err.msg);
    free(cps);
    return ids;
}

// A library message as the user reads it: a leading setting name becomes its flag.
static const char *said(const char *msg) {
    static char line[SK_ERROR_MSG_MAX + 8];
    return cli_message(&cli_sample_program, msg, line, sizeof line);
}

static void print_note(void *ctx, const char *line) {
    (void)ctx;
    fprintf(stderr, "note: %s\n", said(line));
}

// The model's id of every symbol of the cache's vocabulary. Symbols the model lacks are an
// error naming the first MAX_NAMED of them (in the vocabulary's order), how many there are, and
// where the text first has one (1-based).
#define MAX_NAMED 8
static int32_t *score_remap(const sk_token_cache *c, const sk_vocab *model, const char *what) {
    int32_t *remap = malloc(sizeof(int32_t) * (size_t)c->vocab.size);
    if (!remap) cli_die(CLI_EXIT_FAILURE, "out of memory");
    uint32_t missing[MAX_NAMED];
    const int n = sk_vocab_map(&c->vocab, model, remap, missing, MAX_NAMED);
    if (n == 0) return remap;
    char list[MAX_NAMED * 32];
    sk_vocab_describe_list(missing, MAX_NAMED, n, model->bytes, list, sizeof list);
    size_t first = 0;
    for (int32_t id = 0; first < c->ids.n; first++) {
        sk_tokens_read(&c->ids, first, 1, &id);
        if (remap[id] < 0) break;
    }
    cli_die(CLI_EXIT_USAGE, "%s has %d %s that the model lacks: %s (the first at position %zu); a model knows the "
            "symbols it was trained on", what, n, model->bytes ? (n == 1 ? "byte value" : "byte values")
                                                                : (n == 1 ? "symbol" : "symbols"), list, first + 1);
}

// --score's progress on a terminal (stderr): a live line once scoring has taken half a second,
// about ten times a second, wiped when it is done.
typedef struct {
    double t0, last;
    int shown;
} score_progress;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void show_score_progress(void *ctx, size_t done, size_t total) {
    score_progress *p = ctx;
    const double t = now_s(), elapsed = t - p->t0;
    if (done >= total) {
        if (p->shown) fputs("\r\033[K", stderr);
        return;
    }
    if (elapsed < 0.5 || t - p->last < 0.1) return;
    char eta[32];
    cli_format_eta(elapsed / (double)done * (double)(total - done), eta, sizeof eta);
    fprintf(stderr, "\r\033[Kscoring: %zu of %zu characters (%.0f%%), eta %s", done, total,
            100.0 * (double)done / (double)total, eta);
    p->last = t, p->shown = 1;
}

static int is_file(const char *path) {
    struct stat s;
    return stat(path, &s) == 0 && S_ISREG(s.st_mode);
}

// "dir/name" as a new string (dies when out of memory).
static char *path_in(const char *dir, size_t dir_len, const char *name) {
    size_t n = dir_len + strlen(name) + 2;
    char *p = malloc(n);
    if (!p) cli_die(CLI_EXIT_FAILURE, "out of memory");
    snprintf(p, n, "%.*s/%s", (int)dir_len, dir, name);
    return p;
}

// --checkpoint's argument as a model file: a file as given; an out-dir (DIR/best.safetensors,
// else DIR/last.safetensors, with a note: a run stopped before its first evaluation, or one that
// diverged from its start, has only last); a
// missing file is an error that names the checkpoint its directory does hold, if any.
// Returns a path to free.
static char *checkpoint_file(const char *arg) {
    struct stat s;
    const char *names[2] = {"best.safetensors", "last.safetensors"};
    if (stat(arg, &s) == 0 && S_ISDIR(s.st_mode)) {
        for (int i = 0; i < 2; i++) {
            char *p = path_in(arg, strlen(arg), names[i]);
            if (is_file(p) && i == 1) // never silently: last.* may be a diverged run's state
                fprintf(stderr, "note: --checkpoint %s holds no best.safetensors (a run writes it when an evaluation "
                        "finds a model that is not diverging): sampling last.safetensors\n", arg);
            if (is_file(p)) return p;
            free(p);
        }
        cli_die(CLI_EXIT_USAGE, "--checkpoint %s: the directory holds no best.safetensors or last.safetensors", arg);
    }
    if (stat(arg, &s) != 0) {
        const int why = errno;
        const char *slash = strrchr(arg, '/');
        const char *dir = slash ? arg : ".";
        const size_t dir_len = slash ? (size_t)(slash - arg) + (slash == arg) : 1;
        for (int i = 0; i < 2; i++) {
            char *p = path_in(dir, dir_len, names[i]);
            if (strcmp(p, arg) != 0 && is_file(p))
                cli_die(CLI_EXIT_USAGE, "--checkpoint %s: %s; %s exists (a run writes best.* at its first evaluation): "
                        "pass it, or the directory %.*s", arg, strerror(why), p, (int)dir_len, dir);
            free(p);
        }
    }
    char *p = strdup(arg);
    if (!p) cli_die(CLI_EXIT_FAILURE, "out of memory");
    return p;
}

static uint8_t *read_or_die(const char *path, int allow_empty, size_t *n) {
    sk_error err;
    uint8_t *bytes;
    if (sk_read_file(path, allow_empty, &bytes, n, &err) != SK_OK) cli_die(CLI_EXIT_USAGE, "%s", err.msg);
    return bytes;
}

// --help or --version (action >= 0): printed, returning 1; 0 for a run.
static int print_info(int action) {
    if (action >= 0 && strcmp(cli_sample_program.opts[action].name, "help") == 0) {
        const cli_sample_options d = cli_sample_defaults();
        cli_print_help(&cli_sample_program, &d);
        return 1;
    }
    if (action >= 0) {
        cli_print_version("shakespeare-sample");
        return 1;
    }
    return 0;
}

// The flags that cannot go together, refused; returns the model file to read (to free).
static char *check_flags(const cli_sample_options *o) {
    if (!o->checkpoint) cli_die(CLI_EXIT_USAGE, "--checkpoint FILE is required (see --help)");
    char *ckpt = checkpoint_file(o->checkpoint);
    if (o->prime && o->prime_file) cli_die(CLI_EXIT_USAGE, "--prime and --prime-file cannot be used together");
    if (o->score && (o->prime || o->prime_file)) cli_die(CLI_EXIT_USAGE, "--score cannot be combined with a prime text");
    if (o->score && (o->num_samples > 1 || o->output_dir))
        cli_die(CLI_EXIT_USAGE, "--score cannot be combined with --num-samples or --output-dir");
    return ckpt;
}

// The checkpoint at path, every parameter finite, and a --top-k it can honour.
static void load_model(const char *path, const sk_sample_opts *so, sk_model_file *model) {
    sk_error err = {{0}};
    sk_status st;
    if ((st = sk_model_load(path, model, &err)) != SK_OK ||
        (st = sk_model_file_check_finite(model, path, &err)) != SK_OK)
        cli_die(st == SK_ERR_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE, "%s", err.msg);
    if (so->top_k > model->cfg.vocab_size)
        cli_die(CLI_EXIT_USAGE, "--top-k must be at most the vocabulary size %d, got %d", model->cfg.vocab_size,
                so->top_k);
}

// What a run reads: the text to score, or the prime.
typedef struct {
    sk_token_cache cache; // --score: the text's tokens
    int32_t *remap;       // --score: the model's id of each of the cache's symbols
    int32_t *ids;         // otherwise: the ids fed first: the start context, then the prime (a newline when
                          // there is none)
    size_t n;
    size_t shown;         // the prime's first id in ids: the ones before it (the start context) are not written
} sample_input;

// --score's text, tokenized through the token cache, with its symbols mapped onto the model's.
static void open_score_text(sample_input *in, const cli_sample_options *o, const char *ckpt,
                            const sk_model_file *model) {
    sk_error err = {{0}};
    char user[4096];
    const char *mine = o->cache_dir ? o->cache_dir : cli_default_cache_dir(user, sizeof user);
    char *dir = mine ? strdup(mine) : sk_token_cache_default_dir_of_file(ckpt);
    if (!dir) cli_die(CLI_EXIT_FAILURE, "out of memory");
    sk_cache_hooks hooks = {.notice = print_note};
    sk_status st = sk_token_cache_open(&in->cache, o->score, model->vocab.bytes ? SK_VOCAB_BYTES : SK_VOCAB_UTF8,
                                       dir, 1.0, 0.0, &hooks, &err);
    free(dir);
    if (st == SK_ERR_ENCODING)
        cli_die(CLI_EXIT_USAGE, "%s: this model reads UTF-8 text (a model trained with --vocab bytes scores any file)",
                err.msg);
    if (st != SK_OK) cli_die(st == SK_ERR_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE, "%s", err.msg);
    if (in->cache.ids.n < 2) cli_die(CLI_EXIT_USAGE, "%s: a text to score needs at least 2 characters", o->score);
    in->remap = score_remap(&in->cache, &model->vocab, o->score);
}

// The prime (--prime or --prime-file) as ids, after the model's start context (a newline, not
// written) when it has one; without a prime, a newline (or id 0), written.
static void read_prime(sample_input *in, const cli_sample_options *o, const sk_vocab *v) {
    int nl = sk_vocab_index(v, '\n');
    if (o->prime || o->prime_file) {
        size_t nbytes;
        uint8_t *bytes = o->prime_file ? read_or_die(o->prime_file, 0, &nbytes) : (uint8_t *)strdup(o->prime);
        if (!bytes) cli_die(CLI_EXIT_FAILURE, "out of memory");
        if (!o->prime_file) nbytes = strlen(o->prime);
        if (nbytes == 0) cli_die(CLI_EXIT_USAGE, "--prime is empty");
        int32_t *prime = encode_text(bytes, nbytes, o->prime_file ? o->prime_file : "--prime", v, &in->n);
        free(bytes);
        in->shown = v->start_newline && nl >= 0;
        if (!(in->ids = malloc(sizeof(int32_t) * (in->n + in->shown)))) cli_die(CLI_EXIT_FAILURE, "out of memory");
        if (in->shown) in->ids[0] = nl;
        memcpy(in->ids + in->shown, prime, sizeof(int32_t) * in->n);
        in->n += in->shown;
        free(prime);
        return;
    }
    in->ids = malloc(sizeof(int32_t));
    if (!in->ids) cli_die(CLI_EXIT_FAILURE, "out of memory");
    in->ids[0] = nl >= 0 ? nl : 0;
    in->n = 1;
}

// The backend the flags ask for, holding the model's parameters; its notes on stderr.
static sk_backend *start_backend(const cli_sample_options *o, const sk_model_file *model, const char *ckpt) {
    sk_error err = {{0}};
    sk_status st;
    const int n_samples = o->num_samples;
    const sk_backend_shape shape = {.model = model->cfg, .batch_size = n_samples,
                                    .seq_len = n_samples > 1 ? BATCH_WINDOW : SCORE_WINDOW, .training = 0,
                                    .seed = o->seed};
    const sk_backend_config bc = sk_backend_config_make(&o->backend, &shape);
    sk_backend *be;
    char note[512];
    // SK_ERR_ARG: a refused flag (--precision, --rnn-impl the backend lacks)
    if ((st = sk_backend_create(&bc, o->device, &be, note, sizeof note, &err)) != SK_OK)
        cli_die(st == SK_ERR_ARG || (st == SK_ERR_DEVICE && strcmp(o->device, "auto") != 0) ? CLI_EXIT_USAGE
                                                                                             : CLI_EXIT_FAILURE,
                "%s", said(err.msg));
    for (char *line = strtok(note, "\n"); line; line = strtok(NULL, "\n")) print_note(NULL, line);
    // After every check of the input, so that this notice never precedes an "error:" line.
    if (!model->has_checksum) fprintf(stderr, "note: %s " SK_NO_CHECKSUM_NOTE "\n", ckpt);
    if ((st = sk_backend_set_params(be, model->params)) != SK_OK) {
        sk_backend_fail(&err, st, be, "to take the parameters");
        cli_die(CLI_EXIT_FAILURE, "%s", said(err.msg));
    }
    return be;
}

// --score: the model's mean loss over the text, in nats and bits per character: of every
// character after the first, from a zero state, or of every character after the model's start
// context (a newline) when it has one.
static void score_text(sk_backend *be, const sample_input *in, const sk_vocab *v, const char *path) {
    sk_error err = {{0}};
    double nll;
    size_t count;
    sk_tokens text = in->cache.ids;
    text.map = in->remap;
    score_progress progress = {.t0 = now_s(), .last = 0.0, .shown = 0};
    const int tty = cli_live_terminal(STDERR_FILENO);
    const int32_t start = v->start_newline ? sk_vocab_index(v, '\n') : -1;
    if (sk_score_tokens(be, &text, start, tty ? show_score_progress : NULL, &progress, &nll, &count, &err) != SK_OK)
        cli_die(CLI_EXIT_FAILURE, "%s", err.msg);
    double mean = nll / (double)count;
    printf("%s: %.6f nats/char, %.6f bits/char over %zu predicted characters\n", path, mean, mean / log(2.0), count);
}

// --num-samples or --output-dir: every sample drawn, then written.
static void sample_batch(sk_backend *be, const sample_input *in, sample_texts *texts, const cli_sample_options *o) {
    sk_error err = {{0}};
    for (int i = 0; i < o->num_samples; i++) // the prime, then its continuation
        for (size_t j = in->shown; j < in->n; j++) put_char(texts, i, in->ids[j]);
    if (sk_generate_batch(be, in->ids, in->n, (size_t)o->length, &o->sample, o->seed, collect_char, texts, &err) !=
        SK_OK)
        cli_die(CLI_EXIT_FAILURE, "%s", err.msg);
    for (int i = 0; i < o->num_samples; i++) texts->text[i][texts->len[i]++] = '\n'; // cap keeps room for it
    write_samples(texts, o->output_dir, o->seed);
}

// One sample, streamed to stdout as it is drawn.
static void sample_stream(sk_backend *be, const sample_input *in, const sk_vocab *v, const cli_sample_options *o) {
    sk_error err = {{0}};
    // Streaming: a terminal sees each line as it is generated; a pipe or file gets full
    // buffering (a write per character cost as much as the arithmetic of one).
    setvbuf(stdout, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, 1 << 16);
    emitter e = {.vocab = v};
    for (size_t i = in->shown; i < in->n; i++) emit_char(in->ids[i], &e); // the prime, then its continuation
    if (sk_generate(be, in->ids, in->n, (size_t)o->length, &o->sample, o->seed, emit_char, &e, &err) != SK_OK)
        cli_die(CLI_EXIT_FAILURE, "%s", err.msg);
    fputc('\n', stdout);
    if (fflush(stdout) != 0 || ferror(stdout)) cli_die(CLI_EXIT_FAILURE, "writing the sample to stdout failed");
}

static void sample_texts_free(sample_texts *t) {
    for (int i = 0; i < t->n && t->text; i++) free(t->text[i]);
    free(t->text);
    free(t->len);
}

static void sample_input_free(sample_input *in) {
    free(in->ids);
    free(in->remap);
    sk_token_cache_close(&in->cache);
}

int main(int argc, char **argv) {
    cli_sample_options o = cli_sample_defaults();
    if (print_info(cli_parse_options(&cli_sample_program, argc, argv, &o, NULL))) return 0;
    char *ckpt = check_flags(&o);
    cli_warn_threads(o.backend.threads);
    sk_model_file model = {0};
    load_model(ckpt, &o.sample, &model);
    // Inputs are validated before any backend starts.
    sample_input in = {0};
    if (o.score) open_score_text(&in, &o, ckpt, &model);
    else read_prime(&in, &o, &model.vocab);
    const int batched = o.num_samples > 1 || o.output_dir;
    sample_texts texts = {0};
    if (batched) {
        sample_texts_init(&texts, &model.vocab, o.num_samples, in.n + (size_t)o.length);
        if (o.output_dir) prepare_output_dir(o.output_dir, o.num_samples);
    }
    sk_backend *be = start_backend(&o, &model, ckpt);
    if (o.score) score_text(be, &in, &model.vocab, o.score);
    else if (batched) sample_batch(be, &in, &texts, &o);
    else sample_stream(be, &in, &model.vocab, &o);
    sample_texts_free(&texts);
    sample_input_free(&in);
    sk_backend_free(be);
    sk_model_file_free(&model);
    free(ckpt);
    return 0;
}
