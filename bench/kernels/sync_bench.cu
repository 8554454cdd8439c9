// sync_bench.cu: what the persistent LSTM's chain step pays to exchange state, measured
// (docs/PERSISTENT_LSTM_FLOOR.md, "Cost model": the numbers it assumes), one line each:
//   grid.sync()        cooperative launch, `blocks` x 256 threads, us per sync
//   cluster barrier    cluster.sync() in clusters of 8 and 16 blocks (sm_90), us per barrier
//   flag hand-off      block 0 and block `blocks - 1` pass a token through release/acquire
//                      flags in global memory, us per one-way hand-off
//   L2 re-read         every block re-reads the same `kib` KiB (L2-resident) with __ldcg,
//                      GB/s in all and B/ns per SM (the staging of every chain step): one load
//                      in flight per thread, then eight (the rate a pipelined staging could reach)
//   L2 / HBM round trip  one thread follows a chain of dependent __ldcg loads (32 KiB apart)
//                      through 4 MiB (L2-resident after a first pass) and through 256 MiB (each
//                      load a line not read before: L2 misses), us per load: the cost models'
//                      dependent round trips (kSkCostL2RoundTripUs, kSkCostDramRoundTripUs)
//   DSMEM gather       clusters of 16 blocks: each block writes an S-byte slice into its own
//                      shared memory, a cluster barrier, each block reads its 15 peers' slices
//                      (distributed shared memory), a second barrier; us per exchange and B/ns
//                      per block, for S = 512 B (config B's bf16 h slice: 8 rows x 32 units) and
//                      2 KiB (its dg slice: 8 rows x 128 gates)
//   DSMEM push         the exchange of the cluster kernels (kernels/lstm_layerwise_cluster_kernels.cuh):
//                      each block of a cluster of 16 stores an S-byte slice into each of its 15
//                      peers' shared memory, 16 bytes a store, double-buffered, one cluster
//                      barrier a step; us per step and B/ns per block (15 S over the step), for
//                      S = 512 B (config B's forward: 8 rows x 32 bf16 units of h) and 1 KiB (its
//                      backward: 8 rows x 32 fp32 partial sums)
// usage: sync_bench [blocks [kib]]   (default 128 blocks, 64 KiB: configuration A's grid)
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "device_port.cuh" // sk_cluster_config

namespace cg = cooperative_groups;

#define CHECK_CUDA(call)                                                                                   \
    do {                                                                                                   \
        cudaError_t e_ = (call);                                                                           \
        if (e_ != cudaSuccess) {                                                                           \
            fprintf(stderr, "sync_bench: %s at %s:%d: %s\n", #call, __FILE__, __LINE__, cudaGetErrorString(e_)); \
            exit(1);                                                                                       \
        }                                                                                                  \
    } while (0)

constexpr int kThreads = 256, kIters = 2000;

__global__ void grid_sync_kernel(int iters, unsigned *sink) {
    cg::grid_group grid = cg::this_grid();
    for (int i = 0; i < iters; i++) grid.sync();
    if (threadIdx.x == 0 && blockIdx.x == 0) *sink = 1;
}

__global__ void cluster_sync_kernel(int iters, unsigned *sink) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cg::cluster_group cluster = cg::this_cluster();
    for (int i = 0; i < iters; i++) cluster.sync();
#endif
    if (threadIdx.x == 0 && blockIdx.x == 0) *sink = 1;
}

