// cuda_loader.c: the CUDA entry points of a CUDA build (compiled instead of src/cuda/):
// they load the CUDA backend module, libshakespeare_cuda.so (cuda_module.h), with dlopen
// on first use and call through its table. A program that never asks for a GPU never maps
// the module, nor cuBLAS and cuDNN, which it links: about 200 MB resident at load.
// The module is looked for beside the program (the build tree) and then in
// SK_CUDA_MODULE_RELDIR relative to it (an install: bin/../lib/shakespeare).
// --device auto first asks the NVIDIA driver (libcuda.so.1, which the CUDA runtime would
// load too) whether there is any device, so that a machine without a GPU falls back to the
// CPU without loading the module; the module's own probe decides about a device it finds.
// Not thread-safe: programs create backends from one thread.
// defines: sk_cuda_available, sk_cuda_device_count, sk_backend_create_cuda, sk_backend_cuda_memory, sk_cuda_describe,
//          sk_cuda_module_loaded
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cuda_module.h"
#include "shakespeare/backend.h"

#ifndef SK_CUDA_MODULE_RELDIR
#define SK_CUDA_MODULE_RELDIR "../lib/shakespeare"
#endif

static const sk_cuda_module *loaded;   // the module's table once loaded
static char load_error[1024];           // why it could not be loaded, once tried
static int load_tried;

// Writes "<directory of this program>/<rel>/<file>" into buf; 0 when it does not fit or
// /proc/self/exe cannot be read.
static int beside_exe(char *buf, size_t n, const char *rel) {
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return 0;
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return 0;
    *slash = '\0';
    int k = snprintf(buf, n, "%s/%s%s" SK_CUDA_MODULE_FILE, exe, rel, rel[0] ? "/" : "");
    return k > 0 && (size_t)k < n;
}

// Opens the module at path and checks its table; on failure fills load_error and returns 0.
static int open_module(const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error, "%.1000s", why ? why : path);
        return 0;
    }
    const sk_cuda_module *m = (const sk_cuda_module *)dlsym(h, SK_CUDA_MODULE_SYMBOL);
    if (!m) {
        snprintf(load_error, sizeof load_error, "%.900s has no %s", path, SK_CUDA_MODULE_SYMBOL);
    } else if (m->abi != SK_CUDA_MODULE_ABI || m->config_size != sizeof(sk_backend_config) ||
               m->backend_size != sizeof(sk_backend)) {
        snprintf(load_error, sizeof load_error, "%.900s was built from another version of shakespeare", path);
    } else {
        loaded = m;
        return 1; // never closed: backends point into it, and CUDA libraries do not unload cleanly
    }
    dlclose(h);
    return 0;
}

// The module's table, or NULL with load_error set. The first candidate file that exists is
// loaded; when it fails (a missing cuDNN), dlerror says why.
static const sk_cuda_module *cuda_module(void) {
    if (load_tried) return loaded;
    load_tried = 1;
    static const char *const dirs[] = {"", SK_CUDA_MODULE_RELDIR};
    char path[4200], first[4200] = "";
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        if (!beside_exe(path, sizeof path, dirs[i])) break;
        if (access(path, F_OK) == 0) {
            open_module(path);
            return loaded;
        }
        if (!first[0]) snprintf(first, sizeof first, "%s", path);
    }
    if (first[0])
        snprintf(load_error, sizeof load_error, "no %s beside the program (%.900s) nor in its " SK_CUDA_MODULE_RELDIR,
                 SK_CUDA_MODULE_FILE, first);
    else
        snprintf(load_error, sizeof load_error, "cannot read /proc/self/exe to look for " SK_CUDA_MODULE_FILE);
    return loaded;
}

// 1 when the NVIDIA driver is installed and reports at least one device; else 0 and why,
// in the words of the module's probe (backend_cuda.cu).
static int driver_has_device(char *why, size_t n) {
#ifdef SK_CUDA_EMULATED // the emulated module's device (tests/emu/backend.cmake) is always there
    (void)why, (void)n;
    return 1;
#endif
    typedef int (*init_fn)(unsigned);
    typedef int (*count_fn)(int *);
    typedef int (*error_fn)(int, const char **);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror(); // the usual case, a machine without the driver, in a few words
        if (!e || strstr(e, "No such file"))
            snprintf(why, n, "no NVIDIA driver (libcuda.so.1 not found)");
        else
            snprintf(why, n, "no NVIDIA driver is loaded: %s", e);
        return 0;
    }
    init_fn cu_init = (init_fn)dlsym(h, "cuInit");
    count_fn cu_count = (count_fn)dlsym(h, "cuDeviceGetCount");
    error_fn cu_error = (error_fn)dlsym(h, "cuGetErrorString");
    int count = 0, rc = -1;
    if (cu_init && cu_count) {
        rc = cu_init(0);
        if (rc == 0) rc = cu_count(&count);
    }
    if (rc == 0 && count > 0) return 1; // the driver stays loaded: the CUDA runtime uses it next
    const char *what = NULL;
    if (rc != 0 && cu_error) cu_error(rc, &what);
    if (rc == 0)
        snprintf(why, n, "no CUDA device found");
    else
        snprintf(why, n, "no CUDA device found (cuInit: %s)", what ? what : "the driver has no cuInit");
    return 0;
}

int sk_cuda_available(int index, char *reason, size_t reason_size) {
    char why[1100];
    const sk_cuda_module *m = NULL;
    if (driver_has_device(why, sizeof why)) {
        m = cuda_module();
        if (!m) snprintf(why, sizeof why, "CUDA support not found: %s", load_error);
    }
    if (m) return m->device_usable(index, reason, reason_size);
    if (reason && reason_size) snprintf(reason, reason_size, "%s", why);
    return 0;
}

int sk_cuda_device_count(void) {
    char why[1100];
    if (!driver_has_device(why, sizeof why)) return 0;
    const sk_cuda_module *m = cuda_module();
    return m ? m->device_count() : 0;
}

sk_status sk_backend_create_cuda(const sk_backend_config *cfg, sk_backend **out, sk_error *err) {
    *out = NULL;
    const sk_cuda_module *m = cuda_module();
    if (!m) return sk_fail(err, SK_ERR_DEVICE, "device cuda: CUDA support not found: %s", load_error);
    return m->backend_create(cfg, out, err);
}

void sk_backend_cuda_memory(const sk_backend_config *cfg, sk_backend_memory *m) {
    const sk_cuda_module *mod = cuda_module();
    memset(m, 0, sizeof *m);
    m->on_cuda = 1;
    if (mod) mod->memory(cfg, m);
}

void sk_cuda_describe(char *buf, size_t n) {
    const sk_cuda_module *m = cuda_module();
    if (m)
        m->versions(buf, n);
    else if (buf && n)
        snprintf(buf, n, "cuda (CUDA support not found: %s)", load_error);
}

const sk_cuda_module *sk_cuda_module_loaded(const char **why) {
    const sk_cuda_module *m = cuda_module();
    if (why) *why = m ? "" : load_error;
    return m;
}
