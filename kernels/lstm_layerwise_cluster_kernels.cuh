// lstm_layerwise_cluster_kernels.cuh: the layer-after-layer persistent LSTM kernels with one
// thread-block cluster per batch group (lstm_layerwise.h says what they compute,
// lstm_layerwise_plan.h how they tile and carve shared memory), in a header so that the emulated
// device runs the very same code on the CPU.
// defines: lw_forward_cluster_kernel, lw_backward_cluster_kernel, and their prefetcher and pusher
//          (in namespace sk_plstm_lw)
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
// chain: forward after the step's barrier, backward after its epilogue (the buffer is single). A cluster barrier before the first step makes every block's buffers ready before any
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

// A thread's copies and stores of every step are worked out once, before the first step, for its
// first kSlots items (every item of configurations A and B: at most 2 prefetch copies and 4 pushed
// stores a thread); a thread with more works the rest out at each step, as before. Each step then
// costs a few instructions a copy, where every warp ran a stage_row call per prefetched row and every
// push item took three integer divisions (docs/PERSISTENT_LSTM_FLOOR.md, "The H200 run of
// 2026-11-28": about 60% of a step's instructions).
constexpr int kSlots = 4;

// One prefetch copy: n floats (4: one 16-byte cp.async; else element loads) to dst from src + (t +
// shift) * step at step t, or from alt where t + shift < 0 (c_prev at t = 0: cx).
struct fetch {
    const float *src, *alt;
    float *dst;
    int step, shift, n;
};

__device__ __forceinline__ void fetch_issue(const fetch &f, int t) {
    const float *src = t + f.shift >= 0 ? f.src + (size_t)(t + f.shift) * f.step : f.alt;
    if (f.n == 4) sk_cp_async16(f.dst, src);
    else
        for (int e = 0; e < f.n; e++) f.dst[e] = __ldcg(src + e);
}

// The block's prefetch of `rows` rows of nu floats, `per` floats a copy (4 where every row starts
// 16-byte aligned at both ends, else 1), item i = row i / cpr, column (i % cpr) * per; make(per, cpr, i)
// gives item i's copy. Asynchronously: sk_cp_async_wait_all, then a __syncthreads, before reading.
template <typename Make> struct prefetcher {
    Make make;
    int per, cpr, items;
    fetch slot[kSlots];
    __device__ prefetcher(Make m, int rows, int nu, bool vec) : make(m) {
        per = vec ? 4 : 1, cpr = (nu + per - 1) / per, items = rows * cpr;
        for (int k = 0; k < kSlots; k++) {
            const int i = (int)threadIdx.x + k * (int)blockDim.x;
            slot[k] = i < items ? make(per, cpr, i) : fetch{nullptr, nullptr, nullptr, 0, 0, 0};
        }
    }
    __device__ void issue(int t) const {
#pragma unroll
        for (int k = 0; k < kSlots; k++)
            if (slot[k].n) fetch_issue(slot[k], t);
        for (int i = (int)threadIdx.x + kSlots * (int)blockDim.x; i < items; i += (int)blockDim.x)
            fetch_issue(make(per, cpr, i), t);
    }
};

template <typename Make> __device__ prefetcher<Make> make_prefetcher(Make m, int rows, int nu, bool vec) {
    return prefetcher<Make>(m, rows, nu, vec);
}

__device__ __forceinline__ bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

#if SK_LW_CLUSTERS
// The block's share of a push: for each block p of the cluster (but this one when !self), `rows`
// rows of bytes_of(p) bytes (at most max_bytes) from src_of(p, row) in this block's shared memory to
// the address dst_of(row) has here, in block p's shared memory; `unit` bytes a store. src_of and
// dst_of are those of step parity 0; parity 1's are sshift and dshift bytes on (map_shared_rank maps
// the block's shared memory linearly: the same offset in the peer's). Item i: peer i / (rows *
// chunks), row i / chunks % rows, offset i % chunks * unit.
template <typename Src, typename Dst, typename Len> struct pusher {
    cg::cluster_group &cl;
    bool self;
    int rows, chunks, unit, items;
    size_t sshift, dshift;
    Src src_of;
    Dst dst_of;
    Len bytes_of;
    unsigned char *dst[kSlots]; // null: no store (this block, or past the peer's bytes)
    const unsigned char *src[kSlots];
    __device__ pusher(cg::cluster_group &c, bool own, int r, int max_bytes, int u, size_t ss, size_t ds, Src so, Dst dd,
                      Len bo)
        : cl(c), self(own), rows(r), chunks(max_bytes / u), unit(u), items((int)c.num_blocks() * r * (max_bytes / u)),
          sshift(ss), dshift(ds), src_of(so), dst_of(dd), bytes_of(bo) {
        for (int k = 0; k < kSlots; k++) {
            dst[k] = nullptr, src[k] = nullptr;
            const int i = (int)threadIdx.x + k * (int)blockDim.x;
            if (i < items) item(i, 0, &dst[k], &src[k]);
        }
    }
    // Item i's addresses at step parity par (dst stays null where the item stores nothing).
    __device__ void item(int i, int par, unsigned char **d, const unsigned char **sp) const {
        const int p = i / (rows * chunks), row = i / chunks % rows, off = i % chunks * unit;
        if ((p == (int)cl.block_rank() && !self) || off >= bytes_of(p)) return;
        *d = cl.map_shared_rank(dst_of(row) + off, (unsigned)p) + par * dshift;
        *sp = src_of(p, row) + off + par * sshift;
    }
    __device__ void push(int par) const {
        const size_t ds = par ? dshift : 0, ss = par ? sshift : 0;
        if (unit == 16) { // the configurations' case, with the width known to the compiler
#pragma unroll
            for (int k = 0; k < kSlots; k++)
                if (dst[k]) copy_unit(dst[k] + ds, src[k] + ss, 16);
        } else {
#pragma unroll
            for (int k = 0; k < kSlots; k++)
                if (dst[k]) copy_unit(dst[k] + ds, src[k] + ss, unit);
        }
        for (int i = (int)threadIdx.x + kSlots * (int)blockDim.x; i < items; i += (int)blockDim.x) {
            unsigned char *d = nullptr;
            const unsigned char *sp = nullptr;
            item(i, par, &d, &sp);
            if (d) copy_unit(d, sp, unit);
        }
    }
};
template <typename Src, typename Dst, typename Len>
__device__ pusher<Src, Dst, Len> make_pusher(cg::cluster_group &c, bool own, int rows, int max_bytes, int unit,
                                             size_t sshift, size_t dshift, Src so, Dst dd, Len bo) {
    return pusher<Src, Dst, Len>(c, own, rows, max_bytes, unit, sshift, dshift, so, dd, bo);
}
#endif

