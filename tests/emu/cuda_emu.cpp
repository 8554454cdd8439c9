// cuda_emu.cpp: the scheduler behind cuda_emu.h: one fiber per GPU thread, barriers that park
// fibers until every thread they span has arrived, and a run queue in (block, thread) order,
// ascending or descending. Fibers switch with a few instructions on x86-64 (glibc's
// swapcontext makes a system call per switch, which made the tests five times slower) and
// with ucontext elsewhere.
#include "cuda_emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <vector>

#include "mma_ptx.h"

#if defined(__SANITIZE_ADDRESS__)
#define SK_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SK_EMU_ASAN 1
#endif
#endif
#ifdef SK_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

sk_emu_dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace {

constexpr size_t kStack = 64 * 1024; // per fiber; the kernels' frames are small, libm's too
constexpr size_t kGuard = 256;         // NaN bytes after each block's dynamic shared memory

struct Fiber;

// A barrier spanning `expected` threads: arrivals park until the last one, which hands all
// of them back to the run queue.
struct Barrier {
    const char *what = "";
    int expected = 0;
    std::vector<Fiber *> waiting;
};

// Per warp: the lanes' operands of a shuffle or an mma, exchanged through here.
struct WarpScratch {
    double shfl[2][32]; // alternate shuffles use alternate rows (see shuffle_xor)
    uint32_t a[32][4], b[32][2];
    float d[32][4];
    const unsigned char *rows[32]; // ldmatrix: the lanes' row addresses
};

// A saved execution context: a stack pointer (x86-64) or a ucontext.
struct Context {
#if defined(__x86_64__)
    void *sp = nullptr;
#else
    ucontext_t uc;
#endif
};

struct Fiber {
    Context ctx;
    unsigned char *stack = nullptr; // kStack bytes, a canary at the bottom
    unsigned block = 0, thread = 0;
    unsigned shuffles = 0; // this thread's shuffles so far: picks the scratch row
    std::vector<std::pair<void *, const void *>> copies; // cp.async issued, not yet waited for
};

struct Launch {
    sk_emu_config cfg;
    const std::function<void()> *body = nullptr;
    std::vector<Fiber> fibers;                 // this round's: every block (cooperative), a cluster's or one
    std::vector<unsigned char *> smem;         // per block of this round
    std::vector<Barrier> block_bars, warp_bars; // per block, per (block, warp)
    std::vector<WarpScratch> scratch;          // per (block, warp)
    Barrier grid_bar, cluster_bar;
    std::deque<Fiber *> run;
    unsigned first_block = 0; // the round's first block
    Context scheduler;
    Fiber *current = nullptr;
    size_t finished = 0; // threads of this round that ran to their end
    size_t pauses = 0;   // sk_spin_pause calls since a thread last arrived at a barrier or ended
    bool aborted = false;
#ifdef SK_EMU_ASAN
    const void *sched_bottom = nullptr;
    size_t sched_size = 0;
#endif
};

Launch *g_launch = nullptr;

[[noreturn]] void die(const char *msg) {
    fprintf(stderr, "cuda_emu: %s\n", msg);
    abort();
}

void fiber_main();

#if defined(__x86_64__)
// sk_emu_switch(&from->sp, to->sp): saves the callee-saved registers, MXCSR and the x87
// control word on the current stack, stores the stack pointer, loads the other and restores
// the same from it (System V AMD64: everything else is caller-saved across a call).
extern "C" void sk_emu_switch(void **save_sp, void *load_sp);
asm(R"(
    .pushsection .text
    .globl sk_emu_switch
    .type sk_emu_switch, @function
sk_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size sk_emu_switch, .-sk_emu_switch
    .popsection
)");

// A new fiber's stack, as sk_emu_switch leaves a suspended one: the control words, six
// zeroed registers, then fiber_main as the return address, above it a null one (fiber_main
// never returns), so that fiber_main starts with the stack aligned as after a call.
void context_make(Context *c, unsigned char *stack, size_t size) {
    uint64_t *top = (uint64_t *)(((uintptr_t)(stack + size)) & ~(uintptr_t)15);
    *--top = 0;                          // fiber_main's return address: none
    *--top = (uint64_t)(uintptr_t)&fiber_main;
    for (int i = 0; i < 6; i++) *--top = 0; // rbp, rbx, r12-r15
    *--top = 0x037Full << 32 | 0x1F80u;  // x87 control word (high), MXCSR (low): the defaults
    c->sp = top;
}
void context_switch(Context *from, Context *to) { sk_emu_switch(&from->sp, to->sp); }
#else
void context_make(Context *c, unsigned char *stack, size_t size) {
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = stack;
    c->uc.uc_stack.ss_size = size;
    c->uc.uc_link = nullptr;
    makecontext(&c->uc, fiber_main, 0);
}
void context_switch(Context *from, Context *to) { swapcontext(&from->uc, &to->uc); }
#endif

unsigned warps_per_block() { return (g_launch->cfg.block + 31) / 32; }
// What each block of the last launch did (sk_emu_block_counts).
std::vector<sk_emu_counts> g_counts;
size_t local_block(const Fiber *f) { return f->block - g_launch->first_block; }
size_t warp_index(const Fiber *f) { return local_block(f) * warps_per_block() + f->thread / 32; }

bool schedule_before(const Fiber *x, const Fiber *y, bool reverse) {
    const bool less = x->block != y->block ? x->block < y->block : x->thread < y->thread;
    return reverse ? !less && x != y : less;
}

// Makes f the running thread (the CUDA names threadIdx and blockIdx included).
void make_current(Launch &L, Fiber *f) {
    L.current = f;
    threadIdx = {f->thread, 0, 0};
    blockIdx = {f->block % L.cfg.grid, f->block / L.cfg.grid, 0}; // f->block: x + y * grid
}

// Hands over to the next runnable thread, or to the scheduler when none is (which ends
// the round); returns when some thread or the scheduler resumes this one. Threads switch to
// each other directly: one switch per hand-over, not two through the scheduler.
void yield_to_scheduler(bool dying) {
    Launch *L = g_launch;
    Fiber *f = L->current;
    Context *to = &L->scheduler;
#ifdef SK_EMU_ASAN
    const void *bottom = L->sched_bottom;
    size_t size = L->sched_size;
#endif
    if (!L->run.empty()) {
        Fiber *next = L->run.front();
        L->run.pop_front();
        make_current(*L, next);
        if (next == f) return; // the last to arrive at a barrier runs on first
        to = &next->ctx;
#ifdef SK_EMU_ASAN
        bottom = next->stack, size = kStack;
#endif
    }
#ifdef SK_EMU_ASAN
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(dying ? nullptr : &fake, bottom, size);
    context_switch(&f->ctx, to);
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
    (void)dying;
    context_switch(&f->ctx, to);
#endif
}

// The calling thread arrives at b and waits until everyone b spans has.
void arrive(Barrier &b) {
    Launch *L = g_launch;
    if (b.expected == 0) die("a barrier that spans no thread");
    L->pauses = 0;
    b.waiting.push_back(L->current);
    if ((int)b.waiting.size() == b.expected) {
        auto before = [&](const Fiber *x, const Fiber *y) { return schedule_before(x, y, L->cfg.reverse); };
        if (!std::is_sorted(b.waiting.begin(), b.waiting.end(), before)) // usually they are
            std::sort(b.waiting.begin(), b.waiting.end(), before);
        for (Fiber *f : b.waiting) L->run.push_back(f);
        b.waiting.clear(); // keeps its capacity for the barrier's next use
    }
    yield_to_scheduler(false);
}

void fiber_main() {
    Launch *L = g_launch;
#ifdef SK_EMU_ASAN
    // The first thread of a launch starts from the scheduler, whose stack it records.
    const void *from = nullptr;
    size_t from_size = 0;
    __sanitizer_finish_switch_fiber(nullptr, &from, &from_size);
    if (!L->sched_bottom) L->sched_bottom = from, L->sched_size = from_size;
#endif
    (*L->body)();
    if (!L->current->copies.empty()) die("a thread ended with cp.async copies it never waited for");
    L->finished++;
    L->pauses = 0;
    yield_to_scheduler(true);
    die("a finished thread was resumed");
}

// Thread stacks, carved from mappings of kStacksPerMap and kept for the next launch (a launch
// of a real-size grid makes tens of thousands: a guard page each would pass the kernel's
// limit on mappings, so each stack has a canary at its bottom instead, checked after its
// thread ends).
constexpr size_t kStacksPerMap = 256, kCanary = 64;
struct StackPool {
    std::vector<unsigned char *> maps, free_stacks;
    ~StackPool() {
        for (unsigned char *m : maps) munmap(m, kStack * kStacksPerMap);
    }
} g_stacks;

unsigned char *stack_alloc() {
    if (g_stacks.free_stacks.empty()) {
        void *p = mmap(nullptr, kStack * kStacksPerMap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) die("out of memory for thread stacks");
        // Huge pages where the kernel offers them: a launch switches among tens of thousands
        // of stacks, and with 4 KiB pages every switch missed the TLB.
        (void)madvise(p, kStack * kStacksPerMap, MADV_HUGEPAGE);
        g_stacks.maps.push_back((unsigned char *)p);
        for (size_t i = 0; i < kStacksPerMap; i++) g_stacks.free_stacks.push_back((unsigned char *)p + i * kStack);
    }
    unsigned char *s = g_stacks.free_stacks.back();
    g_stacks.free_stacks.pop_back();
#ifdef SK_EMU_ASAN
    // A thread that ended never returned from its frames, whose redzones stay poisoned.
    ASAN_UNPOISON_MEMORY_REGION(s, kStack);
#endif
    memset(s, 0xa5, kCanary);
    return s;
}
bool stack_overflowed(const unsigned char *s) {
    for (size_t i = 0; i < kCanary; i++)
        if (s[i] != 0xa5) return true;
    return false;
}
void stack_free(unsigned char *s) { g_stacks.free_stacks.push_back(s); }

// Runs blocks [b0, b0 + nb) at once; returns "" or the error.
std::string run_round(Launch &L, unsigned b0, unsigned nb) {
    const unsigned T = L.cfg.block, W = warps_per_block();
    L.first_block = b0;
    L.fibers.assign((size_t)nb * T, Fiber());
    L.block_bars.assign(nb, Barrier());
    L.warp_bars.assign((size_t)nb * W, Barrier());
    L.scratch.assign((size_t)nb * W, WarpScratch());
    L.grid_bar = Barrier();
    L.grid_bar.what = "grid.sync()";
    L.grid_bar.expected = L.cfg.cooperative ? (int)(nb * T) : 0;
    L.cluster_bar = Barrier();
    L.cluster_bar.what = "cluster.sync()";
    L.cluster_bar.expected = L.cfg.cluster ? (int)(nb * T) : 0; // a round is one cluster
    for (unsigned b = 0; b < nb; b++) {
        L.block_bars[b].what = "__syncthreads()";
        L.block_bars[b].expected = (int)T;
        for (unsigned w = 0; w < W; w++) {
            Barrier &wb = L.warp_bars[(size_t)b * W + w];
            wb.what = "a warp-wide operation (shuffle, __syncwarp, mma)";
            wb.expected = (int)std::min(32u, T - w * 32);
        }
    }
    L.smem.assign(nb, nullptr);
    for (unsigned b = 0; b < nb; b++) {
        L.smem[b] = (unsigned char *)malloc(L.cfg.dynamic_smem + kGuard);
        if (!L.smem[b]) die("out of memory for shared memory");
        memset(L.smem[b], 0xff, L.cfg.dynamic_smem + kGuard); // NaN as float: unwritten reads show
    }
    for (size_t i = 0; i < L.fibers.size(); i++) {
        Fiber &f = L.fibers[i];
        f.block = b0 + (unsigned)(i / T), f.thread = (unsigned)(i % T);
        f.stack = stack_alloc();
        context_make(&f.ctx, f.stack, kStack);
    }
    std::vector<Fiber *> order;
    for (Fiber &f : L.fibers) order.push_back(&f);
    std::sort(order.begin(), order.end(),
              [&](const Fiber *x, const Fiber *y) { return schedule_before(x, y, L.cfg.reverse); });
    L.run.assign(order.begin(), order.end());
    L.finished = 0;
    std::string err;
    // The threads hand over to each other (yield_to_scheduler); control comes back here
    // once none is runnable: all finished, or some wait at a barrier the rest never reach.
    if (!L.run.empty()) {
        Fiber *f = L.run.front();
        L.run.pop_front();
        make_current(L, f);
#ifdef SK_EMU_ASAN
        void *fake = nullptr;
        __sanitizer_start_switch_fiber(&fake, f->stack, kStack);
        context_switch(&L.scheduler, &f->ctx);
        __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
        context_switch(&L.scheduler, &f->ctx);
#endif
    }
    const size_t done = L.finished;
    if (done != L.fibers.size()) {
        // Some threads wait at a barrier that the others will never reach.
        char line[300];
        const Barrier *stuck = nullptr;
        int waiting = 0;
        auto count = [&](const Barrier &b) {
            waiting += (int)b.waiting.size();
            if (!b.waiting.empty()) stuck = &b;
        };
        count(L.grid_bar);
        count(L.cluster_bar);
        for (const Barrier &b : L.block_bars) count(b);
        for (const Barrier &b : L.warp_bars) count(b);
        snprintf(line, sizeof line,
                 "deadlock: %zu of %zu threads finished, %d wait at barriers (one at %s, %zu of %d arrived)", done,
                 L.fibers.size(), waiting, stuck ? stuck->what : "?", stuck ? stuck->waiting.size() : 0,
                 stuck ? stuck->expected : 0);
        err = line;
    }
    for (unsigned b = 0; b < nb && err.empty(); b++)
        for (size_t i = 0; i < kGuard; i++)
            if (L.smem[b][L.cfg.dynamic_smem + i] != 0xff) {
                char line[200];
                snprintf(line, sizeof line, "block %u wrote %zu bytes past its %zu bytes of dynamic shared memory",
                         b0 + b, i + 1, L.cfg.dynamic_smem);
                err = line;
                break;
            }
    for (Fiber &f : L.fibers) {
        if (stack_overflowed(f.stack)) die("a thread overflowed its stack (cuda_emu.cpp's kStack)");
        stack_free(f.stack);
    }
    for (unsigned char *s : L.smem) free(s);
    L.fibers.clear();
    L.run.clear();
    return err;
}

Launch &launch() {
    if (!g_launch || !g_launch->current) die("a CUDA device function called outside sk_emu_launch");
    return *g_launch;
}

} // namespace

