// lstm_cell.h: one LSTM cell, forward and backward, for every backend: the CPU's
// (src/cpu/lstm_cpu.c) and the CUDA kernels' (kernels/lstm_persistent_kernels.cuh, whose
// lstm_cell and cell_backward the wavefront, layer-after-layer, cluster and sampling kernels
// call), in one __host__ __device__ header (like hash.h). Gates in PyTorch's order i, f, g, o.
// defines: sk_lstm_activation, sk_lstm_cell_out, sk_lstm_cell_forward, sk_lstm_cell_grads,
//          sk_lstm_cell_backward
//
// The activations come from the caller: the CPU's branch-free sk_sigmoidf / sk_tanhf
// (src/cpu/activations.h), the device's expf / tanhf. The rest is products and sums in a fixed
// order, one expression per value: the host build (ISO C, no contraction) rounds each
// operation, and nvcc (--fmad=true) fuses the same products into the same sums wherever the
// cell is inlined, so each backend forms the same values on every call site.
#ifndef SHAKESPEARE_LSTM_CELL_H
#define SHAKESPEARE_LSTM_CELL_H

#include "shakespeare/hash.h" // SK_HOST_DEVICE

// sigmoid or tanh of one value; under nvcc, a __device__ function when called on the device.
typedef float (*sk_lstm_activation)(float);

// One step of a cell: the gates after their activations, the new state c, tanh(c) and h.
typedef struct {
    float i, f, g, o; // input, forget, candidate (tanh), output gates
    float c, tanh_c, h;
} sk_lstm_cell_out;

// The cell from its four gate pre-activations and c_{t-1}:
//   i = sigmoid(pre_i), f = sigmoid(pre_f), g = tanh(pre_g), o = sigmoid(pre_o),
//   c = f c_{t-1} + i g, h = o tanh(c).
static inline SK_HOST_DEVICE sk_lstm_cell_out sk_lstm_cell_forward(float pre_i, float pre_f, float pre_g, float pre_o,
                                                                   float c_prev, sk_lstm_activation sigmoid,
                                                                   sk_lstm_activation tanh_) {
    sk_lstm_cell_out s;
    s.i = sigmoid(pre_i), s.f = sigmoid(pre_f), s.g = tanh_(pre_g), s.o = sigmoid(pre_o);
    s.c = s.f * c_prev + s.i * s.g;
    s.tanh_c = tanh_(s.c);
    s.h = s.o * s.tanh_c;
    return s;
}

// The cell's gradients: the four gate pre-activations' (i, f, g, o) and the one carried into
// c_{t-1}.
typedef struct {
    float dpre[4];
    float dc_prev;
} sk_lstm_cell_grads;

// Backward through one cell from dh (all of dL/dh_t: from above and from step t+1), dc (the
// gradient carried into c_t from step t+1) and what the forward formed: the activated gates,
// tanh(c_t) and c_{t-1}. With dc_t = dc + dh o (1 - tanh(c_t)^2):
//   dpre_i = dc_t g i (1 - i),  dpre_f = dc_t c_{t-1} f (1 - f),  dpre_g = dc_t i (1 - g^2),
//   dpre_o = dh tanh(c_t) o (1 - o),  dc_prev = dc_t f.
static inline SK_HOST_DEVICE sk_lstm_cell_grads sk_lstm_cell_backward(float dh, float dc, float i, float f, float g,
                                                                      float o, float tanh_c, float c_prev) {
    const float dct = dc + dh * o * (1.0f - tanh_c * tanh_c);
    sk_lstm_cell_grads r;
    r.dc_prev = dct * f;
    r.dpre[0] = dct * g * i * (1.0f - i);
    r.dpre[1] = dct * c_prev * f * (1.0f - f);
    r.dpre[2] = dct * i * (1.0f - g * g);
    r.dpre[3] = dh * tanh_c * o * (1.0f - o);
    return r;
}

#endif