// Forward: the projection of step t for the tile's rows, xp [Bb][4][U] (gate g's nu values of
// row bb at (bb * 4 + g) * U): item i of a prefetcher over nb * 4 rows.
__device__ __forceinline__ fetch projection_fetch(const sk_plstm_lw_args &a, const tile &tl, float *xp, int per,
                                                  int cpr, int i) {
    const int r = i / cpr, col = i % cpr * per, bb = r / 4, g = r % 4, H = a.H;
    fetch f;
    f.src = a.xproj + (size_t)(tl.b0 + bb) * a.xrows * 4 * H + (size_t)g * H + tl.j0 + col;
    f.alt = nullptr, f.dst = xp + (size_t)(bb * 4 + g) * a.plan.U + col;
    f.step = 4 * H, f.shift = 0, f.n = min(per, tl.nu - col);
    return f;
}

// Backward: what step t's epilogue reads of the forward and of the layer above, pre [Bb][7][U]:
// gates i, f, g, o, c(t), c(t-1) (cx at t = 0), the upper gradient (dy at the top, else dxin,
// unmasked): item i of a prefetcher over nb * 7 rows.
__device__ __forceinline__ fetch backward_fetch(const sk_plstm_lw_args &a, const tile &tl, float *pre, int per,
                                                int cpr, int i) {
    const int r = i / cpr, col = i % cpr * per, bb = r / 7, q = r % 7, b = tl.b0 + bb, H = a.H, k = a.k;
    const int j = tl.j0 + col;
    fetch f;
    f.alt = nullptr, f.dst = pre + (size_t)(bb * 7 + q) * a.plan.U + col;
    f.shift = 0, f.n = min(per, tl.nu - col);
    if (q < 4) {
        f.src = a.gates + seq_at(a, k, b, 0, 4 * H) + (size_t)q * H + j, f.step = 4 * H;
    } else if (q < 6) { // c(t), c(t-1)
        f.src = a.cs + seq_at(a, k, b, 0, H) + j, f.step = H;
        if (q == 5) f.shift = -1, f.alt = a.cx + ((size_t)k * a.B + b) * H + j;
    } else {
        const float *up = k == a.L - 1 ? a.dy + (size_t)b * a.len * H : a.dxin + (size_t)b * (a.len + 1) * H;
        f.src = up + j, f.step = H;
    }
    return f;
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
    const bool vec = H % 4 == 0 && U % 4 == 0 && aligned16(a.xproj) && aligned16(xp);
    const auto pf = make_prefetcher([&](int per, int cpr, int i) { return projection_fetch(a, tl, xp, per, cpr, i); },
                                    tl.nb * 4, tl.nu, vec);
    pf.issue(0);
    const int drop = a.train && a.p > 0.0f && k < a.L - 1;
    const uint64_t key = drop ? a.keys[k] : 0;
    const size_t s = sizeof(T);
    const int unit = push_unit((size_t)tl.j0 * s | (size_t)tl.nu * s | (size_t)Kf * s | lay.vec | vbuf);
    // Step t pushes this block's slice of h(t) from and into hbuf(t + 1): parity 0's addresses, vbuf
    // bytes on at odd steps.
    unsigned char *h0 = (unsigned char *)hbuf(0);
    const auto push = make_pusher(
        cluster, false, tl.nb, tl.nu * (int)s, unit, vbuf, vbuf,
        [&](int, int row) { return (const unsigned char *)h0 + ((size_t)row * Kf + tl.j0) * s; },
        [&](int row) { return h0 + ((size_t)row * Kf + tl.j0) * s; }, [&](int) { return tl.nu * (int)s; });
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
            const sk_lstm_cell_out o = lstm_cell(gv, cst[bb * U + u]);
            cst[bb * U + u] = o.c;
            a.hh[pad_at(a, k, b, t + 1, H) + j] = o.h;
            next[(size_t)bb * Kf + j] = from_f<T>(o.h);
            forward_store(a, b, t, j, o, drop, key);
        }
        if (t + 1 == len) break; // nobody reads h(len-1) from shared memory
        __syncthreads();          // this block's slice of h(t) in `next`; xp read
        push.push((t + 1) & 1);
        cluster.sync(); // h(t) of the whole group in every block's `next`
        pf.issue(t + 1); // after the barrier: the push and the barrier are what the peers wait for
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
    float *pre = (float *)(smem + lay.pre);     // [Bb][7][U]: the prefetcher's
    float *scratch = (float *)(smem + lay.scratch); // tensor cores: partial sums
    const int K4 = 4 * tl.nu;
    for (int idx = tid; idx < a.plan.wunits * G; idx += nt) { // zero past H and past this block's gates
        const int j = idx / G, r = idx % G;
        w[idx] = from_f<T>(j < H && r < K4 ? a.w[ly.w_hh + ((size_t)(r % 4) * H + tl.j0 + r / 4) * H + j] : 0.0f);
    }
    for (int idx = tid; idx < a.plan.bbr * G; idx += nt) dgl[idx] = from_f<T>(0.0f); // dg(len) = 0
    for (int idx = tid; idx < tl.nb * tl.nu; idx += nt) dcs[(idx / tl.nu) * U + idx % tl.nu] = 0.0f;
    const float *up = top ? a.dy : a.dxin;
    const bool vec = H % 4 == 0 && U % 4 == 0 && aligned16(a.gates) && aligned16(a.cs) && aligned16(a.cx) &&
                     aligned16(up) && aligned16(pre);
    const auto pf = make_prefetcher([&](int per, int cpr, int i) { return backward_fetch(a, tl, pre, per, cpr, i); },
                                    tl.nb * 7, tl.nu, vec);
    pf.issue(a.len - 1);
    const int drop = a.p > 0.0f && !top; // the mask layer k's output met on its way up
    const uint64_t key = drop ? a.keys[k] : 0;
    const int unit = push_unit((size_t)U * 4 | (size_t)H * 4 | lay.acc | lay.recv);
    auto recv_at = [&](int t, int sender, int bb) { return recv + ((size_t)((t & 1) * slices + sender) * a.plan.Bb + bb) * U; };
    // Step t pushes into recv's half t & 1: parity 0's addresses, slices x Bb x U floats on at odd steps.
    const unsigned char *pb = (const unsigned char *)part;
    const auto push = make_pusher(
        cluster, true, tl.nb, U * 4, unit, 0, (size_t)slices * a.plan.Bb * U * 4,
        [&](int p, int row) { return pb + ((size_t)row * H + (size_t)p * U) * 4; },
        [&](int row) { return (unsigned char *)recv_at(0, me, row); }, [&](int p) { return min(U, H - p * U) * 4; });
    cluster.sync(); // every block's buffers ready before any peer pushes into them
    for (int t = a.len - 1; t >= 0; t--) {
        if constexpr (MMA) mma_dots(w, G, 0, dgl, G, 0, 1, H, tl.nb, (K4 + kMmaK<T> - 1) / kMmaK<T> * kMmaK<T>, part, scratch);
        else block_dots(w, G, H, 1, 0, K4, dgl, G, tl.nb, part);
        __syncthreads();
        push.push(t & 1);
        sk_cp_async_wait_all(); // step t's epilogue inputs
        cluster.sync();         // every slice's partials of this block's units in recv
        for (int idx = tid; idx < tl.nb * tl.nu; idx += nt) {
            const int bb = idx / tl.nu, u = idx % tl.nu, b = tl.b0 + bb, j = tl.j0 + u;
            const float *d = pre + (size_t)bb * 7 * U + u;
            float dh = 0.0f; // recurrent part: W_hh^T dg(t+1), slice by slice
            for (int n = 0; n < slices; n++) dh += recv_at(t, n, bb)[u];
            dh += top ? d[6 * U] : (drop ? keep(a, key, b, t, j) : 1.0f) * d[6 * U];
            const sk_lstm_cell_grads r = cell_backward(dh, dcs[bb * U + u], d[0], d[U], d[2 * U], d[3 * U], d[4 * U], d[5 * U]);
            dcs[bb * U + u] = r.dc_prev;
            const size_t dr = pad_at(a, k, b, t, 4 * H);
            for (int g = 0; g < 4; g++) {
                a.dg[dr + (size_t)g * H + j] = r.dpre[g];
                dgl[(size_t)bb * G + u * 4 + g] = from_f<T>(r.dpre[g]);
            }
        }
        __syncthreads(); // dgl written, pre read
        if (t > 0) pf.issue(t - 1);
    }
#endif
}

} // namespace sk_plstm_lw

#endif
