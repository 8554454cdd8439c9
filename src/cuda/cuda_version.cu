// cuda_version.cu: the CUDA part of --version (build_info.h): the CUDA runtime, cuDNN and
// (when built in) NCCL versions loaded, and those built against. Needs no device.
// defines: sk_cuda_versions (cuda_module.h: the module's sk_cuda_describe)
#include <cuda_runtime.h>
#include <cudnn.h>
#include <stdio.h>
#ifdef SK_HAVE_NCCL
#include <nccl.h>
#endif

#include "cuda_module.h"

// ", NCCL 2.28.3" when the module all-reduces GPU gradients with NCCL; empty otherwise.
static void nccl_version(char *buf, size_t n) {
    buf[0] = '\0';
#ifdef SK_HAVE_NCCL
    int v = 0; // NCCL 2.9 and later: major*10000 + minor*100 + patch
    if (ncclGetVersion(&v) == ncclSuccess) snprintf(buf, n, ", NCCL %d.%d.%d", v / 10000, v % 10000 / 100, v % 100);
#else
    (void)n;
#endif
}

extern "C" void sk_cuda_versions(char *buf, size_t n) {
    int rt = 0;
    if (cudaRuntimeGetVersion(&rt) != cudaSuccess) rt = CUDART_VERSION;
    size_t dnn = cudnnGetVersion(); // cuDNN 9: major*10000 + minor*100 + patch
    char nccl[32];
    nccl_version(nccl, sizeof nccl);
    snprintf(buf, n, "cuda (CUDA runtime %d.%d, cuDNN %zu.%zu.%zu%s; built with CUDA %d.%d, cuDNN %d.%d.%d)",
             rt / 1000, rt % 1000 / 10, dnn / 10000, dnn % 10000 / 100, dnn % 100, nccl, CUDART_VERSION / 1000,
             CUDART_VERSION % 1000 / 10, CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL);
}
