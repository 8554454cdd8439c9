// lstm_cpu_tune.h: the CPU's LSTM implementations timed against each other and the fastest
// chosen, with the choice cached, as --rnn-impl auto does on a GPU (src/cuda/lstm_autotune.cu)
// (private to src/cpu/).
// defines: sk_cpu_lstm_kind, sk_cpu_lstm_kind_name, sk_cpu_lstm_shape, sk_cpu_lstm_time,
//          sk_cpu_lstm_choose
//
// The candidates: lstm_cpu.c's recurrence (libxsmm, fp32: the reference), and oneDNN's LSTM
// primitive (lstm_onednn.h) in fp32 and in bf16. Each is timed on the stack alone (forward and
// backward over one window from random weights, the median of a few), the part of a training
// step where they differ. The cache is one line per key (the CPU's model name, the threads, the
// shape, the candidates, oneDNN's ISA) in DIR/cpu-lstm-choice.txt: where the key has a line, the
// choice is read from it and nothing is timed, so that a cache file makes the choice deterministic.
#ifndef SK_LSTM_CPU_TUNE_H
#define SK_LSTM_CPU_TUNE_H

#include "shakespeare/status.h"

typedef enum { SK_CPU_LSTM_XSMM_FP32 = 0, SK_CPU_LSTM_ONEDNN_FP32 = 1, SK_CPU_LSTM_ONEDNN_BF16 = 2 } sk_cpu_lstm_kind;
#define SK_CPU_LSTM_KINDS 3

// "xsmm-fp32", "onednn-fp32", "onednn-bf16"; "unknown" otherwise.
const char *sk_cpu_lstm_kind_name(sk_cpu_lstm_kind k);

typedef struct {
    int B, T, E, H, L; // the training window and the stack
    int threads;
} sk_cpu_lstm_shape;

// The median wall time in ms of reps forward+backward windows of kind k after one untimed one.
// SK_ERR_ARG where k cannot run here (oneDNN missing, bf16 without bf16 dot products).
sk_status sk_cpu_lstm_time(sk_cpu_lstm_kind k, const sk_cpu_lstm_shape *s, int reps, double *ms, sk_error *err);

// *out: the fastest of the candidates (a bit mask of 1 << kind) that run here; ms[k] its time
// (0 for those not timed). cache_dir (NULL: no cache): the choice is read from its file when
// the key has a line there (*cached = 1, ms as recorded), else measured and appended.
sk_status sk_cpu_lstm_choose(const sk_cpu_lstm_shape *s, unsigned candidates, const char *cache_dir, int reps,
                             sk_cpu_lstm_kind *out, double ms[SK_CPU_LSTM_KINDS], int *cached, sk_error *err);

#endif
