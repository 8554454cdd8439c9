// sampler.h: text generation and scoring with a batch-1 backend.
// defines: sk_sample_token, sk_generate, sk_generate_batch, sk_score, sk_score_tokens
#ifndef SHAKESPEARE_SAMPLER_H
#define SHAKESPEARE_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "shakespeare/backend.h"
#include "shakespeare/batcher.h"
#include "shakespeare/sample_draw.h"
#include "shakespeare/status.h"

// Draws one token id from logits (V,) with the uniform u in [0, 1) (sample_draw.h: the
// draw, and the keyed uniform sk_sample_uniform); scratch: (V,) floats and (V,) candidates.
// Without top-k or top-p the candidates stay in id order (no sort per token).
int32_t sk_sample_token(const float *logits, int V, const sk_sample_opts *o, float u, float *scratch_p,
                        sk_candidate *scratch_c);

// Called with each generated token id; return nonzero to stop early.
typedef int (*sk_emit_fn)(int32_t id, void *ctx);

// From a zero state: feeds prime[0..n_prime) (n_prime >= 1) through the model, then draws
// `length` tokens, feeding each back; the draw at position i (0 for the first token after the
// prime) takes the uniform sk_sample_uniform(sk_sample_key(seed), i). b must have batch size 1.
sk_status sk_generate(sk_backend *b, const int32_t *prime, size_t n_prime, size_t length, const sk_sample_opts *o,
                      uint64_t seed, sk_emit_fn emit, void *ctx, sk_error *err);

// Called with each generated token id of stream `stream`, the streams of a step in order;
// return nonzero to stop every stream early.
typedef int (*sk_emit_batch_fn)(int stream, int32_t id, void *ctx);

// sk_generate for B = b's batch size independent samples at once, one per stream: every
// stream continues the same prime, and stream i draws with seed + i (so that stream i's text
// is what sk_generate draws with seed + i wherever the backend computes a row of a batch as
// it computes a batch of one). A backend with the fused sampler (backend.h's ops->sample)
// draws on its device, a chunk of tokens per call, emitting each chunk when it is back;
// otherwise one forward per token for all streams, and the draws on the host.
sk_status sk_generate_batch(sk_backend *b, const int32_t *prime, size_t n_prime, size_t length,
                            const sk_sample_opts *o, uint64_t seed, sk_emit_batch_fn emit, void *ctx, sk_error *err);

// Mean negative log-likelihood of ids[1..n) given everything before it, from a zero state,
// batch 1, in windows of the backend's T (the state carried across windows).
// *nll_sum gets the sum in nats and *count = n - 1. Needs n >= 2.
sk_status sk_score(sk_backend *b, const int32_t *ids, size_t n, double *nll_sum, size_t *count, sk_error *err);
// The same over ids of any width (e.g. a memory-mapped token cache, read through its map to the
// model's ids when it has one); memory O(T), whatever the length. start >= 0: a model id fed
// before the text (a start context, vocab.h's start_newline), so that ids[0] is predicted too
// and *count = n. progress (may be NULL) is called after each window with the characters
// predicted so far and in all.
typedef void (*sk_score_progress_fn)(void *ctx, size_t done, size_t total);
sk_status sk_score_tokens(sk_backend *b, const sk_tokens *ids, int32_t start, sk_score_progress_fn progress,
                          void *ctx, double *nll_sum, size_t *count, sk_error *err);

#endif
