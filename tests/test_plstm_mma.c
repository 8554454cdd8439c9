// test_plstm_mma.c: the persistent LSTM kernel's tensor-core inner products (mma_dots in
// kernels/lstm_persistent_dots.cuh) on the host, without a GPU. mma_dots takes every
// address from kernels/lstm_persistent_mma.h; this test loads each lane's fragments (the
// elements its ldmatrix delivers: check 1 holds them equal) as mma_dots reads them (a bf16
// pair as one little-endian 32-bit word, a TF32 element rounded by cvt.rna), hands them to
// an emulated mma.sync that reads them
// by the PTX ISA's fragment tables, and stores the results where mma_dots stores them.
// The fragment tables (tests/emu/mma_ptx.h) are transcribed from the PTX ISA (Parallel Thread Execution ISA,
// section 9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with floating point type", .bf16 A,
// B and the fp32 accumulators; section 9.7.14.5.7 "Matrix Fragments for mma.m16n8k8", .tf32
// A and B and its accumulators), in the ISA's own element-index form, independently of the
// header's register-offset form. Semantics: D = A * B + C, A 16 x k row, B k x 8 col.
//  1. Per lane and register, the element the kernel loads is the one the ISA says that
//     register holds (row, column, half), and every element of A, B and C is owned by
//     exactly one (lane, register, half); and the ldmatrix the kernel loads them with (the
//     rows sk_plstm_ldm_* address, lane l receiving word l % 4 of row l / 4 of matrix r in
//     register r, the PTX ISA's "Matrix Load Instruction: ldmatrix") delivers that element.
//  2. The whole mma_dots (tiles over 8 warps, or each tile's K split among warps with the
//     partial sums added through the scratch; the two accumulator chains; bounds on the
//     store) on 2,000 random problems per instruction, the forward's (R = 1) and the
//     backward's (R = 2 weight slices, each a [rows][G] matrix of its own, or R = 1 at the
//     top), with strides from real plans: the result equals the plain product
//     w vec^T, batch rows past nb (NaN-filled) never leak into a result, nothing outside
//     the call's results is written, no load leaves the staged rows (the plan's padding),
//     and every bf16 word load is 4-byte aligned.
//     Tolerance: exact. Operands are integers in [-8, 8] (exact in bf16 and TF32), so
//     every partial sum is an integer below 2^24 and any summation order (the tensor
//     core's is unspecified) gives the same fp32 value.
//  3. The fragment loads of real plans' strides are free of shared-memory bank conflicts:
//     for each ldmatrix matrix, its 8 rows of 16 bytes fall in 8 distinct groups of 4 banks.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/lstm_persistent_mma.h"
#include "../kernels/lstm_persistent_plan.h"
#include "emu/mma_ptx.h"
#include "shakespeare/rng.h"
#include "test_util.h"

enum { BF16 = SK_PTX_BF16, TF32 = SK_PTX_TF32 };
static const char *kind_name[2] = {"bf16 m16n8k16", "tf32 m16n8k8"};
static int epr_of(int kind) { return sk_ptx_epr(kind); }
static int kstep_of(int kind) { return sk_ptx_kstep(kind); }

// ---- Operands as the GPU holds them: bf16 bits in shared memory, or fp32 (TF32 on load).
static uint16_t bf16_bits(float v) { // exact for the test's integers
    uint32_t u;
    memcpy(&u, &v, 4);
    if (u & 0xffffu) {
        fprintf(stderr, "%g is not exact in bf16\n", v);
        exit(1);
    }
    return (uint16_t)(u >> 16);
}
typedef struct {
    int kind;
    const uint16_t *h; // bf16 operands, or
    const float *f;    // fp32 operands
    size_t n;          // elements there (a load past them would leave the block's shared memory)
} operands;

static int misaligned = 0, out_of_bounds = 0;
static long results_checked = 0;
// One fragment register at element offset `off` of an operand array, as frag_at loads it.
static uint32_t frag_at(const operands *o, size_t off) {
    if (off + (size_t)epr_of(o->kind) > o->n) {
        out_of_bounds++;
        return 0;
    }
    if (o->kind == BF16) {
        if (off % 2) misaligned++; // a 32-bit load from a 2-byte boundary faults on the GPU
        uint32_t word;
        memcpy(&word, o->h + off, 4); // little endian, as the GPU: element off in the low half
        return word;
    }
    return sk_ptx_tf32_rna(o->f[off]);
}

