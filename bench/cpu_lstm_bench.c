// cpu_lstm_bench.c: the CPU's LSTM implementations side by side (src/cpu/lstm_cpu_tune.h): the
// median ms of a forward and backward window of the stack alone, for layer_cpu.c's recurrence
// (libxsmm, fp32) and oneDNN's LSTM primitive in fp32 and bf16, and which one auto would take.
// scripts/bench_cpu.sh runs it; run it on a quiet machine.
//   cpu_lstm_bench B T E H L THREADS [REPS]    (config A: 32 100 128 256 2 2 20)
#include <stdio.h>
#include <stdlib.h>

#include "cpu/lstm_cpu_tune.h"

int main(int argc, char **argv) {
    if (argc < 7 || argc > 8) {
        fprintf(stderr, "usage: cpu_lstm_bench B T E H L THREADS [REPS]\n");
        return 2;
    }
    int v[7] = {0, 0, 0, 0, 0, 0, 20};
    for (int i = 1; i < argc; i++) {
        char *end;
        long x = strtol(argv[i], &end, 10);
        if (*end || x < 1 || x > 1 << 20) {
            fprintf(stderr, "error: argument %d expects a positive integer, got \"%s\"\n", i, argv[i]);
            return 2;
        }
        v[i - 1] = (int)x;
    }
    const sk_cpu_lstm_shape s = {.B = v[0], .T = v[1], .E = v[2], .H = v[3], .L = v[4], .threads = v[5]};
    printf("CPU LSTM stack alone, forward + backward of one window: B=%d T=%d E=%d H=%d L=%d, %d thread(s), median "
           "of %d\n", s.B, s.T, s.E, s.H, s.L, s.threads, v[6]);
    printf("%-14s %10s %14s\n", "implementation", "ms", "tokens/s");
    for (int k = 0; k < SK_CPU_LSTM_KINDS; k++) {
        sk_error err = {{0}};
        double ms = 0.0;
        if (sk_cpu_lstm_time((sk_cpu_lstm_kind)k, &s, v[6], &ms, &err) == SK_OK)
            printf("%-14s %10.2f %14.1f\n", sk_cpu_lstm_kind_name((sk_cpu_lstm_kind)k), ms, s.B * s.T / (ms * 1e-3));
        else
            printf("%-14s %10s  (%s)\n", sk_cpu_lstm_kind_name((sk_cpu_lstm_kind)k), "-", err.msg);
    }
    return 0;
}
