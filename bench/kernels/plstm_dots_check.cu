// plstm_dots_check.cu: the persistent LSTM kernel's inner products alone on the GPU
// (block_dots on CUDA cores in fp32 and bf16, mma_dots on tensor cores in bf16 and TF32;
// kernels/lstm_persistent_dots.cuh), called exactly as the forward and backward kernels call
// them, at strides and chunk sizes of this device's real plans, against the plain product.
// If the LSTM parity tests fail for a tensor-core variant, this says in seconds whether the
// inner product is at fault. tests/test_plstm_mma.c checks the same addressing on the host
// with an emulated mma.sync; this is the check against the real instruction.
// defines: main
//
//   build/plstm_dots_check [problems]   (default 400 per variant; exit 0 all exact, 1 a
//                                        mismatch, 77 no usable device)
//
// Each problem: R weight slices (forward 1; backward 2, or 1 at the top layer), laid out as
// the kernels hold them: on CUDA cores and in the forward, slice q at column q*G of rows of
// `stride` elements; on tensor cores in the backward, slice q a [rows][G] matrix of its own
// (stride G). klen real columns and zeros up to the instruction's K, mrows real weight rows
// (zeros up to 16 on tensor cores), nb batch rows (NaN rows up to 8 on tensor cores: they
// must not leak). Operands are
// integers in [-8, 8], exact in bf16 and TF32, so every partial sum is an integer below
// 2^24 and any summation order gives the same fp32 value: the tolerance is exact.
// Every acc element outside the call's results must keep its sentinel.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#include "lstm_persistent_dots.cuh"

extern "C" {
#include "shakespeare/rng.h"
}

using namespace sk_plstm;

namespace {

struct problem {
    int backward, R, stride, G, mrows, klen, kpad, nb, wrows, brows;
    int slices_apart; // tensor-core backward: slice q at q*wrows*stride (weights), q*brows*stride (vectors)
};

// Where element (row i of `rows`, slice q, column k) of a problem's operands sits.
size_t at(const problem &p, int rows, int i, int q, int k) {
    return p.slices_apart ? ((size_t)q * rows + i) * p.stride + k : (size_t)i * p.stride + (size_t)q * p.G + k;
}

// One block: the operands into shared memory as T, then the inner products as the kernels
// call them, results straight to global acc.
template <typename T, bool MMA> __global__ void __launch_bounds__(SK_PLSTM_THREADS) dots_kernel(const float *w, const float *vec, problem p, float *acc) {
    extern __shared__ __align__(16) unsigned char smem[];
    const int S = p.slices_apart ? 2 : 1; // stride is even: vs stays 4-byte aligned
    const int wn = S * p.wrows * p.stride, vn = S * p.brows * p.stride;
    T *ws = (T *)smem, *vs = ws + wn;
    float *scratch = (float *)(smem + (((size_t)wn + vn) * sizeof(T) + 15) / 16 * 16);
    for (int i = threadIdx.x; i < wn; i += blockDim.x) ws[i] = from_f<T>(w[i]);
    for (int i = threadIdx.x; i < vn; i += blockDim.x) vs[i] = from_f<T>(vec[i]);
    __syncthreads();
    if constexpr (MMA) {
        if (p.backward) // [2][rows][G], as plstm_backward_kernel holds them
            mma_dots(ws, p.stride, (size_t)p.wrows * p.stride, vs, p.stride, (size_t)p.brows * p.stride, p.R, p.mrows,
                     p.nb, p.kpad, acc, scratch);
        else
            mma_dots(ws, p.stride, 0, vs, p.stride, 0, 1, p.mrows, p.nb, p.kpad, acc, scratch);
    } else if (!p.backward) {
        block_dots(ws, p.stride, p.mrows, 4, 0, p.klen, vs, p.stride, p.nb, acc);
    } else {
        block_dots(ws, (2 / p.R) * p.G, p.mrows * p.R, p.R, p.G, p.klen, vs, p.stride, p.nb, acc);
    }
}

int rand_int(sk_rng *r, int lo, int hi) { return lo + (int)(sk_rng_u64(r) % (uint64_t)(hi - lo + 1)); }

#define CUDA_OR_EXIT(call)                                                                                   \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            fprintf(stderr, "plstm_dots_check: %s failed: %s\n", #call, cudaGetErrorString(e_));            \
            exit(1);                                                                                         \
        }                                                                                                    \
    } while (0)

