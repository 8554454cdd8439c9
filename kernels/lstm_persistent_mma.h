// lstm_persistent_mma.h: where each lane of a warp loads its mma.sync fragments from and
// stores its results to in the persistent LSTM's tensor-core inner products (mma_dots in
// lstm_persistent_dots.cuh), as integer arithmetic in C that runs on the host and the
// device, so that tests/test_plstm_mma.c checks it against the PTX ISA's fragment tables
// without a GPU. mma_dots computes its addresses with these functions and nothing else.
// defines: sk_plstm_mma_a_row, sk_plstm_mma_a_col, sk_plstm_mma_b_row,
//          sk_plstm_mma_b_col, sk_plstm_ldm_a_row, sk_plstm_ldm_a_col, sk_plstm_ldm_b_row, sk_plstm_ldm_b_col, sk_plstm_mma_c_row, sk_plstm_mma_c_col, sk_plstm_mma_tiles,
//          sk_plstm_mma_tile_origin, sk_plstm_mma_split, sk_plstm_mma_kbegin,
//          sk_plstm_mma_scratch_index, sk_plstm_acc_index, sk_plstm_mma_part_sum
//
// The product: C (mrows x nb) = w (mrows x K) vec^T, w row-major (the weight slice, row
// stride wstride), vec row-major (the staged batch rows, row stride vstride): the mma's A
// is a 16 x k tile of w, its B (k x 8, "col" layout) is B[k][n] = vec[n][k], its C a 16 x 8
// tile of the result. `epr` is the operand elements per 32-bit register: 2 for bf16
// (m16n8k16, K step 16), 1 for TF32 (m16n8k8, K step 8). A register holding two bf16
// elements is one aligned 32-bit word of a row, the lower column in the low half; a TF32
// register is one fp32 element (rounded to TF32 as it is loaded). With g = lane / 4 and
// c = lane % 4 (the PTX ISA's groupID and threadID_in_group), register r of a lane holds:
//   A: row g + 8*(r & 1), columns from epr*c + 4*epr*(r >> 1) (r < 4)
//   B: batch row (n) g, k from epr*c + 4*epr*r (r < 2)
//   C: row g + 8*(r >> 1), column 2c + (r & 1) (r < 4, fp32)
// relative to the tile's corner (m0, k0), (k0, n0), (m0, n0). The test derives the same
// ownership from the PTX ISA's tables (9.7.14.5.7, .8) and checks that these loads give the
// mma exactly the tiles of w and vec.
#ifndef SK_LSTM_PERSISTENT_MMA_H
#define SK_LSTM_PERSISTENT_MMA_H

#include <stddef.h>

#include "lstm_persistent_plan.h" // SK_HOST_DEVICE; the strides these offsets are used with

