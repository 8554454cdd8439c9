// model_checksum.c: the model file's checksum, by format version (model_file.h has the rules).
// defines: sk_meta_cmp, sk_checksum_v1_meta, sk_checksum_v2
//
// Version 2 ("shakespeare-lstm-2") covers the content, not the layout: the metadata sorted by
// key and the tensors (name, dtype, shape, bytes) sorted by name, every string and every
// tensor's bytes preceded by its length, so that no two contents read as the same byte stream.
// Any writer that keeps the content keeps the checksum (scripts/shakespeare_torch.py computes
// the same with zlib.crc32).
// Version 1 ("shakespeare-lstm-1") is "key=value\n" for the sorted metadata, then the data
// section as stored; safetensors.c continues that CRC over the data while reading it.
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "io/binio.h"
#include "model_checksum.h"

int sk_meta_cmp(const void *a, const void *b) {
    const sk_meta_entry *x = a, *y = b;
    size_t n = x->klen < y->klen ? x->klen : y->klen;
    int c = memcmp(x->key, y->key, n);
    return c ? c : (x->klen > y->klen) - (x->klen < y->klen);
}

static bool is_checksum_key(const sk_meta_entry *e) { return e->klen == 8 && memcmp(e->key, "checksum", 8) == 0; }

uint32_t sk_checksum_v1_meta(sk_meta_entry *e, size_t n) {
    qsort(e, n, sizeof *e, sk_meta_cmp);
    uint32_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        if (is_checksum_key(&e[i])) continue;
        crc = sk_crc32(crc, e[i].key, e[i].klen);
        crc = sk_crc32(crc, "=", 1);
        crc = sk_crc32(crc, e[i].val, e[i].vlen);
        crc = sk_crc32(crc, "\n", 1);
    }
    return crc;
}

static uint32_t crc_u64(uint32_t crc, uint64_t v) {
    unsigned char b[8];
    sk_put_le64(b, v);
    return sk_crc32(crc, b, 8);
}

// n floats as their little-endian bytes (the stored form), hashed where they lie: on a
// little-endian host the memory is those bytes already; elsewhere one float at a time.
static uint32_t crc_f32_le(uint32_t crc, const float *x, size_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return sk_crc32(crc, x, 4 * n);
#else
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        unsigned char b[4];
        memcpy(&u, &x[i], 4);
        sk_put_le32(b, u);
        crc = sk_crc32(crc, b, 4);
    }
    return crc;
#endif
}

// u64 LE length, then the bytes.
static uint32_t crc_string(uint32_t crc, const void *s, size_t n) { return sk_crc32(crc_u64(crc, n), s, n); }

// The tensor whose name follows prev in byte order (prev NULL: the first); -1 after the last.
// Quadratic in the number of tensors, which is at most 3 + 4 * 64.
static int next_by_name(const sk_param_layout *lay, const char *prev) {
    int best = -1;
    for (int i = 0; i < lay->n_tensors; i++) {
        const char *name = lay->tensors[i].name;
        if (prev && strcmp(name, prev) <= 0) continue;
        if (best < 0 || strcmp(name, lay->tensors[best].name) < 0) best = i;
    }
    return best;
}

uint32_t sk_checksum_v2(sk_meta_entry *e, size_t n, const sk_param_layout *lay, const float *params) {
    qsort(e, n, sizeof *e, sk_meta_cmp);
    size_t counted = 0;
    for (size_t i = 0; i < n; i++) counted += !is_checksum_key(&e[i]);
    uint32_t crc = crc_u64(0, counted);
    for (size_t i = 0; i < n; i++) {
        if (is_checksum_key(&e[i])) continue;
        crc = crc_string(crc, e[i].key, e[i].klen);
        crc = crc_string(crc, e[i].val, e[i].vlen);
    }
    crc = crc_u64(crc, (uint64_t)lay->n_tensors);
    for (int i = next_by_name(lay, NULL); i >= 0; i = next_by_name(lay, lay->tensors[i].name)) {
        const sk_tensor_info *t = &lay->tensors[i];
        crc = crc_string(crc, t->name, strlen(t->name));
        crc = crc_string(crc, "F32", 3);
        crc = crc_u64(crc, (uint64_t)t->ndim);
        for (int d = 0; d < t->ndim; d++) crc = crc_u64(crc, (uint64_t)t->shape[d]);
        crc = crc_u64(crc, 4 * (uint64_t)t->numel);
        crc = crc_f32_le(crc, params + t->offset, t->numel);
    }
    return crc;
}
