// check_libs_emu.cpp: the emulated cuBLAS and cuDNN (cublas_emu.cpp, cudnn_emu.cpp) through
// their public headers on the emulated runtime (cudart_emu.cpp): the contract checks and the
// semantics that the GPU tests (tests/gpu, run on the emulated module) do not reach, since
// the backend uses the libraries correctly. Built with the emulated module
// (-DSHAKESPEARE_CUDA_EMU=ON, tests/emu/backend.cmake).
// defines: main
//
// cuBLAS: Sgemm in all four transpose combinations with padded leading dimensions against a
// naive double loop (tolerance 1e-6 relative: both round one double sum), beta = 0 over NaN,
// alpha read at the call, argument and device checks, TF32 operands; Sgemv with a negative
// increment. cuDNN: persistent algorithms, dropout > 0 and WGRAD_MODE_SET refused with their
// messages; the padded-IO flag; the weight layout (no overlaps, not the packed order,
// descriptor shapes); temporary sizes; refused small or host buffers; hx NULL as zeros; the
// workspace as scratch; ADD accumulating; a second training forward overwriting the reserve
// space; last, devSeqLengths read when the op runs (a sticky fault: nothing runs after it).
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "test_util.h"

namespace {

float *dev_copy(const std::vector<float> &h) {
    float *d = nullptr;
    CHECK(cudaMalloc((void **)&d, h.size() * sizeof(float) + 4) == cudaSuccess);
    CHECK(cudaMemcpy(d, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
    return d;
}
std::vector<float> host_copy(const float *d, size_t n) {
    std::vector<float> h(n);
    CHECK(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
    return h;
}
std::vector<float> ramp(size_t n, float scale) {
    std::vector<float> v(n);
    for (size_t k = 0; k < n; k++) v[k] = scale * (float)sin(0.7 * (double)k + 0.3);
    return v;
}
bool contains(const char *s, const char *part) { return strstr(s, part) != nullptr; }

void check_cublas(cudaStream_t s) {
    cublasHandle_t h;
    CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasSetStream(h, s) == CUBLAS_STATUS_SUCCESS);
    const int m = 5, n = 4, k = 3;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            const int a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
            const int lda = a_rows + 2, ldb = b_rows + 1, ldc = m + 3;
            std::vector<float> A = ramp((size_t)lda * a_cols, 1.0f), B = ramp((size_t)ldb * b_cols, 0.5f);
            std::vector<float> C((size_t)ldc * n, NAN); // beta = 0: never read
            float *dA = dev_copy(A), *dB = dev_copy(B), *dC = dev_copy(C);
            float alpha = 1.5f, beta = 0.0f;
            CHECK(cublasSgemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, dA, lda,
                              dB, ldb, &beta, dC, ldc) == CUBLAS_STATUS_SUCCESS);
            alpha = 100.0f; // host pointer mode: the call read 1.5 already
            C = host_copy(dC, C.size());
            for (int i = 0; i < m; i++)
                for (int j = 0; j < n; j++) {
                    double ref = 0;
                    for (int p = 0; p < k; p++)
                        ref += (double)(ta ? A[p + (size_t)i * lda] : A[i + (size_t)p * lda]) *
                               (tb ? B[j + (size_t)p * ldb] : B[p + (size_t)j * ldb]);
                    ref *= 1.5;
                    CHECK(fabs(C[i + (size_t)j * ldc] - ref) <= 1e-6 * fabs(ref) + 1e-7);
                }
            for (int j = 0; j < n; j++) CHECK(isnan(C[m + (size_t)j * ldc])); // rows past m untouched
            cudaFree(dA), cudaFree(dB), cudaFree(dC);
        }
    float one = 1.0f, zero = 0.0f, host[16] = {0};
    fprintf(stderr, "(the next four lines are the refusals this test expects)\n");
    float *d = dev_copy(std::vector<float>(64, 1.0f));
    CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 2, &one, d, 3, d, 2, &zero, d, 4) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 2, 2, &one, d, 4, d, 2, &zero, d, 4) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, host, 2, d, 2, &zero, d, 2) ==
          CUBLAS_STATUS_EXECUTION_FAILED);
    // TF32: 1 + 2^-12 rounds to 1 (10 mantissa bits), 1 + 2^-10 stays.
    std::vector<float> a2 = {1.0f + 0x1p-12f, 1.0f + 0x1p-10f}, b2 = {1.0f, 1.0f};
    float *dA = dev_copy(a2), *dB = dev_copy(b2), *dC = dev_copy({0.0f});
    CHECK(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 1, 1, 2, &one, dA, 2, dB, 2, &zero, dC, 1) == CUBLAS_STATUS_SUCCESS);
    CHECK(host_copy(dC, 1)[0] == 2.0f + 0x1p-10f);
    CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 1, 1, 2, &one, dA, 2, dB, 2, &zero, dC, 1) == CUBLAS_STATUS_SUCCESS);
    CHECK(host_copy(dC, 1)[0] == 2.0f + 0x1p-12f + 0x1p-10f);
    // gemv, y = A^T x with x walked backwards (incx = -1): A (2, 2) = [1 3; 2 4], x = {5, 7}.
    float *gA = dev_copy({1, 2, 3, 4}), *gx = dev_copy({5, 7}), *gy = dev_copy({NAN, NAN});
    CHECK(cublasSgemv(h, CUBLAS_OP_T, 2, 2, &one, gA, 2, gx, -1, &zero, gy, 1) == CUBLAS_STATUS_SUCCESS);
    const std::vector<float> y = host_copy(gy, 2);
    CHECK(y[0] == 1 * 7 + 2 * 5 && y[1] == 3 * 7 + 4 * 5);
    CHECK(cublasSgemv(h, CUBLAS_OP_N, 2, 2, &one, gA, 2, gx, 0, &zero, gy, 1) == CUBLAS_STATUS_INVALID_VALUE);
    cudaFree(d), cudaFree(dA), cudaFree(dB), cudaFree(dC), cudaFree(gA), cudaFree(gx), cudaFree(gy);
    CHECK(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS);
    printf("cuBLAS: checked\n");
}

