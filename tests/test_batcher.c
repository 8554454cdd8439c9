// test_batcher.c: the B-streams x T-steps window protocol over a split.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shakespeare/batcher.h"
#include "test_util.h"

// ids[i] = i, so every token names its own position.
static int32_t *iota(size_t n) {
    int32_t *ids = malloc(n * sizeof *ids);
    for (size_t i = 0; i < n; i++) ids[i] = (int32_t)i;
    return ids;
}

// n = 103, B = 4, T = 5: S = 102 / 4 = 25 positions per stream, 5 full windows, no tail;
// n = 110, B = 4, T = 5: S = 109 / 4 = 27, 5 full windows plus a tail of 2.
static void test_geometry(void) {
    sk_error err = {{0}};
    int32_t *ids = iota(110);
    sk_batcher b;
    CHECK_OK(sk_batcher_init(&b, ids, 103, 4, 5, "training split", &err));
    CHECK(b.S == 25 && b.B == 4 && b.T == 5 && b.n == 103 && b.ids.data == ids);
    CHECK(sk_batcher_windows(&b, 0) == 5);
    CHECK(sk_batcher_windows(&b, 1) == 5);

    CHECK_OK(sk_batcher_init(&b, ids, 110, 4, 5, "training split", &err));
    CHECK(b.S == 27);
    CHECK(sk_batcher_windows(&b, 0) == 5);
    CHECK(sk_batcher_windows(&b, 1) == 6);

    int32_t x[4 * 5], y[4 * 5];
    // The ragged tail: positions 25, 26 of each stream, packed (B, 2).
    memset(x, -1, sizeof x);
    memset(y, -1, sizeof y);
    CHECK(sk_batcher_window(&b, 5, x, y) == 2);
    for (int s = 0; s < 4; s++) {
        for (int t = 0; t < 2; t++) {
            CHECK(x[s * 2 + t] == s * 27 + 25 + t);
            CHECK(y[s * 2 + t] == s * 27 + 25 + t + 1);
        }
    }
    CHECK(x[8] == -1 && y[8] == -1); // nothing written past (B, len)
    // Out of range.
    CHECK(sk_batcher_window(&b, 6, x, y) == 0);
    CHECK(sk_batcher_window(&b, (size_t)-1, x, y) == 0);
    free(ids);
}

// Every window: each stream is the contiguous slice ids[s*S ...], targets are inputs shifted
// by one, and a stream's last target is its first input of the next window.
static void test_streams(size_t n, int B, int T) {
    sk_error err = {{0}};
    int32_t *ids = iota(n);
    sk_batcher b;
    CHECK_OK(sk_batcher_init(&b, ids, n, B, T, "split", &err));
    size_t S = (n - 1) / (size_t)B;
    CHECK(b.S == S);
    size_t full = S / (size_t)T, all = (S + (size_t)T - 1) / (size_t)T;
    CHECK(sk_batcher_windows(&b, 0) == full);
    CHECK(sk_batcher_windows(&b, 1) == all);

    size_t cells = (size_t)B * (size_t)T;
    int32_t *x = malloc(cells * sizeof *x), *y = malloc(cells * sizeof *y);
    int32_t *prev_y = malloc(cells * sizeof *y);
    unsigned char *visited = calloc(n, 1);
    int prev_len = 0, bad = 0;
    for (size_t w = 0; w < all; w++) {
        int len = sk_batcher_window(&b, w, x, y);
        int want_len = w + 1 < all || S % (size_t)T == 0 ? T : (int)(S % (size_t)T);
        if (len != want_len) {
            fprintf(stderr, "  window %zu: len %d, expected %d\n", w, len, want_len);
            bad++;
            break;
        }
        for (int s = 0; s < B; s++) {
            const int32_t *xs = x + (size_t)s * (size_t)len, *ys = y + (size_t)s * (size_t)len;
            for (int t = 0; t < len; t++) {
                size_t pos = (size_t)s * S + w * (size_t)T + (size_t)t; // position in the split
                if (xs[t] != (int32_t)pos || ys[t] != (int32_t)(pos + 1)) bad++;
                if (t + 1 < len && ys[t] != xs[t + 1]) bad++; // targets are the next inputs
                if (pos < n) visited[pos]++;
            }
            // Continuity across windows: the last target of window w-1 is this window's first input.
            if (w > 0 && prev_y[(size_t)s * (size_t)prev_len + (size_t)prev_len - 1] != xs[0]) bad++;
        }
        memcpy(prev_y, y, (size_t)B * (size_t)len * sizeof *y);
        prev_len = len;
    }
    // The full walk with the tail visits every input position of [0, B*S) exactly once.
    for (size_t i = 0; i < n; i++) {
        if (visited[i] != (i < (size_t)B * S ? 1 : 0)) bad++;
    }
    if (bad) {
        fprintf(stderr, "  streams(n=%zu, B=%d, T=%d): %d mismatches\n", n, B, T, bad);
        sk_test_failures++;
    }
    free(visited);
    free(prev_y);
    free(y);
    free(x);
    free(ids);
}