std::string sk_emu_launch(const sk_emu_config &c, const std::function<void()> &body) {
    if (g_launch) return "sk_emu_launch: launches do not nest";
    if (c.grid == 0 || c.grid_y == 0 || c.block == 0 || c.block > 1024) return "sk_emu_launch: bad grid or block size";
    if (c.cooperative && c.grid_y != 1) return "sk_emu_launch: a cooperative launch takes a 1-D grid";
    if (c.cluster && (c.cooperative || c.grid_y != 1 || c.cluster > 16 || c.grid % c.cluster != 0))
        return "sk_emu_launch: clusters take a 1-D grid of whole clusters of at most 16 blocks, not cooperative";
    Launch L;
    L.cfg = c;
    L.body = &body;
    g_counts.assign((size_t)c.grid * c.grid_y, sk_emu_counts{});
    g_launch = &L;
    blockDim = {c.block, 1, 1};
    gridDim = {c.grid, c.grid_y, 1};
    const unsigned blocks = c.grid * c.grid_y;
    std::string err;
    if (c.cooperative) {
        err = run_round(L, 0, c.grid);
    } else if (c.cluster) {
        const unsigned n = c.grid / c.cluster;
        for (unsigned i = 0; i < n && err.empty(); i++)
            err = run_round(L, (c.reverse ? n - 1 - i : i) * c.cluster, c.cluster);
    } else {
        for (unsigned i = 0; i < blocks && err.empty(); i++) err = run_round(L, c.reverse ? blocks - 1 - i : i, 1);
    }
    g_launch = nullptr;
    return err;
}

