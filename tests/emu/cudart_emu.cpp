// cudart_emu.cpp: the CUDA runtime functions the backend calls (src/cuda, kernels), defined
// for one emulated device (emu_runtime.h says what is modelled), so that the emulated CUDA
// module links without libcudart and runs its kernels on cuda_emu.h's fibers.
// defines: the cuda* functions of cuda_runtime_api.h that the backend uses, and
//          sk_emu_enqueue, sk_emu_fault, sk_emu_device_range, sk_emu_device_sms, sk_emu_enqueue_launch
//
// What it checks as CUDA would, beyond running the work:
//   - a stream's work runs at the latest synchronization that covers it (emu_runtime.h);
//   - copies with pageable host memory: H2D reads the source at the call, D2H waits for the
//     stream and copies at once (CUDA's documented behaviour), and neither may be captured;
//   - during a capture: allocation, freeing and every synchronization fail with
//     cudaErrorStreamCaptureUnsupported and invalidate the capture (the capture mode's
//     "unsafe calls"); with SK_EMU_UNCAPTURABLE=1 in the environment so does the first work
//     a capture is given, as a library call that cannot be captured would (the tests of
//     --cuda-graph try's eager fallback);
//   - cudaMemcpy kinds against where the pointers are; device ranges inside one allocation;
//   - launch configurations, dynamic shared memory above the kernel's attribute, and
//     cluster sizes (whole clusters, at most 8 blocks unless the kernel allows 16);
//   - a fault in a kernel (a deadlock, a shared-memory overrun) is sticky, as on a GPU.
// Not modelled: devices of their own (SK_EMU_DEVICES gives a process that many, which all
// share one memory and one queue: a data-parallel rank uses one), other streams' concurrency (one global order of all
// streams' work, a valid CUDA execution), memory ordering, timing.
#include "emu_runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "cuda_emu.h"

