// lstm_layerwise_kernels.cuh: the bodies of the layer-after-layer persistent LSTM kernels
// (lstm_layerwise.h says what they compute, lstm_layerwise.cu how they are planned and
// launched), in a header so that the emulated device runs the very same code on the CPU.
// defines: lw_forward_kernel, lw_backward_kernel (templates on the inner product, in namespace
//          sk_plstm_lw)
// Templates on the operand type T (float, or __nv_bfloat16: the weight slice converted at
// launch, h and dg staged from their bf16 copies) and the inner product: block_dots on CUDA
// cores, or mma_dots on tensor cores (bf16 m16n8k16, or fp32 rounded to TF32 on m16n8k8 as it
// is loaded), over the plan's rows, K padded with zeros (on tensor cores the lanes of the last
// 16-row tile past the block's rows read its last row again: mma_dots' clamp); fp32
// accumulation, fp32 cell state, fp32 buffers in global memory.
#ifndef SK_LSTM_LAYERWISE_KERNELS_CUH
#define SK_LSTM_LAYERWISE_KERNELS_CUH

#include "device_port.cuh"
#include "lstm_layerwise_args.h"
#include "lstm_persistent_dots.cuh"
#include "lstm_persistent_kernels.cuh" // lstm_cell, cell_backward, stage_row, stage_convert
#include "shakespeare/hash.h"

