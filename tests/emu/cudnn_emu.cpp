// cudnn_emu.cpp: the cuDNN functions the backend calls (src/cuda: cudnn_rnn.cu, lstm_impl_cudnn.cu,
// cuda_version.cu, math_mode.h, cuda_check.h), defined for the emulated device
// (emu_runtime.h), so that the emulated CUDA module links without libcudnn. The arguments are
// checked against cuDNN 9's documented contract; the LSTM arithmetic is cudnn_emu_lstm.cpp's.
// defines: cudnnGetVersion, cudnnGetErrorString, cudnnGetLastErrorString, cudnnCreate,
//          cudnnDestroy, cudnnSetStream, cudnnCreateTensorDescriptor,
//          cudnnDestroyTensorDescriptor, cudnnSetTensorNdDescriptor, cudnnGetTensorNdDescriptor,
//          cudnnCreateDropoutDescriptor, cudnnDestroyDropoutDescriptor, cudnnSetDropoutDescriptor,
//          cudnnCreateRNNDescriptor, cudnnDestroyRNNDescriptor, cudnnSetRNNDescriptor_v8,
//          cudnnGetRNNDescriptor_v8, cudnnBuildRNNDynamic, cudnnCreateRNNDataDescriptor,
//          cudnnDestroyRNNDataDescriptor, cudnnSetRNNDataDescriptor, cudnnGetRNNWeightSpaceSize,
//          cudnnGetRNNWeightParams, cudnnGetRNNTempSpaceSizes, cudnnRNNForward,
//          cudnnRNNBackwardData_v8, cudnnRNNBackwardWeights_v8
//
// The contract, from the cuDNN 9 API reference (cudnn_adv and cudnn_ops libraries:
// https://docs.nvidia.com/deeplearning/cudnn/latest/api/cudnn-adv-library.html,
// https://docs.nvidia.com/deeplearning/cudnn/latest/api/cudnn-ops-library.html,
// https://docs.nvidia.com/deeplearning/cudnn/latest/api/cudnn-graph-library.html) and the
// headers' comments; each check below names its rule. What a GPU does with a broken
// contract (garbage, a fault) is here a fault on the device (sk_emu_fault) or an error
// status with cudnnGetLastErrorString saying why, whichever comes first.
// Modelled: CUDNN_LSTM, CUDNN_GRU, CUDNN_RNN_TANH, CUDNN_RNN_DOUBLE_BIAS, CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, fp32
// data and math precision, no projection (projSize == hiddenSize), dropout probability 0,
// CUDNN_RNN_ALGO_STANDARD, every sequence of the full maxSeqLength, all three data layouts.
// Refused with CUDNN_STATUS_NOT_SUPPORTED and "not modelled by the emulated cuDNN": the
// rest, the persistent algorithms included (at cudnnSetRNNDescriptor_v8, whose documented
// NOT_SUPPORTED is "an incompatible or unsupported combination of input arguments").
// Math types: CUDNN_FMA_MATH computes with exact fp32 operands; every other type permits
// tensor cores, TF32 for fp32 data on Ampere and later ("cudnnMathType_t"), so every
// matrix-product operand is rounded to TF32, the worst the type permits.
// Sums in double, rounded once to fp32: the GPU's summation order is unspecified, and the
// parity tests compare against the CPU reference with stated tolerances.
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <cudnn.h>

#include "cudnn_emu_lstm.h"
#include "emu_runtime.h"

// The headers' opaque types.
struct cudnnContext {
    cudaStream_t stream = 0; // cudnnSetStream; default: the NULL stream
};
struct cudnnTensorStruct {
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    int nb = 0; // 0: describes nothing (also what cudnnGetRNNWeightParams reports for no matrix)
    int dims[CUDNN_DIM_MAX] = {}, strides[CUDNN_DIM_MAX] = {};
};
struct cudnnDropoutStruct {
    float p = 0.0f;
};
struct cudnnRNNStruct {
    bool set = false;
    cudnnRNNAlgo_t algo = CUDNN_RNN_ALGO_STANDARD;
    cudnnRNNMode_t cell = CUDNN_LSTM;
    cudnnRNNBiasMode_t bias = CUDNN_RNN_DOUBLE_BIAS;
    cudnnDirectionMode_t dir = CUDNN_UNIDIRECTIONAL;
    cudnnRNNInputMode_t input = CUDNN_LINEAR_INPUT;
    cudnnDataType_t data = CUDNN_DATA_FLOAT, prec = CUDNN_DATA_FLOAT;
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
    int32_t in = 0, hid = 0, proj = 0, layers = 0;
    cudnnDropoutDescriptor_t drop = nullptr;
    uint32_t aux = 0;
};
struct cudnnRNNDataStruct {
    bool set = false;
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    cudnnRNNDataLayout_t layout = CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED;
    int max_len = 0, batch = 0, width = 0;
    std::vector<int> lens; // (batch) the host seqLengthArray
};

