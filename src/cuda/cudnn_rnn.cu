// cudnn_rnn.cu: consecutive recurrent layers as one cuDNN RNN v8 network (see cudnn_rnn.h).
// defines: sk_cudnn_lstm_init, sk_cudnn_lstm_free, sk_cudnn_lstm_set_len, sk_cudnn_lstm_pack,
//          sk_cudnn_lstm_unpack, sk_cudnn_lstm_forward, sk_cudnn_lstm_backward_data,
//          sk_cudnn_lstm_backward_weights, sk_cudnn_lstm_trial, sk_cuda_probe_kernels
//
// Configuration: the cell's mode (CUDNN_LSTM, CUDNN_GRU, CUDNN_RNN_TANH), two bias vectors (b_ih and b_hh, as PyTorch), unidirectional,
// a learned input matrix, no dropout (the stack in lstm_impl_cudnn.cu applies the project's
// keyed dropout between separate networks), the caller's algorithm (standard or persistent),
// fp32 data and fp32 math with the caller's math type: CUDNN_FMA_MATH for --precision fp32
// (CUDNN_DEFAULT_MATH would let cuDNN use TF32 tensor cores on Ampere and later GPUs, about
// 3 decimal digits, far from the CPU reference), CUDNN_DEFAULT_MATH for tf32 (math_mode.h).
// Data descriptors are BATCH_MAJOR_UNPACKED (or SEQ_MAJOR_UNPACKED) with every sequence
// length equal to the window length, which needs CUDNN_RNN_PADDED_IO_ENABLED.
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "copy_segments_kernel.cuh"
#include "cuda_check.h"
#include "cudnn_rnn.h"

