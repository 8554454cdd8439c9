// precision_tolerance.h: the tolerances of the GPU tests per --precision, derived from the
// operands' unit roundoff (shared by test_cuda_parity.c and rnn_pair.h's low-precision
// training runs).
// defines: precision_tol, precision_tol_of
//
// Unit roundoff u (round to nearest, p significant bits: u = 2^-p):
//   fp32: 24 bits, u = 6.0e-8; TF32: 11 bits (10 stored), u = 4.9e-4; bf16: 8 bits (7
//   stored), u = 3.9e-3.
// tf32 and bf16 (derivation; fp32 keeps the tolerances of test_cuda_parity.c, which come
// from summation order, not operand rounding):
//   - one dot product of K terms whose two operands are each rounded to u: every product
//     errs by at most 2u of itself; with independent rounding errors the sum's error has a
//     standard deviation of about sqrt(2/3) u sqrt(K) sigma_term, while the sum itself is
//     about sqrt(K) sigma_term: ~0.8u of the result's typical size whatever K, and the
//     largest of the B*T*H elements (~4.5 standard deviations) stays within ~1u of the
//     tensor's max |value|, which is what atol is scaled by. The fp32 accumulation adds
//     ~K * 6e-8 relative at worst, negligible here (K <= 2*256).
//   - forward: the cell state remembers an error with the forget gate (~0.5 at PyTorch's
//     initialization: sum of 0.5^k = 2), h feeds it into the next step and layer (x2), and
//     the output layer's GEMM rounds again (TF32 in both, +1u): atol 8u * scale, rtol 8u;
//     the loss (an average over B*T rows) rtol 8u.
//   - gradients: the forward's gate errors enter every gate gradient and the backward
//     recurrence rounds its own operands again (bf16 gate gradients and weights in the
//     persistent kernel, TF32 in cuDNN), then the weight GEMMs over B*T rows round in TF32:
//     twice the forward's, atol 16u * scale, rtol 16u; the gradient norm rtol 16u.
//   - the parameters after one AdamW step, GPU vs CPU: compared where |g| >= gmin * max|g|
//     with gmin = 10 * grad atol, at most 0.5 (tf32: 0.078, bf16: 0.5), so that the
//     gradient's relative error there is at most 1/10 (tf32) or 1/8 (bf16) plus rtol, and
//     Adam's update, about lr in size, errs relatively no more than its gradient: atol
//     0.2 * lr. fp32: where |g| >= 1e-3 max|g|, atol 0.05 * lr (test_cuda_parity.c). (The
//     optimizer itself is checked bitwise in every precision: the GPU's AdamW against
//     sk_adam_update fed the GPU's own gradients.)
// A wrong gate, transposed weight or lost bias errs by O(scale): still far outside even
// bf16's 16u = 6.3e-2. Every comparison prints its worst element as a fraction of its
// tolerance, so each GPU run shows the margins these bounds leave.
#ifndef SK_PRECISION_TOLERANCE_H
#define SK_PRECISION_TOLERANCE_H

#include "shakespeare/backend.h"

typedef struct {
    double u;                   // operand unit roundoff
    double fwd_atol, fwd_rtol;  // logits, h, c (atol times the tensor's max |value|)
    double loss_rtol;           // the loss sum
    double grad_atol, grad_rtol; // every gradient tensor (atol times its max |value|)
    double norm_rtol;           // the gradient norm
    double adam_gmin;           // compare params after a step where |g| >= adam_gmin * max|g|
    double adam_atol_lr;        // ... to adam_atol_lr * lr
} precision_tol;

static inline precision_tol precision_tol_of(sk_precision p) {
    if (p == SK_PRECISION_FP32) return (precision_tol){5.96e-8, 1e-5, 1e-4, 1e-5, 1e-4, 1e-3, 1e-4, 1e-3, 0.05};
    const double u = p == SK_PRECISION_TF32 ? 4.8828125e-4 /* 2^-11 */ : 3.90625e-3 /* 2^-8 */;
    const double gmin = 10 * 16 * u < 0.5 ? 10 * 16 * u : 0.5;
    return (precision_tol){u, 8 * u, 8 * u, 8 * u, 16 * u, 16 * u, 16 * u, gmin, 0.2};
}

#endif
