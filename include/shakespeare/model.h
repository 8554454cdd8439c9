// model.h: the model's shape and its parameters, in PyTorch's names and layout.
// defines: SK_MAX_LAYERS, sk_model_config, sk_model_config_check, sk_model_cell, sk_tensor_info,
//          sk_param_layout, sk_param_layout_init, sk_param_layout_free, sk_param_find, sk_layer_at,
//          sk_layer_offsets, sk_layer_tensors, sk_param_tensors, sk_point_params, sk_params_init,
//          sk_init_scheme_words, sk_init_scheme_name, sk_init_scheme_parse
//
// embedding (V, E) -> L recurrent layers of width H (the cell: cell.h) -> dropout -> linear
// (H -> V) -> softmax CE. All parameters live in ONE float buffer of layout->total floats;
// gradients and the optimizer's state slots use the same layout. Tensors, in PyTorch's
// state_dict order, with <p> the cell's torch_prefix and G its gates (cell.h):
//   embedding.weight            (V, E)
//   <p>.weight_ih_l{k}          (G*H, in_k)   in_0 = E, in_k = H for k > 0
//   <p>.weight_hh_l{k}          (G*H, H)
//   <p>.bias_ih_l{k}            (G*H)
//   <p>.bias_hh_l{k}            (G*H)
//   fc.weight                   (V, H)
//   fc.bias                     (V)
#ifndef SHAKESPEARE_MODEL_H
#define SHAKESPEARE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "shakespeare/cell.h"
#include "shakespeare/status.h"
#include "shakespeare/words.h"

#define SK_MAX_LAYERS 64 // L at most (sk_model_config_check)

typedef struct {
    int vocab_size;  // V
    int embed_size;  // E
    int hidden_size; // H
    int num_layers;  // L
    float dropout;   // p in [0, 1): between the recurrent layers and before fc; training only
    // DropConnect on the recurrent weights (AWD-LSTM's weight drop), in [0, 1): a training
    // step uses each layer's W_hh with elements dropped by hash.h's weight-drop mask and
    // the rest scaled by 1/(1-p); evaluation uses W_hh itself. Training only, like dropout.
    float weight_drop;
    sk_cell_kind cell; // cell.h; 0 (a config that names none) is the LSTM
} sk_model_config;

// The descriptor of cfg's cell (cfg checked by sk_model_config_check: never NULL then).
const sk_cell *sk_model_cell(const sk_model_config *cfg);

#define SK_TENSOR_NAME_MAX 32

typedef struct {
    char name[SK_TENSOR_NAME_MAX];
    int ndim;       // 1 or 2
    int shape[2];   // shape[1] unused when ndim == 1
    size_t offset;  // in floats, into the parameter buffer
    size_t numel;
} sk_tensor_info;

typedef struct {
    sk_model_config cfg;
    int n_tensors;           // 3 + 4L
    sk_tensor_info *tensors; // (n_tensors,) owned
    size_t total;            // floats in the parameter buffer
} sk_param_layout;

// Validates cfg (V >= 1, E, H, L >= 1, 0 <= dropout, weight_drop < 1, a cell of cell.h's table).
sk_status sk_model_config_check(const sk_model_config *cfg, sk_error *err);
sk_status sk_param_layout_init(sk_param_layout *layout, const sk_model_config *cfg, sk_error *err);
void sk_param_layout_free(sk_param_layout *layout);
// The tensor named name, or NULL.
const sk_tensor_info *sk_param_find(const sk_param_layout *layout, const char *name);

// Offsets of layer k's four recurrent tensors (convenience over sk_param_find).
typedef struct {
    size_t w_ih, w_hh, b_ih, b_hh; // float offsets
    int in;                        // input width of the layer
} sk_layer_offsets;
sk_layer_offsets sk_layer_at(const sk_param_layout *layout, int k);

// Named views of a buffer in the layout (llm.c's ParameterTensors): every tensor by its name,
// pointing into one buffer of layout->total floats. Parameters, gradients and optimizer slots
// share the layout, so one function points a view into any of them; the buffer may be device
// memory (nothing is read or written through the pointers here). Borrowed: the buffer owns.
typedef struct {
    float *w_ih; // (G*H, in_k)
    float *w_hh; // (G*H, H)
    float *b_ih; // (G*H)
    float *b_hh; // (G*H)
} sk_layer_tensors;

typedef struct {
    float *embedding;                   // (V, E)
    sk_layer_tensors layer[SK_MAX_LAYERS]; // the first L used
    float *fc_w;                        // (V, H)
    float *fc_b;                        // (V)
} sk_param_tensors;

// The view of buf (layout->total floats, canonical layout).
sk_param_tensors sk_point_params(const sk_param_layout *layout, float *buf);

typedef enum {
    SK_INIT_UNIFORM,  // every parameter ~ U(-a, a), a = init_scale (char-rnn: 0.08)
    SK_INIT_PYTORCH,  // PyTorch's defaults: embedding N(0,1); the cell U(+-1/sqrt(H)); fc U(+-1/sqrt(H))
} sk_init_scheme;
// The schemes' words (words.h): uniform, pytorch.
extern const sk_words sk_init_scheme_words;
const char *sk_init_scheme_name(sk_init_scheme s);
// Parses "uniform", "pytorch"; SK_ERR_ARG otherwise, *out untouched.
sk_status sk_init_scheme_parse(const char *s, sk_init_scheme *out, sk_error *err);

// Fills params (layout->total floats) deterministically from seed; then adds forget_bias
// to the forget-gate block (cell.h's forget_gate) of every bias_ih_l{k} (0 for none; a cell
// without a forget gate takes none: the trainer refuses another value).
void sk_params_init(float *params, const sk_param_layout *layout, sk_init_scheme scheme, float init_scale,
                    float forget_bias, uint64_t seed);

#endif
