// lstm_persistent_dots.cuh: the inner products of the persistent LSTM kernels
// (lstm_persistent.cu): a block's weight slice in shared memory times the staged batch rows.
// defines: to_f, from_f, warp_sum, block_dots, mma_dots, kMmaK (device only, in namespace sk_plstm)
//
// Both compute acc[n * nrows + m * R + q] = sum_k w[m][k] * vec[n][k] for the weight rows m
// and batch rows n < nb of one call; R and q place a call's rows among the caller's (the
// backward kernel calls once per weight slice q < R). Results are deterministic: every sum
// runs in an order fixed by the code and the hardware, never by scheduling.
#ifndef SK_LSTM_PERSISTENT_DOTS_CUH
#define SK_LSTM_PERSISTENT_DOTS_CUH

#include <stdint.h>

#include <cuda_bf16.h>

#include "lstm_persistent.h"

namespace sk_plstm {

constexpr int kWarps = SK_PLSTM_THREADS / 32;
constexpr int kBatchBlock = SK_PLSTM_BATCH_BLOCK;

// Operands in shared memory: stored as T, computed with as float.
__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// CUDA cores. acc[bb][r] = sum_i w[r][i] * vec[bb][voff(r) + i] for bb < nb, r < nrows,
// i < K. w rows have stride wstride, vec rows vstride; rows_per_unit rows r =
// u*rows_per_unit + q read vec at q*qoff. One warp per weight row r and group of
// kBatchBlock batch rows (register blocking over the batch): each weight element it loads
// from shared memory feeds kBatchBlock products. Every dot product sums in the same fixed
// order whatever the grouping (lane-strided fmaf partial sums, then a fixed xor-shuffle
// tree), so fp32 results are those of one warp per dot product, bit for bit. A group
// reaching past nb recomputes row nb-1 in its spare slots and discards it (no branch in
// the inner loop).
template <typename T>
__device__ void block_dots(const T *w, int wstride, int nrows, int rows_per_unit, int qoff, int K, const T *vec,
                           int vstride, int nb, float *acc) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int groups = (nb + kBatchBlock - 1) / kBatchBlock;
    for (int d = warp; d < groups * nrows; d += kWarps) {
        const int g = d / nrows, r = d % nrows, b0 = g * kBatchBlock;
        const T *wr = w + (size_t)r * wstride;
        const T *vr[kBatchBlock];
        float s[kBatchBlock];
#pragma unroll
        for (int q = 0; q < kBatchBlock; q++) {
            vr[q] = vec + (size_t)min(b0 + q, nb - 1) * vstride + (r % rows_per_unit) * qoff;
            s[q] = 0.0f;
        }
        for (int i = lane; i < K; i += 32) {
            const float wv = to_f(wr[i]);
#pragma unroll
            for (int q = 0; q < kBatchBlock; q++) s[q] = fmaf(wv, to_f(vr[q][i]), s[q]);
        }
#pragma unroll
        for (int q = 0; q < kBatchBlock; q++) {
            const float t = warp_sum(s[q]);
            if (lane == 0 && b0 + q < nb) acc[(size_t)(b0 + q) * nrows + r] = t;
        }
    }
}

// Tensor cores: mma_dots(w, ...) for bf16 operands (mma.sync.m16n8k16) and for fp32 ones
// rounded to TF32 (mma.sync.m16n8k8), fp32 accumulation. kMmaK<T>: the instruction's K.
template <typename T> constexpr int kMmaK = sizeof(T) == 2 ? 16 : 8;

// bf16: mma.sync.m16n8k16 (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating
// point type"; g = lane / 4, c = lane % 4):
//   A (16 x 16, row): a0,a1 = A[g][2c, 2c+1], a2,a3 = A[g+8][2c, 2c+1], a4..a7 the same at
//     columns + 8; each pair is one 32-bit word of a row-major row, low half first;
//   B (16 x 8, col): b0,b1 = B[2c, 2c+1][g], b2,b3 = B[2c+8, 2c+9][g]: B[k][n] = vec[n][k],
//     so each pair is one 32-bit word of a staged batch row;
//   C (16 x 8, fp32): c0,c1 = C[g][2c, 2c+1], c2,c3 = C[g+8][2c, 2c+1].
// The problem: C (mrows x nb) = w (mrows x K) vec^T, K a multiple of 16 with zeros past
// the real length in both w and vec; w has rows up to mrows rounded up to 16 (zeros past
// mrows), vec rows up to nb rounded up to 8 (any finite or not values past nb: column n of
// C depends on row n of vec only, and columns past nb are dropped). Strides are even (bf16
// pairs are 4-byte aligned). One warp per 16 x 8 tile, k ascending: a fixed order. Row
// strides of 8 mod 64 elements (the plan's) put the 8 rows a fragment load touches in
// different banks.
__device__ __forceinline__ uint32_t pair_at(const __nv_bfloat16 *p) { return *(const uint32_t *)p; }

