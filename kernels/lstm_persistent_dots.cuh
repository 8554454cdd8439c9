// lstm_persistent_dots.cuh: the inner products of the persistent LSTM kernels
// (lstm_persistent.cu): a block's weight slice in shared memory times the staged batch rows.
// defines: to_f, from_f, warp_sum, block_dots, ldmatrix, tf32_bits, mma_step, mma_tile_sum, mma_dots, kMmaK, kMmaEpr (device
//          only, in namespace sk_plstm)
//
// Both compute acc[n * nrows + m * R + q] = sum_k w_q[m][k] * vec_q[n][k] for the weight
// rows m and batch rows n < nb of weight slice q < R (the backward kernel's two slices; the
// forward R = 1). Results are deterministic: every sum runs in an order fixed by the code,
// the shape and the hardware, never by scheduling.
#ifndef SK_LSTM_PERSISTENT_DOTS_CUH
#define SK_LSTM_PERSISTENT_DOTS_CUH

#include <stdint.h>

#include "device_port.cuh"
#include "lstm_persistent_plan.h"
#include "lstm_persistent_mma.h"

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
// the inner loop). add: results added to acc instead of stored (K in chunks, as mma_dots').
template <typename T>
__device__ void block_dots(const T *w, int wstride, int nrows, int rows_per_unit, int qoff, int K, const T *vec,
                           int vstride, int nb, float *acc, bool add = false) {
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
            if (lane == 0 && b0 + q < nb) {
                float &d = acc[(size_t)(b0 + q) * nrows + r];
                d = add ? d + t : t;
            }
        }
    }
}

// Tensor cores: mma_dots(w, ...) for bf16 operands (mma.sync.m16n8k16) and for fp32 ones
// rounded to TF32 (mma.sync.m16n8k8), fp32 accumulation. kMmaK<T>: the instruction's K;
// kMmaEpr<T>: operand elements per 32-bit fragment register.
template <typename T> constexpr int kMmaK = sizeof(T) == 2 ? 16 : 8;
template <typename T> constexpr int kMmaEpr = sizeof(T) == 2 ? 2 : 1;

// Fragment layouts (PTX ISA 9.7.14.5.8, "Matrix Fragments for mma.m16n8k16 with floating
// point type", and 9.7.14.5.7, "Matrix Fragments for mma.m16n8k8", .tf32): which elements
// each lane loads and where its results go is lstm_persistent_mma.h's arithmetic, checked
// against those tables on the host by tests/test_plstm_mma.c. The problem: C (mrows x nb) =
// w (mrows x K) vec^T, K a multiple of kMmaK with zeros past the real length in both w and
// vec; w has rows up to mrows rounded up to 16 (zeros past mrows; or mrows rows, with
// mma_dots' clamp), vec rows up to nb
// rounded up to 8 (any finite or not values past nb: column n of C depends on row n of vec
// only, and columns past nb are dropped). bf16 strides are even (pairs are 4-byte aligned).
// Each tile's K steps are summed in an order fixed by the shape (mma_tile_sum, and the
// split among warps of lstm_persistent_mma.h). Row strides of 4 mod 8 32-bit words (the
// plan's: an odd multiple of 16 bytes) put the 8 rows of 16 bytes an ldmatrix matrix reads in
// different banks.
//
// Fragments come from shared memory by ldmatrix (one instruction a register set: A's four 8 x 8
// matrices of 16-bit elements, B's two; sk_plstm_ldm_* say which lane addresses which row), read
// as words: a bf16 register is one 32-bit word of a row, low half first; a TF32 one is one fp32
// element, then rounded by cvt.rna.tf32.f32 (to nearest, ties away). The rows must be 16-byte
// aligned: the plans' strides are multiples of 16 bytes.
template <int N> __device__ __forceinline__ void ldmatrix(uint32_t (&r)[N], const void *row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned a = (unsigned)__cvta_generic_to_shared(row);
    if constexpr (N == 4)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(a));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(a));
#elif defined(SK_CUDA_EMU)
    sk_emu_ldmatrix(N, r, row);
#else
    (void)r, (void)row;
    __trap(); // the plan never picks tensor cores below compute capability 8.0
#endif
}
__device__ __forceinline__ uint32_t tf32_bits(uint32_t u) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(u)));
    return r;
#elif defined(SK_CUDA_EMU)
    return sk_emu_tf32_rna(__uint_as_float(u));
#else
    return u; // never reached: mma_tile traps below 8.0
#endif
}

// d += a b on one tile (the operand type picks the instruction).
__device__ __forceinline__ void mma_tile(const __nv_bfloat16 *, float (&d)[4], const uint32_t (&a)[4],
                                         const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(SK_CUDA_EMU)
    sk_emu_mma(0, d, a, b); // bf16 m16n8k16
#else
    (void)d, (void)a, (void)b;
    __trap(); // the plan never picks tensor cores below compute capability 8.0
#endif
}
__device__ __forceinline__ void mma_tile(const float *, float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(SK_CUDA_EMU)
    sk_emu_mma(1, d, a, b); // TF32 m16n8k8
#else
    (void)d, (void)a, (void)b;
    __trap(); // the plan never picks tensor cores below compute capability 8.0
#endif
}