namespace {

std::mutex g_mutex;
std::set<const void *> g_live; // every live handle and descriptor
thread_local std::string g_last_error;

cudnnStatus_t fail(cudnnStatus_t s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
cudnnStatus_t fail(cudnnStatus_t s, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    g_last_error = buf;
    return s;
}

bool live(const void *p) {
    std::lock_guard<std::mutex> lock(g_mutex);
    return p && g_live.count(p);
}

template <class T> cudnnStatus_t create(T **out, const char *call) {
    if (!out) return fail(CUDNN_STATUS_BAD_PARAM, "%s: the output pointer is NULL", call);
    T *p = new T();
    std::lock_guard<std::mutex> lock(g_mutex);
    g_live.insert(p);
    *out = p;
    return CUDNN_STATUS_SUCCESS;
}

// The Destroy*Descriptor functions do nothing for NULL (cudnnDestroyTensorDescriptor: "When
// the input pointer is NULL, this function performs no destroy operation").
template <class T> cudnnStatus_t destroy(T *p, const char *call) {
    if (!p) return CUDNN_STATUS_SUCCESS;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (!g_live.erase(p)) return fail(CUDNN_STATUS_BAD_PARAM, "%s: not a live object", call);
    }
    delete p;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t not_modelled(const char *call, const char *what) {
    return fail(CUDNN_STATUS_NOT_SUPPORTED, "%s: %s is not modelled by the emulated cuDNN (tests/emu/cudnn_emu.cpp)",
                call, what);
}

const char *algo_name(cudnnRNNAlgo_t a) {
    switch (a) {
    case CUDNN_RNN_ALGO_PERSIST_STATIC: return "CUDNN_RNN_ALGO_PERSIST_STATIC";
    case CUDNN_RNN_ALGO_PERSIST_DYNAMIC: return "CUDNN_RNN_ALGO_PERSIST_DYNAMIC";
    case CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H: return "CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H";
    default: return "CUDNN_RNN_ALGO_STANDARD";
    }
}

bool unpacked(cudnnRNNDataLayout_t l) {
    return l == CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED || l == CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED;
}

// The network of a set RNN descriptor (no data shape yet).
cudnnStatus_t network(const char *call, cudnnHandle_t h, cudnnRNNDescriptor_t r, sk_emu_lstm *n) {
    if (!live(h)) return fail(CUDNN_STATUS_BAD_PARAM, "%s: invalid handle", call);
    if (!live(r) || !r->set) return fail(CUDNN_STATUS_BAD_PARAM, "%s: rnnDesc is not a set RNN descriptor", call);
    n->L = r->layers, n->H = r->hid, n->E = r->in, n->mode = (int)r->cell;
    n->tf32 = r->math != CUDNN_FMA_MATH;
    sk_emu_lstm_plan(n);
    return CUDNN_STATUS_SUCCESS;
}

// The network and the data shape of a call: x (and y when given) descriptors as the v8 API
// documents them (cudnnRNNForward: "The same layout type must be specified in xDesc and
// yDesc descriptors. The same sequence lengths must be configured in xDesc, yDesc and in the
// device array devSeqLengths"; x vectors are inputSize wide, y vectors hiddenSize (projSize)
// wide; unpacked layouts need CUDNN_RNN_PADDED_IO_ENABLED, cudnnSetRNNDescriptor_v8's auxFlags).
cudnnStatus_t shape(const char *call, cudnnHandle_t h, cudnnRNNDescriptor_t r, cudnnRNNDataDescriptor_t xd,
                    cudnnRNNDataDescriptor_t yd, sk_emu_lstm *n) {
    cudnnStatus_t s = network(call, h, r, n);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    if (!live(xd) || !xd->set) return fail(CUDNN_STATUS_BAD_PARAM, "%s: xDesc is not a set RNN data descriptor", call);
    if (xd->type != r->data) return fail(CUDNN_STATUS_BAD_PARAM, "%s: xDesc's data type is not rnnDesc's", call);
    if (xd->width != r->in)
        return fail(CUDNN_STATUS_BAD_PARAM, "%s: xDesc's vectorSize %d is not inputSize %d", call, xd->width, r->in);
    if (yd) {
        if (!live(yd) || !yd->set) return fail(CUDNN_STATUS_BAD_PARAM, "%s: yDesc is not a set RNN data descriptor", call);
        if (yd->type != xd->type || yd->layout != xd->layout || yd->max_len != xd->max_len || yd->batch != xd->batch ||
            yd->lens != xd->lens)
            return fail(CUDNN_STATUS_BAD_PARAM,
                        "%s: xDesc and yDesc differ in data type, layout, maxSeqLength, batchSize or seqLengthArray", call);
        if (yd->width != r->proj)
            return fail(CUDNN_STATUS_BAD_PARAM, "%s: yDesc's vectorSize %d is not projSize %d", call, yd->width, r->proj);
    }
    if (unpacked(xd->layout) && !(r->aux & CUDNN_RNN_PADDED_IO_ENABLED))
        return fail(CUDNN_STATUS_BAD_PARAM,
                    "%s: an unpacked data layout needs CUDNN_RNN_PADDED_IO_ENABLED in cudnnSetRNNDescriptor_v8's auxFlags",
                    call);
    for (int len : xd->lens)
        if (len != xd->max_len) return not_modelled(call, "a sequence shorter than maxSeqLength (padded positions)");
    n->B = xd->batch, n->T = xd->max_len;
    n->batch_major = xd->layout == CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED;
    return CUDNN_STATUS_SUCCESS;
}

// hDesc, cDesc: {numLayers, batchSize, hiddenSize} fp32, "fully packed" (cudnnRNNForward's
// hDesc and cDesc; without projection and unidirectional both are the same shape).
cudnnStatus_t state_desc(const char *call, const char *name, cudnnTensorDescriptor_t d, const sk_emu_lstm &n) {
    if (!live(d)) return fail(CUDNN_STATUS_BAD_PARAM, "%s: %s is not a live tensor descriptor", call, name);
    const int want[3] = {n.L, n.B, n.H}, packed[3] = {n.B * n.H, n.H, 1};
    bool ok = d->type == CUDNN_DATA_FLOAT && d->nb == 3;
    for (int k = 0; k < 3 && ok; k++) ok = d->dims[k] == want[k] && d->strides[k] == packed[k];
    if (!ok)
        return fail(CUDNN_STATUS_BAD_PARAM,
                    "%s: %s must be fp32 {%d, %d, %d} fully packed (strides {%d, %d, %d}); it is %d-D {%d, %d, %d} "
                    "strides {%d, %d, %d}", call, name, want[0], want[1], want[2], packed[0], packed[1], packed[2],
                    d->nb, d->dims[0], d->dims[1], d->dims[2], d->strides[0], d->strides[1], d->strides[2]);
    return CUDNN_STATUS_SUCCESS;
}

// Every buffer argument is "in GPU memory" (the argument tables of cudnnRNNForward and the
// backward functions); NULL only where the table allows it (hx, cx, hy, cy, dhy, ...).
cudnnStatus_t device(const char *call, const char *name, const void *p, size_t bytes, bool may_be_null) {
    if (!p) return may_be_null ? CUDNN_STATUS_SUCCESS : fail(CUDNN_STATUS_BAD_PARAM, "%s: %s is NULL", call, name);
    if (!sk_emu_device_range(p, bytes))
        return fail(CUDNN_STATUS_BAD_PARAM, "%s: %s (%zu bytes at %p) is not inside one device allocation", call, name,
                    bytes, p);
    return CUDNN_STATUS_SUCCESS;
}

// "weightSpaceSize, workSpaceSize, or reserveSpaceSize is too small" -> CUDNN_STATUS_BAD_PARAM.
cudnnStatus_t space(const char *call, const char *name, const void *p, size_t given, size_t need) {
    if (given < need) return fail(CUDNN_STATUS_BAD_PARAM, "%s: %sSize %zu < %zu bytes needed", call, name, given, need);
    return device(call, name, p, need, false);
}

#define SK_CHECK(call)                                                                                 \
    do {                                                                                               \
        cudnnStatus_t s_ = (call);                                                                     \
        if (s_ != CUDNN_STATUS_SUCCESS) return s_;                                                     \
    } while (0)

// The checks every RNN compute call shares: descriptors, devSeqLengths, weights, workspace,
// reserve space (the backward passes and a training forward need it; "reserveSpace ... cannot
// be NULL" outside inference).
cudnnStatus_t common(const char *call, cudnnHandle_t h, cudnnRNNDescriptor_t r, cudnnRNNDataDescriptor_t xd,
                     cudnnRNNDataDescriptor_t yd, cudnnTensorDescriptor_t hd, cudnnTensorDescriptor_t cd,
                     const int32_t *dev_lens, const char *w_name, size_t wsz, const void *w, size_t worksz,
                     const void *work, bool training, size_t ressz, const void *res, sk_emu_lstm *n) {
    SK_CHECK(shape(call, h, r, xd, yd, n));
    SK_CHECK(state_desc(call, "hDesc", hd, *n));
    if (cd) SK_CHECK(state_desc(call, "cDesc", cd, *n));
    // devSeqLengths: "must be stored in GPU memory as it is accessed asynchronously by GPU
    // kernels, possibly after the ... function exits. This argument cannot be NULL."
    SK_CHECK(device(call, "devSeqLengths", dev_lens, sizeof(int32_t) * (size_t)n->B, false));
    SK_CHECK(space(call, w_name, w, wsz, n->weight_floats * sizeof(float)));
    SK_CHECK(space(call, "workSpace", work, worksz, sk_emu_lstm_work_bytes(*n, training)));
    if (training) SK_CHECK(space(call, "reserveSpace", res, ressz, sk_emu_lstm_reserve_bytes(*n)));
    return CUDNN_STATUS_SUCCESS;
}

// Inside the op: devSeqLengths as the device holds it now must equal the descriptors'
// seqLengthArray (the documented requirement above); a GPU would compute garbage.
bool lengths_agree(const char *call, const int32_t *dev_lens, const std::vector<int> &lens) {
    for (size_t b = 0; b < lens.size(); b++)
        if (dev_lens[b] != lens[b]) {
            sk_emu_fault(std::string(call) + ": devSeqLengths[" + std::to_string(b) + "] = " +
                         std::to_string(dev_lens[b]) + " when the op runs, but the data descriptors' seqLengthArray[" +
                         std::to_string(b) + "] = " + std::to_string(lens[b]) +
                         " (cuDNN requires the same sequence lengths in xDesc, yDesc and devSeqLengths)");
            return false;
        }
    return true;
}

// The workspace "is not used to pass intermediate results between APIs but as a temporary
// read/write buffer" (cudnnGetRNNTempSpaceSizes): after each call it holds NaN bytes.
void scratch(void *work, size_t bytes) { memset(work, 0xff, bytes); }

cudnnStatus_t enqueue(const char *call, cudnnHandle_t h, std::function<void()> op) {
    cudaError_t e = sk_emu_enqueue(h->stream, std::move(op));
    if (e == cudaSuccess) return CUDNN_STATUS_SUCCESS;
    return fail(CUDNN_STATUS_EXECUTION_FAILED_CUDART, "%s: launching on the handle's stream failed: %s", call,
                cudaGetErrorName(e));
}

} // namespace

extern "C" {

size_t cudnnGetVersion(void) { return CUDNN_VERSION; }

const char *cudnnGetErrorString(cudnnStatus_t status) {
    switch ((int)status) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case 2001: return "CUDNN_STATUS_INVALID_VALUE";
    case CUDNN_STATUS_BAD_PARAM_NULL_POINTER: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_INTERNAL_ERROR: return "CUDNN_STATUS_INTERNAL_ERROR";
    case CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED: return "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    case CUDNN_STATUS_EXECUTION_FAILED_CUDART: return "CUDNN_STATUS_EXECUTION_FAILED_CUDART";
    default: return "CUDNN_STATUS_UNKNOWN";
    }
}

// The message of the calling thread's last failure (each failure here leaves one).
void cudnnGetLastErrorString(char *message, size_t max_size) {
    if (message && max_size) snprintf(message, max_size, "%s", g_last_error.c_str());
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle) { return create(handle, "cudnnCreate"); }
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
    if (!handle) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnDestroy: NULL handle");
    return destroy(handle, "cudnnDestroy");
}
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
    if (!live(handle)) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetStream: invalid handle");
    handle->stream = stream; // the runtime checks it when work is enqueued
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *d) { return create(d, "cudnnCreateTensorDescriptor"); }
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) { return destroy(d, "cudnnDestroyTensorDescriptor"); }

