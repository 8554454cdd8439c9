// recurrent_gemm.c: a recurrent layer's per-step products, libxsmm or CBLAS (see
// recurrent_gemm.h). libxsmm is column-major: a row-major (r, c) matrix is its (c, r)
// column-major transpose, so, with GH = G*H the rows of W_hh,
//   forward   g^T (GH, nb) += W_hh (GH, H) h_prev^T (H, nb): A = W_hh column-major, which
//             is W_hh^T row-major (w_hh_t), lda GH; B = h_prev as stored, ldb H
//   backward  dh^T (H, nb) = W_hh^T (H, GH) dg^T (GH, nb): A = W_hh as stored, lda H.
#include "recurrent_gemm.h"

#include <cblas.h>
#include <pthread.h>
#include <stddef.h>

#ifdef SK_HAVE_LIBXSMM
#include <libxsmm.h>

static pthread_once_t xsmm_once = PTHREAD_ONCE_INIT;
static void xsmm_init_once(void) { libxsmm_init(); }
void sk_recur_init(void) { pthread_once(&xsmm_once, xsmm_init_once); }

// The kernel for C (m, n) = A (m, k) B (k, n) + beta C, column-major, packed leading
// dimensions; NULL when libxsmm has none (the caller falls back to CBLAS). libxsmm
// caches kernels by shape, so a repeated dispatch is a lookup.
static libxsmm_smmfunction kernel(int m, int n, int k, int lda, int ldb, int ldc, float beta) {
    const float alpha = 1.0f;
    return libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, NULL, NULL);
}

const char *sk_recur_library(void) { return "libxsmm " LIBXSMM_VERSION; }
#else
void sk_recur_init(void) {}
const char *sk_recur_library(void) { return "CBLAS"; }
#endif

void sk_recur_prepare(int H, int GH, const float *w_hh, float *w_hh_t) {
#ifndef SK_HAVE_LIBXSMM
    if (w_hh_t) return; // the CBLAS path reads W_hh as it is
#endif
    if (!w_hh_t) return;
    for (int i = 0; i < GH; i++)
        for (int j = 0; j < H; j++) w_hh_t[(size_t)j * GH + i] = w_hh[(size_t)i * H + j];
}

void sk_recur_forward(int nb, int H, int GH, const float *w_hh, const float *w_hh_t, const float *h_prev, float *g) {
    if (nb == 1) { // one stream (sampling, scoring): a matrix-vector product over W_hh as stored
        cblas_sgemv(CblasRowMajor, CblasNoTrans, GH, H, 1.0f, w_hh, H, h_prev, 1, 1.0f, g, 1);
        return;
    }
#ifdef SK_HAVE_LIBXSMM
    if (w_hh_t) {
        libxsmm_smmfunction f = kernel(GH, nb, H, GH, H, GH, 1.0f);
        if (f) {
            f(w_hh_t, h_prev, g);
            return;
        }
    }
#else
    (void)w_hh_t;
#endif
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nb, GH, H, 1.0f, h_prev, H, w_hh, H, 1.0f, g, GH);
}

void sk_recur_backward(int nb, int H, int GH, const float *w_hh, const float *dg, float *dh) {
    if (nb == 1) {
        cblas_sgemv(CblasRowMajor, CblasTrans, GH, H, 1.0f, w_hh, H, dg, 1, 0.0f, dh, 1);
        return;
    }
#ifdef SK_HAVE_LIBXSMM
    libxsmm_smmfunction f = kernel(H, nb, GH, H, GH, H, 0.0f);
    if (f) {
        f(w_hh, dg, dh);
        return;
    }
#endif
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nb, H, GH, 1.0f, dg, GH, w_hh, H, 0.0f, dh, H);
}
