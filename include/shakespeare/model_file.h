// model_file.h: the model as one safetensors file: the format read and written by safetensors.c,
// the loaded file's own operations by model_file.c. The training state beside it and the
// checkpoint protocol over both stand above it, in checkpoint.h.
// defines: sk_model_file, sk_model_file_free, SK_NO_CHECKSUM_NOTE, sk_model_file_check_finite,
//          sk_model_save, sk_model_load
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
#ifndef SHAKESPEARE_MODEL_FILE_H
#define SHAKESPEARE_MODEL_FILE_H

#include <stdint.h>

#include "shakespeare/model.h"
#include "shakespeare/status.h"
#include "shakespeare/vocab.h"

typedef struct {
    sk_model_config cfg;
    sk_param_layout layout; // of cfg, owned: built once by the loader where cfg is checked; read it, never rebuild it
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

#endif
