// test_sampler.c: sk_sample_token's distributions against probabilities worked out by hand:
// temperature, top-k, top-p (nucleus) and their order (temperature, then top-k, then top-p
// over what top-k left, renormalized), argmax, ties, NaN logits, and that top-p 1 (or 0)
// leaves the plain draw, seed for seed, as it was. The uniforms are the keyed ones
// (sample_draw.h's sk_sample_uniform at positions 0, 1, ...). Last, the sampling kernel's form
// of the draw (sk_draw_index_sums over sk_draw_sums: one pass of sums, then two searches) picks
// the index sk_draw_index picks, on 50,000 random weight vectors (zeros, ties, tiny and equal
// weights, lengths 1 to 70, every kind of top-p, uniforms 0 and just below 1): bit for bit,
// no tolerance, since both read the same running sums.
#include <math.h>
#include <stdio.h>

#include "shakespeare/rng.h"
#include "shakespeare/sampler.h"
#include "test_util.h"

#define V 4
#define DRAWS 40000
// Each frequency is a binomial proportion over DRAWS draws: its standard deviation is at
// most sqrt(0.25 / 40000) = 0.0025, so 0.015 is six of them (the seed is fixed, so a pass
// is reproducible; the tolerance says how far an exact implementation may land).
#define FREQ_TOL 0.015

// Frequencies of each id over DRAWS draws from logits with options o.
static void frequencies(const float *logits, const sk_sample_opts *o, double *freq) {
    const uint64_t key = sk_sample_key(42);
    float p[V];
    sk_candidate c[V];
    int count[V] = {0};
    for (int i = 0; i < DRAWS; i++) {
        int32_t id = sk_sample_token(logits, V, o, sk_sample_uniform(key, (uint64_t)i), p, c);
        if (id < 0 || id >= V) {
            fprintf(stderr, "drew id %d outside [0, %d)\n", (int)id, V);
            sk_test_failures++;
            return;
        }
        count[id]++;
    }
    for (int v = 0; v < V; v++) freq[v] = (double)count[v] / DRAWS;
}

// Frequencies near want; an id with want 0 must never be drawn at all.
static void expect(const char *what, const float *logits, sk_sample_opts o, const double *want) {
    double f[V];
    frequencies(logits, &o, f);
    int ok = 1;
    for (int v = 0; v < V; v++) ok &= want[v] == 0.0 ? f[v] == 0.0 : fabs(f[v] - want[v]) <= FREQ_TOL;
    printf("  %-40s got %.4f %.4f %.4f %.4f want %.4f %.4f %.4f %.4f%s\n", what, f[0], f[1], f[2], f[3], want[0],
           want[1], want[2], want[3], ok ? "" : "  <-- FAIL");
    if (!ok) sk_test_failures++;
}

// sk_draw_index_sums against sk_draw_index (see the top).
static void sums_pick_as_the_loops(void) {
    enum { K = 70, TRIALS = 50000 };
    const float top_ps[] = {0.0f, 1.0f, 0.5f, 0.9f, 0.95f, 1e-6f, 0.999999f};
    sk_rng r;
    sk_rng_seed(&r, 5);
    float p[K];
    double acc[K];
    int differ = 0;
    for (int t = 0; t < TRIALS; t++) {
        const int k = 1 + (int)(sk_rng_u64(&r) % K), kind = (int)(sk_rng_u64(&r) % 4);
        for (int i = 0; i < k; i++) {
            const float x = sk_rng_uniform(&r);
            p[i] = kind == 0   ? x                                          // anything in [0, 1)
                   : kind == 1 ? (x < 0.3f ? 0.0f : x < 0.6f ? 0.25f : x)   // zeros and ties
                   : kind == 2 ? (float)exp(-40.0 * x)                      // spanning 17 decades
                               : (i == 0 ? 1.0f : x < 0.5f ? 0.0f : 1e-30f); // all the mass up front
        }
        if (t % 7 == 0) p[0] = 1.0f; // the best candidate's weight, as sk_draw_weight gives it
        if (t % 1000 == 1)
            for (int i = 0; i < k; i++) p[i] = 0.0f; // nothing to draw: -1 from both
        const float top_p = top_ps[t % 7];
        const float u = t % 11 == 0 ? 0.0f : t % 11 == 1 ? 0x1.fffffep-1f : sk_rng_uniform(&r);
        sk_draw_sums(p, k, acc);
        const int a = sk_draw_index(p, k, top_p, u), b = sk_draw_index_sums(acc, k, top_p, u);
        if (a != b && differ++ < 3)
            fprintf(stderr, "trial %d (k %d, kind %d, top-p %g, u %.9g): sk_draw_index %d, sk_draw_index_sums %d\n", t,
                    k, kind, top_p, u, a, b);
    }
    printf("sk_draw_index_sums = sk_draw_index on %d random weight vectors: %s\n", TRIALS, differ ? "NO" : "yes");
    CHECK(differ == 0);
}