namespace {

using namespace sk_wcopy;

sk_status copy_segments(sk_cudnn_lstm *r, float *canon, float *ws, int to_ws, sk_error *err) {
    dim3 grid(copy_column_blocks(r->seg_max), (unsigned)r->nseg);
    CUDA_CHECK(sk_launch(copy_segments_kernel, grid, kCopyThreads, 0, r->stream, canon, ws, r->segs, to_ws));
    return SK_OK;
}

int cmp_ws(const void *a, const void *b) {
    size_t x = ((const sk_wseg *)a)->ws, y = ((const sk_wseg *)b)->ws;
    return x < y ? -1 : x > y;
}

int cmp_canon(const void *a, const void *b) {
    size_t x = ((const sk_wseg *)a)->canon, y = ((const sk_wseg *)b)->canon;
    return x < y ? -1 : x > y;
}

// Reads a descriptor that cudnnGetRNNWeightParams filled: {1, rows, cols} packed row-major
// for a matrix, {1, rows, 1} for a bias. Anything else is a layout this code does not
// understand, and refusing it is better than training on scrambled weights.
sk_status check_shape(cudnnTensorDescriptor_t d, const void *addr, int rows, int cols, int k, int lin,
                      const char *what, sk_error *err) {
    cudnnDataType_t dt;
    int nb = 0, dims[3] = {0, 0, 0}, strides[3] = {0, 0, 0};
    CUDNN_CHECK(cudnnGetTensorNdDescriptor(d, 3, &dt, &nb, dims, strides));
    if (!addr || nb != 3 || dt != CUDNN_DATA_FLOAT || dims[0] != 1 || dims[1] != rows || dims[2] != cols ||
        strides[2] != 1 || (rows > 1 && strides[1] != cols))
        return sk_fail(err, SK_ERR_DEVICE,
                             "unexpected cuDNN LSTM %s layout at layer %d, linear id %d: %d dims [%d, %d, %d] "
                             "strides [%d, %d, %d], expected [1, %d, %d] packed",
                             what, k, lin, nb, dims[0], dims[1], dims[2], strides[0], strides[1], strides[2], rows,
                             cols);
    return SK_OK;
}

// seg->ws = float offset of addr in the weight space, checked to hold seg->n floats.
sk_status ws_offset(const sk_cudnn_lstm *r, const void *addr, sk_wseg *seg, sk_error *err) {
    const ptrdiff_t off = (const char *)addr - (const char *)r->w;
    if (off < 0 || off % (ptrdiff_t)sizeof(float) != 0 || (size_t)off > r->w_bytes ||
        seg->n > (r->w_bytes - (size_t)off) / sizeof(float))
        return sk_fail(err, SK_ERR_DEVICE,
                             "cuDNN places a weight of %zu floats at byte offset %td of its %zu-byte weight space",
                             seg->n, off, r->w_bytes);
    seg->ws = (size_t)off / sizeof(float);
    return SK_OK;
}

// cuDNN layer k's (the model's layer k0 + k, at offsets o) 2G matrices and biases: shapes
// and bounds checked, appended to segs as (canonical, weight-space) pairs at *count.
sk_status locate_layer(const sk_cudnn_lstm *r, int k, const sk_layer_offsets *o, cudnnTensorDescriptor_t mdesc,
                       cudnnTensorDescriptor_t bdesc, sk_wseg *segs, int *count, sk_error *err) {
    const int H = r->H, layer = r->first_layer + k;
    const int G = r->G;
    for (int lin = 0; lin < 2 * G; lin++) {
        void *maddr = NULL, *baddr = NULL;
        cudnnStatus_t cs = cudnnGetRNNWeightParams(r->dnn, r->rnn, k, r->w_bytes, r->w, lin, mdesc, &maddr, bdesc,
                                                   &baddr);
        if (cs != CUDNN_STATUS_SUCCESS)
            return sk_fail(err, SK_ERR_DEVICE, "cudnnGetRNNWeightParams(layer %d, id %d) failed: %s", layer, lin,
                           cudnnGetErrorString(cs));
        const int gate = lin % G, cols = lin < G ? o->in : H;
        SK_TRY(check_shape(mdesc, maddr, H, cols, layer, lin, "matrix", err));
        SK_TRY(check_shape(bdesc, baddr, H, 1, layer, lin, "bias", err));
        // Linear ids 0..G-1 act on the layer input (W_ih), G..2G-1 on h_{t-1} (W_hh); the
        // gates in PyTorch's order within each (cell.h); bias ids likewise b_ih, b_hh.
        const size_t mat = (size_t)H * cols;
        sk_wseg *sm = &segs[*count], *sb = &segs[*count + 1];
        *count += 2;
        sm->canon = (lin < G ? o->w_ih : o->w_hh) + gate * mat;
        sm->n = mat;
        sb->canon = (lin < G ? o->b_ih : o->b_hh) + (size_t)gate * H;
        sb->n = (size_t)H;
        SK_TRY(ws_offset(r, maddr, sm, err));
        SK_TRY(ws_offset(r, baddr, sb, err));
    }
    return SK_OK;
}

// No two weights may overlap in the weight space (sorts segs by it).
sk_status check_no_overlap(sk_wseg *segs, int count, sk_error *err) {
    qsort(segs, (size_t)count, sizeof *segs, cmp_ws);
    for (int i = 1; i < count; i++)
        if (segs[i - 1].ws + segs[i - 1].n > segs[i].ws)
            return sk_fail(err, SK_ERR_DEVICE, "cuDNN weights overlap at weight-space offset %zu", segs[i].ws);
    return SK_OK;
}

// The canonical side must tile the LSTM tensors [begin, begin + total) exactly; then merges
// neighbours that are contiguous on both sides (when cuDNN's layout equals PyTorch's, one per
// layer or less) and sets *count to what is left.
sk_status merge_segments(sk_wseg *segs, int *count, size_t begin, size_t total, sk_error *err) {
    qsort(segs, (size_t)*count, sizeof *segs, cmp_canon);
    size_t at = begin;
    int m = 0;
    for (int i = 0; i < *count; i++) {
        if (segs[i].canon != at)
            return sk_fail(err, SK_ERR_DEVICE, "cuDNN weight table leaves a gap at parameter offset %zu", at);
        at += segs[i].n;
        if (m > 0 && segs[m - 1].ws + segs[m - 1].n == segs[i].ws) segs[m - 1].n += segs[i].n;
        else segs[m++] = segs[i];
    }
    if (at != begin + total)
        return sk_fail(err, SK_ERR_DEVICE, "cuDNN weight table covers %zu of %zu recurrent parameters", at - begin,
                       total);
    *count = m;
    return SK_OK;
}

// r->segs (device), r->nseg and r->seg_max from the merged table.
sk_status upload_segments(sk_cudnn_lstm *r, const sk_wseg *segs, int count, sk_error *err) {
    r->nseg = count;
    r->seg_max = 0;
    for (int i = 0; i < count; i++)
        if (segs[i].n > r->seg_max) r->seg_max = segs[i].n;
    // Synchronized before segs is freed: an async copy may still read pageable memory.
    cudaError_t ce = cudaMalloc((void **)&r->segs, sizeof(sk_wseg) * (size_t)count);
    if (ce == cudaSuccess)
        ce = cudaMemcpyAsync(r->segs, segs, sizeof(sk_wseg) * (size_t)count, cudaMemcpyHostToDevice, r->stream);
    if (ce == cudaSuccess) ce = cudaStreamSynchronize(r->stream);
    if (ce != cudaSuccess)
        return sk_fail(err, SK_ERR_DEVICE, "uploading the cuDNN weight table failed: %s", cudaGetErrorName(ce));
    return SK_OK;
}

// Locates every LSTM matrix and bias in the weight space, checks shapes and bounds, and
// uploads the merged (canonical, weight-space) segment table.
sk_status build_segments(sk_cudnn_lstm *r, const sk_param_layout *layout, sk_error *err) {
    const int H = r->H, L = r->L, k0 = r->first_layer;
    sk_wseg *segs = (sk_wseg *)calloc((size_t)(4 * r->G * L), sizeof *segs);
    if (!segs) return sk_fail(err, SK_ERR_NOMEM, "out of memory for the cuDNN weight table");
    cudnnTensorDescriptor_t mdesc = NULL, bdesc = NULL;
    sk_status st = SK_OK;
    int count = 0;
    size_t lstm_begin = 0, lstm_total = 0;
    if (cudnnCreateTensorDescriptor(&mdesc) != CUDNN_STATUS_SUCCESS ||
        cudnnCreateTensorDescriptor(&bdesc) != CUDNN_STATUS_SUCCESS)
        st = sk_fail(err, SK_ERR_DEVICE, "cudnnCreateTensorDescriptor failed");
    for (int k = 0; k < L && st == SK_OK; k++) {
        // cuDNN's layer k of this network is the model's layer k0 + k.
        const sk_layer_offsets o = sk_layer_at(layout, k0 + k);
        if (k == 0) lstm_begin = o.w_ih;
        lstm_total += (size_t)r->G * H * ((size_t)o.in + H + 2);
        st = locate_layer(r, k, &o, mdesc, bdesc, segs, &count, err);
    }
    if (st == SK_OK) st = check_no_overlap(segs, count, err);
    if (st == SK_OK) st = merge_segments(segs, &count, lstm_begin, lstm_total, err);
    if (st == SK_OK) st = upload_segments(r, segs, count, err);
    if (mdesc) cudnnDestroyTensorDescriptor(mdesc);
    if (bdesc) cudnnDestroyTensorDescriptor(bdesc);
    free(segs);
    return st;
}

// The descriptor read back: cuDNN must compute with the data type and math type asked for
// (fp32 must not silently become TF32, nor the reverse).
sk_status check_math(const sk_cudnn_lstm *r, cudnnMathType_t want, sk_error *err) {
    cudnnRNNAlgo_t algo;
    cudnnRNNMode_t cell;
    cudnnRNNBiasMode_t bias;
    cudnnDirectionMode_t dir;
    cudnnRNNInputMode_t input;
    cudnnDataType_t data, prec;
    cudnnMathType_t math;
    int32_t in, hid, proj, layers;
    cudnnDropoutDescriptor_t drop;
    uint32_t aux;
    CUDNN_CHECK(cudnnGetRNNDescriptor_v8(r->rnn, &algo, &cell, &bias, &dir, &input, &data, &prec, &math, &in, &hid,
                                         &proj, &layers, &drop, &aux));
    if (data != CUDNN_DATA_FLOAT || prec != CUDNN_DATA_FLOAT || math != want || algo != r->algo || cell != r->mode)
        return sk_fail(err, SK_ERR_DEVICE,
                       "cuDNN's RNN descriptor reads back data type %d, math precision %d, math type %d, algorithm %d; "
                       "asked for %d, %d, %d, %d", (int)data, (int)prec, (int)math, (int)algo, (int)CUDNN_DATA_FLOAT,
                       (int)CUDNN_DATA_FLOAT, (int)want, (int)r->algo);
    return SK_OK;
}

// Sizes cuDNN needs for windows of the descriptors' current length.
sk_status query_sizes(sk_cudnn_lstm *r, sk_error *err) {
    size_t reserve_unused = 0;
    CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(r->dnn, r->rnn, CUDNN_FWD_MODE_INFERENCE, r->xdesc, &r->work_infer,
                                          &reserve_unused));
    r->work_train = r->reserve_train = 0;
    if (r->training)
        CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(r->dnn, r->rnn, CUDNN_FWD_MODE_TRAINING, r->xdesc, &r->work_train,
                                              &r->reserve_train));
    return SK_OK;
}

