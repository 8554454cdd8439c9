// batcher.c: B contiguous streams over a split, walked in windows of T positions.
#include "shakespeare/batcher.h"

#include <string.h>

sk_status sk_batcher_init(sk_batcher *b, const int32_t *ids, size_t n, int B, int T, const char *what,
                          sk_error *err) {
    if (!what) what = "split";
    if (!b) return sk_fail(err, SK_ERR_ARG, "%s: sk_batcher_init: NULL batcher", what);
    memset(b, 0, sizeof *b);
    if (B <= 0) return sk_fail(err, SK_ERR_ARG, "%s: the number of streams must be positive, got %d", what, B);
    if (T <= 0) return sk_fail(err, SK_ERR_ARG, "%s: the window length must be positive, got %d", what, T);
    if (n > 0 && !ids) return sk_fail(err, SK_ERR_ARG, "%s: sk_batcher_init: NULL token ids", what);

    size_t S = n > 0 ? (n - 1) / (size_t)B : 0;
    if (S < (size_t)T) {
        // B*T + 1 in size_t: B and T are ints, so the product fits in 64 bits.
        size_t need = (size_t)B * (size_t)T + 1;
        return sk_fail(err, SK_ERR_ARG,
                       "%s has %zu characters, too short for one batch of %d streams x %d steps (needs at least %zu)",
                       what, n, B, T, need);
    }
    b->ids = ids;
    b->n = n;
    b->B = B;
    b->T = T;
    b->S = S;
    return SK_OK;
}

size_t sk_batcher_windows(const sk_batcher *b, int include_tail) {
    if (!b || b->T <= 0) return 0;
    size_t T = (size_t)b->T;
    return include_tail ? (b->S + T - 1) / T : b->S / T;
}

int sk_batcher_window(const sk_batcher *b, size_t w, int32_t *x, int32_t *y) {
    if (!b || !b->ids || w >= sk_batcher_windows(b, 1)) return 0;
    size_t start = w * (size_t)b->T;
    size_t len = b->S - start;
    if (len > (size_t)b->T) len = (size_t)b->T;
    for (int s = 0; s < b->B; s++) {
        const int32_t *src = b->ids + (size_t)s * b->S + start; // stream s, position start
        if (x) memcpy(x + (size_t)s * len, src, len * sizeof *x);
        if (y) memcpy(y + (size_t)s * len, src + 1, len * sizeof *y);
    }
    return (int)len;
}
