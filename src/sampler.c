// sampler.c: temperature / top-k / argmax sampling, generation and scoring.
#include "shakespeare/sampler.h"

#include <math.h>
#include <stdlib.h>

int32_t sk_sample_token(const float *logits, int V, const sk_sample_opts *o, sk_rng *rng, float *p,
                        int32_t *idx) {
    int best = 0;
    for (int v = 1; v < V; v++)
        if (logits[v] > logits[best]) best = v;
    if (o->argmax) return best;
    // The k largest logits: partial selection sort over an index list (V is small).
    int k = (o->top_k > 0 && o->top_k < V) ? o->top_k : V;
    for (int v = 0; v < V; v++) idx[v] = v;
    if (k < V) {
        for (int i = 0; i < k; i++) {
            int m = i;
            for (int j = i + 1; j < V; j++)
                if (logits[idx[j]] > logits[idx[m]]) m = j;
            int32_t t = idx[i];
            idx[i] = idx[m];
            idx[m] = t;
        }
    }
    double total = 0.0;
    for (int i = 0; i < k; i++) {
        p[i] = (float)exp((double)(logits[idx[i]] - logits[best]) / (double)o->temperature);
        total += p[i];
    }
    double u = (double)sk_rng_uniform(rng) * total, acc = 0.0;
    for (int i = 0; i < k; i++) {
        acc += p[i];
        if (u < acc) return idx[i];
    }
    return idx[k - 1]; // u rounds up to total
}

sk_status sk_generate(sk_backend *b, const int32_t *prime, size_t n_prime, size_t length, const sk_sample_opts *o,
                      sk_rng *rng, sk_emit_fn emit, void *ctx, sk_error *err) {
    if (b->cfg.batch_size != 1) return sk_fail(err, SK_ERR_ARG, "generation needs a batch-1 backend");
    if (n_prime < 1) return sk_fail(err, SK_ERR_ARG, "the prime text is empty");
    const int V = b->layout.cfg.vocab_size, T = b->cfg.seq_len;
    float *logits = malloc(sizeof(float) * (size_t)V * T), *p = malloc(sizeof(float) * V);
    int32_t *idx = malloc(sizeof(int32_t) * V);
    sk_status st = SK_OK;
    if (!logits || !p || !idx) {
        st = sk_fail(err, SK_ERR_NOMEM, "out of memory while sampling");
        goto done;
    }
    if ((st = b->ops->set_state(b, NULL, NULL)) != SK_OK) goto failed;
    // Prime in windows of up to T; the logits after the last prime character seed sampling.
    int last_len = 0;
    for (size_t at = 0; at < n_prime; at += (size_t)last_len) {
        last_len = n_prime - at < (size_t)T ? (int)(n_prime - at) : T;
        if ((st = b->ops->forward(b, prime + at, NULL, last_len, SK_MODE_EVAL, 0, NULL)) != SK_OK) goto failed;
    }
    if ((st = b->ops->get_logits(b, logits)) != SK_OK) goto failed;
    const float *next = logits + (size_t)(last_len - 1) * V;
    for (size_t i = 0; i < length; i++) {
        int32_t id = sk_sample_token(next, V, o, rng, p, idx);
        if (emit && emit(id, ctx)) break;
        if (i + 1 == length) break;
        if ((st = b->ops->forward(b, &id, NULL, 1, SK_MODE_EVAL, 0, NULL)) != SK_OK) goto failed;
        if ((st = b->ops->get_logits(b, logits)) != SK_OK) goto failed;
        next = logits;
    }
    goto done;
failed:
    sk_backend_fail(err, st, b, "while sampling");
done:
    free(logits);
    free(p);
    free(idx);
    return st;
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
