// cudnn_emu_lstm.cpp: the emulated cuDNN's LSTM arithmetic and buffer layouts (see
// cudnn_emu_lstm.h for the network, the data layout and what each pass reads and writes).
// defines: sk_emu_lstm_plan, sk_emu_lstm_cols, sk_emu_lstm_work_bytes, sk_emu_lstm_reserve_bytes,
//          sk_emu_lstm_forward, sk_emu_lstm_backward_data, sk_emu_lstm_backward_weights
#include "cudnn_emu_lstm.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tf32_emu.h"

namespace {

constexpr size_t kSeg = 64; // floats: segments and regions start on 256-byte boundaries
constexpr uint32_t kMagic = 0x534b524eu;
enum { kAfterForward = 1, kAfterBackwardData = 2 };

size_t up(size_t floats) { return (floats + kSeg - 1) / kSeg * kSeg; }

enum { kRnnTanh = 1, kLstm = 2, kGru = 3 }; // cudnnRNNMode_t's values

// Reserve space, in floats after the 64-float header (uint32 words: magic, phase, L, H, E, B, T):
//   gates (L, T, B, GH) activated (LSTM i, f, g, o; GRU r, z, n; RNN h) | c (L, T, B, H) the
//   LSTM's cell states, the GRU's R_n h + b_Rn | h (L-1, T, B, H) outputs of the layers below
//   the top (the top's are y) | dgates (L, T, B, GH) the input side's pre-activation gradients
//   | dgates_h (L, T, B, GH) the recurrent side's (the GRU's; the others' are dgates).
struct Reserve {
    size_t gates, c, h, dgates, dgates_h, end;
    explicit Reserve(const sk_emu_lstm &n) {
        const size_t step = (size_t)n.T * n.B * n.H;
        gates = kSeg;
        c = gates + up(n.L * n.G * step);
        h = c + up(n.L * step);
        dgates = h + up((n.L - 1) * step);
        dgates_h = dgates + up(n.L * n.G * step);
        end = dgates_h + (n.mode == kGru ? up(n.L * n.G * step) : 0);
    }
    size_t dgates_rec() const { return end > dgates_h ? dgates_h : dgates; }
};

// Workspace: pre-activations of one (t, b), the input and the recurrent side ((2, GH) doubles;
// at least (B, 4H), the size before the cells) | two (T, B, H) float slabs between layers
// (inference outputs, backward-data input gradients) when L > 1.
size_t pre_bytes(const sk_emu_lstm &n) {
    const size_t before = (size_t)n.B * 4 * n.H * 2, sides = (size_t)2 * n.G * n.H * 2;
    return up(before > sides ? before : sides) * sizeof(float);
}
struct Work {
    size_t slab_bytes, bytes_infer, bytes_train;
    explicit Work(const sk_emu_lstm &n) {
        slab_bytes = n.L > 1 ? up((size_t)n.T * n.B * n.H) * sizeof(float) : 0;
        bytes_infer = pre_bytes(n) + 2 * slab_bytes;
        bytes_train = bytes_infer + up((size_t)n.B * n.H * 4) * sizeof(float); // + dh, dc (B, H) doubles
    }
};

float *slab(const sk_emu_lstm &n, void *work, int k) {
    return (float *)((char *)work + pre_bytes(n) + (size_t)(k % 2) * Work(n).slab_bytes);
}

size_t data_at(const sk_emu_lstm &n, int b, int t, int width) {
    return (n.batch_major ? (size_t)b * n.T + t : (size_t)t * n.B + b) * (size_t)width;
}
size_t step_at(const sk_emu_lstm &n, int l, int t, int b, int width) {
    return (((size_t)l * n.T + t) * n.B + b) * (size_t)width;
}
size_t state_at(const sk_emu_lstm &n, int l, int b) { return ((size_t)l * n.B + b) * (size_t)n.H; }

double sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }

