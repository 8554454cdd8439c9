// safetensors.h: what the model file's side (safetensors.c) offers the rest of the checkpoint
// code beyond model_file.h: the format names, the checksum the state file is tied to, the
// file-name rule both files follow, and the in-memory loader for the fuzzer and the tests.
// The state file and the two-file protocol (checkpoint.c) stand above it.
// defines: SK_MODEL_FORMAT, SK_MODEL_FORMAT_V1, sk_model_load_mem, sk_model_checksum, sk_valid_basename
#ifndef SHAKESPEARE_SAFETENSORS_H
#define SHAKESPEARE_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shakespeare/model_file.h"

// The format this build writes (checksum over the content, see model_file.h) and the one
// before it (checksum over the data section as stored), which it still reads.
#define SK_MODEL_FORMAT "shakespeare-lstm-2"
#define SK_MODEL_FORMAT_V1 "shakespeare-lstm-1"

// The loader over an in-memory image of a model file; path only names it in messages.
sk_status sk_model_load_mem(const char *path, const void *data, size_t n, sk_model_file *out, sk_error *err);

// The checksum sk_model_save would write for these arguments (validated the same way).
sk_status sk_model_checksum(const sk_model_config *cfg, const sk_vocab *vocab, const float *params,
                            const char *train_config, const char *state_file, uint32_t *out, sk_error *err);

// A plain file name: not empty, no '/', no NUL among its n bytes, not "." or "..".
bool sk_valid_basename(const char *s, size_t n);

#endif
