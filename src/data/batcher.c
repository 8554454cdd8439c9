// batcher.c: B contiguous streams over a split, walked in windows of T positions.
#include "shakespeare/batcher.h"

#include <string.h>

sk_tokens sk_tokens_of(const int32_t *ids, size_t n) {
    return (sk_tokens){.data = ids, .width = 4, .n = n, .map = NULL};
}

void sk_tokens_read(const sk_tokens *t, size_t start, size_t len, int32_t *out) {
    if (t->width == 4) {
        memcpy(out, (const int32_t *)t->data + start, len * sizeof *out);
    } else if (t->width == 2) {
        const uint16_t *p = (const uint16_t *)t->data + start;
        for (size_t i = 0; i < len; i++) out[i] = p[i];
    } else {
        const uint8_t *p = (const uint8_t *)t->data + start;
        for (size_t i = 0; i < len; i++) out[i] = p[i];
    }
    if (t->map)
        for (size_t i = 0; i < len; i++) out[i] = t->map[out[i]];
}

sk_status sk_batcher_init_tokens(sk_batcher *b, const sk_tokens *ids, int B, int T, const char *what,
                                 sk_error *err) {
    if (!what) what = "split";
    if (!b) return sk_fail(err, SK_ERR_ARG, "%s: sk_batcher_init: NULL batcher", what);
    memset(b, 0, sizeof *b);
    if (B <= 0) return sk_fail(err, SK_ERR_ARG, "%s: the number of streams must be positive, got %d", what, B);
    if (T <= 0) return sk_fail(err, SK_ERR_ARG, "%s: the window length must be positive, got %d", what, T);
    size_t n = ids ? ids->n : 0;
    if (n > 0 && !ids->data) return sk_fail(err, SK_ERR_ARG, "%s: sk_batcher_init: NULL token ids", what);
    if (n > 0 && ids->width != 1 && ids->width != 2 && ids->width != 4)
        return sk_fail(err, SK_ERR_ARG, "%s: token ids %d bytes wide", what, ids->width);

    size_t S = n > 0 ? (n - 1) / (size_t)B : 0;
    if (S < (size_t)T) {
        // B*T + 1 in size_t: B and T are ints, so the product fits in 64 bits.
        size_t need = (size_t)B * (size_t)T + 1;
        return sk_fail(err, SK_ERR_ARG,
                       "%s has %zu characters, too short for one batch of %d streams x %d steps (needs at least %zu)",
                       what, n, B, T, need);
    }
    b->ids = *ids;
    b->n = n;
    b->B = B;
    b->T = T;
    b->S = S;
    b->P = S;
    return SK_OK;
}

sk_status sk_batcher_init(sk_batcher *b, const int32_t *ids, size_t n, int B, int T, const char *what,
                          sk_error *err) {
    sk_tokens t = sk_tokens_of(ids, n);
    return sk_batcher_init_tokens(b, &t, B, T, what, err);
}

void sk_batcher_limit(sk_batcher *b, size_t P) { b->P = P == 0 || P > b->S ? b->S : P; }

size_t sk_batcher_windows(const sk_batcher *b, int include_tail) {
    if (!b || b->T <= 0) return 0;
    size_t T = (size_t)b->T;
    return include_tail ? (b->P + T - 1) / T : b->P / T;
}

int sk_batcher_window(const sk_batcher *b, size_t w, int32_t *x, int32_t *y) {
    if (!b || !b->ids.data || w >= sk_batcher_windows(b, 1)) return 0;
    size_t start = w * (size_t)b->T;
    size_t len = b->P - start;
    if (len > (size_t)b->T) len = (size_t)b->T;
    for (int s = 0; s < b->B; s++) {
        size_t at = (size_t)s * b->S + start; // stream s, position start
        if (x) sk_tokens_read(&b->ids, at, len, x + (size_t)s * len);
        if (y) sk_tokens_read(&b->ids, at + 1, len, y + (size_t)s * len);
    }
    return (int)len;
}