// Leaves r->len = 0 ("describes nothing usable") until the caller has checked the sizes
// and uploaded seq_dev: a failure half-way must not let the next call skip this work.
sk_status set_descriptors(sk_cudnn_lstm *r, int len, sk_error *err) {
    r->len = 0;
    for (int b = 0; b < r->B; b++) r->seq_host[b] = len;
    const cudnnRNNDataLayout_t dl =
        r->seq_major ? CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED : CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED;
    CUDNN_CHECK(cudnnSetRNNDataDescriptor(r->xdesc, CUDNN_DATA_FLOAT, dl, len, r->B, r->E, r->seq_host, NULL));
    CUDNN_CHECK(cudnnSetRNNDataDescriptor(r->ydesc, CUDNN_DATA_FLOAT, dl, len, r->B, r->H, r->seq_host, NULL));
    return query_sizes(r, err);
}

} // namespace

sk_status sk_cudnn_lstm_init(sk_cudnn_lstm *r, cudnnHandle_t dnn, cudaStream_t stream,
                             const sk_param_layout *layout, int first_layer, int layers, int B, int T, int training,
                             cudnnRNNAlgo_t algo, cudnnMathType_t math, int seq_major, int borrow_reserve,
                             sk_error *err) {
    const sk_model_config *m = &layout->cfg;
    if (first_layer < 0 || layers < 1 || first_layer + layers > m->num_layers)
        return sk_fail(err, SK_ERR_ARG, "cuDNN LSTM over layers [%d, %d) of a %d-layer model", first_layer,
                       first_layer + layers, m->num_layers);
    r->dnn = dnn;
    r->stream = stream;
    r->first_layer = first_layer;
    r->B = B, r->T = T, r->H = m->hidden_size, r->L = layers;
    r->G = sk_model_cell(m)->gates, r->mode = (cudnnRNNMode_t)sk_model_cell(m)->cudnn_mode;
    r->E = first_layer == 0 ? m->embed_size : m->hidden_size;
    r->training = training;
    r->seq_major = seq_major;
    r->reserve_borrowed = borrow_reserve;
    r->algo = algo;
    CUDNN_CHECK(cudnnCreateRNNDescriptor(&r->rnn));
    CUDNN_CHECK(cudnnCreateDropoutDescriptor(&r->drop));
    CUDNN_CHECK(cudnnCreateRNNDataDescriptor(&r->xdesc));
    CUDNN_CHECK(cudnnCreateRNNDataDescriptor(&r->ydesc));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&r->hdesc));

    // No dropout inside the network: a stateless descriptor with probability 0.
    CUDNN_CHECK(cudnnSetDropoutDescriptor(r->drop, dnn, 0.0f, NULL, 0, 0));
    CUDNN_CHECK(cudnnSetRNNDescriptor_v8(r->rnn, algo, r->mode, CUDNN_RNN_DOUBLE_BIAS,
                                         CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT,
                                         math, r->E, r->H, r->H, r->L, r->drop, CUDNN_RNN_PADDED_IO_ENABLED));
    SK_TRY(check_math(r, math, err));
    // The dynamic persistent algorithm compiles its kernels for this batch size, once.
    if (algo == CUDNN_RNN_ALGO_PERSIST_DYNAMIC) CUDNN_CHECK(cudnnBuildRNNDynamic(dnn, r->rnn, B));
    const int hdims[3] = {r->L, B, r->H}, hstrides[3] = {B * r->H, r->H, 1};
    CUDNN_CHECK(cudnnSetTensorNdDescriptor(r->hdesc, CUDNN_DATA_FLOAT, 3, hdims, hstrides));

    r->seq_host = (int *)calloc((size_t)B, sizeof(int));
    r->reserve_at = (size_t *)calloc((size_t)T + 1, sizeof(size_t));
    if (!r->seq_host || !r->reserve_at) return sk_fail(err, SK_ERR_NOMEM, "out of memory for sequence lengths");
    CUDA_CHECK(cudaMalloc((void **)&r->seq_dev, sizeof(int32_t) * (size_t)B));

    // Temporary sizes: the largest need over every window length 1..T and both modes
    // (cuDNN does not promise that its sizes grow with the length; the queries run on the
    // host, once, at creation), so that no later length (the sampler's 1, a short last
    // window) can fail; sk_cudnn_lstm_set_len still re-checks. The reserve space is
    // allocated here; the workspace (scratch only, shareable by networks that run one
    // after another) is the caller's, of at least work_cap bytes. The descriptors are left
    // describing len = T.
    r->work_cap = r->reserve_cap = 0;
    for (int len = 1; len <= T; len++) {
        SK_TRY(set_descriptors(r, len, err));
        if (r->work_infer > r->work_cap) r->work_cap = r->work_infer;
        if (r->work_train > r->work_cap) r->work_cap = r->work_train;
        if (r->reserve_train > r->reserve_cap) r->reserve_cap = r->reserve_train;
        r->reserve_at[len] = r->reserve_train;
    }
    if (r->reserve_cap && !borrow_reserve) CUDA_CHECK(cudaMalloc(&r->reserve, r->reserve_cap));
    CUDA_CHECK(cudaMemcpyAsync(r->seq_dev, r->seq_host, sizeof(int32_t) * (size_t)B, cudaMemcpyHostToDevice,
                               stream));
    r->len = T;

    CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(dnn, r->rnn, &r->w_bytes));
    CUDA_CHECK(cudaMalloc((void **)&r->w, r->w_bytes));
    CUDA_CHECK(cudaMemsetAsync(r->w, 0, r->w_bytes, stream));
    if (training) CUDA_CHECK(cudaMalloc((void **)&r->dw, r->w_bytes));
    SK_TRY(build_segments(r, layout, err));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    return SK_OK;
}

