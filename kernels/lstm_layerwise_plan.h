// lstm_layerwise_plan.h: how the layer-after-layer persistent LSTM kernels (lstm_layerwise.h)
// tile their grid and lay out shared memory, as host arithmetic in C, checked without a GPU
// (tests/test_plstm_plan.c); the kernels carve their shared memory with the same function.
// defines: sk_plstm_lw_plan, sk_plstm_lw_plan_shape, sk_plstm_lw_plan_tile, sk_plstm_lw_plan_chunk,
//          sk_plstm_lw_smem, sk_plstm_lw_smem_carve, SK_PLSTM_LW_BB, SK_PLSTM_LW_MAX_CLUSTER,
//          SK_PLSTM_LW_MIN_CHUNK
//
// One launch runs one layer over the window. The recurrence is independent across batch rows,
// so the grid is tiles: the batch in `groups` groups of at most Bb rows, each group's H units in
// slices of U, one block per (group, slice): blocks = groups * ceil(H / U). Two exchanges:
//   grid.sync (cluster = 0): every block resident at once (blocks <= SMs); a block stages its
//     group's rows of h_{t-1} (forward) or of the gate gradients dg(t+1) (backward) from global
//     memory once per step, after one grid.sync;
//   cluster (cluster = slices <= 16): each batch group is one thread-block cluster; a block
//     pushes its slice of h(t) into every peer's shared memory (distributed shared memory),
//     and backward its fp32 partial sums of W_hh^T dg(t+1) for each peer's units, and one
//     cluster barrier per step publishes them: no global round trip, no grid-wide barrier,
//     and clusters need not be co-resident (groups are independent).
// Shared memory per block (floats; sk_plstm_lw_smem_carve):
//   grid.sync forward   W_hh rows 4U x H, biases 4U x 2, c Bb x U, staged h Bb x H (or two
//                       chunks of it, Bb x kcf), pre Bb x 4U
//   grid.sync backward  W_hh columns U x 4H, dc Bb x U, staged dg Bb x 4H (or two chunks, Bb x
//                       kcb), acc Bb x U
//   cluster forward     W_hh rows 4U x H, biases, c, h Bb x H twice (double-buffered: peers
//                       write step t+1's while this block reads step t's), pre, and the step's
//                       projection Bb x 4U (prefetched before the inner products)
//   cluster backward    W_hh^T rows H x 4U (the forward's slice, transposed: the partial sums of
//                       every unit over this block's gates), dc, this block's dg Bb x 4U, the
//                       partial sums Bb x H, received partials 2 x slices x Bb x U, and the
//                       step's gates, c, c_prev and upper gradient Bb x 7U (prefetched)
// (on tensor cores rows and strides rounded up, and mma_dots' scratch).
//
// The grid.sync tile. Each batch group's blocks hold all of W_hh (4H x H operands), so the chip
// holds `groups` copies of it and a block about 4H^2 s groups / SMs bytes: the batch tile sets
// how much of W_hh a block must hold. The plan takes the first tile of 8, 16, 24, ... batch rows
// (SK_PLSTM_LW_BB steps: the mma's n-tile) that fits, smallest first: a block's inner products
// are the same work at any tile (4H^2 B / SMs multiply-adds a step), but it stages Bb rows a step
// (Bb H s bytes forward, Bb 4H s backward), so a smaller tile stages less. A tile whose staged rows
// do not fit whole beside its W_hh share stages them in chunks along K, double-buffered
// (sk_plstm_lw_plan_chunk), and counts as fitting when each buffer holds at least
// SK_PLSTM_LW_MIN_CHUNK bytes; where no tile does, the smallest tile that fits at all is taken.
// Where 8 rows fit whole (configs A, B in bf16, H = 768 with B = 32 in bf16) that is the tile.
// On sm_90 (132 SMs, 227 KiB a block) every H <= 1024 with B <= 128 fits in fp32, TF32 and bf16
// (tests/test_plstm_plan.c sweeps it): B in TF32 in tiles of 16 rows, H = 1024 with B = 128 in
// bf16 in tiles of 64 and with fp32 operands in one group of 128, its backward in 47-52 chunks a
// step. Past that the limit is W_hh's share of a block in one group (4U rows of H, U =
// ceil(H / SMs)) beside the narrowest chunks: H fits up to 1188-1320 with fp32 operands and
// 1716-1872 in bf16 (by B and the inner product), and the refusal names shared memory, that
// share and the flags to change.
#ifndef SK_LSTM_LAYERWISE_PLAN_H
#define SK_LSTM_LAYERWISE_PLAN_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "lstm_persistent_plan.h" // SK_HOST_DEVICE, SK_PLSTM_THREADS: the wavefront kernels' plan

