// comm_internal.h: the communicator's table of operations, shared by its implementations
// (comm.c: the single-process one and the dispatch; comm_mpi.c; comm_nccl.cu).
// defines: sk_comm_ops, struct sk_comm, sk_comm_mpi_create, sk_comm_mpi_built,
//          sk_comm_mpi_describe, sk_nccl_allreduce_sum_f32, sk_nccl_free
#ifndef SHAKESPEARE_COMM_INTERNAL_H
#define SHAKESPEARE_COMM_INTERNAL_H

#include "shakespeare/comm.h"

typedef struct {
    const char *name;
    sk_status (*allreduce_f32)(sk_comm *c, float *buf, size_t n, sk_error *err);  // host memory
    sk_status (*allreduce_f64)(sk_comm *c, double *buf, size_t n, sk_error *err); // host memory
    sk_status (*bcast)(sk_comm *c, void *buf, size_t n, int root, sk_error *err);
    sk_status (*gather)(sk_comm *c, const void *send, void *recv, size_t n, int root, sk_error *err);
    void (*abort)(sk_comm *c, int code);
    void (*finalize)(sk_comm *c); // releases impl
} sk_comm_ops;

struct sk_comm {
    const sk_comm_ops *ops;
    int rank, size, local_rank;
    void *impl; // the implementation's state (MPI communicators)
    void *nccl; // NCCL communicator, created on the first device all-reduce (comm_nccl.cu)
};

// comm_mpi.c (or comm_mpi_stub.c in a build without MPI: SK_ERR_DEVICE, and 0).
sk_status sk_comm_mpi_create(sk_comm **out, int *argc, char ***argv, sk_error *err);
int sk_comm_mpi_built(void);
// The data-parallel part of --version: "MPI (Open MPI v4.1.4; ...)" or why there is none.
void sk_comm_mpi_describe(char *buf, size_t n);

// comm_nccl.cu (or comm_nccl_stub.c without CUDA and NCCL: SK_ERR_DEVICE). In-place sum of
// the device buffer over c's ranks; the first call creates c->nccl on the buffer's device,
// its unique id made by rank 0 and broadcast with c's own bcast.
sk_status sk_nccl_allreduce_sum_f32(sk_comm *c, float *dev_buf, size_t n, sk_error *err);
void sk_nccl_free(void *nccl);

#endif
