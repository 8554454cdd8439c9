// sampler.c: temperature / top-k / top-p / argmax sampling, generation and scoring.
#include "shakespeare/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// qsort order of sk_candidate: logit descending, NaN below every number, then id ascending.
// A total order (qsort's contract, even for NaN logits: a library caller's non-finite weights,
// or finite ones large enough to overflow; the programs refuse non-finite weights), so the ranking
// does not depend on the sort's algorithm either.
static int by_rank(const void *a, const void *b) {
    const sk_candidate *x = a, *y = b;
    const int x_nan = isnan(x->logit), y_nan = isnan(y->logit);
    if (x_nan != y_nan) return x_nan - y_nan;
    if (!x_nan && x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

int32_t sk_sample_token(const float *logits, int V, const sk_sample_opts *o, sk_rng *rng, float *p,
                        sk_candidate *c) {
    int best = 0; // the lowest id of the largest logit (its logit is NaN only if all are)
    for (int v = 1; v < V; v++)
        if (!isnan(logits[v]) && (isnan(logits[best]) || logits[v] > logits[best])) best = v;
    if (o->argmax) return best;
    const int k = (o->top_k > 0 && o->top_k < V) ? o->top_k : V;
    const int nucleus = o->top_p > 0.0f && o->top_p < 1.0f;
    for (int v = 0; v < V; v++) c[v] = (sk_candidate){logits[v], v};
    if (k < V || nucleus) qsort(c, (size_t)V, sizeof *c, by_rank); // truncation needs the ranking
    // Unnormalized probabilities exp((logit - max) / temperature) of the k candidates; a NaN
    // logit has none.
    double total = 0.0;
    for (int i = 0; i < k; i++) {
        p[i] = (float)exp((double)(c[i].logit - logits[best]) / (double)o->temperature);
        if (isnan(p[i])) p[i] = 0.0f;
        total += p[i];
    }
    if (!(total > 0.0)) return best; // nothing to draw from (every logit NaN, or infinite)
    int n = k;
    if (nucleus) { // the shortest ranked prefix holding top_p of the mass (at least one: p[0] = 1)
        const double need = (double)o->top_p * total;
        double mass = 0.0;
        for (n = 0; n < k && mass < need; n++) mass += p[n];
        total = mass;
    }
    double u = (double)sk_rng_uniform(rng) * total, acc = 0.0;
    for (int i = 0; i < n; i++) {
        acc += p[i];
        if (u < acc) return c[i].id;
    }
    return c[n - 1].id; // u rounds up to total
}

sk_status sk_generate_batch(sk_backend *b, const int32_t *prime, size_t n_prime, size_t length,
                            const sk_sample_opts *o, sk_rng *rngs, sk_emit_batch_fn emit, void *ctx, sk_error *err) {
    if (n_prime < 1) return sk_fail(err, SK_ERR_ARG, "the prime text is empty");
    const int V = b->layout.cfg.vocab_size, B = b->cfg.batch_size;
    // Every forward is one step of every stream: x (B,) the inputs, logits (B, V) the outputs.
    float *logits = malloc(sizeof(float) * (size_t)B * V), *p = malloc(sizeof(float) * V);
    sk_candidate *cand = malloc(sizeof(sk_candidate) * V);
    int32_t *x = malloc(sizeof(int32_t) * (size_t)B);
    sk_status st = SK_OK;
    if (!logits || !p || !cand || !x) {
        st = sk_fail(err, SK_ERR_NOMEM, "out of memory while sampling %d streams", B);
        goto done;
    }
    if ((st = b->ops->set_state(b, NULL, NULL)) != SK_OK) goto failed;
    // The prime one character per step, as the sampled ones: every product of a stream then
    // goes through the CPU backend's step arithmetic, the same for any B (matvec_cpu.h), so
    // stream s's text is that of a batch of one. The logits after the last one seed sampling.
    for (size_t at = 0; at < n_prime; at++) {
        for (int s = 0; s < B; s++) x[s] = prime[at];
        if ((st = b->ops->forward(b, x, NULL, 1, SK_MODE_EVAL, 0, NULL)) != SK_OK) goto failed;
    }
    for (size_t i = 0; i < length; i++) {
        if ((st = b->ops->get_logits(b, logits)) != SK_OK) goto failed;
        int stop = 0;
        for (int s = 0; s < B; s++) {
            x[s] = sk_sample_token(logits + (size_t)s * V, V, o, &rngs[s], p, cand);
            if (emit && emit(s, x[s], ctx)) stop = 1;
        }
        if (stop || i + 1 == length) break;
        if ((st = b->ops->forward(b, x, NULL, 1, SK_MODE_EVAL, 0, NULL)) != SK_OK) goto failed;
    }
    goto done;
failed:
    sk_backend_fail(err, st, b, "while sampling");
done:
    free(logits);
    free(p);
    free(cand);
    free(x);
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
                      sk_rng *rng, sk_emit_fn emit, void *ctx, sk_error *err) {
    if (b->cfg.batch_size != 1) return sk_fail(err, SK_ERR_ARG, "generation needs a batch-1 backend");
    one_stream one = {emit, ctx};
    return sk_generate_batch(b, prime, n_prime, length, o, rng, emit_one, &one, err);
}

sk_status sk_score_tokens(sk_backend *b, const sk_tokens *ids, const int32_t *remap, double *nll_sum, size_t *count,
                          sk_error *err) {
    if (b->cfg.batch_size != 1) return sk_fail(err, SK_ERR_ARG, "scoring needs a batch-1 backend");
    const size_t n = ids->n;
    if (n < 2) return sk_fail(err, SK_ERR_ARG, "a text to score needs at least 2 characters, got %zu", n);
    const size_t T = (size_t)b->cfg.seq_len;
    int32_t *x = malloc(sizeof(int32_t) * (T + 1)); // a window's inputs; its targets are x + 1
    if (!x) return sk_fail(err, SK_ERR_NOMEM, "out of memory while scoring");
    double total = 0.0;
    sk_status st = b->ops->set_state(b, NULL, NULL);
    for (size_t at = 0; st == SK_OK && at + 1 < n; at += T) {
        size_t len = n - 1 - at < T ? n - 1 - at : T;
        sk_tokens_read(ids, at, len + 1, x);
        if (remap)
            for (size_t i = 0; i <= len; i++) x[i] = remap[x[i]];
        double s;
        st = b->ops->forward(b, x, x + 1, (int)len, SK_MODE_EVAL, 0, &s);
        total += s;
    }
    free(x);
    if (st != SK_OK) return sk_backend_fail(err, st, b, "while scoring");
    *nll_sum = total;
    *count = n - 1;
    return SK_OK;
}

sk_status sk_score(sk_backend *b, const int32_t *ids, size_t n, double *nll_sum, size_t *count, sk_error *err) {
    sk_tokens t = sk_tokens_of(ids, n);
    return sk_score_tokens(b, &t, NULL, nll_sum, count, err);
}
