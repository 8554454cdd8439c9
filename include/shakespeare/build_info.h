// build_info.h: what a build holds, for --version: the backends built in and the libraries
// they run on.
// defines: sk_build_info
#ifndef SHAKESPEARE_BUILD_INFO_H
#define SHAKESPEARE_BUILD_INFO_H

#include <stddef.h>

// Writes one line per part, each ending in '\n', into buf (size n, always terminated):
//   backends: cpu, cuda (CUDA runtime R, cuDNN D[, NCCL N])   or ... cuda not built in
//   blas: OpenBLAS <version, options, kernels>; recurrent products: libxsmm V | CBLAS
//   data-parallel: MPI (<library and version>; ...)   or none (built without MPI ...)
// Needs no device: a CUDA build reports its libraries' versions on a machine without a GPU.
void sk_build_info(char *buf, size_t n);

#endif
