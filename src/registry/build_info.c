// build_info.c: the lines --version prints after the program's name (build_info.h).
// defines: sk_build_info
#include "shakespeare/build_info.h"

#include <cblas.h>
#include <stdio.h>

#include "cpu/recurrent_gemm.h"
#include "distributed/comm_internal.h"
#include "shakespeare/backend.h" // sk_cuda_describe

void sk_build_info(char *buf, size_t n) {
    if (!buf || n == 0) return;
    // Every backend built in says what it runs on (the cuda part names NCCL when built in,
    // which sums GPU gradients); the data-parallel line names the MPI library that starts ranks.
    char cuda[256], mpi[160];
    sk_cuda_describe(cuda, sizeof cuda);
    sk_comm_mpi_describe(mpi, sizeof mpi);
    // OpenBLAS's config string names its version, build options and the kernels this CPU
    // gets (OPENBLAS_CORETYPE decides them when set).
    snprintf(buf, n, "backends: cpu, %s\nblas: %s; recurrent products: %s\ndata-parallel: %s\n", cuda,
             openblas_get_config(), sk_recur_library(), mpi);
}
