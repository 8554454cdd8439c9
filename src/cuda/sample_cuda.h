// sample_cuda.h: the CUDA backend's fused sampler (backend.h's ops->sample) over the sampling
// kernel (kernels/sample_persistent.h): its plan, its device buffers and one call.
// defines: sk_cuda_sampler, sk_cuda_sampler_io, sk_cuda_sampler_create, sk_cuda_sampler_run,
//          sk_cuda_sampler_free
#ifndef SK_SAMPLE_CUDA_H
#define SK_SAMPLE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

extern "C" {
#include "shakespeare/model.h"
#include "shakespeare/sample_draw.h"
#include "shakespeare/status.h"
}

typedef struct sk_cuda_sampler sk_cuda_sampler;

// The sampler for B streams of the model `layout` on `device`, reading its parameters from
// params (device, canonical layout: what every run's io->params is; borrowed); *out = NULL,
// with why, when the kernel cannot run this shape there (the backend then offers no
// ops->sample, and sampling runs a forward per token). Errors: the device's calls.
sk_status sk_cuda_sampler_create(int device, const sk_param_layout *layout, float *params, int B,
                                 sk_cuda_sampler **out, char *why, size_t why_size, sk_error *err);

// The backend's buffers a call reads and writes (device memory; the state (L, B, H)).
typedef struct {
    const float *params;          // canonical layout
    const float *hx, *cx;         // the state before
    float *hy, *cy;               // the state after; must not alias hx, cx
    float *logits;                // (B, V): the last draw's logits
    cudaStream_t stream;
} sk_cuda_sampler_io;

// backend.h's ops->sample: feeds x (B,), draws n tokens per stream into out (B, n) (host
// memory), and waits for them.
sk_status sk_cuda_sampler_run(sk_cuda_sampler *s, const sk_cuda_sampler_io *io, const int32_t *x, int n,
                              const sk_sample_opts *o, const uint64_t *keys, int64_t position, int32_t *out,
                              sk_error *err);

void sk_cuda_sampler_free(sk_cuda_sampler *s); // safe on NULL

#endif