void __syncthreads() {
    Launch &L = launch();
    if (L.current->thread == 0) g_counts[L.current->block].block_barriers++;
    arrive(L.block_bars[local_block(L.current)]);
}

void __syncwarp(unsigned mask) {
    if (mask != 0xffffffffu) die("__syncwarp with a partial mask is not emulated");
    Launch &L = launch();
    arrive(L.warp_bars[warp_index(L.current)]);
}

namespace {
// Lane values meet in the warp's scratch: everyone writes, waits, reads its partner's, waits
// again (so that no lane overwrites a value another has yet to read).
double shuffle_xor(unsigned mask, double v, int lane_mask) {
    if (mask != 0xffffffffu) die("a shuffle with a partial mask is not emulated");
    Launch &L = launch();
    const unsigned lane = L.current->thread % 32, w = (unsigned)warp_index(L.current);
    if ((lane ^ (unsigned)lane_mask) >= 32 || L.warp_bars[w].expected != 32) die("a shuffle outside a full warp");
    // One barrier per shuffle: consecutive shuffles write alternate rows, and no lane can
    // write this row again (two shuffles on) before every lane has passed the next barrier,
    // that is, has read this one.
    double *row = L.scratch[w].shfl[L.current->shuffles++ & 1];
    row[lane] = v;
    arrive(L.warp_bars[w]);
    return row[lane ^ (unsigned)lane_mask];
}
} // namespace

