// activations.h: branch-free expf, sigmoid and tanh that GCC vectorizes (private).
// defines: sk_expf, sk_sigmoidf, sk_tanhf
//
// glibc's tanhf goes through a scalar expm1f and took a quarter of a CPU training step.
// These follow Cephes' single-precision algorithms (Cody-Waite range reduction and the
// same minimax polynomials), accurate to about 2 ulp over the range that matters, written
// with selects instead of branches so that the loops over a gate block vectorize.
// NaN propagates: every clamp is written as a comparison that is false for NaN.
#ifndef SK_ACTIVATIONS_H
#define SK_ACTIVATIONS_H

#include <stdint.h>
#include <string.h>

static inline float sk_expf(float x) {
    x = x > 88.0f ? 88.0f : x;   // e^88 < FLT_MAX
    x = x < -87.0f ? -87.0f : x; // e^-87 is still a normal float
    // n = round(x / ln 2), found by adding 1.5 * 2^23 so the integer lands in the mantissa.
    float t = x * 1.44269504088896341f + 12582912.0f;
    uint32_t tb;
    memcpy(&tb, &t, sizeof tb);
    float n = t - 12582912.0f;
    float r = x - n * 0.693359375f; // ln 2 split in two for an exact reduction
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    // 2^n from the exponent bits; unsigned so that a NaN's garbage bits shift without UB.
    uint32_t eb = ((uint32_t)tb - 0x4B400000u + 127u) << 23;
    float scale;
    memcpy(&scale, &eb, sizeof scale);
    return p * scale;
}

static inline float sk_sigmoidf(float x) { return 1.0f / (1.0f + sk_expf(-x)); }

static inline float sk_tanhf(float x) {
    float a = x < 0.0f ? -x : x;
    // |x| >= 0.625: 1 - 2 / (e^{2|x|} + 1), with the sign of x.
    float big = 1.0f - 2.0f / (sk_expf(2.0f * a) + 1.0f);
    big = x < 0.0f ? -big : big;
    // |x| < 0.625: odd polynomial (no cancellation near 0).
    float z = x * x;
    float small = -5.70498872745e-3f;
    small = small * z + 2.06390887954e-2f;
    small = small * z - 5.37397155531e-2f;
    small = small * z + 1.33314422036e-1f;
    small = small * z - 3.33332819422e-1f;
    small = small * z * x + x;
    return a < 0.625f ? small : big;
}

#endif
