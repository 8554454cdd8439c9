// sampler.c: temperature / top-k / top-p / argmax sampling, generation and scoring.
#include "shakespeare/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// qsort order of sk_candidate: sample_draw.h's ranking. A total order (qsort's contract, even
// for NaN logits: a library caller's non-finite weights, or finite ones large enough to
// overflow; the programs refuse non-finite weights), so the ranking does not depend on the
// sort's algorithm either.
static int by_rank(const void *a, const void *b) {
    const sk_candidate *x = a, *y = b;
    return sk_candidate_before(x->logit, x->id, y->logit, y->id)   ? -1
           : sk_candidate_before(y->logit, y->id, x->logit, x->id) ? 1
                                                                   : 0;
}

int32_t sk_sample_token(const float *logits, int V, const sk_sample_opts *o, float u, float *p, sk_candidate *c) {
    int best = 0; // the lowest id of the largest logit (its logit is NaN only if all are)
    for (int v = 1; v < V; v++)
        if (sk_candidate_before(logits[v], v, logits[best], best)) best = v;
    if (o->argmax) return best;
    const int k = (o->top_k > 0 && o->top_k < V) ? o->top_k : V;
    const int nucleus = o->top_p > 0.0f && o->top_p < 1.0f;
    for (int v = 0; v < V; v++) c[v] = (sk_candidate){logits[v], v};
    if (k < V || nucleus) qsort(c, (size_t)V, sizeof *c, by_rank); // truncation needs the ranking
    for (int i = 0; i < k; i++) p[i] = sk_draw_weight(c[i].logit, logits[best], o->temperature);
    const int i = sk_draw_index(p, k, o->top_p, u);
    return i < 0 ? best : c[i].id; // -1: nothing to draw from (every logit NaN, or infinite)
}

// backend.h's sk_backend_sample on the host, for a backend without one: a forward and a download
// of the logits per token, and the draws here.
typedef struct {
    float *logits, *p;   // (B, V), (V,)
    sk_candidate *cand;  // (V,)
    int32_t *next;       // (B,) the inputs of the next forward
} host_scratch;

static sk_status host_sample(sk_backend *b, const int32_t *x, int n, const sk_sample_opts *o, const uint64_t *keys,
                             int64_t position, int32_t *out, host_scratch *s) {
    const int V = sk_backend_layout(b)->cfg.vocab_size, B = sk_backend_cfg(b)->batch_size;
    memcpy(s->next, x, sizeof(int32_t) * (size_t)B);
    for (int i = 0; i < n; i++) {
        sk_status st = sk_backend_forward(b, s->next, NULL, 1, SK_MODE_EVAL, 0, NULL);
        if (st == SK_OK) st = sk_backend_get_logits(b, s->logits);
        if (st != SK_OK) return st;
        for (int r = 0; r < B; r++) {
            const float u = sk_sample_uniform(keys[r], (uint64_t)(position + i));
            s->next[r] = out[(size_t)r * n + i] = sk_sample_token(s->logits + (size_t)r * V, V, o, u, s->p, s->cand);
        }
    }
    return SK_OK;
}

// Tokens per sk_backend_sample call with a fused sampler: the first chunk small, so that a terminal
// sees text at once, then doubling up to kChunkMax (a call's launch and copies then cost
// little beside its tokens). The host loop draws one token per call: emitting as it goes.
enum { kChunkFirst = 16, kChunkMax = 1024 };

