// test_plstm_mma.c: the persistent LSTM kernel's tensor-core inner products (mma_dots in
// kernels/lstm_persistent_dots.cuh) on the host, without a GPU. mma_dots takes every
// address from kernels/lstm_persistent_mma.h; this test loads each lane's fragments from
// those addresses exactly as mma_dots does (a bf16 pair as one little-endian 32-bit word,
// a TF32 element rounded by cvt.rna), hands them to an emulated mma.sync that reads them
// by the PTX ISA's fragment tables, and stores the results where mma_dots stores them.
// The fragment tables (tests/emu/mma_ptx.h) are transcribed from the PTX ISA (Parallel Thread Execution ISA,
// section 9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with floating point type", .bf16 A,
// B and the fp32 accumulators; section 9.7.14.5.7 "Matrix Fragments for mma.m16n8k8", .tf32
// A and B and its accumulators), in the ISA's own element-index form, independently of the
// header's register-offset form. Semantics: D = A * B + C, A 16 x k row, B k x 8 col.
//  1. Per lane and register, the element the kernel loads is the one the ISA says that
//     register holds (row, column, half), and every element of A, B and C is owned by
//     exactly one (lane, register, half).
//  2. The whole mma_dots (tile loop over 8 warps, K loop, bounds on the store) on 2,000
//     random problems per instruction, including the forward's call (R = 1) and the
//     backward's pair of calls on the two weight slices (R = 2, q = 0, 1, slices G apart
//     in rows of 2G), with strides from real plans: the result equals the plain product
//     w vec^T, batch rows past nb (NaN-filled) never leak into a result, nothing outside
//     the call's results is written, no load leaves the staged rows (the plan's padding),
//     and every bf16 word load is 4-byte aligned.
//     Tolerance: exact. Operands are integers in [-8, 8] (exact in bf16 and TF32), so
//     every partial sum is an integer below 2^24 and any summation order (the tensor
//     core's is unspecified) gives the same fp32 value.
//  3. The fragment loads of real plans' strides are free of shared-memory bank conflicts:
//     for each register, the 32 lanes' 32-bit words fall in 32 distinct banks.
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

