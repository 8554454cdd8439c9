// weight_segments.h: one run of floats that cudnn_rnn.cu copies between the canonical
// parameter layout and cuDNN's weight space, in C without CUDA types, so that tests/emu runs
// the copy kernel (copy_segments_kernel.cuh) on the CPU.
// defines: sk_wseg
#ifndef SK_WEIGHT_SEGMENTS_H
#define SK_WEIGHT_SEGMENTS_H

#include <stddef.h>

typedef struct {
    size_t canon; // float offset into the canonical parameter (or gradient) buffer
    size_t ws;    // float offset into cuDNN's weight space
    size_t n;     // floats
} sk_wseg;

#endif