__device__ __forceinline__ unsigned ld_acquire(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release(unsigned *p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

// Blocks 0 and last ping-pong: block 0 writes flag[0] = i, the last block waits for it and
// writes flag[1] = i, block 0 waits for that: 2 hand-offs per iteration.
__global__ void flag_kernel(int iters, unsigned *flags) {
    const bool ping = blockIdx.x == 0, pong = blockIdx.x == gridDim.x - 1;
    if (threadIdx.x != 0 || !(ping || pong)) return;
    for (unsigned i = 1; i <= (unsigned)iters; i++) {
        if (ping) {
            st_release(&flags[0], i);
            while (ld_acquire(&flags[1]) != i) {}
        } else {
            while (ld_acquire(&flags[0]) != i) {}
            st_release(&flags[1], i);
        }
    }
}

__global__ void l2_reread_kernel(const float4 *buf, size_t n4, int reps, float *sink) {
    float acc = 0.0f;
    for (int r = 0; r < reps; r++)
        for (size_t i = threadIdx.x; i < n4; i += blockDim.x) {
            const float4 v = __ldcg(buf + ((i + (size_t)blockIdx.x * 64) % n4));
            acc += v.x + v.y + v.z + v.w;
        }
    if (acc == 12345.678f) *sink = acc; // keeps the loads
}

// Eight independent loads in flight per thread before they are summed.
__global__ void l2_reread8_kernel(const float4 *buf, size_t n4, int reps, float *sink) {
    float acc = 0.0f;
    const size_t stride = (size_t)blockDim.x * 8;
    for (int r = 0; r < reps; r++)
        for (size_t i = threadIdx.x; i + 7 * blockDim.x < n4; i += stride) {
            float4 v[8];
#pragma unroll
            for (int u = 0; u < 8; u++) v[u] = __ldcg(buf + ((i + u * blockDim.x + (size_t)blockIdx.x * 64) % n4));
#pragma unroll
            for (int u = 0; u < 8; u++) acc += v[u].x + v[u].y + v[u].z + v[u].w;
        }
    if (acc == 12345.678f) *sink = acc;
}

// The exchange of a cluster-resident batch group: slice_bytes per block, gathered by all.
__global__ void dsmem_gather_kernel(int iters, int slice_bytes, float *sink) {
    extern __shared__ float slice[];
    float acc = 0.0f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned me = cluster.block_rank(), n = cluster.num_blocks();
    const int slice_floats = slice_bytes / (int)sizeof(float);
    for (int it = 0; it < iters; it++) {
        for (int i = threadIdx.x; i < slice_floats; i += blockDim.x) slice[i] = (float)(it + i + me);
        cluster.sync(); // every slice written
        for (unsigned r = 1; r < n; r++) {
            const float *peer = cluster.map_shared_rank(slice, (me + r) % n);
            for (int i = threadIdx.x; i < slice_floats; i += blockDim.x) acc += peer[i];
        }
        cluster.sync(); // every slice read before the next step overwrites it
    }
#endif
    if (acc == 12345.678f) *sink = acc;
}

// The cluster kernels' exchange: each block pushes slice_bytes into every peer's receive buffer
// ([2][16][slice_bytes]: by step parity and sender), one cluster barrier a step.
__global__ void dsmem_push_kernel(int iters, int slice_bytes, float *sink) {
    extern __shared__ uint4 recv[];
    unsigned acc = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cg::cluster_group cluster = cg::this_cluster();
    const int me = (int)cluster.block_rank(), n = (int)cluster.num_blocks(), n16 = slice_bytes / 16;
    cluster.sync(); // every block running before any stores into it
    for (int it = 0; it < iters; it++) {
        uint4 *mine = recv + ((size_t)(it & 1) * n + me) * n16; // where peers keep this block's slice
        for (int i = threadIdx.x; i < (n - 1) * n16; i += blockDim.x) {
            const int p = (me + 1 + i / n16) % n;
            *cluster.map_shared_rank(mine + i % n16, p) = make_uint4((unsigned)it, (unsigned)i, (unsigned)me, 0u);
        }
        cluster.sync(); // every slice of this step received
        acc += recv[((size_t)(it & 1) * n + (me + 1) % n) * n16].x;
    }
#endif
    if (acc == 12345u) *sink = (float)acc;
}

static float time_ms(cudaEvent_t a, cudaEvent_t b) {
    float ms = 0.0f;
    CHECK_CUDA(cudaEventSynchronize(b));
    CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    return ms;
}

// A launch of `blocks` rounded down to whole clusters of cs, kThreads each, smem dynamic bytes
// (attr: the caller's storage for the cluster attribute; device_port.cuh's sk_cluster_config).
static cudaLaunchConfig_t cluster_config(int blocks, int cs, size_t smem, cudaLaunchAttribute *attr) {
    return sk_cluster_config(dim3((unsigned)(blocks / cs * cs)), dim3(kThreads), smem, 0, (unsigned)cs, attr);
}

static long parse(const char *s, const char *what) {
    char *end;
    errno = 0;
    const long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < 1 || v > 1 << 20) {
        fprintf(stderr, "error: sync_bench expects a positive integer for %s, got \"%s\"\n", what, s);
        exit(2);
    }
    return v;
}

// A chain through n words: word i holds the index of the next, `step` words on (mod n).
__global__ void chain_init_kernel(unsigned *buf, size_t n, size_t step) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        buf[i] = (unsigned)((i + step) % n);
}
// One thread, `iters` dependent loads through L2.
__global__ void chase_kernel(const unsigned *buf, int iters, unsigned *sink) {
    unsigned i = 0;
    for (int k = 0; k < iters; k++) i = __ldcg(buf + i);
    *sink = i;
}

