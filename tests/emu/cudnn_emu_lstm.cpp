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

// Reserve space, in floats after the 64-float header (uint32 words: magic, phase, L, H, E, B, T):
//   gates (L, T, B, 4H) activated i, f, g, o | c (L, T, B, H) | h (L-1, T, B, H) outputs of
//   the layers below the top (the top's are y) | dgates (L, T, B, 4H) pre-activation gradients.
struct Reserve {
    size_t gates, c, h, dgates, end;
    explicit Reserve(const sk_emu_lstm &n) {
        const size_t step = (size_t)n.T * n.B * n.H;
        gates = kSeg;
        c = gates + up(n.L * 4 * step);
        h = c + up(n.L * step);
        dgates = h + up((n.L - 1) * step);
        end = dgates + up(n.L * 4 * step);
    }
};

// Workspace: pre-activations (B, 4H) doubles | two (T, B, H) float slabs between layers
// (inference outputs, backward-data input gradients) when L > 1.
struct Work {
    size_t slab_bytes, bytes_infer, bytes_train;
    explicit Work(const sk_emu_lstm &n) {
        const size_t pre = up((size_t)n.B * 4 * n.H * 2) * sizeof(float);
        slab_bytes = n.L > 1 ? up((size_t)n.T * n.B * n.H) * sizeof(float) : 0;
        bytes_infer = pre + 2 * slab_bytes;
        bytes_train = bytes_infer + up((size_t)n.B * n.H * 4) * sizeof(float); // + dh, dc (B, H) doubles
    }
};

float *slab(const sk_emu_lstm &n, void *work, int k) {
    const size_t pre = up((size_t)n.B * 4 * n.H * 2) * sizeof(float);
    return (float *)((char *)work + pre + (size_t)(k % 2) * Work(n).slab_bytes);
}

size_t data_at(const sk_emu_lstm &n, int b, int t, int width) {
    return (n.batch_major ? (size_t)b * n.T + t : (size_t)t * n.B + b) * (size_t)width;
}
size_t step_at(const sk_emu_lstm &n, int l, int t, int b, int width) {
    return (((size_t)l * n.T + t) * n.B + b) * (size_t)width;
}
size_t state_at(const sk_emu_lstm &n, int l, int b) { return ((size_t)l * n.B + b) * (size_t)n.H; }

double sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }

