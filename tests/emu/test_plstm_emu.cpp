// test_plstm_emu.cpp: the persistent LSTM kernels (kernels/lstm_persistent_kernels.cuh, the
// code the GPU runs) executed on the CPU by tests/emu/cuda_emu.h, one fiber per GPU thread,
// against the CPU backend's LSTM (src/cpu/layer_cpu.c, itself checked against PyTorch and
// finite differences), in every operand mode: fp32 and bf16 on CUDA cores, bf16 and TF32 on
// (emulated) tensor cores.
//
// Per case: a training forward (y, the final state, c and the gates of every step and layer,
// dropout between layers with the CPU's hash masks) and the backward data pass (the gate
// pre-activation gradients dg of every layer and step), from random weights, inputs, initial
// state and output gradient. Shapes cover H not a multiple of 32 or of the block's units, a
// last block with fewer units, B = 1, batch groups past B, staged batch chunks smaller than B
// (a small shared-memory budget), L = 1 and 4, len = 1 and len < T, and a data-parallel
// stream offset. Plans come from sk_plstm_plan_shape for a device of a few SMs, so grids stay
// small enough to emulate.
// Checks:
//  1. Every output within its tolerance of the CPU (tests/gpu/precision_tolerance.h: fp32
//     from summation order and the two sides' activation approximations; TF32 and bf16 from
//     operand unit roundoff; the derivation is there). The worst element of each is printed.
//  2. Buffers start as NaN wherever the kernels must write before they read (and shared
//     memory starts as NaN bytes), so a read of something never written shows as a NaN.
//  3. Race-free: the whole case runs in both schedules (threads in ascending, then in
//     descending (block, thread) order between barriers) and every buffer must agree bit for
//     bit; a missing __syncthreads or grid.sync makes a result depend on who ran first.
//  4. No deadlock (every barrier reached by all it spans) and no write past the shared memory
//     the plan asked for (cuda_emu's checks).
//  5. The pad rows the kernels promise: dg rows (b, len) stay zero, xin rows (b, len) of the
//     layers above the first are written zero.
//  6. Inference (train = 0): no dropout (against the CPU without it), c and the gates never
//     written, and where the case has no dropout the training forward's y, hy, cy bit for bit.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "../../bench/kernels/lstm_persistent_cost.h"
#include "lstm_persistent_kernels.cuh"

extern "C" {
#include "cpu/layer_cpu.h"
#include "gpu/precision_tolerance.h"
#include "test_util.h"
}

using std::vector;