void sk_cudnn_lstm_free(sk_cudnn_lstm *r) {
    if (r->rnn) cudnnDestroyRNNDescriptor(r->rnn);
    if (r->drop) cudnnDestroyDropoutDescriptor(r->drop);
    if (r->xdesc) cudnnDestroyRNNDataDescriptor(r->xdesc);
    if (r->ydesc) cudnnDestroyRNNDataDescriptor(r->ydesc);
    if (r->hdesc) cudnnDestroyTensorDescriptor(r->hdesc);
    cudaFree(r->w);
    cudaFree(r->dw);
    if (!r->reserve_borrowed) cudaFree(r->reserve);
    cudaFree(r->seq_dev);
    cudaFree(r->segs);
    free(r->seq_host);
    free(r->reserve_at);
    memset(r, 0, sizeof *r);
}

sk_status sk_cudnn_lstm_set_len(sk_cudnn_lstm *r, int len, sk_error *err) {
    if (len == r->len) return SK_OK;
    if (len < 1 || len > r->T)
        return sk_fail(err, SK_ERR_ARG, "window of %d steps outside [1, %d]", len, r->T);
    SK_TRY(set_descriptors(r, len, err));
    if (r->work_infer > r->work_cap || r->work_train > r->work_cap || r->reserve_train > r->reserve_cap)
        return sk_fail(err, SK_ERR_DEVICE,
                             "cuDNN asks for more temporary memory at %d steps (work %zu, reserve %zu bytes) than "
                             "at %d (%zu, %zu)", len, r->work_infer > r->work_train ? r->work_infer : r->work_train,
                             r->reserve_train, r->T, r->work_cap, r->reserve_cap);
    // Ordered on the stream before any kernel that reads it; the host array is staged at
    // once, so later edits of seq_host cannot race with this copy.
    CUDA_CHECK(cudaMemcpyAsync(r->seq_dev, r->seq_host, sizeof(int32_t) * (size_t)r->B, cudaMemcpyHostToDevice,
                               r->stream));
    r->len = len;
    return SK_OK;
}

