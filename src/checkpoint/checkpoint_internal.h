// checkpoint_internal.h: pieces shared by safetensors.c (model file) and checkpoint.c (state
// file, two-file protocol), and in-memory loaders for the fuzzer and the tests.
// The binary I/O they share (reader, little-endian values, atomic writes) is binio.h.
// defines: sk_model_load_mem, sk_state_load_mem, sk_model_checksum, sk_valid_basename,
//          SK_MODEL_FORMAT, SK_MODEL_FORMAT_V1, sk_meta_entry, sk_meta_cmp, sk_checksum_v1_meta,
//          sk_checksum_v2 (model_checksum.c)
#ifndef SHAKESPEARE_CHECKPOINT_INTERNAL_H
#define SHAKESPEARE_CHECKPOINT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "io/binio.h"
#include "shakespeare/checkpoint.h"

// The format this build writes (checksum over the content, see checkpoint.h) and the one
// before it (checksum over the data section as stored), which it still reads.
#define SK_MODEL_FORMAT "shakespeare-lstm-2"
#define SK_MODEL_FORMAT_V1 "shakespeare-lstm-1"

// Loaders over an in-memory image of a file; path only names it in messages.
sk_status sk_model_load_mem(const char *path, const void *data, size_t n, sk_model_file *out, sk_error *err);
sk_status sk_state_load_mem(const char *path, const void *data, size_t n, sk_train_state *out,
                            uint32_t expect_checksum, sk_error *err);

// The checksum sk_model_save would write for these arguments (validated the same way).
sk_status sk_model_checksum(const sk_model_config *cfg, const sk_vocab *vocab, const float *params,
                            const char *train_config, const char *state_file, uint32_t *out, sk_error *err);

// One metadata entry of a model file: key and value bytes, NUL-terminated (they may also hold
// NULs, hence the lengths). Owned by whoever filled it.
typedef struct {
    char *key, *val;
    size_t klen, vlen;
} sk_meta_entry;

// qsort comparator: keys in byte order.
int sk_meta_cmp(const void *a, const void *b);
// Format 1's checksum of the metadata (every entry but "checksum"); the data section as stored
// continues it. Sorts e in place.
uint32_t sk_checksum_v1_meta(sk_meta_entry *e, size_t n);
// Format 2's checksum of the whole content: the metadata e[0..n) (but "checksum") and the
// tensors of lay in params (checkpoint.h has the canonical form). Sorts e in place.
uint32_t sk_checksum_v2(sk_meta_entry *e, size_t n, const sk_param_layout *lay, const float *params);

// A plain file name: not empty, no '/', no NUL among its n bytes, not "." or "..".
bool sk_valid_basename(const char *s, size_t n);

#endif
