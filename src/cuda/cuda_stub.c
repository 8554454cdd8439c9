// cuda_stub.c: the CUDA entry points of a build without CUDA support (compiled instead
// of src/cuda/ when CMake finds no nvcc or no cuDNN).
// defines: sk_cuda_available, sk_cuda_device_count, sk_backend_create_cuda, sk_backend_cuda_memory,
//          sk_cuda_describe
#include <stdio.h>
#include <string.h>

#include "shakespeare/backend.h"

int sk_cuda_available(int index, char *reason, size_t reason_size) {
    (void)index;
    if (reason && reason_size) snprintf(reason, reason_size, "this build has no CUDA support");
    return 0;
}

int sk_cuda_device_count(void) { return 0; }

sk_status sk_backend_create_cuda(const sk_backend_config *cfg, sk_backend **out, sk_error *err) {
    (void)cfg;
    *out = NULL;
    return sk_fail(err, SK_ERR_DEVICE, "device cuda: this build has no CUDA support (built without nvcc or cuDNN)");
}

void sk_backend_cuda_memory(const sk_backend_config *cfg, sk_backend_memory *m) {
    (void)cfg;
    memset(m, 0, sizeof *m);
    m->on_cuda = 1;
}

void sk_cuda_describe(char *buf, size_t n) {
    if (buf && n) snprintf(buf, n, "cuda not built in");
}