namespace {

constexpr size_t kAlign = 256;              // cudaMalloc's alignment
constexpr int kOptinSmem = 232448;          // an H100's opt-in shared memory per block (227 KiB)
constexpr int kSmemPerSm = 233472;          // and per multiprocessor
constexpr int kDefaultDynamicSmem = 48 << 10; // a kernel's dynamic shared memory until raised

struct Op {
    uint64_t seq;
    std::function<void()> run;
};

struct Graph {
    std::vector<std::function<void()>> ops;
};

// A capture has one origin stream (cudaStreamBeginCapture's), which owns the graph and the
// broken flag; a stream that waits on an event recorded in the capture joins it (origin
// set) and appends to the same graph, and must be joined back (the origin, or a stream
// the origin then waits on, waits on an event recorded after its last work) before the
// capture ends, as CUDA's fork/join capture demands.
struct Stream {
    bool capturing = false;
    bool capture_broken = false; // the origin's is the capture's
    bool refuse_capture = false; // SK_EMU_UNCAPTURABLE: refuse this capture's first work
    std::unique_ptr<Graph> graph; // the origin's
    Stream *origin = nullptr;     // a joined stream's capture origin; nullptr for the origin
    size_t captured_ops = 0;      // work this stream added to the capture
    size_t joined_ops = 0;        // of which another stream of the capture has waited for
};

struct Event {
    uint64_t seq = 0; // the marker op recorded last; 0: never recorded
    double ran_s = -1.0; // host seconds when that marker ran (cudaEventElapsedTime); < 0: not yet
    Stream *captured_on = nullptr; // recorded in a capture, on this stream; nullptr: outside one
    size_t captured_ops = 0;       // that stream's captured_ops at the record
};

// The device: one queue of every stream's work in enqueue order (a valid serialization).
// Its containers live on the heap and are never destroyed: exit handlers registered before
// the module was loaded (the trainer's, which frees the NCCL communicator) run after the
// module's static destructors, and may still call in, as they may into the real runtime.
std::deque<Op> &g_queue = *new std::deque<Op>;
uint64_t g_next_seq = 1;
cudaError_t g_sticky = cudaSuccess, g_last = cudaSuccess;
std::map<uintptr_t, size_t> &g_device = *new std::map<uintptr_t, size_t>; // allocation start -> bytes
std::map<uintptr_t, size_t> &g_pinned = *new std::map<uintptr_t, size_t>; // cudaMallocHost start -> bytes
std::map<uintptr_t, int> &g_device_owner = *new std::map<uintptr_t, int>; // allocation start -> its device
std::set<Stream *> &g_streams = *new std::set<Stream *>;
std::set<Event *> &g_events = *new std::set<Event *>;
std::map<const void *, int> &g_max_dynamic_smem = *new std::map<const void *, int>; // per kernel, as set
std::set<const void *> &g_nonportable_clusters = *new std::set<const void *>; // kernels allowed clusters of 16
Stream &g_default = *new Stream;
int g_capturing = 0; // streams in capture
int g_device_index = 0; // cudaSetDevice's: every device of a process shares the one memory and queue

cudaError_t fail(cudaError_t e) {
    if (e != cudaSuccess) g_last = e;
    return e;
}

Stream *stream_of(cudaStream_t s) {
    if (!s || s == cudaStreamLegacy || s == cudaStreamPerThread) return &g_default;
    Stream *st = (Stream *)s;
    return g_streams.count(st) ? st : nullptr;
}

// An unsafe call while a stream captures: the capture is broken, the call refused.
Stream *capture_root(Stream *st) { return st->origin ? st->origin : st; }

bool refuse_in_capture() {
    if (!g_capturing) return false;
    for (Stream *s : g_streams)
        if (s->capturing) capture_root(s)->capture_broken = true;
    g_default.capture_broken |= g_default.capturing;
    fail(cudaErrorStreamCaptureUnsupported);
    return true;
}

// Runs queued work up to and including seq (everything: UINT64_MAX); after a fault the
// rest is dropped, as a faulted context runs nothing more.
void run_until(uint64_t seq) {
    while (!g_queue.empty() && g_queue.front().seq <= seq) {
        Op op = std::move(g_queue.front());
        g_queue.pop_front();
        if (g_sticky == cudaSuccess) op.run();
    }
}

cudaError_t synchronize(uint64_t seq) {
    if (refuse_in_capture()) return cudaErrorStreamCaptureUnsupported;
    run_until(seq);
    return fail(g_sticky);
}

bool in_map(const std::map<uintptr_t, size_t> &m, const void *p, uintptr_t *start, size_t *bytes) {
    const uintptr_t a = (uintptr_t)p;
    auto it = m.upper_bound(a);
    if (it == m.begin()) return false;
    --it;
    if (a >= it->first + it->second) return false;
    *start = it->first, *bytes = it->second;
    return true;
}

bool is_pinned(const void *p) {
    uintptr_t s;
    size_t n;
    return in_map(g_pinned, p, &s, &n);
}

// The allocation that holds p, if any: [start, start + bytes).
bool find_device(const void *p, uintptr_t *start, size_t *bytes) { return in_map(g_device, p, start, bytes); }

bool is_device(const void *p) {
    uintptr_t s;
    size_t n;
    return find_device(p, &s, &n);
}

// Checks a copy's kind against where its ends are (cudaErrorInvalidValue, as CUDA): a
// device end lies wholly inside one allocation, a host end outside every one.
bool kind_ok(const void *dst, size_t dbytes, const void *src, size_t sbytes, cudaMemcpyKind kind) {
    const bool dd = sk_emu_device_range(dst, dbytes), sd = sk_emu_device_range(src, sbytes);
    const bool dh = !is_device(dst), sh = !is_device(src);
    switch (kind) {
    case cudaMemcpyHostToDevice: return dd && sh;
    case cudaMemcpyDeviceToHost: return sd && dh;
    case cudaMemcpyDeviceToDevice: return dd && sd;
    case cudaMemcpyHostToHost: return dh && sh;
    case cudaMemcpyDefault: return (dd || dh) && (sd || sh);
    }
    return false;
}

// A copy of rows (width bytes each, pitches dpitch/spitch) on stream s.
cudaError_t copy_async(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows,
                       cudaMemcpyKind kind, cudaStream_t s) {
    if (g_sticky) return g_sticky;
    if (width > dpitch || width > spitch) return fail(cudaErrorInvalidPitchValue);
    if (rows == 0 || width == 0) return cudaSuccess;
    const size_t dspan = dpitch * (rows - 1) + width, sspan = spitch * (rows - 1) + width;
    if (!kind_ok(dst, dspan, src, sspan, kind)) return fail(cudaErrorInvalidValue);
    Stream *st = stream_of(s);
    if (!st) return fail(cudaErrorInvalidResourceHandle);
    auto rows_copy = [=](void *d, const void *from) {
        for (size_t r = 0; r < rows; r++) memcpy((char *)d + r * dpitch, (const char *)from + r * spitch, width);
    };
    const bool src_pageable = !is_device(src) && !is_pinned(src), dst_pageable = !is_device(dst) && !is_pinned(dst);
    if ((src_pageable || dst_pageable) && st->capturing) {
        capture_root(st)->capture_broken = true;
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    if (dst_pageable) { // D2H into pageable memory: synchronous
        cudaError_t e = synchronize(UINT64_MAX);
        if (e != cudaSuccess) return e;
        rows_copy(dst, src);
        return cudaSuccess;
    }
    if (src_pageable) { // H2D from pageable memory: the source is staged at the call
        std::shared_ptr<std::vector<char>> staged = std::make_shared<std::vector<char>>(sspan);
        memcpy(staged->data(), src, sspan);
        return sk_emu_enqueue(s, [=] { rows_copy(dst, staged->data()); });
    }
    return sk_emu_enqueue(s, [=] { rows_copy(dst, src); });
}

cudaError_t set_async(void *dst, size_t pitch, int value, size_t width, size_t rows, cudaStream_t s) {
    if (g_sticky) return g_sticky;
    if (width > pitch) return fail(cudaErrorInvalidPitchValue);
    if (rows == 0 || width == 0) return cudaSuccess;
    if (!sk_emu_device_range(dst, pitch * (rows - 1) + width)) return fail(cudaErrorInvalidValue);
    return sk_emu_enqueue(s, [=] {
        for (size_t r = 0; r < rows; r++) memset((char *)dst + r * pitch, value, width);
    });
}

int max_dynamic_smem(const void *kernel) {
    auto it = g_max_dynamic_smem.find(kernel);
    return it == g_max_dynamic_smem.end() ? kDefaultDynamicSmem : it->second;
}

int blocks_per_sm(const void *kernel, int threads, size_t smem) {
    if (threads < 1 || threads > 1024 || smem > (size_t)max_dynamic_smem(kernel)) return 0;
    int by_smem = (int)(kSmemPerSm / (smem + 1024)); // 1 KiB reserved per block, as on sm_90
    int by_threads = 2048 / threads;
    int n = by_smem < by_threads ? by_smem : by_threads;
    return n < 32 ? n : 32;
}

// How many clusters of cs blocks (threads each, smem bytes) can be resident at once: the
// device's blocks in whole clusters; 0 when cs passes 8, or 16 for a kernel with
// cudaFuncAttributeNonPortableClusterSizeAllowed (an H100's limits). No GPCs: an H100 keeps
// a cluster within one GPC (16 to 18 SMs), so it may answer fewer, as when a GPC's spare
// SMs cannot hold another whole cluster of large blocks.
int active_clusters(const void *kernel, unsigned cs, int threads, size_t smem) {
    const unsigned limit = g_nonportable_clusters.count(kernel) ? 16 : 8;
    if (cs == 0 || cs > limit) return 0;
    return blocks_per_sm(kernel, threads, smem) * sk_emu_device_sms() / (int)cs;
}

} // namespace

// ---- the seam (emu_runtime.h) --------------------------------------------------------

cudaError_t sk_emu_enqueue(cudaStream_t s, std::function<void()> op) {
    Stream *st = stream_of(s);
    if (!st) return fail(cudaErrorInvalidResourceHandle);
    if (g_sticky) return g_sticky;
    if (st->capturing) {
        Stream *root = capture_root(st);
        if (root->capture_broken) return fail(cudaErrorStreamCaptureInvalidated);
        if (root->refuse_capture) {
            root->capture_broken = true;
            return fail(cudaErrorStreamCaptureUnsupported);
        }
        root->graph->ops.push_back(std::move(op));
        st->captured_ops++;
        return cudaSuccess;
    }
    g_queue.push_back(Op{g_next_seq++, std::move(op)});
    return cudaSuccess;
}

void sk_emu_fault(const std::string &what) {
    if (g_sticky == cudaSuccess) fprintf(stderr, "emulated device: %s\n", what.c_str());
    g_sticky = cudaErrorLaunchFailure;
}

bool sk_emu_device_range(const void *p, size_t bytes) {
    uintptr_t start;
    size_t n;
    if (!find_device(p, &start, &n)) return false;
    return bytes <= n - ((uintptr_t)p - start);
}

// The environment's integer `name` if it lies in [lo, hi], else def.
static int env_int_in(const char *name, int def, int lo, int hi) {
    const char *e = getenv(name);
    const int v = e ? atoi(e) : def;
    return v < lo || v > hi ? def : v;
}

int sk_emu_device_sms() {
    static const int sms = env_int_in("SK_EMU_SMS", 24, 1, 256);
    return sms;
}

int sk_emu_device_count() {
    static const int n = env_int_in("SK_EMU_DEVICES", 1, 1, 8);
    return n;
}

cudaError_t sk_emu_enqueue_launch(const void *kernel, bool cooperative, unsigned cluster, dim3 grid, dim3 block,
                                  size_t smem, cudaStream_t stream, std::function<void()> body) {
    if (g_sticky) return g_sticky;
    const unsigned threads = block.x * block.y * block.z;
    if (block.y != 1 || block.z != 1 || grid.z != 1 || ((cooperative || cluster) && grid.y != 1) ||
        (cooperative && cluster))
        return fail(cudaErrorNotSupported); // cuda_emu.h's launches: 1-D blocks, 2-D grids
    if (grid.x == 0 || grid.y == 0 || grid.x > 0x7fffffffu || grid.y > 65535 || threads == 0 || threads > 1024)
        return fail(cudaErrorInvalidConfiguration);
    if (smem > (size_t)max_dynamic_smem(kernel)) return fail(cudaErrorInvalidValue);
    if (cooperative && (long)grid.x > (long)blocks_per_sm(kernel, (int)threads, smem) * sk_emu_device_sms())
        return fail(cudaErrorCooperativeLaunchTooLarge);
    if (cluster && (grid.x % cluster != 0 || active_clusters(kernel, cluster, (int)threads, smem) == 0))
        return fail(cudaErrorInvalidClusterSize);
    sk_emu_config cfg;
    cfg.grid = grid.x, cfg.grid_y = grid.y, cfg.block = threads, cfg.dynamic_smem = smem;
    cfg.cooperative = cooperative, cfg.cluster = cluster;
    const char *rev = getenv("SK_EMU_REVERSE");
    cfg.reverse = rev && rev[0] == '1';
    return sk_emu_enqueue(stream, [cfg, body] {
        std::string why = sk_emu_launch(cfg, body);
        if (!why.empty()) sk_emu_fault("kernel launch: " + why);
    });
}

// ---- the CUDA runtime API -------------------------------------------------------------

extern "C" {

cudaError_t cudaGetLastError(void) {
    cudaError_t e = g_sticky ? g_sticky : g_last;
    g_last = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) { return g_sticky ? g_sticky : g_last; }

const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
#define NAME(x) \
    case x: return #x;
        NAME(cudaSuccess)
        NAME(cudaErrorInvalidValue)
        NAME(cudaErrorMemoryAllocation)
        NAME(cudaErrorInvalidConfiguration)
        NAME(cudaErrorInvalidPitchValue)
        NAME(cudaErrorInvalidDevice)
        NAME(cudaErrorInvalidResourceHandle)
        NAME(cudaErrorNotSupported)
        NAME(cudaErrorLaunchFailure)
        NAME(cudaErrorCooperativeLaunchTooLarge)
        NAME(cudaErrorInvalidClusterSize)
        NAME(cudaErrorStreamCaptureUnsupported)
        NAME(cudaErrorStreamCaptureInvalidated)
        NAME(cudaErrorStreamCaptureIsolation)
        NAME(cudaErrorStreamCaptureUnjoined)
        NAME(cudaErrorStreamCaptureUnmatched)
        NAME(cudaErrorIllegalState)
#undef NAME
    default: return "cudaErrorUnknown";
    }
}

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidPitchValue: return "invalid pitch argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotSupported: return "operation not supported (by the emulated device)";
    case cudaErrorLaunchFailure: return "unspecified launch failure (the emulated device reported why on stderr)";
    case cudaErrorCooperativeLaunchTooLarge: return "too many blocks in cooperative launch";
    case cudaErrorInvalidClusterSize: return "invalid cluster size";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureIsolation: return "dependency created on uncaptured work in another stream";
    case cudaErrorStreamCaptureUnjoined: return "capturing stream has unjoined work";
    case cudaErrorStreamCaptureUnmatched: return "the capture was not initiated in this stream";
    case cudaErrorIllegalState: return "the operation is not permitted in the stream's state";
    default: return "unknown error";
    }
}

