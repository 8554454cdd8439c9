// binio.h: the one binary-I/O layer of the three file formats (model, training state, token
// cache): a bounded reader over a file or a memory image, little-endian integers and floats,
// CRC-32 checksums (crc32.h) and atomic writes (fsutil.h).
// defines: sk_reader, sk_reader_open, sk_reader_close, sk_reader_read, sk_read_f32_le,
//          sk_write_f32_le, sk_put_le32, sk_put_le64, sk_get_le32, sk_get_le64, sk_sum64,
//          sk_sum64_init, sk_sum64_update, sk_sum64_final
#ifndef SHAKESPEARE_BINIO_H
#define SHAKESPEARE_BINIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fsutil.h"
#include "shakespeare/crc32.h"
#include "shakespeare/status.h"

// Sequential reader over a regular file or a memory buffer, with the total size known up front
// (so that every length in a header can be checked against it before anything is allocated).
typedef struct {
    FILE *f;            // owned (sk_reader_close); NULL when reading from memory
    const uint8_t *mem; // borrowed
    uint64_t size, pos;
} sk_reader;

// Opens a regular file; SK_ERR_IO naming path when it is missing, unreadable or not a file.
sk_status sk_reader_open(sk_reader *r, const char *path, sk_error *err);
void sk_reader_close(sk_reader *r);
// Reads the next n bytes. SK_ERR_FORMAT when fewer than n are left (truncated), SK_ERR_IO
// when the file shrank under us or a read failed.
sk_status sk_reader_read(sk_reader *r, void *dst, size_t n, const char *path, sk_error *err);
// Reads n little-endian F32 values into x as native floats, continuing *crc over the stored bytes.
sk_status sk_read_f32_le(sk_reader *r, float *x, size_t n, uint32_t *crc, const char *path, sk_error *err);

// Writes x[0..n) to af as little-endian F32, continuing *crc (when not NULL) over the written bytes.
sk_status sk_write_f32_le(sk_atomic_file *af, const float *x, size_t n, uint32_t *crc, sk_error *err);

// Little-endian integers in byte buffers.
void sk_put_le32(unsigned char *p, uint32_t v);
void sk_put_le64(unsigned char *p, uint64_t v);
uint32_t sk_get_le32(const unsigned char *p);
uint64_t sk_get_le64(const unsigned char *p);

// sk_sum64: a fast 64-bit content checksum for large data (token caches and their sources),
// where CRC-32's byte-at-a-time table costs more than the I/O: eight lanes of Fletcher-style
// sums (a += word, b += a) over 32-bit little-endian words, mixed with the length at the end.
// Any single changed, inserted, removed or swapped word changes it; not cryptographic.
typedef struct {
    uint64_t a[8], b[8];
    unsigned char tail[32]; // bytes of an unfinished 32-byte block
    size_t tail_n;
    uint64_t n; // bytes so far
} sk_sum64;

void sk_sum64_init(sk_sum64 *s);
void sk_sum64_update(sk_sum64 *s, const void *data, size_t n);
uint64_t sk_sum64_final(const sk_sum64 *s);

#endif
