// comm_nccl_forward.c: the core's NCCL entry points (comm_internal.h) in a CUDA build: they
// call comm_nccl.cu's, inside the CUDA module (cuda/cuda_module.h). An MPI job's device
// all-reduce runs only where a CUDA backend, hence the module, is already loaded.
// defines: sk_nccl_allreduce_sum_f32, sk_nccl_free
#include "comm_internal.h"
#include "cuda/cuda_module.h"

sk_status sk_nccl_allreduce_sum_f32(sk_comm *c, float *dev_buf, size_t n, sk_error *err) {
    const char *why = "";
    const sk_cuda_module *m = sk_cuda_module_loaded(&why);
    if (!m) return sk_fail(err, SK_ERR_DEVICE, "CUDA support not found: %s", why);
    if (!m->nccl_allreduce_sum_f32)
        return sk_fail(err, SK_ERR_DEVICE, "this build has no NCCL support for an all-reduce of GPU memory");
    return m->nccl_allreduce_sum_f32(c, dev_buf, n, err);
}

void sk_nccl_free(void *nccl) {
    const sk_cuda_module *m = nccl ? sk_cuda_module_loaded(NULL) : NULL;
    if (m && m->nccl_free) m->nccl_free(nccl);
}