// ---- mma_dots, step by step as the kernel runs it, every address from lstm_persistent_mma.h.
static void host_mma_dots(const operands *w, int wstride, int mrows, const operands *vec, int vstride, int nb, int K,
                          float *acc, int nrows, int R, int q) {
    const int epr = epr_of(w->kind), warps = SK_PLSTM_THREADS / 32;
    const int tiles = sk_plstm_mma_tiles(mrows, nb);
    for (int warp = 0; warp < warps; warp++)
        for (int d = warp; d < tiles; d += warps) {
            int m0, n0;
            sk_plstm_mma_tile_origin(d, nb, &m0, &n0);
            float c[32][4] = {{0}};
            for (int k0 = 0; k0 < K; k0 += kstep_of(w->kind)) {
                uint32_t a[32][4], b[32][2];
                for (int lane = 0; lane < 32; lane++) {
                    for (int r = 0; r < 4; r++) {
                        const int off = sk_plstm_mma_a_row(lane, r) * wstride + sk_plstm_mma_a_col(lane, r, epr);
                        a[lane][r] = frag_at(w, (size_t)m0 * wstride + off + k0);
                    }
                    for (int r = 0; r < 2; r++) {
                        const int off = sk_plstm_mma_b_row(lane) * vstride + sk_plstm_mma_b_col(lane, r, epr);
                        b[lane][r] = frag_at(vec, (size_t)n0 * vstride + off + k0);
                    }
                }
                mma_emulate(w->kind, a, b, c);
            }
            for (int lane = 0; lane < 32; lane++)
                for (int r = 0; r < 4; r++) {
                    const int m = m0 + sk_plstm_mma_c_row(lane, r), n = n0 + sk_plstm_mma_c_col(lane, r);
                    if (m < mrows && n < nb) acc[sk_plstm_acc_index(n, m, nrows, R, q)] = c[lane][r];
                }
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

// One problem in a kernel's layout: R calls (forward 1; backward 2, or 1 at the top layer),
// call q on weight slice q and staged slice q, both at column q*G of rows of `stride`
// elements; each slice holds klen real columns and zeros up to the instruction's K; mrows
// real weight rows and zero rows up to 16; nb batch rows and NaN rows up to 8.
static int run_problem(int kind, sk_rng *r, int mrows, int nb, int klen, int R, int stride, int G) {
    const int kstep = kstep_of(kind), Kp = (klen + kstep - 1) / kstep * kstep;
    const int wrows = (mrows + 15) / 16 * 16, brows = (nb + 7) / 8 * 8;
    buffer w = buffer_new(kind, wrows * stride), v = buffer_new(kind, brows * stride);
    for (int m = 0; m < wrows; m++)
        for (int i = 0; i < stride; i++)
            buffer_set(&w, m * stride + i, m < mrows && i % G < klen ? (float)rand_int(r, -8, 8) : 0.0f);
    for (int n = 0; n < brows; n++)
        for (int i = 0; i < stride; i++)
            buffer_set(&v, n * stride + i, n >= nb ? NAN : i % G < klen ? (float)rand_int(r, -8, 8) : 0.0f);
    const int nrows = mrows * R, total = brows * nrows + 64;
    float *acc = malloc((size_t)total * sizeof(float));
    if (!acc) exit(1);
    for (int i = 0; i < total; i++) acc[i] = -12345.0f; // the sentinel: untouched
    for (int q = 0; q < R; q++) { // as the kernels call it: w + q*G, vec + q*G
        operands wq = ops_of(&w), vq = ops_of(&v);
        if (kind == BF16) wq.h += (size_t)q * G, vq.h += (size_t)q * G;
        else wq.f += (size_t)q * G, vq.f += (size_t)q * G;
        wq.n -= (size_t)q * G, vq.n -= (size_t)q * G;
        host_mma_dots(&wq, stride, mrows, &vq, stride, nb, Kp, acc, nrows, R, q);
    }
    int bad = 0;
    for (int i = 0; i < total; i++) {
        const int n = i / nrows, m = (i % nrows) / R, q = (i % nrows) % R;
        if (n < nb) { // a result: row m of slice q times batch row n
            double ref = 0.0;
            for (int k = 0; k < klen; k++) ref += (double)w.val[m * stride + q * G + k] * v.val[n * stride + q * G + k];
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
            bad = run_problem(kind, r, 4 * nu, nb, in + H, 1, p.kstride, p.kstride);
            many_tiles += sk_plstm_mma_tiles(4 * nu, nb) > SK_PLSTM_THREADS / 32;
        } else { // nu units' columns of W_hh_k and W_ih_{k+1} (R = 2; the top layer R = 1), K = 4H
            const int nb = full ? (p.bc_bwd < B ? p.bc_bwd : B) : rand_int(r, 1, p.bc_bwd < B ? p.bc_bwd : B), R = rand_int(r, 1, 2);
            bad = run_problem(kind, r, nu, nb, 4 * H, R, 2 * p.gstride, p.gstride);
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
    printf("%s: %d random problems (%d backward, %d with more tiles than warps), %ld results, %d failed, %d "
           "misaligned word loads, %d loads out of bounds, %d ownership errors\n", kind_name[kind], problems, bwd,
           many_tiles, results_checked, failed, misaligned, out_of_bounds, ownership_errors);
    CHECK(failed == 0 && misaligned == 0 && out_of_bounds == 0 && ownership_errors == 0);
    CHECK(results_checked > 100000 && many_tiles > 100); // the problems are not trivially small
    results_checked = 0;
}

// ---- 3. Bank conflicts of the fragment loads at real plans' strides.
static int conflict_free_loads(int kind, int stride_elems) {
    const int epr = epr_of(kind);
    for (int r = 0; r < 4; r++) {
        unsigned banks_a = 0, banks_b = 0;
        for (int lane = 0; lane < 32; lane++) {
            const int a = sk_plstm_mma_a_row(lane, r) * stride_elems + sk_plstm_mma_a_col(lane, r, epr);
            const int b = sk_plstm_mma_b_row(lane) * stride_elems + sk_plstm_mma_b_col(lane, r & 1, epr);
            banks_a |= 1u << ((a / epr) % 32);
            banks_b |= 1u << ((b / epr) % 32);
        }
        if (banks_a != 0xffffffffu || banks_b != 0xffffffffu) return 0;
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
        if (!conflict_free_loads(kind, p.kstride) || !conflict_free_loads(kind, 2 * p.gstride)) {
            if (conflicted++ < 5) printf("%s: bank conflicts at Kf %d, 2G %d\n", kind_name[kind], p.kstride, 2 * p.gstride);
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
