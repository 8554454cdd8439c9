// test_cudnn_emu_lstm.cpp: the emulated cuDNN's arithmetic (cudnn_emu_lstm.cpp) for each cell
// it models (CUDNN_LSTM, CUDNN_GRU, CUDNN_RNN_TANH) against central differences of its own forward, in host memory (no emulated runtime needed):
// every weight and bias, x, hx and (the LSTM's) cx, for batch-major and sequence-major data,
// with the gradient flowing in through y, hy and cy. Also: the weight-space padding is never read
// (NaN there) nor written, backward weights adds into dw, backward weights refuses a
// reserve space that backward data has not written, and TF32 operands change the result
// by about TF32's precision and no more.
// defines: main
//
// Tolerance: |analytic - numeric| <= 1e-4 + 1e-3 |numeric|. The forward stores fp32, so the
// loss (O(1)) carries ~1e-7 rounding; over a step of 2 eps = 1e-2 that is ~1e-5, and the
// truncation error of the central difference is O(eps^2) ~ 1e-5 times the third
// derivative; a wrong gate or a missing term is off by O(0.1) (dropping c_{t-1} from the
// forget gate's gradient fails hx and cx by over 100 times the tolerance).
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <random>
#include <vector>

#include "cudnn_emu_lstm.h"

namespace {

int g_failures = 0;

void expect(bool ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n", what);
        g_failures++;
    }
}

struct Case {
    sk_emu_lstm n;
    std::vector<float> w, x, hx, cx, ry, rh, rc; // rh, rc: the loss's weights of hy, cy
    std::vector<char> is_param;                  // w element belongs to a matrix or bias
    std::vector<unsigned char> work, reserve;
};

size_t nx(const sk_emu_lstm &n) { return (size_t)n.B * n.T * n.E; }
size_t ny(const sk_emu_lstm &n) { return (size_t)n.B * n.T * n.H; }
size_t ns(const sk_emu_lstm &n) { return (size_t)n.L * n.B * n.H; }

bool has_c(const sk_emu_lstm &n) { return n.mode == 2; } // CUDNN_LSTM: the other cells have no c

Case make(int mode, int L, int H, int E, int B, int T, bool batch_major, unsigned seed) {
    Case c;
    c.n.L = L, c.n.H = H, c.n.E = E, c.n.B = B, c.n.T = T, c.n.batch_major = batch_major, c.n.mode = mode;
    sk_emu_lstm_plan(&c.n);
    const int ids = 2 * c.n.G;
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-0.6f, 0.6f);
    c.w.assign(c.n.weight_floats, NAN); // padding stays NaN: reading it would poison the result
    c.is_param.assign(c.n.weight_floats, 0);
    for (int l = 0; l < L; l++)
        for (int lin = 0; lin < ids; lin++) {
            const size_t m = c.n.mat[l * ids + lin], cols = (size_t)sk_emu_lstm_cols(c.n, l, lin);
            for (size_t k = 0; k < (size_t)H * cols; k++) c.w[m + k] = u(rng), c.is_param[m + k] = 1;
            for (int r = 0; r < H; r++)
                c.w[c.n.bias[l * ids + lin] + r] = u(rng), c.is_param[c.n.bias[l * ids + lin] + r] = 1;
        }
    auto fill = [&](std::vector<float> &v, size_t k) {
        v.resize(k);
        for (float &e : v) e = 1.5f * u(rng);
    };
    fill(c.x, nx(c.n)), fill(c.hx, ns(c.n)), fill(c.cx, ns(c.n));
    fill(c.ry, ny(c.n)), fill(c.rh, ns(c.n)), fill(c.rc, ns(c.n));
    c.work.resize(sk_emu_lstm_work_bytes(c.n, true));
    c.reserve.resize(sk_emu_lstm_reserve_bytes(c.n));
    return c;
}

// sum(y * ry) + sum(hy * rh) + sum(cy * rc) of an inference forward; work filled with NaN
// first (it is scratch), and the outputs too (they must all be written).
double loss(Case &c, std::vector<float> *y_out = nullptr) {
    std::vector<float> y(ny(c.n), NAN), hy(ns(c.n), NAN), cy(ns(c.n), NAN);
    memset(c.work.data(), 0xff, c.work.size());
    sk_emu_lstm_forward(c.n, false, c.w.data(), c.x.data(), y.data(), c.hx.data(), c.cx.data(), hy.data(), cy.data(),
                        c.work.data(), nullptr);
    double s = 0;
    for (size_t k = 0; k < y.size(); k++) s += (double)y[k] * c.ry[k];
    for (size_t k = 0; k < hy.size(); k++) s += (double)hy[k] * c.rh[k] + (has_c(c.n) ? (double)cy[k] * c.rc[k] : 0.0);
    if (y_out) *y_out = y;
    return s;
}