#ifdef __cplusplus
extern "C" {
#endif

#define SK_PLSTM_LW_BB 8           // batch rows per tile (clusters), and the step of grid.sync's tiles: one mma n-tile
#define SK_PLSTM_LW_MAX_CLUSTER 16 // blocks per cluster on sm_90 (non-portable size; 8 portable)
// Bytes a K chunk's buffer holds at least, for a tile to count as fitting: staging that much (1.4
// us at lstm_persistent_cost.h's measured 12.1 B/ns a block) outlasts the L2 round trip the
// chunk waits on (0.35 us) several times over; narrower chunks add round trips and barriers.
#define SK_PLSTM_LW_MIN_CHUNK 16384

typedef struct {
    int supported; // 0: why_not says why
    char why_not[200];
    int mma;        // 1: the inner products on tensor cores (mma.sync: bf16 m16n8k16, TF32 m16n8k8); 0: CUDA cores
    int operand_bytes; // 4: fp32 operands (TF32 on tensor cores); 2: bf16 (weights, staged h and dg)
    int Bb, groups; // batch rows per group (the last group may hold fewer), groups
    int U, slices;  // units per block, blocks per group (ceil(H / U))
    int blocks;     // groups * slices
    // Held and staged rows: forward 4U weight rows of H, backward U of 4H, staged rows Bb; on
    // tensor cores rounded up (staged rows to 8, K to the instruction's 8 or 16 plus a pad of 16
    // bytes: every row stride 4 mod 8 words and a multiple of 16 bytes, as
    // lstm_persistent_plan.h pads them; with clusters weight rows to 16), the padding zero.
    int kf, gs;           // row strides (operands): forward (>= H), backward (>= 4H; cluster: >= 4U)
    int wrows, wunits, bbr; // weight rows (forward), weight rows (backward; cluster: >= H), staged rows
    // grid.sync: a step's staged rows (h_{t-1}, K = H forward; dg(t+1), K = 4H backward) in nch
    // chunks of kc operands along K (the last one shorter) at row stride vs: one chunk (K whole,
    // vs = kf or gs) in one buffer, or more in two (the block stages chunk c + 1 while it
    // multiplies chunk c). Clusters: K whole (kcf = H, kcb = 4U), nch 1, vs kf and gs.
    int kcf, kcb, nchf, nchb, vsf, vsb;
    int cluster;          // 0: grid.sync; else blocks per cluster (= slices): one cluster per batch group
    size_t smem_fwd, smem_bwd;
} sk_plstm_lw_plan;

// Byte offsets of a block's regions (16-byte aligned), forward or backward.
typedef struct {
    size_t w, bias, state, vec, acc, recv, pre, scratch, total; // recv, pre: cluster only (else empty)
} sk_plstm_lw_smem;

static inline SK_HOST_DEVICE size_t sk_plstm_lw_align(size_t n) { return (n + 15) & ~(size_t)15; }

// Forward: w [wrows][kf] operands, biases [4U][2], c [Bb][U], vec [bbr][vsf] operands (cluster,
// or grid.sync in chunks: two of them), acc [Bb][4U] (W_hh h_{t-1}), pre (cluster) [Bb][4U] (the
// step's projection); backward: w [wunits][gs] operands, dc [Bb][U], vec [bbr][vsb] operands
// (grid.sync in chunks: two), acc [Bb][U] (cluster: acc [Bb][wunits], the partial sums; recv
// [2][slices][Bb][U]; pre [Bb][7U]: gates, c, c_prev, the upper gradient) (the rest fp32); then,
// on tensor cores, the partial-sum scratch of mma_dots (SK_PLSTM_MMA_SCRATCH_BYTES).
static inline SK_HOST_DEVICE sk_plstm_lw_smem sk_plstm_lw_smem_carve(const sk_plstm_lw_plan *p, int backward) {
    const size_t f = sizeof(float), u = (size_t)p->U, bb = (size_t)p->Bb, s = (size_t)p->operand_bytes;
    const size_t row = (size_t)(backward ? p->gs : p->kf), held = (size_t)(backward ? p->wunits : p->wrows);
    const size_t vs = (size_t)(backward ? p->vsb : p->vsf);
    const int cl = p->cluster > 0, bufs = cl ? (backward ? 1 : 2) : (backward ? p->nchb : p->nchf) > 1 ? 2 : 1;
    sk_plstm_lw_smem l;
    l.w = 0;
    l.bias = sk_plstm_lw_align(held * row * s);
    l.state = l.bias + (backward ? 0 : sk_plstm_lw_align(4 * u * 2 * f));
    l.vec = l.state + sk_plstm_lw_align(bb * u * f);
    l.acc = l.vec + sk_plstm_lw_align((size_t)p->bbr * vs * s) * (size_t)bufs;
    const size_t acc_cols = backward ? (cl ? (size_t)p->wunits : u) : 4 * u;
    l.recv = l.acc + sk_plstm_lw_align(bb * acc_cols * f);
    l.pre = l.recv + (cl && backward ? sk_plstm_lw_align(2 * (size_t)p->slices * bb * u * f) : 0);
    l.scratch = l.pre + (cl ? sk_plstm_lw_align(bb * u * (backward ? 7 : 4) * f) : 0);
    l.total = l.scratch + (p->mma ? SK_PLSTM_MMA_SCRATCH_BYTES : 0);
    return l;
}

// Fills plan's tile for about `groups` batch groups (as many as ceil(B / groups) rows make),
// each of at most max_cluster blocks (clusters) or sms / groups (grid.sync), K whole, and its
// shared memory (the caller checks it against the block's).
static inline void sk_plstm_lw_plan_tile(sk_plstm_lw_plan *plan, int sms, int B, int H, int mma, int s, int groups,
                                         int max_cluster) {
    const int Bb = (B + groups - 1) / groups;
    groups = (B + Bb - 1) / Bb;
    const int per_group = max_cluster ? (max_cluster < H ? max_cluster : H) : sms / groups; // blocks a group may have
    const int U = (H + per_group - 1) / per_group;
    plan->mma = mma, plan->operand_bytes = s, plan->Bb = Bb, plan->groups = groups, plan->U = U;
    plan->slices = (H + U - 1) / U, plan->blocks = groups * plan->slices;
    plan->cluster = max_cluster ? plan->slices : 0;
    const size_t kstep = s == 2 ? 16 : 8, pad = 16 / (size_t)s; // the mma's K; 16 bytes of operands
    // Backward's inner products run over K = 4H (grid.sync: dg of every unit) or K = 4U
    // (cluster: this block's own gates, for all H units).
    const size_t kb = max_cluster ? 4 * (size_t)U : 4 * (size_t)H;
    plan->kf = mma ? (int)(sk_plstm_round_up((size_t)H, kstep) + pad) : H;
    plan->gs = mma ? (int)(sk_plstm_round_up(kb, kstep) + pad) : (int)kb;
    // grid.sync: the weight rows as they are (the lanes of the last 16-row mma tile past them read
    // its last row again: mma_dots' clamp). Clusters: rounded up, zero.
    const size_t ralign = mma && max_cluster ? 16 : 1;
    plan->wrows = (int)sk_plstm_round_up((size_t)4 * U, ralign);
    plan->wunits = (int)sk_plstm_round_up(max_cluster ? (size_t)H : (size_t)U, ralign);
    plan->bbr = mma ? (int)sk_plstm_round_up((size_t)Bb, 8) : Bb;
    plan->kcf = H, plan->kcb = (int)kb, plan->nchf = plan->nchb = 1, plan->vsf = plan->kf, plan->vsb = plan->gs;
    plan->smem_fwd = sk_plstm_lw_smem_carve(plan, 0).total, plan->smem_bwd = sk_plstm_lw_smem_carve(plan, 1).total;
}

// grid.sync, one direction of plan's tile (backward: K = 4H, else H): its staged rows in chunks
// of K in two buffers, the chunks as wide as fits `optin` beside the rest of the block (a
// multiple of the mma's K, else of 16 bytes), all but the last the same width, and the
// direction's shared memory: 1 when it fits; 0 with the narrowest chunks' size where not even they do.
static inline int sk_plstm_lw_plan_chunk(sk_plstm_lw_plan *plan, int optin, int K, int backward) {
    const size_t s = (size_t)plan->operand_bytes, q = plan->mma ? (s == 2 ? 16 : 8) : 16 / s;
    const size_t pad = plan->mma ? 16 / s : 0;
    int *kc = backward ? &plan->kcb : &plan->kcf, *nch = backward ? &plan->nchb : &plan->nchf;
    int *vs = backward ? &plan->vsb : &plan->vsf;
    size_t *smem = backward ? &plan->smem_bwd : &plan->smem_fwd;
    *nch = 2, *vs = 0; // the block without its staged rows
    const size_t rest = sk_plstm_lw_smem_carve(plan, backward).total;
    const size_t vmax = rest < (size_t)optin ? ((size_t)optin - rest) / 2 / 16 * 16 / ((size_t)plan->bbr * s) : 0;
    const size_t kmax = vmax >= q + pad ? (vmax - pad) / q * q : q, n = ((size_t)K + kmax - 1) / kmax;
    *kc = (int)sk_plstm_round_up(((size_t)K + n - 1) / n, q);
    *nch = (K + *kc - 1) / *kc, *vs = *kc + (int)pad;
    *smem = sk_plstm_lw_smem_carve(plan, backward).total;
    return *smem <= (size_t)optin;
}

// Fills plan for B rows of width H on a device of `sms` SMs with `optin` bytes of shared memory
// per block, operands of s bytes (4: fp32, 2: bf16) on CUDA cores or (mma) tensor cores, with
// the grid.sync exchange (max_cluster 0: at most `sms` blocks) or clusters of at most
// max_cluster blocks (a group's slices: U = ceil(H / max_cluster); any number of groups): 1 when
// it fits (the co-residency check is the caller's).
static inline int sk_plstm_lw_plan_shape(sk_plstm_lw_plan *plan, int sms, int optin, int B, int H, int mma, int s,
                                         int max_cluster) {
    memset(plan, 0, sizeof *plan);
    if (sms < 1 || B < 1 || H < 1 || max_cluster < 0) {
        snprintf(plan->why_not, sizeof plan->why_not, "no shape to plan (B %d, H %d, %d SMs)", B, H, sms);
        return 0;
    }
    if (max_cluster) { // one cluster a group of 8 rows
        sk_plstm_lw_plan_tile(plan, sms, B, H, mma, s, (B + SK_PLSTM_LW_BB - 1) / SK_PLSTM_LW_BB, max_cluster);
    } else { // the first tile that fits, smallest first (see the top of this file)
        sk_plstm_lw_plan first;
        int fits = 0, last = 0, found = 0;
        for (int rows = SK_PLSTM_LW_BB; !found; rows += SK_PLSTM_LW_BB) {
            const int groups = (B + rows - 1) / rows < sms ? (B + rows - 1) / rows : sms;
            if (groups == last) continue;
            last = groups;
            sk_plstm_lw_plan_tile(plan, sms, B, H, mma, s, groups, 0);
            const int f = plan->smem_fwd <= (size_t)optin || sk_plstm_lw_plan_chunk(plan, optin, H, 0);
            const int b = plan->smem_bwd <= (size_t)optin || sk_plstm_lw_plan_chunk(plan, optin, 4 * H, 1);
            if (f && b) {
                const size_t row = (size_t)plan->bbr * (size_t)s; // bytes a staged operand column
                found = (plan->nchf == 1 || row * (size_t)plan->vsf >= SK_PLSTM_LW_MIN_CHUNK) &&
                        (plan->nchb == 1 || row * (size_t)plan->vsb >= SK_PLSTM_LW_MIN_CHUNK);
                if (!fits) first = *plan, fits = 1;
            }
            if (plan->groups == 1) break;
        }
        if (fits && !found) *plan = first;
        if (!fits) { // one group; the size with its staged rows in the narrowest chunks
            const int back = plan->smem_bwd > (size_t)optin;
            snprintf(plan->why_not, sizeof plan->why_not,
                     "needs %u KiB of shared memory a block, more than its %d: W_hh (%s), one copy over %d blocks, is "
                     "%u KiB a block; use a smaller --hidden-size%s",
                     (unsigned)((back ? plan->smem_bwd : plan->smem_fwd) >> 10), optin >> 10, s == 2 ? "bf16" : "fp32",
                     plan->blocks, (unsigned)(sk_plstm_lw_smem_carve(plan, back).bias >> 10),
                     s == 2 ? "" : " or --precision bf16");
            return 0;
        }
        return 1;
    }
    const size_t fwd = plan->smem_fwd, bwd = plan->smem_bwd;
    if (fwd > (size_t)optin || bwd > (size_t)optin) {
        snprintf(plan->why_not, sizeof plan->why_not,
                 "a tile of %d units by %d batch rows needs %zu KiB of shared memory with %s operands%s, more than "
                 "the %d KiB a block gets",
                 plan->U, plan->Bb, (fwd > bwd ? fwd : bwd) >> 10, s == 2 ? "bf16" : "fp32",
                 mma ? " on tensor cores" : "", optin >> 10);
        return 0;
    }
    return 1;
}

#ifdef __cplusplus
}
#endif

#endif
