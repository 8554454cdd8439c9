// mma_ptx.h: mma.sync emulated on the host from the PTX ISA's fragment tables, for
// tests/test_plstm_mma.c (the fragment addressing alone) and tests/emu/cuda_emu.cpp (whole
// kernels). C and C++.
// defines: SK_PTX_BF16, SK_PTX_TF32, sk_ptx_epr, sk_ptx_kstep, sk_ptx_a, sk_ptx_b, sk_ptx_c,
//          sk_ptx_from_bf16, sk_ptx_tf32_rna, sk_ptx_from_u32, sk_ptx_mma
//
// The tables are transcribed from the PTX ISA (Parallel Thread Execution ISA, section
// 9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with floating point type", .bf16 A, B and
// the fp32 accumulators; section 9.7.14.5.7 "Matrix Fragments for mma.m16n8k8", .tf32 A and
// B and its accumulators), in the ISA's own element-index form, independently of
// kernels/lstm_persistent_mma.h's register-offset form. Semantics: D = A * B + C, A 16 x k
// row-major, B k x 8 "col".
#ifndef SK_TESTS_MMA_PTX_H
#define SK_TESTS_MMA_PTX_H

#include <stdint.h>
#include <string.h>

enum { SK_PTX_BF16 = 0, SK_PTX_TF32 = 1 };
static inline int sk_ptx_epr(int kind) { return kind == SK_PTX_BF16 ? 2 : 1; }    // elements per register
static inline int sk_ptx_kstep(int kind) { return kind == SK_PTX_BF16 ? 16 : 8; } // the instruction's k

// Element i of a lane's fragment (g = groupID = lane >> 2, c = threadID_in_group = lane % 4);
// the registers hold elements low to high, epr per register.
static inline void sk_ptx_a(int kind, int lane, int i, int *row, int *col) {
    const int g = lane >> 2, c = lane % 4;
    if (kind == SK_PTX_BF16) { // a0..a7
        *row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
        *col = i < 4 ? c * 2 + (i & 1) : c * 2 + (i & 1) + 8;
    } else { // a0..a3
        *row = (i == 0 || i == 2) ? g : g + 8;
        *col = (i == 0 || i == 1) ? c : c + 4;
    }
}
static inline void sk_ptx_b(int kind, int lane, int i, int *row, int *col) {
    const int g = lane >> 2, c = lane % 4;
    if (kind == SK_PTX_BF16) *row = i < 2 ? c * 2 + (i & 1) : c * 2 + (i & 1) + 8; // b0..b3
    else *row = i == 0 ? c : c + 4;                                                 // b0, b1
    *col = g;
}
static inline void sk_ptx_c(int lane, int i, int *row, int *col) { // c0..c3, fp32, both shapes
    const int g = lane >> 2, c = lane % 4;
    *row = i < 2 ? g : g + 8;
    *col = c * 2 + (i & 1);
}

static inline float sk_ptx_from_u32(uint32_t u) {
    float v;
    memcpy(&v, &u, 4);
    return v;
}
static inline float sk_ptx_from_bf16(uint16_t h) { return sk_ptx_from_u32((uint32_t)h << 16); }
// cvt.rna.tf32.f32: keep 10 mantissa bits, to nearest, ties away from zero; NaN and infinity
// pass unchanged, as the hardware keeps them (rounding the all-ones NaN that emulated device
// memory starts as would give +0 and hide a read of memory nobody wrote).
static inline uint32_t sk_ptx_tf32_rna(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    return (u & 0x7f800000u) == 0x7f800000u ? u : (u + 0x1000u) & 0xffffe000u;
}

// One mma.sync of a warp: a[32][4], b[32][2] fragment registers; d[32][4] += A B, summed in
// double and rounded once. Returns how many tile elements are not owned by exactly one
// (lane, register, half): 0 when the tables are a partition, as the ISA's are.
static inline int sk_ptx_mma(int kind, const uint32_t a[32][4], const uint32_t b[32][2], float d[32][4]) {
    const int K = sk_ptx_kstep(kind), epr = sk_ptx_epr(kind);
    double A[16][16], B[16][8], C[16][8];
    int seen_a[16][16], seen_b[16][8], seen_c[16][8], errors = 0;
    memset(seen_a, 0, sizeof seen_a), memset(seen_b, 0, sizeof seen_b), memset(seen_c, 0, sizeof seen_c);
    for (int lane = 0; lane < 32; lane++) {
        for (int i = 0; i < 4 * epr; i++) {
            int r, c;
            sk_ptx_a(kind, lane, i, &r, &c);
            const uint32_t reg = a[lane][i / epr];
            A[r][c] = kind == SK_PTX_BF16 ? sk_ptx_from_bf16((uint16_t)(i % 2 ? reg >> 16 : reg & 0xffffu))
                                          : sk_ptx_from_u32(reg & 0xffffe000u);
            seen_a[r][c]++;
        }
        for (int i = 0; i < 2 * epr; i++) {
            int r, c;
            sk_ptx_b(kind, lane, i, &r, &c);
            const uint32_t reg = b[lane][i / epr];
            B[r][c] = kind == SK_PTX_BF16 ? sk_ptx_from_bf16((uint16_t)(i % 2 ? reg >> 16 : reg & 0xffffu))
                                          : sk_ptx_from_u32(reg & 0xffffe000u);
            seen_b[r][c]++;
        }
        for (int i = 0; i < 4; i++) {
            int r, c;
            sk_ptx_c(lane, i, &r, &c);
            C[r][c] = d[lane][i];
            seen_c[r][c]++;
        }
    }
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 8; c++) {
            if (seen_c[r][c] != 1) errors++;
            for (int k = 0; k < K; k++) {
                if (seen_b[k][c] != 1 || (c == 0 && seen_a[r][k] != 1)) errors++;
                C[r][c] += A[r][k] * B[k][c];
            }
        }
    for (int lane = 0; lane < 32; lane++)
        for (int i = 0; i < 4; i++) {
            int r, c;
            sk_ptx_c(lane, i, &r, &c);
            d[lane][i] = (float)C[r][c];
        }
    return errors;
}

#endif
