// checkpoint_internal.h: pieces shared by safetensors.c (model file) and checkpoint.c (state
// file, two-file protocol), and in-memory loaders for the fuzzer and the tests.
// defines: sk_reader, sk_reader_open, sk_reader_close, sk_reader_read, sk_model_load_mem,
//          sk_state_load_mem, sk_model_checksum, sk_write_f32_le, sk_read_f32_le,
//          sk_valid_basename, SK_MODEL_FORMAT
#ifndef SHAKESPEARE_CHECKPOINT_INTERNAL_H
#define SHAKESPEARE_CHECKPOINT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fsutil.h"
#include "shakespeare/checkpoint.h"

#define SK_MODEL_FORMAT "shakespeare-lstm-1"

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

// Loaders over an in-memory image of a file; path only names it in messages.
sk_status sk_model_load_mem(const char *path, const void *data, size_t n, sk_model_file *out, sk_error *err);
sk_status sk_state_load_mem(const char *path, const void *data, size_t n, sk_train_state *out,
                            uint32_t expect_checksum, sk_error *err);

// The checksum sk_model_save would write for these arguments (validated the same way).
sk_status sk_model_checksum(const sk_model_config *cfg, const sk_vocab *vocab, const float *params,
                            const char *train_config, const char *state_file, uint32_t *out, sk_error *err);

// Writes x[0..n) as little-endian F32 (af may be NULL: checksum only), continuing *crc
// (when not NULL) over the written bytes.
sk_status sk_write_f32_le(sk_atomic_file *af, const float *x, size_t n, uint32_t *crc, sk_error *err);

// A plain file name: not empty, no '/', no NUL among its n bytes, not "." or "..".
bool sk_valid_basename(const char *s, size_t n);

#endif