int main(int argc, char **argv) {
    if (argc > 3) {
        fprintf(stderr, "usage: sync_bench [blocks [kib]]\n");
        return 2;
    }
    const int blocks = argc > 1 ? (int)parse(argv[1], "blocks") : 128;
    const size_t kib = argc > 2 ? (size_t)parse(argv[2], "kib") : 64;
    cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
    printf("sync_bench: %s, %d SMs, %d blocks x %d threads, %d iterations\n", prop.name, prop.multiProcessorCount,
           blocks, kThreads, kIters);
    unsigned *flags;
    CHECK_CUDA(cudaMalloc(&flags, 64));
    cudaEvent_t e0, e1;
    CHECK_CUDA(cudaEventCreate(&e0));
    CHECK_CUDA(cudaEventCreate(&e1));

    { // grid.sync
        int iters = 10;
        void *params[] = {&iters, &flags};
        CHECK_CUDA(cudaLaunchCooperativeKernel((const void *)grid_sync_kernel, blocks, kThreads, params, 0, 0));
        iters = kIters;
        CHECK_CUDA(cudaEventRecord(e0));
        CHECK_CUDA(cudaLaunchCooperativeKernel((const void *)grid_sync_kernel, blocks, kThreads, params, 0, 0));
        CHECK_CUDA(cudaEventRecord(e1));
        printf("grid.sync            %8.3f us per sync\n", time_ms(e0, e1) * 1e3 / kIters);
    }
    for (int cs : {8, 16}) { // cluster barriers
        cudaLaunchAttribute attr;
        const cudaLaunchConfig_t cfg = cluster_config(blocks, cs, 0, &attr);
        if (cs > 8 && cudaFuncSetAttribute(cluster_sync_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
                          cudaSuccess) {
            (void)cudaGetLastError();
            printf("cluster.sync (%2d)    not available\n", cs);
            continue;
        }
        cudaError_t e = cudaLaunchKernelEx(&cfg, cluster_sync_kernel, 10, flags);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            printf("cluster.sync (%2d)    not available: %s\n", cs, cudaGetErrorString(e));
            continue;
        }
        CHECK_CUDA(cudaEventRecord(e0));
        CHECK_CUDA(cudaLaunchKernelEx(&cfg, cluster_sync_kernel, kIters, flags));
        CHECK_CUDA(cudaEventRecord(e1));
        printf("cluster.sync (%2d)    %8.3f us per barrier\n", cs, time_ms(e0, e1) * 1e3 / kIters);
    }
    { // flag hand-off: the two blocks must be resident at once (cooperative launch guarantees it)
        int iters = kIters;
        void *params[] = {&iters, &flags};
        CHECK_CUDA(cudaMemset(flags, 0, 64));
        CHECK_CUDA(cudaEventRecord(e0));
        CHECK_CUDA(cudaLaunchCooperativeKernel((const void *)flag_kernel, blocks, kThreads, params, 0, 0));
        CHECK_CUDA(cudaEventRecord(e1));
        printf("flag hand-off        %8.3f us one way\n", time_ms(e0, e1) * 1e3 / (2.0 * kIters));
    }
    { // L2 re-read
        const size_t n4 = kib * 1024 / sizeof(float4);
        float4 *buf;
        CHECK_CUDA(cudaMalloc(&buf, n4 * sizeof(float4)));
        CHECK_CUDA(cudaMemset(buf, 0, n4 * sizeof(float4)));
        const int reps = 50;
        l2_reread_kernel<<<blocks, kThreads>>>(buf, n4, 2, (float *)flags);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaEventRecord(e0));
        l2_reread_kernel<<<blocks, kThreads>>>(buf, n4, reps, (float *)flags);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaEventRecord(e1));
        const double bytes = (double)blocks * reps * n4 * sizeof(float4), ms = time_ms(e0, e1);
        printf("L2 re-read %4zu KiB   %8.1f GB/s in all, %.1f B/ns per block\n", kib, bytes / ms / 1e6,
               bytes / ms / 1e6 / blocks);
        l2_reread8_kernel<<<blocks, kThreads>>>(buf, n4, 2, (float *)flags);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaEventRecord(e0));
        l2_reread8_kernel<<<blocks, kThreads>>>(buf, n4, reps, (float *)flags);
        CHECK_CUDA(cudaGetLastError());
        CHECK_CUDA(cudaEventRecord(e1));
        const size_t n8 = n4 / ((size_t)kThreads * 8) * ((size_t)kThreads * 8); // what the x8 loop reads
        const double bytes8 = (double)blocks * reps * n8 * sizeof(float4), ms8 = time_ms(e0, e1);
        printf("L2 re-read x8 %4zu KiB %7.1f GB/s in all, %.1f B/ns per block\n", kib, bytes8 / ms8 / 1e6,
               bytes8 / ms8 / 1e6 / blocks);
        CHECK_CUDA(cudaFree(buf));
    }
    { // dependent round trips: through 4 MiB twice (the second pass hits L2), then once through 256 MiB
        const size_t step = 8192 + 56; // words: 32 KiB and a few lines apart, a long cycle
        for (int mib : {4, 256}) {
            const size_t n = (size_t)mib << 18;
            unsigned *chain;
            CHECK_CUDA(cudaMalloc(&chain, n * sizeof(unsigned)));
            chain_init_kernel<<<264, kThreads>>>(chain, n, step);
            CHECK_CUDA(cudaGetLastError());
            if (mib == 4) chase_kernel<<<1, 1>>>(chain, kIters, flags);
            CHECK_CUDA(cudaGetLastError());
            CHECK_CUDA(cudaEventRecord(e0));
            chase_kernel<<<1, 1>>>(chain, kIters, flags);
            CHECK_CUDA(cudaGetLastError());
            CHECK_CUDA(cudaEventRecord(e1));
            printf("%s round trip %3d MiB %7.3f us per dependent load\n", mib == 4 ? "L2 " : "HBM", mib,
                   time_ms(e0, e1) * 1e3 / kIters);
            CHECK_CUDA(cudaFree(chain));
        }
    }
    const struct {
        const char *name, *per;
        void (*kernel)(int, int, float *);
        int slice[2], smem_slices; // slice sizes (bytes); shared memory in slices
    } dsmem[2] = {{"DSMEM gather", "per exchange (2 cluster barriers)", dsmem_gather_kernel, {512, 2048}, 1},
                  {"DSMEM push  ", "per step (1 cluster barrier)", dsmem_push_kernel, {512, 1024}, 32}};
    for (const auto &d : dsmem) // in clusters of 16
        for (int slice_bytes : d.slice) {
            cudaLaunchAttribute attr;
            const cudaLaunchConfig_t cfg = cluster_config(blocks, 16, (size_t)slice_bytes * d.smem_slices, &attr);
            if (cudaFuncSetAttribute(d.kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
                (void)cudaGetLastError();
                printf("%s (16)    not available\n", d.name);
                break;
            }
            cudaError_t e = cudaLaunchKernelEx(&cfg, d.kernel, 10, slice_bytes, (float *)flags);
            if (e != cudaSuccess) {
                (void)cudaGetLastError();
                printf("%s (16)    not available: %s\n", d.name, cudaGetErrorString(e));
                break;
            }
            CHECK_CUDA(cudaEventRecord(e0));
            CHECK_CUDA(cudaLaunchKernelEx(&cfg, d.kernel, kIters, slice_bytes, (float *)flags));
            CHECK_CUDA(cudaEventRecord(e1));
            const double us = time_ms(e0, e1) * 1e3 / kIters;
            printf("%s %4d B  %8.3f us %s, %.1f B/ns per block\n", d.name, slice_bytes, us, d.per,
                   15.0 * slice_bytes / (us * 1e3));
        }
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaFree(flags));
    return 0;
}
