// comm_nccl_stub.c: stands in for comm_nccl.cu in a build without CUDA or NCCL: device
// buffers cannot be all-reduced (and no backend hands out device buffers).
#include "comm_internal.h"

sk_status sk_nccl_allreduce_sum_f32(sk_comm *c, float *dev_buf, size_t n, sk_error *err) {
    (void)c, (void)dev_buf, (void)n;
    return sk_fail(err, SK_ERR_DEVICE, "this build has no NCCL support for an all-reduce of GPU memory");
}

void sk_nccl_free(void *nccl) { (void)nccl; }
