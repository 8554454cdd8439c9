// cublas_emu.cpp: the cuBLAS functions the backend calls (src/cuda), defined for the
// emulated device (emu_runtime.h), so that the emulated CUDA module links without libcublas.
// defines: cublasCreate_v2, cublasDestroy_v2, cublasSetStream_v2, cublasSetMathMode,
//          cublasSetWorkspace_v2, cublasSgemm_v2, cublasSgemv_v2, cublasGetStatusName
//          (cublas_v2.h maps cublasCreate, cublasSgemm, ... to the _v2 names)
//
// Semantics from the cuBLAS documentation, https://docs.nvidia.com/cuda/cublas/index.html:
//   - column-major matrices, op(X) = X, X^T (CUBLAS_OP_N, CUBLAS_OP_T; CUBLAS_OP_C is X^T
//     for real data), leading dimensions in elements ("cublas<t>gemm()", "cublas<t>gemv()");
//   - pointer mode host (the handle's default, cublasSetPointerMode is not used): alpha and
//     beta are read when the call is made, their values travel with the enqueued work;
//   - beta == 0: C (y) is written without being read ("if beta == 0 then C does not have to
//     be a valid input"), so NaN there does not propagate; alpha == 0: A, B (A, x) unread;
//   - argument checks of the "Return" tables -> CUBLAS_STATUS_INVALID_VALUE (below);
//   - the work runs on the handle's stream (cublasSetStream, default 0), after the call
//     returns (emu_runtime.h); cublasSetStream also resets the workspace to the library's
//     own ("cublasSetStream()": "unconditionally resets the cuBLAS library workspace back
//     to the default workspace pool");
//   - CUBLAS_TF32_TENSOR_OP_MATH "allows" TF32 tensor cores for single-precision routines
//     ("cublasMath_t"): then every A, B (gemm) and A, x (gemv) element is rounded to TF32
//     as the tensor core reads it (cvt.rna, tf32_emu.h), the worst the mode permits.
// Checks a GPU makes by faulting: every matrix and vector a call touches must lie inside
// one cudaMalloc allocation (sk_emu_device_range); here the call returns
// CUBLAS_STATUS_EXECUTION_FAILED at once and says why on stderr ("emulated cuBLAS: ").
// Sums: in double, rounded once to fp32. The GPU's summation order (tiles, split-K) is
// unspecified, so no fp32 order is more right than another; the double sum is the exact
// product that the CPU reference approximates, and the parity tests' tolerances are stated
// against it. The GPU's own fp32 rounding is therefore not reproduced (a GPU run still
// has to confirm the tolerances).
// The user workspace (cublasSetWorkspace) is scratch the library may use in any call: each
// call here overwrites its first 64 KiB with NaN bytes, so data kept there is lost.
// Not modelled: CUBLAS_TENSOR_OP_MATH (fp16 operands) and CUBLAS_FP32_EMULATED_BF16X9_MATH:
// a gemm under them returns CUBLAS_STATUS_NOT_SUPPORTED.
#include <stdio.h>
#include <string.h>

#include <mutex>
#include <set>
#include <vector>

#include <cublas_v2.h>

#include "emu_runtime.h"
#include "tf32_emu.h"

struct cublasContext { // cublas_api.h's opaque handle
    cudaStream_t stream = 0;
    cublasMath_t math = CUBLAS_DEFAULT_MATH;
    void *workspace = nullptr; // user workspace, device memory; nullptr: the library's own
    size_t workspace_bytes = 0;
};