// ---- mma.sync, emulated from the ISA's tables (tests/emu/mma_ptx.h).
static int ownership_errors = 0;
static void mma_emulate(int kind, const uint32_t a[32][4], const uint32_t b[32][2], float d[32][4]) {
    ownership_errors += sk_ptx_mma(kind, a, b, d);
}

// ---- mma_dots, step by step as the kernel runs it, every address and the work split from
// lstm_persistent_mma.h: slice q of R at w + q*wslice and vec + q*vslice.
static int split_problems = 0; // problems whose tiles' K was cut among warps
static void host_tile_sum(const operands *w, size_t wt, int wstride, const operands *vec, size_t vt, int vstride,
                          int k0, int k1, float c[32][4]) {
    const int epr = epr_of(w->kind), kstep = kstep_of(w->kind);
    float chain[2][32][4] = {{{0}}}; // mma_tile_sum: alternate steps, chain 0 + chain 1
    for (int ks = k0; ks < k1; ks++) {
        uint32_t a[32][4], b[32][2];
        for (int lane = 0; lane < 32; lane++) {
            for (int r = 0; r < 4; r++) {
                const int off = sk_plstm_mma_a_row(lane, r) * wstride + sk_plstm_mma_a_col(lane, r, epr);
                a[lane][r] = frag_at(w, wt + off + (size_t)ks * kstep);
            }
            for (int r = 0; r < 2; r++) {
                const int off = sk_plstm_mma_b_row(lane) * vstride + sk_plstm_mma_b_col(lane, r, epr);
                b[lane][r] = frag_at(vec, vt + off + (size_t)ks * kstep);
            }
        }
        mma_emulate(w->kind, a, b, chain[(ks - k0) % 2]);
    }
    for (int lane = 0; lane < 32; lane++)
        for (int r = 0; r < 4; r++) c[lane][r] = chain[0][lane][r] + chain[1][lane][r];
}

static void host_mma_dots(const operands *w, int wstride, size_t wslice, const operands *vec, int vstride,
                          size_t vslice, int R, int mrows, int nb, int K, float *acc) {
    const int warps = SK_PLSTM_THREADS / 32, nrows = mrows * R;
    const int tiles = R * sk_plstm_mma_tiles(mrows, nb), ksteps = K / kstep_of(w->kind);
    const int split = sk_plstm_mma_split(tiles, ksteps, warps);
    static float scratch[SK_PLSTM_MMA_SCRATCH_BYTES / 4];
    split_problems += split > 1;
    for (int warp = 0; warp < warps; warp++)
        for (int item = warp; item < tiles * split; item += warps) {
            const int part = item % split;
            int q, m0, n0;
            sk_plstm_mma_tile_origin(item / split, mrows, nb, &q, &m0, &n0);
            float c[32][4];
            host_tile_sum(w, q * wslice + (size_t)m0 * wstride, wstride, vec, q * vslice + (size_t)n0 * vstride,
                          vstride, sk_plstm_mma_kbegin(part, split, ksteps), sk_plstm_mma_kbegin(part + 1, split, ksteps), c);
            for (int lane = 0; lane < 32; lane++)
                for (int r = 0; r < 4; r++) {
                    const int m = m0 + sk_plstm_mma_c_row(lane, r), n = n0 + sk_plstm_mma_c_col(lane, r);
                    if (split > 1) {
                        const int at = sk_plstm_mma_scratch_index(item, r, lane);
                        if (at < 0 || at >= SK_PLSTM_MMA_SCRATCH_BYTES / 4) out_of_bounds++;
                        else scratch[at] = c[lane][r];
                    } else if (m < mrows && n < nb) {
                        acc[sk_plstm_acc_index(n, m, nrows, R, q)] = c[lane][r];
                    }
                }
        }
    if (split == 1) return;
    for (int e = 0; e < tiles * 128; e++) { // the block's reduction, in part order
        int keep;
        size_t at;
        const float v = sk_plstm_mma_part_sum(scratch, e, split, mrows, nb, R, &keep, &at);
        if (keep) acc[at] = v;
    }
}

