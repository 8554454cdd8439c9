// test_util.h: tiny self-contained test helpers (static inline, header only).
// defines: CHECK, CHECK_OK, sk_test_tmpdir, sk_test_write_file, sk_test_source_path,
//          sk_test_compare (atol + rtol*|ref|, prints the worst element)
#ifndef SK_TEST_UTIL_H
#define SK_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shakespeare/status.h"

static int sk_test_failures = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            sk_test_failures++;                                                      \
        }                                                                            \
    } while (0)

// Evaluates a call returning sk_status; on failure prints the status and the message of
// the sk_error named `err` in scope, and aborts the test (later checks would cascade).
#define CHECK_OK(call)                                                                      \
    do {                                                                                    \
        sk_status st_ = (call);                                                             \
        if (st_ != SK_OK) {                                                                 \
            fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call,             \
                    sk_status_str(st_), err.msg);                                           \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

static inline int sk_test_done(const char *name) {
    if (sk_test_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, sk_test_failures);
        return 1;
    }
    printf("%s: ok\n", name);
    return 0;
}

// A fresh directory under $TMPDIR (or /tmp); the path is written into buf.
static inline void sk_test_tmpdir(char *buf, size_t size, const char *tag) {
    const char *base = getenv("TMPDIR");
    snprintf(buf, size, "%s/sk-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    if (!mkdtemp(buf)) {
        perror("mkdtemp");
        exit(1);
    }
}

static inline void sk_test_write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

// $SK_SOURCE_DIR/rel (the source tree; set by CTest), or rel relative to the cwd.
static inline void sk_test_source_path(char *buf, size_t size, const char *rel) {
    const char *root = getenv("SK_SOURCE_DIR");
    snprintf(buf, size, "%s/%s", root && *root ? root : ".", rel);
}

// Compares n floats with |got - ref| <= atol + rtol*|ref|; prints the worst element
// (largest excess over its tolerance) and counts a failure when any exceeds it.
static inline int sk_test_compare(const char *what, const float *got, const float *ref, size_t n,
                                  double atol, double rtol) {
    size_t worst = 0;
    double worst_ratio = -1.0;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        double diff = fabs((double)got[i] - (double)ref[i]);
        double tol = atol + rtol * fabs((double)ref[i]);
        double ratio = isnan(diff) ? INFINITY : diff / tol;
        if (ratio > worst_ratio) {
            worst_ratio = ratio;
            worst = i;
        }
        if (!(diff <= tol)) bad++;
    }
    if (n == 0) return 0;
    printf("  %-28s n=%-8zu worst [%zu] got %.9g ref %.9g (|diff| = %.3g, %.2f of tolerance)%s\n", what, n,
           worst, got[worst], ref[worst], fabs((double)got[worst] - ref[worst]), worst_ratio,
           bad ? "  FAIL" : "");
    if (bad) sk_test_failures++;
    return bad;
}

#endif