cudaError_t cudaGetDeviceCount(int *n) {
    *n = sk_emu_device_count();
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int d) {
    if (d < 0 || d >= sk_emu_device_count()) return fail(cudaErrorInvalidDevice);
    g_device_index = d;
    return g_sticky ? g_sticky : cudaSuccess;
}

cudaError_t cudaGetDevice(int *d) {
    *d = g_device_index;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v) {
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v) {
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device) {
    if (device < 0 || device >= sk_emu_device_count()) return fail(cudaErrorInvalidDevice);
    switch (attr) {
    case cudaDevAttrMultiProcessorCount: *value = sk_emu_device_sms(); break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = kOptinSmem; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = kSmemPerSm; break;
    case cudaDevAttrCooperativeLaunch: *value = 1; break;
    case cudaDevAttrClusterLaunch: *value = 1; break;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    default: return fail(cudaErrorNotSupported); // not modelled: say so rather than invent
    }
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int device) {
    if (device < 0 || device >= sk_emu_device_count()) return fail(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "emulated sm_90 (%d SMs, tests/emu)", sk_emu_device_sms());
    p->major = 9, p->minor = 0;
    p->multiProcessorCount = sk_emu_device_sms();
    p->sharedMemPerBlockOptin = kOptinSmem;
    p->sharedMemPerMultiprocessor = kSmemPerSm;
    p->maxThreadsPerBlock = 1024;
    p->warpSize = 32;
    p->cooperativeLaunch = 1;
    p->clusterLaunch = 1;
    p->totalGlobalMem = (size_t)4 << 30;
    p->uuid.bytes[15] = (char)(device + 1); // distinct per device, as a GPU's UUID is
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) { return synchronize(UINT64_MAX); }