// Real-looking token ids (not the identity): checks the copy, not the arithmetic.
static void test_values(void) {
    sk_error err = {{0}};
    const int32_t ids[] = {7, 3, 9, 1, 4, 4, 0, 2, 8, 6, 5};
    // n = 11, B = 2, T = 2: S = 5; stream 0 = 7 3 9 1 4 | 4, stream 1 = 4 0 2 8 6 | 5.
    sk_batcher b;
    CHECK_OK(sk_batcher_init(&b, ids, 11, 2, 2, "split", &err));
    int32_t x[4], y[4];
    CHECK(sk_batcher_window(&b, 0, x, y) == 2);
    CHECK(x[0] == 7 && x[1] == 3 && x[2] == 4 && x[3] == 0);
    CHECK(y[0] == 3 && y[1] == 9 && y[2] == 0 && y[3] == 2);
    CHECK(sk_batcher_window(&b, 1, x, y) == 2);
    CHECK(x[0] == 9 && x[1] == 1 && x[2] == 2 && x[3] == 8);
    CHECK(y[0] == 1 && y[1] == 4 && y[2] == 8 && y[3] == 6);
    CHECK(sk_batcher_window(&b, 2, x, y) == 1);
    CHECK(x[0] == 4 && x[1] == 6 && y[0] == 4 && y[1] == 5);
}

// Ids read through a map (a data file's ids as a model's): the same windows, each id mapped.
static void test_mapped(void) {
    sk_error err = {{0}};
    const uint8_t ids[] = {0, 2, 1, 1, 2, 0, 2};
    const int32_t map[] = {4, 7, 9}; // the data's ids 0, 1, 2 are the model's 4, 7, 9
    const sk_tokens t = {ids, 1, 7, map};
    sk_batcher b;
    CHECK_OK(sk_batcher_init_tokens(&b, &t, 2, 3, "split", &err)); // S = 3: streams 0 2 1 | 1, 1 2 0 | 2
    int32_t x[6], y[6];
    CHECK(sk_batcher_window(&b, 0, x, y) == 3);
    const int32_t want_x[] = {4, 9, 7, 7, 9, 4}, want_y[] = {9, 7, 7, 9, 4, 9};
    CHECK(memcmp(x, want_x, sizeof x) == 0 && memcmp(y, want_y, sizeof y) == 0);
}

static void test_too_short(void) {
    sk_error err = {{0}};
    int32_t *ids = iota(3201);
    sk_batcher b;
    CHECK(sk_batcher_init(&b, ids, 57, 32, 100, "validation split", &err) == SK_ERR_ARG);
    CHECK(strcmp(err.msg, "validation split has 57 characters, too short for one batch of 32 streams x 100 steps "
                          "(needs at least 3201)") == 0);
    // The boundary: B*T characters are one too few, B*T + 1 is enough for exactly one window.
    CHECK(sk_batcher_init(&b, ids, 3200, 32, 100, "validation split", &err) == SK_ERR_ARG);
    CHECK_OK(sk_batcher_init(&b, ids, 3201, 32, 100, "validation split", &err));
    CHECK(b.S == 100 && sk_batcher_windows(&b, 0) == 1 && sk_batcher_windows(&b, 1) == 1);
    CHECK(sk_batcher_init(&b, ids, 0, 1, 1, "test split", &err) == SK_ERR_ARG);
    CHECK(strstr(err.msg, "test split has 0 characters") != NULL);
    CHECK(sk_batcher_init(&b, ids, 1, 1, 1, "test split", &err) == SK_ERR_ARG);
    CHECK_OK(sk_batcher_init(&b, ids, 2, 1, 1, "test split", &err));
    CHECK(sk_batcher_init(&b, ids, 100, 0, 5, "split", &err) == SK_ERR_ARG);
    CHECK(sk_batcher_init(&b, ids, 100, 5, -1, "split", &err) == SK_ERR_ARG);
    free(ids);
}

int main(void) {
    test_geometry();
    test_values();
    test_streams(103, 4, 5);   // no tail
    test_streams(110, 4, 5);   // tail of 2, 1 position unused
    test_streams(1000, 7, 13); // S = 142 = 10*13 + 12: tail of 12, 5 positions unused
    test_streams(65, 64, 1);   // S = 1: one window of one step
    test_streams(2, 1, 1);
    test_streams(5000, 1, 4999); // a single stream over the whole split
    test_too_short();
    test_mapped();
    return sk_test_done("test_batcher");
}
