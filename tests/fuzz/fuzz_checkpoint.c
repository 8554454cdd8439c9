// fuzz_checkpoint.c: libFuzzer target for the checkpoint loaders, fed from memory (no file I/O).
// Every input goes through the model-file loader, the state-file loader and the JSON parser.
// Must hold for any input: no crash, leak or undefined behaviour (ASan/UBSan), and a failure
// is an error status whose message starts with the file's name; a success is consistent.
//   CC=clang cmake -S . -B build-fuzz -DSHAKESPEARE_CUDA=OFF -DSHAKESPEARE_FUZZ=ON
//   cmake --build build-fuzz --target fuzz_checkpoint
//   build-fuzz/fuzz_checkpoint -max_total_time=30 <scratch corpus dir> tests/fuzz/corpus_checkpoint
// Seeds (corpus_checkpoint/): model files of format 1 (model.safetensors, written by
// shakespeare-train; python_written.safetensors, tensors in name order) and of format 2 from
// every writer: model_v2 (shakespeare-train), resaved_by_safetensors (the safetensors package,
// metadata kept), torch_saved_pure / torch_saved_package (shakespeare_torch.save_checkpoint
// with either writer), foreign_no_checksum (no format, no checksum); and training states of
// version 1 (model.000000007.state), 3 (state_v3.000000004.state: elapsed_s and val_loss) and 4
// (state_v4.000000004.state: the same state with N, its state tensors a layer, recorded).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/safetensors.h"
#include "shakespeare/checkpoint.h" // the state file
#include "io/json.h"

static volatile float sink; // reads that the optimizer cannot drop

static void require(int cond) {
    if (!cond) __builtin_trap();
}

static int named(const sk_error *err, const char *name) {
    size_t k = strlen(name);
    return strncmp(err->msg, name, k) == 0 && err->msg[k] == ':' && err->msg[k + 1] == ' ';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sk_error err = {{0}};

    sk_model_file f;
    sk_status st = sk_model_load_mem("fuzz.safetensors", data, size, &f, &err);
    if (st == SK_OK) {
        const sk_param_layout *lay = &f.layout; // the loader's, of f.cfg
        require(lay->n_tensors == 3 + 4 * f.cfg.num_layers && lay->cfg.hidden_size == f.cfg.hidden_size);
        require(f.params && f.vocab.size == f.cfg.vocab_size);
        require(f.has_checksum || f.checksum == 0);
        for (size_t i = 0; i < lay->total; i++) sink += f.params[i]; // the buffer has layout.total floats
    } else {
        require((st == SK_ERR_FORMAT || st == SK_ERR_NOMEM) && named(&err, "fuzz.safetensors"));
        require(f.params == NULL && f.vocab.chars == NULL && f.state_file == NULL && f.layout.tensors == NULL);
    }
    sk_model_file_free(&f);

    sk_train_state s;
    st = sk_state_load_mem("fuzz.state", data, size, &s, 0x12345678u, &err);
    if (st == SK_OK) {
        size_t n_state = (size_t)s.S * (size_t)s.L * (size_t)s.B * (size_t)s.H; // (S, L, B, H)
        require(s.slots && s.state);
        if (s.n_params) sink += s.slots[(size_t)s.n_slots * s.n_params - 1];
        if (n_state) sink += s.state[n_state - 1];
    } else {
        require((st == SK_ERR_FORMAT || st == SK_ERR_MISMATCH || st == SK_ERR_NOMEM) && named(&err, "fuzz.state"));
        require(s.slots == NULL);
    }
    sk_train_state_free(&s);

    sk_json d;
    if (sk_json_parse(&d, (const char *)data, size, size + 1, &err) == SK_OK) {
        for (size_t i = 0; i < d.n; i++) {
            require(d.nodes[i].start <= size && d.nodes[i].len <= size - d.nodes[i].start);
            if (d.nodes[i].type == SK_JSON_STRING) {
                size_t len;
                char *str = sk_json_string(&d, i, &len);
                require(str && len <= d.nodes[i].len && sk_utf8_valid_prefix(str, len) == len);
                free(str);
            }
        }
    }
    sk_json_free(&d);
    return 0;
}