// Device memory is the host's: its free and total pages.
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    if (g_sticky) return g_sticky;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    *free_bytes = (size_t)sysconf(_SC_AVPHYS_PAGES) * page;
    *total_bytes = (size_t)sysconf(_SC_PHYS_PAGES) * page;
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t bytes) {
    *p = nullptr;
    if (g_sticky) return g_sticky;
    if (refuse_in_capture()) return cudaErrorStreamCaptureUnsupported;
    // Exactly the bytes asked for (cudaMalloc's own rounding is not promised), so that under
    // AddressSanitizer a kernel or copy one element past a buffer is reported.
    const size_t n = bytes ? bytes : 1;
    void *m = nullptr;
    if (posix_memalign(&m, kAlign, n) != 0) return fail(cudaErrorMemoryAllocation);
    memset(m, 0xff, n); // NaN bytes: a GPU's fresh allocation holds whatever was there
    g_device[(uintptr_t)m] = n;
    g_device_owner[(uintptr_t)m] = g_device_index;
    *p = m;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    if (refuse_in_capture()) return cudaErrorStreamCaptureUnsupported;
    run_until(UINT64_MAX); // cudaFree waits for the device
    auto it = g_device.find((uintptr_t)p);
    if (it == g_device.end()) return fail(cudaErrorInvalidValue);
    g_device.erase(it);
    g_device_owner.erase((uintptr_t)p);
    free(p);
    return g_sticky;
}

