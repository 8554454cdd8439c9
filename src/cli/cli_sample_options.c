// cli_sample_options.c: the table of shakespeare-sample's options (cli_options.h): each flag, the
// field of cli_sample_options it sets, its range or choices and help text. Nothing of
// sampling is recorded, so no entry has a JSON key.
#include "cli_sample_options.h"

#include <stddef.h>

#include "cli_kinds.h"

#define AT(field) offsetof(cli_sample_options, field)

static const cli_option sample_opts[] = {
    {NULL, "checkpoint", "FILE", CLI_STR, AT(checkpoint), 0, 0, 0, 0, NULL,
     "model file (.safetensors) written by shakespeare-train, or its out-dir\n"
     "(its best.safetensors, else last.safetensors) (required)", NULL, NULL, 0, 0},
    {NULL, "prime", "TEXT", CLI_STR, AT(prime), 0, 0, 0, 0, NULL,
     "text to condition on; generation continues it\n",
     "a newline, or the vocabulary's first character when the model has none", NULL, 0, 0},
    {NULL, "prime-file", "FILE", CLI_STR, AT(prime_file), 0, 0, 0, 0, NULL,
     "read the prime text from a UTF-8 file instead", NULL, NULL, 0, 0},
    {NULL, "length", "N", CLI_INT, AT(length), 0, 1 << 30, 0, 0, NULL, "characters to generate", NULL, NULL, 0, 0},
    {NULL, "temperature", "T", CLI_FLOAT, AT(sample.temperature), 0, 1e6, 1, 0, NULL,
     "> 0; lower is more conservative", NULL, NULL, 0, 0},
    {NULL, "top-k", "K", CLI_INT, AT(sample.top_k), 0, 1 << 21, 0, 0, NULL,
     "sample only among the K most likely characters; 0 = all", NULL, NULL, 0, 0},
    {NULL, "top-p", "P", CLI_FLOAT, AT(sample.top_p), 0, 1, 1, 0, NULL,
     "nucleus sampling: only among the fewest most likely characters whose\n"
     "probabilities (after temperature and top-k) sum to at least P, in\n"
     "(0, 1]; 1 = all", NULL, NULL, 0, 0},
    {NULL, "argmax", NULL, CLI_FLAG, AT(sample.argmax), 0, 0, 0, 0, NULL,
     "always take the most likely character (deterministic, ignores the above)\n", NULL, NULL, 0, 0},
    {NULL, "seed", "N", CLI_U64, AT(seed), 0, 0, 0, 0, NULL,
     "random seed; the same seed gives the same text", NULL, NULL, 0, 0},
    {NULL, "num-samples", "N", CLI_INT, AT(num_samples), 1, CLI_MAX_SAMPLES, 0, 0, NULL,
     "N independent samples in one batched pass, sample i drawn with seed\n"
     "--seed + i - 1 (the text a single run with that seed would draw),\n"
     "printed one after another under a \"==> sample i of N (seed S) <==\"\n"
     "line once all are drawn", NULL, NULL, 0, 0},
    {NULL, "output-dir", "DIR", CLI_STR, AT(output_dir), 0, 0, 0, 0, NULL,
     "write sample i to DIR/sample-NNNN.txt instead of stdout (DIR is created;\n"
     "its parent must exist; no file is replaced)", "stdout", NULL, 0, 0},
    {NULL, "device", "D", CLI_KIND, AT(device), 0, 0, 0, 0, &cli_kind_device, "auto | cpu | cuda | cuda:N", NULL, NULL,
     0, 0},
    {NULL, "rnn-impl", "I", CLI_KIND, AT(rnn_impl), 0, 0, 0, 0, &cli_kind_rnn_impl,
     "the CUDA LSTM implementation: auto (cudnn; in bf16 the persistent kernels) |\n"
     "cudnn | cudnn-persist | persistent | persistent-layerwise |\n"
     "persistent-cluster (see shakespeare-train --help); the CPU takes only auto", NULL, NULL, 0, 0},
    {NULL, "threads", "N", CLI_INT, AT(threads), 0, 1024, 0, 0, NULL, "CPU threads; 0 = all cores", NULL, NULL, 0, 0},
    // Hidden, for benchmarks (scripts/bench_sample.sh): the loop the fused sampler replaced.
    {NULL, "no-fused-sampler", NULL, CLI_FLAG, AT(no_fused_sampler), 0, 0, 0, 0, NULL, NULL, NULL, NULL, 0, 0},
    {NULL, "precision", "P", CLI_KIND, AT(precision), 0, 0, 0, 0, &cli_kind_precision,
     "the CUDA arithmetic: fp32 | tf32 | bf16 | auto (see shakespeare-train --help);\n"
     "the CPU takes only fp32", NULL, NULL, 0, 0},
    {NULL, "score", "FILE", CLI_STR, AT(score), 0, 0, 0, 0, NULL,
     "instead of sampling, print the mean negative log-likelihood of FILE in\n"
     "nats and bits per character: every character after the first is\n"
     "predicted from all those before it, starting from a zero state, batch 1\n",
     "off, sample instead", NULL, 0, 0},
    {NULL, "cache-dir", "DIR", CLI_STR, AT(cache_dir), 0, 0, 0, 0, NULL,
     "where the token cache of the --score file lives\n", "shakespeare-cache beside the checkpoint's directory", NULL,
     0, 0},
    {NULL, "help", NULL, CLI_ACTION, 0, 0, 0, 0, 0, NULL, "", NULL, NULL, 0, 0},
    {NULL, "version", NULL, CLI_ACTION, 0, 0, 0, 0, 0, NULL, "", NULL, NULL, 0, 0},
};

const cli_program cli_sample_program = {
    "shakespeare-sample",
    "Usage: shakespeare-sample --checkpoint FILE|DIR [OPTIONS]\n"
    "Generates text from a trained model, or scores a text file; a model trained with\n"
    "--vocab bytes reads and writes raw bytes.\n\n",
    sample_opts, sizeof sample_opts / sizeof sample_opts[0], (size_t)-1};

cli_sample_options cli_sample_defaults(void) {
    return (cli_sample_options){.device = "auto", .length = 500, .num_samples = 1, .seed = 1,
                                .sample = {.temperature = 1.0f, .top_p = 1.0f}, .precision = SK_PRECISION_FP32,
                                .rnn_impl = SK_RNN_AUTO};
}
