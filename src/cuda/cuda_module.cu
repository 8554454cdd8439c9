// cuda_module.cu: the one symbol libshakespeare_cuda.so exports (cuda_module.h); the linker's
// version script (module.map) keeps every other symbol of the module local.
// defines: sk_cuda_module_table
#include "cuda_module.h"

#ifdef SK_HAVE_NCCL
#define SK_NCCL_ALLREDUCE sk_cuda_nccl_allreduce_sum_f32
#define SK_NCCL_FREE sk_cuda_nccl_free
#else
#define SK_NCCL_ALLREDUCE NULL
#define SK_NCCL_FREE NULL
#endif

extern "C" const sk_cuda_module sk_cuda_module_table = {
    .abi = SK_CUDA_MODULE_ABI,
    .config_size = sizeof(sk_backend_config),
    .backend_size = sizeof(sk_backend),
    .device_usable = sk_cuda_device_usable,
    .device_count = sk_cuda_visible_devices,
    .backend_create = sk_cuda_backend_create,
    .versions = sk_cuda_versions,
    .memory = sk_cuda_memory,
    .nccl_allreduce_sum_f32 = SK_NCCL_ALLREDUCE,
    .nccl_free = SK_NCCL_FREE,
};