// Runs `count` problems of one variant; returns the number that were not exact.
int check_variant(sk_plstm_operands op, int sms, int optin, int count, sk_rng *r) {
    static const char *names[4] = {"fp32 CUDA cores", "bf16 CUDA cores", "bf16 tensor cores", "tf32 tensor cores"};
    const int mma = op == SK_PLSTM_BF16_MMA || op == SK_PLSTM_TF32_MMA;
    const void *kernel = op == SK_PLSTM_FP32       ? (const void *)dots_kernel<float, false>
                         : op == SK_PLSTM_BF16     ? (const void *)dots_kernel<__nv_bfloat16, false>
                         : op == SK_PLSTM_BF16_MMA ? (const void *)dots_kernel<__nv_bfloat16, true>
                                                   : (const void *)dots_kernel<float, true>;
    CUDA_OR_EXIT(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    const size_t s = sk_plstm_operand_bytes(op);
    int done = 0, failed = 0;
    long results = 0;
    while (done < count) {
        const int B = rand_int(r, 1, 48), E = rand_int(r, 1, 90), H = rand_int(r, 1, 90), L = rand_int(r, 1, 4);
        sk_plstm_plan pl;
        if (!sk_plstm_plan_shape(&pl, sms, optin, 9, B, E, H, L, op)) continue;
        problem p = {};
        p.backward = done % 2;
        const int nu = rand_int(r, 0, 1) ? pl.U : rand_int(r, 1, pl.U), bc = p.backward ? pl.bc_bwd : pl.bc_fwd;
        p.nb = rand_int(r, 1, bc < B ? bc : B);
        if (!p.backward) p.R = 1, p.stride = p.G = pl.kstride, p.mrows = 4 * nu, p.klen = (rand_int(r, 0, 1) ? E : H) + H;
        else p.R = rand_int(r, 1, 2), p.G = pl.gstride, p.stride = (mma ? 1 : 2) * pl.gstride, p.mrows = nu, p.klen = 4 * H;
        p.slices_apart = mma && p.backward;
        const int kstep = op == SK_PLSTM_BF16_MMA ? 16 : 8;
        p.kpad = mma ? (p.klen + kstep - 1) / kstep * kstep : p.klen;
        p.wrows = mma ? (p.mrows + 15) / 16 * 16 : p.mrows;
        p.brows = mma ? (p.nb + 7) / 8 * 8 : p.nb;
        const int S = p.slices_apart ? 2 : 1;
        const size_t wn = (size_t)S * p.wrows * p.stride, vn = (size_t)S * p.brows * p.stride;
        const size_t smem = ((wn + vn) * s + 15) / 16 * 16 + (mma ? SK_PLSTM_MMA_SCRATCH_BYTES : 0);
        if (smem > (size_t)optin) continue; // within the plan's budget by construction; kept safe
        const int nrows = p.mrows * p.R, total = p.brows * nrows + 64;
        float *w = (float *)calloc(wn, 4), *v = (float *)calloc(vn, 4), *acc = (float *)malloc((size_t)total * 4);
        if (!w || !v || !acc) exit(1);
        // Row i's column k; in the interleaved layout a row's column c is slice c / G's k = c % G.
        for (size_t i = 0; i < wn; i++) {
            const int row = (int)(i / p.stride % p.wrows), k = (int)(i % p.stride) % p.G;
            w[i] = row < p.mrows && k < p.klen ? (float)rand_int(r, -8, 8) : 0.0f;
        }
        for (size_t i = 0; i < vn; i++) {
            const int row = (int)(i / p.stride % p.brows), k = (int)(i % p.stride) % p.G;
            v[i] = row >= p.nb ? NAN : k < p.klen ? (float)rand_int(r, -8, 8) : 0.0f;
        }
        for (int i = 0; i < total; i++) acc[i] = -12345.0f;
        float *dw, *dv, *dacc;
        CUDA_OR_EXIT(cudaMalloc((void **)&dw, wn * 4));
        CUDA_OR_EXIT(cudaMalloc((void **)&dv, vn * 4));
        CUDA_OR_EXIT(cudaMalloc((void **)&dacc, (size_t)total * 4));
        CUDA_OR_EXIT(cudaMemcpy(dw, w, wn * 4, cudaMemcpyHostToDevice));
        CUDA_OR_EXIT(cudaMemcpy(dv, v, vn * 4, cudaMemcpyHostToDevice));
        CUDA_OR_EXIT(cudaMemcpy(dacc, acc, (size_t)total * 4, cudaMemcpyHostToDevice));
        void *args[] = {&dw, &dv, &p, &dacc};
        CUDA_OR_EXIT(cudaLaunchKernel(kernel, dim3(1), dim3(SK_PLSTM_THREADS), args, smem, 0));
        CUDA_OR_EXIT(cudaDeviceSynchronize());
        CUDA_OR_EXIT(cudaMemcpy(acc, dacc, (size_t)total * 4, cudaMemcpyDeviceToHost));
        int bad = 0;
        for (int i = 0; i < total; i++) {
            const int n = i / nrows, m = (i % nrows) / p.R, q = (i % nrows) % p.R;
            if (n < p.nb) {
                double ref = 0.0;
                for (int k = 0; k < p.klen; k++) ref += (double)w[at(p, p.wrows, m, q, k)] * v[at(p, p.brows, n, q, k)];
                bad += acc[i] != (float)ref;
                results++;
            } else {
                bad += acc[i] != -12345.0f;
            }
        }
        if (bad && failed++ < 5)
            printf("%s: %s problem (B %d E %d H %d L %d: rows %d, batch rows %d, K %d, R %d): %d wrong\n", names[op],
                   p.backward ? "backward" : "forward", B, E, H, L, p.mrows, p.nb, p.klen, p.R, bad);
        cudaFree(dw), cudaFree(dv), cudaFree(dacc);
        free(w), free(v), free(acc);
        done++;
    }
    printf("%-18s %d problems, %ld results: %s\n", names[op], done, results, failed ? "MISMATCH" : "all exact");
    return failed;
}

} // namespace