int main(void) {
    // Probabilities 0.10, 0.50, 0.15, 0.25: ranked, ids 1, 3, 2, 0.
    const double q[V] = {0.10, 0.50, 0.15, 0.25};
    float logits[V];
    for (int v = 0; v < V; v++) logits[v] = (float)log(q[v]);

    expect("plain", logits, (sk_sample_opts){.temperature = 1.0f}, q);
    // 0.5 < 0.7 <= 0.5 + 0.25: ids 1 and 3, renormalized.
    expect("top-p 0.7", logits, (sk_sample_opts){.temperature = 1.0f, .top_p = 0.7f},
           (double[V]){0, 0.5 / 0.75, 0, 0.25 / 0.75});
    expect("top-p 0.4 (the top token holds it)", logits, (sk_sample_opts){.temperature = 1.0f, .top_p = 0.4f},
           (double[V]){0, 1, 0, 0});
    // Top-p measures the mass top-k left: of 0.5, 0.25, 0.15 (sum 0.9), the first two hold
    // 0.833 >= 0.8 (over all four they would hold 0.75 < 0.8 and take id 2 too).
    expect("top-k 3, top-p 0.8", logits, (sk_sample_opts){.temperature = 1.0f, .top_k = 3, .top_p = 0.8f},
           (double[V]){0, 0.5 / 0.75, 0, 0.25 / 0.75});
    expect("top-k 3, top-p 0.9", logits, (sk_sample_opts){.temperature = 1.0f, .top_k = 3, .top_p = 0.9f},
           (double[V]){0, 0.5 / 0.9, 0.15 / 0.9, 0.25 / 0.9});
    expect("top-k 2", logits, (sk_sample_opts){.temperature = 1.0f, .top_k = 2},
           (double[V]){0, 0.5 / 0.75, 0, 0.25 / 0.75});
    // Temperature first: at 0.5 the probabilities are q^2 / 0.345, the top one 0.7246 >= 0.7
    // (at temperature 1 it would be 0.5 < 0.7, and id 3 would be drawn too).
    expect("temperature 0.5, top-p 0.7", logits, (sk_sample_opts){.temperature = 0.5f, .top_p = 0.7f},
           (double[V]){0, 1, 0, 0});
    expect("temperature 0.5", logits, (sk_sample_opts){.temperature = 0.5f},
           (double[V]){0.01 / 0.345, 0.25 / 0.345, 0.0225 / 0.345, 0.0625 / 0.345});

    // Top-p 1 and 0 are "all tokens": the same draws, seed for seed, as no top-p at all.
    {
        const uint64_t key = sk_sample_key(7);
        float p[V];
        sk_candidate c[V];
        int same = 1;
        for (int i = 0; i < 1000; i++) {
            const float u = sk_sample_uniform(key, (uint64_t)i);
            int32_t a = sk_sample_token(logits, V, &(sk_sample_opts){.temperature = 1.0f}, u, p, c);
            int32_t b = sk_sample_token(logits, V, &(sk_sample_opts){.temperature = 1.0f, .top_p = 1.0f}, u, p, c);
            int32_t d = sk_sample_token(logits, V, &(sk_sample_opts){.temperature = 1.0f, .top_p = 0.0f}, u, p, c);
            same &= a == b && a == d;
        }
        CHECK(same);
    }

    // Ties: ids 1 and 2 share the top logit; argmax, top-k 1 and a tiny top-p all take id 1.
    {
        const float tied[V] = {2.0f, 5.0f, 5.0f, 1.0f};
        const uint64_t key = sk_sample_key(3);
        float p[V];
        sk_candidate c[V];
        int all = 1;
        for (int i = 0; i < 200; i++) {
            const float u = sk_sample_uniform(key, (uint64_t)i);
            all &= sk_sample_token(tied, V, &(sk_sample_opts){.temperature = 1.0f, .argmax = 1}, u, p, c) == 1;
            all &= sk_sample_token(tied, V, &(sk_sample_opts){.temperature = 1.0f, .top_k = 1}, u, p, c) == 1;
            all &= sk_sample_token(tied, V, &(sk_sample_opts){.temperature = 1.0f, .top_p = 1e-6f}, u, p, c) == 1;
        }
        CHECK(all);
        // Each tied token holds 1 / (2 + e^-3 + e^-4) = 0.4835 of the mass, so top-p 0.5 takes
        // both; they split the draws evenly and ids 0 and 3 never come.
        expect("ties, top-p 0.5", tied, (sk_sample_opts){.temperature = 1.0f, .top_p = 0.5f},
               (double[V]){0, 0.5, 0.5, 0});
    }
    // NaN logits (weights that overflow, or a caller's non-finite ones) have no probability and
    // rank below every number: ids 2 and 1 are drawn as e^2 : e^1, with or without top-k;
    // argmax takes id 2; if every logit is NaN, every draw is id 0.
    {
        const float with_nan[V] = {NAN, 1.0f, 2.0f, NAN};
        const double e = exp(1.0), want[V] = {0, 1.0 / (1.0 + e), e / (1.0 + e), 0};
        expect("NaN logits", with_nan, (sk_sample_opts){.temperature = 1.0f}, want);
        expect("NaN logits, top-k 2", with_nan, (sk_sample_opts){.temperature = 1.0f, .top_k = 2}, want);
        expect("NaN logits, argmax", with_nan, (sk_sample_opts){.temperature = 1.0f, .argmax = 1},
               (double[V]){0, 0, 1, 0});
        const float all_nan[V] = {NAN, NAN, NAN, NAN};
        expect("all logits NaN", all_nan, (sk_sample_opts){.temperature = 1.0f, .top_p = 0.9f},
               (double[V]){1, 0, 0, 0});
    }
    sums_pick_as_the_loops();
    return sk_test_done("test_sampler");
}
