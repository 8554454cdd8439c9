// batcher.h: B parallel streams over a split, read in windows of T characters.
// defines: sk_tokens, sk_tokens_of, sk_tokens_read, sk_batcher_init, sk_batcher_init_tokens,
//          sk_batcher_limit, sk_batcher_windows, sk_batcher_window
//
// A split of n tokens is cut into B streams of S = (n - 1) / B positions each; stream b
// covers inputs ids[b*S + p] and targets ids[b*S + p + 1] for p in [0, S). The last
// (n - 1) - B*S < B positions are not used. Window w holds positions [w*T, w*T + len) of
// every stream, so the LSTM state at the end of window w is the right initial state for
// window w + 1 (truncated back-propagation through time, as char-rnn does).
// Training uses the floor(S / T) full windows of an epoch; evaluation walks all
// ceil(S / T) windows, the last one (the ragged tail) possibly shorter than T.
#ifndef SHAKESPEARE_BATCHER_H
#define SHAKESPEARE_BATCHER_H

#include <stddef.h>
#include <stdint.h>

#include "shakespeare/status.h"

// Token ids stored 1, 2 or 4 bytes wide (native byte order), e.g. a memory-mapped token cache,
// read through a map where the ids are another vocabulary's (a model's that has more symbols).
typedef struct {
    const void *data;   // borrowed, (n,) ids of `width` bytes
    int width;          // 1 (uint8), 2 (uint16) or 4 (int32)
    size_t n;
    const int32_t *map; // borrowed; NULL, or an id is read as map[id]
} sk_tokens;

// A view of int32 ids.
sk_tokens sk_tokens_of(const int32_t *ids, size_t n);
// out[0..len) = ids [start, start + len) as int32, through the map (the caller keeps start + len <= n).
void sk_tokens_read(const sk_tokens *t, size_t start, size_t len, int32_t *out);

typedef struct {
    sk_tokens ids;      // borrowed: the split's tokens
    size_t n;           // tokens in the split
    int B;              // streams
    int T;              // window length
    size_t S;           // positions per stream, (n - 1) / B
    size_t P;           // positions walked per stream, <= S (S unless sk_batcher_limit)
} sk_batcher;

// Error (SK_ERR_ARG, naming what) when the split is too short for one full window:
// S < T, i.e. n < B*T + 1. what names the split in messages ("validation split").
sk_status sk_batcher_init(sk_batcher *b, const int32_t *ids, size_t n, int B, int T, const char *what,
                          sk_error *err);
// The same over ids of any width (ids->n is the split's length).
sk_status sk_batcher_init_tokens(sk_batcher *b, const sk_tokens *ids, int B, int T, const char *what,
                                 sk_error *err);
// Walks only the first min(P, S) positions of every stream (P = 0: all S). For evaluation
// on a prefix of a long split: the streams are the same, only shorter.
void sk_batcher_limit(sk_batcher *b, size_t P);

// Number of windows: full ones only (include_tail = 0) or all of them (include_tail = 1).
size_t sk_batcher_windows(const sk_batcher *b, int include_tail);

// Fills x and y, each (B, len) row-major (stream-major), with window w's inputs and
// targets; returns len (T, or less for the ragged tail; 0 when w is out of range).
int sk_batcher_window(const sk_batcher *b, size_t w, int32_t *x, int32_t *y);

#endif
