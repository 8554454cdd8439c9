// copy_segments_kernel.cuh: the body of cudnn_rnn.cu's segment copy (canonical parameters to
// cuDNN's weight space and back), in a header so that tests/emu/test_kernels_emu.cpp runs the
// very same code on the CPU; with its launcher's grid arithmetic.
// defines: copy_segments_kernel, copy_column_blocks, kCopyThreads (in namespace sk_wcopy)
#ifndef SK_COPY_SEGMENTS_KERNEL_CUH
#define SK_COPY_SEGMENTS_KERNEL_CUH

#include <stddef.h>

#include "device_port.cuh"
#include "weight_segments.h"

namespace sk_wcopy {

constexpr int kCopyThreads = 256;
constexpr int kCopyMaxBlocks = 1024;

// The grid's x extent for segments of at most seg_max floats (grid-stride past the cap);
// y is the segment.
inline unsigned copy_column_blocks(size_t seg_max) {
    return (unsigned)sk_capped_blocks(seg_max, kCopyThreads, kCopyMaxBlocks);
}

// Segment blockIdx.y: canonical -> weight space (to_ws) or back.
__global__ void copy_segments_kernel(float *canon, float *ws, const sk_wseg *segs, int to_ws) {
    const sk_wseg s = segs[blockIdx.y];
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < s.n; i += stride) {
        if (to_ws) ws[s.ws + i] = canon[s.canon + i];
        else canon[s.canon + i] = ws[s.ws + i];
    }
}

} // namespace sk_wcopy

#endif