namespace {

struct Case {
    const char *name;
    int E, H, L, B, T, len;
    float p;           // dropout between layers
    int stream_offset; // data-parallel: the global stream of b = 0
    int sms;           // the emulated device's SMs (the plan cuts the grid for these)
    int optin_kib;     // shared memory a block may have (227 on an H100)
    bool may_not_fit;  // a real device's plan: an operand mode may not fit (fp32 at config B)
};

uint64_t g_rng = 0x5eed;
// Each case draws from its own stream, seeded by its name (FNV-1a), and every operand mode of
// a case gets the same inputs: changing one case leaves every other case's digests alone.
void seed_for(const char *name) {
    g_rng = 1469598103934665603ull;
    for (const char *p = name; *p; p++) g_rng = (g_rng ^ (unsigned char)*p) * 1099511628211ull;
}
float uniform(float lo, float hi) {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (float)((g_rng >> 40) * (1.0 / 16777216.0));
}
void fill(vector<float> &v, float lo, float hi) {
    for (float &x : v) x = uniform(lo, hi);
}

// What one run of the kernels leaves behind (every buffer they write).
struct Outputs {
    vector<float> y, hy, cy, hh, xin, cs, gates, dg;
    vector<uint16_t> hh16, xin16, dg16; // bf16 operands: the staging copies
};

struct Problem {
    Case c;
    sk_plstm_plan plan;
    vector<float> w;               // canonical weights of every layer
    vector<sk_plstm_layer> layers; // offsets into w
    vector<float> x, hx, cx, dy;
    vector<uint64_t> keys; // dropout key of site k
};

Problem make_problem(const Case &c, sk_plstm_operands op, int *ok) {
    Problem P;
    P.c = c;
    *ok = sk_plstm_plan_shape(&P.plan, c.sms, c.optin_kib << 10, 9, c.B, c.E, c.H, c.L, op);
    if (!*ok) {
        fprintf(c.may_not_fit ? stdout : stderr, "%s: no plan: %s\n", c.name, P.plan.why_not);
        return P;
    }
    P.plan.supported = 1;
    const int H = c.H;
    const float k = 1.0f / sqrtf((float)H); // PyTorch's LSTM initialization, doubled below
    size_t off = 0;
    for (int l = 0; l < c.L; l++) {
        sk_plstm_layer ly;
        ly.in = l == 0 ? c.E : H;
        ly.w_ih = off, off += (size_t)4 * H * ly.in;
        ly.w_hh = off, off += (size_t)4 * H * H;
        ly.b_ih = off, off += (size_t)4 * H;
        ly.b_hh = off, off += (size_t)4 * H;
        P.layers.push_back(ly);
    }
    P.w.resize(off);
    seed_for(c.name);
    fill(P.w, -2 * k, 2 * k); // larger than PyTorch's, so the gates leave their linear range
    P.x.resize((size_t)c.B * c.len * c.E), fill(P.x, -1, 1);
    P.hx.resize((size_t)c.L * c.B * H), fill(P.hx, -0.5f, 0.5f);
    P.cx.resize((size_t)c.L * c.B * H), fill(P.cx, -0.5f, 0.5f);
    P.dy.resize((size_t)c.B * c.len * H), fill(P.dy, -1, 1);
    for (int l = 0; l < c.L; l++) P.keys.push_back(sk_dropout_key(1234, 77, l));
    return P;
}

// A training forward and the backward (train), or an inference forward alone.
// Block 0's counts in the last forward and backward launch (the cost model's check, 7.).
sk_emu_counts g_fwd0, g_bwd0;

template <typename T, bool MMA> void launch(const Problem &P, Outputs &o, bool reverse, bool train, int *failed) {
    const Case &c = P.c;
    const int H = c.H, L = c.L, B = c.B, Tw = c.T;
    const float NaN = nanf("");
    o.y.assign((size_t)B * c.len * H, NaN);
    o.hy.assign((size_t)L * B * H, NaN), o.cy.assign((size_t)L * B * H, NaN);
    o.hh.assign((size_t)L * B * (Tw + 1) * H, NaN), o.xin.assign((size_t)L * B * (Tw + 1) * H, NaN);
    o.cs.assign((size_t)L * B * Tw * H, NaN), o.gates.assign((size_t)L * B * Tw * 4 * H, NaN);
    o.dg.assign((size_t)L * B * (Tw + 1) * 4 * H, NaN);
    const bool bf16 = sizeof(T) == 2; // bf16 copies, NaN (0xffff) until written
    o.hh16.assign(bf16 ? o.hh.size() : 0, 0xffff), o.xin16.assign(bf16 ? o.xin.size() : 0, 0xffff);
    o.dg16.assign(bf16 ? o.dg.size() : 0, 0xffff);
    for (int k = 0; k < L; k++) // the caller's promise: pad rows (b, len) of dg are zero
        for (int b = 0; b < B; b++)
            memset(&o.dg[(((size_t)k * B * (Tw + 1)) + (size_t)b * (c.len + 1) + c.len) * 4 * H], 0,
                   4 * H * sizeof(float));
    sk_plstm_args a;
    memset(&a, 0, sizeof a);
    a.B = B, a.T = Tw, a.len = c.len, a.E = c.E, a.H = H, a.L = L;
    a.plan = P.plan;
    a.w = P.w.data(), a.layers = P.layers.data(), a.x = P.x.data();
    a.y = o.y.data(), a.hx = P.hx.data(), a.cx = P.cx.data(), a.hy = o.hy.data(), a.cy = o.cy.data();
    a.hh = o.hh.data(), a.xin = o.xin.data(), a.cs = o.cs.data(), a.gates = o.gates.data(), a.dg = o.dg.data();
    a.dy = P.dy.data();
    if (bf16) a.hh16 = o.hh16.data(), a.xin16 = o.xin16.data(), a.dg16 = o.dg16.data();
    a.train = train, a.p = c.p, a.keep_scale = c.p > 0 ? 1.0f / (1.0f - c.p) : 1.0f;
    a.keys = P.keys.data(), a.stream_offset = c.stream_offset;
    sk_emu_config cfg;
    cfg.grid = (unsigned)P.plan.blocks, cfg.block = SK_PLSTM_THREADS, cfg.cooperative = true, cfg.reverse = reverse;
    cfg.dynamic_smem = P.plan.smem_fwd;
    std::string err = sk_emu_launch(cfg, [&] { sk_plstm::plstm_forward_kernel<T, MMA>(a); });
    g_fwd0 = sk_emu_block_counts(0);
    if (err.empty() && train) {
        cfg.dynamic_smem = P.plan.smem_bwd;
        err = sk_emu_launch(cfg, [&] { sk_plstm::plstm_backward_kernel<T, MMA>(a); });
        g_bwd0 = sk_emu_block_counts(0);
    }
    if (!err.empty()) {
        fprintf(stderr, "  %s: %s\n", c.name, err.c_str());
        (*failed)++;
    }
}

// The CPU backend's forward and backward over the same window, in the kernels' layouts.
struct Reference {
    vector<float> y, hy, cy, cs, gates, dg; // cs, gates: (L, B, len, .); dg: (L, B, len, 4H)
};

Reference reference(const Problem &P) {
    const Case &c = P.c;
    const int H = c.H, L = c.L, B = c.B, len = c.len, H4 = 4 * H;
    Reference R;
    R.y.resize((size_t)B * len * H), R.hy.resize((size_t)L * B * H), R.cy.resize((size_t)L * B * H);
    R.cs.resize((size_t)L * B * len * H), R.gates.resize((size_t)L * B * len * H4);
    R.dg.resize((size_t)L * B * len * H4);
    // Time-major rows (t*B + b) on the CPU.
    vector<vector<float>> in(L), gates(L), tanh_c(L), hbuf(L), cbuf(L), mask(L);
    in[0].resize((size_t)len * B * c.E);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < len; t++)
            memcpy(&in[0][((size_t)t * B + b) * c.E], &P.x[((size_t)b * len + t) * c.E], c.E * sizeof(float));
    for (int k = 0; k < L; k++) {
        const int inw = k == 0 ? c.E : H;
        const sk_plstm_layer &ly = P.layers[k];
        sk_layer_cpu cl = sk_layer_cpu_make(SK_CELL_LSTM, B, H, inw, 1,
                                            &P.w[ly.w_ih], &P.w[ly.w_hh], &P.w[ly.b_ih], &P.w[ly.b_hh]);
        gates[k].resize((size_t)len * B * H4), tanh_c[k].resize((size_t)len * B * H);
        hbuf[k].resize((size_t)(len + 1) * B * H), cbuf[k].resize((size_t)(len + 1) * B * H);
        memcpy(hbuf[k].data(), &P.hx[(size_t)k * B * H], (size_t)B * H * sizeof(float));
        memcpy(cbuf[k].data(), &P.cx[(size_t)k * B * H], (size_t)B * H * sizeof(float));
        float *const states[2] = {hbuf[k].data(), cbuf[k].data()};
        sk_layer_cpu_forward(&cl, len, in[k].data(), gates[k].data(), tanh_c[k].data(), states);
        if (k + 1 < L) { // dropout site k: hash.h's masks, indexed in the (B, len, H) order
            in[k + 1].resize((size_t)len * B * H), mask[k].resize((size_t)len * B * H);
            for (int t = 0; t < len; t++)
                for (int b = 0; b < B; b++)
                    for (int j = 0; j < H; j++) {
                        const size_t r = ((size_t)t * B + b) * H + j;
                        const uint64_t idx = ((uint64_t)(c.stream_offset + b) * len + t) * H + j;
                        float mk = 1.0f;
                        if (c.p > 0) mk = sk_hash_uniform(P.keys[k], idx) >= c.p ? 1.0f / (1.0f - c.p) : 0.0f;
                        mask[k][r] = mk;
                        in[k + 1][r] = hbuf[k][(size_t)B * H + r] * mk;
                    }
        }
        for (int b = 0; b < B; b++) {
            memcpy(&R.hy[((size_t)k * B + b) * H], &hbuf[k][((size_t)len * B + b) * H], H * sizeof(float));
            memcpy(&R.cy[((size_t)k * B + b) * H], &cbuf[k][((size_t)len * B + b) * H], H * sizeof(float));
            for (int t = 0; t < len; t++) {
                const size_t row = (size_t)t * B + b, krow = ((size_t)k * B + b) * len + t;
                memcpy(&R.cs[krow * H], &cbuf[k][(row + B) * H], H * sizeof(float));
                memcpy(&R.gates[krow * H4], &gates[k][row * H4], H4 * sizeof(float));
                if (k == L - 1) memcpy(&R.y[((size_t)b * len + t) * H], &hbuf[k][(row + B) * H], H * sizeof(float));
            }
        }
    }
    // Backward, top down: dh_out of layer k-1 is layer k's dx through site k-1's mask.
    vector<float> dh_out((size_t)len * B * H), dgates((size_t)len * B * H4), dh((size_t)B * H), dc(2 * (size_t)B * H);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < len; t++)
            memcpy(&dh_out[((size_t)t * B + b) * H], &P.dy[((size_t)b * len + t) * H], H * sizeof(float));
    for (int k = L - 1; k >= 0; k--) {
        const int inw = k == 0 ? c.E : H;
        const sk_plstm_layer &ly = P.layers[k];
        sk_layer_cpu cl = sk_layer_cpu_make(SK_CELL_LSTM, B, H, inw, 1,
                                            &P.w[ly.w_ih], &P.w[ly.w_hh], &P.w[ly.b_ih], &P.w[ly.b_hh]);
        vector<float> gw_ih((size_t)H4 * inw), gw_hh((size_t)H4 * H), gb_ih(H4), gb_hh(H4), dx((size_t)len * B * inw);
        sk_layer_cpu_grads g = {gw_ih.data(), gw_hh.data(), gb_ih.data(), gb_hh.data()};
        sk_layer_cpu_scratch sc = {dgates.data(), NULL, dh.data(), dc.data()};
        float *const states[2] = {hbuf[k].data(), cbuf[k].data()};
        sk_layer_cpu_backward(&cl, len, in[k].data(), gates[k].data(), tanh_c[k].data(), states, dh_out.data(), &sc,
                              &g, k > 0 ? dx.data() : NULL);
        for (int b = 0; b < B; b++)
            for (int t = 0; t < len; t++)
                memcpy(&R.dg[(((size_t)k * B + b) * len + t) * H4], &dgates[((size_t)t * B + b) * H4],
                       H4 * sizeof(float));
        if (k > 0)
            for (size_t r = 0; r < dh_out.size(); r++) dh_out[r] = dx[r] * mask[k - 1][r];
    }
    return R;
}

