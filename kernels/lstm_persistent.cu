// lstm_persistent.cu: the persistent wavefront LSTM, fp32 or bf16 operands (see lstm_persistent.h).
// defines: sk_plstm_plan_make, sk_plstm_forward, sk_plstm_backward
//
// Numerics: fmaf dot products in fp32 (lane-strided, then a fixed xor-shuffle tree),
// expf/tanhf activations, fp32 cell state; the CPU reference sums in other orders and uses
// its own activation approximations, so with fp32 operands results agree to fp32 rounding
// (the tolerances of tests/gpu/test_cuda_parity.c), not bitwise. With bf16 operands each
// weight and staged vector element carries a relative rounding error of up to 2^-8 (8
// significant bits, round to nearest), which sets that precision's tolerance
// (tests/gpu/precision_tolerance.h). The kernels are templates on the operand type T
// (float or __nv_bfloat16) and on the inner product (CUDA cores, or with MMA = true tensor
// cores: bf16 on m16n8k16, float rounded to TF32 on m16n8k8; lstm_persistent_dots.cuh); the
// plan picks the instance, the strides and the shared-memory carve-up (sk_plstm_smem_carve).
// The kernel bodies are in lstm_persistent_kernels.cuh (tests/emu runs them on the CPU); data
// written by other blocks during the same launch is read after the grid sync through L2
// only (cp.async.cg or __ldcg, never a stale L1 line).
#include <stdio.h>
#include <string.h>

#include "lstm_persistent.h"
#include "lstm_persistent_kernels.cuh"

using namespace sk_plstm;

namespace {

typedef void (*plstm_kernel)(sk_plstm_args);

// The instances for an operand type and inner product.
plstm_kernel forward_kernel(sk_plstm_operands o) {
    switch (o) {
    case SK_PLSTM_BF16: return plstm_forward_kernel<__nv_bfloat16, false>;
    case SK_PLSTM_BF16_MMA: return plstm_forward_kernel<__nv_bfloat16, true>;
    case SK_PLSTM_TF32_MMA: return plstm_forward_kernel<float, true>;
    default: return plstm_forward_kernel<float, false>;
    }
}
plstm_kernel backward_kernel(sk_plstm_operands o) {
    switch (o) {
    case SK_PLSTM_BF16: return plstm_backward_kernel<__nv_bfloat16, false>;
    case SK_PLSTM_BF16_MMA: return plstm_backward_kernel<__nv_bfloat16, true>;
    case SK_PLSTM_TF32_MMA: return plstm_backward_kernel<float, true>;
    default: return plstm_backward_kernel<float, false>;
    }
}

cudaError_t launch(plstm_kernel kernel, const sk_plstm_args *a, size_t smem, cudaStream_t stream) {
    if (!a->plan.supported) return cudaErrorInvalidConfiguration;
    // Set again at every launch, on purpose: the attribute belongs to the kernel, not to a
    // plan, and plans of other sizes (training, evaluation, sampling batches) share the kernel,
    // so the last plan made may have lowered it below this launch's need.
    cudaError_t e = cudaFuncSetAttribute((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess) return e;
    return sk_launch_cooperative(kernel, dim3((unsigned)a->plan.blocks), dim3(SK_PLSTM_THREADS), smem, stream, *a);
}

} // namespace

extern "C" cudaError_t sk_plstm_plan_make(sk_plstm_plan *plan, int device, int B, int E, int H, int L,
                                          sk_plstm_operands operands) {
    memset(plan, 0, sizeof *plan);
    plan->operands = operands;
    int sms = 0, optin = 0, coop = 0;
    cudaError_t e = sk_cooperative_device(device, &sms, &optin, &coop, plan->why_not, sizeof plan->why_not);
    if (e != cudaSuccess || !coop) return e;
    int major = 0;
    e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    if (e != cudaSuccess) return e;
    if (!sk_plstm_plan_shape(plan, sms, optin, major, B, E, H, L, operands)) return cudaSuccess;
    // Every block must be resident at once for the grid syncs.
    const void *kernels[2] = {(const void *)forward_kernel(operands), (const void *)backward_kernel(operands)};
    const size_t smem[2] = {plan->smem_fwd, plan->smem_bwd};
    int fits = 0;
    e = sk_cooperative_fits(kernels, smem, 2, plan->blocks, SK_PLSTM_THREADS, sms, &fits, plan->why_not,
                            sizeof plan->why_not);
    if (e != cudaSuccess || !fits) return e;
    plan->supported = 1;
    return cudaSuccess;
}

extern "C" cudaError_t sk_plstm_forward(const sk_plstm_args *a, cudaStream_t stream) {
    return launch(forward_kernel(a->plan.operands), a, a->plan.smem_fwd, stream);
}

extern "C" cudaError_t sk_plstm_backward(const sk_plstm_args *a, cudaStream_t stream) {
    return launch(backward_kernel(a->plan.operands), a, a->plan.smem_bwd, stream);
}
