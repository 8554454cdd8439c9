// cli_args.h: strict parsing of option values for the command-line programs.
// defines: cli_parse_int, cli_parse_i64, cli_parse_u64, cli_parse_float, cli_parse_double,
//          cli_bad_option, cli_die, cli_print_version, cli_set_quiet, cli_format_eta
// Values go through strtol/strtod with end-pointer, errno and range checks: "12x", "",
// "1e999" and out-of-range numbers are rejected with a message naming the option, never clamped.
#ifndef SK_CLI_ARGS_H
#define SK_CLI_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "shakespeare/status.h"

// Exit codes of both programs.
#define CLI_EXIT_USAGE 2      // bad input: flags, files, checkpoints, prime text
#define CLI_EXIT_FAILURE 1    // a failure that is not the user's input (device, a non-finite loss)
#define CLI_EXIT_DIVERGED 3   // shakespeare-train: the run finished, but diverging (its last loss far above ln(V))
#define CLI_EXIT_SIGINT 130
#define CLI_EXIT_SIGTERM 143

sk_status cli_parse_int(const char *opt, const char *s, long lo, long hi, int *out, sk_error *err);
sk_status cli_parse_i64(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out, sk_error *err);
sk_status cli_parse_u64(const char *opt, const char *s, uint64_t *out, sk_error *err);
// lo_open/hi_open: whether the bound itself is excluded.
sk_status cli_parse_float(const char *opt, const char *s, double lo, int lo_open, double hi, int hi_open,
                          float *out, sk_error *err);
sk_status cli_parse_double(const char *opt, const char *s, double lo, int lo_open, double hi, int hi_open,
                           double *out, sk_error *err);

// For getopt_long's ':' (missing value) and '?' (unknown option) answers, with opterr = 0
// and an optstring starting with ':': exits 2 with a message naming the option.
_Noreturn void cli_bad_option(int c, char **argv);

// Prints "error: <msg>" (one line) to stderr, unless quiet, and exits with code.
_Noreturn void cli_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// --version: "<program> X.Y.Z", then the backends built in and the BLAS library (build_info.h).
void cli_print_version(const char *program);

// A time left for a progress line: "0m12s", "2h05m"; "?" when s is negative or not finite.
void cli_format_eta(double s, char *buf, size_t n);

// Quiet: cli_die prints nothing (the ranks of a data-parallel job other than rank 0).
void cli_set_quiet(int quiet);

#endif