namespace sk_plstm_lw {

namespace cg = cooperative_groups;
using sk_plstm::block_dots;
using sk_plstm::cell_backward;
using sk_plstm::from_f;
using sk_plstm::kMmaK;
using sk_plstm::mma_dots;
using sk_plstm::staging_source;
using sk_plstm::store_staged;
using sk_plstm::lstm_cell;
using sk_plstm::stage_convert;
using sk_plstm::stage_row;

// Row offsets (floats) inside the per-layer buffers (lstm_persistent.h): padded sequences
// (row stride len + 1) and plain ones.
__device__ __forceinline__ size_t pad_at(const sk_plstm_lw_args &a, int k, int b, int t, int width) {
    return ((size_t)k * a.B * (a.T + 1) + (size_t)b * (a.len + 1) + t) * width;
}
__device__ __forceinline__ size_t seq_at(const sk_plstm_lw_args &a, int k, int b, int t, int width) {
    return ((size_t)k * a.B * a.T + (size_t)b * a.len + t) * width;
}

// The block's tile: batch rows [b0, b0 + nb), units [j0, j0 + nu).
struct tile {
    int b0, nb, j0, nu;
};
__device__ __forceinline__ tile tile_of(const sk_plstm_lw_args &a) {
    const int g = blockIdx.x / a.plan.slices, n = blockIdx.x % a.plan.slices;
    tile t;
    t.b0 = g * a.plan.Bb, t.nb = min(a.plan.Bb, a.B - t.b0);
    t.j0 = n * a.plan.U, t.nu = min(a.plan.U, a.H - t.j0);
    return t;
}

// Dropout's factor for element j of row (b, t) of site k's output (hash.h): 0 or keep_scale.
__device__ __forceinline__ float keep(const sk_plstm_lw_args &a, uint64_t key, int b, int t, int j) {
    return sk_hash_uniform(key, ((uint64_t)(a.stream_offset + b) * a.len + t) * a.H + j) >= a.p ? a.keep_scale : 0.0f;
}

// Forward, before the first step: the block's W_hh rows (row u*4 + g = W_hh row g*H + j0 + u,
// zero past H and past its rows, wrows x Kf), both biases ([4U][2]), its cell state from cx
// ([Bb][U]), row 0 of hh (h_0, for the dW_hh GEMM) and the next layer's zero pad row.
template <typename T>
__device__ void forward_setup(const sk_plstm_lw_args &a, const tile &tl, T *w, int Kf, float *bias, float *cst) {
    const int H = a.H, B = a.B, k = a.k, U = a.plan.U, tid = threadIdx.x, nt = blockDim.x;
    const sk_plstm_layer ly = a.layers[k];
    for (int idx = tid; idx < a.plan.wrows * Kf; idx += nt) {
        const int r = idx / Kf, i = idx % Kf;
        w[idx] = from_f<T>(r < 4 * tl.nu && i < H ? a.w[ly.w_hh + ((size_t)(r % 4) * H + tl.j0 + r / 4) * H + i] : 0.0f);
    }
    for (int r = tid; r < 4 * tl.nu; r += nt) {
        const size_t row = (size_t)(r % 4) * H + tl.j0 + r / 4;
        bias[2 * r] = a.w[ly.b_ih + row], bias[2 * r + 1] = a.w[ly.b_hh + row];
    }
    for (int idx = tid; idx < tl.nb * tl.nu; idx += nt) {
        const int bb = idx / tl.nu, u = idx % tl.nu, b = tl.b0 + bb, j = tl.j0 + u;
        cst[bb * U + u] = a.cx[((size_t)k * B + b) * H + j];
        a.hh[pad_at(a, k, b, 0, H) + j] = a.hx[((size_t)k * B + b) * H + j]; // the dW_hh GEMM's row 0
        // The next layer's pad row meets a zero gate gradient in its weight GEMM: finite, zero.
        if (k < a.L - 1) a.xin[pad_at(a, k + 1, b, a.len, H) + j] = 0.0f;
    }
}

// Forward, one cell (b, t, j) computed: what the window keeps of it besides h in hh (cs and the
// gates for backward, the next layer's input through keyed dropout or the output, the final state).
__device__ __forceinline__ void forward_store(const sk_plstm_lw_args &a, int b, int t, int j,
                                              const sk_lstm_cell_out &o, int drop, uint64_t key) {
    const int H = a.H, k = a.k, len = a.len;
    if (a.train) {
        a.cs[seq_at(a, k, b, t, H) + j] = o.c;
        float *gr = a.gates + seq_at(a, k, b, t, 4 * H);
        gr[j] = o.i, gr[H + j] = o.f, gr[2 * H + j] = o.g, gr[3 * H + j] = o.o;
    }
    if (k < a.L - 1) a.xin[pad_at(a, k + 1, b, t, H) + j] = drop ? o.h * keep(a, key, b, t, j) : o.h;
    else a.y[((size_t)b * len + t) * H + j] = o.h;
    if (t == len - 1) a.hy[((size_t)k * a.B + b) * H + j] = o.h, a.cy[((size_t)k * a.B + b) * H + j] = o.c;
}

// n rounded up to the tensor cores' K (zeros past n in both operands).
template <typename T> __device__ __forceinline__ int mma_k(int n) { return (n + kMmaK<T> - 1) / kMmaK<T> * kMmaK<T>; }

// One step's inner products over K in the plan's chunks (nch of kc operands, the last one
// shorter): acc = w (mrows rows of K at stride ws, rows_per_unit rows a unit) times the nb staged
// rows. stage(buf, i0, n) issues the copies of operands [i0, i0 + n) of each staged row into buf
// (row stride vs). One chunk: stage, wait, multiply (vec's columns past K are zero from the
// start). More: two buffers vbuf operands apart; chunk c + 1 is staged while chunk c is
// multiplied, and each chunk's sums are added to acc in chunk order; on tensor cores the
// operands of a short last chunk up to the mma's K are zeroed (the buffer held a whole chunk).
// Every thread of the block calls it; acc is ready after its closing __syncthreads.
template <typename T, bool MMA, typename Stage>
__device__ void chunked_dots(const T *w, int ws, int rows_per_unit, int mrows, int nb, int K, int kc, int nch, T *vec,
                             int vs, int vbuf, float *acc, float *scratch, const Stage &stage) {
    // Iteration c: wait for chunk c - 1, issue chunk c, multiply chunk c - 1 (one call site each,
    // so the staging and the inner products are inlined once).
    for (int c = 0; c <= nch; c++) {
        if (c > 0) {
            sk_cp_async_wait_all();
            __syncthreads(); // chunk c - 1 landed; chunk c's buffer's last reader (chunk c - 2's products) done
        }
        if (c < nch) {
            T *buf = vec + (c & 1) * vbuf;
            const int i0 = c * kc, n = min(kc, K - i0);
            stage(buf, i0, n);
            if constexpr (MMA) {
                const int tail = nch > 1 ? mma_k<T>(n) - n : 0;
                for (int idx = threadIdx.x; idx < nb * tail; idx += blockDim.x)
                    buf[(size_t)(idx / tail) * vs + n + idx % tail] = from_f<T>(0.0f);
            }
        }
        if (c > 0) {
            const T *buf = vec + ((c - 1) & 1) * vbuf;
            const int i0 = (c - 1) * kc, n = min(kc, K - i0);
            if constexpr (MMA) mma_dots(w + i0, ws, 0, buf, vs, 0, 1, mrows, nb, mma_k<T>(n), acc, scratch, true, c > 1);
            else block_dots(w + i0, ws, mrows, rows_per_unit, 0, n, buf, vs, nb, acc, c > 1);
        }
    }
    __syncthreads();
}

// Both kernels run at most one block an SM (the plan's blocks <= SMs), so __launch_bounds__ lets
// a thread take the registers of one block an SM: the K-chunk loop around the inner products
// then needs no spills (at the default, ptxas spilled in the tensor-core instances).
template <typename T, bool MMA>
__global__ void __launch_bounds__(SK_PLSTM_THREADS, 1) lw_forward_kernel(sk_plstm_lw_args a) {
    cg::grid_group grid = cg::this_grid();
    unsigned char *smem = sk_dynamic_smem();
    const int H = a.H, B = a.B, len = a.len, k = a.k, U = a.plan.U, Kf = a.plan.kf, tid = threadIdx.x, nt = blockDim.x;
    const int vs = a.plan.vsf, nch = a.plan.nchf;
    const tile tl = tile_of(a);
    const sk_plstm_lw_smem lay = sk_plstm_lw_smem_carve(&a.plan, 0);
    const int vbuf = (int)((lay.acc - lay.vec) / (nch > 1 ? 2 : 1) / sizeof(T)); // operands a staging buffer
    T *w = (T *)(smem + lay.w);                // [wrows][Kf]: row u*4 + g = W_hh row g*H + j0 + u
    float *bias = (float *)(smem + lay.bias);  // [4U][2]: b_ih, b_hh
    float *cst = (float *)(smem + lay.state);  // [Bb][U]: the carried cell state
    T *vec = (T *)(smem + lay.vec);            // [nch > 1 ? 2 : 1][bbr][vs]: h_{t-1} of the group's rows (a chunk)
    float *pre = (float *)(smem + lay.acc);    // [Bb][4 nu]: W_hh h_{t-1}
    float *scratch = (float *)(smem + lay.scratch); // tensor cores: partial sums
    // The slice and the state; the staged rows zero (their padding is never written again; the
    // tensor cores read it).
    forward_setup(a, tl, w, Kf, bias, cst);
    for (size_t idx = tid; idx < (lay.acc - lay.vec) / sizeof(T); idx += nt) vec[idx] = from_f<T>(0.0f);
    const int drop = a.train && a.p > 0.0f && k < a.L - 1;
    const uint64_t key = drop ? a.keys[k] : 0;
    __syncthreads();
    for (int t = 0; t < len; t++) {
        auto stage = [&](T *buf, int i0, int n) { // h_{t-1}: the initial state, or row t of hh (others wrote it)
            for (int bb = 0; bb < tl.nb; bb++) {
                const int b = tl.b0 + bb;
                if (t == 0) stage_convert(buf + (size_t)bb * vs, a.hx + ((size_t)k * B + b) * H + i0, n);
                else stage_row(buf + (size_t)bb * vs, staging_source<T>(a.hh, a.hh16) + pad_at(a, k, b, t, H) + i0, n);
            }
        };
        chunked_dots<T, MMA>(w, Kf, 4, 4 * tl.nu, tl.nb, H, a.plan.kcf, nch, vec, vs, vbuf, pre, scratch, stage);
        for (int idx = tid; idx < tl.nb * tl.nu; idx += nt) {
            const int bb = idx / tl.nu, u = idx % tl.nu, b = tl.b0 + bb, j = tl.j0 + u;
            const float *xp = a.xproj + ((size_t)b * a.xrows + t) * 4 * H;
            float gv[4];
            for (int g = 0; g < 4; g++) {
                const int r = u * 4 + g;
                gv[g] = pre[(size_t)bb * 4 * tl.nu + r] + xp[g * H + j] + bias[2 * r] + bias[2 * r + 1];
            }
            const sk_lstm_cell_out o = lstm_cell(gv, cst[bb * U + u]);
            cst[bb * U + u] = o.c;
            store_staged<T>(a.hh, a.hh16, pad_at(a, k, b, t + 1, H) + j, o.h);
            forward_store(a, b, t, j, o, drop, key);
        }
        grid.sync(); // h(t) of every tile, before anyone stages it (also orders vec and pre's reuse)
    }
}

template <typename T, bool MMA>
__global__ void __launch_bounds__(SK_PLSTM_THREADS, 1) lw_backward_kernel(sk_plstm_lw_args a) {
    cg::grid_group grid = cg::this_grid();
    unsigned char *smem = sk_dynamic_smem();
    const int H = a.H, B = a.B, len = a.len, k = a.k, U = a.plan.U, H4 = 4 * H, G = a.plan.gs, tid = threadIdx.x,
              nt = blockDim.x;
    const int vs = a.plan.vsb, nch = a.plan.nchb;
    const tile tl = tile_of(a);
    const int top = k == a.L - 1;
    const sk_plstm_layer ly = a.layers[k];
    const sk_plstm_lw_smem lay = sk_plstm_lw_smem_carve(&a.plan, 1);
    const int vbuf = (int)((lay.acc - lay.vec) / (nch > 1 ? 2 : 1) / sizeof(T)); // operands a staging buffer
    T *w = (T *)(smem + lay.w);                // [wunits][G]: row u = column j0 + u of W_hh
    float *dcs = (float *)(smem + lay.state);  // [Bb][U]: the carried cell-state gradient
    T *vec = (T *)(smem + lay.vec);            // [nch > 1 ? 2 : 1][bbr][vs]: dg(t+1) of the group's rows (a chunk)
    float *acc = (float *)(smem + lay.acc);    // [Bb][nu]: W_hh^T dg(t+1)
    float *scratch = (float *)(smem + lay.scratch); // tensor cores: partial sums
    for (int idx = tid; idx < a.plan.wunits * G; idx += nt) { // zero past 4H and the block's units
        const int u = idx / G, r = idx % G;
        w[idx] = from_f<T>(u < tl.nu && r < H4 ? a.w[ly.w_hh + (size_t)r * H + tl.j0 + u] : 0.0f);
    }
    for (size_t idx = tid; idx < (lay.acc - lay.vec) / sizeof(T); idx += nt) vec[idx] = from_f<T>(0.0f);
    for (int idx = tid; idx < tl.nb * tl.nu; idx += nt) dcs[(idx / tl.nu) * U + idx % tl.nu] = 0.0f;
    const int drop = a.p > 0.0f && !top; // the mask layer k's output met on its way up
    const uint64_t key = drop ? a.keys[k] : 0;
    __syncthreads();
    for (int t = len - 1; t >= 0; t--) {
        auto stage = [&](T *buf, int i0, int n) { // dg(t+1): zero past the window, else row t+1 (others wrote it)
            for (int bb = 0; bb < tl.nb; bb++) {
                const int b = tl.b0 + bb;
                if (t + 1 < len) stage_row(buf + (size_t)bb * vs, staging_source<T>(a.dg, a.dg16) + pad_at(a, k, b, t + 1, H4) + i0, n);
                else stage_convert(buf + (size_t)bb * vs, (const float *)nullptr, n);
            }
        };
        chunked_dots<T, MMA>(w, G, 1, tl.nu, tl.nb, H4, a.plan.kcb, nch, vec, vs, vbuf, acc, scratch, stage);
        for (int idx = tid; idx < tl.nb * tl.nu; idx += nt) {
            const int bb = idx / tl.nu, u = idx % tl.nu, b = tl.b0 + bb, j = tl.j0 + u;
            float dh = acc[(size_t)bb * tl.nu + u]; // recurrent part: W_hh^T dg(t+1)
            if (top) dh += a.dy[((size_t)b * len + t) * H + j];
            else dh += (drop ? keep(a, key, b, t, j) : 1.0f) * a.dxin[((size_t)b * (len + 1) + t) * H + j];
            const float *gr = a.gates + seq_at(a, k, b, t, H4);
            const float ig = gr[j], fg = gr[H + j], gg = gr[2 * H + j], og = gr[3 * H + j];
            const float c = a.cs[seq_at(a, k, b, t, H) + j];
            const float cprev = t > 0 ? a.cs[seq_at(a, k, b, t - 1, H) + j] : a.cx[((size_t)k * B + b) * H + j];
            const sk_lstm_cell_grads r = cell_backward(dh, dcs[bb * U + u], ig, fg, gg, og, c, cprev);
            dcs[bb * U + u] = r.dc_prev;
            const size_t dr = pad_at(a, k, b, t, H4);
            for (int g = 0; g < 4; g++) store_staged<T>(a.dg, a.dg16, dr + g * H + j, r.dpre[g]);
        }
        grid.sync(); // dg(t) of every tile, before anyone stages it
    }
}

} // namespace sk_plstm_lw

#endif