// ---- 1. Each register loads what the ISA says it holds.
static void check_fragment_tables(int kind) {
    const int epr = epr_of(kind), stride = 1000; // any stride: element (row, col) sits at row*stride + col
    int bad = 0, seen_a[16][16] = {{0}}, seen_b[16][8] = {{0}}, seen_c[16][8] = {{0}};
    for (int lane = 0; lane < 32; lane++) {
        for (int i = 0; i < 4 * epr; i++) { // element i is half i % epr of register i / epr
            const int r = i / epr, off = sk_plstm_mma_a_row(lane, r) * stride + sk_plstm_mma_a_col(lane, r, epr) + i % epr;
            int row, col;
            sk_ptx_a(kind, lane, i, &row, &col);
            if (off / stride != row || off % stride != col) bad++;
            seen_a[row][col]++;
        }
        for (int i = 0; i < 2 * epr; i++) { // B[k][n] = vec[n][k]: the load's row is n, its column k
            const int r = i / epr, off = sk_plstm_mma_b_row(lane) * stride + sk_plstm_mma_b_col(lane, r, epr) + i % epr;
            int k, n;
            sk_ptx_b(kind, lane, i, &k, &n);
            if (off / stride != n || off % stride != k) bad++;
            seen_b[k][n]++;
        }
        for (int i = 0; i < 4; i++) {
            int row, col;
            sk_ptx_c(lane, i, &row, &col);
            if (sk_plstm_mma_c_row(lane, i) != row || sk_plstm_mma_c_col(lane, i) != col) bad++;
            seen_c[row][col]++;
        }
    }
    for (int lane = 0; lane < 32; lane++) { // what ldmatrix hands each lane, register by register
        const int row_lane = lane / 4, word = lane % 4;
        for (int r = 0; r < 4; r++) {
            const int src = 8 * r + row_lane; // the lane addressing matrix r's row lane / 4
            const int got = sk_plstm_ldm_a_row(src) * stride + sk_plstm_ldm_a_col(src, epr) + word * epr;
            if (got != sk_plstm_mma_a_row(lane, r) * stride + sk_plstm_mma_a_col(lane, r, epr)) bad++;
        }
        for (int r = 0; r < 2; r++) {
            const int src = 8 * r + row_lane;
            const int got = sk_plstm_ldm_b_row(src) * stride + sk_plstm_ldm_b_col(src, epr) + word * epr;
            if (got != sk_plstm_mma_b_row(lane) * stride + sk_plstm_mma_b_col(lane, r, epr)) bad++;
        }
    }
    const int K = kstep_of(kind);
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 16; c++) {
            if (c < K && seen_a[r][c] != 1) bad++;
            if (c < 8 && seen_c[r][c] != 1) bad++;
            if (c < 8 && r < K && seen_b[r][c] != 1) bad++;
        }
    printf("%s: fragment tables, %d mismatches\n", kind_name[kind], bad);
    CHECK(bad == 0);
}

// ---- 2. Random problems through host_mma_dots against the plain product.
static int rand_int(sk_rng *r, int lo, int hi) { return lo + (int)(sk_rng_u64(r) % (uint64_t)(hi - lo + 1)); }

typedef struct {
    int kind, n;        // elements
    uint16_t *h;
    float *f, *val;     // val: the value of each element (NaN for poisoned rows)
} buffer;

static buffer buffer_new(int kind, int n) {
    buffer b = {kind, n, calloc((size_t)n, 2), calloc((size_t)n, 4), calloc((size_t)n, 4)};
    if (!b.h || !b.f || !b.val) exit(1);
    return b;
}
static void buffer_set(buffer *b, int i, float v) {
    b->val[i] = v, b->f[i] = v;
    b->h[i] = isnan(v) ? 0x7fc0 : bf16_bits(v);
}
static void buffer_free(buffer *b) { free(b->h), free(b->f), free(b->val); }
static operands ops_of(const buffer *b) { return (operands){b->kind, b->h, b->f, (size_t)b->n}; }

