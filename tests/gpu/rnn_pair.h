// rnn_pair.h: the training runs that the LSTM implementation and precision tests
// (test_cuda_rnn_impls.c, test_cuda_low_precision_tf32.c, test_cuda_low_precision_bf16.c)
// compare: one small model (V=12 E=16 H=64 L=2, dropout 0.2 between the layers and before
// fc, B=4 T=32) trained pair_steps() steps with AdamW and clipping on a learnable stream, each run
// recording its per-step losses, so that a reference run (cuDNN in strict fp32) is run
// once and compared with every candidate.
// defines: V_, E_, H_, L_, B_, T_, STEPS, TAIL, EARLY, EMU_STEPS, pair_steps, pair_window,
//          pair_create_in, pair_create, pair_train, pair_compare, pair_init, pair_case, pair_low_precision
#ifndef SK_RNN_PAIR_H
#define SK_RNN_PAIR_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "shakespeare/backend.h"
#include "gpu_test_util.h"
#include "precision_tolerance.h"
#include "test_util.h"

enum { V_ = 12, E_ = 16, H_ = 64, L_ = 2, B_ = 4, T_ = 32, STEPS = 200, TAIL = 20, EARLY = 10 };

// Steps a run trains: STEPS, or EMU_STEPS on the emulated device (gpu_test_util.h's
// emulated_device), where each persistent-kernel step costs its fibers about as much as a
// whole parity case; the checks below hold there as well (the first EARLY steps against the
// reference, learning, and the last TAIL steps' mean), on a shorter curve.
enum { EMU_STEPS = 60 };
static inline int pair_steps(void) { return emulated_device() ? EMU_STEPS : STEPS; }

// A learnable stream: a short cycle of ids with a slower drift.
static inline int32_t pair_token(int64_t i) { return (int32_t)((i % 7 + (i / 29) % 5) % V_); }

// Window s of every stream: x (B_, T_) and its targets y.
static inline void pair_window(int s, int32_t *x, int32_t *y) {
    for (int b = 0; b < B_; b++)
        for (int t = 0; t < T_; t++) {
            int64_t at = (int64_t)b * 5000 + (int64_t)s * T_ + t;
            x[b * T_ + t] = pair_token(at), y[b * T_ + t] = pair_token(at + 1);
        }
}

static inline sk_backend *pair_create_in(sk_rnn_impl impl, sk_precision prec, sk_tensor_cores tc, int B,
                                         int training) {
    sk_error err = {{0}};
    sk_backend_config cfg = {.model = {.vocab_size = V_, .embed_size = E_, .hidden_size = H_, .num_layers = L_,
                                       .dropout = 0.2f},
                             .batch_size = B, .seq_len = T_,
                             .training = training, .seed = 9, .rnn_impl = impl, .precision = prec,
                             .plstm_tensor_cores = tc};
    sk_backend *be;
    CHECK_OK(sk_backend_create_cuda(&cfg, &be, &err));
    return be;
}

static inline sk_backend *pair_create(sk_rnn_impl impl, int B, int training) {
    return pair_create_in(impl, SK_PRECISION_FP32, SK_TENSOR_CORES_DEFAULT, B, training);
}

// The parameters every run starts from (PyTorch's initialization, seed 3), into p (total,).
static inline void pair_init(const sk_backend *be, float *p) {
    sk_params_init(p, sk_backend_layout(be), SK_INIT_PYTORCH, 0.0f, 1.0f, 3);
}

// pair_steps() training steps of be from parameters p0 on windows 0.., dropout keyed by the step:
// loss[s] the mean loss of step s + 1.
static inline void pair_train(sk_backend *be, const float *p0, double loss[STEPS]) {
    OP_OK(be, sk_backend_set_params(be, p0));
    const sk_optim_hparams hp = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01, .grad_clip = 5.0};
    int32_t x[B_ * T_], y[B_ * T_];
    for (int s = 0; s < pair_steps(); s++) {
        pair_window(s, x, y);
        double l = 0.0, norm = 0.0;
        OP_OK(be, sk_backend_forward(be, x, y, T_, SK_MODE_TRAIN, s + 1, &l));
        OP_OK(be, sk_backend_backward(be));
        OP_OK(be, sk_backend_step(be, &hp, 3e-3f, s + 1, &norm));
        loss[s] = l / (B_ * T_);
    }
}

