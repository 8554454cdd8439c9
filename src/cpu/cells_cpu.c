// cells_cpu.c: cells_cpu.h: each cell's math header over a row of H units with the CPU's
// branch-free activations; restrict lets GCC vectorize each loop.
#include "cells_cpu.h"

#include <stddef.h>

#include "activations.h"
#include "shakespeare/gru_cell.h"
#include "shakespeare/lstm_cell.h"
#include "shakespeare/rnn_cell.h"

// LSTM: g = (i, f, g, o); states h, c; aux tanh(c). The loop is over restrict parameters so that
// it vectorizes: GCC keeps restrict across inlining only for parameters, and without it the loop's
// eight arrays need more run-time alias checks than GCC versions a loop for, which leaves it
// scalar. Elementwise either way: the same value in every lane.
static void lstm_forward_units(int H, float *restrict gi, float *restrict gf, float *restrict gg, float *restrict go,
                               const float *restrict c_prev, float *restrict h, float *restrict c,
                               float *restrict tanh_c) {
    for (int j = 0; j < H; j++) {
        const sk_lstm_cell_out s = sk_lstm_cell_forward(gi[j], gf[j], gg[j], go[j], c_prev[j], sk_sigmoidf, sk_tanhf);
        gi[j] = s.i, gf[j] = s.f, gg[j] = s.g, go[j] = s.o;
        c[j] = s.c, tanh_c[j] = s.tanh_c, h[j] = s.h;
    }
}

static void lstm_forward(int H, float *g_, const float *hh, const float *const *prev, float *const *next,
                         float *aux) {
    (void)hh;
    lstm_forward_units(H, g_, g_ + H, g_ + 2 * H, g_ + 3 * H, prev[1], next[0], next[1], aux);
}

static void lstm_backward_units(int H, const float *restrict gi, const float *restrict gf, const float *restrict gg,
                                const float *restrict go, const float *restrict c_prev, const float *restrict tanh_c,
                                const float *restrict dh_out, const float *restrict dh, float *restrict dc,
                                float *restrict dgi, float *restrict dgf, float *restrict dgg, float *restrict dgo) {
    for (int j = 0; j < H; j++) {
        const sk_lstm_cell_grads r =
            sk_lstm_cell_backward(dh_out[j] + dh[j], dc[j], gi[j], gf[j], gg[j], go[j], tanh_c[j], c_prev[j]);
        dgi[j] = r.dpre[0], dgf[j] = r.dpre[1], dgg[j] = r.dpre[2], dgo[j] = r.dpre[3];
        dc[j] = r.dc_prev;
    }
}

static void lstm_backward(int H, const float *g_, const float *aux, const float *const *prev, const float *dh_out,
                          const float *dh, float *const *dcarry, float *dg, float *dgh) {
    (void)dgh;
    lstm_backward_units(H, g_, g_ + H, g_ + 2 * H, g_ + 3 * H, prev[1], aux, dh_out, dh, dcarry[1], dg, dg + H,
                        dg + 2 * H, dg + 3 * H);
}

// GRU: g = (r, z, n); hh = W_hh h' + b_hh apart; state h; aux h_n, the recurrent side of n.
// Both loops over restrict parameters, as the LSTM's (lstm_forward_units).
static void gru_forward_units(int H, float *restrict gr, float *restrict gz, float *restrict gn,
                              const float *restrict hr, const float *restrict hz, const float *restrict hn,
                              const float *restrict h_prev, float *restrict h, float *restrict keep_hn) {
    for (int j = 0; j < H; j++) {
        const sk_gru_cell_out s = sk_gru_cell_forward(gr[j], gz[j], gn[j], hr[j], hz[j], hn[j], h_prev[j], sk_sigmoidf,
                                                      sk_tanhf);
        gr[j] = s.r, gz[j] = s.z, gn[j] = s.n;
        keep_hn[j] = hn[j], h[j] = s.h;
    }
}

static void gru_forward(int H, float *g, const float *hh, const float *const *prev, float *const *next, float *aux) {
    gru_forward_units(H, g, g + H, g + 2 * H, hh, hh + H, hh + 2 * H, prev[0], next[0], aux);
}

static void gru_backward_units(int H, const float *restrict gr, const float *restrict gz, const float *restrict gn,
                               const float *restrict hn, const float *restrict h_prev, const float *restrict dh_out,
                               const float *restrict dh, float *restrict dgr, float *restrict dgz,
                               float *restrict dgn, float *restrict dhr, float *restrict dhz, float *restrict dhn,
                               float *restrict direct) {
    for (int j = 0; j < H; j++) {
        const sk_gru_cell_grads r = sk_gru_cell_backward(dh_out[j] + dh[j], gr[j], gz[j], gn[j], hn[j], h_prev[j]);
        dgr[j] = r.dx[0], dgz[j] = r.dx[1], dgn[j] = r.dx[2];
        dhr[j] = r.dh[0], dhz[j] = r.dh[1], dhn[j] = r.dh[2];
        direct[j] = r.dh_prev;
    }
}

static void gru_backward(int H, const float *g, const float *aux, const float *const *prev, const float *dh_out,
                         const float *dh, float *const *dcarry, float *dg, float *dgh) {
    gru_backward_units(H, g, g + H, g + 2 * H, aux, prev[0], dh_out, dh, dg, dg + H, dg + 2 * H, dgh, dgh + H,
                       dgh + 2 * H, dcarry[0]);
}

// RNN: g = (h) after tanh; state h (the gate itself).
static void rnn_forward(int H, float *g_, const float *hh, const float *const *prev, float *const *next, float *aux) {
    (void)hh, (void)prev, (void)aux;
    float *restrict g = g_, *restrict h = next[0];
    for (int j = 0; j < H; j++) g[j] = sk_rnn_cell_forward(g[j], sk_tanhf), h[j] = g[j];
}

static void rnn_backward(int H, const float *g_, const float *aux, const float *const *prev, const float *dh_out_,
                         const float *dh_, float *const *dcarry, float *dg_, float *dgh) {
    (void)aux, (void)prev, (void)dcarry, (void)dgh;
    const float *restrict g = g_, *restrict dh_out = dh_out_, *restrict dh = dh_;
    float *restrict dg = dg_;
    for (int j = 0; j < H; j++) dg[j] = sk_rnn_cell_backward(dh_out[j] + dh[j], g[j]);
}

static const sk_cell_cpu rows[SK_CELL_COUNT] = {
    [SK_CELL_LSTM] = {.aux = 1, .direct_h = 0, .forward = lstm_forward, .backward = lstm_backward},
    [SK_CELL_GRU] = {.aux = 1, .direct_h = 1, .forward = gru_forward, .backward = gru_backward},
    [SK_CELL_RNN] = {.aux = 0, .direct_h = 0, .forward = rnn_forward, .backward = rnn_backward},
};

const sk_cell_cpu *sk_cell_cpu_get(sk_cell_kind kind) { return &rows[kind]; }
