// cuda_module.h: the seam between the core and the CUDA backend module. A CUDA build puts
// the backend (src/cuda/, kernels/) into a shared module, libshakespeare_cuda.so, that the
// core loads with dlopen only when a GPU backend is asked for (src/cuda/cuda_loader.c),
// so that programs running on the CPU never map cuBLAS and cuDNN. The module exports one
// symbol, SK_CUDA_MODULE_SYMBOL: a table of the functions below.
// defines: sk_cuda_module, SK_CUDA_MODULE_FILE, SK_CUDA_MODULE_SYMBOL, SK_CUDA_MODULE_ABI,
//          sk_cuda_device_usable, sk_cuda_visible_devices, sk_cuda_backend_create, sk_cuda_versions,
//          sk_cuda_memory,
//          sk_cuda_nccl_allreduce_sum_f32, sk_cuda_nccl_free, sk_cuda_module_loaded
#ifndef SHAKESPEARE_CUDA_MODULE_H
#define SHAKESPEARE_CUDA_MODULE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" { // the project's headers are C (and have no guards of their own)
#endif

#include "backend/backend_impl.h" // struct sk_backend, whose size the loader checks
#include "shakespeare/backend.h"

struct sk_comm; // src/distributed/comm_internal.h: the same struct on both sides of the seam

#define SK_CUDA_MODULE_FILE "libshakespeare_cuda.so"
#define SK_CUDA_MODULE_SYMBOL "sk_cuda_module_table"
// Raised whenever the table, or a struct passed through it, changes its meaning.
#define SK_CUDA_MODULE_ABI 12

typedef struct sk_cuda_module {
    int abi;                 // SK_CUDA_MODULE_ABI of the module's build
    size_t config_size;      // sizeof(sk_backend_config) in the module's build
    size_t backend_size;     // sizeof(sk_backend) in the module's build
    int (*device_usable)(int index, char *reason, size_t reason_size);
    int (*device_count)(void);
    sk_status (*backend_create)(const sk_backend_config *cfg, sk_backend **out, sk_error *err);
    void (*versions)(char *buf, size_t n);
    void (*memory)(const sk_backend_config *cfg, sk_backend_memory *m);
    // NCCL (src/distributed/comm_nccl.cu) for the core's device all-reduce; NULL in a module built
    // without NCCL.
    sk_status (*nccl_allreduce_sum_f32)(struct sk_comm *c, float *dev_buf, size_t n, sk_error *err);
    void (*nccl_free)(void *nccl);
} sk_cuda_module;

// The module's implementations behind the core's sk_cuda_available, sk_backend_create_cuda
// and sk_cuda_describe (same contracts; backend_cuda.cu and cuda_version.cu).
int sk_cuda_device_usable(int index, char *reason, size_t reason_size);
int sk_cuda_visible_devices(void); // behind sk_cuda_device_count
sk_status sk_cuda_backend_create(const sk_backend_config *cfg, sk_backend **out, sk_error *err);
void sk_cuda_versions(char *buf, size_t n);
void sk_cuda_memory(const sk_backend_config *cfg, sk_backend_memory *m); // behind sk_cuda_memory_of
// The core's side (cuda_loader.c): the module's table, loaded on first use; NULL with *why
// (may be NULL) saying why it could not be loaded.
const sk_cuda_module *sk_cuda_module_loaded(const char **why);
// comm_nccl.cu's, behind the core's sk_nccl_allreduce_sum_f32 and sk_nccl_free (comm_internal.h).
sk_status sk_cuda_nccl_allreduce_sum_f32(struct sk_comm *c, float *dev_buf, size_t n, sk_error *err);
void sk_cuda_nccl_free(void *nccl);

#ifdef __cplusplus
}
#endif

#endif
