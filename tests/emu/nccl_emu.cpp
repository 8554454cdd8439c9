// nccl_emu.cpp: the NCCL functions of src/distributed/comm_nccl.cu for the emulated CUDA module
// (tests/emu/backend.cmake). Each emulated rank is its own process with its own emulated
// device in its own memory, so the all-reduce sums over the job's ranks through MPI
// (MPI_Allreduce over MPI_COMM_WORLD, when the module is built with MPI: SK_EMU_NCCL_MPI),
// run in stream order when the device reaches it; a communicator of one rank needs no MPI.
// Checked as NCCL would: the id must be one ncclGetUniqueId made (comm_nccl.cu zeroes it when
// rank 0 failed), ranks in range, and, with MPI, the communicator must be the job's world
// (the only one comm_nccl.cu makes). Sums of floats in MPI's order, not NCCL's ring: the
// same on every rank, as NCCL's are. Used by tests/gpu/test_nccl_rank.sh (one rank against
// plain CUDA) and test_nccl_ranks.sh (two ranks against one process).
// defines: ncclGetVersion, ncclGetUniqueId, ncclCommInitRank, ncclAllReduce, ncclCommDestroy, ncclCommAbort,
//          ncclCommGetAsyncError, ncclGetLastError, ncclGetErrorString
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cuda_runtime_api.h>
#include <nccl.h>
#ifdef SK_EMU_NCCL_MPI
#define OMPI_SKIP_MPICXX 1 // MPI's C interface only, from C++
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

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
#ifdef SK_EMU_NCCL_MPI
        int init = 0, size = 0, me = -1;
        MPI_Initialized(&init);
        if (init) MPI_Comm_size(MPI_COMM_WORLD, &size), MPI_Comm_rank(MPI_COMM_WORLD, &me);
        if (!init || size != nranks || me != rank) {
            fprintf(stderr, "emulated NCCL: rank %d of %d is not this MPI job's rank %d of %d\n", rank, nranks, me,
                    size);
            return ncclInvalidUsage;
        }
#else
        fprintf(stderr, "emulated NCCL: a communicator of %d ranks needs a build with MPI\n", nranks);
        return ncclInvalidUsage;
#endif
    }
    // As NCCL does on its first communicator with NCCL_DEBUG=VERSION (or INFO): tests see that
    // NCCL ran.
    static bool told;
    const char *debug = getenv("NCCL_DEBUG");
    if (!told && debug && (strcasecmp(debug, "VERSION") == 0 || strcasecmp(debug, "INFO") == 0)) {
        printf("NCCL version %d.%d.%d (emulated)\n", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
        fflush(stdout);
        told = true;
    }
    *comm = new ncclComm{nranks, rank};
    return ncclSuccess;
}

// recvbuff = the sum over the ranks of sendbuff (in place when they are the same), in
// stream order, both in device memory.
ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
    if (!comm || datatype != ncclFloat32 || op != ncclSum) return ncclInvalidArgument;
    const size_t bytes = count * sizeof(float);
    if (!sk_emu_device_range(sendbuff, bytes) || !sk_emu_device_range(recvbuff, bytes)) return ncclInvalidArgument;
    const int nranks = comm->nranks;
    cudaError_t e = sk_emu_enqueue(stream, [=] {
        if (nranks == 1) {
            if (sendbuff != recvbuff) memmove(recvbuff, sendbuff, bytes);
            return;
        }
#ifdef SK_EMU_NCCL_MPI
        const size_t chunk = (size_t)1 << 30; // MPI counts are int
        for (size_t off = 0; off < count; off += chunk) {
            const int k = (int)(count - off < chunk ? count - off : chunk);
            float *out = (float *)recvbuff + off;
            const void *in = sendbuff == recvbuff ? MPI_IN_PLACE : (const void *)((const float *)sendbuff + off);
            if (MPI_Allreduce(in, out, k, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
                sk_emu_fault("ncclAllReduce: MPI_Allreduce failed");
        }
#endif
    });
    return e == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    delete comm;
    return ncclSuccess;
}

ncclResult_t ncclGetVersion(int *version) {
    if (!version) return ncclInvalidArgument;
    *version = NCCL_VERSION_CODE; // the headers' (2.9 and later: major*10000 + minor*100 + patch)
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
    delete comm;
    return ncclSuccess;
}

// Nothing runs asynchronously outside the emulated stream, so nothing fails there.
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *async_error) {
    if (!comm || !async_error) return ncclInvalidArgument;
    *async_error = ncclSuccess;
    return ncclSuccess;
}

const char *ncclGetLastError(ncclComm_t comm) {
    (void)comm;
    return "";
}

const char *ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (the emulated device failed)";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage (the emulated NCCL said why on stderr)";
    default: return "unknown NCCL result";
    }
}

} // extern "C"
