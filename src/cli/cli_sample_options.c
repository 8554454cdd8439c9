// cli_sample_options.c: the table of shakespeare-sample's options (cli_options.h): each flag, the
// field of cli_sample_options it sets, its range or choices and help text. Nothing of
// sampling is recorded, so no entry has a JSON key.
#include "cli_sample_options.h"

#include <stddef.h>

#include "cli_backend_options.h"

#define AT(field) offsetof(cli_sample_options, field)

static const cli_option sample_opts[] = {
    {.name = "checkpoint", .arg = "FILE", .type = CLI_STR, .offset = AT(checkpoint),
     .help = "model file (.safetensors) written by shakespeare-train, or its out-dir\n"
             "(its best.safetensors, else last.safetensors) (required)"},
    {.name = "prime", .arg = "TEXT", .type = CLI_STR, .offset = AT(prime),
     .help = "text to condition on; generation continues it (a model trained now\n"
             "reads it after a newline, its start context, which is not printed)\n",
     .default_text = "a newline, or the vocabulary's first character when the model has none"},
    {.name = "prime-file", .arg = "FILE", .type = CLI_STR, .offset = AT(prime_file),
     .help = "read the prime text from a UTF-8 file instead"},
    {.name = "length", .arg = "N", .type = CLI_INT, .offset = AT(length), .hi = 1 << 30,
     .help = "characters to generate"},
    {.name = "temperature", .arg = "T", .type = CLI_FLOAT, .offset = AT(sample.temperature), .hi = 1e6, .lo_open = 1,
     .help = "> 0; lower is more conservative"},
    {.name = "top-k", .arg = "K", .type = CLI_INT, .offset = AT(sample.top_k), .hi = 1 << 21,
     .help = "sample only among the K most likely characters; 0 = all"},
    {.name = "top-p", .arg = "P", .type = CLI_FLOAT, .offset = AT(sample.top_p), .hi = 1, .lo_open = 1,
     .help = "nucleus sampling: only among the fewest most likely characters whose\n"
             "probabilities (after temperature and top-k) sum to at least P, in\n"
             "(0, 1]; 1 = all"},
    {.name = "argmax", .type = CLI_FLAG, .offset = AT(sample.argmax),
     .help = "always take the most likely character (deterministic, ignores the above)\n"},
    {.name = "seed", .arg = "N", .type = CLI_U64, .offset = AT(seed),
     .help = "random seed; the same seed gives the same text"},
    {.name = "num-samples", .arg = "N", .type = CLI_INT, .offset = AT(num_samples), .lo = 1, .hi = CLI_MAX_SAMPLES,
     .help = "N independent samples in one batched pass, sample i drawn with seed\n"
             "--seed + i - 1 (the text a single run with that seed would draw),\n"
             "printed one after another under a \"==> sample i of N (seed S) <==\"\n"
             "line once all are drawn"},
    {.name = "output-dir", .arg = "DIR", .type = CLI_STR, .offset = AT(output_dir),
     .help = "write sample i to DIR/sample-NNNN.txt instead of stdout (DIR is created;\n"
             "its parent must exist; no file is replaced)", .default_text = "stdout"},
    CLI_BACKEND_OPTIONS(CLI_ROW, CLI_NO_ROW, CLI_ROW, AT)
    {.name = "score", .arg = "FILE", .type = CLI_STR, .offset = AT(score),
     .help = "instead of sampling, print the mean negative log-likelihood of FILE in\n"
             "nats and bits per character, batch 1: every character predicted from all\n"
             "those before it, after the model's start context (a newline; models written\n"
             "before it: from a zero state, every character after the first)\n",
     .default_text = "off, sample instead"},
    {.name = "cache-dir", .arg = "DIR", .type = CLI_STR, .offset = AT(cache_dir),
     .help = "where the token cache of the --score file lives\n",
     .default_text = "$XDG_CACHE_HOME/shakespeare or ~/.cache/shakespeare, else in the checkpoint's directory"},
    {.name = "help", .type = CLI_ACTION, .help = ""},
    {.name = "version", .type = CLI_ACTION, .help = ""},
};

const cli_program cli_sample_program = {
    "shakespeare-sample",
    "Usage: shakespeare-sample --checkpoint FILE|DIR [OPTIONS]\n"
    "Generates text from a trained model, or scores a text file; a model trained with\n"
    "--vocab bytes reads and writes raw bytes.\n\n",
    sample_opts, sizeof sample_opts / sizeof sample_opts[0], (size_t)-1};

cli_sample_options cli_sample_defaults(void) {
    return (cli_sample_options){.device = "auto", .length = 500, .num_samples = 1, .seed = 1,
                                .sample = {.temperature = 1.0f, .top_p = 1.0f},
                                .backend = {.precision = SK_PRECISION_FP32, .rnn_impl = SK_RNN_AUTO}};
}
