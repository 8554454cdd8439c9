// device.c: device selection, the registry of backends: the backend that a device name ("auto",
// "cpu", "cuda", "cuda:N") makes, and the memory that device has for it (backend.h). The one
// place that calls every backend's constructor, so it stands above them all.
// defines: sk_backend_create, sk_backend_memory_of, sk_host_memory_available
#include <stdio.h>
#include <string.h>

#include "shakespeare/backend.h"

// The CUDA backend with the created backend's notice (if any) handed on.
static sk_status create_cuda(const sk_backend_config *cfg, sk_backend **out, char *notice, size_t notice_size,
                             sk_error *err) {
    sk_status st = sk_backend_create_cuda(cfg, out, err);
    if (st == SK_OK && notice && notice_size && sk_backend_notice(*out)[0])
        snprintf(notice, notice_size, "%s", sk_backend_notice(*out));
    return st;
}

sk_status sk_backend_create(const sk_backend_config *cfg, const char *device, sk_backend **out, char *notice,
                            size_t notice_size, sk_error *err) {
    int is_auto, is_cuda, index;
    *out = NULL;
    if (notice && notice_size) notice[0] = '\0';
    sk_status st = sk_device_parse(device, &is_auto, &is_cuda, &index, err);
    if (st != SK_OK) return st;
    if (is_cuda) {
        sk_backend_config c = *cfg;
        c.device_index = index;
        return create_cuda(&c, out, notice, notice_size, err);
    }
    if (is_auto) {
        char reason[256];
        if (sk_cuda_available(0, reason, sizeof reason)) {
            sk_backend_config c = *cfg;
            c.device_index = 0;
            return create_cuda(&c, out, notice, notice_size, err);
        }
        if (notice && notice_size) snprintf(notice, notice_size, "running on the CPU: %s", reason);
    }
    st = sk_backend_create_cpu(cfg, out, err);
    if (st == SK_OK && notice && notice_size && sk_backend_notice(*out)[0]) { // the CPU backend's own line after it
        size_t used = strlen(notice);
        snprintf(notice + used, notice_size - used, "%s%s", used ? "\n" : "", sk_backend_notice(*out));
    }
    return st;
}

// The number after `key` on a line of a file such as /proc/meminfo, times unit; 0 when absent.
static size_t read_field(const char *path, const char *key, size_t unit) {
    FILE *f = fopen(path, "r");
    char line[256];
    unsigned long long v = 0;
    const size_t k = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, k) == 0 && sscanf(line + k, "%llu", &v) == 1) break;
    if (f) fclose(f);
    return (size_t)v * unit;
}

size_t sk_host_memory_available(void) {
    size_t avail = read_field("/proc/meminfo", "MemAvailable:", 1024);
    // A container's limit (cgroup v2: memory.max, "max" when none): the room it leaves, the
    // group's page cache counted as free, as MemAvailable counts the system's.
    const size_t limit = read_field("/sys/fs/cgroup/memory.max", "", 1);
    if (limit > 0) {
        const size_t used = read_field("/sys/fs/cgroup/memory.current", "", 1);
        const size_t cache = read_field("/sys/fs/cgroup/memory.stat", "file ", 1);
        const size_t held = used > cache ? used - cache : 0, room = held < limit ? limit - held : 1;
        if (avail == 0 || room < avail) avail = room;
    }
    return avail;
}

void sk_backend_memory_of(const sk_backend_config *cfg, const char *device, sk_backend_memory *m) {
    memset(m, 0, sizeof *m);
    int is_auto, is_cuda, index;
    char reason[256];
    if (sk_device_parse(device, &is_auto, &is_cuda, &index, NULL) != SK_OK) return;
    m->on_cuda = is_cuda || (is_auto && sk_cuda_available(0, reason, sizeof reason));
    if (m->on_cuda) {
        sk_backend_config c = *cfg;
        c.device_index = is_cuda ? index : 0;
        sk_backend_cuda_memory(&c, m);
        return;
    }
    m->need = sk_backend_cpu_bytes(cfg, &m->activations);
    m->available = sk_host_memory_available();
}
