// recurrent_gemm.h: the per-step recurrent products of a recurrent layer on the CPU (private).
// defines: sk_recur_init, sk_recur_prepare, sk_recur_forward, sk_recur_backward, sk_recur_library
//
// The recurrence multiplies a few rows (a span of streams) by W_hh (GH = G*H rows, G the cell's
// gates) at every step. A CBLAS sgemm re-packs W_hh (GH x H, 1 MB for an LSTM at H = 256) on every call, which halves its speed at
// these shapes. With libxsmm (small-matrix kernels, JIT-compiled for the exact shape, that
// read their operands in place), W_hh is laid out once per window in the form the forward
// kernel reads (its transpose) and the kernels run from there; without libxsmm, or where it
// has no kernel for the CPU, the same products go through CBLAS.
#ifndef SK_RECURRENT_GEMM_H
#define SK_RECURRENT_GEMM_H

// Once per process, thread-safe; harmless without libxsmm.
void sk_recur_init(void);

// Fills w_hh_t (H, GH) = W_hh^T from w_hh (GH, H) for the products of one window; w_hh_t
// may be NULL (CBLAS path, nothing to prepare).
void sk_recur_prepare(int H, int GH, const float *w_hh, float *w_hh_t);

// g (nb, GH) += h_prev (nb, H) W_hh^T. w_hh_t: as filled by sk_recur_prepare, or NULL;
// not read when nb = 1 (a matrix-vector product over W_hh as stored).
void sk_recur_forward(int nb, int H, int GH, const float *w_hh, const float *w_hh_t, const float *h_prev, float *g);

// dh (nb, H) = dg (nb, GH) W_hh.
void sk_recur_backward(int nb, int H, int GH, const float *w_hh, const float *dg, float *dh);

// "libxsmm 1.17" or "CBLAS": what runs the recurrent products in this build.
const char *sk_recur_library(void);

#endif
