// gru_cell.h: one GRU cell, forward and backward, for every backend, exactly PyTorch's nn.GRU
// (and cuDNN's CUDNN_GRU): gates r, z, n in that order, the candidate reading the recurrent
// product with its own bias inside the reset gate, in one __host__ __device__ header like
// lstm_cell.h (whose notes on activations and rounding hold here too).
// defines: sk_gru_cell_out, sk_gru_cell_forward, sk_gru_cell_grads, sk_gru_cell_backward
//
// With x_* = W_i* x + b_i* (the input side) and h_* = W_h* h' + b_h* (the recurrent side, h' the
// previous h):
//   r = sigmoid(x_r + h_r),  z = sigmoid(x_z + h_z),  n = tanh(x_n + r h_n),
//   h = n + z (h' - n)       (= (1 - z) n + z h', as PyTorch forms it).
#ifndef SHAKESPEARE_GRU_CELL_H
#define SHAKESPEARE_GRU_CELL_H

#include "shakespeare/lstm_cell.h" // sk_lstm_activation, SK_HOST_DEVICE

typedef struct {
    float r, z, n; // the gates after their activations
    float h;
} sk_gru_cell_out;

static inline SK_HOST_DEVICE sk_gru_cell_out sk_gru_cell_forward(float x_r, float x_z, float x_n, float h_r,
                                                                 float h_z, float h_n, float h_prev,
                                                                 sk_lstm_activation sigmoid, sk_lstm_activation tanh_) {
    sk_gru_cell_out s;
    s.r = sigmoid(x_r + h_r), s.z = sigmoid(x_z + h_z);
    s.n = tanh_(x_n + s.r * h_n);
    s.h = s.n + s.z * (h_prev - s.n);
    return s;
}

// The gradients of one step: the input side's pre-activations (x_r, x_z, x_n), the recurrent
// side's (h_r, h_z, h_n: the rows of W_hh and b_hh receive these), and the part of dL/dh' that
// does not pass through W_hh (z dh).
typedef struct {
    float dx[3], dh[3];
    float dh_prev;
} sk_gru_cell_grads;

// From dh (all of dL/dh_t) and what the forward formed (r, z, n, h_n, h'). With
// dn = dh (1 - z) (1 - n^2):  dx_n = dn, dh_n = dn r, dx_r = dh_r = dn h_n r (1 - r),
// dx_z = dh_z = dh (h' - n) z (1 - z), dh_prev = dh z.
static inline SK_HOST_DEVICE sk_gru_cell_grads sk_gru_cell_backward(float dh, float r, float z, float n, float h_n,
                                                                    float h_prev) {
    sk_gru_cell_grads g;
    const float dn = dh * (1.0f - z) * (1.0f - n * n);
    const float dr = dn * h_n * r * (1.0f - r);
    const float dz = dh * (h_prev - n) * z * (1.0f - z);
    g.dx[0] = dr, g.dx[1] = dz, g.dx[2] = dn;
    g.dh[0] = dr, g.dh[1] = dz, g.dh[2] = dn * r;
    g.dh_prev = dh * z;
    return g;
}

#endif