sk_status sk_cudnn_lstm_pack(sk_cudnn_lstm *r, const float *params, sk_error *err) {
    return copy_segments(r, (float *)params, r->w, 1, err);
}

sk_status sk_cudnn_lstm_unpack(sk_cudnn_lstm *r, float *params, sk_error *err) {
    return copy_segments(r, params, r->w, 0, err);
}

sk_status sk_cudnn_lstm_forward_at(sk_cudnn_lstm *r, int train, void *reserve, const float *x, float *y,
                                   const float *hx, const float *cx, float *hy, float *cy, sk_error *err) {
    if (train && !r->training)
        return sk_fail(err, SK_ERR_ARG, "training forward on an inference-only LSTM");
    CUDNN_CHECK(cudnnRNNForward(r->dnn, r->rnn, train ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE,
                                r->seq_dev, r->xdesc, x, r->ydesc, y, r->hdesc, hx, hy, r->hdesc, cx, cy, r->w_bytes,
                                r->w, train ? r->work_train : r->work_infer, r->work,
                                train ? r->reserve_train : 0, train ? reserve : NULL));
    return SK_OK;
}

sk_status sk_cudnn_lstm_backward_data_at(sk_cudnn_lstm *r, void *reserve, const float *y, const float *dy, float *dx,
                                         const float *hx, const float *cx, const float *dhy, const float *dcy,
                                         float *dhx, float *dcx, sk_error *err) {
    if (!r->training) return sk_fail(err, SK_ERR_ARG, "backward on an inference-only LSTM");
    CUDNN_CHECK(cudnnRNNBackwardData_v8(r->dnn, r->rnn, r->seq_dev, r->ydesc, y, dy, r->xdesc, dx, r->hdesc, hx, dhy,
                                        dhx, r->hdesc, cx, dcy, dcx, r->w_bytes, r->w, r->work_train, r->work,
                                        r->reserve_train, reserve));
    return SK_OK;
}

