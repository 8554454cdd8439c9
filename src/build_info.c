// build_info.c: the lines --version prints after the program's name (build_info.h).
// defines: sk_build_info
#include "shakespeare/build_info.h"

#include <cblas.h>
#include <stdio.h>

#include "cpu/recurrent_gemm.h"

void sk_build_info(char *buf, size_t n) {
    if (!buf || n == 0) return;
    // Every backend built in says what it runs on; a data-parallel communicator (MPI, NCCL)
    // adds its own part to this list when the build has one.
    char cuda[256];
    sk_cuda_describe(cuda, sizeof cuda);
    // OpenBLAS's config string names its version, build options and the kernels this CPU
    // gets (OPENBLAS_CORETYPE decides them when set).
    snprintf(buf, n, "backends: cpu, %s\nblas: %s; recurrent products: %s\n", cuda, openblas_get_config(),
             sk_recur_library());
}
