// lstm_persistent_kernels.cuh: the bodies of the persistent LSTM kernels (lstm_persistent.h
// says what they compute, lstm_persistent.cu how they are planned and launched), in a header
// so that tests/emu/test_plstm_emu.cpp runs the very same code on the CPU.
// defines: plstm_forward_kernel, plstm_backward_kernel (templates, in namespace sk_plstm)
#ifndef SK_LSTM_PERSISTENT_KERNELS_CUH
#define SK_LSTM_PERSISTENT_KERNELS_CUH

#include "device_port.cuh"
#include "lstm_persistent_args.h"
#include "lstm_persistent_dots.cuh"
#include "shakespeare/hash.h"
#include "shakespeare/lstm_cell.h" // sk_lstm_cell_forward, sk_lstm_cell_backward

namespace sk_plstm {

namespace cg = cooperative_groups;

__device__ __forceinline__ float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float tanh_of(float x) { return tanhf(x); }

// One LSTM cell (lstm_cell.h) on the device, with its activations (expf, tanhf): from the gate
// pre-activations gv (i, f, g, o) and the previous cell state, the gates after their
// activations, c and h. Every kernel that steps a cell (the wavefront and layer-after-layer
// forwards, the sampler) computes it here.
__device__ __forceinline__ sk_lstm_cell_out lstm_cell(const float (&gv)[4], float cprev) {
    return sk_lstm_cell_forward(gv[0], gv[1], gv[2], gv[3], cprev, sigmoidf, tanh_of);
}

// Backward through one cell (lstm_cell.h) from dh, the carried dc and what the forward kept:
// the activated gates, c (whose tanh is formed again here) and c_prev. Every backward kernel
// (wavefront, layer-after-layer, cluster) computes it here.
__device__ __forceinline__ sk_lstm_cell_grads cell_backward(float dh, float dc, float ig, float fg, float gg, float og,
                                                            float c, float cprev) {
    return sk_lstm_cell_backward(dh, dc, ig, fg, gg, og, tanhf(c), cprev);
}

// Row offsets (floats) inside the per-layer sequence buffers.
__device__ __forceinline__ size_t pad_row(const sk_plstm_args &a, int k, int b, int t, int width) {
    return ((size_t)k * a.B * (a.T + 1) + (size_t)b * (a.len + 1) + t) * width;
}
__device__ __forceinline__ size_t seq_row(const sk_plstm_args &a, int k, int b, int t, int width) {
    return ((size_t)k * a.B * a.T + (size_t)b * a.len + t) * width;
}

// The operands blocks stage from: with fp32 operands the fp32 buffer, with bf16 ones its
// bf16 copy (the fp32 value rounded as staging would round it).
template <typename T> __device__ __forceinline__ const T *staging_source(const float *f32, const uint16_t *b16);
template <> __device__ __forceinline__ const float *staging_source<float>(const float *f32, const uint16_t *) {
    return f32;
}
template <> __device__ __forceinline__ const __nv_bfloat16 *staging_source<__nv_bfloat16>(const float *,
                                                                                         const uint16_t *b16) {
    return (const __nv_bfloat16 *)b16;
}

// The block copies n operands from global memory (written by other blocks before the last
// grid.sync, so read through L2) to shared memory: 16 bytes per cp.async where source and
// destination share their alignment mod 16 (every row of the real configurations), element
// by element otherwise and for the ends. Asynchronous: sk_cp_async_wait_all(), then a
// __syncthreads, before anyone reads dst. Every thread of the block calls it. (Issuing all
// of a thread's copies before waiting keeps many in flight; the loop it replaced had one
// load in flight per thread, latency-bound.)
template <typename T> __device__ void stage_row(T *dst, const T *src, int n) {
    constexpr int per = 16 / (int)sizeof(T); // operands per 16 bytes
    const int tid = threadIdx.x, nt = blockDim.x;
    int head = n, nvec = 0;
    if ((((uintptr_t)dst ^ (uintptr_t)src) & 15) == 0) {
        head = (int)(((16 - ((uintptr_t)dst & 15)) & 15) / sizeof(T));
        if (head > n) head = n;
        nvec = (n - head) / per;
    }
    for (int c = tid; c < nvec; c += nt) sk_cp_async16(dst + head + (size_t)c * per, src + head + (size_t)c * per);
    for (int i = tid; i < head; i += nt) dst[i] = __ldcg(src + i);
    for (int i = head + nvec * per + tid; i < n; i += nt) dst[i] = __ldcg(src + i);
}

// The block converts n fp32 values to operands in shared memory (inputs that have no operand
// copy: layer 0's x with bf16 operands, the initial state at t = 0), or zeroes them (src NULL).
// 16-byte loads, four of them in flight per thread before their stores (one load at a time
// would wait out an L2 round trip per element, and layer 0's blocks would hold up every
// grid sync); element loads for the ends.
template <typename T> __device__ void stage_convert(T *dst, const float *src, int n) {
    const int tid = threadIdx.x, nt = blockDim.x;
    if (!src) {
        for (int i = tid; i < n; i += nt) dst[i] = from_f<T>(0.0f);
        return;
    }
    int head = (int)(((16 - ((uintptr_t)src & 15)) & 15) / sizeof(float));
    if (head > n) head = n;
    const int nvec = (n - head) / 4;
    const float4 *src4 = (const float4 *)(src + head);
    for (int c0 = tid; c0 < nvec; c0 += 4 * nt) {
        float4 v[4];
#pragma unroll
        for (int u = 0; u < 4; u++)
            if (c0 + u * nt < nvec) v[u] = __ldcg(src4 + c0 + u * nt);
#pragma unroll
        for (int u = 0; u < 4; u++)
            if (c0 + u * nt < nvec) {
                T *d = dst + head + (size_t)(c0 + u * nt) * 4;
                d[0] = from_f<T>(v[u].x), d[1] = from_f<T>(v[u].y), d[2] = from_f<T>(v[u].z), d[3] = from_f<T>(v[u].w);
            }
    }
    for (int i = tid; i < head; i += nt) dst[i] = from_f<T>(__ldcg(src + i));
    for (int i = head + nvec * 4 + tid; i < n; i += nt) dst[i] = from_f<T>(__ldcg(src + i));
}

// Stores an element other blocks stage: the fp32 value, and with bf16 operands its copy.
template <typename T> __device__ __forceinline__ void store_staged(float *f32, uint16_t *b16, size_t i, float v) {
    f32[i] = v;
    if constexpr (sizeof(T) == 2) ((__nv_bfloat16 *)b16)[i] = from_f<T>(v);
}

template <typename T, bool MMA>
__global__ void __launch_bounds__(SK_PLSTM_THREADS) plstm_forward_kernel(sk_plstm_args a) {
    cg::grid_group grid = cg::this_grid();
    unsigned char *smem = sk_dynamic_smem();
    const int H = a.H, B = a.B, len = a.len, L = a.L, U = a.plan.U, bc = a.plan.bc_fwd;
    const int bpl = (H + U - 1) / U;
    const int k = blockIdx.x / bpl, j0 = (blockIdx.x % bpl) * U, nu = min(U, H - j0);
    const sk_plstm_layer ly = a.layers[k];
    const int in = ly.in, K = in + H, Kf = a.plan.kstride; // Kf: the row stride of every layer (even)
    const int Kp = MMA ? (K + kMmaK<T> - 1) / kMmaK<T> * kMmaK<T> : K; // the tensor cores' K: zeros past K
    const int wrows = a.plan.wrows_fwd;              // U*4, or rounded up to 16 for the tensor cores
    const sk_plstm_smem_layout lay = sk_plstm_smem_carve(&a.plan, B, 0); // the plan's carve-up
    T *w = (T *)smem;                      // [wrows][Kf]: row u*4 + g = row g*H + j0 + u of [W_ih | W_hh]
    T *vec = (T *)(smem + lay.vec);        // [bc][Kf]: [input | h_{t-1}] per staged batch row
    float *pre = (float *)(smem + lay.acc); // [bc][U*4] gate pre-activations (without bias)
    float *cst = (float *)(smem + lay.state); // [B][U] the carried cell state (fp32)
    float *scratch = (float *)(smem + lay.scratch); // tensor cores: partial sums (mma_dots)
    const int tid = threadIdx.x;
    // The slice, zero past K and past the block's rows (the tensor cores read both), and
    // the staged vectors zero (their columns past K are never written again).
    for (int idx = tid; idx < wrows * Kf; idx += blockDim.x) {
        const int r = idx / Kf, i = idx % Kf, u = r / 4, g = r % 4;
        const size_t row = (size_t)g * H + j0 + u;
        float v = 0.0f;
        if (u < nu && i < K) v = i < in ? a.w[ly.w_ih + row * in + i] : a.w[ly.w_hh + row * H + (i - in)];
        w[idx] = from_f<T>(v);
    }
    for (int idx = tid; idx < bc * Kf; idx += blockDim.x) vec[idx] = from_f<T>(0.0f);
    for (int idx = tid; idx < B * nu; idx += blockDim.x) {
        const int b = idx / nu, u = idx % nu;
        cst[b * U + u] = a.cx[((size_t)k * B + b) * H + j0 + u];
        a.hh[pad_row(a, k, b, 0, H) + j0 + u] = a.hx[((size_t)k * B + b) * H + j0 + u];
        // The pad row of the next layer's input meets a zero gate gradient in the weight
        // GEMM: it must be finite, so zero (not whatever an earlier window left).
        if (k < L - 1) a.xin[pad_row(a, k + 1, b, len, H) + j0 + u] = 0.0f;
    }
    const int drop = a.train && a.p > 0.0f && k < L - 1;
    const uint64_t key = drop ? a.keys[k] : 0; // this step's, from device memory
    __syncthreads();
    for (int s = 0; s < len + L - 1; s++) {
        const int t = s - k;
        if (t >= 0 && t < len) {
            for (int b0 = 0; b0 < B; b0 += bc) {
                const int nb = min(bc, B - b0);
                for (int bb = 0; bb < nb; bb++) { // [input | h(t-1)] of batch row b
                    const int b = b0 + bb;
                    T *row = vec + (size_t)bb * Kf;
                    const float *x0 = a.x + ((size_t)b * len + t) * in;
                    if (k > 0) stage_row(row, staging_source<T>(a.xin, a.xin16) + pad_row(a, k, b, t, H), in);
                    else if constexpr (sizeof(T) == 4) stage_row(row, (const T *)x0, in);
                    else stage_convert(row, x0, in);
                    if (t == 0) stage_convert(row + in, a.hx + ((size_t)k * B + b) * H, H);
                    else stage_row(row + in, staging_source<T>(a.hh, a.hh16) + pad_row(a, k, b, t, H), H); // row t = h(t-1)
                }
                sk_cp_async_wait_all();
                __syncthreads();
                if constexpr (MMA) mma_dots(w, Kf, 0, vec, Kf, 0, 1, nu * 4, nb, Kp, pre, scratch);
                else block_dots(w, Kf, nu * 4, 4, 0, K, vec, Kf, nb, pre);
                __syncthreads();
                for (int idx = tid; idx < nb * nu; idx += blockDim.x) {
                    const int bb = idx / nu, u = idx % nu, b = b0 + bb, j = j0 + u;
                    float gv[4];
                    for (int g = 0; g < 4; g++) {
                        const size_t row = (size_t)g * H + j;
                        gv[g] = pre[sk_plstm_acc_index(bb, u * 4 + g, nu * 4, 1, 0)] + a.w[ly.b_ih + row] + a.w[ly.b_hh + row];
                    }
                    const sk_lstm_cell_out o = lstm_cell(gv, cst[b * U + u]);
                    const float ig = o.i, fg = o.f, gg = o.g, og = o.o, c = o.c, h = o.h;
                    cst[b * U + u] = c;
                    store_staged<T>(a.hh, a.hh16, pad_row(a, k, b, t + 1, H) + j, h);
                    if (a.train) {
                        a.cs[seq_row(a, k, b, t, H) + j] = c;
                        float *gr = a.gates + seq_row(a, k, b, t, 4 * H);
                        gr[j] = ig, gr[H + j] = fg, gr[2 * H + j] = gg, gr[3 * H + j] = og;
                    }
                    if (k < L - 1) {
                        float mk = 1.0f;
                        if (drop)
                            mk = sk_hash_uniform(key, ((uint64_t)(a.stream_offset + b) * len + t) * H + j) >= a.p ? a.keep_scale : 0.0f;
                        store_staged<T>(a.xin, a.xin16, pad_row(a, k + 1, b, t, H) + j, h * mk);
                    } else {
                        a.y[((size_t)b * len + t) * H + j] = h;
                    }
                    if (t == len - 1) {
                        a.hy[((size_t)k * B + b) * H + j] = h;
                        a.cy[((size_t)k * B + b) * H + j] = c;
                    }
                }
                __syncthreads(); // vec and pre are reused by the next chunk
            }
        }
        grid.sync();
    }
}

// The backward's held and staged rows are two 4H-long halves (q = 0, 1), G apart: where
// half q of row i (of `rows`) starts. CUDA cores [rows][2][G] (block_dots reads a unit's two
// weight halves as consecutive rows); tensor cores [2][rows][G], so that every half is a
// row of stride G, which the plan makes 16-byte aligned and free of bank conflicts.
template <bool MMA> __device__ __forceinline__ size_t half_row(int rows, int i, int q, int G) {
    return MMA ? ((size_t)q * rows + i) * G : ((size_t)i * 2 + q) * G;
}

template <typename T, bool MMA>
__global__ void __launch_bounds__(SK_PLSTM_THREADS) plstm_backward_kernel(sk_plstm_args a) {
    cg::grid_group grid = cg::this_grid();
    unsigned char *smem = sk_dynamic_smem();
    const int H = a.H, B = a.B, len = a.len, L = a.L, U = a.plan.U, bc = a.plan.bc_bwd, H4 = 4 * H;
    const int G = a.plan.gstride;    // stride of a 4H-long half: 4H, or more (tensor cores; zeros past 4H)
    const int Gk = MMA ? (H4 + kMmaK<T> - 1) / kMmaK<T> * kMmaK<T> : H4; // the tensor cores' K
    const int wu = a.plan.wunits_bwd; // units held: U, or rounded up to 16 (tensor cores)
    const int bpl = (H + U - 1) / U;
    const int k = blockIdx.x / bpl, j0 = (blockIdx.x % bpl) * U, nu = min(U, H - j0);
    const int top = k == L - 1;
    const int R = top ? 1 : 2; // rows per unit: W_hh_k column j, and W_ih_{k+1} column j below the top
    const sk_plstm_layer ly = a.layers[k];
    const sk_plstm_smem_layout lay = sk_plstm_smem_carve(&a.plan, B, 1); // the plan's carve-up
    T *w = (T *)smem;                       // [wu][2][G]; tensor cores [2][wu][G] (half_row)
    T *vec = (T *)(smem + lay.vec);         // [bc][2][G]: [dg_k(t+1) | dg_{k+1}(t)]; tensor cores [2][bc][G]
    float *acc = (float *)(smem + lay.acc); // [bc][U*2]
    float *dcs = (float *)(smem + lay.state); // [B][U] the carried cell-state gradient (fp32)
    float *scratch = (float *)(smem + lay.scratch); // tensor cores: partial sums (mma_dots)
    const int tid = threadIdx.x;
    // The slices, zero past 4H and past the block's units (the tensor cores read both), and
    // the staged vectors zero (their columns past 4H are never written again).
    for (int idx = tid; idx < wu * 2 * G; idx += blockDim.x) {
        const int u = MMA ? idx / G % wu : idx / (2 * G), q = MMA ? idx / (wu * G) : idx / G % 2, r = idx % G;
        const size_t col = (size_t)j0 + u;
        float v = 0.0f;
        if (u < nu && q < R && r < H4)
            v = q == 0 ? a.w[ly.w_hh + (size_t)r * H + col] : a.w[a.layers[k + 1].w_ih + (size_t)r * H + col];
        w[idx] = from_f<T>(v);
    }
    for (int idx = tid; idx < bc * 2 * G; idx += blockDim.x) vec[idx] = from_f<T>(0.0f);
    for (int idx = tid; idx < B * nu; idx += blockDim.x) dcs[(idx / nu) * U + idx % nu] = 0.0f;
    const int drop = a.p > 0.0f && !top;
    const uint64_t key = drop ? a.keys[k] : 0; // this step's, from device memory
    __syncthreads();
    for (int s = 0; s < len + L - 1; s++) {
        const int t = len - 1 - (s - (L - 1 - k));
        if (t >= 0 && t < len) {
            for (int b0 = 0; b0 < B; b0 += bc) {
                const int nb = min(bc, B - b0);
                for (int bb = 0; bb < nb; bb++) { // [dg_k(t+1) | dg_{k+1}(t)] of batch row b
                    const int b = b0 + bb;
                    const T *dg = staging_source<T>(a.dg, a.dg16);
                    T *half0 = vec + half_row<MMA>(bc, bb, 0, G);
                    if (t + 1 < len) stage_row(half0, dg + pad_row(a, k, b, t + 1, H4), H4);
                    else stage_convert(half0, (const float *)nullptr, H4);
                    if (R == 2) stage_row(vec + half_row<MMA>(bc, bb, 1, G), dg + pad_row(a, k + 1, b, t, H4), H4);
                }
                sk_cp_async_wait_all();
                __syncthreads();
                // acc[bb][u*R + q] = w[u][q] . vec[bb][q]: on CUDA cores row u*R + q of the
                // compacted index (stride 2G/R); on tensor cores slice q is a matrix of its own.
                if constexpr (MMA) {
                    mma_dots(w, G, (size_t)wu * G, vec, G, (size_t)bc * G, R, nu, nb, Gk, acc, scratch);
                } else {
                    block_dots(w, (2 / R) * G, nu * R, R, G, H4, vec, 2 * G, nb, acc);
                }
                __syncthreads();
                for (int idx = tid; idx < nb * nu; idx += blockDim.x) {
                    const int bb = idx / nu, u = idx % nu, b = b0 + bb, j = j0 + u;
                    const float *ar = acc + sk_plstm_acc_index(bb, u, nu * R, R, 0); // [q]: slice q
                    float dh = ar[0]; // recurrent part: W_hh^T dg_k(t+1)
                    if (top) {
                        dh += a.dy[((size_t)b * len + t) * H + j];
                    } else {
                        float mk = 1.0f;
                        if (drop)
                            mk = sk_hash_uniform(key, ((uint64_t)(a.stream_offset + b) * len + t) * H + j) >= a.p ? a.keep_scale : 0.0f;
                        dh += mk * ar[1]; // from layer k+1's input gradient, through the mask
                    }
                    const float *gr = a.gates + seq_row(a, k, b, t, H4);
                    const float ig = gr[j], fg = gr[H + j], gg = gr[2 * H + j], og = gr[3 * H + j];
                    const float c = a.cs[seq_row(a, k, b, t, H) + j];
                    const float cprev =
                        t > 0 ? a.cs[seq_row(a, k, b, t - 1, H) + j] : a.cx[((size_t)k * B + b) * H + j];
                    const sk_lstm_cell_grads r = cell_backward(dh, dcs[b * U + u], ig, fg, gg, og, c, cprev);
                    dcs[b * U + u] = r.dc_prev;
                    const size_t dr = pad_row(a, k, b, t, H4);
                    store_staged<T>(a.dg, a.dg16, dr + j, r.dpre[0]);
                    store_staged<T>(a.dg, a.dg16, dr + H + j, r.dpre[1]);
                    store_staged<T>(a.dg, a.dg16, dr + 2 * H + j, r.dpre[2]);
                    store_staged<T>(a.dg, a.dg16, dr + 3 * H + j, r.dpre[3]);
                }
                __syncthreads();
            }
        }
        grid.sync();
    }
}

} // namespace sk_plstm

#endif
