// sample_persistent_kernels.cuh: the body of the sampling kernel (sample_persistent.h says what
// it computes, sample_persistent.cu how it is planned and launched), in a header so that the
// emulated device runs the very same code on the CPU.
// defines: sample_kernel, block_draw (in namespace sk_sample)
#ifndef SK_SAMPLE_PERSISTENT_KERNELS_CUH
#define SK_SAMPLE_PERSISTENT_KERNELS_CUH

#include "device_port.cuh"
#include "lstm_persistent_dots.cuh"
#include "lstm_persistent_kernels.cuh" // lstm_cell, stage_row
#include "sample_persistent_args.h"

namespace sk_sample {

namespace cg = cooperative_groups;
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
// are exact whatever the reduction order: the ranking is a total order). p (V,) and ranked
// (V,) are scratch; reduce (2 x 32 words). Every thread gets the token.
__device__ int block_draw(const float *lg, int V, const sk_sample_opts &o, float u, float *p, int *ranked,
                          int *reduce) {
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
        const int i = sk_draw_index(p, k, o.top_p, u);
        reduce[33] = i < 0 ? best : ranked[i];
    }
    __syncthreads();
    return reduce[33];
}

__global__ void __launch_bounds__(SK_SAMPLE_THREADS) sample_kernel(sk_sample_args a) {
    cg::grid_group grid = cg::this_grid();
    unsigned char *smem = sk_dynamic_smem();
    const int B = a.B, V = a.V, E = a.E, H = a.H, L = a.L, U = a.plan.U, sb = a.plan.sb;
    const int j0 = blockIdx.x * U, nu = min(U, H - j0), Kmax = max(E, H) + H, tid = threadIdx.x, nt = blockDim.x;
    const sk_sample_smem_layout lay = sk_sample_smem_carve(U, sb, B, V, E, H, L);
    float *w = (float *)(smem + lay.w);         // layer k: [4U][K_k], row u*4 + g = row g*H + j0 + u
    float *bias = (float *)(smem + lay.bias);   // [L][4U][2]: b_ih, b_hh
    float *cst = (float *)(smem + lay.c);       // [L][B][U]
    float *vec = (float *)(smem + lay.vec);     // [sb][Kmax]
    float *pre = (float *)(smem + lay.pre);     // [sb][4U]
    float *lg = (float *)(smem + lay.logits);   // [V]
    float *pw = (float *)(smem + lay.weights);  // [V]
    int *ranked = (int *)(smem + lay.ranked);   // [V]
    int *reduce = (int *)(smem + lay.reduce);   // [64]
    const size_t LBH = (size_t)L * B * H;

    // The block's rows of every layer, its biases and its units' cell state.
    size_t wk = 0;
    for (int k = 0; k < L; k++) {
        const sk_plstm_layer ly = a.layers[k];
        const int K = ly.in + H;
        for (int idx = tid; idx < 4 * nu * K; idx += nt) {
            const int r = idx / K, i = idx % K;
            const size_t row = (size_t)(r % 4) * H + j0 + r / 4;
            w[wk + idx] = i < ly.in ? a.w[ly.w_ih + row * ly.in + i] : a.w[ly.w_hh + row * H + (i - ly.in)];
        }
        for (int r = tid; r < 4 * nu; r += nt) {
            const size_t row = (size_t)(r % 4) * H + j0 + r / 4;
            bias[((size_t)k * 4 * U + r) * 2] = a.w[ly.b_ih + row];
            bias[((size_t)k * 4 * U + r) * 2 + 1] = a.w[ly.b_hh + row];
        }
        for (int idx = tid; idx < B * nu; idx += nt) {
            const int b = idx / nu, u = idx % nu;
            cst[((size_t)k * B + b) * U + u] = a.cx[((size_t)k * B + b) * H + j0 + u];
        }
        wk += (size_t)4 * U * K;
    }
    __syncthreads();

    for (int i = 0; i < a.n; i++) {
        const float *hprev = i == 0 ? a.hx : a.hbuf + (size_t)((i - 1) & 1) * LBH; // (L, B, H) at step i-1
        float *hcur = a.hbuf + (size_t)(i & 1) * LBH;
        wk = 0;
        for (int k = 0; k < L; k++) {
            const sk_plstm_layer ly = a.layers[k];
            const int in = ly.in, K = in + H;
            for (int b0 = 0; b0 < B; b0 += sb) {
                const int nb = min(sb, B - b0);
                for (int bb = 0; bb < nb; bb++) { // [input | h_{t-1}] of stream b
                    const int b = b0 + bb;
                    float *row = vec + (size_t)bb * Kmax;
                    if (k == 0) { // the embedding of this step's input (drawn by another block)
                        const int32_t x = i == 0 ? a.x[b] : __ldcg(a.tokens + (size_t)b * a.n + i - 1);
                        stage_row(row, a.w + a.off_emb + (size_t)x * E, E);
                    } else {
                        stage_row(row, hcur + ((size_t)(k - 1) * B + b) * H, H);
                    }
                    stage_row(row + in, hprev + ((size_t)k * B + b) * H, H);
                }
                sk_cp_async_wait_all();
                __syncthreads();
                block_dots(w + wk, K, 4 * nu, 4, 0, K, vec, Kmax, nb, pre);
                __syncthreads();
                for (int idx = tid; idx < nb * nu; idx += nt) {
                    const int bb = idx / nu, u = idx % nu, b = b0 + bb;
                    float gv[4];
                    for (int g = 0; g < 4; g++) {
                        const int r = u * 4 + g;
                        const float *br = bias + ((size_t)k * 4 * U + r) * 2;
                        gv[g] = pre[(size_t)bb * 4 * nu + r] + br[0] + br[1];
                    }
                    float *cp = cst + ((size_t)k * B + b) * U + u;
                    const sk_lstm_cell_out o = sk_plstm::lstm_cell(gv, *cp);
                    const float c = o.c, h = o.h;
                    *cp = c;
                    const size_t at = ((size_t)k * B + b) * H + j0 + u;
                    hcur[at] = h;
                    if (i == a.n - 1) a.hy[at] = h, a.cy[at] = c;
                }
                // No barrier here: the next streams' staging writes vec, which this loop does not
                // read, and their dot products write pre only after the barrier that follows it.
            }
            wk += (size_t)4 * U * K;
            grid.sync();
        }
        // The draws: block d those of streams d, d + blocks, ...
        for (int b = blockIdx.x; b < B; b += gridDim.x) {
            stage_row(vec, hcur + ((size_t)(L - 1) * B + b) * H, H);
            sk_cp_async_wait_all();
            __syncthreads();
            block_dots(a.w + a.off_fcw, H, V, 1, 0, H, vec, Kmax, 1, lg);
            __syncthreads();
            for (int v = tid; v < V; v += nt) lg[v] += a.w[a.off_fcb + v];
            __syncthreads();
            const float uni = sk_sample_uniform(a.keys[b], (uint64_t)(a.position + i));
            const int token = block_draw(lg, V, a.opts, uni, pw, ranked, reduce);
            if (tid == 0) a.tokens[(size_t)b * a.n + i] = token;
            if (i == a.n - 1)
                for (int v = tid; v < V; v += nt) a.logits[(size_t)b * V + v] = lg[v];
            __syncthreads(); // vec, lg and reduce are reused by the next stream
        }
        if (i + 1 < a.n) grid.sync(); // the tokens, for the next step's embeddings
    }
}

} // namespace sk_sample

#endif