// Dimensions and strides > 0 (else BAD_PARAM). The reference says nbDims outside
// [4, CUDNN_DIM_MAX] is NOT_SUPPORTED, yet RNN state descriptors are 3-D (NVIDIA's RNN
// sample sets them with this function); accepted here from 3.
cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t d, cudnnDataType_t type, int nb, const int dims[],
                                         const int strides[]) {
    static const char *call = "cudnnSetTensorNdDescriptor";
    if (!live(d)) return fail(CUDNN_STATUS_BAD_PARAM, "%s: not a live tensor descriptor", call);
    if (nb < 3 || nb > CUDNN_DIM_MAX) return fail(CUDNN_STATUS_NOT_SUPPORTED, "%s: nbDims %d outside [3, 8]", call, nb);
    if (!dims || !strides) return fail(CUDNN_STATUS_BAD_PARAM, "%s: dimA or strideA is NULL", call);
    for (int k = 0; k < nb; k++)
        if (dims[k] <= 0 || strides[k] <= 0)
            return fail(CUDNN_STATUS_BAD_PARAM, "%s: dimA[%d] = %d, strideA[%d] = %d", call, k, dims[k], k, strides[k]);
    d->type = type, d->nb = nb;
    memcpy(d->dims, dims, sizeof(int) * nb);
    memcpy(d->strides, strides, sizeof(int) * nb);
    return CUDNN_STATUS_SUCCESS;
}

