// cudnn_rnn.h: the L-layer LSTM on cuDNN's RNN v8 API, fed from the canonical parameter
// layout of model.h (private to src/cuda/).
// defines: sk_cudnn_lstm, sk_lstm_init, sk_lstm_free, sk_lstm_set_len, sk_lstm_pack,
//          sk_lstm_forward, sk_lstm_backward, sk_cuda_probe_kernels
//
// cuDNN keeps the LSTM weights in its own "weight space". At init every matrix and bias
// is located with cudnnGetRNNWeightParams (never by assumed offsets), checked against the
// canonical shapes, and recorded as (canonical offset, weight-space offset, length)
// segments; one kernel then packs canonical params into the weight space before a
// forward (sk_lstm_pack) and unpacks cuDNN's weight gradients into the canonical grads
// after a backward. Data tensors are batch-major (B, len, width), the interface's layout.
#ifndef SK_CUDNN_RNN_H
#define SK_CUDNN_RNN_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <cudnn.h>

// The project's headers are C: their functions have C linkage.
extern "C" {
#include "shakespeare/model.h"
#include "shakespeare/status.h"
}

typedef struct {
    size_t canon; // float offset into the canonical parameter (or gradient) buffer
    size_t ws;    // float offset into cuDNN's weight space
    size_t n;     // floats
} sk_wseg;

typedef struct {
    cudnnHandle_t dnn;   // borrowed
    cudaStream_t stream; // borrowed
    int B, T, E, H, L;
    int training; // reserve space and weight-gradient space allocated
    cudnnRNNDescriptor_t rnn;
    cudnnDropoutDescriptor_t drop; // between layers; training forwards only
    cudnnRNNDataDescriptor_t xdesc, ydesc;
    cudnnTensorDescriptor_t hdesc; // (L, B, H), for h and c alike
    void *drop_states;
    size_t drop_states_bytes;
    float *w, *dw; // weight space and its gradient, w_bytes each
    size_t w_bytes;
    void *work;
    size_t work_cap; // bytes allocated: the largest need over len <= T and both modes
    void *reserve;
    size_t reserve_cap;
    // Sizes cuDNN asked for at the current len.
    size_t work_train, work_infer, reserve_train;
    int *seq_host;    // (B,) all = len
    int32_t *seq_dev; // (B,) device copy that cuDNN's kernels read
    int len;          // window length described and checked (0: none, or a failed change)
    sk_wseg *segs;    // (nseg,) device
    int nseg;
    size_t seg_max; // longest segment
} sk_cudnn_lstm;

// Creates descriptors and buffers for windows of up to T steps of a (B, ., E) input, with
// inter-layer dropout layout->cfg.dropout (cuDNN's generator, seeded by seed) in training
// forwards. r must be zeroed; on failure sk_lstm_free(r) releases what was made.
sk_status sk_lstm_init(sk_cudnn_lstm *r, cudnnHandle_t dnn, cudaStream_t stream, const sk_param_layout *layout,
                       int B, int T, int training, uint64_t seed, sk_error *err);
void sk_lstm_free(sk_cudnn_lstm *r);

// Points the data descriptors at windows of len steps (no-op when unchanged) and checks
// that the allocated workspace and reserve space suffice.
sk_status sk_lstm_set_len(sk_cudnn_lstm *r, int len, sk_error *err);

// Copies the LSTM tensors of params (canonical layout, device) into the weight space.
sk_status sk_lstm_pack(sk_cudnn_lstm *r, const float *params, sk_error *err);

// x (B, len, E) -> y (B, len, H); hx, cx -> hy, cy (L, B, H). train keeps what backward
// needs in the reserve space and applies the inter-layer dropout.
sk_status sk_lstm_forward(sk_cudnn_lstm *r, int train, const float *x, float *y, const float *hx,
                          const float *cx, float *hy, float *cy, sk_error *err);

// After a training forward with the same x, y, hx, cx: dx (B, len, E) from dy (B, len, H),
// with no gradient flowing in through hy, cy (truncated BPTT), and the LSTM weight
// gradients written (overwritten) into grads (canonical layout, device).
sk_status sk_lstm_backward(sk_cudnn_lstm *r, const float *x, const float *y, const float *dy, float *dx,
                           const float *hx, const float *cx, float *grads, sk_error *err);

// cudaSuccess when this build's kernels can run on the current device (a kernel image or
// PTX for its architecture is present); the error otherwise.
cudaError_t sk_cuda_probe_kernels(void);

#endif
