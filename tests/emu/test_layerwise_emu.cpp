// test_layerwise_emu.cpp: the layer-after-layer persistent LSTM kernels, with grid.sync
// (kernels/lstm_layerwise_kernels.cuh) and with thread-block clusters
// (lstm_layerwise_cluster_kernels.cuh), the code the GPU runs, executed on the CPU by
// tests/emu/cuda_emu.h, one fiber per GPU thread, in the sequence lstm_impl_persistent.cu
// launches them (the GEMMs between launches done here on the host): a training forward of
// every layer, then the backward data pass top layer first, dropout between the layers.
// Every instance: fp32 and bf16 operands, each on CUDA cores and on tensor cores (the emulated
// mma.sync: TF32 m16n8k8, bf16 m16n8k16), each exchange, and grid.sync with the whole batch in
// one tile and the staged rows in chunks of K (what the plan picks where W_hh does not fit
// 8-row tiles).
// Checks (the CPU backend's parity with these kernels is test_plstm_layerwise.sh's):
//  1. race-free: the whole sequence in both schedules (threads in ascending, then descending
//     order between barriers) leaves every buffer bit-identical; buffers start as NaN, so a
//     read of something never written shows;
//  2. the plan's synchronization: every block of every launch passes len grid syncs (one a
//     step), whatever its tile, and reads from global memory the way staging reads (cp.async,
//     __ldcg) its group's rows once a step, whole or in chunks: h_{t-1} (fp32 h_0, then
//     operands), dg(t+1) (none past the window); with clusters no grid sync, len cluster barriers forward (one
//     before the first step, one after each but the last), len + 1 backward, and nothing read
//     from global memory the way staging reads (cp.async, __ldcg) but the epilogue's prefetch:
//     h and the gate gradients come through the cluster's shared memory;
//  3. the forward against a double-precision LSTM computed here with the same masks: y, hy and
//     cy within 1e-5 of the tensor's scale + 1e-4 relative (fp32 sums in other orders), or
//     TF32's forward tolerance (tests/gpu/precision_tolerance.h: the operands' rounding);
//  4. the pad rows the weight GEMMs rely on: dg rows (b, len) stay zero, xin rows (b, len)
//     of the layer above are written zero;
//  5. clusters against grid.sync: the forward bit-identical (the same operands in the same
//     inner products, from the block's own shared memory instead of global memory), the gate
//     gradients within 1e-5 of their scale + 1e-4 relative (the cluster kernels add W_hh^T dg
//     slice by slice: another fp32 sum order) in fp32, the operands' tolerance in TF32 and bf16;
//  6. one tile in chunks against two whole: the forward and the gate gradients within those
//     tolerances (the chunks' sums are added in another order).
// Shapes: B = 11 in two batch groups (6 and 5 rows), len < T, a data-parallel stream offset; H = 13
// in slices of 5, 5 and 3 units (the cluster kernels' prefetch and push element by element; on
// tensor cores the lanes of the last 16-row tile past a block's rows read its last one:
// mma_dots' clamp) and H = 24 in slices of 8 (16-byte cp.async copies and pushes); at H = 13 also
// one group of 11 rows with slices of 3 units and the narrowest chunks (TF32: h in 8 + 5, dg in
// 6 x 8 + 4; bf16: h whole, dg in 3 x 16 + 4; CUDA cores 16 bytes a chunk).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "lstm_layerwise_cluster_kernels.cuh"

extern "C" {
#include "gpu/precision_tolerance.h"
#include "shakespeare/model.h"
#include "shakespeare/rng.h"
#include "test_util.h"
}

using std::vector;

namespace {

enum { V = 7, E = 5, L = 2, B = 11, T = 6, LEN = 5, SMS = 6, OFFSET = 3 };
int H = 13; // the shape's width: 13 (slices of 5, 5, 3: copies element by element) or 24 (of 8: 16-byte copies)
const float P = 0.4f;

struct Buffers {
    vector<float> hh, xin, cs, gates, dg, y, hy, cy, xproj, dxin;
    vector<uint16_t> hh16, dg16; // bf16 operands' copies
};

size_t pad(int k, int b, int t, int width) { return ((size_t)k * B * (T + 1) + (size_t)b * (LEN + 1) + t) * width; }

float keep(uint64_t key, int b, int t, int j) {
    return sk_hash_uniform(key, ((uint64_t)(OFFSET + b) * LEN + t) * H + j) >= P ? 1.0f / (1.0f - P) : 0.0f;
}

// out (rows, n) = in (rows, K, row stride K) x W^T, W (n, K) row-major: the projections' GEMM.
void gemm_nt(const float *in, int rows, int K, const float *W, int n, float *out) {
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < n; i++) {
            float s = 0.0f;
            for (int k = 0; k < K; k++) s += in[(size_t)r * K + k] * W[(size_t)i * K + k];
            out[(size_t)r * n + i] = s;
        }
}

