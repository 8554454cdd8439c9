// cudnn_emu_lstm.h: the arithmetic of the emulated cuDNN's RNNs, CUDNN_LSTM, CUDNN_GRU and
// CUDNN_RNN_TANH (cudnn_emu.cpp holds the API
// and its checks): the weight-space, reserve-space and workspace layouts, and the forward,
// backward-data and backward-weights passes on host-addressable (emulated device) memory.
// defines: sk_emu_lstm, sk_emu_lstm_plan, sk_emu_lstm_cols, sk_emu_lstm_work_bytes,
//          sk_emu_lstm_reserve_bytes, sk_emu_lstm_forward, sk_emu_lstm_backward_data,
//          sk_emu_lstm_backward_weights
//
// The network: L layers of a unidirectional RNN of G gates, input width E (layer 0) or H,
// hidden H, double bias; cuDNN's linear ids 0..G-1 act on the layer input, G..2G-1 on h_{t-1},
// each gate's matrix {H rows, cols} row-major, bias {H}. The cells, as cuDNN documents them
// (cudnnRNNMode_t):
//   LSTM, gates i, f, g, o: i = sigmoid(W_i x + b_Wi + R_i h + b_Ri), f, o likewise,
//        g = tanh(W_g x + ... ), c' = f * c + i * g,  h' = o * tanh(c');
//   GRU, gates r, z, n: r = sigmoid(W_r x + b_Wr + R_r h + b_Rr), z likewise,
//        n = tanh(W_n x + b_Wn + r * (R_n h + b_Rn)),  h' = (1 - z) * n + z * h;
//   RNN_TANH, one gate: h' = tanh(W x + b_W + R h + b_R).
// Data x (E wide), y (H wide): element (b, t, v) at ((b * T + t) * V + v) batch-major, or
// ((t * B + b) * V + v) sequence-major. States hx, cx, hy, cy: (L, B, H) packed (cx, cy: the
// LSTM's only; the other cells ignore them, as cuDNN does).
// Sums in double, rounded once to fp32 where a GPU stores a result (see cudnn_emu.cpp).
#ifndef SK_TESTS_CUDNN_EMU_LSTM_H
#define SK_TESTS_CUDNN_EMU_LSTM_H

#include <stddef.h>

#include <string>
#include <vector>

struct sk_emu_lstm {
    int L = 0, H = 0, E = 0, B = 0, T = 0;
    int mode = 2; // cudnnRNNMode_t's value: CUDNN_RNN_TANH 1, CUDNN_LSTM 2, CUDNN_GRU 3
    int G = 4;    // gates of the mode (sk_emu_lstm_plan sets it)
    bool batch_major = true;
    bool tf32 = false; // every matrix-product operand rounded to TF32 (sk_emu_tf32)
    // Weight space, in floats: linear id lin (0..2G-1) of layer l at [l * 2G + lin].
    std::vector<size_t> mat, bias;
    size_t weight_floats = 0;
};

// Fills n's G and weight-space layout from mode, L, H, E. Chosen to break code that assumes
// offsets: per layer the 2G biases first, in reverse linear-id order (2G-1 ... 0), then the
// recurrent matrices (G..2G-1), then the input matrices (0..G-1), every segment starting on a 256-byte
// boundary (so padding lies between segments unless H and the widths are multiples of 64).
void sk_emu_lstm_plan(sk_emu_lstm *n);

// Columns of linear id lin's matrix in layer l: the layer's input width (0..G-1) or H (G..2G-1).
int sk_emu_lstm_cols(const sk_emu_lstm &n, int l, int lin);

// Workspace bytes a call needs: scratch only, overwritten with NaN bytes after every call.
// Training covers the forward and both backward passes; inference only the forward.
size_t sk_emu_lstm_work_bytes(const sk_emu_lstm &n, bool training);
// Reserve-space bytes of a training forward: what the backward passes need (the gates and
// cell states (a GRU: R_n h + b_Rn) of every layer and step, the outputs of the layers below the top, and the
// gate gradients that backward data leaves for backward weights), behind a 256-byte header
// that stamps which pass wrote it last.
size_t sk_emu_lstm_reserve_bytes(const sk_emu_lstm &n);

// hx, cx NULL: zero initial state; hy, cy NULL: not written. reserve: NULL for inference.
void sk_emu_lstm_forward(const sk_emu_lstm &n, bool training, const float *w, const float *x, float *y,
                         const float *hx, const float *cx, float *hy, float *cy, void *work, void *reserve);

// dx from dy (and dhy, dcy; NULL: zero); dhx, dcx NULL: not written; y and hx as in the
// forward (a GRU's h_{t-1}). Returns "" or why the reserve space does not hold a training
// forward of this shape (a GPU would compute garbage).
std::string sk_emu_lstm_backward_data(const sk_emu_lstm &n, const float *w, const float *y, const float *dy,
                                      float *dx, const float *hx, const float *dhy, float *dhx, const float *cx,
                                      const float *dcy, float *dcx, void *work, void *reserve);

// Weight gradients into dw (the weight-space layout): added to what is there (add) or
// written. Needs the reserve space after backward data; x, hx, y as in the forward.
std::string sk_emu_lstm_backward_weights(const sk_emu_lstm &n, bool add, const float *x, const float *hx,
                                         const float *y, float *dw, const void *reserve);

#endif
