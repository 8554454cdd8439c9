// cli_sample_options.h: shakespeare-sample's options, declared once (cli_options.h).
// defines: cli_sample_options, cli_sample_program, cli_sample_defaults, CLI_MAX_SAMPLES
#ifndef SK_CLI_SAMPLE_OPTIONS_H
#define SK_CLI_SAMPLE_OPTIONS_H

#include <stdint.h>

#include "cli_options.h"
#include "shakespeare/backend.h"
#include "shakespeare/sampler.h"

// A batch's activations grow with it (4096 x 32 steps x an LSTM's 4H gates: 0.5 GB at H=256).
#define CLI_MAX_SAMPLES 4096

typedef struct {
    const char *checkpoint; // a model file or a run's out-dir; required
    const char *prime, *prime_file; // at most one; neither: a newline
    const char *score;      // a file to score instead of sampling, or NULL
    const char *cache_dir;  // the --score file's token cache, or NULL: cli_default_cache_dir's
    const char *output_dir; // one file per sample, or NULL: stdout
    const char *device;     // auto | cpu | cuda | cuda:N
    int length;             // characters to generate
    int num_samples;        // 1..CLI_MAX_SAMPLES
    sk_sample_opts sample;  // temperature, top-k, top-p, argmax
    uint64_t seed;
    // The backend's settings as given (threads, precision, rnn_impl, no_fused_sampler); the
    // model and batch come from the checkpoint and the run (sk_backend_config_make).
    sk_backend_config backend;
} cli_sample_options;

extern const cli_program cli_sample_program;

cli_sample_options cli_sample_defaults(void);

#endif