// c += the tile's product over K step ks (kMmaK<T> columns from ks * kMmaK<T>); a_ld, b_ld: the
// rows this lane addresses for ldmatrix, as element offsets from the tiles' corners.
template <typename T>
__device__ __forceinline__ void mma_step(const T *wt, const T *vt, int a_ld, int b_ld, int ks, float (&c)[4]) {
    uint32_t a[4], b[2];
    ldmatrix(a, wt + a_ld + ks * kMmaK<T>);
    ldmatrix(b, vt + b_ld + ks * kMmaK<T>);
    if constexpr (sizeof(T) == 4) {
#pragma unroll
        for (int r = 0; r < 4; r++) a[r] = tf32_bits(a[r]);
#pragma unroll
        for (int r = 0; r < 2; r++) b[r] = tf32_bits(b[r]);
    }
    mma_tile(wt, c, a, b);
}

// One 16 x 8 tile's sum over the K steps [k0, k1) into c. Two accumulators take alternate
// steps: an mma whose accumulator is the previous one's result waits out that one's
// latency, and two independent chains overlap it; c = chain 0 + chain 1 keeps the order fixed.
template <typename T>
__device__ __forceinline__ void mma_tile_sum(const T *wt, const T *vt, int a_ld, int b_ld, int k0, int k1, float (&c)[4]) {
    float c0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, c1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    int ks = k0;
    for (; ks + 1 < k1; ks += 2) {
        mma_step(wt, vt, a_ld, b_ld, ks, c0);
        mma_step(wt, vt, a_ld, b_ld, ks + 1, c1);
    }
    if (ks < k1) mma_step(wt, vt, a_ld, b_ld, ks, c0);
#pragma unroll
    for (int r = 0; r < 4; r++) c[r] = c0[r] + c1[r];
}

// For each slice q < R: C_q (mrows x nb) = w_q (mrows x K) vec_q^T, w_q = w + q*wslice
// (rows wstride apart), vec_q = vec + q*vslice (rows vstride apart); result (m, n) of slice
// q to acc[sk_plstm_acc_index(n, m, mrows*R, R, q)]. The work split (tiles whole, or K cut
// among warps with partial sums added through `scratch`, SK_PLSTM_MMA_SCRATCH_BYTES of
// shared memory) is lstm_persistent_mma.h's. Every thread of the block calls it (it may
// __syncthreads); acc is the caller's to read after its next __syncthreads.
// clamp: w_q holds mrows rows, not mrows rounded up to 16; the lanes of the last row tile that
// address a row past them read row mrows - 1 instead (a result row depends on its weight row
// alone, and the rows past mrows are dropped). add: results added to acc instead of stored (a
// caller that cuts K into chunks sums them chunk after chunk).
template <typename T>
__device__ void mma_dots(const T *w, int wstride, size_t wslice, const T *vec, int vstride, size_t vslice, int R,
                         int mrows, int nb, int K, float *acc, float *scratch, bool clamp = false,
                         bool add = false) {
    constexpr int epr = kMmaEpr<T>;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // The rows this lane addresses for ldmatrix (elements from a tile's corner), the same for every
    // tile (but the last, with clamp).
    const int a_row = sk_plstm_ldm_a_row(lane), a_col = sk_plstm_ldm_a_col(lane, epr);
    const int a_ld = a_row * wstride + a_col;
    const int b_ld = sk_plstm_ldm_b_row(lane) * vstride + sk_plstm_ldm_b_col(lane, epr);
    const int tiles = R * sk_plstm_mma_tiles(mrows, nb), ksteps = K / kMmaK<T>, nrows = mrows * R;
    const int split = sk_plstm_mma_split(tiles, ksteps, kWarps);
    for (int item = warp; item < tiles * split; item += kWarps) {
        const int part = item % split;
        int q, m0, n0;
        sk_plstm_mma_tile_origin(item / split, mrows, nb, &q, &m0, &n0);
        const int a_at = clamp && m0 + a_row >= mrows ? (mrows - 1 - m0) * wstride + a_col : a_ld;
        float c[4];
        mma_tile_sum(w + q * wslice + (size_t)m0 * wstride, vec + q * vslice + (size_t)n0 * vstride, a_at, b_ld,
                     sk_plstm_mma_kbegin(part, split, ksteps), sk_plstm_mma_kbegin(part + 1, split, ksteps), c);
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const int m = m0 + sk_plstm_mma_c_row(lane, r), n = n0 + sk_plstm_mma_c_col(lane, r);
            if (split > 1) scratch[sk_plstm_mma_scratch_index(item, r, lane)] = c[r];
            else if (m < mrows && n < nb) {
                float &d = acc[sk_plstm_acc_index(n, m, nrows, R, q)];
                d = add ? d + c[r] : c[r];
            }
        }
    }
    if (split == 1) return; // uniform across the block: split depends on the shape alone
    __syncthreads();
    for (int e = threadIdx.x; e < tiles * 128; e += blockDim.x) {
        int keep;
        size_t at;
        const float v = sk_plstm_mma_part_sum(scratch, e, split, mrows, nb, R, &keep, &at);
        if (keep) acc[at] = add ? acc[at] + v : v;
    }
}

} // namespace sk_plstm

#endif
