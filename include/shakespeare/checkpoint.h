// checkpoint.h: the training state as a companion file of the model file (model_file.h), and the
// two-file checkpoint protocol over both.
// defines: sk_state_save, sk_state_load, sk_state_load_mem, sk_checkpoint_save, sk_checkpoint_load,
//          sk_checkpoint_remove, sk_is_state_of, sk_train_state, sk_train_state_alloc, sk_train_state_free,
//          sk_train_config_value (and model_file.h's sk_model_file, sk_model_save, sk_model_load, ...;
//          crc32.h's sk_crc32)
//
// State file: little-endian binary with a magic, a version, the model file's checksum
// (so a state is never paired with the wrong model), the optimizer's name and its named state
// slots (files from before, version 1, hold Adam's m and v), the run's elapsed time and the
// model's validation loss (version 3) and a CRC-32 trailer.
//
// Every write is atomic: temporary file in the same directory, fsync, rename, fsync of
// the directory. sk_checkpoint_save writes the state first under a step-numbered name
// (<name>.<step>.state), then the model that names it, then removes older <name>.*.state
// files, so a kill at any instant leaves <name>.safetensors loadable with its state.
#ifndef SHAKESPEARE_CHECKPOINT_H
#define SHAKESPEARE_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "shakespeare/crc32.h"
#include "shakespeare/model.h"
#include "shakespeare/model_file.h"
#include "shakespeare/optim.h"
#include "shakespeare/rng.h"
#include "shakespeare/status.h"
#include "shakespeare/vocab.h"

// The value of key in a train_config (the options record, a JSON object) as text: a string
// decoded, a number as written. SK_ERR_ARG when train_config is NULL, not a JSON object or
// without key; SK_ERR_FORMAT when the value is neither a string nor a number, holds a NUL or
// does not fit in out[0..n).
sk_status sk_train_config_value(const char *train_config, const char *key, char *out, size_t n);

typedef struct {
    int64_t step;          // optimizer steps taken
    int64_t epoch;         // current epoch (0-based)
    int64_t window;        // next training window within the epoch
    double best_val_loss;  // INFINITY when none yet
    int64_t best_step;
    double elapsed_s;      // the run's wall-clock seconds up to this checkpoint, summed over its resumes
                           // (the metrics log's elapsed_s); 0 in a state of version 1 or 2
    double val_loss;       // the validation loss of this checkpoint's model, NaN when it was not evaluated
                           // at its step (and in a state of version 1 or 2)
    uint64_t seed;         // the run's seed (dropout keys derive from it and step)
    sk_rng rng;            // the trainer's generator (samples printed during training)
    int S, L, B, H;        // shape of the carried state: the cell's S state tensors (cell.h) of (L, B, H)
    int T;                 // window length the carried state ends (0: not recorded)
    sk_optim_kind optimizer; // whose state the slots are (a version 1 file's: adam)
    int n_slots;           // sk_optim_of(optimizer)->n_slots
    size_t n_params;       // floats per slot
    float *slots;          // (n_slots, n_params) the optimizer's state, slot k at slots + k * n_params, owned
    float *state;          // (S, L, B, H) carried state, owned: h, then an LSTM's c
} sk_train_state;

// Zeroed slots for optimizer, zero state; SK_ERR_ARG for bad sizes or an optimizer not in the table.
sk_status sk_train_state_alloc(sk_train_state *s, size_t n_params, sk_optim_kind optimizer, int S, int L, int B,
                               int H, sk_error *err);
void sk_train_state_free(sk_train_state *s);

sk_status sk_state_save(const char *path, const sk_train_state *s, uint32_t model_checksum, sk_error *err);
// Verifies magic, version, sizes and CRC; when expect_checksum is nonzero also that the
// state belongs to the model with that checksum (SK_ERR_MISMATCH otherwise).
sk_status sk_state_load(const char *path, sk_train_state *out, uint32_t expect_checksum, sk_error *err);
// The same over an in-memory image of a state file (the fuzzer and the tests); path only names
// it in messages.
sk_status sk_state_load_mem(const char *path, const void *data, size_t n, sk_train_state *out,
                            uint32_t expect_checksum, sk_error *err);

// <dir>/<name>.safetensors plus its state (the protocol above). state may be NULL (model only).
sk_status sk_checkpoint_save(const char *dir, const char *name, const sk_model_config *cfg,
                             const sk_vocab *vocab, const float *params, const char *train_config,
                             const sk_train_state *state, sk_error *err);
// Loads a model file and, when state is not NULL, its companion state. *has_state tells
// whether the model names one (a model without a state file is not an error); a model without
// a checksum never has one.
sk_status sk_checkpoint_load(const char *model_path, sk_model_file *model, sk_train_state *state,
                             int *has_state, sk_error *err);
// Removes <dir>/<name>.safetensors, then every state file of <name> beside it (so no model is
// left naming a missing state). A checkpoint that is not there is not an error.
sk_status sk_checkpoint_remove(const char *dir, const char *name, sk_error *err);
// Whether file is a state file of the checkpoint <name>: "<name>.<digits>.state" or
// "<name>.<digits>.<digits>.state" (the protocol above).
int sk_is_state_of(const char *file, const char *name);

#endif
