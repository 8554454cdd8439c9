// test_cpu_lstm_choice.c: the CPU's LSTM chosen by measurement, cached (src/cpu/lstm_cpu_tune.h),
// on a small stack (B=4, T=6, E=5, H=8, L=2, one thread):
//  1. every kind that runs here times to a positive median; one that cannot (bf16 without bf16
//     dot products or without oneDNN) is refused with its reason;
//  2. without a cache the choice is the fastest candidate measured, and it is appended to
//     DIR/cpu-lstm-choice.txt;
//  3. with a cache line for the key the choice is read, not measured: a line written by hand
//     naming each kind in turn is the choice whatever the timings, with its recorded times
//     (the choice is deterministic given the file); lines for other keys and malformed lines
//     are passed over; a candidate mask with a single kind takes it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/lstm_cpu_tune.h"
#include "cpu/lstm_onednn.h"
#include "test_util.h"

int main(void) {
    sk_error err = {{0}};
    const sk_cpu_lstm_shape s = {.B = 4, .T = 6, .E = 5, .H = 8, .L = 2, .threads = 1};
    char why[256];
    const int bf16 = sk_onednn_bf16_check(why, sizeof why);
    unsigned runs = 0;
    for (int k = 0; k < SK_CPU_LSTM_KINDS; k++) {
        double ms = -1.0;
        sk_status st = sk_cpu_lstm_time((sk_cpu_lstm_kind)k, &s, 3, &ms, &err);
        printf("1. %-12s %s\n", sk_cpu_lstm_kind_name((sk_cpu_lstm_kind)k), st == SK_OK ? "runs" : err.msg);
        if (st == SK_OK) {
            CHECK(ms > 0.0);
            runs |= 1u << k;
        } else {
            CHECK(st == SK_ERR_ARG && (k == SK_CPU_LSTM_ONEDNN_BF16 ? !bf16 : strstr(err.msg, "libdnnl-dev") != NULL));
        }
    }
    CHECK(runs & 1u); // the reference recurrence runs everywhere

    char dir[256], path[512];
    sk_test_tmpdir(dir, sizeof dir, "lstm-choice");
    snprintf(path, sizeof path, "%s/cpu-lstm-choice.txt", dir);
    sk_cpu_lstm_kind got = SK_CPU_LSTM_ONEDNN_BF16;
    double ms[SK_CPU_LSTM_KINDS];
    int cached = -1;
    CHECK_OK(sk_cpu_lstm_choose(&s, 7u, dir, 3, &got, ms, &cached, &err));
    CHECK(cached == 0 && (runs & (1u << got)));
    for (int k = 0; k < SK_CPU_LSTM_KINDS; k++)
        if (runs & (1u << k)) CHECK(ms[k] > 0.0 && ms[got] <= ms[k]);
    printf("2. measured: %s (%.3f, %.3f, %.3f ms)\n", sk_cpu_lstm_kind_name(got), ms[0], ms[1], ms[2]);
    FILE *f = fopen(path, "r");
    char line[1024] = "";
    CHECK(f && fgets(line, sizeof line, f) && strstr(line, sk_cpu_lstm_kind_name(got)));
    if (f) fclose(f);

    // The key is the file's one line up to " choice=": write lines of our own under it.
    char *cut = strstr(line, " choice=");
    CHECK(cut != NULL);
    if (!cut) return sk_test_done("test_cpu_lstm_choice");
    *cut = '\0';
    for (int k = 0; k < SK_CPU_LSTM_KINDS; k++) {
        f = fopen(path, "w");
        fprintf(f, "cpu=other threads=1 B=4 choice=xsmm-fp32 ms=1,2,3\n%s choice=bogus ms=1,2,3\n%s choice=%s\n", line,
                line, "onednn-fp32");
        fprintf(f, "%s choice=%s ms=%d.5,7,8\n", line, sk_cpu_lstm_kind_name((sk_cpu_lstm_kind)k), k);
        fclose(f);
        cached = -1;
        CHECK_OK(sk_cpu_lstm_choose(&s, 7u, dir, 3, &got, ms, &cached, &err));
        printf("3. cache names %s: chose %s, cached %d\n", sk_cpu_lstm_kind_name((sk_cpu_lstm_kind)k),
               sk_cpu_lstm_kind_name(got), cached);
        CHECK(cached == 1 && (int)got == k && ms[0] == k + 0.5 && ms[1] == 7.0 && ms[2] == 8.0);
    }
    CHECK_OK(sk_cpu_lstm_choose(&s, 1u, NULL, 2, &got, ms, &cached, &err));
    CHECK(cached == 0 && got == SK_CPU_LSTM_XSMM_FP32 && ms[1] == 0.0 && ms[2] == 0.0);
    remove(path);
    rmdir(dir);
    return sk_test_done("test_cpu_lstm_choice");
}
