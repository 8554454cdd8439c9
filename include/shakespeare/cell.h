// cell.h: the recurrent cells, one descriptor each: what the parameter layout, both backends,
// the carried state, the state file, the sampler and scripts/shakespeare_torch.py ask about a
// cell. The arithmetic of each cell is its host/device math header (lstm_cell.h, gru_cell.h,
// rnn_cell.h); a new cell is its math header plus one row of the table in src/model/cell.c (and
// the backends' rows that call its math).
// defines: sk_cell_kind, SK_CELL_COUNT, SK_MAX_CELL_STATES, sk_cell, sk_cell_get, sk_cell_by_name,
//          sk_cell_names
//
// With G = gates and H the hidden width, layer k of every cell has PyTorch's four tensors
//   <prefix>.weight_ih_l{k} (G*H, in_k), <prefix>.weight_hh_l{k} (G*H, H),
//   <prefix>.bias_ih_l{k} (G*H), <prefix>.bias_hh_l{k} (G*H),
// the G gate blocks of H rows each in PyTorch's (and cuDNN's) order, and carries n_states
// tensors of (L, B, H) from one window to the next, h first (h is what the layer outputs).
#ifndef SHAKESPEARE_CELL_H
#define SHAKESPEARE_CELL_H

typedef enum {
    SK_CELL_LSTM = 0, // the default: a model config without a cell is an LSTM's
    SK_CELL_GRU = 1,
    SK_CELL_RNN = 2,
} sk_cell_kind;

#define SK_CELL_COUNT 3
#define SK_MAX_CELL_STATES 2

typedef struct {
    sk_cell_kind kind;
    const char *name;         // "lstm": --cell's value and the model file's "cell" metadata
    const char *equations;    // one line for --help and docs
    int gates;                // G: gate blocks of H rows in W_ih, W_hh, b_ih, b_hh
    const char *gate_names;   // the blocks in order, e.g. "i, f, g, o"
    int n_states;             // tensors carried per layer, h first
    const char *state_names[SK_MAX_CELL_STATES]; // "h", "c"
    // 1: the recurrent product W_hh h + b_hh stays apart from the input's W_ih x + b_ih (the GRU's
    // candidate reads r * (W_hn h + b_hn)), and b_hh gets its own gradient; 0: both products and
    // both biases are summed into one pre-activation per gate (b_hh's gradient is b_ih's).
    int split_hh;
    int forget_gate;          // the block --forget-bias adds to; -1: the cell has no forget gate
    const char *torch_module; // torch.nn's class: "LSTM", "GRU", "RNN"
    const char *torch_prefix; // the module's name in the state_dict: "lstm" (lstm.weight_ih_l0)
    // cudnnRNNMode_t's value (CUDNN_RNN_TANH 1, CUDNN_LSTM 2, CUDNN_GRU 3): cuDNN's linear ids
    // are gate j of W_ih at j and of W_hh at gates + j, in the same gate order.
    int cudnn_mode;
} sk_cell;

// The descriptor of kind (NULL outside the enum).
const sk_cell *sk_cell_get(sk_cell_kind kind);
// The descriptor named name ("lstm", "gru", "rnn"), or NULL.
const sk_cell *sk_cell_by_name(const char *name);
// "lstm|gru|rnn": every name, in table order.
const char *sk_cell_names(void);

#endif