// One whole sequence (forward of every layer, backward top first) in one schedule; every
// launch's grid syncs or cluster barriers checked.
Buffers run(const sk_plstm_lw_args &base, const vector<float> &w, const vector<sk_plstm_layer> &ly,
            const vector<float> &x, const vector<float> &dy, bool reverse, int *syncs_ok) {
    Buffers f;
    const size_t slab = (size_t)B * (T + 1);
    f.hh.assign(L * slab * H, NAN), f.xin.assign(L * slab * H, NAN), f.dg.assign(L * slab * 4 * H, NAN);
    f.cs.assign((size_t)L * B * T * H, NAN), f.gates.assign((size_t)L * B * T * 4 * H, NAN);
    f.y.assign((size_t)B * LEN * H, NAN), f.hy.assign((size_t)L * B * H, NAN), f.cy.assign(f.hy.size(), NAN);
    f.xproj.assign(slab * 4 * H, NAN), f.dxin.assign(slab * H, NAN);
    f.hh16.assign(L * slab * H, 0x7fc0), f.dg16.assign(L * slab * 4 * H, 0x7fc0); // bf16 NaN
    for (int k = 0; k < L; k++) // the pad rows the host clears before backward
        for (int b = 0; b < B; b++) memset(&f.dg[pad(k, b, LEN, 4 * H)], 0, sizeof(float) * 4 * H);
    sk_plstm_lw_args a = base;
    a.hh = f.hh.data(), a.xin = f.xin.data(), a.cs = f.cs.data(), a.gates = f.gates.data(), a.dg = f.dg.data();
    a.y = f.y.data(), a.hy = f.hy.data(), a.cy = f.cy.data(), a.xproj = f.xproj.data(), a.dxin = f.dxin.data();
    a.dy = dy.data();
    if (a.plan.operand_bytes == 2) a.hh16 = f.hh16.data(), a.dg16 = f.dg16.data();
    auto launch = [&](bool backward) {
        sk_emu_config cfg;
        cfg.grid = (unsigned)a.plan.blocks, cfg.block = SK_PLSTM_THREADS, cfg.reverse = reverse;
        cfg.cooperative = a.plan.cluster == 0, cfg.cluster = (unsigned)a.plan.cluster;
        cfg.dynamic_smem = backward ? a.plan.smem_bwd : a.plan.smem_fwd;
        const std::string err = sk_emu_launch(cfg, [&] {
            using namespace sk_plstm_lw;
            const bool half = a.plan.operand_bytes == 2, cl = a.plan.cluster > 0;
            if (backward && half && cl) a.plan.mma ? lw_backward_cluster_kernel<__nv_bfloat16, true>(a) : lw_backward_cluster_kernel<__nv_bfloat16, false>(a);
            else if (backward && cl) a.plan.mma ? lw_backward_cluster_kernel<float, true>(a) : lw_backward_cluster_kernel<float, false>(a);
            else if (half && cl) a.plan.mma ? lw_forward_cluster_kernel<__nv_bfloat16, true>(a) : lw_forward_cluster_kernel<__nv_bfloat16, false>(a);
            else if (cl) a.plan.mma ? lw_forward_cluster_kernel<float, true>(a) : lw_forward_cluster_kernel<float, false>(a);
            else if (backward && half) a.plan.mma ? lw_backward_kernel<__nv_bfloat16, true>(a) : lw_backward_kernel<__nv_bfloat16, false>(a);
            else if (backward) a.plan.mma ? lw_backward_kernel<float, true>(a) : lw_backward_kernel<float, false>(a);
            else if (half) a.plan.mma ? lw_forward_kernel<__nv_bfloat16, true>(a) : lw_forward_kernel<__nv_bfloat16, false>(a);
            else a.plan.mma ? lw_forward_kernel<float, true>(a) : lw_forward_kernel<float, false>(a);
        });
        if (!err.empty()) fprintf(stderr, "%s\n", err.c_str()), sk_test_failures++;
        for (int b = 0; b < a.plan.blocks; b++) {
            const sk_emu_counts n = sk_emu_block_counts((unsigned)b);
            // With clusters the only global reads through cp.async and __ldcg (what staging uses)
            // are the epilogue's prefetches, 4 (forward) or 7 (backward) values a cell a step, and
            // forward h_0 of the group's rows, once.
            const int nb = std::min(a.plan.Bb, B - b / a.plan.slices * a.plan.Bb);
            const int nu = std::min(a.plan.U, H - b % a.plan.slices * a.plan.U);
            const uint64_t prefetched =
                ((uint64_t)LEN * nb * nu * (backward ? 7 : 4) + (backward ? 0 : (uint64_t)nb * H)) * sizeof(float);
            // grid.sync: the staged rows, h_0 in fp32 and h(1..len-1) as operands forward, dg(len-1..1) backward.
            const uint64_t staged = backward ? (uint64_t)(LEN - 1) * nb * 4 * H * a.plan.operand_bytes
                                             : (uint64_t)nb * H * sizeof(float) + (uint64_t)(LEN - 1) * nb * H * a.plan.operand_bytes;
            if (a.plan.cluster)
                *syncs_ok &= n.grid_syncs == 0 && (int)n.cluster_syncs == LEN + (backward ? 1 : 0) &&
                             n.global_read_bytes == prefetched;
            else *syncs_ok &= n.grid_syncs == LEN && n.cluster_syncs == 0 && n.global_read_bytes == staged;
        }
    };
    for (int k = 0; k < L; k++) {
        a.k = k, a.xrows = k == 0 ? LEN : LEN + 1;
        if (k == 0) gemm_nt(x.data(), B * LEN, E, &w[ly[0].w_ih], 4 * H, f.xproj.data());
        else gemm_nt(&f.xin[pad(k, 0, 0, H)], B * (LEN + 1), H, &w[ly[k].w_ih], 4 * H, f.xproj.data());
        launch(false);
    }
    for (int k = L - 1; k >= 0; k--) {
        a.k = k;
        if (k < L - 1) // dxin (rows, H) = dg_{k+1} (rows, 4H) W_ih_{k+1} (4H, H)
            for (int r = 0; r < B * (LEN + 1); r++)
                for (int j = 0; j < H; j++) {
                    float s = 0.0f;
                    for (int i = 0; i < 4 * H; i++) s += f.dg[pad(k + 1, 0, 0, 4 * H) + (size_t)r * 4 * H + i] * w[ly[k + 1].w_ih + (size_t)i * H + j];
                    f.dxin[(size_t)r * H + j] = s;
                }
        launch(true);
    }
    return f;
}

