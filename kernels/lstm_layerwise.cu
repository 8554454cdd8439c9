// lstm_layerwise.cu: the layer-after-layer persistent LSTM kernels' plan and launches (see
// lstm_layerwise.h).
// defines: sk_plstm_lw_plan_make, sk_plstm_lw_forward, sk_plstm_lw_backward
#include <stdio.h>
#include <string.h>

#include "lstm_layerwise.h"
#include "lstm_layerwise_kernels.cuh"

using namespace sk_plstm_lw;

typedef void (*lw_kernel)(sk_plstm_lw_args);

// The instances for an operand size and inner product.
static lw_kernel forward_kernel(const sk_plstm_lw_plan *p) {
    if (p->operand_bytes == 2) return p->mma ? lw_forward_kernel<__nv_bfloat16, true> : lw_forward_kernel<__nv_bfloat16, false>;
    return p->mma ? lw_forward_kernel<float, true> : lw_forward_kernel<float, false>;
}
static lw_kernel backward_kernel(const sk_plstm_lw_plan *p) {
    if (p->operand_bytes == 2) return p->mma ? lw_backward_kernel<__nv_bfloat16, true> : lw_backward_kernel<__nv_bfloat16, false>;
    return p->mma ? lw_backward_kernel<float, true> : lw_backward_kernel<float, false>;
}

extern "C" cudaError_t sk_plstm_lw_plan_make(sk_plstm_lw_plan *plan, int device, int B, int H, int mma, int s) {
    memset(plan, 0, sizeof *plan);
    int sms = 0, optin = 0, coop = 0;
    cudaError_t e = sk_cooperative_device(device, &sms, &optin, &coop, plan->why_not, sizeof plan->why_not);
    if (e != cudaSuccess || !coop) return e;
    if (mma) {
        int major = 0;
        e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
        if (e != cudaSuccess) return e;
        if (major < 8) {
            snprintf(plan->why_not, sizeof plan->why_not, "tensor cores need compute capability 8.0 or later");
            return cudaSuccess;
        }
    }
    if (!sk_plstm_lw_plan_shape(plan, sms, optin, B, H, mma, s)) return cudaSuccess;
    // Every block must be resident at once for the grid syncs.
    const void *kernels[2] = {(const void *)forward_kernel(plan), (const void *)backward_kernel(plan)};
    const size_t smem[2] = {plan->smem_fwd, plan->smem_bwd};
    int fits = 0;
    e = sk_cooperative_fits(kernels, smem, 2, plan->blocks, SK_PLSTM_THREADS, sms, &fits, plan->why_not,
                            sizeof plan->why_not);
    if (e != cudaSuccess || !fits) return e;
    plan->supported = 1;
    return cudaSuccess;
}

static cudaError_t launch(lw_kernel kernel, const sk_plstm_lw_args *a, size_t smem, cudaStream_t stream) {
    if (!a->plan.supported) return cudaErrorInvalidConfiguration;
    // Set at every launch: plans of other sizes share the kernel (lstm_persistent.cu says why).
    cudaError_t e = cudaFuncSetAttribute((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess) return e;
    return sk_launch_cooperative(kernel, dim3((unsigned)a->plan.blocks), dim3(SK_PLSTM_THREADS), smem, stream, *a);
}

extern "C" cudaError_t sk_plstm_lw_forward(const sk_plstm_lw_args *a, cudaStream_t stream) {
    return launch(forward_kernel(&a->plan), a, a->plan.smem_fwd, stream);
}

extern "C" cudaError_t sk_plstm_lw_backward(const sk_plstm_lw_args *a, cudaStream_t stream) {
    return launch(backward_kernel(&a->plan), a, a->plan.smem_bwd, stream);
}
