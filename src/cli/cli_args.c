// cli_args.c: strict option-value parsing and console helpers (see cli_args.h).
#define _GNU_SOURCE // sched_getaffinity, CPU_COUNT
#include "cli_args.h"

#include "shakespeare/build_info.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// strtol/strtod accept leading white space; an option value never should.
static int starts_clean(const char *s) { return s[0] != '\0' && !isspace((unsigned char)s[0]); }

sk_status cli_parse_i64(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out, sk_error *err) {
    char *end;
    errno = 0;
    long long v = starts_clean(s) ? strtoll(s, &end, 10) : 0;
    if (!starts_clean(s) || *end != '\0' || errno == ERANGE)
        return sk_fail(err, SK_ERR_ARG, "%s expects an integer, got \"%s\" (see --help)", opt, s);
    if (v < lo || v > hi)
        return sk_fail(err, SK_ERR_ARG, "%s must be in [%lld, %lld], got %lld (see --help)", opt, (long long)lo,
                       (long long)hi, v);
    *out = v;
    return SK_OK;
}

sk_status cli_parse_int(const char *opt, const char *s, long lo, long hi, int *out, sk_error *err) {
    int64_t v = 0;
    sk_status st = cli_parse_i64(opt, s, lo, hi, &v, err);
    if (st == SK_OK) *out = (int)v;
    return st;
}

sk_status cli_parse_u64(const char *opt, const char *s, uint64_t *out, sk_error *err) {
    char *end;
    errno = 0;
    unsigned long long v = 0;
    if (starts_clean(s) && s[0] != '-') v = strtoull(s, &end, 10);
    if (!starts_clean(s) || s[0] == '-' || *end != '\0' || errno == ERANGE)
        return sk_fail(err, SK_ERR_ARG, "%s expects a non-negative integer below 2^64, got \"%s\" (see --help)", opt, s);
    *out = v;
    return SK_OK;
}

sk_status cli_parse_double(const char *opt, const char *s, double lo, int lo_open, double hi, int hi_open,
                           double *out, sk_error *err) {
    char *end;
    errno = 0;
    double v = starts_clean(s) ? strtod(s, &end) : 0.0;
    if (!starts_clean(s) || *end != '\0' || errno == ERANGE || !isfinite(v))
        return sk_fail(err, SK_ERR_ARG, "%s expects a finite number, got \"%s\" (see --help)", opt, s);
    int below = lo_open ? !(v > lo) : !(v >= lo);
    int above = hi_open ? !(v < hi) : !(v <= hi);
    if (below || above)
        return sk_fail(err, SK_ERR_ARG, "%s must be in %s%g, %g%s, got %s (see --help)", opt, lo_open ? "(" : "[", lo,
                       hi, hi_open ? ")" : "]", s);
    *out = v;
    return SK_OK;
}

sk_status cli_parse_float(const char *opt, const char *s, double lo, int lo_open, double hi, int hi_open,
                          float *out, sk_error *err) {
    double v = 0.0;
    sk_status st = cli_parse_double(opt, s, lo, lo_open, hi, hi_open, &v, err);
    if (st != SK_OK) return st;
    // The bounds must hold for the value the program uses: "0.99999999" is below 1, but as a
    // float it is 1 (a --dropout of 1 scales by 1/0), and "1e-50" as a float is 0.
    const double f = (double)(float)v;
    if ((lo_open ? !(f > lo) : !(f >= lo)) || (hi_open ? !(f < hi) : !(f <= hi)))
        return sk_fail(err, SK_ERR_ARG, "%s must be in %s%g, %g%s in single precision, got %s (%.9g as a float)",
                       opt, lo_open ? "(" : "[", lo, hi, hi_open ? ")" : "]", s, f);
    *out = (float)v;
    return SK_OK;
}

static int quiet; // cli_set_quiet

void cli_set_quiet(int q) { quiet = q; }

void cli_die(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (!quiet) {
        fputs("error: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    }
    va_end(ap);
    exit(code);
}

void cli_bad_option(int c, char **argv) {
    if (c == ':') cli_die(CLI_EXIT_USAGE, "option %s needs a value (see --help)", argv[optind - 1]);
    // '?': optopt is the short option, a long option's id (>= 256) when it got a value it
    // does not take, or 0 for an unknown long option.
    if (optopt > 0 && optopt < 256) cli_die(CLI_EXIT_USAGE, "unknown option -%c (see --help)", optopt);
    if (optopt >= 256) cli_die(CLI_EXIT_USAGE, "option %s does not take a value (see --help)", argv[optind - 1]);
    cli_die(CLI_EXIT_USAGE, "unknown or ambiguous option %s (see --help)", argv[optind - 1]);
}

void cli_print_version(const char *program) {
    char info[1024];
    sk_build_info(info, sizeof info);
    printf("%s %s\n%s", program, SK_VERSION, info);
}

void cli_format_eta(double s, char *buf, size_t n) {
    if (!(s >= 0) || !isfinite(s)) snprintf(buf, n, "?");
    else if (s >= 3600) snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
}

int cli_live_terminal(int fd) {
    const char *term = getenv("TERM");
    if (!isatty(fd) || !term || !term[0] || strcmp(term, "dumb") == 0) return 0;
    return !getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMI_SIZE") && !getenv("PMIX_RANK");
}

void cli_warn_threads(int threads) {
    cpu_set_t set;
    if (threads <= 0 || sched_getaffinity(0, sizeof set, &set) != 0) return;
    const int cores = CPU_COUNT(&set);
    if (threads > cores)
        fprintf(stderr, "warning: --threads %d exceeds the %d core%s this process may use; the threads take turns "
                "on them and run slower (--threads 0 uses them all)\n", threads, cores, cores == 1 ? "" : "s");
}