// The kernels' rows (b, t) of a (L, B, rows_per_b, width) buffer, packed to (L, B, len, width).
vector<float> rows_of(const vector<float> &buf, const Case &c, int rows_per_b, int row_shift, int width) {
    vector<float> out((size_t)c.L * c.B * c.len * width);
    for (int k = 0; k < c.L; k++)
        for (int b = 0; b < c.B; b++)
            for (int t = 0; t < c.len; t++) {
                const size_t slab = (size_t)k * c.B * (rows_per_b == c.len + 1 ? c.T + 1 : c.T);
                const size_t src = (slab + (size_t)b * rows_per_b + t + row_shift) * width;
                memcpy(&out[(((size_t)k * c.B + b) * c.len + t) * width], &buf[src], width * sizeof(float));
            }
    return out;
}

double max_abs(const vector<float> &v) {
    double m = 0;
    for (float x : v) m = fmax(m, fabs((double)x));
    return m;
}

bool bitwise_equal(const vector<float> &a, const vector<float> &b) {
    return a.size() == b.size() && memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

template <typename T, bool MMA> void run_case(const Case &c, sk_plstm_operands op, sk_precision prec) {
    static const char *names[] = {"fp32", "bf16", "bf16 tensor cores", "tf32 tensor cores"};
    int ok = 0;
    Problem P = make_problem(c, op, &ok);
    CHECK(ok || c.may_not_fit);
    if (!ok) return;
    printf("%s, %s: E=%d H=%d L=%d B=%d T=%d len=%d p=%.2f offset=%d; plan U=%d blocks=%d bc=%d/%d smem=%zu/%zu\n",
           c.name, names[op], c.E, c.H, c.L, c.B, c.T, c.len, c.p, c.stream_offset, P.plan.U, P.plan.blocks,
           P.plan.bc_fwd, P.plan.bc_bwd, P.plan.smem_fwd, P.plan.smem_bwd);
    Outputs up, down;
    int failed = 0;
    const uint64_t copies0 = sk_emu_cp_async_count();
    launch<T, MMA>(P, up, false, true, &failed);
    launch<T, MMA>(P, down, true, true, &failed);
    CHECK(failed == 0);
    if (failed) return;
    // 3. Both schedules, every buffer, bit for bit.
    const vector<float> *bufs_up[] = {&up.y, &up.hy, &up.cy, &up.hh, &up.xin, &up.cs, &up.gates, &up.dg};
    const vector<float> *bufs_down[] = {&down.y, &down.hy, &down.cy, &down.hh, &down.xin, &down.cs, &down.gates, &down.dg};
    const char *buf_names[] = {"y", "hy", "cy", "hh", "xin", "cs", "gates", "dg"};
    for (int i = 0; i < 8; i++)
        if (!bitwise_equal(*bufs_up[i], *bufs_down[i])) {
            fprintf(stderr, "  %s: %s differs between the two schedules (a race)\n", c.name, buf_names[i]);
            CHECK(0);
        }
    // A digest of every result, so that a change meant to keep the arithmetic (a new memory
    // layout, a copy made elsewhere) can be compared bit for bit with the run before it.
    uint64_t digest = 1469598103934665603ull; // FNV-1a
    for (const vector<float> *v : bufs_up)
        for (const unsigned char *q = (const unsigned char *)v->data(), *e = q + v->size() * sizeof(float); q < e; q++)
            digest = (digest ^ *q) * 1099511628211ull;
    printf("  results digest %016llx; %llu cp.async copies\n", (unsigned long long)digest,
           (unsigned long long)(sk_emu_cp_async_count() - copies0));
    // 7. The cost model (bench/kernels/lstm_persistent_cost.h) against what block 0 (layer 0, units
    // [0, U)) did, exactly: a grid.sync per chain step, its __syncthreads (one after setup,
    // then the model's per working step) and mma.sync; with 4-byte operands the bytes it
    // staged (the model's reads less the biases, which are plain loads the emulator does not see).
    {
        const sk_plstm_cost f = sk_plstm_cost_forward_layer(&P.plan, c.B, c.E, c.H, 1);
        const sk_plstm_cost b = sk_plstm_cost_backward(&P.plan, c.B, c.H, c.L, c.T);
        const uint64_t steps = (uint64_t)(c.len + c.L - 1), n = (uint64_t)c.len;
        const uint64_t chunks = (uint64_t)((c.B + P.plan.bc_fwd - 1) / P.plan.bc_fwd);
        int bad = g_fwd0.grid_syncs != steps || g_bwd0.grid_syncs != steps;
        bad |= g_fwd0.block_barriers != 1 + n * (uint64_t)f.bar || g_bwd0.block_barriers != 1 + n * (uint64_t)b.bar;
        bad |= g_fwd0.mma != n * (uint64_t)f.mma || g_bwd0.mma != n * (uint64_t)b.mma;
        if (sizeof(T) == 4) bad |= g_fwd0.global_read_bytes != n * (uint64_t)(f.l2_rd - (double)chunks * 32 * P.plan.U);
        if (bad)
            fprintf(stderr,
                    "  %s: block 0 did fwd %llu grid syncs, %llu barriers, %llu mma, %llu bytes; bwd %llu, %llu, %llu;"
                    " the cost model says %llu, 1 + %llu x %.0f, %llu x %.0f, %llu x %.0f (+ biases); %llu, 1 + %llu x"
                    " %.0f, %llu x %.0f\n", c.name, (unsigned long long)g_fwd0.grid_syncs,
                    (unsigned long long)g_fwd0.block_barriers, (unsigned long long)g_fwd0.mma,
                    (unsigned long long)g_fwd0.global_read_bytes, (unsigned long long)g_bwd0.grid_syncs,
                    (unsigned long long)g_bwd0.block_barriers, (unsigned long long)g_bwd0.mma,
                    (unsigned long long)steps, (unsigned long long)n, f.bar, (unsigned long long)n, f.mma,
                    (unsigned long long)n, f.l2_rd, (unsigned long long)steps, (unsigned long long)n, b.bar,
                    (unsigned long long)n, b.mma);
        CHECK(!bad);
    }
    // 5. Pad rows.
    const int H = c.H, B = c.B;
    int pad_bad = 0;
    for (int k = 0; k < c.L; k++)
        for (int b = 0; b < B; b++)
            for (int j = 0; j < 4 * H; j++) {
                const size_t row = (size_t)k * B * (c.T + 1) + (size_t)b * (c.len + 1) + c.len;
                if (up.dg[row * 4 * H + j] != 0.0f) pad_bad++;
                if (k > 0 && j < H && up.xin[row * H + j] != 0.0f) pad_bad++;
            }
    if (pad_bad) fprintf(stderr, "  %s: %d pad-row elements are not zero\n", c.name, pad_bad);
    CHECK(pad_bad == 0);
    // 1. Against the CPU.
    const Reference R = reference(P);
    const precision_tol tol = precision_tol_of(prec);
    const vector<float> cs = rows_of(up.cs, c, c.len, 0, H), gates = rows_of(up.gates, c, c.len, 0, 4 * H);
    const vector<float> dg = rows_of(up.dg, c, c.len + 1, 0, 4 * H);
    struct {
        const char *what;
        const vector<float> &got, &ref;
        bool grad;
    } cmp[] = {{"y", up.y, R.y, false},     {"hy", up.hy, R.hy, false},          {"cy", up.cy, R.cy, false},
               {"c (every step)", cs, R.cs, false}, {"gates (every step)", gates, R.gates, false},
               {"dg (every step)", dg, R.dg, true}};
    for (auto &m : cmp) {
        const double scale = max_abs(m.ref);
        sk_test_compare(m.what, m.got.data(), m.ref.data(), m.ref.size(),
                        (m.grad ? tol.grad_atol : tol.fwd_atol) * scale, m.grad ? tol.grad_rtol : tol.fwd_rtol);
    }
    // 6. Inference (train = 0, as evaluation and sampling run it): no dropout, c and the
    // gates left alone, and without dropout the training forward's results bit for bit.
    Outputs inf;
    launch<T, MMA>(P, inf, false, false, &failed);
    CHECK(failed == 0);
    if (failed) return;
    int touched = 0;
    for (float v : inf.cs) touched += !isnan(v);
    for (float v : inf.gates) touched += !isnan(v);
    if (touched) fprintf(stderr, "  %s: an inference forward wrote %d elements of c or the gates\n", c.name, touched);
    CHECK(touched == 0);
    if (c.p == 0) {
        CHECK(bitwise_equal(inf.y, up.y) && bitwise_equal(inf.hy, up.hy) && bitwise_equal(inf.cy, up.cy));
    } else {
        Problem P0 = P;
        P0.c.p = 0;
        const Reference R0 = reference(P0);
        const double scale = max_abs(R0.y);
        sk_test_compare("y (inference)", inf.y.data(), R0.y.data(), R0.y.size(), tol.fwd_atol * scale, tol.fwd_rtol);
    }
}

void run_all(const Case &c) {
    run_case<float, false>(c, SK_PLSTM_FP32, SK_PRECISION_FP32);
    run_case<__nv_bfloat16, false>(c, SK_PLSTM_BF16, SK_PRECISION_BF16);
    run_case<__nv_bfloat16, true>(c, SK_PLSTM_BF16_MMA, SK_PRECISION_BF16);
    run_case<float, true>(c, SK_PLSTM_TF32_MMA, SK_PRECISION_TF32);
}

} // namespace

