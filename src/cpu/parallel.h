// parallel.h: the CPU backend's threading: a fork-join over a fixed number of spans, and
// a matrix product split by output rows (private).
// defines: sk_parallel_for, sk_sgemm_rows
//
// OpenBLAS runs single-threaded inside every call; the backend parallelizes above it. Two
// thread pools (ours and OpenBLAS's) on the same cores spin against each other: OpenBLAS's
// idle workers sched_yield() while our spans run, which cost 20% of a step on 2 cores.
// Spans are fixed by (size, threads), so a run is reproducible for a given thread count.
#ifndef SK_PARALLEL_H
#define SK_PARALLEL_H

#include <cblas.h>

// Most spans one parallel region is split into.
#define SK_MAX_THREADS 64

// Calls fn(ctx, i, n) for i = 0..n-1, each on its own thread (i = 0 on the caller's);
// returns when all are done. n is clamped to [1, SK_MAX_THREADS].
void sk_parallel_for(int n, void (*fn)(void *ctx, int i, int n), void *ctx);

// C = alpha op(A) op(B) + beta C (row-major), with the M rows of C split over at most
// `threads` spans; fewer when a span would get less than about 1 MFLOP of work. M = 1 runs
// as one matrix-vector product (sgemv), which reads op(B) in place.
void sk_sgemm_rows(int threads, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M, int N, int K, float alpha,
                   const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);

#endif