float __shfl_xor_sync(unsigned mask, float v, int lane_mask) { return (float)shuffle_xor(mask, v, lane_mask); }
double __shfl_xor_sync(unsigned mask, double v, int lane_mask) { return shuffle_xor(mask, v, lane_mask); }
int __shfl_xor_sync(unsigned mask, int v, int lane_mask) { return (int)shuffle_xor(mask, v, lane_mask); }

void __threadfence() {}

// A polling thread gives way. Between two arrivals (or ends) every runnable thread runs at most
// once per pass of the queue, so pauses past a few passes with no arrival mean that only
// pollers are left and none of them will ever see its word.
void sk_spin_pause() {
    Launch &L = launch();
    if (++L.pauses > 4 * L.fibers.size() + 64) die("deadlock: every runnable thread polls a word no thread will store");
    L.run.push_back(L.current);
    yield_to_scheduler(false);
}

void __trap() { die("__trap() in a kernel"); }

void cooperative_groups::grid_group::sync() const {
    Launch &L = launch();
    if (!L.cfg.cooperative) die("grid.sync() outside a cooperative launch");
    if (L.current->thread == 0) g_counts[L.current->block].grid_syncs++;
    arrive(L.grid_bar);
}
cooperative_groups::grid_group cooperative_groups::this_grid() { return grid_group(); }

