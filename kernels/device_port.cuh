// device_port.cuh: what a kernel body needs from CUDA, from the toolkit under nvcc, or, when a
// build compiles the body for the CPU (-DSK_CUDA_EMU), from the emulated device that such a
// build force-includes ahead of every kernel source (-include; the emulated device's own
// CMake says which headers): this header names no header of it.
// defines: sk_dynamic_smem (the block's dynamic shared memory), sk_cp_async16,
//          sk_cp_async_wait_all, sk_flag_load, sk_flag_store, sk_spin_pause, sk_capped_blocks, sk_launch, sk_launch_cooperative,
//          sk_launch_cluster, sk_cluster_config, sk_cooperative_device, sk_cooperative_fits,
//          sk_cluster_fits; brings in cooperative groups and bf16
// Launchers start kernels only through sk_launch, sk_launch_cooperative and
// sk_launch_cluster, so that the emulated CUDA module (-DSK_CUDA_EMU_RUNTIME: its runtime
// defines sk_emu_launch_kernel) runs the very same launchers on the emulated device.
#ifndef SK_DEVICE_PORT_CUH
#define SK_DEVICE_PORT_CUH

#include <stdint.h>
#include <stdio.h>

#ifndef SK_CUDA_EMU // else the force-included emulated device defines the kernels' CUDA names and these
#include <cooperative_groups.h>
#include <cuda_bf16.h>

__device__ __forceinline__ unsigned char *sk_dynamic_smem() {
    extern __shared__ __align__(16) unsigned char sk_smem[];
    return sk_smem;
}

// 16 bytes from global to shared memory without passing through registers, asynchronously
// (cp.async.cg: through L2 only, so data other blocks wrote before a grid sync is never a
// stale L1 line); both addresses 16-byte aligned. Visible to this thread after
// sk_cp_async_wait_all(), to the block after that and a __syncthreads.
__device__ __forceinline__ void sk_cp_async16(void *smem_dst, const void *gmem_src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned d = (unsigned)__cvta_generic_to_shared(smem_dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(gmem_src) : "memory");
#else
    *(uint4 *)smem_dst = __ldcg((const uint4 *)gmem_src); // before compute capability 8.0: synchronous
#endif
}
__device__ __forceinline__ void sk_cp_async_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// Words that other blocks poll: a 64-bit global load and store, relaxed at GPU scope (each is
// single-copy atomic: a reader sees the whole old word or the whole new one, through L2, never a
// stale L1 line), and what a polling thread does between two loads (nothing on the GPU; the
// emulated device runs the other threads). A word that carries its own flag (a value and the
// step that wrote it, sample_persistent_kernels.cuh) needs no fence: no other data rides on it.
__device__ __forceinline__ uint64_t sk_flag_load(const uint64_t *p) {
    uint64_t v;
    asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];\n" : "=l"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ void sk_flag_store(uint64_t *p, uint64_t v) {
    asm volatile("st.relaxed.gpu.global.b64 [%0], %1;\n" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void sk_spin_pause() {}
#endif

#if !defined(SK_CUDA_EMU) || defined(SK_CUDA_EMU_RUNTIME) // the launchers' side (not the kernel tests')
// A launch of clusters of `cluster` blocks along x; attr: the caller's storage for the
// cluster attribute, which the configuration points to. Host code.
inline cudaLaunchConfig_t sk_cluster_config(dim3 grid, dim3 block, size_t smem, cudaStream_t stream, unsigned cluster,
                                            cudaLaunchAttribute *attr) {
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = cluster, attr->val.clusterDim.y = 1, attr->val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid, cfg.blockDim = block, cfg.dynamicSmemBytes = smem, cfg.stream = stream;
    cfg.attrs = attr, cfg.numAttrs = 1;
    return cfg;
}
#endif

// kernel<<<grid, block, smem, stream>>>(args...), then the launch's error
// (cudaGetLastError): the arguments convert to the kernel's parameter types here, at launch.
#if !defined(SK_CUDA_EMU)
template <typename... P, typename... A>
inline cudaError_t sk_launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                             A... args) {
    kernel<<<grid, block, smem, stream>>>(args...);
    return cudaGetLastError();
}
// The same for a kernel that synchronizes its whole grid (cooperative_groups::this_grid()
// .sync()): every block resident at once (cudaLaunchCooperativeKernel), one argument.
template <typename P>
inline cudaError_t sk_launch_cooperative(void (*kernel)(P), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                         P arg) {
    void *params[] = {&arg};
    return cudaLaunchCooperativeKernel((const void *)kernel, grid, block, params, smem, stream);
}
// The same for a kernel of thread-block clusters (cooperative_groups::this_cluster(), sm_90):
// grid.x a multiple of `cluster` blocks along x, each cluster's blocks resident at once; more
// than 8 needs the kernel's cudaFuncAttributeNonPortableClusterSizeAllowed (sk_cluster_fits).
template <typename P>
inline cudaError_t sk_launch_cluster(void (*kernel)(P), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                     unsigned cluster, P arg) {
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t cfg = sk_cluster_config(grid, block, smem, stream, cluster, &attr);
    return cudaLaunchKernelEx(&cfg, kernel, arg);
}
#elif defined(SK_CUDA_EMU_RUNTIME)
template <typename... P, typename... A>
inline cudaError_t sk_launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                             A... args) {
    return sk_emu_launch_kernel(false, 0, kernel, grid, block, smem, stream, args...);
}
template <typename P>
inline cudaError_t sk_launch_cooperative(void (*kernel)(P), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                         P arg) {
    return sk_emu_launch_kernel(true, 0, kernel, grid, block, smem, stream, arg);
}
template <typename P>
inline cudaError_t sk_launch_cluster(void (*kernel)(P), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                     unsigned cluster, P arg) {
    return sk_emu_launch_kernel(false, cluster, kernel, grid, block, smem, stream, arg);
}
#endif

