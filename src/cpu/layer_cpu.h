// layer_cpu.h: one recurrent layer over a window on the CPU, forward and backward, for every
// cell (its rows in cells_cpu.h) (private).
// defines: sk_layer_cpu, sk_layer_cpu_make, sk_layer_cpu_input, sk_layer_cpu_forward, sk_layer_cpu_grads, sk_layer_cpu_backward
//
// Rows are time-major: row r = t*B + b. With G the cell's gates, S its states and A its kept
// floats per unit (cells_cpu.h), per layer the caller provides
//   state[s]    ((len+1)*B, H) for s < S, state 0 being h: rows [0, B) hold the initial
//               state; step t writes rows [(t+1)*B, (t+2)*B). So state[0]'s rows [0, len*B)
//               are exactly h_{t-1} for every step t, and the weight gradient of W_hh is one GEMM.
//   gates       (len*B, G*H): the gates after their nonlinearities (gate order of PyTorch)
//   aux         (len*B, A*H): what the cell keeps for backward (LSTM: tanh(c); GRU: W_hn h + b_hn)
//   hh          (B, G*H) scratch: the recurrent product of one step, for cells with split_hh
#ifndef SK_LAYER_CPU_H
#define SK_LAYER_CPU_H

#include <stdint.h>

#include "cells_cpu.h"

typedef struct {
    const sk_cell *cell;     // the descriptor (cell.h)
    const sk_cell_cpu *rows; // its rows (cells_cpu.h)
    int B, H, in;       // batch, hidden width, input width
    int threads;        // threads for the matrix products and spans of streams for the recurrence
    const float *w_ih;  // (G*H, in)
    const float *w_hh;  // (G*H, H)
    const float *b_ih;  // (G*H)
    const float *b_hh;  // (G*H)
    float *w_hh_t;      // (H, G*H) scratch: W_hh laid out for the recurrent kernels once per
                        // window by forward (recurrent_gemm.h); NULL to run them through CBLAS
    float *hh;          // (B, G*H) scratch for split_hh cells (NULL for the others)
    int gates_in;       // 1: the caller filled gates with the input side already (x not read):
                        // b_ih (+ b_hh unless split_hh) + x W_ih^T
    int w_hh_t_ready;   // 1: w_hh_t already holds this w_hh laid out (forward does not lay it out again)
    int step;           // 1: an inference step (len 1): every product through sk_matvec_rows
    const uint16_t *w_ih16; // (G*H, in) bf16 copies of w_ih and w_hh (matvec_bf16.h), borrowed, or NULL:
    const uint16_t *w_hh16; // (G*H, H)  when set (inference in bf16) every product of the layer reads them
} sk_layer_cpu;

// Layer k of a stack of cell `kind` over the tensors w (borrowed), products through CBLAS
// (w_hh_t and hh NULL, flags 0): the caller sets the scratch and flags it runs with.
sk_layer_cpu sk_layer_cpu_make(sk_cell_kind kind, int B, int H, int in, int threads, const float *w_ih,
                               const float *w_hh, const float *b_ih, const float *b_hh);

// The input side of the gates of `rows` rows: b_ih (+ b_hh unless the cell keeps it apart),
// then + x W_ih^T (through w_ih16 when set, sk_matvec_rows for an inference step, one GEMM otherwise).
void sk_layer_cpu_input(const sk_layer_cpu *l, int rows, const float *x, float *gates);

// x: (len*B, in). Writes gates, aux, and state rows [B, (len+1)*B), and w_hh_t.
void sk_layer_cpu_forward(const sk_layer_cpu *l, int len, const float *x, float *gates, float *aux,
                          float *const *state);

typedef struct {
    float *w_ih, *w_hh, *b_ih, *b_hh; // gradients, overwritten
} sk_layer_cpu_grads;

// Scratch of backward: dgates, dgates_h (len*B, G*H): the pre-activations' gradients on the
// input and the recurrent side (dgates_h only for split_hh cells; NULL otherwise); dh (B, H);
// dcarry (S, B, H): the gradients carried from step t+1 into the states.
typedef struct {
    float *dgates, *dgates_h, *dh, *dcarry;
} sk_layer_cpu_scratch;

// dh_out: (len*B, H) gradient of the loss w.r.t. the layer's outputs h_t.
// dx: (len*B, in) gradient w.r.t. the input (NULL to skip). w_hh_t is not read. Truncated BPTT: the
// gradient w.r.t. the initial state is not propagated.
void sk_layer_cpu_backward(const sk_layer_cpu *l, int len, const float *x, const float *gates, const float *aux,
                           float *const *state, const float *dh_out, const sk_layer_cpu_scratch *s,
                           const sk_layer_cpu_grads *g, float *dx);

#endif
