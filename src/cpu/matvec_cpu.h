// matvec_cpu.h: the batch-invariant matrix-vector products of an inference step (private).
// defines: sk_matvec_rows
//
// Y[b, i] += W[i, :] . X[b, :] for nb streams. Each dot product is summed in one fixed order
// (eight lanes over k mod 8 for k < K8 = K rounded down to 8, the lanes added pairwise, then
// the tail k >= K8 one by one), whatever nb, the thread split or the CPU's vector width: a
// stream's logits, so its sampled text, do not depend on how many streams run beside it.
// W is read once per block of four rows for all nb streams (the block stays in L1).
#ifndef SK_MATVEC_CPU_H
#define SK_MATVEC_CPU_H

// W: (G, K) row-major; X: (nb, ldx); Y: (nb, ldy), accumulated into.
void sk_matvec_rows(int G, int K, const float *W, int nb, const float *X, int ldx, float *Y, int ldy);

#endif