#ifdef __cplusplus
extern "C" {
#endif

// A: register r (0..3) of `lane` starts at w[m0 + a_row][k0 + a_col] (epr elements).
static inline SK_HOST_DEVICE int sk_plstm_mma_a_row(int lane, int r) { return (lane >> 2) + 8 * (r & 1); }
static inline SK_HOST_DEVICE int sk_plstm_mma_a_col(int lane, int r, int epr) {
    return epr * (lane & 3) + 4 * epr * (r >> 1);
}
// B: register r (0..1) of `lane` starts at vec[n0 + b_row][k0 + b_col] (epr elements).
static inline SK_HOST_DEVICE int sk_plstm_mma_b_row(int lane) { return lane >> 2; }
static inline SK_HOST_DEVICE int sk_plstm_mma_b_col(int lane, int r, int epr) { return epr * (lane & 3) + 4 * epr * r; }
// ldmatrix (mma_dots' fragment loads: .x4 for A, .x2 for B): the row `lane` addresses, as an
// offset from the tile's corner. Matrix m (8 rows of 16 bytes) is fragment register m, and
// lanes 8m..8m+7 give its rows: A's matrix m starts 8 (m & 1) rows and 4 epr (m >> 1)
// elements in, B's matrix m (lanes 0..15; the rest repeat them) 4 epr m elements in. Lane l then
// receives word l % 4 of row l / 4: register r's element of sk_plstm_mma_a_row/col
// (tests/test_plstm_mma.c holds the two to each other).
static inline SK_HOST_DEVICE int sk_plstm_ldm_a_row(int lane) { return (lane & 7) + 8 * ((lane >> 3) & 1); }
static inline SK_HOST_DEVICE int sk_plstm_ldm_a_col(int lane, int epr) { return 4 * epr * ((lane >> 4) & 1); }
static inline SK_HOST_DEVICE int sk_plstm_ldm_b_row(int lane) { return lane & 7; }
static inline SK_HOST_DEVICE int sk_plstm_ldm_b_col(int lane, int epr) { return 4 * epr * ((lane >> 3) & 1); }
// C/D: accumulator register r (0..3) of `lane` is C[m0 + c_row][n0 + c_col].
static inline SK_HOST_DEVICE int sk_plstm_mma_c_row(int lane, int r) { return (lane >> 2) + 8 * (r >> 1); }
static inline SK_HOST_DEVICE int sk_plstm_mma_c_col(int lane, int r) { return 2 * (lane & 3) + (r & 1); }

// The 16 x 8 tiles covering mrows x nb of each of R slices, and tile d's slice q and corner
// (row m0, batch row n0); tiles are numbered slice major, then row-tile major.
static inline SK_HOST_DEVICE int sk_plstm_mma_tiles(int mrows, int nb) { return ((mrows + 15) / 16) * ((nb + 7) / 8); }
static inline SK_HOST_DEVICE void sk_plstm_mma_tile_origin(int d, int mrows, int nb, int *q, int *m0, int *n0) {
    const int nt = (nb + 7) / 8, per_slice = sk_plstm_mma_tiles(mrows, nb);
    *q = d / per_slice;
    d %= per_slice;
    *m0 = d / nt * 16;
    *n0 = d % nt * 8;
}

// The warps' work: `tiles` tiles of `ksteps` instruction K steps each. With at least as many
// tiles as warps, a warp takes tiles warp, warp + warps, ... whole. With fewer (the
// backward's chunks of 8 batch rows at configuration B make 2 tiles for 8 warps), each
// tile's K steps are cut into `split` parts, part p the steps [kbegin(p), kbegin(p + 1)),
// one warp per (tile, part) = work item tile * split + p, and the block adds the parts'
// partial sums in part order (scratch, below). Either way a result's summation order
// depends on the shape alone, never on scheduling.
static inline SK_HOST_DEVICE int sk_plstm_mma_split(int tiles, int ksteps, int warps) {
    if (tiles >= warps) return 1;
    const int s = warps / tiles;
    return s < ksteps ? s : ksteps;
}
static inline SK_HOST_DEVICE int sk_plstm_mma_kbegin(int part, int split, int ksteps) {
    return (int)((long long)part * ksteps / split);
}
// Where work item `item` leaves accumulator register r of `lane` (split > 1): 32 consecutive
// floats per register, so a warp's stores and the block's reads are free of bank conflicts.
// Items < warps, so SK_PLSTM_MMA_SCRATCH_BYTES holds them all.
static inline SK_HOST_DEVICE int sk_plstm_mma_scratch_index(int item, int r, int lane) { return (item * 4 + r) * 32 + lane; }

// Where the inner products leave result (weight row m of slice q, batch row n): acc is
// [batch row][nrows], and slice q's rows are every R-th row from q (the backward kernel's
// two weight slices, R = 2 below the top layer; the forward R = 1, q = 0).
static inline SK_HOST_DEVICE size_t sk_plstm_acc_index(int n, int m, int nrows, int R, int q) {
    return (size_t)n * (size_t)nrows + (size_t)m * (size_t)R + (size_t)q;
}

// The block's reduction after a split (split > 1): result element e < tiles * 128, i.e.
// (tile e / 128, register e / 32 % 4, lane e % 32), is the sum of its parts' partial sums in
// part order; *keep = 0 where it is padding (a row past mrows or a batch row past nb), else
// 1 with *at its acc index.
static inline SK_HOST_DEVICE float sk_plstm_mma_part_sum(const float *scratch, int e, int split, int mrows, int nb,
                                                        int R, int *keep, size_t *at) {
    const int d = e / 128, r = e / 32 % 4, lane = e % 32;
    float v = scratch[sk_plstm_mma_scratch_index(d * split, r, lane)];
    for (int p = 1; p < split; p++) v += scratch[sk_plstm_mma_scratch_index(d * split + p, r, lane)];
    int q, m0, n0;
    sk_plstm_mma_tile_origin(d, mrows, nb, &q, &m0, &n0);
    const int m = m0 + sk_plstm_mma_c_row(lane, r), n = n0 + sk_plstm_mma_c_col(lane, r);
    *keep = m < mrows && n < nb;
    *at = sk_plstm_acc_index(n, m, mrows * R, R, q);
    return v;
}

#ifdef __cplusplus
}
#endif

#endif