sk_status sk_cudnn_lstm_add_weight_grads(sk_cudnn_lstm *r, void *reserve, const float *x, const float *y,
                                         const float *hx, sk_error *err) {
    if (!r->training) return sk_fail(err, SK_ERR_ARG, "backward on an inference-only LSTM");
    CUDNN_CHECK(cudnnRNNBackwardWeights_v8(r->dnn, r->rnn, CUDNN_WGRAD_MODE_ADD, r->seq_dev, r->xdesc, x, r->hdesc,
                                           hx, r->ydesc, y, r->w_bytes, r->dw, r->work_train, r->work,
                                           r->reserve_train, reserve));
    return SK_OK;
}

sk_status sk_cudnn_lstm_zero_weight_grads(sk_cudnn_lstm *r, sk_error *err) {
    CUDA_CHECK(cudaMemsetAsync(r->dw, 0, r->w_bytes, r->stream));
    return SK_OK;
}

sk_status sk_cudnn_lstm_unpack_weight_grads(sk_cudnn_lstm *r, float *grads, sk_error *err) {
    return copy_segments(r, grads, r->dw, 0, err);
}

sk_status sk_cudnn_lstm_forward(sk_cudnn_lstm *r, int train, const float *x, float *y, const float *hx,
                                const float *cx, float *hy, float *cy, sk_error *err) {
    return sk_cudnn_lstm_forward_at(r, train, r->reserve, x, y, hx, cx, hy, cy, err);
}

