// backend_impl.h: what a backend implements: the table of operations behind backend.h's calls.
// The CPU backend (src/cpu/backend_cpu.c), the CUDA backend (src/cuda/backend_cuda.cu) and test
// stand-ins fill one each; callers never read it (backend.h's sk_backend_* calls do).
// defines: sk_backend_ops, struct sk_backend
//
// Each op has the contract of backend.h's call of the same name (sk_backend_forward for forward,
// ...), and on failure leaves one line in b->err naming what failed and why. A backend's
// constructor (sk_backend_create_cpu, sk_backend_create_cuda) allocates the sk_backend, sets
// ops, cfg, layout, device and impl, and everything its ops will need.
#ifndef SHAKESPEARE_BACKEND_IMPL_H
#define SHAKESPEARE_BACKEND_IMPL_H

#include "shakespeare/backend.h"

typedef struct sk_backend_ops sk_backend_ops;

struct sk_backend_ops {
    const char *name; // "cpu" or "cuda"
    sk_status (*set_params)(sk_backend *b, const float *params); // (total,)
    sk_status (*get_params)(sk_backend *b, float *params);
    sk_status (*get_grads)(sk_backend *b, float *grads);
    // Slot `slot` of the optimizer's state; slot checked by backend.c against cfg.optimizer.
    sk_status (*set_optimizer_state)(sk_backend *b, int slot, const float *x);
    sk_status (*get_optimizer_state)(sk_backend *b, int slot, float *x);
    sk_status (*set_state)(sk_backend *b, const float *state); // (S, L, B, H); NULL: zeros
    sk_status (*get_state)(sk_backend *b, float *state);
    sk_status (*forward)(sk_backend *b, const int32_t *x, const int32_t *y, int len, sk_mode mode,
                         int64_t step, double *loss_sum);
    sk_status (*get_logits)(sk_backend *b, float *logits);
    sk_status (*backward)(sk_backend *b);
    sk_status (*grad_buffer)(sk_backend *b, float **grads, int *on_device);
    sk_status (*grad_norm)(sk_backend *b, double *norm);
    sk_status (*update)(sk_backend *b, const sk_optim_hparams *h, float lr, float clip_scale, int64_t step);
    // Frees everything the constructor allocated, the sk_backend too (sk_backend_free calls it).
    void (*destroy)(sk_backend *b);
    // The deferred step (NULL: the backend has none, and sk_backend_train_step runs the eager
    // sequence): the whole of a step without a reduce hook enqueued, nothing read back. A step
    // whose mean loss or norm is not finite is recorded (the first one) and skips its update,
    // as does every later step until read_stats; parameters and moments stay as they were.
    sk_status (*train_step)(sk_backend *b, const sk_train_step_args *a);
    // Waits for every enqueued step and fills *stats; forgets the record of a bad step.
    // Errors of enqueued work surface here. NULL exactly when train_step is.
    sk_status (*read_stats)(sk_backend *b, sk_step_stats *stats);
    // The fused sampler (sk_backend_sample); NULL: the backend has none, and sk_generate_batch
    // runs forward and get_logits per token, drawing on the host.
    sk_status (*sample)(sk_backend *b, const int32_t *x, int n, const sk_sample_opts *o, const uint64_t *keys,
                        int64_t position, int32_t *out);
};

// A backend as its creator fills it; backend.h's callers see it opaque, through its accessors
// (sk_backend_cfg, sk_backend_layout, sk_backend_notice, sk_backend_device, sk_backend_device_uuid).
struct sk_backend {
    const sk_backend_ops *ops;
    sk_backend_config cfg;  // as asked, with what the backend resolved: precision, and (CUDA) rnn_impl and
                            // plstm_tensor_cores as they run (an sk_rnn_choice)
    sk_param_layout layout; // owned
    void *impl;             // the backend's private state
    sk_error err;           // message of the last failed op; see sk_backend_error
    char notice[2 * SK_ERROR_MSG_MAX]; // lines for the user from creation ('\n' between them: auto's
                                       // measurements, an implementation fallback), or ""
    char device[128];       // where it runs, for messages: "cpu", or "cuda:1 (NVIDIA H100 80GB HBM3)"
    char device_uuid[48];   // a GPU's UUID as nvidia-smi prints it ("GPU-" and 8-4-4-4-12 hex digits),
                            // which tells whether two processes share a GPU; "" on the CPU
    sk_step_stats stats;    // the eager step's statistics since the last read (src/backend/train_step.c)
};

#endif