int main(void) {
    // name, E, H, L, B, T, len, p, stream offset, SMs, shared memory KiB
    const Case cases[] = {
        {"two layers, dropout, len < T", 7, 40, 2, 5, 8, 6, 0.25f, 0, 8, 227, false},
        {"H=33 (a short last block), B=1", 5, 33, 3, 1, 3, 3, 0.0f, 0, 6, 227, false},
        {"one layer, len=1, B=9", 11, 20, 1, 9, 1, 1, 0.0f, 0, 4, 227, false},
        {"four layers, dropout, offset", 3, 16, 4, 3, 4, 4, 0.5f, 3, 4, 227, false},
        {"batch chunks smaller than B", 6, 24, 2, 56, 3, 3, 0.1f, 0, 4, 27, false},
    };
    // SK_EMU_REAL_PLANS=1: also configurations A and B as an H100 cuts them (132 SMs, 227 KiB
    // per block), the plans a GPU runs for them, over a short window (minutes).
    const Case real[] = {
        {"config A, H100 plan", 128, 256, 2, 32, 2, 2, 0.2f, 0, 132, 227, true},
        {"config B, H100 plan", 256, 512, 4, 64, 2, 2, 0.2f, 0, 132, 227, true},
    };
    for (const Case &c : cases) run_all(c);
    // The staging's asynchronous path ran (rows whose ends share their alignment), not only
    // its element-by-element one.
    printf("cp.async copies in all: %llu\n", (unsigned long long)sk_emu_cp_async_count());
    CHECK(sk_emu_cp_async_count() > 0);
    const char *env = getenv("SK_EMU_REAL_PLANS");
    if (env && *env && strcmp(env, "0") != 0)
        for (const Case &c : real) run_all(c);
    return sk_test_done("test_plstm_emu");
}