sk_status sk_generate_batch(sk_backend *b, const int32_t *prime, size_t n_prime, size_t length,
                            const sk_sample_opts *o, uint64_t seed, sk_emit_batch_fn emit, void *ctx, sk_error *err) {
    if (n_prime < 1) return sk_fail(err, SK_ERR_ARG, "the prime text is empty");
    const int V = sk_backend_layout(b)->cfg.vocab_size, B = sk_backend_cfg(b)->batch_size;
    const int fused = sk_backend_has_sampler(b);
    const size_t chunk_max = fused ? kChunkMax : 1;
    host_scratch hs = {.logits = malloc(sizeof(float) * (size_t)B * V), .p = malloc(sizeof(float) * V),
                       .cand = malloc(sizeof(sk_candidate) * V), .next = malloc(sizeof(int32_t) * (size_t)B)};
    uint64_t *keys = malloc(sizeof(uint64_t) * (size_t)B);
    int32_t *x = malloc(sizeof(int32_t) * (size_t)B), *out = malloc(sizeof(int32_t) * (size_t)B * chunk_max);
    sk_status st = SK_OK;
    if (!hs.logits || !hs.p || !hs.cand || !hs.next || !keys || !x || !out) {
        st = sk_fail(err, SK_ERR_NOMEM, "out of memory while sampling %d streams", B);
        goto done;
    }
    for (int s = 0; s < B; s++) keys[s] = sk_sample_key(seed + (uint64_t)s);
    if ((st = sk_backend_set_state(b, NULL)) != SK_OK) goto failed;
    // The prime but its last character one per step, as the sampled ones: every product of a
    // stream then goes through the CPU backend's step arithmetic, the same for any B
    // (matvec_cpu.h), so stream s's text is that of a batch of one. The last one is the first
    // input of the draws.
    for (size_t at = 0; at + 1 < n_prime; at++) {
        for (int s = 0; s < B; s++) x[s] = prime[at];
        if ((st = sk_backend_forward(b, x, NULL, 1, SK_MODE_EVAL, 0, NULL)) != SK_OK) goto failed;
    }
    for (int s = 0; s < B; s++) x[s] = prime[n_prime - 1];
    size_t chunk = fused ? kChunkFirst : 1;
    for (size_t at = 0; at < length; at += chunk, chunk = chunk * 2 < chunk_max ? chunk * 2 : chunk_max) {
        const int n = (int)(length - at < chunk ? length - at : chunk);
        st = fused ? sk_backend_sample(b, x, n, o, keys, (int64_t)at, out) : host_sample(b, x, n, o, keys, (int64_t)at, out, &hs);
        if (st != SK_OK) goto failed;
        int stop = 0;
        for (int i = 0; i < n && !stop; i++)
            for (int s = 0; s < B; s++)
                if (emit && emit(s, out[(size_t)s * n + i], ctx)) stop = 1;
        if (stop) break;
        for (int s = 0; s < B; s++) x[s] = out[(size_t)s * n + n - 1];
    }
    goto done;
failed:
    sk_backend_fail(err, st, b, "while sampling");
done:
    free(hs.logits), free(hs.p), free(hs.cand), free(hs.next);
    free(keys), free(x), free(out);
    return st;
}

typedef struct {
    sk_emit_fn emit;
    void *ctx;
} one_stream;

static int emit_one(int stream, int32_t id, void *ctx) {
    const one_stream *o = ctx;
    (void)stream;
    return o->emit ? o->emit(id, o->ctx) : 0;
}

sk_status sk_generate(sk_backend *b, const int32_t *prime, size_t n_prime, size_t length, const sk_sample_opts *o,
                      uint64_t seed, sk_emit_fn emit, void *ctx, sk_error *err) {
    if (sk_backend_cfg(b)->batch_size != 1) return sk_fail(err, SK_ERR_ARG, "generation needs a batch-1 backend");
    one_stream one = {.emit = emit, .ctx = ctx};
    return sk_generate_batch(b, prime, n_prime, length, o, seed, emit_one, &one, err);
}

// x[0, len) = the tokens at [at, at + len) of the text with `start` before it (start < 0: none).
static void read_started(const sk_tokens *ids, int32_t start, size_t at, size_t len, int32_t *x) {
    if (start < 0) return sk_tokens_read(ids, at, len, x);
    if (at == 0) x[0] = start, at = 1, x++, len--;
    sk_tokens_read(ids, at - 1, len, x);
}

sk_status sk_score_tokens(sk_backend *b, const sk_tokens *ids, int32_t start, sk_score_progress_fn progress,
                          void *ctx, double *nll_sum, size_t *count, sk_error *err) {
    if (sk_backend_cfg(b)->batch_size != 1) return sk_fail(err, SK_ERR_ARG, "scoring needs a batch-1 backend");
    const size_t n = ids->n + (start >= 0); // the sequence scored: start, then the text
    if (n < 2) return sk_fail(err, SK_ERR_ARG, "a text to score needs at least 2 characters, got %zu", ids->n);
    const size_t T = (size_t)sk_backend_cfg(b)->seq_len;
    int32_t *x = malloc(sizeof(int32_t) * (T + 1)); // a window's inputs; its targets are x + 1
    if (!x) return sk_fail(err, SK_ERR_NOMEM, "out of memory while scoring");
    double total = 0.0;
    sk_status st = sk_backend_set_state(b, NULL);
    for (size_t at = 0; st == SK_OK && at + 1 < n; at += T) {
        size_t len = n - 1 - at < T ? n - 1 - at : T;
        read_started(ids, start, at, len + 1, x);
        double s;
        st = sk_backend_forward(b, x, x + 1, (int)len, SK_MODE_EVAL, 0, &s);
        total += s;
        if (progress) progress(ctx, at + len, n - 1);
    }
    free(x);
    if (st != SK_OK) return sk_backend_fail(err, st, b, "while scoring");
    *nll_sum = total;
    *count = n - 1;
    return SK_OK;
}

sk_status sk_score(sk_backend *b, const int32_t *ids, size_t n, double *nll_sum, size_t *count, sk_error *err) {
    sk_tokens t = sk_tokens_of(ids, n);
    return sk_score_tokens(b, &t, -1, NULL, NULL, nll_sum, count, err);
}
