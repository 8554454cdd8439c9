// cells_cpu.h: each cell's step over one stream's row on the CPU: its math header (lstm_cell.h,
// ...) with the CPU's activations, one row per cell (private).
// defines: sk_cell_cpu, sk_cell_cpu_get
#ifndef SK_CELLS_CPU_H
#define SK_CELLS_CPU_H

#include "shakespeare/cell.h"

typedef struct {
    int aux;             // A: floats per unit kept for backward (LSTM: tanh(c); GRU: W_hn h + b_hn)
    int direct_h;        // 1: h_{t-1} reaches h_t besides through W_hh (the GRU's z * h)
    // G, S and split_hh are the descriptor's (cell.h). One stream's step: g (G*H) holds the input side of the gate pre-activations (with the
    // recurrent product summed in unless split_hh), hh (G*H) the recurrent product W_hh h + b_hh
    // (split_hh only, else NULL); writes the gates after their nonlinearities into g, aux (A*H;
    // NULL when A = 0) and the new states next[s] (H each) from prev[s].
    void (*forward)(int H, float *g, const float *hh, const float *const *prev, float *const *next, float *aux);
    // One stream's backward step from dh_out + dh (all of dL/dh_t) and what forward kept: writes
    // dg (G*H), the input side's pre-activation gradients, and dgh (G*H), the recurrent side's
    // (split_hh only, else NULL). dcarry[s], s >= 1: in, the gradient carried into state s at t
    // from t+1; out, into state s at t-1. dcarry[0] (direct_h only): out, the part of dL/dh_{t-1}
    // that does not pass through W_hh.
    void (*backward)(int H, const float *g, const float *aux, const float *const *prev, const float *dh_out,
                     const float *dh, float *const *dcarry, float *dg, float *dgh);
} sk_cell_cpu;

// The row of kind (kind checked by sk_model_config_check).
const sk_cell_cpu *sk_cell_cpu_get(sk_cell_kind kind);

#endif
