// hash.h: the stateless counter hash behind the dropout masks, one definition for the CPU
// backend (C) and the CUDA kernels (__host__ __device__ under nvcc), so that both draw the
// same masks bit for bit. Integer arithmetic only, plus one exact int -> float conversion.
// defines: SK_HOST_DEVICE, sk_mix64, sk_hash_uniform, sk_dropout_key, SK_WEIGHT_DROP_SITE,
//          sk_weight_drop_factor
#ifndef SHAKESPEARE_HASH_H
#define SHAKESPEARE_HASH_H

#include <stdint.h>

#ifdef __CUDACC__
#define SK_HOST_DEVICE __host__ __device__
#else
#define SK_HOST_DEVICE
#endif

// splitmix64 finalizer: a well-mixed 64-bit function of x.
static inline SK_HOST_DEVICE uint64_t sk_mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Uniform in [0, 1) as a pure function of (key, index): dropout masks are
// sk_hash_uniform(key, i) >= p, with key derived from (seed, step, site).
// (x >> 40) < 2^24 converts to float exactly and the product by 2^-24 is exact.
static inline SK_HOST_DEVICE float sk_hash_uniform(uint64_t key, uint64_t index) {
    return (float)(sk_mix64(key ^ sk_mix64(index)) >> 40) * (1.0f / 16777216.0f);
}

// Dropout: element index (in the (B, len, width) stream-major order of the site's tensor)
// is kept when sk_hash_uniform(sk_dropout_key(seed, step, site), index) >= p, and scaled by
// 1/(1-p). Sites: k = 0..L-2 is the output of LSTM layer k (input of layer k+1); site L-1
// is the last layer's output before fc. The same (seed, step) always gives the same masks.
static inline SK_HOST_DEVICE uint64_t sk_dropout_key(uint64_t seed, int64_t step, int site) {
    return sk_mix64(seed ^ sk_mix64(((uint64_t)step << 8) ^ (uint64_t)site));
}

// Weight drop (model.h's weight_drop p): in a training step at `step`, element i of layer
// k's W_hh (row-major (4H, H), model.h's layout) is multiplied by sk_weight_drop_factor(
// sk_dropout_key(seed, step, SK_WEIGHT_DROP_SITE + k), i, p): 0 or 1/(1-p); so is its
// gradient. One mask per step for the whole batch (DropConnect), the same on every rank.
// Sites 128 + k stay clear of the activation sites (k < L <= 64) and of the step bits.
#define SK_WEIGHT_DROP_SITE 128
static inline SK_HOST_DEVICE float sk_weight_drop_factor(uint64_t key, uint64_t index, float p) {
    return sk_hash_uniform(key, index) >= p ? 1.0f / (1.0f - p) : 0.0f;
}

#endif
