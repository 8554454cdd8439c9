// checkpoint_internal.h: pieces shared by safetensors.c (model file) and checkpoint.c (state
// file, two-file protocol), and in-memory loaders for the fuzzer and the tests.
// The binary I/O they share (reader, little-endian values, atomic writes) is binio.h.
// defines: sk_model_load_mem, sk_state_load_mem, sk_model_checksum, sk_valid_basename,
//          SK_MODEL_FORMAT
#ifndef SHAKESPEARE_CHECKPOINT_INTERNAL_H
#define SHAKESPEARE_CHECKPOINT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "binio.h"
#include "shakespeare/checkpoint.h"

#define SK_MODEL_FORMAT "shakespeare-lstm-1"

// Loaders over an in-memory image of a file; path only names it in messages.
sk_status sk_model_load_mem(const char *path, const void *data, size_t n, sk_model_file *out, sk_error *err);
sk_status sk_state_load_mem(const char *path, const void *data, size_t n, sk_train_state *out,
                            uint32_t expect_checksum, sk_error *err);

// The checksum sk_model_save would write for these arguments (validated the same way).
sk_status sk_model_checksum(const sk_model_config *cfg, const sk_vocab *vocab, const float *params,
                            const char *train_config, const char *state_file, uint32_t *out, sk_error *err);

// A plain file name: not empty, no '/', no NUL among its n bytes, not "." or "..".
bool sk_valid_basename(const char *s, size_t n);

#endif