namespace {

std::mutex g_mutex;
std::set<cublasContext *> g_handles; // live handles

bool live(cublasHandle_t h) {
    std::lock_guard<std::mutex> lock(g_mutex);
    return h && g_handles.count(h);
}

cublasStatus_t invalid(const char *call, const char *why) {
    fprintf(stderr, "emulated cuBLAS: %s: %s\n", call, why);
    return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t not_device(const char *call, const char *what) {
    fprintf(stderr, "emulated cuBLAS: %s: %s is not (wholly) inside device memory; a GPU would fault\n", call, what);
    return CUBLAS_STATUS_EXECUTION_FAILED;
}

bool valid_op(cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

// Elements spanned by a column-major rows x cols matrix with leading dimension ld.
size_t span(int rows, int cols, int ld) { return (size_t)ld * (size_t)(cols - 1) + (size_t)rows; }

// What the math mode does to an fp32 operand: 0 exact, 1 TF32, -1 not modelled.
int operand_mode(cublasMath_t math) {
    switch ((int)math & 0xf) { // the low bits name the mode, 16 is a flag
    case CUBLAS_DEFAULT_MATH: // fp32 routines never use TF32 here (needs the TF32 mode)
    case CUBLAS_PEDANTIC_MATH: return 0;
    case CUBLAS_TF32_TENSOR_OP_MATH: return 1;
    default: return -1;
    }
}

// Scratch use of the user workspace by the call (see the top of the file).
void clobber_workspace(void *ws, size_t bytes) {
    if (ws) memset(ws, 0xff, bytes < ((size_t)64 << 10) ? bytes : ((size_t)64 << 10));
}

cublasStatus_t enqueue(cublasHandle_t h, std::function<void()> op) {
    cudaError_t e = sk_emu_enqueue(h->stream, std::move(op));
    if (e == cudaSuccess) return CUBLAS_STATUS_SUCCESS;
    fprintf(stderr, "emulated cuBLAS: launch on the handle's stream failed: %s\n", cudaGetErrorName(e));
    return CUBLAS_STATUS_EXECUTION_FAILED;
}

} // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle) {
    if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
    cublasContext *h = new cublasContext();
    std::lock_guard<std::mutex> lock(g_mutex);
    g_handles.insert(h);
    *handle = h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (!handle || !g_handles.erase(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
    if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->stream = stream; // checked when work is enqueued on it, as the runtime does
    handle->workspace = nullptr; // "unconditionally resets the ... workspace"
    handle->workspace_bytes = 0;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
    if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    const int base = (int)mode & ~(int)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    if (base != CUBLAS_DEFAULT_MATH && base != CUBLAS_TENSOR_OP_MATH && base != CUBLAS_PEDANTIC_MATH &&
        base != CUBLAS_TF32_TENSOR_OP_MATH && base != CUBLAS_FP32_EMULATED_BF16X9_MATH &&
        base != CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH)
        return invalid("cublasSetMathMode", "not a cublasMath_t value");
    handle->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}

// "cublasSetWorkspace()": the pointer must be 256-byte aligned, else INVALID_VALUE. Not
// being device memory would fault at the first call that uses it; refused here at once.
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace, size_t bytes) {
    if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if ((uintptr_t)workspace % 256 != 0) return invalid("cublasSetWorkspace", "workspace not 256-byte aligned");
    if (bytes && !sk_emu_device_range(workspace, bytes)) return not_device("cublasSetWorkspace", "the workspace");
    handle->workspace = bytes ? workspace : nullptr;
    handle->workspace_bytes = bytes;
    return CUBLAS_STATUS_SUCCESS;
}

// C (m, n; ldc) = alpha op(A) (m, k) op(B) (k, n) + beta C, column-major.
// "cublas<t>gemm()" Return: INVALID_VALUE if m, n or k < 0; transa, transb not N, T, C;
// lda < max(1, transa == N ? m : k); ldb < max(1, transb == N ? k : n); ldc < max(1, m);
// alpha or beta NULL.
cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                              int n, int k, const float *alpha, const float *A, int lda, const float *B, int ldb,
                              const float *beta, float *C, int ldc) {
    static const char *call = "cublasSgemm";
    if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || k < 0) return invalid(call, "negative m, n or k");
    if (!valid_op(transa) || !valid_op(transb)) return invalid(call, "transa or transb not N, T or C");
    const bool an = transa == CUBLAS_OP_N, bn = transb == CUBLAS_OP_N;
    const int a_rows = an ? m : k, a_cols = an ? k : m, b_rows = bn ? k : n, b_cols = bn ? n : k;
    if (lda < (a_rows > 1 ? a_rows : 1)) return invalid(call, "lda < rows of A");
    if (ldb < (b_rows > 1 ? b_rows : 1)) return invalid(call, "ldb < rows of B");
    if (ldc < (m > 1 ? m : 1)) return invalid(call, "ldc < m");
    if (!alpha || !beta) return invalid(call, "alpha or beta is NULL");
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS; // nothing to compute
    const int mode = operand_mode(handle->math);
    if (mode < 0) {
        fprintf(stderr, "emulated cuBLAS: %s: math mode %d is not modelled\n", call, (int)handle->math);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    const float a = *alpha, b = *beta; // host pointer mode: read now
    const bool products = a != 0.0f && k > 0;
    if (products && !sk_emu_device_range(A, span(a_rows, a_cols, lda) * sizeof(float))) return not_device(call, "A");
    if (products && !sk_emu_device_range(B, span(b_rows, b_cols, ldb) * sizeof(float))) return not_device(call, "B");
    if (!sk_emu_device_range(C, span(m, n, ldc) * sizeof(float))) return not_device(call, "C");
    void *ws = handle->workspace;
    const size_t ws_bytes = handle->workspace_bytes;
    return enqueue(handle, [=] {
        clobber_workspace(ws, ws_bytes);
        // op(A) row i and op(B) column j as contiguous rows of k, rounded as the mode reads them.
        std::vector<double> ar(products ? (size_t)m * k : 0), bc(products ? (size_t)n * k : 0);
        for (int i = 0; i < m && products; i++)
            for (int p = 0; p < k; p++) {
                const float v = an ? A[i + (size_t)p * lda] : A[p + (size_t)i * lda];
                ar[(size_t)i * k + p] = mode ? sk_emu_tf32(v) : v;
            }
        for (int j = 0; j < n && products; j++)
            for (int p = 0; p < k; p++) {
                const float v = bn ? B[p + (size_t)j * ldb] : B[j + (size_t)p * ldb];
                bc[(size_t)j * k + p] = mode ? sk_emu_tf32(v) : v;
            }
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                double s = 0.0;
                for (int p = 0; p < k && products; p++) s += ar[(size_t)i * k + p] * bc[(size_t)j * k + p];
                float &c = C[i + (size_t)j * ldc];
                const double r = (double)a * s + (b != 0.0f ? (double)b * c : 0.0);
                c = (float)r;
            }
    });
}