// Layer l's matrices as the math type reads them: W (GH, In) and R (GH, H), rows gate-major
// (gate j's row r at j * H + r), the biases b_W and b_R (GH) and their sum.
struct LayerWeights {
    int in;
    std::vector<float> W, R;
    std::vector<double> bias, bW, bR;
    LayerWeights(const sk_emu_lstm &n, const float *w, int l) : in(sk_emu_lstm_cols(n, l, 0)) {
        const int H = n.H, G = n.G, GH = G * H, ids = 2 * G;
        W.resize((size_t)GH * in), R.resize((size_t)GH * H), bias.resize(GH), bW.resize(GH), bR.resize(GH);
        for (int j = 0; j < G; j++)
            for (int r = 0; r < H; r++) {
                const size_t row = (size_t)j * H + r;
                bW[row] = w[n.bias[l * ids + j] + r], bR[row] = w[n.bias[l * ids + G + j] + r];
                bias[row] = bW[row] + bR[row];
                for (int col = 0; col < in; col++)
                    W[row * in + col] = op(n, w[n.mat[l * ids + j] + (size_t)r * in + col]);
                for (int col = 0; col < H; col++)
                    R[row * H + col] = op(n, w[n.mat[l * ids + G + j] + (size_t)r * H + col]);
            }
    }
    static float op(const sk_emu_lstm &n, float v) { return n.tf32 ? sk_emu_tf32(v) : v; }
};

void stamp(const sk_emu_lstm &n, void *reserve, uint32_t phase) {
    const uint32_t head[7] = {kMagic, phase, (uint32_t)n.L, (uint32_t)n.H, (uint32_t)n.E, (uint32_t)n.B,
                              (uint32_t)n.T};
    memcpy(reserve, head, sizeof head);
}

// "" when the reserve space's header says a pass of at least `phase` wrote it for this shape.
std::string check_stamp(const sk_emu_lstm &n, const void *reserve, uint32_t phase) {
    uint32_t head[7];
    memcpy(head, reserve, sizeof head);
    if (head[0] != kMagic || head[2] != (uint32_t)n.L || head[3] != (uint32_t)n.H || head[4] != (uint32_t)n.E ||
        head[5] != (uint32_t)n.B || head[6] != (uint32_t)n.T)
        return "the reserve space does not hold a training forward of this network and data shape";
    if (head[1] < phase) return "the reserve space holds a training forward but no backward-data pass after it";
    return "";
}

} // namespace

void sk_emu_lstm_plan(sk_emu_lstm *n) {
    n->G = n->mode == kLstm ? 4 : n->mode == kGru ? 3 : 1;
    const int ids = 2 * n->G;
    n->mat.assign((size_t)n->L * ids, 0);
    n->bias.assign((size_t)n->L * ids, 0);
    size_t at = 0;
    for (int l = 0; l < n->L; l++) {
        for (int lin = ids - 1; lin >= 0; lin--) n->bias[l * ids + lin] = at, at += up((size_t)n->H);
        for (int i = 0; i < ids; i++) { // the recurrent matrices, then the input ones
            const int lin = (i + n->G) % ids;
            n->mat[l * ids + lin] = at;
            at += up((size_t)n->H * sk_emu_lstm_cols(*n, l, lin));
        }
    }
    n->weight_floats = at;
}

int sk_emu_lstm_cols(const sk_emu_lstm &n, int l, int lin) { return lin < n.G && l == 0 ? n.E : n.H; }

size_t sk_emu_lstm_work_bytes(const sk_emu_lstm &n, bool training) {
    Work w(n);
    return training ? w.bytes_train : w.bytes_infer;
}

size_t sk_emu_lstm_reserve_bytes(const sk_emu_lstm &n) { return Reserve(n).end * sizeof(float); }

// One (t, b) step of layer l's cell from the pre-activations (input side px, recurrent side ph,
// GH each; the LSTM and the RNN read their sum): writes h, the activated gates (when kept) and
// the LSTM's c (in place) or the GRU's R_n h + b_Rn (aux).
void cell_step(const sk_emu_lstm &n, const double *px, const double *ph, const float *hp, float *c, float *h,
               float *gates, float *aux) {
    const int H = n.H;
    for (int r = 0; r < H; r++) {
        if (n.mode == kLstm) {
            const float i = (float)sigmoid(px[r] + ph[r]), f = (float)sigmoid(px[H + r] + ph[H + r]),
                        g = (float)tanh(px[2 * H + r] + ph[2 * H + r]), o = (float)sigmoid(px[3 * H + r] + ph[3 * H + r]);
            c[r] = (float)((double)f * c[r] + (double)i * g);
            h[r] = (float)(o * tanh((double)c[r]));
            if (gates) gates[r] = i, gates[H + r] = f, gates[2 * H + r] = g, gates[3 * H + r] = o, aux[r] = c[r];
        } else if (n.mode == kGru) {
            const float rg = (float)sigmoid(px[r] + ph[r]), z = (float)sigmoid(px[H + r] + ph[H + r]);
            const float nn = (float)tanh(px[2 * H + r] + (double)rg * ph[2 * H + r]);
            const double hprev = hp ? hp[r] : 0.0;
            h[r] = (float)((1.0 - z) * nn + z * hprev);
            if (gates) gates[r] = rg, gates[H + r] = z, gates[2 * H + r] = nn, aux[r] = (float)ph[2 * H + r];
        } else {
            h[r] = (float)tanh(px[r] + ph[r]);
            if (gates) gates[r] = h[r];
        }
    }
}