// A small network and its buffers.
struct Net {
    static const int L = 2, H = 5, E = 3, B = 2, T = 4;
    cudnnHandle_t dnn;
    cudnnRNNDescriptor_t rnn;
    cudnnDropoutDescriptor_t drop;
    cudnnRNNDataDescriptor_t xd, yd;
    cudnnTensorDescriptor_t hd;
    size_t w_bytes = 0, work = 0, reserve = 0;
    float *w, *dw, *x, *y, *dy, *dx, *hx, *cx;
    void *ws, *rs;
    int32_t *lens_dev;
    int lens[B] = {T, T};
};

std::string last_error() {
    char msg[512];
    cudnnGetLastErrorString(msg, sizeof msg);
    return msg;
}

void setup(Net &n, cudaStream_t s) {
    CHECK(cudnnCreate(&n.dnn) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnSetStream(n.dnn, s) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnCreateRNNDescriptor(&n.rnn) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnCreateDropoutDescriptor(&n.drop) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnSetDropoutDescriptor(n.drop, n.dnn, 0.5f, nullptr, 0, 1) == CUDNN_STATUS_NOT_SUPPORTED);
    CHECK(contains(last_error().c_str(), "does not model cuDNN's dropout"));
    CHECK(cudnnSetDropoutDescriptor(n.drop, n.dnn, 0.0f, nullptr, 0, 1) == CUDNN_STATUS_SUCCESS);
    auto set = [&](cudnnRNNAlgo_t algo, uint32_t aux) {
        return cudnnSetRNNDescriptor_v8(n.rnn, algo, CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS, CUDNN_UNIDIRECTIONAL,
                                        CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, n.E, n.H,
                                        n.H, n.L, n.drop, aux);
    };
    for (cudnnRNNAlgo_t a : {CUDNN_RNN_ALGO_PERSIST_STATIC, CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H,
                             CUDNN_RNN_ALGO_PERSIST_DYNAMIC}) {
        CHECK(set(a, CUDNN_RNN_PADDED_IO_ENABLED) == CUDNN_STATUS_NOT_SUPPORTED);
        CHECK(contains(last_error().c_str(), "not modelled by the emulated cuDNN"));
    }
    CHECK(set(CUDNN_RNN_ALGO_STANDARD, 0) == CUDNN_STATUS_SUCCESS); // padded IO off: unpacked refused below
    CHECK(cudnnCreateRNNDataDescriptor(&n.xd) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnCreateRNNDataDescriptor(&n.yd) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnSetRNNDataDescriptor(n.xd, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED, n.T, n.B, n.E,
                                    n.lens, nullptr) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnSetRNNDataDescriptor(n.yd, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED, n.T, n.B, n.H,
                                    n.lens, nullptr) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnGetRNNTempSpaceSizes(n.dnn, n.rnn, CUDNN_FWD_MODE_TRAINING, n.xd, &n.work, &n.reserve) ==
          CUDNN_STATUS_BAD_PARAM);
    CHECK(contains(last_error().c_str(), "CUDNN_RNN_PADDED_IO_ENABLED"));
    CHECK(set(CUDNN_RNN_ALGO_STANDARD, CUDNN_RNN_PADDED_IO_ENABLED) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnCreateTensorDescriptor(&n.hd) == CUDNN_STATUS_SUCCESS);
    const int dims[3] = {n.L, n.B, n.H}, strides[3] = {n.B * n.H, n.H, 1};
    CHECK(cudnnSetTensorNdDescriptor(n.hd, CUDNN_DATA_FLOAT, 3, dims, strides) == CUDNN_STATUS_SUCCESS);
    // Sizes: inference needs no reserve; a shorter window other sizes.
    size_t w_inf = 0, r_inf = 1, w_short = 0, r_short = 0;
    CHECK(cudnnGetRNNTempSpaceSizes(n.dnn, n.rnn, CUDNN_FWD_MODE_INFERENCE, n.xd, &w_inf, &r_inf) ==
          CUDNN_STATUS_SUCCESS);
    CHECK(r_inf == 0 && w_inf > 0);
    const int short_lens[2] = {1, 1};
    CHECK(cudnnSetRNNDataDescriptor(n.xd, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED, 1, n.B, n.E,
                                    short_lens, nullptr) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnGetRNNTempSpaceSizes(n.dnn, n.rnn, CUDNN_FWD_MODE_TRAINING, n.xd, &w_short, &r_short) ==
          CUDNN_STATUS_SUCCESS);
    CHECK(cudnnSetRNNDataDescriptor(n.xd, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED, n.T, n.B, n.E,
                                    n.lens, nullptr) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnGetRNNTempSpaceSizes(n.dnn, n.rnn, CUDNN_FWD_MODE_TRAINING, n.xd, &n.work, &n.reserve) ==
          CUDNN_STATUS_SUCCESS);
    CHECK(r_short > 0 && r_short < n.reserve && w_short <= n.work);
    CHECK(cudnnGetRNNWeightSpaceSize(n.dnn, n.rnn, &n.w_bytes) == CUDNN_STATUS_SUCCESS);
    const size_t xn = (size_t)n.B * n.T * n.E, yn = (size_t)n.B * n.T * n.H, sn = (size_t)n.L * n.B * n.H;
    n.w = dev_copy(ramp(n.w_bytes / 4, 0.4f));
    n.dw = dev_copy(std::vector<float>(n.w_bytes / 4, 0.0f));
    n.x = dev_copy(ramp(xn, 1.0f)), n.dx = dev_copy(std::vector<float>(xn, NAN));
    n.y = dev_copy(std::vector<float>(yn, NAN)), n.dy = dev_copy(ramp(yn, 0.3f));
    n.hx = dev_copy(std::vector<float>(sn, 0.0f)), n.cx = dev_copy(ramp(sn, 0.2f));
    CHECK(cudaMalloc(&n.ws, n.work) == cudaSuccess && cudaMalloc(&n.rs, n.reserve) == cudaSuccess);
    CHECK(cudaMalloc((void **)&n.lens_dev, sizeof n.lens) == cudaSuccess);
    CHECK(cudaMemcpy(n.lens_dev, n.lens, sizeof n.lens, cudaMemcpyHostToDevice) == cudaSuccess);
}