// One problem in a kernel's layout: R slices (forward 1; backward 2, or 1 at the top layer),
// slice q of the weights at q*wslice and of the staged rows at q*vslice, rows `stride`
// elements apart; each slice holds klen real columns and zeros up to the instruction's K
// (and up to the stride); mrows real weight rows and zero rows up to 16; nb batch rows and
// NaN rows up to 8. Forward: one slice. Backward on tensor cores: [2][rows][G], stride G.
static int run_problem(int kind, sk_rng *r, int mrows, int nb, int klen, int R, int stride) {
    const int kstep = kstep_of(kind), Kp = (klen + kstep - 1) / kstep * kstep;
    const int wrows = (mrows + 15) / 16 * 16, brows = (nb + 7) / 8 * 8;
    const size_t wslice = (size_t)wrows * stride, vslice = (size_t)brows * stride;
    buffer w = buffer_new(kind, (int)(R * wslice)), v = buffer_new(kind, (int)(R * vslice));
    for (int i = 0; i < w.n; i++) {
        const int m = (int)(i % wslice) / stride, k = (int)(i % wslice) % stride;
        buffer_set(&w, i, m < mrows && k < klen ? (float)rand_int(r, -8, 8) : 0.0f);
    }
    for (int i = 0; i < v.n; i++) {
        const int n = (int)(i % vslice) / stride, k = (int)(i % vslice) % stride;
        buffer_set(&v, i, n >= nb ? NAN : k < klen ? (float)rand_int(r, -8, 8) : 0.0f);
    }
    const int nrows = mrows * R, total = brows * nrows + 64;
    float *acc = malloc((size_t)total * sizeof(float));
    if (!acc) exit(1);
    for (int i = 0; i < total; i++) acc[i] = -12345.0f; // the sentinel: untouched
    const operands wo = ops_of(&w), vo = ops_of(&v);
    host_mma_dots(&wo, stride, wslice, &vo, stride, vslice, R, mrows, nb, Kp, acc);
    int bad = 0;
    for (int i = 0; i < total; i++) {
        const int n = i / nrows, m = (i % nrows) / R, q = (i % nrows) % R;
        if (n < nb) { // a result: row m of slice q times batch row n
            double ref = 0.0;
            for (int k = 0; k < klen; k++)
                ref += (double)w.val[q * wslice + (size_t)m * stride + k] * v.val[q * vslice + (size_t)n * stride + k];
            if (acc[i] != (float)ref) bad++;
            results_checked++;
        } else if (acc[i] != -12345.0f) {
            bad++; // written outside the call's results
        }
    }
    free(acc);
    buffer_free(&w), buffer_free(&v);
    return bad;
}

