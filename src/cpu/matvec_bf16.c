// matvec_bf16.c: see matvec_bf16.h. GCC's vector extension gives the sixteen lanes (one AVX-512
// register, two AVX2 ones, four SSE ones); target_clones compiles the kernel for each and the
// loader picks the widest the CPU runs (ifunc), so no build needs AVX-512 to run.
#include "matvec_bf16.h"

#include <string.h>

uint16_t sk_bf16_round(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); // NaN: keep it one, quiet
    u += 0x7fffu + ((u >> 16) & 1u);                                               // to nearest, ties to even
    return (uint16_t)(u >> 16);
}

float sk_bf16_widen(uint16_t b) {
    const uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

void sk_bf16_pack_rows(int G, int K, const float *src, uint16_t *dst) {
    const int k32 = K & ~31;
    for (size_t i = 0; i < (size_t)G; i++) {
        const float *w = src + i * (size_t)K;
        uint16_t *d = dst + i * (size_t)K;
        for (int k = 0; k < k32; k += 32)
            for (int j = 0; j < 16; j++)
                d[k + 2 * j] = sk_bf16_round(w[k + j]), d[k + 2 * j + 1] = sk_bf16_round(w[k + 16 + j]);
        for (int k = k32; k < K; k++) d[k] = sk_bf16_round(w[k]);
    }
}

typedef float v16f __attribute__((vector_size(64)));
typedef uint32_t v16u __attribute__((vector_size(64)));

// Macros, not functions: a function taking or returning a 64-byte vector changes the ABI between
// the clones (GCC's -Wpsabi). ACC += the packed block at p (32 bf16 values) times x[0, 32): the
// low halves of its words are elements 0-15, the high halves 16-31 (sk_bf16_pack_rows).
#define BLOCK32(acc, p, x)                                                                                          \
    do {                                                                                                           \
        v16u u_, lo_, hi_;                                                                                         \
        v16f flo_, fhi_, x0_, x1_;                                                                                 \
        memcpy(&u_, (p), sizeof u_);                                                                               \
        lo_ = u_ << 16, hi_ = u_ & 0xffff0000u;                                                                    \
        memcpy(&flo_, &lo_, sizeof flo_), memcpy(&fhi_, &hi_, sizeof fhi_);                                        \
        memcpy(&x0_, (x), sizeof x0_), memcpy(&x1_, (x) + 16, sizeof x1_);                                         \
        (acc) += flo_ * x0_;                                                                                       \
        (acc) += fhi_ * x1_;                                                                                       \
    } while (0)
// out += the sixteen lanes of acc summed in one fixed tree, then the row's tail k >= k32 in order.
#define FINISH(out, acc, w, x)                                                                                      \
    do {                                                                                                           \
        float s_[8];                                                                                               \
        for (int l_ = 0; l_ < 8; l_++) s_[l_] = (acc)[l_] + (acc)[l_ + 8];                                         \
        float t_ = ((s_[0] + s_[4]) + (s_[1] + s_[5])) + ((s_[2] + s_[6]) + (s_[3] + s_[7]));                      \
        for (int k_ = k32; k_ < K; k_++) t_ += sk_bf16_widen((w)[k_]) * (x)[k_];                                  \
        (out) += t_;                                                                                               \
    } while (0)

// GCC only: clang 14 emits no ifunc for an exported target_clones function (its callers, in
// other files, fail to link), and the build's -march=native already targets the machine there.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define SK_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SK_CLONES // one version elsewhere, and under ASan (no ifunc resolver in the sanitized start-up)
#endif

SK_CLONES
void sk_matvec_bf16_rows(int G, int K, const uint16_t *W, int nb, const float *X, int ldx, float *Y, int ldy) {
    const int k32 = K & ~31;
    int i = 0;
    for (; i + 4 <= G; i += 4) { // four rows against every stream: 2 KB of W at K = 256
        const uint16_t *w0 = W + (size_t)i * K, *w1 = w0 + K, *w2 = w1 + K, *w3 = w2 + K;
        for (int b = 0; b < nb; b++) {
            const float *x = X + (size_t)b * ldx;
            v16f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
            for (int k = 0; k < k32; k += 32) {
                // The next block's rows at this column, from L3 while this one computes: a batch-1
                // product waits on the weights' bytes, and the hardware prefetcher follows four
                // streams too shallowly (1.3x the characters per second here at config A).
                __builtin_prefetch(w0 + 4 * (size_t)K + k), __builtin_prefetch(w1 + 4 * (size_t)K + k);
                __builtin_prefetch(w2 + 4 * (size_t)K + k), __builtin_prefetch(w3 + 4 * (size_t)K + k);
                BLOCK32(a0, w0 + k, x + k);
                BLOCK32(a1, w1 + k, x + k);
                BLOCK32(a2, w2 + k, x + k);
                BLOCK32(a3, w3 + k, x + k);
            }
            float *y = Y + (size_t)b * ldy + i;
            FINISH(y[0], a0, w0, x);
            FINISH(y[1], a1, w1, x);
            FINISH(y[2], a2, w2, x);
            FINISH(y[3], a3, w3, x);
        }
    }
    for (; i < G; i++) { // the last G mod 4 rows, one at a time (the same order per row)
        const uint16_t *w = W + (size_t)i * K;
        for (int b = 0; b < nb; b++) {
            const float *x = X + (size_t)b * ldx;
            v16f a = {0};
            for (int k = 0; k < k32; k += 32) BLOCK32(a, w + k, x + k);
            FINISH(Y[(size_t)b * ldy + i], a, w, x);
        }
    }
}