namespace {
Launch &cluster_launch(const char *what) {
    Launch &L = launch();
    if (!L.cfg.cluster) {
        char line[200];
        snprintf(line, sizeof line, "%s outside a cluster launch (sk_emu_config.cluster)", what);
        die(line);
    }
    return L;
}
} // namespace

void cooperative_groups::cluster_group::sync() const {
    Launch &L = cluster_launch("cluster.sync()");
    if (L.current->thread == 0) g_counts[L.current->block].cluster_syncs++;
    arrive(L.cluster_bar);
}
unsigned cooperative_groups::cluster_group::block_rank() const {
    return (unsigned)local_block(cluster_launch("cluster.block_rank()").current); // a round is one cluster
}
unsigned cooperative_groups::cluster_group::num_blocks() const {
    return cluster_launch("cluster.num_blocks()").cfg.cluster;
}
cooperative_groups::cluster_group cooperative_groups::this_cluster() { return cluster_group(); }

void *sk_emu_map_shared_rank(const void *addr, unsigned rank) {
    Launch &L = cluster_launch("cluster.map_shared_rank()");
    const uintptr_t mine = (uintptr_t)L.smem[local_block(L.current)], at = (uintptr_t)addr;
    char line[200];
    if (at < mine || at - mine >= L.cfg.dynamic_smem) {
        snprintf(line, sizeof line, "map_shared_rank of an address outside the block's %zu bytes of dynamic shared"
                 " memory", L.cfg.dynamic_smem);
        die(line);
    }
    if (rank >= L.cfg.cluster) {
        snprintf(line, sizeof line, "map_shared_rank to rank %u of a cluster of %u blocks", rank, L.cfg.cluster);
        die(line);
    }
    return L.smem[rank] + (at - mine);
}

