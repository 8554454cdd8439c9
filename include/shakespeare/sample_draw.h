// sample_draw.h: one draw of a token from logits, in pieces that the CPU sampler (sampler.c)
// and the CUDA backend's sampling kernel (kernels/sample_persistent_kernels.cuh) both run, so
// that a seed draws the same text on either wherever their logits agree.
// defines: sk_sample_opts, sk_candidate, sk_sample_key, sk_sample_uniform, sk_candidate_before,
//          sk_draw_weight, sk_draw_index, sk_draw_sums, sk_draw_first, sk_draw_index_sums
//
// A draw at temperature T keeps the k best-ranked candidates (top-k; all of them without it),
// weighs candidate i by p_i = exp((logit_i - max) / T) (0 for a NaN logit), keeps the shortest
// ranked prefix whose weight reaches top_p of the total (nucleus; all of them without it), and
// picks the first candidate i whose running sum of weights exceeds u * total, u uniform in
// [0, 1). Without top-k and top-p, the candidates stay in id order: no ranking is needed.
// The uniform is keyed: u = sk_sample_uniform(sk_sample_key(seed), position), where position
// counts the tokens drawn after the prime (0, 1, ...). So a draw does not depend on how many
// draws came before it on the same device, and a batch of samples (seeds s, s+1, ...) draws
// what each sample draws alone.
#ifndef SHAKESPEARE_SAMPLE_DRAW_H
#define SHAKESPEARE_SAMPLE_DRAW_H

#include <math.h>
#include <stdint.h>

#include "shakespeare/hash.h"

// Sampling applies, in this order (the order of Hugging Face's generate): temperature,
// top-k, top-p; the probabilities left are renormalized and one token is drawn.
typedef struct {
    float temperature; // > 0; logits are divided by it
    int top_k;         // 0: all tokens; else only the k most likely
    int argmax;        // 1: always the most likely token (ignores temperature, top_k, top_p, the seed)
    // Nucleus sampling: in (0, 1), only the smallest set of most likely tokens (of those
    // top_k left) whose probabilities sum to at least top_p; 0 or 1: all of them.
    float top_p;
} sk_sample_opts;

// A token among those a draw may pick. Ranked, the higher logit comes first and, between
// equal logits, the lower id (the token argmax takes).
typedef struct {
    float logit;
    int32_t id;
} sk_candidate;

// The key of a sample's draws (the constant keeps them apart from dropout's keys).
static inline SK_HOST_DEVICE uint64_t sk_sample_key(uint64_t seed) { return sk_mix64(seed ^ 0x53414D504C45ull); }

// The uniform of the draw at `position` (24 random bits: exact in float).
static inline SK_HOST_DEVICE float sk_sample_uniform(uint64_t key, uint64_t position) {
    return sk_hash_uniform(key, position);
}

// 1 when candidate (la, ia) ranks before (lb, ib): the higher logit, NaN below every number,
// then the lower id. A total order on distinct ids.
static inline SK_HOST_DEVICE int sk_candidate_before(float la, int32_t ia, float lb, int32_t ib) {
    const int a_nan = la != la, b_nan = lb != lb;
    if (a_nan != b_nan) return b_nan;
    if (!a_nan && la != lb) return la > lb;
    return ia < ib;
}

// The weight of a candidate: exp((logit - max_logit) / temperature) in double, rounded to
// float; 0 for a NaN logit.
static inline SK_HOST_DEVICE float sk_draw_weight(float logit, float max_logit, float temperature) {
    const float p = (float)exp((double)(logit - max_logit) / (double)temperature);
    return p != p ? 0.0f : p;
}

// Which of the k candidates p (their weights, in candidate order) the uniform u picks, after
// the nucleus cut (top_p in (0, 1); else none); -1 when the weights sum to nothing (every
// logit NaN or infinite: the caller takes the argmax). Sums run in double, in candidate
// order, one after another: the order is part of the result.
static inline SK_HOST_DEVICE int sk_draw_index(const float *p, int k, float top_p, float u) {
    double total = 0.0;
    for (int i = 0; i < k; i++) total += p[i];
    if (!(total > 0.0)) return -1;
    int n = k;
    if (top_p > 0.0f && top_p < 1.0f) { // the shortest ranked prefix holding top_p of the mass (p[0] = 1)
        const double need = (double)top_p * total;
        double mass = 0.0;
        for (n = 0; n < k && mass < need; n++) mass += p[n];
        total = mass;
    }
    const double x = (double)u * total;
    double acc = 0.0;
    for (int i = 0; i < n; i++) {
        acc += p[i];
        if (x < acc) return i;
    }
    return n - 1; // u * total rounds up to total
}

// The running sums of sk_draw_index: acc[i] = p[0] + ... + p[i] in double, added one after
// another in candidate order (its loops reach exactly these numbers). They never decrease:
// every weight is >= 0 (sk_draw_weight).
static inline SK_HOST_DEVICE void sk_draw_sums(const float *p, int k, double *acc) {
    double s = 0.0;
    for (int i = 0; i < k; i++) acc[i] = s += p[i];
}

// The first i < n whose running sum reaches bound (acc[i] >= bound; strict: acc[i] > bound),
// n when none, by halving the range (the sums never decrease).
static inline SK_HOST_DEVICE int sk_draw_first(const double *acc, int n, double bound, int strict) {
    int lo = 0, hi = n;
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (strict ? acc[mid] > bound : acc[mid] >= bound) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

// sk_draw_index from the running sums (sk_draw_sums; k >= 1): the same index, bit for bit. The
// nucleus ends at the first sum that reaches top_p of the total, and the pick is the first sum
// past u times the nucleus's mass, so only the sums run one after another and both searches
// take log2(k) steps (the sampling kernel: one thread adds, the searches are short).
static inline SK_HOST_DEVICE int sk_draw_index_sums(const double *acc, int k, float top_p, float u) {
    double total = acc[k - 1];
    if (!(total > 0.0)) return -1;
    int n = k;
    if (top_p > 0.0f && top_p < 1.0f) {
        n = sk_draw_first(acc, k, (double)top_p * total, 0) + 1;
        if (n > k) n = k;
        total = acc[n - 1];
    }
    const int i = sk_draw_first(acc, n, (double)u * total, 1);
    return i < n ? i : n - 1;
}

#endif