// Every matrix and bias: inside the weight space, no two overlapping, shapes as documented,
// and not PyTorch's packed order (a bias comes before its layer's matrices).
void check_weight_layout(Net &n) {
    cudnnTensorDescriptor_t md, bd;
    CHECK(cudnnCreateTensorDescriptor(&md) == CUDNN_STATUS_SUCCESS && cudnnCreateTensorDescriptor(&bd) == CUDNN_STATUS_SUCCESS);
    std::vector<std::pair<size_t, size_t>> spans; // (float offset, floats)
    bool bias_first = true;
    for (int l = 0; l < n.L; l++)
        for (int lin = 0; lin <= 8; lin++) {
            void *ma = nullptr, *ba = nullptr;
            CHECK(cudnnGetRNNWeightParams(n.dnn, n.rnn, l, n.w_bytes, n.w, lin, md, &ma, bd, &ba) == CUDNN_STATUS_SUCCESS);
            cudnnDataType_t t;
            int nb = -1, d[3], st[3];
            CHECK(cudnnGetTensorNdDescriptor(md, 3, &t, &nb, d, st) == CUDNN_STATUS_SUCCESS);
            if (lin == 8) { // the projection: not enabled, so it does not exist
                CHECK(nb == 0 && !ma && !ba);
                continue;
            }
            const int cols = lin < 4 && l == 0 ? n.E : n.H;
            CHECK(nb == 3 && d[0] == 1 && d[1] == n.H && d[2] == cols && st[0] == n.H * cols && st[1] == cols && st[2] == 1);
            CHECK(cudnnGetTensorNdDescriptor(bd, 3, &t, &nb, d, st) == CUDNN_STATUS_SUCCESS);
            CHECK(nb == 3 && d[0] == 1 && d[1] == n.H && d[2] == 1);
            spans.push_back({(size_t)((float *)ma - n.w), (size_t)n.H * cols});
            spans.push_back({(size_t)((float *)ba - n.w), (size_t)n.H});
            bias_first &= ba < ma;
        }
    std::sort(spans.begin(), spans.end());
    for (size_t i = 0; i < spans.size(); i++) {
        CHECK((spans[i].first + spans[i].second) * 4 <= n.w_bytes);
        if (i) CHECK(spans[i - 1].first + spans[i - 1].second <= spans[i].first);
    }
    CHECK(bias_first);
    CHECK(cudnnGetRNNWeightParams(n.dnn, n.rnn, n.L, n.w_bytes, n.w, 0, md, nullptr, bd, nullptr) == CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnGetRNNWeightParams(n.dnn, n.rnn, 0, n.w_bytes - 4, n.w, 0, md, nullptr, bd, nullptr) == CUDNN_STATUS_BAD_PARAM);
    cudnnDestroyTensorDescriptor(md), cudnnDestroyTensorDescriptor(bd);
}

