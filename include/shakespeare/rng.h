// rng.h: deterministic random numbers (xoshiro256**, seeded by splitmix64); the stateless
// counter hash for dropout masks (sk_mix64, sk_hash_uniform, sk_dropout_key) comes from
// hash.h, shared with the CUDA kernels.
// defines: sk_rng, sk_rng_seed, sk_rng_u64, sk_rng_uniform, sk_rng_normal
#ifndef SHAKESPEARE_RNG_H
#define SHAKESPEARE_RNG_H

#include <stdint.h>

#include "shakespeare/hash.h"

typedef struct {
    uint64_t s[4]; // the whole state: saving these four words saves the generator
} sk_rng;

void sk_rng_seed(sk_rng *r, uint64_t seed);
uint64_t sk_rng_u64(sk_rng *r);
// Uniform in [0, 1) with 24 random bits (exactly representable as float).
float sk_rng_uniform(sk_rng *r);
// Standard normal (Box-Muller, one value per call).
float sk_rng_normal(sk_rng *r);

#endif
