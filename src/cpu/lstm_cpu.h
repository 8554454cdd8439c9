// lstm_cpu.h: one LSTM layer over a window on the CPU, forward and backward (private).
// defines: sk_lstm_cpu_forward, sk_lstm_cpu_backward
//
// Rows are time-major: row r = t*B + b. Per layer, the caller provides
//   hbuf, cbuf  ((len+1)*B, H): rows [0, B) hold the initial state h0/c0; step t writes
//               rows [(t+1)*B, (t+2)*B). So hbuf rows [0, len*B) are exactly h_{t-1} for
//               every step t, and the weight gradient of W_hh is one GEMM.
//   gates       (len*B, 4H): i, f, g, o after their nonlinearities (gate order of PyTorch)
//   tanh_c      (len*B, H): tanh(c_t), kept for backward
#ifndef SK_LSTM_CPU_H
#define SK_LSTM_CPU_H

typedef struct {
    int B, H, in;       // batch, hidden width, input width
    int threads;        // threads for the matrix products and spans of streams for the recurrence
    const float *w_ih;  // (4H, in)
    const float *w_hh;  // (4H, H)
    const float *b_ih;  // (4H)
    const float *b_hh;  // (4H)
    float *w_hh_t;      // (H, 4H) scratch: W_hh laid out for the recurrent kernels once per
                        // window by forward (recurrent_gemm.h); NULL to run them through CBLAS
    int gates_in;       // 1: the caller filled gates with b_ih + b_hh + x W_ih^T already (x not read)
    int w_hh_t_ready;   // 1: w_hh_t already holds this w_hh laid out (forward does not lay it out again)
    int step;           // 1: an inference step (len 1): every product through sk_matvec_rows
} sk_lstm_cpu_layer;

// x: (len*B, in). Writes gates, tanh_c, and hbuf/cbuf rows [B, (len+1)*B), and w_hh_t.
void sk_lstm_cpu_forward(const sk_lstm_cpu_layer *l, int len, const float *x, float *gates, float *tanh_c,
                         float *hbuf, float *cbuf);

typedef struct {
    float *w_ih, *w_hh, *b_ih, *b_hh; // gradients, overwritten
} sk_lstm_cpu_grads;

// dh_out: (len*B, H) gradient of the loss w.r.t. the layer's outputs h_t.
// dgates: (len*B, 4H) scratch for pre-activation gradients; dh, dc: (B, H) scratch.
// dx: (len*B, in) gradient w.r.t. the input (NULL to skip). w_hh_t is not read. Truncated BPTT: the gradient
// w.r.t. the initial state is not propagated.
void sk_lstm_cpu_backward(const sk_lstm_cpu_layer *l, int len, const float *x, const float *gates,
                          const float *tanh_c, const float *hbuf, const float *cbuf, const float *dh_out,
                          float *dgates, float *dh, float *dc, const sk_lstm_cpu_grads *g, float *dx);

#endif
