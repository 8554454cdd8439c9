// cudnn_rnn.h: consecutive layers [first_layer, first_layer + layers) of the model's recurrent
// stack, any cell (cell.h: its cuDNN mode), as one cuDNN RNN v8 network, fed from the canonical parameter layout of model.h
// (private to src/cuda/; lstm_impl_cudnn.cu builds the LSTM implementation from one or more).
// defines: sk_cudnn_lstm, sk_cudnn_lstm_init, sk_cudnn_lstm_free, sk_cudnn_lstm_set_len,
//          sk_cudnn_lstm_pack, sk_cudnn_lstm_unpack, sk_cudnn_lstm_forward,
//          sk_cudnn_lstm_backward_data, sk_cudnn_lstm_backward_weights, sk_cudnn_lstm_trial,
//          sk_cudnn_lstm_forward_at, sk_cudnn_lstm_backward_data_at, sk_cudnn_lstm_add_weight_grads,
//          sk_cudnn_lstm_zero_weight_grads, sk_cudnn_lstm_unpack_weight_grads, sk_cuda_probe_kernels
//
// cuDNN keeps the LSTM weights in its own "weight space". At init every matrix and bias
// is located with cudnnGetRNNWeightParams (never by assumed offsets), checked against the
// canonical shapes, and recorded as (canonical offset, weight-space offset, length)
// segments; one kernel then packs canonical params into the weight space before a
// forward (sk_cudnn_lstm_pack) and unpacks cuDNN's weight gradients into the canonical
// grads after a backward. Data tensors are batch-major (B, len, width), the interface's
// layout, or sequence-major (len, B, width) where the caller asks (the chunked stack in
// lstm_impl_cudnn.cu, whose time slices must be contiguous). The network applies no dropout.
#ifndef SK_CUDNN_RNN_H
#define SK_CUDNN_RNN_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "weight_segments.h"

// The project's headers are C: their functions have C linkage.
extern "C" {
#include "shakespeare/model.h"
#include "shakespeare/status.h"
}

typedef struct {
    cudnnHandle_t dnn;   // borrowed
    cudaStream_t stream; // borrowed
    int first_layer; // the model's layer that is this network's layer 0
    int B, T, E, H, L; // E: this network's input width; L: its layer count
    int G;             // the cell's gates: cuDNN's linear ids 0..G-1 act on the input, G..2G-1 on h
    cudnnRNNMode_t mode; // the cell's (cell.h's cudnn_mode)
    int training;      // reserve space and weight-gradient space allocated
    int seq_major;     // data tensors (len, B, width); 0: (B, len, width)
    cudnnRNNAlgo_t algo;
    cudnnRNNDescriptor_t rnn;
    cudnnDropoutDescriptor_t drop; // probability 0 (cuDNN wants one)
    cudnnRNNDataDescriptor_t xdesc, ydesc;
    cudnnTensorDescriptor_t hdesc; // (L, B, H), for h and an LSTM's c alike (other cells have no c)
    float *w, *dw; // weight space and its gradient, w_bytes each
    size_t w_bytes;
    void *work;      // borrowed: the caller's workspace of at least work_cap bytes
    size_t work_cap; // the largest need over len <= T and both modes
    void *reserve;         // reserve_cap bytes; the caller's when reserve_borrowed
    size_t reserve_cap;    // the largest reserve_at[len]
    int reserve_borrowed;  // the caller allocates (and frees) reserve
    size_t *reserve_at;    // (T + 1,) [len]: a training forward's reserve space at len steps
    // Sizes cuDNN asked for at the current len.
    size_t work_train, work_infer, reserve_train;
    int *seq_host;    // (B,) all = len
    int32_t *seq_dev; // (B,) device copy that cuDNN's kernels read
    int len;          // window length described and checked (0: none, or a failed change)
    sk_wseg *segs;    // (nseg,) device
    int nseg;
    size_t seg_max; // longest segment
} sk_cudnn_lstm;

