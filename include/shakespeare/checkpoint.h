// checkpoint.h: the model as one safetensors file, the training state as a companion file.
// defines: sk_model_save, sk_model_load, sk_state_save, sk_state_load, sk_state_load_mem, sk_checkpoint_save,
//          sk_checkpoint_load, sk_checkpoint_remove, sk_model_file, sk_model_file_free, SK_NO_CHECKSUM_NOTE,
//          sk_model_file_check_finite,
//          sk_train_state, sk_train_state_alloc, sk_train_state_free, sk_train_config_value
//          (and crc32.h's sk_crc32)
//
// Model file (<name>.safetensors): standard safetensors (u64 LE header length, JSON header,
// raw little-endian F32 data), tensor names and shapes exactly PyTorch's (model.h), so
//   model.load_state_dict(safetensors.torch.load_file(path))
// works on the module the README documents. Metadata (all strings):
//   format        "shakespeare-lstm-2" (this build writes it; it reads "shakespeare-lstm-1" too)
//   vocab_size, embed_size, hidden_size, num_layers   required
//   dropout       optional for files from other writers (0 when absent)
//   weight_drop   optional: written when above 0 (0 when absent)
//   cell          optional: the recurrent cell (cell.h), "gru" or "rnn"; written when not "lstm"
//                 (absent: "lstm", as in every file before the cells)
//   vocab         required: JSON array of the vocabulary's code points, e.g. "[10,32,33]"
//   vocab_mode    optional "bytes": the vocabulary holds byte values (absent or "utf8": code points)
//   start_context optional "\n": the texts begin after a newline, which sampling and scoring feed
//                 first (absent: a zero state, files written before it); vocab.h's start_newline
//   train_config  optional JSON text of the training options (informational)
//   state_file    optional basename of the companion training-state file
//   checksum      "crc32:%08x", CRC-32 of the file's content in a canonical form, so that any
//                 writer that keeps the content (the safetensors library, PyTorch) keeps it:
//                   u64 m; m times: u64 len, key, u64 len, value   metadata except "checksum",
//                                                                  keys in byte order
//                   u64 t; t times: u64 len, name, u64 len, dtype ("F32"), u64 ndim,
//                                   ndim x u64 dim, u64 nbytes, the tensor's LE bytes
//                                                                  tensors in name byte order
//                 (all u64 little-endian). Format "shakespeare-lstm-1" files carry the old
//                 checksum: "key=value\n" for the sorted metadata, then the data section as
//                 stored, and are verified that way.
// A file written by another program may leave out both "format" and "checksum": it loads with
// has_checksum = 0 (the caller says so, SK_NO_CHECKSUM_NOTE) and its state_file is ignored, since
// nothing ties a state to unverified weights. A file that has "format" must have its checksum.
// A truncated, corrupt or foreign file, missing metadata, a missing, extra or misshapen tensor
// is refused with SK_ERR_FORMAT naming the path and what is wrong.
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
#include "shakespeare/optim.h"
#include "shakespeare/rng.h"
#include "shakespeare/status.h"
#include "shakespeare/vocab.h"

typedef struct {
    sk_model_config cfg;
    sk_vocab vocab;      // owned
    float *params;       // (total,) owned, canonical layout
    char *train_config;  // owned, may be NULL
    char *state_file;    // owned basename, may be NULL
    uint32_t checksum;   // the file's checksum (0 when it has none)
    int has_checksum;    // 0: another program's file without a checksum; its content is unverified
} sk_model_file;

// What the programs say, after the file's path, about a model file with has_checksum == 0.
#define SK_NO_CHECKSUM_NOTE "carries no checksum (written by another program): its content cannot be verified"

void sk_model_file_free(sk_model_file *f);

// SK_ERR_FORMAT naming the first NaN or infinite parameter (tensor, index, value) of f, read
// from path; SK_OK when every parameter is finite. The storage layer keeps such values bit for
// bit (a file is what was written); the programs refuse to sample, score or train with them.
sk_status sk_model_file_check_finite(const sk_model_file *f, const char *path, sk_error *err);

sk_status sk_model_save(const char *path, const sk_model_config *cfg, const sk_vocab *vocab,
                        const float *params, const char *train_config, const char *state_file,
                        uint32_t *checksum_out, sk_error *err);
sk_status sk_model_load(const char *path, sk_model_file *out, sk_error *err);

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

#endif
