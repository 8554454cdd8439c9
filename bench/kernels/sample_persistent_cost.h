// sample_persistent_cost.h: the cost model of the sampling kernel (sample_persistent_kernels.cuh),
// counted as lstm_persistent_cost.h counts the LSTM kernels and timed under its H200 numbers: the
// time of one step (one character of every stream) on the busiest block, block 0, which also
// draws. Two kernels: the one the H200 measured at 2d6bab0 (sk_sample_cost_step_2d6bab0;
// tests/test_sample_plan.c holds it to the measured characters/s of
// bench/results/h200-2026-11-28-2d6bab0/probe/sample-gpu.txt), and today's (sk_sample_cost_step),
// whose prediction waits for a GPU. Printed by bench/kernels/plstm_cost.c.
// defines: sk_sample_cost_step, sk_sample_cost_step_2d6bab0, sk_sample_cost_draw_us, kSkCostInst*
//
// 2d6bab0, per step, per stream group of sb streams:
//   layer k   stage [input | h_{t-1}] (two stage_row calls a stream; layer 0: the token first, then
//             its embedding row: two dependent round trips; above: one), block_dots over 4U rows of
//             in_k + H, the cell; two __syncthreads, one grid.sync per layer
//   draws     per stream block 0 draws: stage h (one round trip), block_dots over V rows of H
//             (fc, one row a warp at a time), the bias from global memory (a round trip), the draw
//             (sample_draw.h: a block-wide argmax, then one thread's sums in double over up to 3V
//             candidates); about six __syncthreads; one grid.sync (none after the last step,
//             ignored here)
// Today, per step (no grid.sync: blocks wait on hand-off words that carry their step's tag):
//   layer k   per stream group: layer 0 copies the embedding rows from shared memory (resident;
//             else stage_row, a round trip), and, when blocks draw their own streams, first
//             gathers the group's tokens (a round trip and a __syncthreads); the polls of h below
//             and h_{t-1} together, kFlight loads in flight a thread (a round trip per
//             256 x kFlight words); block_dots and the cells as before; two __syncthreads
//   draws     per stream the block draws (every stream at B = 1, plan.draw_all; else block 0's
//             share): the poll of the top h (a round trip), fc as block_dots with fc's V rows as
//             the batch (four logits a warp at once), the bias from shared memory, the draw with
//             one thread's running sums over the k candidates once and two halving searches
#ifndef SK_SAMPLE_PERSISTENT_COST_H
#define SK_SAMPLE_PERSISTENT_COST_H

#include "lstm_persistent_cost.h"
#include "../../kernels/sample_persistent_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

// One thread's dependent double adds of 2d6bab0's draw (total and scan without top-k and top-p: 2V),
// about 8 clocks each, plus about 400 for the weights: an estimate, not a measurement.
static inline double sk_sample_cost_draw_us(int V) { return (2.0 * V * 8 + 400) / kSkCostClockGHz / 1e3; }

// One warp's instructions of the draw's argmax: its loop, 5 shuffles of the candidates' ranking, the
// warps' results reduced by one thread (an estimate from block_draw's structure).
static const double kSkCostInstArgmax = 300;
// Today's draw: a candidate's weight in double (exp) and one thread's sums (8 clocks a dependent
// add, sk_draw_sums) then two searches of log2(k) steps (about 40 clocks each: a shared load, a
// compare): estimates from block_draw's structure.
static const double kSkCostInstWeight = 120;
static inline double sk_sample_cost_sums_us(int k) {
    int steps = 0;
    while ((1 << steps) < k) steps++;
    return (8.0 * k + 2 * 40.0 * steps) / kSkCostClockGHz / 1e3;
}
// One poll of a hand-off word, per word a thread: the load, the tag's test, the store to shared
// memory and the address arithmetic (poll_group's loop; an estimate).
static const double kSkCostInstPoll = 12;

