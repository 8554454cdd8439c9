// vocab.h: the character vocabulary, the sorted set of code points (or of byte values) of a text.
// defines: sk_vocab_build, sk_vocab_from_codepoints, sk_vocab_all_bytes, sk_vocab_copy, sk_vocab_index,
//          sk_vocab_encode, sk_vocab_map, sk_vocab_char_bytes, sk_vocab_equal, sk_vocab_describe_char,
//          sk_vocab_describe_list, sk_vocab_free
#ifndef SHAKESPEARE_VOCAB_H
#define SHAKESPEARE_VOCAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shakespeare/status.h"

typedef struct {
    uint32_t *chars; // (size,) code points, strictly increasing; chars[id] is token id's character
    int size;        // V
    int bytes;       // 1: the symbols are byte values 0..255 (--vocab bytes), not code points
    // 1: the model's texts begin after a newline, which sampling and scoring feed first (a stream
    // in training almost never starts from a zero state, so a text fed from one starts badly:
    // bench/results/cpu-fresh-prime-*). The model file's "start_context" metadata; 0 for files
    // written before it, which begin from a zero state as they always did.
    int start_newline;
} sk_vocab;

// The sorted set of distinct code points of cps[0..n). Error on n == 0.
sk_status sk_vocab_build(sk_vocab *v, const uint32_t *cps, size_t n, sk_error *err);

// A vocabulary from an explicit list (e.g. a checkpoint's metadata); the list must be
// strictly increasing valid scalar values, else SK_ERR_FORMAT.
sk_status sk_vocab_from_codepoints(sk_vocab *v, const uint32_t *chars, int size, sk_error *err);

// The byte vocabulary of a new --vocab bytes model: all 256 byte values, token id = byte value,
// so that the model reads, and fine-tunes on, any file (a text's own bytes would leave out the
// ones a later text brings). SK_ERR_NOMEM when out of memory.
sk_status sk_vocab_all_bytes(sk_vocab *v, sk_error *err);

// *v a copy of src (its bytes and start_newline flags too). SK_ERR_NOMEM when out of memory.
sk_status sk_vocab_copy(sk_vocab *v, const sk_vocab *src, sk_error *err);

// Token id of cp, or -1 when cp is not in the vocabulary (binary search).
int sk_vocab_index(const sk_vocab *v, uint32_t cp);

// ids[i] = index of cps[i]. A character outside the vocabulary is SK_ERR_MISMATCH with a
// message naming the character, its code point and its position (1-based, in characters):
//   "<what> has character 'Z' (U+005A) at position 17 that is not in the vocabulary"
// (a byte vocabulary: "<what> has byte 0xFF at position 17 that is not in the vocabulary")
sk_status sk_vocab_encode(const sk_vocab *v, const uint32_t *cps, size_t n, int32_t *ids,
                          const char *what, sk_error *err);

// map[i] = the id in `to` of from's symbol i, or -1 when `to` lacks it (map: from->size entries).
// Returns how many of from's symbols `to` lacks; the first max_missing of them go to missing.
int sk_vocab_map(const sk_vocab *from, const sk_vocab *to, int32_t *map, uint32_t *missing, int max_missing);

// The bytes token id stands for, in out (4 at most): its byte (a byte vocabulary) or its
// code point in UTF-8. Returns how many.
int sk_vocab_char_bytes(const sk_vocab *v, int32_t id, char out[4]);

bool sk_vocab_equal(const sk_vocab *a, const sk_vocab *b);

// Printable description of a code point for messages: "'a'", "'\n'", "U+00A0".
void sk_vocab_describe_char(uint32_t cp, char *buf, size_t bufsize);

// The first `named` of `total` symbols for a message, as sk_vocab_describe_char gives them (as
// 0xNN with bytes set), joined by ", ", then " and K more": "'X', 'Y' and 3 more".
void sk_vocab_describe_list(const uint32_t *syms, int named, int total, int bytes, char *buf, size_t bufsize);

// Safe to call twice.
void sk_vocab_free(sk_vocab *v);

#endif
