// lstm_layerwise_cluster_kernels.cuh: the layer-after-layer persistent LSTM kernels with one
// thread-block cluster per batch group (lstm_layerwise.h says what they compute,
// lstm_layerwise_plan.h how they tile and carve shared memory), in a header so that the emulated
// device runs the very same code on the CPU.
// defines: lw_forward_cluster_kernel, lw_backward_cluster_kernel (in namespace sk_plstm_lw)
//
// A cluster is a batch group's `slices` blocks (cluster rank = slice). The exchange each step
// goes through distributed shared memory instead of global memory and a grid-wide barrier:
//   forward   a block writes its Bb x U slice of h(t) into the h buffer of every peer (and its
//             own), then one cluster barrier: at step t+1 every block holds its group's whole
//             h(t) in its own shared memory. The h buffer is double-buffered: step t reads one
//             while peers fill the other. The pushes of h(t), at the end of step t, go into the
//             buffer every block read at step t-1, and come after the pusher passed step t-1's
//             barrier, which no block reaches before it has finished those reads.
//   backward a block holds W_hh's rows of its own 4U gates, transposed (H x 4U), and multiplies
//             them by its own dg(t+1): fp32 partial sums of W_hh^T dg(t+1) for all H units. It
//             pushes each peer the Bb x U partials of that peer's units (its own to itself), one
//             cluster barrier, and every block adds the slices' partials in slice order (a fixed
//             order: bitwise reproducible). Received partials are double-buffered likewise.
// Each step's epilogue inputs from global memory (the projection forward; gates, c, c_prev and
// the upper gradient backward) are prefetched with cp.async during the step before, off the
// chain. A cluster barrier before the first step makes every block's buffers ready before any
// peer writes into them; no block touches a peer's shared memory after its last barrier, so no
// block exits while a peer may still write into it.
// fp32 only in global memory (hh, dg: the GEMMs read them; the bf16 copies the grid.sync kernels
// stage are not needed here), fp32 cell state, keyed dropout as the grid.sync kernels.
#ifndef SK_LSTM_LAYERWISE_CLUSTER_KERNELS_CUH
#define SK_LSTM_LAYERWISE_CLUSTER_KERNELS_CUH

#include "lstm_layerwise_kernels.cuh"

// Thread-block clusters exist from sm_90 (and in nvcc's host pass and on the emulated device):
// compiled for an older architecture the two kernels are traps, never launched there (the plan
// refuses clusters below compute capability 9.0).
#if defined(SK_CUDA_EMU) || !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define SK_LW_CLUSTERS 1
#else
#define SK_LW_CLUSTERS 0
#endif