unsigned char *sk_dynamic_smem() {
    Launch &L = launch();
    return L.smem[local_block(L.current)];
}

void sk_emu_mma(int kind, float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    Launch &L = launch();
    const unsigned lane = L.current->thread % 32, w = (unsigned)warp_index(L.current);
    if (L.warp_bars[w].expected != 32) die("an mma outside a full warp");
    if (lane == 0) g_counts[L.current->block].mma++;
    WarpScratch &s = L.scratch[w];
    memcpy(s.a[lane], a, sizeof a), memcpy(s.b[lane], b, sizeof b), memcpy(s.d[lane], d, sizeof d);
    arrive(L.warp_bars[w]);
    if (lane == 0 && sk_ptx_mma(kind, s.a, s.b, s.d) != 0) die("the PTX fragment tables are not a partition");
    arrive(L.warp_bars[w]);
    memcpy(d, s.d[lane], sizeof d);
    arrive(L.warp_bars[w]);
}

void sk_emu_ldmatrix(int n, uint32_t *r, const void *row) {
    Launch &L = launch();
    const unsigned lane = L.current->thread % 32, w = (unsigned)warp_index(L.current);
    if (L.warp_bars[w].expected != 32) die("an ldmatrix outside a full warp");
    if (n != 2 && n != 4) die("ldmatrix of other than 2 or 4 matrices is not emulated");
    if (lane == 0) g_counts[L.current->block].ldmatrix++;
    WarpScratch &s = L.scratch[w];
    // Only the lanes that address a row (8 per matrix) are checked: the others' are ignored.
    const unsigned char *p = (const unsigned char *)row, *smem = L.smem[local_block(L.current)];
    if (lane < 8u * (unsigned)n) {
        if ((uintptr_t)p & 15) die("ldmatrix of a row not 16-byte aligned");
        if (p < smem || p + 16 > smem + L.cfg.dynamic_smem) die("ldmatrix of a row outside the block's dynamic shared memory");
    }
    s.rows[lane] = p;
    arrive(L.warp_bars[w]);
    // Matrix m's row i is at lane 8m + i's address; lane l gets word l % 4 of row l / 4.
    for (int m = 0; m < n; m++) memcpy(&r[m], s.rows[8 * m + lane / 4] + 4 * (lane % 4), 4);
    arrive(L.warp_bars[w]);
}

uint32_t sk_emu_tf32_rna(float v) { return sk_ptx_tf32_rna(v); }

static uint64_t g_cp_async_count = 0;

void sk_emu_note_global_read(size_t bytes) {
    if (g_launch) g_counts[g_launch->current->block].global_read_bytes += bytes;
}
sk_emu_counts sk_emu_block_counts(unsigned block) {
    return block < g_counts.size() ? g_counts[block] : sk_emu_counts{};
}
uint64_t sk_emu_cp_async_count() { return g_cp_async_count; }

void sk_cp_async16(void *smem_dst, const void *gmem_src) {
    Launch &L = launch();
    g_cp_async_count++;
    g_counts[L.current->block].global_read_bytes += 16;
    if (((uintptr_t)smem_dst | (uintptr_t)gmem_src) & 15) die("cp.async of 16 bytes from or to an unaligned address");
    L.current->copies.push_back({smem_dst, gmem_src});
}

void sk_cp_async_wait_all() {
    Launch &L = launch();
    for (auto &c : L.current->copies) memcpy(c.first, c.second, 16);
    L.current->copies.clear();
}
