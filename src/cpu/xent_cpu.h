// xent_cpu.h: the CPU backend's softmax cross-entropy, one row of logits at a time (private;
// the CUDA backend's softmax_xent kernel mirrors it, tests/emu checks that it does).
// defines: sk_xent_row_sumexp, sk_xent_row_loss, sk_xent_row_dlogits
#ifndef SK_XENT_CPU_H
#define SK_XENT_CPU_H

#include <stdint.h>

// The softmax normalizer of one row of logits z (V,): *mx = max z, returns the sum of
// exp((double)(z[v] - mx)) in double, in index order.
double sk_xent_row_sumexp(const float *z, int V, float *mx);

// -log softmax(z)[y], formed in double (log(s) + max - z_y) and rounded to float once.
float sk_xent_row_loss(const float *z, int V, int32_t y);

// d (V,) = (softmax(z) - onehot(y)) * inv_n: each probability rounded to float, times inv_n,
// minus inv_n at y.
void sk_xent_row_dlogits(const float *z, int V, int32_t y, float inv_n, float *d);

#endif
