// rng.h: deterministic random numbers (xoshiro256**, seeded by splitmix64), and a
// stateless counter hash for dropout masks that any backend can reproduce.
// defines: sk_rng, sk_rng_seed, sk_rng_u64, sk_rng_uniform, sk_rng_normal, sk_mix64,
//          sk_hash_uniform, sk_dropout_key
#ifndef SHAKESPEARE_RNG_H
#define SHAKESPEARE_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4]; // the whole state: saving these four words saves the generator
} sk_rng;

void sk_rng_seed(sk_rng *r, uint64_t seed);
uint64_t sk_rng_u64(sk_rng *r);
// Uniform in [0, 1) with 24 random bits (exactly representable as float).
float sk_rng_uniform(sk_rng *r);
// Standard normal (Box-Muller, one value per call).
float sk_rng_normal(sk_rng *r);

// splitmix64 finalizer: a well-mixed 64-bit function of x.
static inline uint64_t sk_mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Uniform in [0, 1) as a pure function of (key, index): dropout masks are
// sk_hash_uniform(key, i) >= p, with key derived from (seed, step, site).
static inline float sk_hash_uniform(uint64_t key, uint64_t index) {
    return (float)(sk_mix64(key ^ sk_mix64(index)) >> 40) * (1.0f / 16777216.0f);
}

// Dropout: element index (in the (B, len, width) stream-major order of the site's tensor)
// is kept when sk_hash_uniform(sk_dropout_key(seed, step, site), index) >= p, and scaled by
// 1/(1-p). Sites: k = 0..L-2 is the output of LSTM layer k (input of layer k+1); site L-1
// is the last layer's output before fc. The same (seed, step) always gives the same masks.
static inline uint64_t sk_dropout_key(uint64_t seed, int64_t step, int site) {
    return sk_mix64(seed ^ sk_mix64(((uint64_t)step << 8) ^ (uint64_t)site));
}

#endif
