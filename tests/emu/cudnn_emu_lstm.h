// cudnn_emu_lstm.h: the arithmetic of the emulated cuDNN's LSTM (cudnn_emu.cpp holds the API
// and its checks): the weight-space, reserve-space and workspace layouts, and the forward,
// backward-data and backward-weights passes on host-addressable (emulated device) memory.
// defines: sk_emu_lstm, sk_emu_lstm_plan, sk_emu_lstm_cols, sk_emu_lstm_work_bytes,
//          sk_emu_lstm_reserve_bytes, sk_emu_lstm_forward, sk_emu_lstm_backward_data,
//          sk_emu_lstm_backward_weights
//
// The network: L layers of a unidirectional LSTM, input width E (layer 0) or H, hidden H,
// double bias; gates i, f, g, o (cuDNN's linear ids 0-3 act on the layer input, 4-7 on
// h_{t-1}, each gate's matrix {H rows, cols} row-major, bias {H}):
//   i = sigmoid(W_i x + b_Wi + R_i h + b_Ri), f, o likewise, g = tanh(W_g x + ... ),
//   c' = f * c + i * g,  h' = o * tanh(c').
// Data x (E wide), y (H wide): element (b, t, v) at ((b * T + t) * V + v) batch-major, or
// ((t * B + b) * V + v) sequence-major. States hx, cx, hy, cy: (L, B, H) packed.
// Sums in double, rounded once to fp32 where a GPU stores a result (see cudnn_emu.cpp).
#ifndef SK_TESTS_CUDNN_EMU_LSTM_H
#define SK_TESTS_CUDNN_EMU_LSTM_H

#include <stddef.h>

#include <string>
#include <vector>

struct sk_emu_lstm {
    int L = 0, H = 0, E = 0, B = 0, T = 0;
    bool batch_major = true;
    bool tf32 = false; // every matrix-product operand rounded to TF32 (sk_emu_tf32)
    // Weight space, in floats: linear id lin (0-7) of layer l at [l * 8 + lin].
    std::vector<size_t> mat, bias;
    size_t weight_floats = 0;
};

// Fills n's weight-space layout from L, H, E. Chosen to break code that assumes offsets: per
// layer the eight biases first, in reverse linear-id order (7 ... 0), then the recurrent
// matrices (4-7), then the input matrices (0-3), every segment starting on a 256-byte
// boundary (so padding lies between segments unless H and the widths are multiples of 64).
void sk_emu_lstm_plan(sk_emu_lstm *n);

// Columns of linear id lin's matrix in layer l: the layer's input width (0-3) or H (4-7).
int sk_emu_lstm_cols(const sk_emu_lstm &n, int l, int lin);

// Workspace bytes a call needs: scratch only, overwritten with NaN bytes after every call.
// Training covers the forward and both backward passes; inference only the forward.
size_t sk_emu_lstm_work_bytes(const sk_emu_lstm &n, bool training);
// Reserve-space bytes of a training forward: what the backward passes need (the gates and
// cell states of every layer and step, the outputs of the layers below the top, and the
// gate gradients that backward data leaves for backward weights), behind a 256-byte header
// that stamps which pass wrote it last.
size_t sk_emu_lstm_reserve_bytes(const sk_emu_lstm &n);

// hx, cx NULL: zero initial state; hy, cy NULL: not written. reserve: NULL for inference.
void sk_emu_lstm_forward(const sk_emu_lstm &n, bool training, const float *w, const float *x, float *y,
                         const float *hx, const float *cx, float *hy, float *cy, void *work, void *reserve);

// dx from dy (and dhy, dcy; NULL: zero); dhx, dcx NULL: not written. Returns "" or why the
// reserve space does not hold a training forward of this shape (a GPU would compute garbage).
std::string sk_emu_lstm_backward_data(const sk_emu_lstm &n, const float *w, const float *dy, float *dx,
                                      const float *dhy, float *dhx, const float *cx, const float *dcy, float *dcx,
                                      void *work, void *reserve);

// Weight gradients into dw (the weight-space layout): added to what is there (add) or
// written. Needs the reserve space after backward data; x, hx, y as in the forward.
std::string sk_emu_lstm_backward_weights(const sk_emu_lstm &n, bool add, const float *x, const float *hx,
                                         const float *y, float *dw, const void *reserve);

#endif
