// device_port.cuh: what a kernel body needs from CUDA, from the toolkit under nvcc or from
// tests/emu/cuda_emu.h when a test compiles the body for the CPU (-DSK_CUDA_EMU).
// defines: sk_dynamic_smem (the block's dynamic shared memory); brings in cooperative groups
//          and bf16
#ifndef SK_DEVICE_PORT_CUH
#define SK_DEVICE_PORT_CUH

#ifdef SK_CUDA_EMU
#include "emu/cuda_emu.h"
#else
#include <cooperative_groups.h>
#include <cuda_bf16.h>

__device__ __forceinline__ unsigned char *sk_dynamic_smem() {
    extern __shared__ __align__(16) unsigned char sk_smem[];
    return sk_smem;
}
#endif

#endif