// Creates descriptors and buffers for windows of up to T steps of a (B, ., E) input
// through the model's layers [first_layer, first_layer + layers) with cuDNN's algorithm
// `algo` (CUDNN_RNN_ALGO_STANDARD, or a persistent one: PERSIST_DYNAMIC gets its plan built
// here for B rows; one cuDNN does not accept fails with cuDNN's reason), fp32 data with math type
// `math` (math_mode.h: CUDNN_FMA_MATH for strict fp32, CUDNN_DEFAULT_MATH for TF32; read
// back after setting, an error if cuDNN changed it). r->work must be pointed
// at a workspace of r->work_cap bytes before the first forward. r must be zeroed; on
// failure sk_cudnn_lstm_free(r) releases what was made.
// seq_major picks the data layout; borrow_reserve leaves r->reserve for the caller to
// point at reserve_cap bytes or more (before a trial or the first training forward).
sk_status sk_cudnn_lstm_init(sk_cudnn_lstm *r, cudnnHandle_t dnn, cudaStream_t stream,
                             const sk_param_layout *layout, int first_layer, int layers, int B, int T, int training,
                             cudnnRNNAlgo_t algo, cudnnMathType_t math, int seq_major, int borrow_reserve,
                             sk_error *err);
void sk_cudnn_lstm_free(sk_cudnn_lstm *r);

// Points the data descriptors at windows of len steps (no-op when unchanged) and checks
// that the workspace and reserve space suffice.
sk_status sk_cudnn_lstm_set_len(sk_cudnn_lstm *r, int len, sk_error *err);

// Copies this network's LSTM tensors of params (canonical layout, device) into the weight
// space (pack), or back out of it (unpack; other tensors of params are left alone).
sk_status sk_cudnn_lstm_pack(sk_cudnn_lstm *r, const float *params, sk_error *err);
sk_status sk_cudnn_lstm_unpack(sk_cudnn_lstm *r, float *params, sk_error *err);

// x (B, len, E) -> y (B, len, H); hx, cx -> hy, cy (L, B, H). train keeps what backward
// needs in the reserve space.
sk_status sk_cudnn_lstm_forward(sk_cudnn_lstm *r, int train, const float *x, float *y, const float *hx,
                                const float *cx, float *hy, float *cy, sk_error *err);

// After a training forward with the same x, y, hx, cx, in this order: dx (B, len, E) from
// dy (B, len, H), with no gradient flowing in through hy, cy (truncated BPTT); then the
// weight gradients, written (overwritten) into this network's tensors of grads
// (canonical layout, device). Between the two, only other networks may use the workspace.
sk_status sk_cudnn_lstm_backward_data(sk_cudnn_lstm *r, const float *y, const float *dy, float *dx,
                                      const float *hx, const float *cx, sk_error *err);
sk_status sk_cudnn_lstm_backward_weights(sk_cudnn_lstm *r, const float *x, const float *y, const float *hx,
                                         float *grads, sk_error *err);

// The same calls with the reserve space given (the caller keeps one per window slice, of
// reserve_at[len] bytes at least), the gradient arriving through hy, cy (dhy, dcy; NULL:
// zero) and leaving through hx, cx (dhx, dcx; NULL: not computed). add_weight_grads adds a
// slice's weight gradients into r->dw; zero_weight_grads clears it and unpack_weight_grads
// writes it into this network's tensors of grads.
sk_status sk_cudnn_lstm_forward_at(sk_cudnn_lstm *r, int train, void *reserve, const float *x, float *y,
                                   const float *hx, const float *cx, float *hy, float *cy, sk_error *err);
sk_status sk_cudnn_lstm_backward_data_at(sk_cudnn_lstm *r, void *reserve, const float *y, const float *dy, float *dx,
                                         const float *hx, const float *cx, const float *dhy, const float *dcy,
                                         float *dhx, float *dcx, sk_error *err);
sk_status sk_cudnn_lstm_add_weight_grads(sk_cudnn_lstm *r, void *reserve, const float *x, const float *y,
                                         const float *hx, sk_error *err);
sk_status sk_cudnn_lstm_zero_weight_grads(sk_cudnn_lstm *r, sk_error *err);
sk_status sk_cudnn_lstm_unpack_weight_grads(sk_cudnn_lstm *r, float *grads, sk_error *err);

// Runs every call a training step makes (inference and training forward, backward data,
// backward weights) on zeros at windows of T and 1 steps, then synchronizes: cuDNN refuses
// some shapes of its persistent algorithms only when the call is made (PyTorch takes
// PERSIST_STATIC_SMALL_H for an LSTM forward up to H = 192 but its backward only up to
// 128), and that refusal must come at creation, not in the middle of training or of a
// graph capture. r->work must be set. Leaves the descriptors at T.
sk_status sk_cudnn_lstm_trial(sk_cudnn_lstm *r, sk_error *err);

// cudaSuccess when this build's kernels can run on the current device (a kernel image or
// PTX for its architecture is present); the error otherwise.
cudaError_t sk_cuda_probe_kernels(void);

#endif
