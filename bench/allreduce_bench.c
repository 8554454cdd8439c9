// allreduce_bench: time of the in-place all-reduce of a gradient buffer through the
// communicator (comm.h), as the trainer calls it between backward and the norm.
//   mpirun -np N allreduce_bench FLOATS [FLOATS...]    (scripts/bench_mpi.sh runs it)
// For each size: 3 untimed calls, then 20 timed ones; rank 0 prints the fastest and the
// median call and the bus bandwidth 2(N-1)/N * bytes / fastest (what a ring all-reduce
// moves per rank). On a shared machine the fastest call is the hardware's cost; the median
// includes waiting for a rank that the scheduler has set aside.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "shakespeare/comm.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    sk_comm *c;
    sk_error err;
    if (sk_comm_init(&c, &argc, &argv, NULL, 0, &err) != SK_OK) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    const int N = sk_comm_size(c), rank = sk_comm_rank(c);
    for (int a = 1; a < argc; a++) {
        size_t n = strtoull(argv[a], NULL, 10);
        float *g = malloc(sizeof(float) * (n ? n : 1));
        if (!g) return 1;
        for (size_t i = 0; i < n; i++) g[i] = (float)((i + (size_t)rank) % 7) * 1e-3f;
        double t[20];
        for (int k = -3; k < 20; k++) {
            double t0 = now_s();
            if (sk_comm_allreduce_sum_f32(c, g, n, 0, &err) != SK_OK) {
                fprintf(stderr, "error: %s\n", err.msg);
                return 1;
            }
            if (k >= 0) t[k] = now_s() - t0;
        }
        qsort(t, 20, sizeof t[0], cmp_double);
        double med = 0.5 * (t[9] + t[10]), bytes = 4.0 * (double)n;
        if (rank == 0)
            printf("allreduce ranks=%d floats=%zu bytes=%.0f min_ms=%.3f median_ms=%.3f busbw_GBps=%.2f\n", N, n,
                   bytes, t[0] * 1e3, med * 1e3, N > 1 && t[0] > 0 ? 2.0 * (N - 1) / N * bytes / t[0] / 1e9 : 0.0);
        free(g);
    }
    sk_comm_free(c);
    return 0;
}
