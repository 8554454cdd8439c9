// cuda_emu.h: just enough of CUDA to run this project's own kernels (kernels/*.cuh) on the CPU,
// one fiber per GPU thread, so that tests check them without a GPU (tests/emu/test_*.cpp).
// defines: the CUDA names the kernels use (threadIdx, __syncthreads, __shfl_xor_sync, __ldcg,
//          cooperative_groups::this_grid and this_cluster, __nv_bfloat16, ...), sk_dynamic_smem,
//          sk_cp_async16, sk_cp_async_wait_all, sk_emu_mma, sk_emu_ldmatrix, sk_emu_map_shared_rank,
//          sk_emu_tf32_rna, sk_emu_config, sk_emu_launch
//
// What it models: every thread runs the kernel's C++ on its own stack; a thread runs until
// it reaches a barrier (__syncthreads, __syncwarp, a shuffle, an mma, grid.sync,
// cluster.sync) and waits there until every thread the barrier spans has arrived. Memory is
// the host's, sequentially consistent. So it checks what a kernel computes and how it
// synchronizes, not its speed, its memory ordering (fences, __ldcg vs L1) or warp-level
// lockstep.
// What it catches beyond wrong arithmetic and indexing:
//   - a missing barrier (a race): run a launch in both schedules (sk_emu_config.reverse):
//     threads run in ascending or descending (block, thread) order between barriers, so a
//     result that depends on who runs first differs between the two;
//   - a barrier not every thread reaches (divergent __syncthreads, a shuffle with lanes
//     gone, a grid.sync or cluster.sync some threads skip): reported as a deadlock, not a hang;
//   - grid.sync outside a cooperative launch, a cluster function outside a cluster launch,
//     map_shared_rank off the block's dynamic shared memory or past the cluster: the
//     process dies with a message;
//   - reads of shared memory nobody wrote (it starts as NaN bytes), and writes past the
//     dynamic shared memory the launch asked for (a NaN-byte guard checked afterwards).
// Thread-block clusters (sm_90; sk_emu_config.cluster, 1-D along x): the blocks of one
// cluster run at once, clusters one after another (ascending, or descending with reverse),
// which is all CUDA promises. cluster.sync() waits for every thread of the cluster's blocks;
// map_shared_rank gives the same offset in a peer block's dynamic shared memory (DSMEM),
// read and written directly, so a missing cluster.sync shows as a race between schedules
// and unwritten peer memory reads NaN. Not modelled: DSMEM is as sequentially consistent as
// the rest, and the barrier's release/acquire is not checked, only that every thread arrives.
// Unlike CUDA, which treats a launch without clusters as clusters of one block, every
// cluster function dies outside a cluster launch: the kernels that use them are meant to be
// launched as clusters, and one launched otherwise should not pass for a cluster of one.
// Static __shared__ arrays are function-local statics: correct because the blocks of a
// plain launch run one after another; a cooperative or cluster launch (blocks at once)
// must use dynamic shared memory only, as the persistent LSTM does.
#ifndef SK_CUDA_EMU_H
#define SK_CUDA_EMU_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <functional>
#include <string>

// In the emulated CUDA module (-DSK_CUDA_EMU_RUNTIME, tests/emu/backend.cmake) the toolkit's
// real headers come first, for the host code around the kernels: their vector types and
// bf16 (with its host conversions, round to nearest even) are used, and their qualifier
// macros are replaced by the ones below.
#ifdef SK_CUDA_EMU_RUNTIME
#include <cuda_runtime_api.h>
#include <vector_types.h>
#include <cuda_bf16.h>
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#undef __align__
#undef __shared__
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__ static
#define __restrict__

struct sk_emu_dim3 {
    unsigned x, y, z;
};
// The running thread's coordinates (set by the scheduler before it resumes a thread).
extern sk_emu_dim3 threadIdx, blockIdx, blockDim, gridDim;

void __syncthreads();
void __syncwarp(unsigned mask = 0xffffffffu);
float __shfl_xor_sync(unsigned mask, float v, int lane_mask);
double __shfl_xor_sync(unsigned mask, double v, int lane_mask);
int __shfl_xor_sync(unsigned mask, int v, int lane_mask);
void __threadfence();
[[noreturn]] void __trap();

void sk_emu_note_global_read(size_t bytes); // counted in the running block's sk_emu_counts
template <typename T> inline T __ldcg(const T *p) {
    sk_emu_note_global_read(sizeof(T));
    return *p;
}
template <typename T> inline T __ldg(const T *p) { return *p; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return sqrtf(a); }
inline unsigned __float_as_uint(float v) {
    unsigned u;
    memcpy(&u, &v, 4);
    return u;
}
inline float __uint_as_float(unsigned u) {
    float v;
    memcpy(&v, &u, 4);
    return v;
}

#ifndef SK_CUDA_EMU_RUNTIME
struct float4 {
    float x, y, z, w;
};
struct uint4 {
    unsigned x, y, z, w;
};
#endif