// The blocks of a grid-stride launch: enough for n items at per_block each, at most cap (0
// for n = 0). Host code, shared by the launchers and the tests that emulate them.
inline size_t sk_capped_blocks(size_t n, size_t per_block, size_t cap) {
    const size_t g = (n + per_block - 1) / per_block;
    return g > cap ? cap : g;
}

#if !defined(SK_CUDA_EMU) || defined(SK_CUDA_EMU_RUNTIME) // the launchers' side (not the kernel tests')
// What a cooperative kernel's plan needs of device `device`: its SMs, the opt-in shared memory
// of a block, and whether it launches cooperatively (*coop = 0 with why when not). Host code.
inline cudaError_t sk_cooperative_device(int device, int *sms, int *optin, int *coop, char *why, size_t why_size) {
    cudaError_t e = cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(coop, cudaDevAttrCooperativeLaunch, device);
    if (e == cudaSuccess && !*coop) snprintf(why, why_size, "the device has no cooperative launch");
    return e;
}

// Whether `blocks` blocks of each of the n kernels (`threads` each, smem[i] bytes of dynamic
// shared memory) can all be resident at once on `sms` SMs, as a cooperative launch needs:
// *fits = 0 with why when not. Raises each kernel's dynamic shared-memory limit to smem[i] on
// the way. Host code.
inline cudaError_t sk_cooperative_fits(const void *const *kernels, const size_t *smem, int n, int blocks, int threads,
                                       int sms, int *fits, char *why, size_t why_size) {
    *fits = 1;
    for (int i = 0; i < n; i++) {
        int per_sm = 0;
        cudaError_t e = cudaFuncSetAttribute(kernels[i], cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem[i]);
        if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernels[i], threads, smem[i]);
        if (e != cudaSuccess) return e;
        if ((long)per_sm * sms < blocks) {
            snprintf(why, why_size, "%d blocks of %zu KiB cannot all be resident (%d per SM, %d SMs)", blocks,
                     smem[i] >> 10, per_sm, sms);
            *fits = 0;
            return cudaSuccess;
        }
    }
    return cudaSuccess;
}

// How many clusters of `cluster` blocks along x (`threads` each) of every one of the n kernels
// (smem[i] bytes of dynamic shared memory) can be resident at once: *max_clusters, the least
// over the kernels (cudaOccupancyMaxActiveClusters), 0 with why when none can launch. Raises
// each kernel's dynamic shared-memory limit to smem[i], and allows clusters past the portable
// 8 blocks when cluster > 8, on the way. Host code, on the current device.
inline cudaError_t sk_cluster_fits(const void *const *kernels, const size_t *smem, int n, int cluster, int threads,
                                   int *max_clusters, char *why, size_t why_size) {
    *max_clusters = 0;
    int device = 0, ok = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&ok, cudaDevAttrClusterLaunch, device);
    if (e != cudaSuccess) return e;
    if (!ok || cluster < 1 || cluster > 16) {
        if (!ok) snprintf(why, why_size, "the device has no cluster launch");
        else snprintf(why, why_size, "clusters of %d blocks: 1 to 16 only", cluster);
        return cudaSuccess;
    }
    cudaLaunchAttribute attr; // one cluster's grid: the configuration asks about the cluster's shape only
    cudaLaunchConfig_t cfg = sk_cluster_config(dim3((unsigned)cluster), dim3((unsigned)threads), 0, 0,
                                               (unsigned)cluster, &attr);
    for (int i = 0; i < n; i++) {
        int fit = 0;
        cfg.dynamicSmemBytes = smem[i];
        e = cudaFuncSetAttribute(kernels[i], cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem[i]);
        if (e == cudaSuccess && cluster > 8)
            e = cudaFuncSetAttribute(kernels[i], cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
        if (e == cudaSuccess) e = cudaOccupancyMaxActiveClusters(&fit, kernels[i], &cfg);
        if (e != cudaSuccess) return e;
        if (fit == 0) {
            snprintf(why, why_size, "no cluster of %d blocks of %zu KiB can be resident", cluster, smem[i] >> 10);
            *max_clusters = 0;
            return cudaSuccess;
        }
        if (i == 0 || fit < *max_clusters) *max_clusters = fit;
    }
    return cudaSuccess;
}
#endif

#endif