cudaError_t cudaMallocHost(void **p, size_t bytes) {
    *p = nullptr;
    if (refuse_in_capture()) return cudaErrorStreamCaptureUnsupported;
    void *m = malloc(bytes ? bytes : 1);
    if (!m) return fail(cudaErrorMemoryAllocation);
    memset(m, 0xff, bytes);
    g_pinned[(uintptr_t)m] = bytes ? bytes : 1;
    *p = m;
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p) {
    if (!p) return cudaSuccess;
    if (refuse_in_capture()) return cudaErrorStreamCaptureUnsupported;
    run_until(UINT64_MAX);
    if (!g_pinned.erase((uintptr_t)p)) return fail(cudaErrorInvalidValue);
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
    return copy_async(dst, n, src, n, n, 1, kind, s);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t s) {
    return copy_async(dst, dpitch, src, spitch, width, height, kind, s);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind) {
    if (refuse_in_capture()) return cudaErrorStreamCaptureUnsupported;
    cudaError_t e = copy_async(dst, n, src, n, n, 1, kind, 0);
    return e != cudaSuccess ? e : synchronize(UINT64_MAX);
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t n, cudaStream_t s) { return set_async(dst, n, value, n, 1, s); }

cudaError_t cudaMemset2DAsync(void *dst, size_t pitch, int value, size_t width, size_t height, cudaStream_t s) {
    return set_async(dst, pitch, value, width, height, s);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags) {
    (void)flags;
    Stream *st = new Stream;
    g_streams.insert(st);
    *s = (cudaStream_t)st;
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
    Stream *st = stream_of(s);
    if (!st || st == &g_default) return fail(cudaErrorInvalidResourceHandle);
    if (st->capturing) return fail(cudaErrorIllegalState);
    g_streams.erase(st); // its queued work still runs, as CUDA promises
    delete st;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    if (!stream_of(s)) return fail(cudaErrorInvalidResourceHandle);
    return synchronize(UINT64_MAX);
}