#ifndef SK_CUDA_EMU_RUNTIME // else cuda_bf16.h's type and host conversions (above)
// bf16: the bits of a float's upper half; conversion rounds to nearest even (NaN stays NaN).
struct __nv_bfloat16 {
    uint16_t bits;
};
inline float __bfloat162float(__nv_bfloat16 h) { return __uint_as_float((unsigned)h.bits << 16); }
inline __nv_bfloat16 __float2bfloat16_rn(float v) {
    unsigned u = __float_as_uint(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) return __nv_bfloat16{(uint16_t)((u >> 16) | 0x40)}; // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return __nv_bfloat16{(uint16_t)(u >> 16)};
}
#endif

// cluster_group::map_shared_rank's untyped body.
void *sk_emu_map_shared_rank(const void *addr, unsigned rank);

namespace cooperative_groups {
struct grid_group {
    void sync() const; // dies outside a cooperative launch
};
grid_group this_grid();

// The calling block's cluster (sk_emu_config.cluster); every function dies outside a
// cluster launch (see above).
struct cluster_group {
    void sync() const;          // every thread of the cluster's blocks
    unsigned block_rank() const; // blockIdx.x % num_blocks()
    unsigned num_blocks() const;
    // addr in the calling block's dynamic shared memory (sk_dynamic_smem(), dies otherwise);
    // the same byte offset in block `rank`'s (dies for rank >= num_blocks()).
    template <typename T> T *map_shared_rank(T *addr, unsigned rank) const {
        return (T *)sk_emu_map_shared_rank((const void *)addr, rank);
    }
};
cluster_group this_cluster();
} // namespace cooperative_groups

// The block's dynamic shared memory (extern __shared__ on the GPU; kernels/device_port.cuh).
unsigned char *sk_dynamic_smem();
// Words that blocks poll (kernels/device_port.cuh's sk_flag_load, sk_flag_store, sk_spin_pause):
// 64-bit loads and stores, and a pause that puts the polling thread at the back of the run
// queue, so the threads it waits for run. A launch whose runnable threads only pause (every
// thread that could store the word waits elsewhere, or has ended) dies as a deadlock.
inline uint64_t sk_flag_load(const uint64_t *p) { return *(const volatile uint64_t *)p; }
inline void sk_flag_store(uint64_t *p, uint64_t v) { *(volatile uint64_t *)p = v; }
void sk_spin_pause();
// cp.async (kernels/device_port.cuh): the 16 bytes are copied when the thread waits, not
// before, so a read of the destination before sk_cp_async_wait_all (and the barrier after
// it) sees what was there (NaN bytes); a thread that ends with copies pending is an error.
void sk_cp_async16(void *smem_dst, const void *gmem_src);
void sk_cp_async_wait_all();
// How many cp.async copies launches have issued so far (tests check their vector path ran).
uint64_t sk_emu_cp_async_count();

// mma.sync on one warp (kernels/lstm_persistent_dots.cuh's mma_tile): d += A B with the
// operands as the 32 lanes hold them in fragment registers, decoded by the PTX ISA's
// fragment tables (tests/emu/mma_ptx.h). kind 0: bf16 m16n8k16; 1: TF32 m16n8k8. Sums in
// double, rounded once to fp32 (the hardware's order is unspecified).
void sk_emu_mma(int kind, float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]);
// ldmatrix.sync.aligned.m8n8.x{n}.shared.b16 on one warp (n = 2 or 4; kernels/lstm_persistent_dots.cuh):
// n 8 x 8 matrices of 16-bit elements, row i of matrix m (16 bytes, 16-byte aligned, in the
// block's dynamic shared memory, else the process dies) at the address lane 8m + i gives; lane l
// receives word l % 4 of row l / 4 of matrix m in r[m] (the PTX ISA's fragment of ldmatrix).
void sk_emu_ldmatrix(int n, uint32_t *r, const void *row);
// cvt.rna.tf32.f32: 10 mantissa bits, to nearest, ties away from zero; NaN and infinity kept.
uint32_t sk_emu_tf32_rna(float v);

// The cost model's counts (bench/kernels/lstm_persistent_cost.h), per block of the last launch:
// __syncthreads, grid.sync and cluster.sync passed (once per block each), mma.sync and ldmatrix
// issued (once per warp), bytes read from global memory through cp.async and __ldcg (plain loads
// and DSMEM accesses are not seen).
struct sk_emu_counts {
    uint64_t block_barriers = 0, grid_syncs = 0, cluster_syncs = 0, mma = 0, ldmatrix = 0, global_read_bytes = 0;
};
sk_emu_counts sk_emu_block_counts(unsigned block); // zeros past the last launch's grid

// One launch.
struct sk_emu_config {
    unsigned grid = 1, block = 1; // blocks along x and threads per block
    unsigned grid_y = 1;          // blocks along y (blockIdx.y; not with cooperative)
    size_t dynamic_smem = 0;      // bytes of dynamic shared memory per block
    bool cooperative = false;     // all blocks at once, grid.sync allowed (else one block after another)
    unsigned cluster = 0;         // blocks per cluster along x (1..16, dividing grid; 1-D grid, not
                                  // cooperative): one cluster at a time; 0: no clusters
    bool reverse = false;         // schedule threads in descending (block, thread) order
};
// Runs body() as every thread of the launch; returns "" or what went wrong (a configuration
// it does not run, a deadlock, a write past the dynamic shared memory).
std::string sk_emu_launch(const sk_emu_config &c, const std::function<void()> &body);

#endif
