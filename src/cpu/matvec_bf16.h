// matvec_bf16.h: matrix-vector products over bf16 weights with fp32 accumulation, for inference
// in bf16 (private).
// defines: sk_bf16_round, sk_bf16_widen, sk_bf16_pack_rows, sk_matvec_bf16_rows
//
// A bf16 value is the top 16 bits of an fp32 one (8 exponent bits, 8 significant bits): widening
// it to fp32 is a shift, exact, and needs no bf16 instructions, so these products run on any
// x86-64 (or any CPU) and read half the bytes of fp32 weights. The weights are rounded to bf16
// once (round to nearest, ties to even: a relative error of at most 2^-9 each); the inputs, the
// products and the sums stay fp32. The kernel is compiled for AVX-512, AVX2 and a baseline and
// chosen at run time, so a build for any x86-64 runs it at the CPU's width.
#ifndef SK_MATVEC_BF16_H
#define SK_MATVEC_BF16_H

#include <stddef.h>
#include <stdint.h>

// x rounded to bf16, to nearest, ties to even; a NaN stays a (quiet) NaN, values beyond bf16's
// largest finite round to infinity.
uint16_t sk_bf16_round(float x);
// The fp32 value of a bf16 one (exact).
float sk_bf16_widen(uint16_t b);

// The layout the kernel reads: W (G, K) fp32 row-major rounded to bf16 (sk_bf16_round) into dst
// (G, K), each row in blocks of 32 whose 32-bit word j holds elements j (low half) and 16 + j (high
// half) of the block, so that one shift and one mask widen a block into two runs of sixteen fp32
// values in the order of x (no shuffles); the row's last K mod 32 elements stay in order.
void sk_bf16_pack_rows(int G, int K, const float *src, uint16_t *dst);

// Y[b, i] += W[i, :] . X[b, :] for nb streams, W (G, K) as sk_bf16_pack_rows wrote it; X (nb, ldx);
// Y (nb, ldy). Each dot product is summed in fp32 in an order that depends on K only (sixteen lanes
// over k mod 16, then the tail), not on nb: a stream's result does not depend on the streams
// beside it.
void sk_matvec_bf16_rows(int G, int K, const uint16_t *W, int nb, const float *X, int ldx, float *Y, int ldy);

#endif