bool same_bits(const vector<float> &a, const vector<float> &b) {
    return a.size() == b.size() && memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The plans checked: grid.sync and clusters in two batch groups; grid.sync in one, K in chunks.
enum Variant { GRID, CLUSTERS, GRID_CHUNKS };

// The whole check with operands of s bytes (4: fp32, 2: bf16), the inner products on CUDA cores
// (mma 0) or tensor cores (1), one variant; grid (the two-group grid.sync kernels' buffers) is
// what checks 5 and 6 compare against.
Buffers check(int mma, int s, Variant variant, const Buffers *grid) {
    const int cluster = variant == CLUSTERS;
    sk_model_config m = {.vocab_size = V, .embed_size = E, .hidden_size = H, .num_layers = L, .dropout = P,
                         .weight_drop = 0.0f, .cell = SK_CELL_LSTM}; // C++: every field named (-Wextra)
    sk_param_layout layout;
    sk_error err = {{0}};
    CHECK_OK(sk_param_layout_init(&layout, &m, &err));
    sk_rng r;
    sk_rng_seed(&r, 23);
    vector<float> w(layout.total), x((size_t)B * LEN * E), dy((size_t)B * LEN * H), hx((size_t)L * B * H), cx(hx.size());
    for (float &v : w) v = 0.4f * (2.0f * sk_rng_uniform(&r) - 1.0f);
    for (float &v : x) v = sk_rng_normal(&r);
    for (float &v : dy) v = sk_rng_normal(&r);
    for (size_t i = 0; i < hx.size(); i++) hx[i] = 0.3f * sk_rng_normal(&r), cx[i] = 0.5f * sk_rng_normal(&r);
    vector<sk_plstm_layer> ly(L);
    for (int k = 0; k < L; k++) {
        const sk_layer_offsets o = sk_layer_at(&layout, k);
        ly[k] = {o.w_ih, o.w_hh, o.b_ih, o.b_hh, o.in};
    }
    const uint64_t keys[L] = {sk_dropout_key(5, 9, 0), sk_dropout_key(5, 9, 1)};
    sk_plstm_lw_args a;
    memset(&a, 0, sizeof a);
    if (variant == GRID_CHUNKS) { // one group on 6 SMs; no shared memory to spare: the narrowest chunks
        sk_plstm_lw_plan_tile(&a.plan, SMS, B, H, mma, s, 1, 0);
        sk_plstm_lw_plan_chunk(&a.plan, 0, H, 0), sk_plstm_lw_plan_chunk(&a.plan, 0, 4 * H, 1);
        CHECK(a.plan.groups == 1 && a.plan.Bb == B && a.plan.U == 3 && a.plan.slices == 5 && a.plan.nchb > 1 &&
              (a.plan.nchf > 1 || (mma && s == 2)));
    } else { // clusters of at most 3 blocks: the same tiles as grid.sync's on 6 SMs
        CHECK(sk_plstm_lw_plan_shape(&a.plan, SMS, 227 * 1024, B, H, mma, s, cluster ? 3 : 0));
        CHECK(a.plan.groups == 2 && a.plan.Bb == 6 && a.plan.U == (H + 2) / 3 && a.plan.slices == 3 &&
              a.plan.cluster == (cluster ? 3 : 0) && a.plan.nchf == 1 && a.plan.nchb == 1);
    }
    a.B = B, a.T = T, a.len = LEN, a.H = H, a.L = L, a.w = w.data(), a.layers = ly.data();
    a.hx = hx.data(), a.cx = cx.data(), a.train = 1, a.p = P, a.keep_scale = 1.0f / (1.0f - P), a.keys = keys;
    a.stream_offset = OFFSET;

    int syncs_ok = 1;
    const Buffers up = run(a, w, ly, x, dy, false, &syncs_ok), down = run(a, w, ly, x, dy, true, &syncs_ok);
    const bool same = up.hh16 == down.hh16 && up.dg16 == down.dg16 && same_bits(up.hh, down.hh) && same_bits(up.xin, down.xin) && same_bits(up.cs, down.cs) &&
                      same_bits(up.gates, down.gates) && same_bits(up.dg, down.dg) && same_bits(up.y, down.y) &&
                      same_bits(up.hy, down.hy) && same_bits(up.cy, down.cy);
    CHECK(same);     // 1
    CHECK(syncs_ok); // 2
    int pads = 1, finite = 1;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < 4 * H; i++) pads &= up.dg[pad(1, b, LEN, 4 * H) + i] == 0.0f && up.dg[pad(0, b, LEN, 4 * H) + i] == 0.0f;
    for (int b = 0; b < B; b++)
        for (int j = 0; j < H; j++) pads &= up.xin[pad(1, b, LEN, H) + j] == 0.0f;
    for (int k = 0; k < L; k++)
        for (int b = 0; b < B; b++)
            for (int t = 0; t < LEN; t++)
                for (int i = 0; i < 4 * H; i++) finite &= isfinite(up.dg[pad(k, b, t, 4 * H) + i]);
    CHECK(pads && finite); // 4

    // 3: the forward in double, the same masks.
    vector<double> in((size_t)B * LEN * H), y((size_t)B * LEN * H), hy(hx.size()), cy(hx.size());
    for (int k = 0; k < L; k++) {
        const int K = ly[k].in;
        for (int b = 0; b < B; b++) {
            vector<double> h(H), c(H), g(4 * H);
            for (int j = 0; j < H; j++) h[j] = hx[((size_t)k * B + b) * H + j], c[j] = cx[((size_t)k * B + b) * H + j];
            for (int t = 0; t < LEN; t++) {
                for (int q = 0; q < 4 * H; q++) {
                    double s = (double)w[ly[k].b_ih + q] + w[ly[k].b_hh + q];
                    for (int i = 0; i < K; i++)
                        s += (double)w[ly[k].w_ih + (size_t)q * K + i] *
                             (k == 0 ? (double)x[((size_t)b * LEN + t) * E + i] : in[((size_t)b * LEN + t) * H + i]);
                    for (int i = 0; i < H; i++) s += (double)w[ly[k].w_hh + (size_t)q * H + i] * h[i];
                    g[q] = s;
                }
                for (int j = 0; j < H; j++) {
                    const double ig = 1 / (1 + exp(-g[j])), fg = 1 / (1 + exp(-g[H + j])), gg = tanh(g[2 * H + j]),
                                 og = 1 / (1 + exp(-g[3 * H + j]));
                    c[j] = fg * c[j] + ig * gg, h[j] = og * tanh(c[j]);
                }
                for (int j = 0; j < H; j++) {
                    const size_t at = ((size_t)b * LEN + t) * H + j;
                    if (k < L - 1) y[at] = h[j] * keep(keys[k], b, t, j); // the next layer's input
                    else y[at] = h[j];
                }
            }
            for (int j = 0; j < H; j++) hy[((size_t)k * B + b) * H + j] = h[j], cy[((size_t)k * B + b) * H + j] = c[j];
        }
        in = y;
    }
    vector<float> yf(y.begin(), y.end()), hyf(hy.begin(), hy.end()), cyf(cy.begin(), cy.end());
    auto scale = [](const vector<float> &v) {
        double s = 1e-3;
        for (float f : v) s = fmax(s, fabs((double)f));
        return s;
    };
    printf("%s, %s: B=%d in %d groups of %d rows, H=%d in slices of %d units, %d blocks, K in %d + %d chunks, L=%d, "
           "len=%d of T=%d, dropout %.1f: both schedules bit-identical: %s; %s: %s; pad rows zero: %s\n",
           s == 2 ? (mma ? "bf16, tensor cores" : "bf16, CUDA cores") : (mma ? "TF32 tensor cores" : "fp32, CUDA cores"),
           cluster ? "clusters" : "grid.sync", B, a.plan.groups, a.plan.Bb, H, a.plan.U, a.plan.blocks, a.plan.nchf,
           a.plan.nchb, L, LEN, T, (double)P, same ? "yes" : "NO",
           cluster ? "cluster barriers len (forward), len + 1 (backward), global reads only the prefetch"
                   : "len grid syncs a launch, the group's rows staged once a step",
           syncs_ok ? "yes" : "NO", pads ? "yes" : "NO");
    // fp32: summation order (test_cuda_parity.c's forward tolerance); TF32 and bf16: the
    // operands' rounding (precision_tolerance.h derives it).
    const sk_precision prec = s == 2 ? SK_PRECISION_BF16 : mma ? SK_PRECISION_TF32 : SK_PRECISION_FP32;
    const precision_tol tol = precision_tol_of(prec);
    const double atol = prec == SK_PRECISION_FP32 ? 1e-5 : tol.fwd_atol, rtol = prec == SK_PRECISION_FP32 ? 1e-4 : tol.fwd_rtol;
    sk_test_compare("  y", up.y.data(), yf.data(), yf.size(), atol * scale(yf), rtol);
    sk_test_compare("  hy", up.hy.data(), hyf.data(), hyf.size(), atol * scale(hyf), rtol);
    sk_test_compare("  cy", up.cy.data(), cyf.data(), cyf.size(), atol * scale(cyf), rtol);
    if (grid && variant == CLUSTERS) { // 5
        const bool fwd_same = same_bits(up.hh, grid->hh) && same_bits(up.xin, grid->xin) && same_bits(up.cs, grid->cs) &&
                              same_bits(up.gates, grid->gates) && same_bits(up.y, grid->y) && same_bits(up.hy, grid->hy) &&
                              same_bits(up.cy, grid->cy);
        printf("  forward bit-identical to grid.sync's: %s\n", fwd_same ? "yes" : "NO");
        CHECK(fwd_same);
    } else if (grid) { // 6: the forward
        sk_test_compare("  y against two groups'", up.y.data(), grid->y.data(), up.y.size(), atol * scale(grid->y), rtol);
        sk_test_compare("  cy against two groups'", up.cy.data(), grid->cy.data(), up.cy.size(), atol * scale(grid->cy), rtol);
    }
    if (grid) { // 5, 6: the gate gradients
        const double gatol = prec == SK_PRECISION_FP32 ? 1e-5 : tol.grad_atol, grtol = prec == SK_PRECISION_FP32 ? 1e-4 : tol.grad_rtol;
        vector<float> got, ref; // the rows the window wrote: t < len (row len is the zero pad)
        for (int k = 0; k < L; k++)
            for (int b = 0; b < B; b++) {
                const size_t at = pad(k, b, 0, 4 * H), n = (size_t)LEN * 4 * H;
                got.insert(got.end(), up.dg.begin() + at, up.dg.begin() + at + n);
                ref.insert(ref.end(), grid->dg.begin() + at, grid->dg.begin() + at + n);
            }
        sk_test_compare(cluster ? "  dg against grid.sync's" : "  dg against two groups'", got.data(), ref.data(),
                        got.size(), gatol * scale(ref), grtol);
    }
    sk_param_layout_free(&layout);
    return up;
}

} // namespace

int main() {
    for (int h : {13, 24}) {
        H = h;
        for (int s = 4; s >= 2; s -= 2)
            for (int mma = 0; mma < 2; mma++) {
                const Buffers grid = check(mma, s, GRID, nullptr);
                check(mma, s, CLUSTERS, &grid);
                if (H == 13) check(mma, s, GRID_CHUNKS, &grid); // the chunked tile's shape is H = 13's
            }
    }
    return sk_test_done("test_layerwise_emu");
}