// After the sticky fault too: cudaFree still releases memory then.
void teardown(Net &n) {
    for (void *p : {(void *)n.w, (void *)n.dw, (void *)n.x, (void *)n.y, (void *)n.dy, (void *)n.dx, (void *)n.hx,
                    (void *)n.cx, n.ws, n.rs, (void *)n.lens_dev})
        cudaFree(p);
    CHECK(cudnnDestroyTensorDescriptor(n.hd) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnDestroyRNNDataDescriptor(n.xd) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnDestroyRNNDataDescriptor(n.yd) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnDestroyRNNDescriptor(n.rnn) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnDestroyDropoutDescriptor(n.drop) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnDestroy(n.dnn) == CUDNN_STATUS_SUCCESS);
}

cudnnStatus_t forward(Net &n, bool train, const float *x, const float *hx, size_t work, void *rs) {
    return cudnnRNNForward(n.dnn, n.rnn, train ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE, n.lens_dev, n.xd, x,
                           n.yd, n.y, n.hd, hx, nullptr, n.hd, n.cx, nullptr, n.w_bytes, n.w, work, n.ws, n.reserve, rs);
}
cudnnStatus_t backward_data(Net &n) {
    return cudnnRNNBackwardData_v8(n.dnn, n.rnn, n.lens_dev, n.yd, n.y, n.dy, n.xd, n.dx, n.hd, n.hx, nullptr, nullptr,
                                   n.hd, n.cx, nullptr, nullptr, n.w_bytes, n.w, n.work, n.ws, n.reserve, n.rs);
}
cudnnStatus_t backward_weights(Net &n, cudnnWgradMode_t mode) {
    return cudnnRNNBackwardWeights_v8(n.dnn, n.rnn, mode, n.lens_dev, n.xd, n.x, n.hd, n.hx, n.yd, n.y, n.w_bytes, n.dw,
                                      n.work, n.ws, n.reserve, n.rs);
}