static void check_random_problems(int kind, sk_rng *r) {
    // H100/H200, A100, a smaller part, and a small one whose wide slices (U up to 60) make
    // more tiles than warps (each warp takes several).
    static const int devices[4][2] = {{132, 232448}, {108, 166912}, {46, 101376}, {4, 232448}};
    const sk_plstm_operands op = kind == BF16 ? SK_PLSTM_BF16_MMA : SK_PLSTM_TF32_MMA;
    int problems = 0, failed = 0, bwd = 0, many_tiles = 0;
    while (problems < 2000) {
        // A shape whose plan fits gives the strides (forward Kf, backward 2G) and the chunk.
        const int B = rand_int(r, 1, 48), E = rand_int(r, 1, 90), H = rand_int(r, 1, 90), L = rand_int(r, 1, 4);
        sk_plstm_plan p;
        if (!sk_plstm_plan_shape(&p, devices[problems % 4][0], devices[problems % 4][1], 9, B, E, H, L, op)) continue;
        const int backward = problems % 2, full = rand_int(r, 0, 1); // full: the block's whole slice and chunk
        const int nu = full ? p.U : rand_int(r, 1, p.U);
        int bad;
        if (!backward) { // 4*nu gate rows of [W_ih | W_hh] (K = in + H) times the staged rows
            const int nb = full ? (p.bc_fwd < B ? p.bc_fwd : B) : rand_int(r, 1, p.bc_fwd < B ? p.bc_fwd : B), in = rand_int(r, 0, 1) ? E : H;
            bad = run_problem(kind, r, 4 * nu, nb, in + H, 1, p.kstride);
            many_tiles += sk_plstm_mma_tiles(4 * nu, nb) > SK_PLSTM_THREADS / 32;
        } else { // nu units' columns of W_hh_k and W_ih_{k+1} (R = 2; the top layer R = 1), K = 4H
            const int nb = full ? (p.bc_bwd < B ? p.bc_bwd : B) : rand_int(r, 1, p.bc_bwd < B ? p.bc_bwd : B), R = rand_int(r, 1, 2);
            bad = run_problem(kind, r, nu, nb, 4 * H, R, p.gstride);
            many_tiles += sk_plstm_mma_tiles(nu, nb) > SK_PLSTM_THREADS / 32;
            bwd++;
        }
        if (bad) {
            if (failed < 5)
                printf("%s: %s problem B %d E %d H %d L %d: %d wrong results\n", kind_name[kind],
                       backward ? "backward" : "forward", B, E, H, L, bad);
            failed++;
        }
        problems++;
    }
    printf("%s: %d random problems (%d backward, %d with more tiles than warps, %d with K split among warps), "
           "%ld results, %d failed, %d misaligned word loads, %d loads out of bounds, %d ownership errors\n",
           kind_name[kind], problems, bwd, many_tiles, split_problems, results_checked, failed, misaligned,
           out_of_bounds, ownership_errors);
    CHECK(failed == 0 && misaligned == 0 && out_of_bounds == 0 && ownership_errors == 0);
    // The problems are not trivially small, and both work splits are exercised.
    CHECK(results_checked > 100000 && many_tiles > 50 && split_problems > 500);
    results_checked = 0, split_problems = 0;
}

// ---- 3. Bank conflicts of the fragment loads at real plans' strides.
static int conflict_free_loads(int kind, int stride_elems) {
    const int epr = epr_of(kind);
    for (int m = 0; m < 6; m++) { // A's four matrices, then B's two
        unsigned groups = 0;
        for (int i = 0; i < 8; i++) { // row i of matrix m: lane (m % 4) * 8 + i's address
            const int lane = (m % 4) * 8 + i;
            const int off = m < 4 ? sk_plstm_ldm_a_row(lane) * stride_elems + sk_plstm_ldm_a_col(lane, epr)
                                  : sk_plstm_ldm_b_row(lane) * stride_elems + sk_plstm_ldm_b_col(lane, epr);
            groups |= 1u << ((off / epr) % 32 / 4);
        }
        if (groups != 0xffu) return 0;
    }
    return 1;
}

static void check_bank_conflicts(int kind, sk_rng *r) {
    const sk_plstm_operands op = kind == BF16 ? SK_PLSTM_BF16_MMA : SK_PLSTM_TF32_MMA;
    int plans = 0, conflicted = 0;
    for (int i = 0; i < 3000; i++) {
        sk_plstm_plan p;
        const int B = rand_int(r, 1, 128), E = rand_int(r, 1, 600), H = rand_int(r, 1, 700), L = rand_int(r, 1, 5);
        if (!sk_plstm_plan_shape(&p, 132, 232448, 9, B, E, H, L, op)) continue;
        plans++;
        if (!conflict_free_loads(kind, p.kstride) || !conflict_free_loads(kind, p.gstride)) {
            if (conflicted++ < 5) printf("%s: bank conflicts at Kf %d, G %d\n", kind_name[kind], p.kstride, p.gstride);
        }
    }
    printf("%s: %d plans, fragment loads conflict free in %d\n", kind_name[kind], plans, plans - conflicted);
    CHECK(plans > 500 && conflicted == 0);
}

int main(void) {
    sk_rng r;
    sk_rng_seed(&r, 5);
    for (int kind = BF16; kind <= TF32; kind++) {
        check_fragment_tables(kind);
        check_random_problems(kind, &r);
        check_bank_conflicts(kind, &r);
    }
    return sk_test_done("test_plstm_mma");
}
