// comm_nccl.cu: in-place all-reduce of GPU memory with NCCL for the communicator (comm.h).
// As llm.c's llmc/zero.cuh: rank 0 makes the unique id (ncclGetUniqueId), the job's own
// broadcast (MPI) hands it to every rank, and each rank joins with ncclCommInitRank on its
// current CUDA device (the backend's, cuda:local_rank).
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "comm_internal.h"
}
#include "cuda_module.h"

namespace {

typedef struct {
    ncclComm_t comm;
    cudaStream_t stream; // the all-reduce's own stream; ordered with the backend's by syncs
    int device;
} nccl_state;

sk_status nccl_fail(sk_error *err, const char *what, ncclResult_t r) {
    return sk_fail(err, SK_ERR_DEVICE, "%s failed: %s", what, ncclGetErrorString(r));
}

sk_status cuda_fail(sk_error *err, const char *what, cudaError_t e) {
    return sk_fail(err, SK_ERR_DEVICE, "%s failed: %s", what, cudaGetErrorString(e));
}

sk_status nccl_join(sk_comm *c, sk_error *err) {
    nccl_state *s = (nccl_state *)calloc(1, sizeof *s);
    if (!s) return sk_fail(err, SK_ERR_NOMEM, "out of memory");
    ncclUniqueId id;
    ncclResult_t r = ncclSuccess;
    if (c->rank == 0) r = ncclGetUniqueId(&id);
    // Every rank takes part in the broadcast, even when rank 0's id failed (a zero id then
    // makes every ncclCommInitRank fail rather than some ranks wait forever).
    if (r != ncclSuccess) memset(&id, 0, sizeof id);
    sk_status st = c->ops->bcast(c, &id, sizeof id, 0, err); // the core's communicator
    cudaError_t e = cudaSuccess;
    if (st == SK_OK && r != ncclSuccess) st = nccl_fail(err, "ncclGetUniqueId", r);
    if (st == SK_OK && (e = cudaGetDevice(&s->device)) != cudaSuccess) st = cuda_fail(err, "cudaGetDevice", e);
    if (st == SK_OK && (e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)) != cudaSuccess)
        st = cuda_fail(err, "cudaStreamCreate", e);
    if (st == SK_OK && (r = ncclCommInitRank(&s->comm, c->size, id, c->rank)) != ncclSuccess)
        st = nccl_fail(err, "ncclCommInitRank", r);
    if (st != SK_OK) {
        if (s->stream) cudaStreamDestroy(s->stream);
        free(s);
        return st;
    }
    c->nccl = s;
    return SK_OK;
}

} // namespace

extern "C" sk_status sk_cuda_nccl_allreduce_sum_f32(sk_comm *c, float *dev_buf, size_t n, sk_error *err) {
    if (!c->nccl) {
        sk_status st = nccl_join(c, err);
        if (st != SK_OK) return st;
    }
    nccl_state *s = (nccl_state *)c->nccl;
    cudaError_t e = cudaSetDevice(s->device);
    // The gradients come from the backend's stream: wait for the whole device first.
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) return cuda_fail(err, "cudaDeviceSynchronize before ncclAllReduce", e);
    ncclResult_t r = ncclAllReduce(dev_buf, dev_buf, n, ncclFloat, ncclSum, s->comm, s->stream);
    if (r != ncclSuccess) return nccl_fail(err, "ncclAllReduce", r);
    if ((e = cudaStreamSynchronize(s->stream)) != cudaSuccess)
        return cuda_fail(err, "cudaStreamSynchronize after ncclAllReduce", e);
    return SK_OK;
}

extern "C" void sk_cuda_nccl_free(void *nccl) {
    nccl_state *s = (nccl_state *)nccl;
    if (!s) return;
    ncclCommDestroy(s->comm);
    cudaStreamDestroy(s->stream);
    free(s);
}
