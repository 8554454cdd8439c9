// cuda_module.cu: the one symbol libshakespeare_cuda.so exports (cuda_module.h); the linker's
// version script (module.map) keeps every other symbol of the module local.
// defines: sk_cuda_module_table
#include "cuda_module.h"

extern "C" const sk_cuda_module sk_cuda_module_table = {
    SK_CUDA_MODULE_ABI,    sizeof(sk_backend_config), sizeof(sk_backend), sk_cuda_device_usable,
    sk_cuda_backend_create, sk_cuda_versions,
};