namespace sk_plstm_lw {

// The widest store (16, 4 or 2 bytes) that every address, stride and length in `bits` (their
// bitwise or) allows: distributed shared memory wants aligned, contiguous stores, as global
// memory does.
__device__ __forceinline__ int push_unit(size_t bits) { return bits % 16 == 0 ? 16 : bits % 4 == 0 ? 4 : 2; }

__device__ __forceinline__ void copy_unit(unsigned char *dst, const unsigned char *src, int unit) {
    if (unit == 16) *(uint4 *)dst = *(const uint4 *)src;
    else if (unit == 4) *(uint32_t *)dst = *(const uint32_t *)src;
    else *(uint16_t *)dst = *(const uint16_t *)src;
}

#if SK_LW_CLUSTERS
// Every thread of the block takes its share: for each block p of the cluster (but this one when
// !self), `rows` rows of bytes_of(p) bytes (at most max_bytes) from src_of(p, row) in this block's
// shared memory to the address dst_of(row) has here, in block p's shared memory; `unit` bytes a
// store.
template <typename Src, typename Dst, typename Len>
__device__ void push_to_cluster(cg::cluster_group &cl, bool self, int rows, int max_bytes, int unit, Src src_of,
                                Dst dst_of, Len bytes_of) {
    const int n = (int)cl.num_blocks(), me = (int)cl.block_rank(), chunks = max_bytes / unit;
    for (int i = threadIdx.x; i < n * rows * chunks; i += blockDim.x) {
        const int p = i / (rows * chunks), row = i / chunks % rows, off = i % chunks * unit;
        if ((p == me && !self) || off >= bytes_of(p)) continue;
        copy_unit(cl.map_shared_rank(dst_of(row) + off, (unsigned)p), src_of(p, row) + off, unit);
    }
}
#endif

// Forward: the projection of step t for the tile's rows, xp [Bb][4][U] (gate g's nu values of
// row bb at (bb * 4 + g) * U), asynchronously (sk_cp_async_wait_all before reading).
__device__ __forceinline__ void prefetch_projection(const sk_plstm_lw_args &a, const tile &tl, float *xp, int t) {
    const int H = a.H, U = a.plan.U;
    for (int bb = 0; bb < tl.nb; bb++) {
        const float *row = a.xproj + ((size_t)(tl.b0 + bb) * a.xrows + t) * 4 * H + tl.j0;
        for (int g = 0; g < 4; g++) stage_row(xp + (size_t)(bb * 4 + g) * U, row + (size_t)g * H, tl.nu);
    }
}

// Backward: what step t's epilogue reads of the forward and of the layer above, pre [Bb][7][U]:
// gates i, f, g, o, c(t), c(t-1) (cx at t = 0), the upper gradient (dy at the top, else dxin,
// unmasked); asynchronously.
__device__ __forceinline__ void prefetch_backward(const sk_plstm_lw_args &a, const tile &tl, float *pre, int t) {
    const int H = a.H, U = a.plan.U, k = a.k, len = a.len;
    for (int bb = 0; bb < tl.nb; bb++) {
        const int b = tl.b0 + bb;
        float *d = pre + (size_t)bb * 7 * U;
        const float *gr = a.gates + seq_at(a, k, b, t, 4 * H) + tl.j0;
        for (int g = 0; g < 4; g++) stage_row(d + (size_t)g * U, gr + (size_t)g * H, tl.nu);
        stage_row(d + 4 * (size_t)U, a.cs + seq_at(a, k, b, t, H) + tl.j0, tl.nu);
        const float *cprev = t > 0 ? a.cs + seq_at(a, k, b, t - 1, H) : a.cx + ((size_t)k * a.B + b) * H;
        stage_row(d + 5 * (size_t)U, cprev + tl.j0, tl.nu);
        const float *up = k == a.L - 1 ? a.dy + ((size_t)b * len + t) * H : a.dxin + ((size_t)b * (len + 1) + t) * H;
        stage_row(d + 6 * (size_t)U, up + tl.j0, tl.nu);
    }
}

template <typename T, bool MMA>
__global__ void __launch_bounds__(SK_PLSTM_THREADS) lw_forward_cluster_kernel(sk_plstm_lw_args a) {
#if !SK_LW_CLUSTERS
    (void)a;
    __trap();
#else
    cg::cluster_group cluster = cg::this_cluster();
    unsigned char *smem = sk_dynamic_smem();
    const int H = a.H, B = a.B, len = a.len, k = a.k, U = a.plan.U, Kf = a.plan.kf, tid = threadIdx.x, nt = blockDim.x;
    const tile tl = tile_of(a);
    const sk_plstm_lw_smem lay = sk_plstm_lw_smem_carve(&a.plan, 0);
    const size_t vbuf = (lay.acc - lay.vec) / 2; // bytes of one h buffer
    T *w = (T *)(smem + lay.w);                  // [wrows][Kf]: row u*4 + g = W_hh row g*H + j0 + u
    float *bias = (float *)(smem + lay.bias);    // [4U][2]: b_ih, b_hh
    float *cst = (float *)(smem + lay.state);    // [Bb][U]: the carried cell state
    float *acc = (float *)(smem + lay.acc);      // [Bb][4 nu]: W_hh h_{t-1}
    float *xp = (float *)(smem + lay.pre);       // [Bb][4][U]: the step's projection
    float *scratch = (float *)(smem + lay.scratch); // tensor cores: partial sums
    // h buffer of step t: [bbr][Kf], the group's h_{t-1}, padding zero (the tensor cores read it).
    auto hbuf = [&](int t) { return (T *)(smem + lay.vec + (size_t)(t & 1) * vbuf); };
    forward_setup(a, tl, w, Kf, bias, cst);
    for (size_t i = tid; i < 2 * vbuf / sizeof(T); i += nt) hbuf(0)[i] = from_f<T>(0.0f);
    __syncthreads();
    for (int bb = 0; bb < tl.nb; bb++) stage_convert(hbuf(0) + (size_t)bb * Kf, a.hx + ((size_t)k * B + tl.b0 + bb) * H, H);
    prefetch_projection(a, tl, xp, 0);
    const int drop = a.train && a.p > 0.0f && k < a.L - 1;
    const uint64_t key = drop ? a.keys[k] : 0;
    const size_t s = sizeof(T);
    const int unit = push_unit((size_t)tl.j0 * s | (size_t)tl.nu * s | (size_t)Kf * s | lay.vec | vbuf);
    cluster.sync(); // every block's buffers ready before any peer pushes into them
    for (int t = 0; t < len; t++) {
        const T *cur = hbuf(t);
        T *next = hbuf(t + 1);
        if constexpr (MMA) mma_dots(w, Kf, 0, cur, Kf, 0, 1, 4 * tl.nu, tl.nb, (H + kMmaK<T> - 1) / kMmaK<T> * kMmaK<T>, acc, scratch);
        else block_dots(w, Kf, 4 * tl.nu, 4, 0, H, cur, Kf, tl.nb, acc);
        sk_cp_async_wait_all(); // the projection of step t
        __syncthreads();
        for (int idx = tid; idx < tl.nb * tl.nu; idx += nt) {
            const int bb = idx / tl.nu, u = idx % tl.nu, b = tl.b0 + bb, j = tl.j0 + u;
            float gv[4];
            for (int g = 0; g < 4; g++) {
                const int r = u * 4 + g;
                gv[g] = acc[(size_t)bb * 4 * tl.nu + r] + xp[(size_t)(bb * 4 + g) * U + u] + bias[2 * r] + bias[2 * r + 1];
            }
            const sk_plstm::cell_out o = lstm_cell(gv, cst[bb * U + u]);
            cst[bb * U + u] = o.c;
            a.hh[pad_at(a, k, b, t + 1, H) + j] = o.h;
            next[(size_t)bb * Kf + j] = from_f<T>(o.h);
            forward_store(a, b, t, j, o, drop, key);
        }
        if (t + 1 == len) break; // nobody reads h(len-1) from shared memory
        __syncthreads();          // this block's slice of h(t) in `next`; xp read
        prefetch_projection(a, tl, xp, t + 1);
        const unsigned char *nx = (const unsigned char *)next;
        push_to_cluster(
            cluster, false, tl.nb, tl.nu * (int)s, unit,
            [&](int, int row) { return nx + ((size_t)row * Kf + tl.j0) * s; },
            [&](int row) { return (unsigned char *)next + ((size_t)row * Kf + tl.j0) * s; },
            [&](int) { return tl.nu * (int)s; });
        cluster.sync(); // h(t) of the whole group in every block's `next`
    }
#endif
}

template <typename T, bool MMA>
__global__ void __launch_bounds__(SK_PLSTM_THREADS) lw_backward_cluster_kernel(sk_plstm_lw_args a) {
#if !SK_LW_CLUSTERS
    (void)a;
    __trap();
#else
    cg::cluster_group cluster = cg::this_cluster();
    unsigned char *smem = sk_dynamic_smem();
    const int H = a.H, k = a.k, U = a.plan.U, G = a.plan.gs, slices = a.plan.slices, tid = threadIdx.x, nt = blockDim.x;
    const int me = (int)cluster.block_rank();
    const tile tl = tile_of(a);
    const int top = k == a.L - 1;
    const sk_plstm_layer ly = a.layers[k];
    const sk_plstm_lw_smem lay = sk_plstm_lw_smem_carve(&a.plan, 1);
    T *w = (T *)(smem + lay.w);                 // [wunits][G]: row j, column u*4 + g = W_hh[g*H + j0 + u][j]
    float *dcs = (float *)(smem + lay.state);   // [Bb][U]: the carried cell-state gradient
    T *dgl = (T *)(smem + lay.vec);             // [bbr][G]: this block's dg(t+1), column u*4 + g
    float *part = (float *)(smem + lay.acc);    // [Bb][H]: this block's gates' share of W_hh^T dg(t+1)
    float *recv = (float *)(smem + lay.recv);   // [2][slices][Bb][U]: the partials of this block's units, by sender
    float *pre = (float *)(smem + lay.pre);     // [Bb][7][U]: prefetch_backward's
    float *scratch = (float *)(smem + lay.scratch); // tensor cores: partial sums
    const int K4 = 4 * tl.nu;
    for (int idx = tid; idx < a.plan.wunits * G; idx += nt) { // zero past H and past this block's gates
        const int j = idx / G, r = idx % G;
        w[idx] = from_f<T>(j < H && r < K4 ? a.w[ly.w_hh + ((size_t)(r % 4) * H + tl.j0 + r / 4) * H + j] : 0.0f);
    }
    for (int idx = tid; idx < a.plan.bbr * G; idx += nt) dgl[idx] = from_f<T>(0.0f); // dg(len) = 0
    for (int idx = tid; idx < tl.nb * tl.nu; idx += nt) dcs[(idx / tl.nu) * U + idx % tl.nu] = 0.0f;
    prefetch_backward(a, tl, pre, a.len - 1);
    const int drop = a.p > 0.0f && !top; // the mask layer k's output met on its way up
    const uint64_t key = drop ? a.keys[k] : 0;
    const int unit = push_unit((size_t)U * 4 | (size_t)H * 4 | lay.acc | lay.recv);
    auto recv_at = [&](int t, int sender, int bb) { return recv + ((size_t)((t & 1) * slices + sender) * a.plan.Bb + bb) * U; };
    cluster.sync(); // every block's buffers ready before any peer pushes into them
    for (int t = a.len - 1; t >= 0; t--) {
        if constexpr (MMA) mma_dots(w, G, 0, dgl, G, 0, 1, H, tl.nb, (K4 + kMmaK<T> - 1) / kMmaK<T> * kMmaK<T>, part, scratch);
        else block_dots(w, G, H, 1, 0, K4, dgl, G, tl.nb, part);
        __syncthreads();
        const unsigned char *pb = (const unsigned char *)part;
        push_to_cluster(
            cluster, true, tl.nb, U * 4, unit,
            [&](int p, int row) { return pb + ((size_t)row * H + (size_t)p * U) * 4; },
            [&](int row) { return (unsigned char *)recv_at(t, me, row); },
            [&](int p) { return min(U, H - p * U) * 4; });
        sk_cp_async_wait_all(); // step t's epilogue inputs
        cluster.sync();         // every slice's partials of this block's units in recv
        for (int idx = tid; idx < tl.nb * tl.nu; idx += nt) {
            const int bb = idx / tl.nu, u = idx % tl.nu, b = tl.b0 + bb, j = tl.j0 + u;
            const float *d = pre + (size_t)bb * 7 * U + u;
            float dh = 0.0f; // recurrent part: W_hh^T dg(t+1), slice by slice
            for (int n = 0; n < slices; n++) dh += recv_at(t, n, bb)[u];
            dh += top ? d[6 * U] : (drop ? keep(a, key, b, t, j) : 1.0f) * d[6 * U];
            const cell_grads r = backward_cell(dh, dcs[bb * U + u], d[0], d[U], d[2 * U], d[3 * U], d[4 * U], d[5 * U]);
            dcs[bb * U + u] = r.dc_carry;
            const size_t dr = pad_at(a, k, b, t, 4 * H);
            for (int g = 0; g < 4; g++) {
                a.dg[dr + (size_t)g * H + j] = r.dg[g];
                dgl[(size_t)bb * G + u * 4 + g] = from_f<T>(r.dg[g]);
            }
        }
        __syncthreads(); // dgl written, pre read
        if (t > 0) prefetch_backward(a, tl, pre, t - 1);
    }
#endif
}

} // namespace sk_plstm_lw

#endif