// Compares analytic[k] with the central difference of loss() in v[k], for every k.
void check_grad(Case &c, std::vector<float> &v, const std::vector<float> &analytic, const std::vector<char> *mask,
                const char *what) {
    const float eps = 5e-3f;
    double worst = 0;
    size_t worst_k = 0, checked = 0;
    for (size_t k = 0; k < v.size(); k++) {
        if (mask && !(*mask)[k]) continue;
        const float keep = v[k];
        v[k] = keep + eps;
        const double up = loss(c);
        v[k] = keep - eps;
        const double down = loss(c);
        v[k] = keep;
        const double num = (up - down) / (2.0 * eps), err = fabs(analytic[k] - num) / (1e-4 + 1e-3 * fabs(num));
        if (!(err <= worst)) worst = err, worst_k = k;
        checked++;
    }
    printf("%-28s %5zu values, worst |err| / tol = %.3f (at %zu)\n", what, checked, worst, worst_k);
    expect(worst <= 1.0 && checked > 0, what);
}

void run(Case c, const char *name) {
    printf("%s (mode %d): L=%d H=%d E=%d B=%d T=%d %s-major\n", name, c.n.mode, c.n.L, c.n.H, c.n.E, c.n.B, c.n.T,
           c.n.batch_major ? "batch" : "sequence");
    std::vector<float> y_inf;
    loss(c, &y_inf);
    // Training forward: the same y; then backward data with dy = ry, dhy = rh, dcy = rc.
    std::vector<float> y(ny(c.n), NAN), dx(nx(c.n), NAN), dhx(ns(c.n), NAN), dcx(ns(c.n), NAN);
    memset(c.reserve.data(), 0xff, c.reserve.size());
    memset(c.work.data(), 0xff, c.work.size());
    sk_emu_lstm_forward(c.n, true, c.w.data(), c.x.data(), y.data(), c.hx.data(), c.cx.data(), nullptr, nullptr,
                        c.work.data(), c.reserve.data());
    expect(memcmp(y.data(), y_inf.data(), y.size() * sizeof(float)) == 0, "training and inference forward agree");
    std::vector<float> dw(c.n.weight_floats, NAN);
    for (size_t k = 0; k < dw.size(); k++)
        if (c.is_param[k]) dw[k] = 0.25f;
    expect(!sk_emu_lstm_backward_weights(c.n, true, c.x.data(), c.hx.data(), y.data(), dw.data(), c.reserve.data())
                .empty(),
           "backward weights refuses a reserve space without backward data");
    memset(c.work.data(), 0xff, c.work.size());
    std::string why = sk_emu_lstm_backward_data(c.n, c.w.data(), y.data(), c.ry.data(), dx.data(), c.hx.data(),
                                                c.rh.data(), dhx.data(), c.cx.data(), c.rc.data(), dcx.data(),
                                                c.work.data(), c.reserve.data());
    expect(why.empty(), "backward data runs after a training forward");
    why = sk_emu_lstm_backward_weights(c.n, true, c.x.data(), c.hx.data(), y.data(), dw.data(), c.reserve.data());
    expect(why.empty(), "backward weights runs after backward data");
    bool pad_kept = true;
    for (size_t k = 0; k < dw.size(); k++) {
        if (!c.is_param[k]) pad_kept &= std::isnan(dw[k]);
        else dw[k] -= 0.25f; // the gradient, if it was added
    }
    expect(pad_kept, "weight-space padding left alone by backward weights");
    check_grad(c, c.w, dw, &c.is_param, "weights and biases");
    check_grad(c, c.x, dx, nullptr, "x");
    check_grad(c, c.hx, dhx, nullptr, "hx");
    if (has_c(c.n)) check_grad(c, c.cx, dcx, nullptr, "cx");
    // TF32: within a few TF32 ulps (2^-11 relative per operand) of the exact forward, not equal.
    Case t = c;
    t.n.tf32 = true;
    std::vector<float> y_tf32;
    loss(t, &y_tf32);
    double dmax = 0;
    for (size_t k = 0; k < y_tf32.size(); k++) dmax = fmax(dmax, fabs((double)y_tf32[k] - y_inf[k]));
    printf("%-28s max |y_tf32 - y| = %.2e\n", "TF32 operands", dmax);
    expect(dmax > 0 && dmax < 2e-3, "TF32 forward within TF32 precision of the exact one");
}

} // namespace

int main() {
    for (int mode : {2, 3, 1}) { // CUDNN_LSTM, CUDNN_GRU, CUDNN_RNN_TANH
        run(make(mode, 2, 3, 2, 2, 4, true, 1), "two layers");
        run(make(mode, 1, 5, 3, 3, 3, false, 2), "one layer");
        run(make(mode, 3, 4, 4, 1, 2, true, 3), "three layers");
    }
    if (g_failures) fprintf(stderr, "%d check(s) failed\n", g_failures);
    return g_failures ? 1 : 0;
}
