// lstm_onednn.h: the CPU backend's L-layer LSTM stack over a window through oneDNN's LSTM
// primitive (the CPU's counterpart of cuDNN's RNN API), in fp32 or bf16 (private to src/cpu/).
// defines: sk_lstm_onednn, sk_lstm_onednn_config, sk_lstm_onednn_between, sk_lstm_onednn_create,
//          sk_lstm_onednn_forward, sk_lstm_onednn_backward, sk_lstm_onednn_free, sk_onednn_bf16_check,
//          sk_onednn_test_reference_kernels
//
// Semantics (those of layer_cpu.h's LSTM layers as stack_cpu.c stacks them; stack_onednn.c makes this
// stack a row of stack_cpu.h, its h and c the two halves of the (S, L, B, H) carried state):
//   - rows are time-major (r = t*B + b): x (len*B, E), layer k's output (len*B, H); the carried
//     states h, c are (L, B, H);
//   - weights enter in the canonical layout of model.h (PyTorch's nn.LSTM: W_ih (4H, in_k), W_hh
//     (4H, H), gates i, f, g, o, which is oneDNN's order i, f, c~, o and its ldgoi layout);
//     oneDNN has one bias, b_ih + b_hh, whose gradient is both biases' gradient;
//   - fp32: every product and the cell in fp32 (oneDNN's gemm path: other summation orders than
//     layer_cpu.c's, so the same values to fp32 rounding, not the same bits);
//     bf16: W_ih, W_hh, each layer's input and output and h rounded to bf16 (round to nearest
//     even, 8 significant bits), products accumulated in fp32; the cell state c, the biases and
//     every gradient fp32. The caller's weights stay the fp32 master copy;
//   - layer after layer, so that the caller's dropout applies between layers (between below);
//   - backward is truncated BPTT: no gradient enters through the final state or leaves through
//     the initial one.
// Results depend on the precision and the thread count (oneDNN's OpenMP threads), not on
// anything else: a run resumed with the same ones is bit-identical.
#ifndef SK_LSTM_ONEDNN_H
#define SK_LSTM_ONEDNN_H

#include <stddef.h>

#include "shakespeare/model.h"
#include "shakespeare/status.h"

typedef struct {
    int B, T, E, H, L; // batch, the longest window, input width of layer 0, hidden width, layers
    int bf16;          // 1: bf16 operands (see above); 0: fp32
    int threads;       // oneDNN's OpenMP threads
} sk_lstm_onednn_config;

// What happens between layers (the caller's dropout); NULL: nothing. forward(ctx, k, len, y_k)
// returns what reads layer k's output y_k (len*B, H): layer k+1, or for k = L-1 the caller's
// next layer (forward returns it). backward(ctx, k, len, dy) turns the gradient of that into
// the gradient of y_k, in place. Called for every layer, also the last.
typedef struct {
    const float *(*forward)(void *ctx, int k, int len, const float *y);
    void (*backward)(void *ctx, int k, int len, float *dy);
    void *ctx;
} sk_lstm_onednn_between;

typedef struct sk_lstm_onednn sk_lstm_onednn;

// 1 when this build has oneDNN and the CPU (as oneDNN sees it: ONEDNN_MAX_CPU_ISA caps it) has
// bf16 dot products (AVX512_BF16 or AMX); else 0 with one line in why saying which is missing.
int sk_onednn_bf16_check(char *why, size_t n);

// Tests only, process-wide: 1 lets bf16 run on an AVX-512 CPU without bf16 dot products, on
// oneDNN's reference kernels (the same arithmetic: bf16 operands, fp32 accumulation; about 5x
// slower), so that the bf16 tests run on such machines too. sk_onednn_bf16_check then passes
// wherever oneDNN has AVX-512 (it still refuses AVX2, where oneDNN has no bf16 LSTM).
void sk_onednn_test_reference_kernels(int on);

// SK_ERR_ARG when the build has no oneDNN or bf16 is asked for where sk_onednn_bf16_check fails.
sk_status sk_lstm_onednn_create(const sk_lstm_onednn_config *cfg, sk_lstm_onednn **out, sk_error *err);
// Safe on NULL.
void sk_lstm_onednn_free(sk_lstm_onednn *s);

// x (len*B, E) through the L layers from h0, c0 to hT, cT ((L, B, H); hT, cT may be h0, c0).
// w[k] are layer k's tensors (w_hh: what this window multiplies, e.g. weight-dropped). y[k]
// ((len*B, H), the caller's) receives layer k's output. Returns what reads the top layer's output
// (between's, or y[L-1]); NULL on failure. x, y and what between returned stay the caller's and
// must be unchanged until backward.
const float *sk_lstm_onednn_forward(sk_lstm_onednn *s, int len, const float *x, const sk_layer_tensors *w,
                                    const float *h0, const float *c0, float *hT, float *cT, float *const *y,
                                    const sk_lstm_onednn_between *between, sk_error *err);

// After a forward with the same w: dtop (len*B, H), the gradient of what forward returned
// (overwritten), to every layer's gradients g[k] (overwritten, canonical layout) and dx (len*B,
// E; NULL to skip).
sk_status sk_lstm_onednn_backward(sk_lstm_onednn *s, float *dtop, const sk_layer_tensors *w, const sk_layer_tensors *g,
                                  float *dx, const sk_lstm_onednn_between *between, sk_error *err);

#endif