// C (16 x 8) of one tile into acc: rows m0 + g (+8), columns n0 + 2c (+1), where in range.
__device__ __forceinline__ void store_tile(float *acc, int nrows, int R, int q, int mrows, int nb, int m0, int n0,
                                           float d0, float d1, float d2, float d3) {
    const int lane = threadIdx.x % 32, m = m0 + (lane >> 2), n = n0 + 2 * (lane & 3);
    const float out[2][2] = {{d0, d1}, {d2, d3}};
    for (int h = 0; h < 2; h++)
        for (int e = 0; e < 2; e++)
            if (m + 8 * h < mrows && n + e < nb) acc[(size_t)(n + e) * nrows + (size_t)(m + 8 * h) * R + q] = out[h][e];
}

__device__ void mma_dots(const __nv_bfloat16 *w, int wstride, int mrows, const __nv_bfloat16 *vec, int vstride,
                         int nb, int K, float *acc, int nrows, int R, int q) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, c = lane & 3;
    const int mt = (mrows + 15) / 16, nt = (nb + 7) / 8;
    for (int d = warp; d < mt * nt; d += kWarps) {
        const int m0 = (d / nt) * 16, n0 = (d % nt) * 8;
        const __nv_bfloat16 *a_lo = w + (size_t)(m0 + g) * wstride + 2 * c, *a_hi = a_lo + (size_t)8 * wstride;
        const __nv_bfloat16 *bp = vec + (size_t)(n0 + g) * vstride + 2 * c;
        float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
        for (int k0 = 0; k0 < K; k0 += 16) {
            const uint32_t a0 = pair_at(a_lo + k0), a1 = pair_at(a_hi + k0), a2 = pair_at(a_lo + k0 + 8),
                           a3 = pair_at(a_hi + k0 + 8), b0 = pair_at(bp + k0), b1 = pair_at(bp + k0 + 8);
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                         "{%8, %9}, {%0, %1, %2, %3};\n"
                         : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                         : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
        }
        store_tile(acc, nrows, R, q, mrows, nb, m0, n0, d0, d1, d2, d3);
    }
#else
    (void)w, (void)wstride, (void)mrows, (void)vec, (void)vstride, (void)nb, (void)K, (void)acc, (void)nrows, (void)R,
        (void)q;
    __trap(); // the plan never picks tensor cores below compute capability 8.0
#endif
}

// TF32: mma.sync.m16n8k8 (PTX ISA, "Matrix Fragments for mma.m16n8k8", .tf32; g, c as above):
//   A (16 x 8, row): a0 = A[g][c], a1 = A[g+8][c], a2 = A[g][c+4], a3 = A[g+8][c+4];
//   B (8 x 8, col): b0 = B[c][g], b1 = B[c+4][g] (= vec[n0+g][k0+c], vec[n0+g][k0+c+4]);
//   C as for bf16. Operands are fp32 in shared memory, rounded to TF32 (cvt.rna.tf32.f32,
//   to nearest, ties away) as they are loaded. The same padding rules with K a multiple of
//   8; row strides of 4 mod 32 floats keep the fragment loads free of bank conflicts.
__device__ __forceinline__ uint32_t tf32_at(const float *p) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(*p));
    return r;
}

__device__ void mma_dots(const float *w, int wstride, int mrows, const float *vec, int vstride, int nb, int K,
                         float *acc, int nrows, int R, int q) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, c = lane & 3;
    const int mt = (mrows + 15) / 16, nt = (nb + 7) / 8;
    for (int d = warp; d < mt * nt; d += kWarps) {
        const int m0 = (d / nt) * 16, n0 = (d % nt) * 8;
        const float *a_lo = w + (size_t)(m0 + g) * wstride + c, *a_hi = a_lo + (size_t)8 * wstride;
        const float *bp = vec + (size_t)(n0 + g) * vstride + c;
        float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
        for (int k0 = 0; k0 < K; k0 += 8) {
            const uint32_t a0 = tf32_at(a_lo + k0), a1 = tf32_at(a_hi + k0), a2 = tf32_at(a_lo + k0 + 4),
                           a3 = tf32_at(a_hi + k0 + 4), b0 = tf32_at(bp + k0), b1 = tf32_at(bp + k0 + 4);
            asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                         "{%8, %9}, {%0, %1, %2, %3};\n"
                         : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                         : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
        }
        store_tile(acc, nrows, R, q, mrows, nb, m0, n0, d0, d1, d2, d3);
    }
#else
    (void)w, (void)wstride, (void)mrows, (void)vec, (void)vstride, (void)nb, (void)K, (void)acc, (void)nrows, (void)R,
        (void)q;
    __trap(); // the plan never picks tensor cores below compute capability 8.0
#endif
}

} // namespace sk_plstm

#endif
