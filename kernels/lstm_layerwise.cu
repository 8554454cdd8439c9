// lstm_layerwise.cu: the layer-after-layer persistent LSTM kernels' plan and launches (see
// lstm_layerwise.h).
// defines: sk_plstm_lw_plan_make, sk_plstm_lw_forward, sk_plstm_lw_backward
#include <stdio.h>
#include <string.h>

#include "lstm_layerwise.h"
#include "lstm_layerwise_cluster_kernels.cuh"

using namespace sk_plstm_lw;

typedef void (*lw_kernel)(sk_plstm_lw_args);

// The instances for an exchange, an operand size and an inner product.
template <typename T, bool MMA> static lw_kernel pick(const sk_plstm_lw_plan *p, int backward) {
    if (p->cluster) return backward ? lw_backward_cluster_kernel<T, MMA> : lw_forward_cluster_kernel<T, MMA>;
    return backward ? lw_backward_kernel<T, MMA> : lw_forward_kernel<T, MMA>;
}
static lw_kernel kernel_for(const sk_plstm_lw_plan *p, int backward) {
    if (p->operand_bytes == 2) return p->mma ? pick<__nv_bfloat16, true>(p, backward) : pick<__nv_bfloat16, false>(p, backward);
    return p->mma ? pick<float, true>(p, backward) : pick<float, false>(p, backward);
}

// The cluster plan: one cluster a batch group, every group's cluster resident at once (in waves the
// chain would run once a wave: the H200 held 7 clusters of 16 blocks at 160-198 KiB, fewer than
// config B's 8 groups; bench/results/h200-2026-11-28-2d6bab0/layerwise/cluster-occupancy.txt).
// Clusters of 16 blocks, else of 8 (a GPC holds two of them where it holds one of 16), else refused
// with both reasons.
static cudaError_t cluster_plan(sk_plstm_lw_plan *plan, int sms, int optin, int B, int H, int mma, int s) {
    char why[2][98] = {"", ""};
    int tried = 0;
    for (int c = SK_PLSTM_LW_MAX_CLUSTER; c >= 8 && tried < 2; c /= 2, tried++) {
        if (sk_plstm_lw_plan_shape(plan, sms, optin, B, H, mma, s, c)) {
            const void *kernels[2] = {(const void *)kernel_for(plan, 0), (const void *)kernel_for(plan, 1)};
            const size_t smem[2] = {plan->smem_fwd, plan->smem_bwd};
            int resident = 0;
            const cudaError_t e = sk_cluster_fits(kernels, smem, 2, plan->cluster, SK_PLSTM_THREADS, &resident,
                                                  plan->why_not, sizeof plan->why_not);
            if (e != cudaSuccess) return e;
            if (resident >= plan->groups) {
                plan->supported = 1;
                return cudaSuccess;
            }
            if (resident > 0)
                snprintf(plan->why_not, sizeof plan->why_not, "%d groups, %d clusters of %d blocks of %zu/%zu KiB "
                         "resident at once", plan->groups, resident, plan->cluster, plan->smem_fwd >> 10,
                         plan->smem_bwd >> 10);
        }
        snprintf(why[tried], sizeof why[tried], "clusters of %d: %.80s", c, plan->why_not);
        if (plan->cluster && plan->cluster <= c / 2) break; // a group of at most c/2 blocks: the same plan again
    }
    memset(plan, 0, sizeof *plan);
    snprintf(plan->why_not, sizeof plan->why_not, "%s%s%s", why[0], why[1][0] ? "; " : "", why[1]);
    return cudaSuccess;
}

extern "C" cudaError_t sk_plstm_lw_plan_make(sk_plstm_lw_plan *plan, int device, int B, int H, int mma, int s,
                                             int cluster) {
    memset(plan, 0, sizeof *plan);
    int sms = 0, optin = 0, coop = 0, major = 0;
    cudaError_t e = sk_cooperative_device(device, &sms, &optin, &coop, plan->why_not, sizeof plan->why_not);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    if (e != cudaSuccess || (!coop && !cluster)) return e;
    if (mma && major < 8) {
        snprintf(plan->why_not, sizeof plan->why_not, "tensor cores need compute capability 8.0 or later");
        return cudaSuccess;
    }
    if (cluster && major < 9) {
        snprintf(plan->why_not, sizeof plan->why_not, "thread-block clusters need compute capability 9.0 or later");
        return cudaSuccess;
    }
    if (cluster) return cluster_plan(plan, sms, optin, B, H, mma, s);
    if (!sk_plstm_lw_plan_shape(plan, sms, optin, B, H, mma, s, 0)) return cudaSuccess;
    const void *kernels[2] = {(const void *)kernel_for(plan, 0), (const void *)kernel_for(plan, 1)};
    const size_t smem[2] = {plan->smem_fwd, plan->smem_bwd};
    int fits = 0; // every block must be resident at once for the grid syncs
    e = sk_cooperative_fits(kernels, smem, 2, plan->blocks, SK_PLSTM_THREADS, sms, &fits, plan->why_not,
                            sizeof plan->why_not);
    if (e != cudaSuccess || !fits) return e;
    plan->supported = 1;
    return cudaSuccess;
}

static cudaError_t launch(const sk_plstm_lw_args *a, int backward, cudaStream_t stream) {
    if (!a->plan.supported) return cudaErrorInvalidConfiguration;
    const lw_kernel kernel = kernel_for(&a->plan, backward);
    const size_t smem = backward ? a->plan.smem_bwd : a->plan.smem_fwd;
    // Set at every launch: plans of other sizes share the kernel (lstm_persistent.cu says why).
    cudaError_t e = cudaFuncSetAttribute((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess) return e;
    const dim3 grid((unsigned)a->plan.blocks), block(SK_PLSTM_THREADS);
    if (a->plan.cluster) return sk_launch_cluster(kernel, grid, block, smem, stream, (unsigned)a->plan.cluster, *a);
    return sk_launch_cooperative(kernel, grid, block, smem, stream, *a);
}

extern "C" cudaError_t sk_plstm_lw_forward(const sk_plstm_lw_args *a, cudaStream_t stream) {
    return launch(a, 0, stream);
}

extern "C" cudaError_t sk_plstm_lw_backward(const sk_plstm_lw_args *a, cudaStream_t stream) {
    return launch(a, 1, stream);
}
