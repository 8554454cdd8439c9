// rng.c: xoshiro256** seeded through splitmix64 (Blackman & Vigna).
#include "shakespeare/rng.h"

#include <math.h>

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void sk_rng_seed(sk_rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) {
        x += 0x9E3779B97F4A7C15ull;
        r->s[i] = sk_mix64(x);
    }
}

uint64_t sk_rng_u64(sk_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

float sk_rng_uniform(sk_rng *r) { return (float)(sk_rng_u64(r) >> 40) * (1.0f / 16777216.0f); }

float sk_rng_normal(sk_rng *r) {
    // u1 in (0, 1] so that log(u1) is finite.
    double u1 = ((double)(sk_rng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double u2 = (double)(sk_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