// The emulated device finishes whatever it is asked about: a query runs the queue (CUDA may
// answer cudaErrorNotReady for a while; callers that poll must handle both).
cudaError_t cudaStreamQuery(cudaStream_t s) {
    if (!stream_of(s)) return fail(cudaErrorInvalidResourceHandle);
    return synchronize(UINT64_MAX);
}

// Device memory (with the device current at its cudaMalloc), pinned host memory, or neither.
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *p) {
    if (!a) return fail(cudaErrorInvalidValue);
    memset(a, 0, sizeof *a);
    uintptr_t start;
    size_t n;
    a->device = -1;
    if (find_device(p, &start, &n)) {
        a->type = cudaMemoryTypeDevice, a->device = g_device_owner[start];
        a->devicePointer = (void *)p;
    } else if (is_pinned(p)) {
        a->type = cudaMemoryTypeHost, a->device = g_device_index;
        a->hostPointer = a->devicePointer = (void *)p;
    } else {
        a->type = cudaMemoryTypeUnregistered;
    }
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags) {
    (void)flags;
    Event *ev = new Event;
    g_events.insert(ev);
    *e = (cudaEvent_t)ev;
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
    Event *ev = (Event *)e;
    if (!g_events.erase(ev)) return fail(cudaErrorInvalidResourceHandle);
    delete ev;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    Event *ev = (Event *)e;
    if (!g_events.count(ev)) return fail(cudaErrorInvalidResourceHandle);
    Stream *st = stream_of(s);
    if (!st) return fail(cudaErrorInvalidResourceHandle);
    ev->ran_s = -1.0;
    if (st->capturing) { // a graph node, not a marker in the queue: it can only be waited on
        if (capture_root(st)->capture_broken) return fail(cudaErrorStreamCaptureInvalidated);
        ev->captured_on = st, ev->captured_ops = st->captured_ops;
        return cudaSuccess;
    }
    ev->captured_on = nullptr;
    cudaError_t r = sk_emu_enqueue(s, [ev] {
        if (g_events.count(ev)) // destroyed before it ran: nothing to stamp
            ev->ran_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    });
    if (r == cudaSuccess) ev->seq = g_next_seq - 1;
    return r;
}

