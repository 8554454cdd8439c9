// comm_nccl.cu: in-place all-reduce of GPU memory with NCCL for the communicator (comm.h).
// As llm.c's llmc/zero.cuh: rank 0 makes the unique id (ncclGetUniqueId), the job's own
// broadcast (MPI) hands it to every rank, and each rank joins with ncclCommInitRank on the
// device that holds its gradients (the backend's).
#include <cuda_runtime.h>
#include <nccl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "comm_internal.h"
}
#include "cuda/cuda_module.h"

namespace {

typedef struct {
    ncclComm_t comm; // NULL once aborted after an error
    cudaStream_t stream; // the all-reduce's own stream; ordered with the backend's by syncs
    int device;          // the gradients' device (this rank's GPU)
} nccl_state;

// NCCL's result names only the kind ("unhandled system error"); its last error for the
// communicator says what happened (NCCL 2.13 and later).
sk_status nccl_fail(sk_error *err, const char *what, ncclResult_t r, ncclComm_t comm) {
    const char *detail = comm ? ncclGetLastError(comm) : NULL;
    if (detail && detail[0])
        return sk_fail(err, SK_ERR_DEVICE, "%s failed: %s (%s)", what, ncclGetErrorString(r), detail);
    return sk_fail(err, SK_ERR_DEVICE, "%s failed: %s", what, ncclGetErrorString(r));
}

sk_status cuda_fail(sk_error *err, const char *what, cudaError_t e) {
    return sk_fail(err, SK_ERR_DEVICE, "%s failed: %s", what, cudaGetErrorString(e));
}

// Joins on the device that holds the gradients (not whichever is current), as llm.c's
// zero.cuh joins after cudaSetDevice.
sk_status nccl_join(sk_comm *c, const float *dev_buf, sk_error *err) {
    nccl_state *s = (nccl_state *)calloc(1, sizeof *s);
    if (!s) return sk_fail(err, SK_ERR_NOMEM, "out of memory");
    ncclUniqueId id;
    ncclResult_t r = ncclSuccess;
    if (c->rank == 0) r = ncclGetUniqueId(&id);
    // Every rank takes part in the broadcast, even when rank 0's id failed (a zero id then
    // makes every ncclCommInitRank fail rather than some ranks wait forever).
    if (r != ncclSuccess) memset(&id, 0, sizeof id);
    sk_status st = c->ops->bcast(c, &id, sizeof id, 0, err); // the core's communicator
    cudaPointerAttributes at;
    cudaError_t e = cudaSuccess;
    if (st == SK_OK && r != ncclSuccess) st = nccl_fail(err, "ncclGetUniqueId", r, NULL);
    if (st == SK_OK && (e = cudaPointerGetAttributes(&at, dev_buf)) != cudaSuccess)
        st = cuda_fail(err, "cudaPointerGetAttributes of the gradients", e);
    if (st == SK_OK && at.type != cudaMemoryTypeDevice)
        st = sk_fail(err, SK_ERR_DEVICE, "the gradients handed to NCCL are not in device memory");
    if (st == SK_OK) s->device = at.device;
    if (st == SK_OK && (e = cudaSetDevice(s->device)) != cudaSuccess) st = cuda_fail(err, "cudaSetDevice", e);
    if (st == SK_OK && (e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)) != cudaSuccess)
        st = cuda_fail(err, "cudaStreamCreate", e);
    if (st == SK_OK && (r = ncclCommInitRank(&s->comm, c->size, id, c->rank)) != ncclSuccess)
        st = nccl_fail(err, "ncclCommInitRank", r, NULL);
    if (st != SK_OK) {
        if (s->stream) cudaStreamDestroy(s->stream);
        free(s);
        return st;
    }
    c->nccl = s;
    return SK_OK;
}

// Waits for the all-reduce on s->stream without blocking inside the driver. An error NCCL
// meets after the launch (a lost network link, a peer gone) is reported only through
// ncclCommGetAsyncError, and the kernel keeps spinning: a blocking cudaStreamSynchronize
// would then wait forever, and so would the job. So this polls both, and on an error aborts
// the communicator (ncclCommAbort ends its kernels) and returns it; the trainer then ends
// every rank (a failure on one rank alone: MPI_Abort).
sk_status wait_allreduce(nccl_state *s, sk_error *err) {
    for (;;) {
        cudaError_t e = cudaStreamQuery(s->stream);
        if (e == cudaSuccess) return SK_OK;
        if (e != cudaErrorNotReady) return cuda_fail(err, "the stream of ncclAllReduce", e);
        ncclResult_t async = ncclSuccess, r = ncclCommGetAsyncError(s->comm, &async);
        if (r != ncclSuccess) async = r;
        if (async != ncclSuccess && async != ncclInProgress) {
            sk_status st = nccl_fail(err, "ncclAllReduce (reported while it ran)", async, s->comm);
            ncclCommAbort(s->comm);
            s->comm = NULL;
            return st;
        }
        sched_yield(); // a few microseconds per poll; the all-reduce holds this thread anyway
    }
}

} // namespace

extern "C" sk_status sk_cuda_nccl_allreduce_sum_f32(sk_comm *c, float *dev_buf, size_t n, sk_error *err) {
    if (!c->nccl) {
        sk_status st = nccl_join(c, dev_buf, err);
        if (st != SK_OK) return st;
    }
    nccl_state *s = (nccl_state *)c->nccl;
    if (!s->comm) return sk_fail(err, SK_ERR_DEVICE, "the NCCL communicator was aborted after an earlier error");
    cudaError_t e = cudaSetDevice(s->device);
    // The gradients come from the backend's stream: wait for the whole device first.
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) return cuda_fail(err, "cudaDeviceSynchronize before ncclAllReduce", e);
    ncclResult_t r = ncclAllReduce(dev_buf, dev_buf, n, ncclFloat, ncclSum, s->comm, s->stream);
    if (r != ncclSuccess) return nccl_fail(err, "ncclAllReduce", r, s->comm);
    return wait_allreduce(s, err);
}

extern "C" void sk_cuda_nccl_free(void *nccl) {
    nccl_state *s = (nccl_state *)nccl;
    if (!s) return;
    (void)cudaSetDevice(s->device);
    if (s->comm) ncclCommDestroy(s->comm); // (finalizes first, NCCL 2.14 and later)
    cudaStreamDestroy(s->stream);
    free(s);
}
