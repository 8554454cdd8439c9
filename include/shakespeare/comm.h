// comm.h: the communicator of data-parallel training: which rank this process is, and the
// few collectives the trainer needs. One interface, three implementations behind it:
//   single  one process (rank 0 of 1): every collective is a copy or nothing; always there;
//   mpi     launched by mpirun in a build with MPI: MPI_Allreduce and friends on host memory;
//   nccl    device buffers in a CUDA build: ncclAllReduce in place on the GPU, its unique id
//           broadcast over MPI (as llm.c's llmc/zero.cuh does), or one rank of one process.
// The trainer never knows which one runs; no caller needs an #ifdef.
// defines: sk_comm, sk_comm_init, sk_comm_single, sk_comm_free, sk_comm_release_device, sk_comm_rank, sk_comm_size,
//          sk_comm_local_rank, sk_comm_name, sk_comm_allreduce_sum_f32, sk_comm_allreduce_sum_f64,
//          sk_comm_bcast, sk_comm_gather, sk_comm_agree, sk_comm_abort
//
// Every collective must be called by every rank in the same order. A failing collective
// returns SK_ERR_DEVICE with the library's message; with MPI's default error handler a
// failure usually ends the job before that (which is what a dead rank should do).
#ifndef SHAKESPEARE_COMM_H
#define SHAKESPEARE_COMM_H

#include <stddef.h>

#include "shakespeare/status.h"

typedef struct sk_comm sk_comm;

// The MPI communicator when this process was started by an MPI launcher (mpirun sets
// OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK) and MPI is built in; otherwise the
// single-process one. *notice (may be NULL) gets a line when mpirun launched a build
// without MPI (each process would then train alone). argc/argv may be NULL.
sk_status sk_comm_init(sk_comm **out, int *argc, char ***argv, char *notice, size_t notice_size, sk_error *err);
// A single-process communicator (never fails; for library users and tests).
sk_comm *sk_comm_single(void);
// Finalizes MPI when this communicator initialized it. Safe on NULL.
void sk_comm_free(sk_comm *c);
// Lets go of the device side (the NCCL communicator and its stream) while the CUDA runtime is
// surely alive: the trainer does it when it ends. A later device all-reduce joins again.
// sk_comm_free does it too, but from an exit handler that may run after the CUDA runtime's
// own teardown. Safe on NULL.
void sk_comm_release_device(sk_comm *c);

int sk_comm_rank(const sk_comm *c);
int sk_comm_size(const sk_comm *c);
// Rank among the processes on this machine (picks the GPU: cuda:local_rank).
int sk_comm_local_rank(const sk_comm *c);
const char *sk_comm_name(const sk_comm *c); // "single", "mpi"

// In-place sum over ranks of buf[0..n); on_device = 1: buf is CUDA device memory (NCCL,
// even for a single process: a communicator of one rank). Every rank ends with the same bits.
sk_status sk_comm_allreduce_sum_f32(sk_comm *c, float *buf, size_t n, int on_device, sk_error *err);
sk_status sk_comm_allreduce_sum_f64(sk_comm *c, double *buf, size_t n, sk_error *err);
// root's bytes[0..n) to every rank.
sk_status sk_comm_bcast(sk_comm *c, void *buf, size_t n, int root, sk_error *err);
// Rank r's send[0..n) lands at recv + r*n on root (recv: size*n bytes, used on root only).
sk_status sk_comm_gather(sk_comm *c, const void *send, void *recv, size_t n, int root, sk_error *err);
// Collective agreement on a status: every rank passes its own (st, err); every rank gets
// back the status and message of the lowest rank that failed (SK_OK when none did), so
// that all ranks stop together and rank 0 can print the one line.
sk_status sk_comm_agree(sk_comm *c, sk_status st, sk_error *err);
// Ends every rank of the job with exit code `code` (MPI_Abort); exit(code) when single.
void sk_comm_abort(sk_comm *c, int code);

#endif
