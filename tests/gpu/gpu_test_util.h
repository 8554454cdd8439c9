// gpu_test_util.h: helpers shared by the GPU tests (test_cuda_*.c).
// defines: OP_OK, alloc_f, max_abs, compare_scaled, layerwise_hook, emulated_device
#ifndef SK_GPU_TEST_UTIL_H
#define SK_GPU_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "shakespeare/backend.h" // the tests drive backends through its public calls
#include "test_util.h"

// Like CHECK_OK, for a backend op: prints the backend's own message too, and stops.
#define OP_OK(be, call)                                                                             \
    do {                                                                                            \
        sk_status st_ = (call);                                                                     \
        if (st_ != SK_OK) {                                                                         \
            fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call, sk_status_str(st_), \
                    sk_backend_error(be));                                                          \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

// malloc of n floats (at least one) or exit: a test cannot go on without its buffers.
static inline float *alloc_f(size_t n) {
    float *p = (float *)malloc((n ? n : 1) * sizeof(float));
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

// max |x[i]| over i < n (0 for n = 0).
static inline double max_abs(const float *x, size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)x[i]));
    return m;
}

// Scaled comparison: atol = a * max(|ref|) (at least a * 1e-3, for all-zero tensors).
static inline void compare_scaled(const char *what, const float *got, const float *ref, size_t n, double a,
                                  double rtol) {
    sk_test_compare(what, got, ref, n, a * fmax(max_abs(ref, n), 1e-3), rtol);
}

// The layer-after-layer family a test hook variable names (SK_PARITY_ONLY, SK_GRAPH_ONLY: the
// persistent kernel's cases alone, on those kernels): SK_RNN_PERSISTENT when unset, -1 (after a
// line saying so) when it names anything but persistent-layerwise or persistent-cluster.
static inline int layerwise_hook(const char *var) {
    const char *v = getenv(var);
    sk_rnn_impl family = SK_RNN_PERSISTENT;
    sk_error err;
    if (!v) return SK_RNN_PERSISTENT;
    if (sk_rnn_impl_parse(v, &family, &err) != SK_OK ||
        (family != SK_RNN_PERSISTENT_LAYERWISE && family != SK_RNN_PERSISTENT_CLUSTER)) {
        printf("%s=%s: expected persistent-layerwise or persistent-cluster\n", var, v);
        return -1;
    }
    return (int)family;
}

// 1 on the emulated device (tests/tests.cmake sets SK_EMULATED_DEVICE=1 in that build), else 0.
// Its fibers cost about the same per GPU thread and barrier whatever the kernel computes, so a
// persistent LSTM step costs in proportion to H * B * T there: the tests run shorter windows
// and fewer steps on it, each saying why its smaller case still takes the same paths.
static inline int emulated_device(void) {
    const char *v = getenv("SK_EMULATED_DEVICE");
    return v && v[0] == '1';
}

#endif
