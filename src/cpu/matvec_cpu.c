// matvec_cpu.c: see matvec_cpu.h. GCC's vector extension gives the eight lanes; with
// -ffp-contract=off (ISO C11) each lane is a multiply then an add, as in the scalar tail.
#include "matvec_cpu.h"

#include <stddef.h>
#include <string.h>

typedef float v8 __attribute__((vector_size(32)));

static inline v8 load8(const float *p) {
    v8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

// The lanes in one fixed tree, then the tail of the row in order.
static inline float finish(v8 a, const float *w, const float *x, int k8, int K) {
    float s = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
    for (int k = k8; k < K; k++) s += w[k] * x[k];
    return s;
}

void sk_matvec_rows(int G, int K, const float *W, int nb, const float *X, int ldx, float *Y, int ldy) {
    const int k8 = K & ~7;
    int i = 0;
    for (; i + 4 <= G; i += 4) { // four rows of W against every stream: 4 KB of W at K = 256
        const float *w0 = W + (size_t)i * K, *w1 = w0 + K, *w2 = w1 + K, *w3 = w2 + K;
        for (int b = 0; b < nb; b++) {
            const float *x = X + (size_t)b * ldx;
            v8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
            for (int k = 0; k < k8; k += 8) {
                const v8 xv = load8(x + k);
                a0 += load8(w0 + k) * xv, a1 += load8(w1 + k) * xv;
                a2 += load8(w2 + k) * xv, a3 += load8(w3 + k) * xv;
            }
            float *y = Y + (size_t)b * ldy + i;
            y[0] += finish(a0, w0, x, k8, K), y[1] += finish(a1, w1, x, k8, K);
            y[2] += finish(a2, w2, x, k8, K), y[3] += finish(a3, w3, x, k8, K);
        }
    }
    for (; i < G; i++) { // the last G mod 4 rows, one at a time (the same order per row)
        const float *w = W + (size_t)i * K;
        for (int b = 0; b < nb; b++) {
            const float *x = X + (size_t)b * ldx;
            v8 a = {0};
            for (int k = 0; k < k8; k += 8) a += load8(w + k) * load8(x + k);
            Y[(size_t)b * ldy + i] += finish(a, w, x, k8, K);
        }
    }
}
