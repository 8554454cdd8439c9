// sample_persistent.cu: the sampling kernel's plan and launch (see sample_persistent.h).
// defines: sk_sample_plan_make, sk_sample_run
#include <stdio.h>
#include <string.h>

#include "sample_persistent.h"
#include "sample_persistent_kernels.cuh"

extern "C" cudaError_t sk_sample_plan_make(sk_sample_plan *plan, int device, int B, int V, int E, int H, int L) {
    memset(plan, 0, sizeof *plan);
    int sms = 0, optin = 0, coop = 0;
    cudaError_t e = sk_cooperative_device(device, &sms, &optin, &coop, plan->why_not, sizeof plan->why_not);
    if (e != cudaSuccess || !coop) return e;
    if (!sk_sample_plan_shape(plan, sms, optin, B, V, E, H, L)) return cudaSuccess;
    // Every block resident at once, for the grid syncs.
    const void *kernel = (const void *)sk_sample::sample_kernel;
    int fits = 0;
    e = sk_cooperative_fits(&kernel, &plan->smem, 1, plan->blocks, SK_SAMPLE_THREADS, sms, &fits, plan->why_not,
                            sizeof plan->why_not);
    if (e != cudaSuccess) return e;
    if (!fits) plan->supported = 0;
    return cudaSuccess;
}

extern "C" cudaError_t sk_sample_run(const sk_sample_args *a, cudaStream_t stream) {
    if (!a->plan.supported || a->n < 1) return cudaErrorInvalidConfiguration;
    // Set at every launch: plans of other batch sizes share the kernel (lstm_persistent.cu).
    cudaError_t e = cudaFuncSetAttribute((const void *)sk_sample::sample_kernel,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)a->plan.smem);
    if (e != cudaSuccess) return e;
    return sk_launch_cooperative(sk_sample::sample_kernel, dim3((unsigned)a->plan.blocks), dim3(SK_SAMPLE_THREADS),
                                 a->plan.smem, stream, *a);
}