// Writes the first min(nbDimsRequested, nbDims) dimensions and strides, and nbDims.
cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t d, int requested, cudnnDataType_t *type, int *nb,
                                         int dims[], int strides[]) {
    static const char *call = "cudnnGetTensorNdDescriptor";
    if (!live(d)) return fail(CUDNN_STATUS_BAD_PARAM, "%s: not a live tensor descriptor", call);
    if (requested < 0 || !type || !nb || (requested > 0 && (!dims || !strides)))
        return fail(CUDNN_STATUS_BAD_PARAM, "%s: bad nbDimsRequested or a NULL output", call);
    *type = d->type, *nb = d->nb;
    for (int k = 0; k < requested && k < d->nb; k++) dims[k] = d->dims[k], strides[k] = d->strides[k];
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateDropoutDescriptor(cudnnDropoutDescriptor_t *d) { return create(d, "cudnnCreateDropoutDescriptor"); }
cudnnStatus_t cudnnDestroyDropoutDescriptor(cudnnDropoutDescriptor_t d) { return destroy(d, "cudnnDestroyDropoutDescriptor"); }

// Probability 0 only: no random numbers are drawn then, so states may be NULL (as PyTorch
// sets "no dropout"). Any other probability in [0, 1] would need cuDNN's generator.
cudnnStatus_t cudnnSetDropoutDescriptor(cudnnDropoutDescriptor_t d, cudnnHandle_t handle, float p, void *states,
                                        size_t state_bytes, unsigned long long seed) {
    static const char *call = "cudnnSetDropoutDescriptor";
    (void)states, (void)state_bytes, (void)seed;
    if (!live(d) || !live(handle)) return fail(CUDNN_STATUS_BAD_PARAM, "%s: invalid descriptor or handle", call);
    if (!(p >= 0.0f && p <= 1.0f)) return fail(CUDNN_STATUS_BAD_PARAM, "%s: dropout %g outside [0, 1]", call, (double)p);
    if (p != 0.0f)
        return fail(CUDNN_STATUS_NOT_SUPPORTED,
                    "%s: dropout %g: the emulation does not model cuDNN's dropout (its generator and masks); only 0",
                    call, (double)p);
    d->p = p;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateRNNDescriptor(cudnnRNNDescriptor_t *d) { return create(d, "cudnnCreateRNNDescriptor"); }
cudnnStatus_t cudnnDestroyRNNDescriptor(cudnnRNNDescriptor_t d) { return destroy(d, "cudnnDestroyRNNDescriptor"); }

// BAD_PARAM for values outside their enums, sizes < 1, projSize > hiddenSize, auxFlags other
// than CUDNN_RNN_PADDED_IO_ENABLED, a dataType/mathPrec pair the reference does not list for
// fp32 (fp32 data computes in fp32); NOT_SUPPORTED for what is not modelled (top of the file).
// The descriptor is left as it was when the call fails.
cudnnStatus_t cudnnSetRNNDescriptor_v8(cudnnRNNDescriptor_t d, cudnnRNNAlgo_t algo, cudnnRNNMode_t cell,
                                       cudnnRNNBiasMode_t bias, cudnnDirectionMode_t dir, cudnnRNNInputMode_t input,
                                       cudnnDataType_t data, cudnnDataType_t prec, cudnnMathType_t math, int32_t in,
                                       int32_t hid, int32_t proj, int32_t layers, cudnnDropoutDescriptor_t drop,
                                       uint32_t aux) {
    static const char *call = "cudnnSetRNNDescriptor_v8";
    if (!live(d)) return fail(CUDNN_STATUS_BAD_PARAM, "%s: not a live RNN descriptor", call);
    if ((unsigned)algo >= (unsigned)CUDNN_RNN_ALGO_COUNT || (unsigned)cell > (unsigned)CUDNN_GRU ||
        (unsigned)bias > (unsigned)CUDNN_RNN_SINGLE_REC_BIAS || (unsigned)dir > (unsigned)CUDNN_BIDIRECTIONAL ||
        (unsigned)input > (unsigned)CUDNN_SKIP_INPUT || (unsigned)math > (unsigned)CUDNN_FMA_MATH)
        return fail(CUDNN_STATUS_BAD_PARAM, "%s: an argument is not a value of its enum", call);
    if (in < 1 || hid < 1 || layers < 1 || proj < 1 || proj > hid)
        return fail(CUDNN_STATUS_BAD_PARAM, "%s: inputSize %d, hiddenSize %d, projSize %d, numLayers %d", call, in, hid,
                    proj, layers);
    if (aux & ~(uint32_t)CUDNN_RNN_PADDED_IO_ENABLED) return fail(CUDNN_STATUS_BAD_PARAM, "%s: auxFlags %#x", call, aux);
    if (drop && !live(drop)) return fail(CUDNN_STATUS_BAD_PARAM, "%s: dropoutDesc is not a live descriptor", call);
    if (data == CUDNN_DATA_FLOAT && prec != CUDNN_DATA_FLOAT)
        return fail(CUDNN_STATUS_BAD_PARAM, "%s: fp32 data needs mathPrec CUDNN_DATA_FLOAT", call);
    if (algo != CUDNN_RNN_ALGO_STANDARD) return not_modelled(call, algo_name(algo));
    if (cell == CUDNN_RNN_RELU) return not_modelled(call, "CUDNN_RNN_RELU");
    if (bias != CUDNN_RNN_DOUBLE_BIAS) return not_modelled(call, "a bias mode other than CUDNN_RNN_DOUBLE_BIAS");
    if (dir != CUDNN_UNIDIRECTIONAL) return not_modelled(call, "CUDNN_BIDIRECTIONAL");
    if (input != CUDNN_LINEAR_INPUT) return not_modelled(call, "CUDNN_SKIP_INPUT");
    if (data != CUDNN_DATA_FLOAT) return not_modelled(call, "a data type other than CUDNN_DATA_FLOAT");
    if (proj != hid) return not_modelled(call, "an LSTM projection (projSize < hiddenSize)");
    d->set = true;
    d->algo = algo, d->cell = cell, d->bias = bias, d->dir = dir, d->input = input;
    d->data = data, d->prec = prec, d->math = math;
    d->in = in, d->hid = hid, d->proj = proj, d->layers = layers, d->drop = drop, d->aux = aux;
    return CUDNN_STATUS_SUCCESS;
}

// Any output pointer may be NULL (not written).
cudnnStatus_t cudnnGetRNNDescriptor_v8(cudnnRNNDescriptor_t d, cudnnRNNAlgo_t *algo, cudnnRNNMode_t *cell,
                                       cudnnRNNBiasMode_t *bias, cudnnDirectionMode_t *dir, cudnnRNNInputMode_t *input,
                                       cudnnDataType_t *data, cudnnDataType_t *prec, cudnnMathType_t *math,
                                       int32_t *in, int32_t *hid, int32_t *proj, int32_t *layers,
                                       cudnnDropoutDescriptor_t *drop, uint32_t *aux) {
    if (!live(d) || !d->set) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetRNNDescriptor_v8: not a set RNN descriptor");
    if (algo) *algo = d->algo;
    if (cell) *cell = d->cell;
    if (bias) *bias = d->bias;
    if (dir) *dir = d->dir;
    if (input) *input = d->input;
    if (data) *data = d->data;
    if (prec) *prec = d->prec;
    if (math) *math = d->math;
    if (in) *in = d->in;
    if (hid) *hid = d->hid;
    if (proj) *proj = d->proj;
    if (layers) *layers = d->layers;
    if (drop) *drop = d->drop;
    if (aux) *aux = d->aux;
    return CUDNN_STATUS_SUCCESS;
}

// Compiles PERSIST_DYNAMIC's kernels; no descriptor here holds that algorithm (refused when
// set), so this checks its arguments and has nothing to build.
cudnnStatus_t cudnnBuildRNNDynamic(cudnnHandle_t handle, cudnnRNNDescriptor_t d, int batch) {
    sk_emu_lstm n;
    SK_CHECK(network("cudnnBuildRNNDynamic", handle, d, &n));
    if (batch < 1) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBuildRNNDynamic: miniBatch %d", batch);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateRNNDataDescriptor(cudnnRNNDataDescriptor_t *d) { return create(d, "cudnnCreateRNNDataDescriptor"); }
cudnnStatus_t cudnnDestroyRNNDataDescriptor(cudnnRNNDataDescriptor_t d) { return destroy(d, "cudnnDestroyRNNDataDescriptor"); }

// BAD_PARAM: a layout outside the enum; maxSeqLength, batchSize or vectorSize < 1;
// seqLengthArray NULL or an element outside [0, maxSeqLength]; in the packed layout, lengths
// not in descending order. paddingFill (host memory) is not needed: every modelled sequence
// is full, so no output position is padding.
cudnnStatus_t cudnnSetRNNDataDescriptor(cudnnRNNDataDescriptor_t d, cudnnDataType_t type, cudnnRNNDataLayout_t layout,
                                        int max_len, int batch, int width, const int lens[], void *padding_fill) {
    static const char *call = "cudnnSetRNNDataDescriptor";
    (void)padding_fill;
    if (!live(d)) return fail(CUDNN_STATUS_BAD_PARAM, "%s: not a live RNN data descriptor", call);
    if ((unsigned)layout > (unsigned)CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED)
        return fail(CUDNN_STATUS_BAD_PARAM, "%s: layout %d", call, (int)layout);
    if (max_len < 1 || batch < 1 || width < 1 || !lens)
        return fail(CUDNN_STATUS_BAD_PARAM, "%s: maxSeqLength %d, batchSize %d, vectorSize %d, seqLengthArray %p",
                    call, max_len, batch, width, (const void *)lens);
    for (int b = 0; b < batch; b++) {
        if (lens[b] < 0 || lens[b] > max_len)
            return fail(CUDNN_STATUS_BAD_PARAM, "%s: seqLengthArray[%d] = %d outside [0, %d]", call, b, lens[b], max_len);
        if (layout == CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED && b > 0 && lens[b] > lens[b - 1])
            return fail(CUDNN_STATUS_BAD_PARAM, "%s: the packed layout needs lengths in descending order", call);
    }
    d->set = true;
    d->type = type, d->layout = layout, d->max_len = max_len, d->batch = batch, d->width = width;
    d->lens.assign(lens, lens + batch);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetRNNWeightSpaceSize(cudnnHandle_t handle, cudnnRNNDescriptor_t d, size_t *bytes) {
    sk_emu_lstm n;
    SK_CHECK(network("cudnnGetRNNWeightSpaceSize", handle, d, &n));
    if (!bytes) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetRNNWeightSpaceSize: weightSpaceSize is NULL");
    *bytes = n.weight_floats * sizeof(float);
    return CUDNN_STATUS_SUCCESS;
}

// Matrix of linLayerID lin in pseudo-layer l: mDesc = fp32 {1, rows, cols} (packed, strides
// {rows * cols, cols, 1}), bias: bDesc = {1, rows, 1}; an LSTM's linLayerID 8 (the projection,
// not enabled) reports 0 dimensions and NULL addresses, as does any "does not exist".
// BAD_PARAM: pseudoLayer outside [0, numLayers), linLayerID outside [0, 2G] (an LSTM's 8, a
// GRU's 5, an RNN's 1: 2G - 1 and the LSTM's projection), a weight space
// smaller than cudnnGetRNNWeightSpaceSize's, or NULL. mDesc/mAddr and bDesc/bAddr may be
// NULL (that half is not reported).
cudnnStatus_t cudnnGetRNNWeightParams(cudnnHandle_t handle, cudnnRNNDescriptor_t d, int32_t layer, size_t wsz,
                                      const void *ws, int32_t lin, cudnnTensorDescriptor_t mdesc, void **maddr,
                                      cudnnTensorDescriptor_t bdesc, void **baddr) {
    static const char *call = "cudnnGetRNNWeightParams";
    sk_emu_lstm n;
    SK_CHECK(network(call, handle, d, &n));
    if (layer < 0 || layer >= n.L || lin < 0 || lin > (n.G == 4 ? 8 : 2 * n.G - 1))
        return fail(CUDNN_STATUS_BAD_PARAM, "%s: pseudoLayer %d (of %d), linLayerID %d", call, layer, n.L, lin);
    if (wsz < n.weight_floats * sizeof(float) || !ws)
        return fail(CUDNN_STATUS_BAD_PARAM, "%s: weight space %p of %zu bytes, %zu needed", call, ws, wsz,
                    n.weight_floats * sizeof(float));
    if ((mdesc && !live(mdesc)) || (bdesc && !live(bdesc)))
        return fail(CUDNN_STATUS_BAD_PARAM, "%s: mDesc or bDesc is not a live tensor descriptor", call);
    const bool exists = lin < 2 * n.G;
    const int rows = n.H, cols = exists ? sk_emu_lstm_cols(n, layer, lin) : 0;
    if (mdesc) {
        *mdesc = cudnnTensorStruct();
        if (exists) {
            mdesc->nb = 3;
            mdesc->dims[0] = 1, mdesc->dims[1] = rows, mdesc->dims[2] = cols;
            mdesc->strides[0] = rows * cols, mdesc->strides[1] = cols, mdesc->strides[2] = 1;
        }
    }
    if (bdesc) {
        *bdesc = cudnnTensorStruct();
        if (exists) {
            bdesc->nb = 3;
            bdesc->dims[0] = 1, bdesc->dims[1] = rows, bdesc->dims[2] = 1;
            bdesc->strides[0] = rows, bdesc->strides[1] = 1, bdesc->strides[2] = 1;
        }
    }
    float *base = (float *)ws;
    if (maddr) *maddr = exists ? base + n.mat[layer * 2 * n.G + lin] : nullptr;
    if (baddr) *baddr = exists ? base + n.bias[layer * 2 * n.G + lin] : nullptr;
    return CUDNN_STATUS_SUCCESS;
}

// Sizes for xDesc's current maxSeqLength and batchSize ("When RNN data dimensions change,
// cudnnGetRNNTempSpaceSizes() must be called again because RNN temporary buffer sizes are
// not monotonic"); inference needs no reserve space (0). NULL outputs are not written.
cudnnStatus_t cudnnGetRNNTempSpaceSizes(cudnnHandle_t handle, cudnnRNNDescriptor_t d, cudnnForwardMode_t mode,
                                        cudnnRNNDataDescriptor_t xd, size_t *work, size_t *reserve) {
    static const char *call = "cudnnGetRNNTempSpaceSizes";
    sk_emu_lstm n;
    SK_CHECK(shape(call, handle, d, xd, nullptr, &n));
    if (mode != CUDNN_FWD_MODE_INFERENCE && mode != CUDNN_FWD_MODE_TRAINING)
        return fail(CUDNN_STATUS_BAD_PARAM, "%s: fwdMode %d", call, (int)mode);
    const bool training = mode == CUDNN_FWD_MODE_TRAINING;
    if (work) *work = sk_emu_lstm_work_bytes(n, training);
    if (reserve) *reserve = training ? sk_emu_lstm_reserve_bytes(n) : 0;
    return CUDNN_STATUS_SUCCESS;
}

// x (B, T, E) -> y (B, T, H) in xDesc's layout; hx, cx -> hy, cy (L, B, H). A training
// forward stores in the reserve space what the backward passes read.
cudnnStatus_t cudnnRNNForward(cudnnHandle_t handle, cudnnRNNDescriptor_t d, cudnnForwardMode_t mode,
                              const int32_t dev_lens[], cudnnRNNDataDescriptor_t xd, const void *x,
                              cudnnRNNDataDescriptor_t yd, void *y, cudnnTensorDescriptor_t hd, const void *hx, void *hy,
                              cudnnTensorDescriptor_t cd, const void *cx, void *cy, size_t wsz, const void *w,
                              size_t worksz, void *work, size_t ressz, void *res) {
    static const char *call = "cudnnRNNForward";
    if (mode != CUDNN_FWD_MODE_INFERENCE && mode != CUDNN_FWD_MODE_TRAINING)
        return fail(CUDNN_STATUS_BAD_PARAM, "%s: fwdMode %d", call, (int)mode);
    const bool training = mode == CUDNN_FWD_MODE_TRAINING;
    sk_emu_lstm n;
    SK_CHECK(common(call, handle, d, xd, yd, hd, cd, dev_lens, "weightSpace", wsz, w, worksz, work, training, ressz, res,
                    &n));
    const size_t xb = sizeof(float) * n.B * n.T * n.E, yb = sizeof(float) * n.B * n.T * n.H,
                 sb = sizeof(float) * n.L * n.B * n.H;
    SK_CHECK(device(call, "x", x, xb, false));
    SK_CHECK(device(call, "y", y, yb, false));
    SK_CHECK(device(call, "hx", hx, sb, true)); // NULL: "initialized to zero"
    SK_CHECK(device(call, "cx", cx, sb, true));
    SK_CHECK(device(call, "hy", hy, sb, true)); // NULL: "will not be saved"
    SK_CHECK(device(call, "cy", cy, sb, true));
    const std::vector<int> lens = xd->lens;
    const size_t work_bytes = sk_emu_lstm_work_bytes(n, training);
    return enqueue(call, handle, [=] {
        if (!lengths_agree(call, dev_lens, lens)) return;
        sk_emu_lstm_forward(n, training, (const float *)w, (const float *)x, (float *)y, (const float *)hx,
                            (const float *)cx, (float *)hy, (float *)cy, work, training ? res : nullptr);
        scratch(work, work_bytes);
    });
}

// dx from dy, dhy, dcy (NULL: zero) through the training forward that filled the reserve
// space; dhx, dcx NULL: not written. y "cannot be NULL".
cudnnStatus_t cudnnRNNBackwardData_v8(cudnnHandle_t handle, cudnnRNNDescriptor_t d, const int32_t dev_lens[],
                                      cudnnRNNDataDescriptor_t yd, const void *y, const void *dy,
                                      cudnnRNNDataDescriptor_t xd, void *dx, cudnnTensorDescriptor_t hd, const void *hx,
                                      const void *dhy, void *dhx, cudnnTensorDescriptor_t cd, const void *cx,
                                      const void *dcy, void *dcx, size_t wsz, const void *w, size_t worksz, void *work,
                                      size_t ressz, void *res) {
    static const char *call = "cudnnRNNBackwardData_v8";
    sk_emu_lstm n;
    SK_CHECK(common(call, handle, d, xd, yd, hd, cd, dev_lens, "weightSpace", wsz, w, worksz, work, true, ressz, res, &n));
    const size_t xb = sizeof(float) * n.B * n.T * n.E, yb = sizeof(float) * n.B * n.T * n.H,
                 sb = sizeof(float) * n.L * n.B * n.H;
    SK_CHECK(device(call, "y", y, yb, false));
    SK_CHECK(device(call, "dy", dy, yb, false));
    SK_CHECK(device(call, "dx", dx, xb, false));
    SK_CHECK(device(call, "hx", hx, sb, true));
    SK_CHECK(device(call, "dhy", dhy, sb, true));
    SK_CHECK(device(call, "dhx", dhx, sb, true));
    SK_CHECK(device(call, "cx", cx, sb, true));
    SK_CHECK(device(call, "dcy", dcy, sb, true));
    SK_CHECK(device(call, "dcx", dcx, sb, true));
    const std::vector<int> lens = xd->lens;
    const size_t work_bytes = sk_emu_lstm_work_bytes(n, true);
    return enqueue(call, handle, [=] {
        if (!lengths_agree(call, dev_lens, lens)) return;
        std::string why = sk_emu_lstm_backward_data(n, (const float *)w, (const float *)y, (const float *)dy,
                                                    (float *)dx, (const float *)hx, (const float *)dhy, (float *)dhx,
                                                    (const float *)cx, (const float *)dcy, (float *)dcx, work, res);
        scratch(work, work_bytes);
        if (!why.empty()) sk_emu_fault(std::string(call) + ": " + why);
    });
}

// Weight gradients added into dweightSpace. "Currently, only the CUDNN_WGRAD_MODE_ADD mode is
// supported by the cudnnRNNBackwardWeights_v8() function" (its addGrad argument): SET is
// refused. Needs the reserve space after cudnnRNNBackwardData_v8 ("must be called after").
cudnnStatus_t cudnnRNNBackwardWeights_v8(cudnnHandle_t handle, cudnnRNNDescriptor_t d, cudnnWgradMode_t add,
                                         const int32_t dev_lens[], cudnnRNNDataDescriptor_t xd, const void *x,
                                         cudnnTensorDescriptor_t hd, const void *hx, cudnnRNNDataDescriptor_t yd,
                                         const void *y, size_t wsz, void *dw, size_t worksz, void *work, size_t ressz,
                                         void *res) {
    static const char *call = "cudnnRNNBackwardWeights_v8";
    if (add == CUDNN_WGRAD_MODE_SET) return not_modelled(call, "CUDNN_WGRAD_MODE_SET (cuDNN documents ADD only)");
    if (add != CUDNN_WGRAD_MODE_ADD) return fail(CUDNN_STATUS_BAD_PARAM, "%s: addGrad %d", call, (int)add);
    sk_emu_lstm n;
    SK_CHECK(common(call, handle, d, xd, yd, hd, nullptr, dev_lens, "dweightSpace", wsz, dw, worksz, work, true, ressz,
                    res, &n));
    SK_CHECK(device(call, "x", x, sizeof(float) * n.B * n.T * n.E, false));
    SK_CHECK(device(call, "hx", hx, sizeof(float) * n.L * n.B * n.H, true));
    SK_CHECK(device(call, "y", y, sizeof(float) * n.B * n.T * n.H, false));
    const std::vector<int> lens = xd->lens;
    const size_t work_bytes = sk_emu_lstm_work_bytes(n, true);
    return enqueue(call, handle, [=] {
        if (!lengths_agree(call, dev_lens, lens)) return;
        std::string why = sk_emu_lstm_backward_weights(n, true, (const float *)x, (const float *)hx, (const float *)y,
                                                       (float *)dw, res);
        scratch(work, work_bytes);
        if (!why.empty()) sk_emu_fault(std::string(call) + ": " + why);
    });
}

} // extern "C"
