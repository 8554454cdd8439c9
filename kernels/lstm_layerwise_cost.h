// lstm_layerwise_cost.h: the cost model of the layer-after-layer kernels as built
// (lstm_layerwise_kernels.cuh: fp32 operands on CUDA cores, one grid.sync per step; the tensor-core
// variant is lstm_persistent_rebuild_cost.h's "tf32-mma layerwise grid.sync"), counted as
// lstm_persistent_cost.h counts the wavefront kernels and timed under its H100 numbers. Printed
// by kernels/dev/plstm_cost.c; tests/test_plstm_plan.c holds it beside the wavefront's.
// defines: sk_plstm_lw_cost_forward, sk_plstm_lw_cost_backward, sk_plstm_lw_chain_ms
//
// Per chain step of a block (Bb batch rows x U units):
//   forward   stages its group's h_{t-1} (Bb x H fp32), reads the projection (Bb x 4U), writes
//             gates, c, h and the next layer's input; block_dots over 4U rows of H
//   backward  stages dg(t+1) (Bb x 4H fp32), reads gates, c, c_prev and the gradient from above
//             (Bb x U each), writes dg (Bb x 4U); block_dots over U rows of 4H
// Both: two __syncthreads, one grid.sync, two dependent round trips (the staging's wait, the
// epilogue's loads).
#ifndef SK_LSTM_LAYERWISE_COST_H
#define SK_LSTM_LAYERWISE_COST_H

#include "lstm_layerwise_plan.h"
#include "lstm_persistent_cost.h"

#ifdef __cplusplus
extern "C" {
#endif

// block_dots' counts for nrows rows of K against nb staged rows (lstm_persistent_cost.h's rule).
static inline void sk_plstm_lw_cost_dots(sk_plstm_cost *c, int nrows, int nb, int K) {
    const double iters = (double)((nb + 3) / 4) * nrows * ((K + 31) / 32);
    c->fma += 4 * iters;
    c->lds += 5 * iters;
}

static inline sk_plstm_cost sk_plstm_lw_cost_forward(const sk_plstm_lw_plan *p, int H) {
    sk_plstm_cost c;
    memset(&c, 0, sizeof c);
    const double Bb = p->Bb, U = p->U;
    c.l2_rd = Bb * H * 4 + Bb * 4 * U * 4;
    c.l2_wr = Bb * U * (4 * 4 + 4 + 4 + 4);
    sk_plstm_lw_cost_dots(&c, 4 * p->U, p->Bb, H);
    c.bar = 2, c.gsync = 1, c.rt = 2;
    sk_plstm_cost_finish(&c);
    return c;
}

static inline sk_plstm_cost sk_plstm_lw_cost_backward(const sk_plstm_lw_plan *p, int H) {
    sk_plstm_cost c;
    memset(&c, 0, sizeof c);
    const double Bb = p->Bb, U = p->U;
    c.l2_rd = Bb * 4 * H * 4 + Bb * U * (4 * 4 + 4 + 4 + 4);
    c.l2_wr = Bb * U * 4 * 4;
    sk_plstm_lw_cost_dots(&c, p->U, p->Bb, 4 * H);
    c.bar = 2, c.gsync = 1, c.rt = 2;
    sk_plstm_cost_finish(&c);
    return c;
}

// Both chains of a training step: L * T steps each way (the GEMMs off the chain not counted).
static inline double sk_plstm_lw_chain_ms(const sk_plstm_lw_plan *p, int H, int L, int T) {
    return (sk_plstm_lw_cost_forward(p, H).us + sk_plstm_lw_cost_backward(p, H).us) * L * T / 1e3;
}

#ifdef __cplusplus
}
#endif

#endif