void sk_emu_lstm_forward(const sk_emu_lstm &n, bool training, const float *w, const float *x, float *y,
                         const float *hx, const float *cx, float *hy, float *cy, void *work, void *reserve) {
    const int L = n.L, H = n.H, B = n.B, T = n.T, GH = n.G * H;
    const bool lstm = n.mode == kLstm;
    const Reserve rs(n);
    float *res = (float *)reserve;
    double *px = (double *)work, *ph = px + GH; // (GH) each, of the current (t, b)
    if (training) stamp(n, reserve, kAfterForward);
    std::vector<float> c((size_t)B * H);
    for (int l = 0; l < L; l++) {
        const LayerWeights lw(n, w, l);
        const int In = lw.in;
        auto in_at = [&](int t, int b) -> const float * {
            if (l == 0) return x + data_at(n, b, t, n.E);
            return training ? res + rs.h + step_at(n, l - 1, t, b, H) : slab(n, work, l - 1) + step_at(n, 0, t, b, H);
        };
        auto out_at = [&](int t, int b) -> float * {
            if (l == L - 1) return y + data_at(n, b, t, H);
            return training ? res + rs.h + step_at(n, l, t, b, H) : slab(n, work, l) + step_at(n, 0, t, b, H);
        };
        for (int b = 0; b < B; b++)
            for (int r = 0; r < H; r++) c[(size_t)b * H + r] = lstm && cx ? cx[state_at(n, l, b) + r] : 0.0f;
        std::vector<float> xin(In), hin(H);
        for (int t = 0; t < T; t++)
            for (int b = 0; b < B; b++) {
                const float *xi = in_at(t, b), *hp = t ? out_at(t - 1, b) : (hx ? hx + state_at(n, l, b) : nullptr);
                for (int col = 0; col < In; col++) xin[col] = LayerWeights::op(n, xi[col]);
                for (int col = 0; col < H; col++) hin[col] = hp ? LayerWeights::op(n, hp[col]) : 0.0f;
                for (int row = 0; row < GH; row++) {
                    // The GRU keeps the sides apart; the others sum everything into one (both biases first).
                    const bool gru = n.mode == kGru;
                    double sx = gru ? lw.bW[row] : lw.bias[row], sh = gru ? lw.bR[row] : 0.0;
                    double &side_h = gru ? sh : sx;
                    const float *wr = &lw.W[(size_t)row * In], *rr = &lw.R[(size_t)row * H];
                    for (int col = 0; col < In; col++) sx += (double)wr[col] * xin[col];
                    for (int col = 0; col < H; col++) side_h += (double)rr[col] * hin[col];
                    px[row] = sx, ph[row] = sh;
                }
                cell_step(n, px, ph, hp, &c[(size_t)b * H], out_at(t, b),
                          training ? res + rs.gates + step_at(n, l, t, b, GH) : nullptr,
                          training ? res + rs.c + step_at(n, l, t, b, H) : nullptr);
            }
        for (int b = 0; b < B; b++)
            for (int r = 0; r < H; r++) {
                if (hy) hy[state_at(n, l, b) + r] = out_at(T - 1, b)[r];
                if (cy && lstm) cy[state_at(n, l, b) + r] = c[(size_t)b * H + r];
            }
    }
}

