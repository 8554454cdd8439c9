// parallel.c: fork-join spans over pthreads, and a row-split SGEMM (see parallel.h).
#include "parallel.h"

#include <pthread.h>

typedef struct {
    void (*fn)(void *ctx, int i, int n);
    void *ctx;
    int i, n;
} span_arg;

static void *run_span(void *p) {
    span_arg *a = p;
    a->fn(a->ctx, a->i, a->n);
    return NULL;
}

void sk_parallel_for(int n, void (*fn)(void *ctx, int i, int n), void *ctx) {
    if (n < 1) n = 1;
    if (n > SK_MAX_THREADS) n = SK_MAX_THREADS;
    span_arg args[SK_MAX_THREADS];
    pthread_t tid[SK_MAX_THREADS];
    int started[SK_MAX_THREADS] = {0};
    for (int i = 0; i < n; i++) args[i] = (span_arg){fn, ctx, i, n};
    for (int i = 1; i < n; i++) started[i] = pthread_create(&tid[i], NULL, run_span, &args[i]) == 0;
    fn(ctx, 0, n);
    for (int i = 1; i < n; i++) {
        if (started[i]) pthread_join(tid[i], NULL);
        else fn(ctx, i, n); // no thread to be had: run that span here
    }
}

typedef struct {
    enum CBLAS_TRANSPOSE ta, tb;
    int M, N, K, lda, ldb, ldc;
    float alpha, beta;
    const float *A, *B;
    float *C;
} gemm_job;

static void gemm_span(void *ctx, int i, int n) {
    const gemm_job *g = ctx;
    int m0 = (int)((long)g->M * i / n), m1 = (int)((long)g->M * (i + 1) / n);
    if (m1 <= m0) return;
    // Rows m0.. of op(A): rows of A, or columns of A when it is transposed.
    const float *A = g->ta == CblasNoTrans ? g->A + (size_t)m0 * g->lda : g->A + m0;
    cblas_sgemm(CblasRowMajor, g->ta, g->tb, m1 - m0, g->N, g->K, g->alpha, A, g->lda, g->B, g->ldb, g->beta,
                g->C + (size_t)m0 * g->ldc, g->ldc);
}

void sk_sgemm_rows(int threads, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M, int N, int K, float alpha,
                   const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    if (M == 1) { // one row (batch-1 inference, one step): a matrix-vector product, no packing
        const int inc_a = ta == CblasNoTrans ? 1 : lda;
        if (tb == CblasTrans) cblas_sgemv(CblasRowMajor, CblasNoTrans, N, K, alpha, B, ldb, A, inc_a, beta, C, 1);
        else cblas_sgemv(CblasRowMajor, CblasTrans, K, N, alpha, B, ldb, A, inc_a, beta, C, 1);
        return;
    }
    gemm_job g = {.ta = ta, .tb = tb, .M = M, .N = N, .K = K, .lda = lda, .ldb = ldb, .ldc = ldc, .alpha = alpha,
                  .beta = beta, .A = A, .B = B, .C = C};
    // Below ~1 MFLOP per span, a thread costs more than it brings.
    long flops_per_row = 2L * N * K;
    int n = threads;
    while (n > 1 && flops_per_row * (M / n) < 1000000) n--;
    if (n <= 1) gemm_span(&g, 0, 1);
    else sk_parallel_for(n, gemm_span, &g);
}
