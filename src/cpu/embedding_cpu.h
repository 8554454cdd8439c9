// embedding_cpu.h: the CPU backend's embedding lookup and its gradient (private; the CUDA
// backend's embedding kernels compute the same, tests/emu checks that they do).
// defines: sk_embedding_cpu_forward, sk_embedding_cpu_backward
#ifndef SK_EMBEDDING_CPU_H
#define SK_EMBEDDING_CPU_H

#include <stdint.h>

// out (rows, E) = weight (V, E) rows ids[r]; ids in [0, V).
void sk_embedding_cpu_forward(float *out, const float *weight, const int32_t *ids, int rows, int E);

// dweight (V, E) = sum over r with ids[r] == v of dout[r] (overwrites), added in row order r
// = 0, 1, ... (the backend's rows are time-major), so the result is deterministic.
void sk_embedding_cpu_backward(float *dweight, const float *dout, const int32_t *ids, int rows, int V, int E);

#endif