// y = alpha op(A) x + beta y; A (m, n; lda) column-major; x has n elements (m for T), y m (n).
// "cublas<t>gemv()" Return: INVALID_VALUE if m or n < 0, incx or incy == 0, trans not N, T,
// C, lda < max(1, m), alpha or beta NULL. Negative increments walk the vector backwards
// from its last element, as in BLAS.
cublasStatus_t cublasSgemv_v2(cublasHandle_t handle, cublasOperation_t trans, int m, int n, const float *alpha,
                              const float *A, int lda, const float *x, int incx, const float *beta, float *y,
                              int incy) {
    static const char *call = "cublasSgemv";
    if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0) return invalid(call, "negative m or n");
    if (incx == 0 || incy == 0) return invalid(call, "incx or incy is 0");
    if (!valid_op(trans)) return invalid(call, "trans not N, T or C");
    if (lda < (m > 1 ? m : 1)) return invalid(call, "lda < m");
    if (!alpha || !beta) return invalid(call, "alpha or beta is NULL");
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    const int mode = operand_mode(handle->math);
    if (mode < 0) {
        fprintf(stderr, "emulated cuBLAS: %s: math mode %d is not modelled\n", call, (int)handle->math);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    const bool tn = trans == CUBLAS_OP_N;
    const int xn = tn ? n : m, yn = tn ? m : n;
    const size_t ax = (size_t)(incx > 0 ? incx : -incx), ay = (size_t)(incy > 0 ? incy : -incy);
    const float a = *alpha, b = *beta;
    const bool products = a != 0.0f;
    if (products && !sk_emu_device_range(A, span(m, n, lda) * sizeof(float))) return not_device(call, "A");
    if (products && !sk_emu_device_range(x, ((size_t)(xn - 1) * ax + 1) * sizeof(float))) return not_device(call, "x");
    if (!sk_emu_device_range(y, ((size_t)(yn - 1) * ay + 1) * sizeof(float))) return not_device(call, "y");
    void *ws = handle->workspace;
    const size_t ws_bytes = handle->workspace_bytes;
    return enqueue(handle, [=] {
        clobber_workspace(ws, ws_bytes);
        auto xe = [&](int p) { return x[(size_t)(incx > 0 ? p : xn - 1 - p) * ax]; };
        for (int r = 0; r < yn; r++) {
            double s = 0.0;
            for (int p = 0; p < xn && products; p++) {
                const float av = tn ? A[r + (size_t)p * lda] : A[p + (size_t)r * lda], xv = xe(p);
                s += (double)(mode ? sk_emu_tf32(av) : av) * (double)(mode ? sk_emu_tf32(xv) : xv);
            }
            float &yv = y[(size_t)(incy > 0 ? r : yn - 1 - r) * ay];
            yv = (float)((double)a * s + (b != 0.0f ? (double)b * yv : 0.0));
        }
    });
}

const char *cublasGetStatusName(cublasStatus_t status) {
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

} // extern "C"
