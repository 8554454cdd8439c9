// block_sum.cuh: a thread block's sum of one double per thread by a fixed tree, the reduction
// that the gradient norm (optim_kernels.cuh) and the loss sum (softmax_xent_kernels.cuh) share;
// tests/emu/test_kernels_emu.cpp replays its order on the host and checks it bit for bit.
// defines: sk_block_tree_sum
#ifndef SK_BLOCK_SUM_CUH
#define SK_BLOCK_SUM_CUH

#include "device_port.cuh"

// The sum over a block of kThreads threads (a power of two) of each thread's acc, through sh
// (kThreads doubles of shared memory): thread t adds thread t + s's partial for s = kThreads/2,
// ..., 1, so the result's bits depend on the block's values alone, never on timing. Every thread
// of the block must call it; each gets the sum.
template <int kThreads>
__device__ double sk_block_tree_sum(double acc, double *sh) {
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    return sh[0];
}

#endif
