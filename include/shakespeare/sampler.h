// sampler.h: text generation and scoring with a batch-1 backend.
// defines: sk_sample_opts, sk_candidate, sk_sample_token, sk_generate, sk_generate_batch, sk_score, sk_score_tokens
#ifndef SHAKESPEARE_SAMPLER_H
#define SHAKESPEARE_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "shakespeare/backend.h"
#include "shakespeare/batcher.h"
#include "shakespeare/rng.h"
#include "shakespeare/status.h"

// Sampling applies, in this order (the order of Hugging Face's generate): temperature,
// top-k, top-p; the probabilities left are renormalized and one token is drawn.
typedef struct {
    float temperature; // > 0; logits are divided by it
    int top_k;         // 0: all tokens; else only the k most likely
    int argmax;        // 1: always the most likely token (ignores temperature, top_k, top_p, rng)
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

// Draws one token id from logits (V,); scratch: (V,) floats and (V,) candidates. Without
// top-k or top-p the candidates stay in id order (no sort per token).
int32_t sk_sample_token(const float *logits, int V, const sk_sample_opts *o, sk_rng *rng, float *scratch_p,
                        sk_candidate *scratch_c);

// Called with each generated token id; return nonzero to stop early.
typedef int (*sk_emit_fn)(int32_t id, void *ctx);

// From a zero state: feeds prime[0..n_prime) (n_prime >= 1) through the model, then draws
// `length` tokens, feeding each back. b must have batch size 1.
sk_status sk_generate(sk_backend *b, const int32_t *prime, size_t n_prime, size_t length, const sk_sample_opts *o,
                      sk_rng *rng, sk_emit_fn emit, void *ctx, sk_error *err);

// Called with each generated token id of stream `stream`, the streams of a step in order;
// return nonzero to stop every stream early.
typedef int (*sk_emit_batch_fn)(int stream, int32_t id, void *ctx);

// sk_generate for B = b's batch size independent samples at once, one per stream: every
// stream continues the same prime, and stream i draws from rngs[i] (so that stream i's text
// is what sk_generate draws from rngs[i] wherever the backend computes a row of a batch as it
// computes a batch of one). One forward per step for all streams.
sk_status sk_generate_batch(sk_backend *b, const int32_t *prime, size_t n_prime, size_t length,
                            const sk_sample_opts *o, sk_rng *rngs, sk_emit_batch_fn emit, void *ctx, sk_error *err);

// Mean negative log-likelihood of ids[1..n) given everything before it, from a zero state,
// batch 1, in windows of the backend's T (the state carried across windows).
// *nll_sum gets the sum in nats and *count = n - 1. Needs n >= 2.
sk_status sk_score(sk_backend *b, const int32_t *ids, size_t n, double *nll_sum, size_t *count, sk_error *err);
// The same over ids of any width (e.g. a memory-mapped token cache), each replaced by
// remap[id] when remap is not NULL; memory O(T), whatever the length.
sk_status sk_score_tokens(sk_backend *b, const sk_tokens *ids, const int32_t *remap, double *nll_sum, size_t *count,
                          sk_error *err);

#endif