// Run a's losses against run b's: the first agrees to tol_first relative, the next EARLY - 1
// to tol_early, both learn (the last-TAIL mean below half the first loss), and with
// tail_tol > 0 a's last-TAIL mean is at most b's * (1 + tail_tol).
static inline void pair_compare(const double la[STEPS], const double lb[STEPS], double tol_first, double tol_early,
                                double tail_tol) {
    double tail_a = 0.0, tail_b = 0.0;
    for (int s = 0; s < EARLY; s++) {
        const double bound = s == 0 ? tol_first : tol_early;
        printf("step %3d: loss %.9f against %.9f (relative difference %.2e, bound %.2e)\n", s + 1, la[s], lb[s],
               fabs(la[s] - lb[s]) / lb[s], bound);
        CHECK(fabs(la[s] - lb[s]) <= bound * lb[s]);
    }
    for (int s = pair_steps() - TAIL; s < pair_steps(); s++) tail_a += la[s] / TAIL, tail_b += lb[s] / TAIL;
    printf("last %d steps: mean loss %.6f against %.6f; first %.6f %.6f\n", TAIL, tail_a, tail_b, la[0], lb[0]);
    CHECK(tail_a < 0.5 * la[0] && tail_b < 0.5 * lb[0]);
    if (tail_tol > 0.0) CHECK(tail_a <= (1.0 + tail_tol) * tail_b);
}

// A lower precision's run against the reference (cuDNN in strict fp32).
typedef struct {
    sk_rnn_impl impl;
    sk_precision prec;
    sk_tensor_cores tc;
} pair_case;

// Each case against one reference run of --rnn-impl cudnn --precision fp32, from the same
// parameters: step 1 (identical parameters) agrees to the precision's loss tolerance
// (precision_tolerance.h: tf32 3.9e-3, bf16 3.1e-2), steps 2-10 to 4 times that (the
// parameters now differ by Adam steps from gradients within the gradient tolerance; Adam
// moves each weight by about lr whatever the gradient's size, so they differ where a
// near-zero gradient's sign does, a second-order effect on the loss), both learn, and the
// lower precision no worse (its last-20 mean at most 10% above the fp32 run's). One-sided on
// purpose: past the first steps the runs drift apart chaotically, the more the larger the
// precision's rounding, so a run may as well end lower (bf16 on CUDA cores and on tensor
// cores, identical to 1e-6 over steps 1-10, can end several percent apart). What a lower
// loss could hide (dropout masks not applied) test_cuda_parity checks against the CPU.
static inline void pair_low_precision(const pair_case *cases, size_t n) {
    sk_backend *ref = pair_create(SK_RNN_CUDNN, B_, 1);
    float *p = alloc_f(sk_backend_layout(ref)->total);
    double ref_loss[STEPS], loss[STEPS];
    pair_init(ref, p);
    pair_train(ref, p, ref_loss);
    sk_backend_free(ref);
    for (size_t i = 0; i < n; i++) {
        const precision_tol tol = precision_tol_of(cases[i].prec);
        printf("--rnn-impl %s --precision %s%s against --rnn-impl cudnn --precision fp32\n",
               sk_rnn_impl_name(cases[i].impl), sk_precision_name(cases[i].prec),
               cases[i].tc == SK_TENSOR_CORES_ON ? " (tensor cores)" : cases[i].tc == SK_TENSOR_CORES_OFF ? " (CUDA cores)" : "");
        sk_backend *a = pair_create_in(cases[i].impl, cases[i].prec, cases[i].tc, B_, 1);
        pair_train(a, p, loss);
        sk_backend_free(a);
        pair_compare(loss, ref_loss, tol.loss_rtol, 4 * tol.loss_rtol, 0.1);
    }
    free(p);
}

#endif