// The predicted time of one step of the plan's launch at 2d6bab0 (every stream one character).
static inline double sk_sample_cost_step_2d6bab0(const sk_sample_plan *p, int B, int V, int E, int H, int L) {
    double us = 0.0;
    for (int k = 0; k < L; k++) {
        const int in = k == 0 ? E : H;
        for (int b0 = 0; b0 < B; b0 += p->sb) {
            const int nb = B - b0 < p->sb ? B - b0 : p->sb;
            sk_plstm_cost c;
            memset(&c, 0, sizeof c);
            c.l2_rd = (double)nb * (in + H) * 4;
            c.inflight = c.l2_rd / 16 / SK_PLSTM_THREADS;
            c.inst_stage = 2.0 * nb * kSkCostInstStageRow;
            sk_plstm_cost_inner(&c, 0, 4, 4 * p->U, 1, nb, in + H);
            c.inst += sk_plstm_cost_cells((double)nb * p->U, kSkCostInstCellFwd);
            c.bar = 2, c.rt = k == 0 ? 2 : 1;
            sk_plstm_cost_finish(&c);
            us += c.us;
        }
        us += kSkCostGridSyncUs;
    }
    const int draws = (B + p->blocks - 1) / p->blocks; // block 0's streams
    for (int d = 0; d < draws; d++) {
        sk_plstm_cost c;
        memset(&c, 0, sizeof c);
        c.l2_rd = (double)H * 4, c.inflight = c.l2_rd / 16 / SK_PLSTM_THREADS;
        c.inst_stage = kSkCostInstStageRow;
        sk_plstm_cost_inner(&c, 0, 4, V, 1, 1, H);
        c.inst += kSkCostInstArgmax;
        c.bar = 6, c.rt = 2;
        sk_plstm_cost_finish(&c);
        us += c.us + sk_sample_cost_draw_us(V);
    }
    return us + kSkCostGridSyncUs;
}

// Round trips of a poll of n words by a block (kFlight = 16 loads in flight a thread).
static inline double sk_sample_cost_poll_rt(double n) {
    const double per = (double)SK_PLSTM_THREADS * 16;
    return n > 0 ? (double)(size_t)((n + per - 1) / per) : 0;
}

// Today's kernel: the predicted time of one step of the plan's launch (every stream one character).
// The draw's ranking (top-k, top-p) is left out, as at 2d6bab0: the plain draw is the default.
static inline double sk_sample_cost_step(const sk_sample_plan *p, int B, int V, int E, int H, int L) {
    double us = 0.0;
    for (int k = 0; k < L; k++) {
        const int in = k == 0 ? E : H;
        for (int b0 = 0; b0 < B; b0 += p->sb) {
            const int nb = B - b0 < p->sb ? B - b0 : p->sb;
            const double polled = (double)nb * (k == 0 ? H : 2.0 * H);
            sk_plstm_cost c;
            memset(&c, 0, sizeof c);
            c.l2_rd = polled * 8;
            c.inflight = 16;
            c.inst_stage = sk_plstm_cost_cells(polled, kSkCostInstPoll);
            if (k == 0) {
                c.inst_stage += p->resident ? sk_plstm_cost_cells((double)nb * E, 6) : nb * kSkCostInstStageRow;
                c.rt += p->resident ? 0 : 1;
                if (!p->draw_all) c.rt += 1, c.bar += 1; // the tokens
            }
            sk_plstm_cost_inner(&c, 0, 4, 4 * p->U, 1, nb, in + H);
            c.inst += sk_plstm_cost_cells((double)nb * p->U, kSkCostInstCellFwd);
            c.bar += 2, c.rt += sk_sample_cost_poll_rt(polled);
            sk_plstm_cost_finish(&c);
            us += c.us;
        }
    }
    const int draws = p->draw_all ? B : (B + p->blocks - 1) / p->blocks; // block 0's streams
    for (int d = 0; d < draws; d++) {
        sk_plstm_cost c;
        memset(&c, 0, sizeof c);
        c.l2_rd = (double)H * 8, c.inflight = 16;
        c.inst_stage = sk_plstm_cost_cells(H, kSkCostInstPoll);
        sk_plstm_cost_inner(&c, 0, 4, 1, 1, V, H); // fc: V rows as the batch
        c.inst += kSkCostInstArgmax + kSkCostInstWeight + sk_plstm_cost_cells(V, 4); // + the bias
        c.bar = 7, c.rt = sk_sample_cost_poll_rt(H) + (p->resident ? 0 : 1);
        sk_plstm_cost_finish(&c);
        us += c.us + sk_sample_cost_sums_us(V);
    }
    return us;
}

#ifdef __cplusplus
}
#endif

#endif