// dhy = dcy = NULL: zero gradient arrives from beyond the window; dhx = dcx = NULL: the
// gradient w.r.t. the carried initial state is not needed.
sk_status sk_cudnn_lstm_backward_data(sk_cudnn_lstm *r, const float *y, const float *dy, float *dx,
                                      const float *hx, const float *cx, sk_error *err) {
    return sk_cudnn_lstm_backward_data_at(r, r->reserve, y, dy, dx, hx, cx, NULL, NULL, NULL, NULL, err);
}

// cuDNN adds into dw (CUDNN_WGRAD_MODE_ADD): it starts from zeros.
sk_status sk_cudnn_lstm_backward_weights(sk_cudnn_lstm *r, const float *x, const float *y, const float *hx,
                                         float *grads, sk_error *err) {
    SK_TRY(sk_cudnn_lstm_zero_weight_grads(r, err));
    SK_TRY(sk_cudnn_lstm_add_weight_grads(r, r->reserve, x, y, hx, err));
    return sk_cudnn_lstm_unpack_weight_grads(r, grads, err);
}

namespace {

// The trial's calls at windows of len, on zeros in buf: x, dx (B, T, E), y, dy (B, T, H),
// hx, cx, hy, cy (L, B, H).
sk_status trial_at(sk_cudnn_lstm *r, int len, float *buf, sk_error *err) {
    const size_t xn = (size_t)r->B * r->T * r->E, yn = (size_t)r->B * r->T * r->H, sn = (size_t)r->L * r->B * r->H;
    float *x = buf, *dx = x + xn, *y = dx + xn, *dy = y + yn, *hx = dy + yn, *cx = hx + sn, *hy = cx + sn,
          *cy = hy + sn;
    SK_TRY(sk_cudnn_lstm_set_len(r, len, err));
    SK_TRY(sk_cudnn_lstm_forward(r, 0, x, y, hx, cx, hy, cy, err));
    if (!r->training) return SK_OK;
    SK_TRY(sk_cudnn_lstm_forward(r, 1, x, y, hx, cx, hy, cy, err));
    SK_TRY(sk_cudnn_lstm_backward_data(r, y, dy, dx, hx, cx, err));
    return sk_cudnn_lstm_add_weight_grads(r, r->reserve, x, y, hx, err);
}

} // namespace

sk_status sk_cudnn_lstm_trial(sk_cudnn_lstm *r, sk_error *err) {
    const size_t xn = (size_t)r->B * r->T * r->E, yn = (size_t)r->B * r->T * r->H, sn = (size_t)r->L * r->B * r->H;
    const size_t bytes = sizeof(float) * (2 * xn + 2 * yn + 4 * sn);
    float *buf = NULL;
    CUDA_CHECK(cudaMalloc((void **)&buf, bytes));
    sk_status st = SK_OK;
    cudaError_t ce = cudaMemsetAsync(buf, 0, bytes, r->stream);
    if (ce != cudaSuccess)
        st = sk_cuda_call_failed(err, "cudaMemsetAsync", cudaGetErrorName(ce), cudaGetErrorString(ce), __FILE__,
                                 __LINE__);
    if (st == SK_OK) st = trial_at(r, r->T, buf, err);
    if (st == SK_OK && r->T > 1) st = trial_at(r, 1, buf, err);
    // The kernels' own failures surface here; buf is freed only after they ran.
    ce = cudaStreamSynchronize(r->stream);
    if (st == SK_OK && ce != cudaSuccess)
        st = sk_cuda_call_failed(err, "cudaStreamSynchronize after the trial calls", cudaGetErrorName(ce),
                                 cudaGetErrorString(ce), __FILE__, __LINE__);
    cudaFree(buf);
    (void)cudaGetLastError();
    if (st == SK_OK) {
        // The weight space and its gradient hold what the trial left; the weights are
        // imported before every forward, and dw is zeroed before every backward.
        st = sk_cudnn_lstm_set_len(r, r->T, err);
    }
    return st;
}

cudaError_t sk_cuda_probe_kernels(void) {
    cudaFuncAttributes attr;
    return cudaFuncGetAttributes(&attr, (const void *)copy_segments_kernel);
}
