// cuda_version.cu: the CUDA part of --version (build_info.h): the CUDA runtime and cuDNN
// versions loaded, and those built against when they differ. Needs no device.
// defines: sk_cuda_versions (cuda_module.h: the module's sk_cuda_describe)
#include <cuda_runtime.h>
#include <cudnn.h>
#include <stdio.h>

#include "cuda_module.h"

extern "C" void sk_cuda_versions(char *buf, size_t n) {
    int rt = 0;
    if (cudaRuntimeGetVersion(&rt) != cudaSuccess) rt = CUDART_VERSION;
    size_t dnn = cudnnGetVersion(); // cuDNN 9: major*10000 + minor*100 + patch
    snprintf(buf, n, "cuda (CUDA runtime %d.%d, cuDNN %zu.%zu.%zu; built with CUDA %d.%d, cuDNN %d.%d.%d)",
             rt / 1000, rt % 1000 / 10, dnn / 10000, dnn % 10000 / 100, dnn % 100, CUDART_VERSION / 1000,
             CUDART_VERSION % 1000 / 10, CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL);
}
