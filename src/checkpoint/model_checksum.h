// model_checksum.h: the model file's checksum, by format version (model_file.h has the rules),
// over its metadata entries and its tensors. The lowest piece of the checkpoint code: the model
// file (safetensors.c) computes and checks it, and nothing here knows a file.
// defines: sk_meta_entry, sk_meta_cmp, sk_checksum_v1_meta, sk_checksum_v2
#ifndef SHAKESPEARE_MODEL_CHECKSUM_H
#define SHAKESPEARE_MODEL_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#include "shakespeare/model.h"

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
// tensors of lay in params (model_file.h has the canonical form). Sorts e in place.
uint32_t sk_checksum_v2(sk_meta_entry *e, size_t n, const sk_param_layout *lay, const float *params);

#endif