int main(int argc, char **argv) {
    const int count = argc > 1 ? atoi(argv[1]) : 400;
    if (count < 1) {
        fprintf(stderr, "usage: plstm_dots_check [problems per variant]\n");
        return 2;
    }
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1) {
        printf("plstm_dots_check: no usable CUDA device, skipped\n");
        return 77;
    }
    cudaDeviceProp prop;
    CUDA_OR_EXIT(cudaGetDeviceProperties(&prop, 0));
    int optin = 0;
    CUDA_OR_EXIT(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    printf("device: %s, %d SMs, %d bytes of shared memory per block, compute capability %d.%d\n", prop.name,
           prop.multiProcessorCount, optin, prop.major, prop.minor);
    sk_rng r;
    sk_rng_seed(&r, 9);
    int failed = 0;
    failed += check_variant(SK_PLSTM_FP32, prop.multiProcessorCount, optin, count, &r);
    failed += check_variant(SK_PLSTM_BF16, prop.multiProcessorCount, optin, count, &r);
    if (prop.major >= 8) {
        failed += check_variant(SK_PLSTM_BF16_MMA, prop.multiProcessorCount, optin, count, &r);
        failed += check_variant(SK_PLSTM_TF32_MMA, prop.multiProcessorCount, optin, count, &r);
    } else {
        printf("tensor cores: compute capability %d.%d < 8.0, not checked\n", prop.major, prop.minor);
    }
    return failed ? 1 : 0;
}