void check_cudnn(cudaStream_t s) {
    Net n;
    setup(n, s);
    check_weight_layout(n);
    const size_t xn = (size_t)n.B * n.T * n.E, yn = (size_t)n.B * n.T * n.H;
    float host_x[64] = {0};
    CHECK(forward(n, true, n.x, n.hx, n.work - 1, n.rs) == CUDNN_STATUS_BAD_PARAM);
    CHECK(forward(n, true, n.x, n.hx, n.work, nullptr) == CUDNN_STATUS_BAD_PARAM);
    CHECK(forward(n, false, host_x, n.hx, n.work, nullptr) == CUDNN_STATUS_BAD_PARAM);
    CHECK(contains(last_error().c_str(), "not inside one device allocation"));
    int32_t *keep = n.lens_dev;
    n.lens_dev = (int32_t *)n.lens; // host memory
    CHECK(forward(n, false, n.x, n.hx, n.work, nullptr) == CUDNN_STATUS_BAD_PARAM);
    n.lens_dev = keep;
    // hx NULL is a zero initial state (n.hx holds zeros); the workspace is scratch afterwards.
    CHECK(forward(n, false, n.x, nullptr, n.work, nullptr) == CUDNN_STATUS_SUCCESS);
    const std::vector<float> y_null = host_copy(n.y, yn);
    CHECK(forward(n, false, n.x, n.hx, n.work, nullptr) == CUDNN_STATUS_SUCCESS);
    CHECK(host_copy(n.y, yn) == y_null);
    const std::vector<float> ws = host_copy((float *)n.ws, n.work / 4);
    CHECK(isnan(ws[0]) && isnan(ws[n.work / 4 - 1]));
    // Backward after forward(x2) alone equals backward after forward(x) then forward(x2): the
    // second training forward overwrote the reserve space; after forward(x) alone it differs.
    float *x2 = dev_copy(ramp(xn, -0.8f));
    CHECK(forward(n, true, x2, n.hx, n.work, n.rs) == CUDNN_STATUS_SUCCESS && backward_data(n) == CUDNN_STATUS_SUCCESS);
    const std::vector<float> dx2 = host_copy(n.dx, xn);
    CHECK(forward(n, true, n.x, n.hx, n.work, n.rs) == CUDNN_STATUS_SUCCESS && backward_data(n) == CUDNN_STATUS_SUCCESS);
    const std::vector<float> dx1 = host_copy(n.dx, xn);
    CHECK(forward(n, true, n.x, n.hx, n.work, n.rs) == CUDNN_STATUS_SUCCESS);
    CHECK(forward(n, true, x2, n.hx, n.work, n.rs) == CUDNN_STATUS_SUCCESS && backward_data(n) == CUDNN_STATUS_SUCCESS);
    CHECK(host_copy(n.dx, xn) == dx2 && dx1 != dx2);
    // ADD accumulates into dw (zeros at first): twice is double; SET is refused.
    CHECK(forward(n, true, n.x, n.hx, n.work, n.rs) == CUDNN_STATUS_SUCCESS && backward_data(n) == CUDNN_STATUS_SUCCESS);
    CHECK(backward_weights(n, CUDNN_WGRAD_MODE_ADD) == CUDNN_STATUS_SUCCESS);
    const std::vector<float> g1 = host_copy(n.dw, n.w_bytes / 4);
    CHECK(backward_weights(n, CUDNN_WGRAD_MODE_ADD) == CUDNN_STATUS_SUCCESS);
    const std::vector<float> g2 = host_copy(n.dw, n.w_bytes / 4);
    size_t nonzero = 0;
    for (size_t k = 0; k < g1.size(); k++) {
        CHECK(fabsf(g2[k] - 2.0f * g1[k]) <= 1e-6f * fabsf(g1[k]));
        nonzero += g1[k] != 0.0f;
    }
    const size_t params = (size_t)4 * n.H * (n.E + n.H + 2) + (size_t)(n.L - 1) * 4 * n.H * (2 * n.H + 2);
    CHECK(nonzero > params * 9 / 10 && nonzero <= params); // padding between segments stays 0
    CHECK(backward_weights(n, CUDNN_WGRAD_MODE_SET) == CUDNN_STATUS_NOT_SUPPORTED);
    // devSeqLengths is read when the op runs: wrong lengths there pass the call and fault the device.
    const int32_t wrong[2] = {n.T, n.T - 1};
    CHECK(cudaMemcpy(n.lens_dev, wrong, sizeof wrong, cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK(forward(n, false, n.x, n.hx, n.work, nullptr) == CUDNN_STATUS_SUCCESS);
    fprintf(stderr, "(the next line is the fault this test expects)\n");
    CHECK(cudaStreamSynchronize(s) == cudaErrorLaunchFailure);
    cudaFree(x2);
    teardown(n);
    printf("cuDNN: checked\n");
}

} // namespace

int main() {
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
    check_cublas(s);
    check_cudnn(s); // last: ends with a sticky fault
    cudaStreamDestroy(s);
    return sk_test_done("emu_check_libs");
}
