// device_port.cuh: what a kernel body needs from CUDA, from the toolkit under nvcc or from
// the emulated device's cuda_emu.h when a build compiles the body for the CPU (-DSK_CUDA_EMU;
// such a build puts tests/emu on the include path). The one header in kernels/ that knows of
// the emulator.
// defines: sk_dynamic_smem (the block's dynamic shared memory), sk_cp_async16,
//          sk_cp_async_wait_all, sk_capped_blocks, sk_launch, sk_launch_cooperative; brings in
//          cooperative groups and bf16
// Launchers start kernels only through sk_launch and sk_launch_cooperative, so that the
// emulated CUDA module (tests/emu/backend.cmake, -DSK_CUDA_EMU_RUNTIME) runs the very same
// launchers on the emulated device.
#ifndef SK_DEVICE_PORT_CUH
#define SK_DEVICE_PORT_CUH

#ifdef SK_CUDA_EMU
#include "cuda_emu.h"
#ifdef SK_CUDA_EMU_RUNTIME
#include "emu_runtime.h"
#endif
#else
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
#elif defined(SK_CUDA_EMU_RUNTIME)
template <typename... P, typename... A>
inline cudaError_t sk_launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                             A... args) {
    return sk_emu_launch_kernel(false, kernel, grid, block, smem, stream, args...);
}
template <typename P>
inline cudaError_t sk_launch_cooperative(void (*kernel)(P), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                         P arg) {
    return sk_emu_launch_kernel(true, kernel, grid, block, smem, stream, arg);
}
#endif

// The blocks of a grid-stride launch: enough for n items at per_block each, at most cap (0
// for n = 0). Host code, shared by the launchers and the tests that emulate them.
inline size_t sk_capped_blocks(size_t n, size_t per_block, size_t cap) {
    const size_t g = (n + per_block - 1) / per_block;
    return g > cap ? cap : g;
}

#endif
