// sample_persistent_kernels.cuh: the body of the sampling kernel (sample_persistent.h says what
// it computes, sample_persistent.cu how it is planned and launched), in a header so that the
// emulated device runs the very same code on the CPU.
// defines: sample_kernel, block_draw, poll_group, ll_word (in namespace sk_sample)
#ifndef SK_SAMPLE_PERSISTENT_KERNELS_CUH
#define SK_SAMPLE_PERSISTENT_KERNELS_CUH

#include "device_port.cuh"
#include "lstm_persistent_dots.cuh"
#include "lstm_persistent_kernels.cuh" // lstm_cell, stage_row
#include "sample_persistent_args.h"

namespace sk_sample {

using sk_plstm::block_dots;
using sk_plstm::kWarps;
using sk_plstm::stage_row;

// The best of two candidates (sample_draw.h's ranking; -1: none yet).
__device__ __forceinline__ int better(const float *lg, int a, int b) {
    if (a < 0) return b;
    if (b < 0) return a;
    return sk_candidate_before(lg[b], b, lg[a], a) ? b : a;
}

// One draw from the logits lg (V,) in shared memory, by the whole block: sample_draw.h's draw
// with the uniform u, as sk_sample_token computes it on the CPU (the argmax and the ranking
// are exact whatever the reduction order: the ranking is a total order; the weights' running
// sums are sk_draw_index's, one thread adding them in candidate order). p (V,), ranked (V,) and
// sums (V,) are scratch; reduce (2 x 32 words). Every thread gets the token.
__device__ int block_draw(const float *lg, int V, const sk_sample_opts &o, float u, float *p, int *ranked,
                          double *sums, int *reduce) {
    const int tid = threadIdx.x, nt = blockDim.x, lane = tid % 32, warp = tid / 32;
    int best = -1;
    for (int v = tid; v < V; v += nt) best = better(lg, best, v);
    for (int off = 16; off > 0; off >>= 1) best = better(lg, best, __shfl_xor_sync(0xffffffffu, best, off));
    if (lane == 0) reduce[warp] = best;
    __syncthreads();
    if (tid == 0) {
        int b = -1;
        for (int w = 0; w < kWarps; w++) b = better(lg, b, reduce[w]);
        reduce[32] = b;
    }
    __syncthreads();
    best = reduce[32];
    if (o.argmax) return best;
    const int k = (o.top_k > 0 && o.top_k < V) ? o.top_k : V;
    const int nucleus = o.top_p > 0.0f && o.top_p < 1.0f;
    if (k < V || nucleus) { // candidate v's rank: how many candidates rank before it
        for (int v = tid; v < V; v += nt) {
            int rank = 0;
            for (int w = 0; w < V; w++) rank += sk_candidate_before(lg[w], w, lg[v], v);
            if (rank < k) ranked[rank] = v;
        }
    } else {
        for (int v = tid; v < V; v += nt) ranked[v] = v;
    }
    __syncthreads();
    for (int i = tid; i < k; i += nt) p[i] = sk_draw_weight(lg[ranked[i]], lg[best], o.temperature);
    __syncthreads();
    if (tid == 0) {
        sk_draw_sums(p, k, sums);
        const int i = sk_draw_index_sums(sums, k, o.top_p, u);
        reduce[33] = i < 0 ? best : ranked[i];
    }
    __syncthreads();
    return reduce[33];
}

// A hand-off word: a value's 32 bits and the tag of the step that stored it (step i stores tag
// i + 1; the buffers start zeroed, tag 0: nothing yet). Stored and loaded whole (sk_flag_store,
// sk_flag_load), so a reader that sees the tag it waits for holds the value of that step: no
// fence, no grid.sync. Two halves of h (step i in half i % 2) are enough: a block overwrites
// half i % 2 at step i + 2 only after every block stored its h of step i + 1, which each did
// after reading what it needed of step i.
__device__ __forceinline__ uint64_t ll_word(uint32_t bits, int tag) { return (uint64_t)(uint32_t)tag << 32 | bits; }
__device__ __forceinline__ int ll_tag(uint64_t w) { return (int)(uint32_t)(w >> 32); }

// Waits for hand-off words and stores their values, by the block: for every stream bb < nb, na
// words from srca + bb * H (tag taga) then nb_ words from srcb + bb * H (tag tagb) into
// dst + bb * dstride, contiguous. Each thread has kFlight loads in flight before it waits on the
// first, so a group costs ceil(nb (na + nb_) / (threads kFlight)) round trips, whatever the rows.
constexpr int kFlight = 16;
__device__ __forceinline__ const uint64_t *poll_src(const uint64_t *srca, int na, const uint64_t *srcb, int H, int n,
                                                   int e, float **at, float *dst, int dstride) {
    const int bb = e / n, c = e % n;
    *at = dst + (size_t)bb * dstride + c;
    return c < na ? srca + (size_t)bb * H + c : srcb + (size_t)bb * H + (c - na);
}
__device__ void poll_group(float *dst, int dstride, int nb, int H, const uint64_t *srca, int na, int taga,
                           const uint64_t *srcb, int nb_, int tagb) {
    const int tid = threadIdx.x, nt = blockDim.x, n = na + nb_, total = nb * n;
    for (int e0 = tid; e0 < total; e0 += nt * kFlight) {
        uint64_t v[kFlight];
        float *at;
#pragma unroll
        for (int q = 0; q < kFlight; q++) {
            const int e = e0 + q * nt;
            v[q] = e < total ? sk_flag_load(poll_src(srca, na, srcb, H, n, e, &at, dst, dstride)) : 0;
        }
#pragma unroll
        for (int q = 0; q < kFlight; q++) {
            const int e = e0 + q * nt;
            if (e >= total) break;
            const uint64_t *src = poll_src(srca, na, srcb, H, n, e, &at, dst, dstride);
            const int tag = e % n < na ? taga : tagb;
            while (ll_tag(v[q]) != tag) {
                sk_spin_pause();
                v[q] = sk_flag_load(src);
            }
            *at = __uint_as_float((uint32_t)v[q]);
        }
    }
}

// The tokens streams b0 .. b0 + nb - 1 read at step i > 0 into tok[b] when blocks draw their own
// streams (with plan.draw_all every block drew them into tok itself): the drawing blocks'
// hand-off words, one round trip for the group. The caller syncs the block before reading tok.
__device__ void gather_tokens(const sk_sample_args &a, int32_t *tok, int b0, int nb, int i) {
    for (int b = b0 + (int)threadIdx.x; b < b0 + nb; b += blockDim.x) {
        uint64_t v = sk_flag_load(a.tokll + b);
        while (ll_tag(v) != i) {
            sk_spin_pause();
            v = sk_flag_load(a.tokll + b);
        }
        tok[b] = (int32_t)(uint32_t)v;
    }
}

// The shared-memory regions of sample_persistent_plan.h and where the embedding and fc are read.
struct Smem {
    float *w, *bias, *cst, *vec, *pre, *lg, *pw;
    const float *emb, *fcw, *fcb; // resident copies, or the parameters in global memory
    int *ranked, *reduce;
    double *sums;
    int32_t *tok;
};

__device__ Smem carve(const sk_sample_args &a) {
    unsigned char *smem = sk_dynamic_smem();
    const sk_sample_smem_layout lay = sk_sample_smem_carve(a.plan.U, a.plan.sb, a.B, a.V, a.E, a.H, a.L, a.plan.resident);
    Smem s;
    s.w = (float *)(smem + lay.w);        // layer k: [4U][K_k], row u*4 + g = row g*H + j0 + u
    s.bias = (float *)(smem + lay.bias);  // [L][4U][2]: b_ih, b_hh
    s.cst = (float *)(smem + lay.c);      // [L][B][U]
    s.vec = (float *)(smem + lay.vec);    // [sb][Kmax]
    s.pre = (float *)(smem + lay.pre);    // [sb][4U]
    s.lg = (float *)(smem + lay.logits);  // [V]
    s.pw = (float *)(smem + lay.weights); // [V]
    s.ranked = (int *)(smem + lay.ranked); // [V]
    s.sums = (double *)(smem + lay.sums);  // [V]
    s.tok = (int32_t *)(smem + lay.tokens); // [B]
    s.reduce = (int *)(smem + lay.reduce); // [64]
    const bool r = a.plan.resident;
    s.emb = r ? (const float *)(smem + lay.emb) : a.w + a.off_emb; // [V][E]
    s.fcw = r ? (const float *)(smem + lay.fcw) : a.w + a.off_fcw; // [V][H]
    s.fcb = r ? (const float *)(smem + lay.fcb) : a.w + a.off_fcb; // [V]
    return s;
}

// The block's rows of every layer, its biases, its units' cell state, and the resident copies.
__device__ void load_block(const sk_sample_args &a, const Smem &s, int j0, int nu) {
    const int tid = threadIdx.x, nt = blockDim.x, B = a.B, H = a.H, U = a.plan.U, V = a.V;
    size_t wk = 0;
    for (int k = 0; k < a.L; k++) {
        const sk_plstm_layer ly = a.layers[k];
        const int K = ly.in + H;
        for (int idx = tid; idx < 4 * nu * K; idx += nt) {
            const int r = idx / K, i = idx % K;
            const size_t row = (size_t)(r % 4) * H + j0 + r / 4;
            s.w[wk + idx] = i < ly.in ? a.w[ly.w_ih + row * ly.in + i] : a.w[ly.w_hh + row * H + (i - ly.in)];
        }
        for (int r = tid; r < 4 * nu; r += nt) {
            const size_t row = (size_t)(r % 4) * H + j0 + r / 4;
            s.bias[((size_t)k * 4 * U + r) * 2] = a.w[ly.b_ih + row];
            s.bias[((size_t)k * 4 * U + r) * 2 + 1] = a.w[ly.b_hh + row];
        }
        for (int idx = tid; idx < B * nu; idx += nt) {
            const int b = idx / nu, u = idx % nu;
            s.cst[((size_t)k * B + b) * U + u] = a.cx[((size_t)k * B + b) * H + j0 + u];
        }
        wk += (size_t)4 * U * K;
    }
    if (a.plan.resident) {
        for (size_t i = tid; i < (size_t)V * a.E; i += nt) ((float *)s.emb)[i] = a.w[a.off_emb + i];
        for (size_t i = tid; i < (size_t)V * H; i += nt) ((float *)s.fcw)[i] = a.w[a.off_fcw + i];
        for (int i = tid; i < V; i += nt) ((float *)s.fcb)[i] = a.w[a.off_fcb + i];
    }
    __syncthreads();
}

// [input | h_{t-1}] of streams b0 .. b0 + nb - 1 for layer k at step i into vec's rows: layer 0's
// input is the embedding of the stream's token, a layer above's the h below at step i; h_{t-1}
// is hx at step 0. Waits for the words it polls; the caller waits for the copies and syncs.
__device__ void stage_group(const sk_sample_args &a, const Smem &s, int k, int b0, int nb, int i) {
    const int in = a.layers[k].in, H = a.H, B = a.B, Kmax = max(a.E, H) + H;
    const uint64_t *now = a.hll + (size_t)(i & 1) * a.L * B * H, *before = a.hll + (size_t)((i - 1) & 1) * a.L * B * H;
    if (k == 0) {
        if (i > 0 && !a.plan.draw_all) {
            gather_tokens(a, s.tok, b0, nb, i);
            __syncthreads();
        }
        for (int bb = 0; bb < nb; bb++) {
            const int b = b0 + bb;
            const float *e = s.emb + (size_t)(i == 0 ? a.x[b] : s.tok[b]) * a.E;
            float *row = s.vec + (size_t)bb * Kmax;
            if (a.plan.resident)
                for (int c = threadIdx.x; c < a.E; c += blockDim.x) row[c] = e[c];
            else
                stage_row(row, e, a.E);
        }
    }
    const uint64_t *below = k > 0 ? now + ((size_t)(k - 1) * B + b0) * H : nullptr;
    if (i == 0) {
        for (int bb = 0; bb < nb; bb++)
            stage_row(s.vec + (size_t)bb * Kmax + in, a.hx + ((size_t)k * B + b0 + bb) * H, H);
        if (k > 0) poll_group(s.vec, Kmax, nb, H, below, H, i + 1, below, 0, 0);
    } else {
        const uint64_t *mine = before + ((size_t)k * B + b0) * H;
        if (k > 0) poll_group(s.vec, Kmax, nb, H, below, H, i + 1, mine, H, i);
        else poll_group(s.vec + in, Kmax, nb, H, mine, H, i, mine, 0, 0);
    }
}

// Layer k at step i for every stream: the block's units' cells, their h handed off.
__device__ void layer_step(const sk_sample_args &a, const Smem &s, size_t wk, int j0, int nu, int k, int i) {
    const int B = a.B, H = a.H, U = a.plan.U, sb = a.plan.sb, tid = threadIdx.x, nt = blockDim.x;
    const int K = a.layers[k].in + H, Kmax = max(a.E, H) + H;
    uint64_t *hout = a.hll + (size_t)(i & 1) * a.L * B * H;
    for (int b0 = 0; b0 < B; b0 += sb) {
        const int nb = min(sb, B - b0);
        stage_group(a, s, k, b0, nb, i);
        sk_cp_async_wait_all();
        __syncthreads();
        block_dots(s.w + wk, K, 4 * nu, 4, 0, K, s.vec, Kmax, nb, s.pre);
        __syncthreads();
        for (int idx = tid; idx < nb * nu; idx += nt) {
            const int bb = idx / nu, u = idx % nu, b = b0 + bb;
            float gv[4];
            for (int g = 0; g < 4; g++) {
                const int r = u * 4 + g;
                const float *br = s.bias + ((size_t)k * 4 * U + r) * 2;
                gv[g] = s.pre[(size_t)bb * 4 * nu + r] + br[0] + br[1];
            }
            float *cp = s.cst + ((size_t)k * B + b) * U + u;
            const sk_lstm_cell_out o = sk_plstm::lstm_cell(gv, *cp);
            *cp = o.c;
            const size_t at = ((size_t)k * B + b) * H + j0 + u;
            sk_flag_store(hout + at, ll_word(__float_as_uint(o.h), i + 1));
            if (i == a.n - 1) a.hy[at] = o.h, a.cy[at] = o.c;
        }
        // No barrier here: the next streams' staging writes vec, which this loop does not
        // read, and their dot products write pre only after the barrier that follows it.
    }
}

// The draws of step i: every stream in every block (plan.draw_all), else block d those of
// streams d, d + blocks, ...: the top layer's h, fc (its V rows as the batch of block_dots, one
// h row as the weights: the same fmaf order per logit, V / 4 rows a warp at once), the draw.
__device__ void draw_step(const sk_sample_args &a, const Smem &s, int i) {
    const int B = a.B, V = a.V, H = a.H, tid = threadIdx.x, nt = blockDim.x, all = a.plan.draw_all;
    const uint64_t *htop = a.hll + (size_t)(i & 1) * a.L * B * H + (size_t)(a.L - 1) * B * H;
    for (int b = all ? 0 : (int)blockIdx.x; b < B; b += all ? 1 : (int)gridDim.x) {
        poll_group(s.vec, H, 1, H, htop + (size_t)b * H, H, i + 1, htop, 0, 0);
        __syncthreads();
        block_dots(s.vec, H, 1, 1, 0, H, s.fcw, H, V, s.lg);
        __syncthreads();
        for (int v = tid; v < V; v += nt) s.lg[v] += s.fcb[v];
        __syncthreads();
        const float uni = sk_sample_uniform(a.keys[b], (uint64_t)(a.position + i));
        const int token = block_draw(s.lg, V, a.opts, uni, s.pw, s.ranked, s.sums, s.reduce);
        const bool writer = !all || blockIdx.x == 0;
        if (tid == 0) {
            if (all) s.tok[b] = token;
            else sk_flag_store(a.tokll + b, ll_word((uint32_t)token, i + 1));
            if (writer) a.tokens[(size_t)b * a.n + i] = token;
        }
        if (writer && i == a.n - 1)
            for (int v = tid; v < V; v += nt) a.logits[(size_t)b * V + v] = s.lg[v];
        __syncthreads(); // vec, lg and reduce are reused by the next stream
    }
}

// Every step of every stream (sample_persistent.h). No grid.sync: blocks wait on hand-off words
// for exactly what they read; the cooperative launch only keeps every block resident.
__global__ void __launch_bounds__(SK_SAMPLE_THREADS) sample_kernel(sk_sample_args a) {
    const Smem s = carve(a);
    const int j0 = blockIdx.x * a.plan.U, nu = min(a.plan.U, a.H - j0);
    load_block(a, s, j0, nu);
    for (int i = 0; i < a.n; i++) {
        size_t wk = 0;
        for (int k = 0; k < a.L; k++) {
            layer_step(a, s, wk, j0, nu, k, i);
            wk += (size_t)4 * a.plan.U * (a.layers[k].in + a.H);
        }
        draw_step(a, s, i);
    }
}

} // namespace sk_sample

#endif
