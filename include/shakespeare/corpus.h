// corpus.h: a text file as token ids, and its contiguous train/val/test splits.
// defines: sk_read_file, sk_corpus_load, sk_corpus_from_text, sk_corpus_free, sk_split_sizes
#ifndef SHAKESPEARE_CORPUS_H
#define SHAKESPEARE_CORPUS_H

#include <stddef.h>
#include <stdint.h>

#include "shakespeare/status.h"
#include "shakespeare/vocab.h"

// Reads a whole regular file into a malloc'ed buffer (owned by the caller; NUL-terminated
// one byte past *n for convenience). Errors name the path: missing, unreadable,
// a directory, empty (when allow_empty is 0).
sk_status sk_read_file(const char *path, int allow_empty, uint8_t **out, size_t *n, sk_error *err);

typedef struct {
    sk_vocab vocab; // built from the whole text
    int32_t *ids;   // (n,) token ids of the whole text
    size_t n;       // length in characters (code points)
} sk_corpus;

// Reads, decodes (strict UTF-8) and tokenizes a text file.
sk_status sk_corpus_load(sk_corpus *c, const char *path, sk_error *err);
// The same from bytes in memory; what names the source in messages.
sk_status sk_corpus_from_text(sk_corpus *c, const uint8_t *bytes, size_t nbytes, const char *what,
                              sk_error *err);
void sk_corpus_free(sk_corpus *c);

// Contiguous splits by fraction: train = [0, n_train), val = [n_train, n_train + n_val),
// test = the rest. n_train = floor(n * train_frac); when train_frac + val_frac >= 1 the
// validation split takes everything after train (so test is empty), otherwise
// n_val = floor(n * val_frac). Fractions must lie in [0, 1] with a sum <= 1 (+1e-9).
sk_status sk_split_sizes(size_t n, double train_frac, double val_frac, size_t *n_train, size_t *n_val,
                         size_t *n_test, sk_error *err);

#endif