// One (t, b) step of layer l's cell backward from dh (all of dL/dh_t) and dc (the LSTM's carried
// dL/dc_t, updated in place to dL/dc_{t-1}): the input side's pre-activation gradients dp, the
// recurrent side's dph (the GRU's; the others' equal dp), and the GRU's direct dL/dh_{t-1}.
void cell_step_back(const sk_emu_lstm &n, const float *gt, const float *aux, const float *cp, const float *hp,
                    const double *dh, double *dc, double *dp, double *dph, double *direct) {
    const int H = n.H;
    for (int r = 0; r < H; r++) {
        if (n.mode == kLstm) {
            const double i = gt[r], f = gt[H + r], g = gt[2 * H + r], o = gt[3 * H + r];
            const double tc = tanh((double)aux[r]), cprev = cp ? cp[r] : 0.0;
            const double dct = dc[r] + dh[r] * o * (1.0 - tc * tc);
            dp[r] = dct * g * i * (1.0 - i);
            dp[H + r] = dct * cprev * f * (1.0 - f);
            dp[2 * H + r] = dct * i * (1.0 - g * g);
            dp[3 * H + r] = dh[r] * tc * o * (1.0 - o);
            dc[r] = dct * f;
        } else if (n.mode == kGru) {
            const double rg = gt[r], z = gt[H + r], nn = gt[2 * H + r], hn = aux[r], hprev = hp ? hp[r] : 0.0;
            const double dn = dh[r] * (1.0 - z) * (1.0 - nn * nn);
            dp[r] = dph[r] = dn * hn * rg * (1.0 - rg);
            dp[H + r] = dph[H + r] = dh[r] * (hprev - nn) * z * (1.0 - z);
            dp[2 * H + r] = dn, dph[2 * H + r] = dn * rg;
            direct[r] = dh[r] * z;
        } else {
            const double h = gt[r];
            dp[r] = dh[r] * (1.0 - h * h);
        }
    }
}

std::string sk_emu_lstm_backward_data(const sk_emu_lstm &n, const float *w, const float *y, const float *dy,
                                      float *dx, const float *hx, const float *dhy, float *dhx, const float *cx,
                                      const float *dcy, float *dcx, void *work, void *reserve) {
    std::string why = check_stamp(n, reserve, kAfterForward);
    if (!why.empty()) return why;
    const int L = n.L, H = n.H, B = n.B, T = n.T, GH = n.G * H;
    const bool lstm = n.mode == kLstm, gru = n.mode == kGru;
    const Reserve rs(n);
    float *res = (float *)reserve;
    const Work wk(n);
    double *dh_next = (double *)((char *)work + wk.bytes_infer), *dc_next = dh_next + (size_t)B * H; // (B, H) each
    std::vector<double> dp(GH), dph(GH), direct(H), dh(H), acc;
    std::vector<float> dpr(GH), dphr(GH);
    for (int l = L - 1; l >= 0; l--) {
        const LayerWeights lw(n, w, l);
        const int In = lw.in;
        auto out_at = [&](int t, int b) -> const float * {
            return l == L - 1 ? y + data_at(n, b, t, H) : res + rs.h + step_at(n, l, t, b, H);
        };
        for (int b = 0; b < B; b++)
            for (int r = 0; r < H; r++) {
                dh_next[(size_t)b * H + r] = dhy ? dhy[state_at(n, l, b) + r] : 0.0;
                dc_next[(size_t)b * H + r] = lstm && dcy ? dcy[state_at(n, l, b) + r] : 0.0;
            }
        for (int t = T - 1; t >= 0; t--)
            for (int b = 0; b < B; b++) {
                // dh_out: the gradient arriving at this layer's output, from dy or the layer above.
                const float *dh_out = l == L - 1 ? dy + data_at(n, b, t, H) : slab(n, work, l + 1) + step_at(n, 0, t, b, H);
                float *d_in = l == 0 ? dx + data_at(n, b, t, n.E) : slab(n, work, l) + step_at(n, 0, t, b, H);
                const float *gt = res + rs.gates + step_at(n, l, t, b, GH), *aux = res + rs.c + step_at(n, l, t, b, H);
                const float *cp = t ? res + rs.c + step_at(n, l, t - 1, b, H) : (cx ? cx + state_at(n, l, b) : nullptr);
                const float *hp = t ? out_at(t - 1, b) : (hx ? hx + state_at(n, l, b) : nullptr);
                for (int r = 0; r < H; r++) dh[r] = (double)dh_out[r] + dh_next[(size_t)b * H + r];
                cell_step_back(n, gt, aux, lstm ? cp : nullptr, hp, dh.data(), dc_next + (size_t)b * H, dp.data(),
                               dph.data(), direct.data());
                float *store = res + rs.dgates + step_at(n, l, t, b, GH);
                float *store_h = res + rs.dgates_rec() + step_at(n, l, t, b, GH);
                for (int row = 0; row < GH; row++) {
                    store[row] = (float)dp[row];
                    dpr[row] = LayerWeights::op(n, store[row]);
                    if (gru) store_h[row] = (float)dph[row];
                    dphr[row] = gru ? LayerWeights::op(n, store_h[row]) : dpr[row];
                }
                // dh_{t-1} = R^T dgates_h (+ the GRU's direct part), d_input = W^T dgates.
                acc.assign((size_t)In + H, 0.0);
                for (int row = 0; row < GH; row++) {
                    const float *wr = &lw.W[(size_t)row * In], *rr = &lw.R[(size_t)row * H];
                    for (int col = 0; col < In; col++) acc[col] += (double)wr[col] * dpr[row];
                    for (int col = 0; col < H; col++) acc[In + col] += (double)rr[col] * dphr[row];
                }
                for (int col = 0; col < In; col++) d_in[col] = (float)acc[col];
                for (int col = 0; col < H; col++)
                    dh_next[(size_t)b * H + col] = (float)(acc[In + col] + (gru ? direct[col] : 0.0));
            }
        for (int b = 0; b < B; b++)
            for (int r = 0; r < H; r++) {
                if (dhx) dhx[state_at(n, l, b) + r] = (float)dh_next[(size_t)b * H + r];
                if (dcx && lstm) dcx[state_at(n, l, b) + r] = (float)dc_next[(size_t)b * H + r];
            }
    }
    stamp(n, reserve, kAfterBackwardData);
    return "";
}

