// rnn_cell.h: one Elman RNN cell with tanh, forward and backward, for every backend, exactly
// PyTorch's nn.RNN(nonlinearity='tanh') (and cuDNN's CUDNN_RNN_TANH), in one __host__ __device__
// header like lstm_cell.h (whose notes on activations and rounding hold here too).
// defines: sk_rnn_cell_forward, sk_rnn_cell_backward
//
//   h = tanh(W_ih x + b_ih + W_hh h' + b_hh): one gate block, the pre-activation summed whole.
#ifndef SHAKESPEARE_RNN_CELL_H
#define SHAKESPEARE_RNN_CELL_H

#include "shakespeare/lstm_cell.h" // sk_lstm_activation, SK_HOST_DEVICE

static inline SK_HOST_DEVICE float sk_rnn_cell_forward(float pre, sk_lstm_activation tanh_) { return tanh_(pre); }

// The pre-activation's gradient from dh (all of dL/dh_t) and h_t: dh (1 - h^2).
static inline SK_HOST_DEVICE float sk_rnn_cell_backward(float dh, float h) { return dh * (1.0f - h * h); }

#endif
