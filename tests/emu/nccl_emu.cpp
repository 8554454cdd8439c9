// nccl_emu.cpp: the NCCL functions of src/dist/comm_nccl.cu for the emulated CUDA module
// (tests/emu/backend.cmake), for a communicator of ONE rank: each emulated process has its
// own emulated device, in its own memory, so ranks of several processes share no device
// memory to reduce over; a communicator of more ranks is refused (ncclInvalidUsage, with
// the reason on stderr). For one rank the in-place sum is the buffer itself, which is what
// tests/gpu/test_nccl_rank.sh runs: the data-parallel trainer's device path (gradients
// handed over in device memory, joined with the id rank 0 broadcast) against one process.
// defines: ncclGetUniqueId, ncclCommInitRank, ncclAllReduce, ncclCommDestroy, ncclGetErrorString
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "emu_runtime.h"

struct ncclComm {
    int nranks, rank;
};

namespace {

const char kIdTag[] = "emulated NCCL unique id";

} // namespace

extern "C" {

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    if (!id) return ncclInvalidArgument;
    memset(id, 0, sizeof *id);
    memcpy(id->internal, kIdTag, sizeof kIdTag);
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    if (!comm) return ncclInvalidArgument;
    *comm = nullptr;
    // An id that ncclGetUniqueId did not make (comm_nccl.cu zeroes it when rank 0 failed).
    if (memcmp(id.internal, kIdTag, sizeof kIdTag) != 0 || nranks < 1 || rank < 0 || rank >= nranks)
        return ncclInvalidArgument;
    if (nranks > 1) {
        fprintf(stderr, "emulated NCCL: a communicator of %d ranks; the emulation reduces over one rank only\n",
                nranks);
        return ncclInvalidUsage;
    }
    *comm = new ncclComm{nranks, rank};
    return ncclSuccess;
}

// The sum over one rank: recvbuff = sendbuff, in stream order (NCCL's semantics), both in
// device memory.
ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
    if (!comm || datatype != ncclFloat32 || op != ncclSum) return ncclInvalidArgument;
    const size_t bytes = count * sizeof(float);
    if (!sk_emu_device_range(sendbuff, bytes) || !sk_emu_device_range(recvbuff, bytes)) return ncclInvalidArgument;
    if (sendbuff == recvbuff) return sk_emu_enqueue(stream, [] {}) == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
    return sk_emu_enqueue(stream, [=] { memmove(recvbuff, sendbuff, bytes); }) == cudaSuccess ? ncclSuccess
                                                                                            : ncclUnhandledCudaError;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    delete comm;
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (the emulated device failed)";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage (the emulated NCCL reduces over one rank only)";
    default: return "unknown NCCL result";
    }
}

} // extern "C"