// Layer l's matrices as the math type reads them: W (4H, In) and R (4H, H), rows gate-major
// (gate j's row r at j * H + r), and the summed biases b_W + b_R (4H).
struct LayerWeights {
    int in;
    std::vector<float> W, R;
    std::vector<double> bias;
    LayerWeights(const sk_emu_lstm &n, const float *w, int l) : in(sk_emu_lstm_cols(n, l, 0)) {
        const int H = n.H, G = 4 * H;
        W.resize((size_t)G * in), R.resize((size_t)G * H), bias.resize(G);
        for (int j = 0; j < 4; j++)
            for (int r = 0; r < H; r++) {
                const size_t row = (size_t)j * H + r;
                bias[row] = (double)w[n.bias[l * 8 + j] + r] + (double)w[n.bias[l * 8 + 4 + j] + r];
                for (int col = 0; col < in; col++)
                    W[row * in + col] = op(n, w[n.mat[l * 8 + j] + (size_t)r * in + col]);
                for (int col = 0; col < H; col++)
                    R[row * H + col] = op(n, w[n.mat[l * 8 + 4 + j] + (size_t)r * H + col]);
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
    n->mat.assign((size_t)n->L * 8, 0);
    n->bias.assign((size_t)n->L * 8, 0);
    static const int mat_order[8] = {4, 5, 6, 7, 0, 1, 2, 3};
    size_t at = 0;
    for (int l = 0; l < n->L; l++) {
        for (int lin = 7; lin >= 0; lin--) n->bias[l * 8 + lin] = at, at += up((size_t)n->H);
        for (int lin : mat_order) {
            n->mat[l * 8 + lin] = at;
            at += up((size_t)n->H * sk_emu_lstm_cols(*n, l, lin));
        }
    }
    n->weight_floats = at;
}

int sk_emu_lstm_cols(const sk_emu_lstm &n, int l, int lin) { return lin < 4 && l == 0 ? n.E : n.H; }

size_t sk_emu_lstm_work_bytes(const sk_emu_lstm &n, bool training) {
    Work w(n);
    return training ? w.bytes_train : w.bytes_infer;
}

size_t sk_emu_lstm_reserve_bytes(const sk_emu_lstm &n) { return Reserve(n).end * sizeof(float); }

void sk_emu_lstm_forward(const sk_emu_lstm &n, bool training, const float *w, const float *x, float *y,
                         const float *hx, const float *cx, float *hy, float *cy, void *work, void *reserve) {
    const int L = n.L, H = n.H, B = n.B, T = n.T, G = 4 * H;
    const Reserve rs(n);
    float *res = (float *)reserve;
    double *pre = (double *)work; // (4H) of the current (t, b)
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
            for (int r = 0; r < H; r++) c[(size_t)b * H + r] = cx ? cx[state_at(n, l, b) + r] : 0.0f;
        std::vector<float> xin(In), hin(H);
        for (int t = 0; t < T; t++)
            for (int b = 0; b < B; b++) {
                const float *xi = in_at(t, b), *hp = t ? out_at(t - 1, b) : (hx ? hx + state_at(n, l, b) : nullptr);
                for (int col = 0; col < In; col++) xin[col] = LayerWeights::op(n, xi[col]);
                for (int col = 0; col < H; col++) hin[col] = hp ? LayerWeights::op(n, hp[col]) : 0.0f;
                for (int row = 0; row < G; row++) {
                    double s = lw.bias[row];
                    const float *wr = &lw.W[(size_t)row * In], *rr = &lw.R[(size_t)row * H];
                    for (int col = 0; col < In; col++) s += (double)wr[col] * xin[col];
                    for (int col = 0; col < H; col++) s += (double)rr[col] * hin[col];
                    pre[row] = s;
                }
                float *h = out_at(t, b);
                float *gates = training ? res + rs.gates + step_at(n, l, t, b, G) : nullptr;
                for (int r = 0; r < H; r++) {
                    const float i = (float)sigmoid(pre[r]), f = (float)sigmoid(pre[H + r]),
                                g = (float)tanh(pre[2 * H + r]), o = (float)sigmoid(pre[3 * H + r]);
                    float &cv = c[(size_t)b * H + r];
                    cv = (float)((double)f * cv + (double)i * g);
                    h[r] = (float)(o * tanh((double)cv));
                    if (training) {
                        gates[r] = i, gates[H + r] = f, gates[2 * H + r] = g, gates[3 * H + r] = o;
                        res[rs.c + step_at(n, l, t, b, H) + r] = cv;
                    }
                }
            }
        for (int b = 0; b < B; b++)
            for (int r = 0; r < H; r++) {
                if (hy) hy[state_at(n, l, b) + r] = out_at(T - 1, b)[r];
                if (cy) cy[state_at(n, l, b) + r] = c[(size_t)b * H + r];
            }
    }
}

std::string sk_emu_lstm_backward_data(const sk_emu_lstm &n, const float *w, const float *dy, float *dx,
                                      const float *dhy, float *dhx, const float *cx, const float *dcy, float *dcx,
                                      void *work, void *reserve) {
    std::string why = check_stamp(n, reserve, kAfterForward);
    if (!why.empty()) return why;
    const int L = n.L, H = n.H, B = n.B, T = n.T, G = 4 * H;
    const Reserve rs(n);
    float *res = (float *)reserve;
    const Work wk(n);
    double *dh_next = (double *)((char *)work + wk.bytes_infer), *dc_next = dh_next + (size_t)B * H; // (B, H) each
    std::vector<double> dp(G), acc;
    std::vector<float> dpr(G);
    for (int l = L - 1; l >= 0; l--) {
        const LayerWeights lw(n, w, l);
        const int In = lw.in;
        for (int b = 0; b < B; b++)
            for (int r = 0; r < H; r++) {
                dh_next[(size_t)b * H + r] = dhy ? dhy[state_at(n, l, b) + r] : 0.0;
                dc_next[(size_t)b * H + r] = dcy ? dcy[state_at(n, l, b) + r] : 0.0;
            }
        for (int t = T - 1; t >= 0; t--)
            for (int b = 0; b < B; b++) {
                // dh_out: the gradient arriving at this layer's output, from dy or the layer above.
                const float *dh_out = l == L - 1 ? dy + data_at(n, b, t, H) : slab(n, work, l + 1) + step_at(n, 0, t, b, H);
                float *d_in = l == 0 ? dx + data_at(n, b, t, n.E) : slab(n, work, l) + step_at(n, 0, t, b, H);
                const float *gt = res + rs.gates + step_at(n, l, t, b, G), *cc = res + rs.c + step_at(n, l, t, b, H);
                const float *cp = t ? res + rs.c + step_at(n, l, t - 1, b, H) : (cx ? cx + state_at(n, l, b) : nullptr);
                for (int r = 0; r < H; r++) {
                    const double i = gt[r], f = gt[H + r], g = gt[2 * H + r], o = gt[3 * H + r];
                    const double tc = tanh((double)cc[r]), cprev = cp ? cp[r] : 0.0;
                    const double dh = (double)dh_out[r] + dh_next[(size_t)b * H + r];
                    const double dc = dc_next[(size_t)b * H + r] + dh * o * (1.0 - tc * tc);
                    dp[r] = dc * g * i * (1.0 - i);
                    dp[H + r] = dc * cprev * f * (1.0 - f);
                    dp[2 * H + r] = dc * i * (1.0 - g * g);
                    dp[3 * H + r] = dh * tc * o * (1.0 - o);
                    dc_next[(size_t)b * H + r] = dc * f;
                }
                float *store = res + rs.dgates + step_at(n, l, t, b, G);
                for (int row = 0; row < G; row++) {
                    store[row] = (float)dp[row];
                    dpr[row] = LayerWeights::op(n, store[row]);
                }
                // dh_{t-1} = R^T dgates, d_input = W^T dgates.
                acc.assign((size_t)In + H, 0.0);
                for (int row = 0; row < G; row++) {
                    const double d = dpr[row];
                    const float *wr = &lw.W[(size_t)row * In], *rr = &lw.R[(size_t)row * H];
                    for (int col = 0; col < In; col++) acc[col] += (double)wr[col] * d;
                    for (int col = 0; col < H; col++) acc[In + col] += (double)rr[col] * d;
                }
                for (int col = 0; col < In; col++) d_in[col] = (float)acc[col];
                for (int col = 0; col < H; col++) dh_next[(size_t)b * H + col] = (float)acc[In + col];
            }
        for (int b = 0; b < B; b++)
            for (int r = 0; r < H; r++) {
                if (dhx) dhx[state_at(n, l, b) + r] = (float)dh_next[(size_t)b * H + r];
                if (dcx) dcx[state_at(n, l, b) + r] = (float)dc_next[(size_t)b * H + r];
            }
    }
    stamp(n, reserve, kAfterBackwardData);
    return "";
}

std::string sk_emu_lstm_backward_weights(const sk_emu_lstm &n, bool add, const float *x, const float *hx,
                                         const float *y, float *dw, const void *reserve) {
    std::string why = check_stamp(n, reserve, kAfterBackwardData);
    if (!why.empty()) return why;
    const int L = n.L, H = n.H, B = n.B, T = n.T, G = 4 * H;
    const Reserve rs(n);
    const float *res = (const float *)reserve;
    for (int l = 0; l < L; l++) {
        const int In = sk_emu_lstm_cols(n, l, 0);
        auto in_at = [&](int t, int b) {
            return l == 0 ? x + data_at(n, b, t, n.E) : res + rs.h + step_at(n, l - 1, t, b, H);
        };
        auto out_at = [&](int t, int b) { return l == L - 1 ? y + data_at(n, b, t, H) : res + rs.h + step_at(n, l, t, b, H); };
        std::vector<double> gW((size_t)G * In, 0.0), gR((size_t)G * H, 0.0), gb(G, 0.0);
        std::vector<float> xin(In), hin(H);
        for (int t = 0; t < T; t++)
            for (int b = 0; b < B; b++) {
                const float *xi = in_at(t, b), *hp = t ? out_at(t - 1, b) : (hx ? hx + state_at(n, l, b) : nullptr);
                const float *d = res + rs.dgates + step_at(n, l, t, b, G);
                for (int col = 0; col < In; col++) xin[col] = LayerWeights::op(n, xi[col]);
                for (int col = 0; col < H; col++) hin[col] = hp ? LayerWeights::op(n, hp[col]) : 0.0f;
                for (int row = 0; row < G; row++) {
                    gb[row] += d[row]; // a reduction, not a matrix product: no TF32
                    const double dr = LayerWeights::op(n, d[row]);
                    double *wr = &gW[(size_t)row * In], *rr = &gR[(size_t)row * H];
                    for (int col = 0; col < In; col++) wr[col] += dr * xin[col];
                    for (int col = 0; col < H; col++) rr[col] += dr * hin[col];
                }
            }
        auto put = [&](size_t at, double g) { dw[at] = (float)(add ? (double)dw[at] + g : g); };
        for (int j = 0; j < 4; j++)
            for (int r = 0; r < H; r++) {
                const size_t row = (size_t)j * H + r;
                for (int col = 0; col < In; col++) put(n.mat[l * 8 + j] + (size_t)r * In + col, gW[row * In + col]);
                for (int col = 0; col < H; col++) put(n.mat[l * 8 + 4 + j] + (size_t)r * H + col, gR[row * H + col]);
                put(n.bias[l * 8 + j] + r, gb[row]); // b_W and b_R get the same gradient
                put(n.bias[l * 8 + 4 + j] + r, gb[row]);
            }
    }
    return "";
}