// The host time between the two markers' runs: the emulator's, not a GPU's (no speed is
// measured here); both must have run (cudaErrorNotReady otherwise, as CUDA).
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
    Event *a = (Event *)start, *b = (Event *)end;
    if (!ms || !g_events.count(a) || !g_events.count(b)) return fail(cudaErrorInvalidResourceHandle);
    if (a->ran_s < 0.0 || b->ran_s < 0.0) return fail(cudaErrorNotReady);
    *ms = (float)(1e3 * (b->ran_s - a->ran_s));
    return cudaSuccess;
}

// Outside a capture a no-op: the queue runs every stream's work in enqueue order, which
// already follows every event. An event recorded in a capture joins s to that capture (or
// joins work back); a capturing stream may wait on no event from outside its capture.
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
    Event *ev = (Event *)e;
    Stream *st = stream_of(s);
    if (!st || !g_events.count(ev)) return fail(cudaErrorInvalidResourceHandle);
    if (flags != 0) return fail(cudaErrorInvalidValue);
    Stream *from = ev->captured_on;
    if (from && (!g_streams.count(from) || !from->capturing)) from = nullptr; // that capture has ended
    if (!from) {
        if (!st->capturing) return cudaSuccess;
        capture_root(st)->capture_broken = true;
        return fail(cudaErrorStreamCaptureIsolation);
    }
    Stream *root = capture_root(from);
    if (!st->capturing) { // fork: st joins the capture
        st->capturing = true, st->origin = root;
        st->captured_ops = st->joined_ops = 0;
        g_capturing++;
    } else if (capture_root(st) != root) {
        capture_root(st)->capture_broken = root->capture_broken = true;
        return fail(cudaErrorStreamCaptureIsolation);
    }
    if (from != st && ev->captured_ops > from->joined_ops) from->joined_ops = ev->captured_ops;
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }
cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }
// Synchronous for the host, as CUDA's on device memory.
cudaError_t cudaMemset(void *dst, int value, size_t n) {
    const cudaError_t r = cudaMemsetAsync(dst, value, n, 0);
    return r != cudaSuccess ? r : cudaDeviceSynchronize();
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    Event *ev = (Event *)e;
    if (!g_events.count(ev)) return fail(cudaErrorInvalidResourceHandle);
    return synchronize(ev->seq);
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
    (void)mode; // every mode refuses the unsafe calls of this thread, the only one
    Stream *st = stream_of(s);
    if (!st) return fail(cudaErrorInvalidResourceHandle);
    if (st == &g_default || st->capturing) return fail(cudaErrorIllegalState);
    st->capturing = true, st->capture_broken = false;
    st->origin = nullptr, st->captured_ops = st->joined_ops = 0;
    const char *refuse = getenv("SK_EMU_UNCAPTURABLE");
    st->refuse_capture = refuse && refuse[0] == '1';
    st->graph.reset(new Graph);
    g_capturing++;
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph) {
    *graph = nullptr;
    Stream *st = stream_of(s);
    if (!st) return fail(cudaErrorInvalidResourceHandle);
    if (!st->capturing) return fail(cudaErrorIllegalState);
    if (st->origin) return fail(cudaErrorStreamCaptureUnmatched); // a joined stream, not the origin
    bool unjoined = false;
    for (Stream *m : g_streams)
        if (m->origin == st) {
            unjoined |= m->captured_ops > m->joined_ops;
            m->capturing = false, m->origin = nullptr;
            g_capturing--;
        }
    st->capturing = false;
    g_capturing--;
    std::unique_ptr<Graph> g = std::move(st->graph);
    if (st->capture_broken) return fail(cudaErrorStreamCaptureInvalidated);
    if (unjoined) return fail(cudaErrorStreamCaptureUnjoined);
    *graph = (cudaGraph_t)g.release();
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags) {
    (void)flags;
    if (!graph) return fail(cudaErrorInvalidValue);
    *exec = (cudaGraphExec_t) new Graph(*(Graph *)graph);
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
    if (!exec) return fail(cudaErrorInvalidValue);
    for (const std::function<void()> &op : ((Graph *)exec)->ops) {
        cudaError_t e = sk_emu_enqueue(s, op);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g) {
    delete (Graph *)g;
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t g) {
    delete (Graph *)g;
    return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void *kernel, cudaFuncAttribute attr, int value) {
    if (attr == cudaFuncAttributeNonPortableClusterSizeAllowed) {
        if (value != 0 && value != 1) return fail(cudaErrorInvalidValue);
        if (value) g_nonportable_clusters.insert(kernel);
        else g_nonportable_clusters.erase(kernel);
        return cudaSuccess;
    }
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return fail(cudaErrorNotSupported);
    if (value < 0 || value > kOptinSmem) return fail(cudaErrorInvalidValue);
    g_max_dynamic_smem[kernel] = value;
    return cudaSuccess;
}

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *a, const void *kernel) {
    memset(a, 0, sizeof *a);
    a->maxThreadsPerBlock = 1024;
    a->maxDynamicSharedSizeBytes = max_dynamic_smem(kernel);
    a->nonPortableClusterSizeAllowed = (int)g_nonportable_clusters.count(kernel);
    a->ptxVersion = a->binaryVersion = 90;
    return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, const void *kernel, int threads, size_t smem) {
    *n = blocks_per_sm(kernel, threads, smem);
    return cudaSuccess;
}

// active_clusters for the cluster size in config's attributes, which must be there (no
// kernel here has a required cluster size), 1-D.
cudaError_t cudaOccupancyMaxActiveClusters(int *n, const void *kernel, const cudaLaunchConfig_t *config) {
    if (!n || !config) return fail(cudaErrorInvalidValue);
    const cudaLaunchAttribute *dim = nullptr;
    for (unsigned i = 0; i < config->numAttrs; i++)
        if (config->attrs[i].id == cudaLaunchAttributeClusterDimension) dim = &config->attrs[i];
    if (!dim || dim->val.clusterDim.x == 0) return fail(cudaErrorInvalidClusterSize);
    const dim3 b = config->blockDim;
    if (dim->val.clusterDim.y != 1 || dim->val.clusterDim.z != 1 || b.y != 1 || b.z != 1)
        return fail(cudaErrorNotSupported); // cuda_emu.h's clusters and blocks: 1-D
    *n = active_clusters(kernel, dim->val.clusterDim.x, (int)b.x, config->dynamicSmemBytes);
    return cudaSuccess;
}

} // extern "C"