std::string sk_emu_lstm_backward_weights(const sk_emu_lstm &n, bool add, const float *x, const float *hx,
                                         const float *y, float *dw, const void *reserve) {
    std::string why = check_stamp(n, reserve, kAfterBackwardData);
    if (!why.empty()) return why;
    const int L = n.L, H = n.H, B = n.B, T = n.T, G = n.G, GH = G * H, ids = 2 * G;
    const Reserve rs(n);
    const float *res = (const float *)reserve;
    for (int l = 0; l < L; l++) {
        const int In = sk_emu_lstm_cols(n, l, 0);
        auto in_at = [&](int t, int b) {
            return l == 0 ? x + data_at(n, b, t, n.E) : res + rs.h + step_at(n, l - 1, t, b, H);
        };
        auto out_at = [&](int t, int b) { return l == L - 1 ? y + data_at(n, b, t, H) : res + rs.h + step_at(n, l, t, b, H); };
        std::vector<double> gW((size_t)GH * In, 0.0), gR((size_t)GH * H, 0.0), gbW(GH, 0.0), gbR(GH, 0.0);
        std::vector<float> xin(In), hin(H);
        for (int t = 0; t < T; t++)
            for (int b = 0; b < B; b++) {
                const float *xi = in_at(t, b), *hp = t ? out_at(t - 1, b) : (hx ? hx + state_at(n, l, b) : nullptr);
                const float *d = res + rs.dgates + step_at(n, l, t, b, GH);
                const float *dr_ = res + rs.dgates_rec() + step_at(n, l, t, b, GH);
                for (int col = 0; col < In; col++) xin[col] = LayerWeights::op(n, xi[col]);
                for (int col = 0; col < H; col++) hin[col] = hp ? LayerWeights::op(n, hp[col]) : 0.0f;
                for (int row = 0; row < GH; row++) {
                    gbW[row] += d[row], gbR[row] += dr_[row]; // reductions, not matrix products: no TF32
                    const double dx_ = LayerWeights::op(n, d[row]), dh_ = LayerWeights::op(n, dr_[row]);
                    double *wr = &gW[(size_t)row * In], *rr = &gR[(size_t)row * H];
                    for (int col = 0; col < In; col++) wr[col] += dx_ * xin[col];
                    for (int col = 0; col < H; col++) rr[col] += dh_ * hin[col];
                }
            }
        auto put = [&](size_t at, double g) { dw[at] = (float)(add ? (double)dw[at] + g : g); };
        for (int j = 0; j < G; j++)
            for (int r = 0; r < H; r++) {
                const size_t row = (size_t)j * H + r;
                for (int col = 0; col < In; col++) put(n.mat[l * ids + j] + (size_t)r * In + col, gW[row * In + col]);
                for (int col = 0; col < H; col++) put(n.mat[l * ids + G + j] + (size_t)r * H + col, gR[row * H + col]);
                put(n.bias[l * ids + j] + r, gbW[row]); // the same gradient but for the GRU's b_R
                put(n.bias[l * ids + G + j] + r, gbR[row]);
            }
    }
    return "";
}
