// step_graph.cu: capture and replay of the training step's CUDA graphs (step_graph.h).
// defines: sk_step_graphs_create, sk_step_graphs_launch, sk_step_graphs_take_notice, sk_step_graphs_launches,
//          sk_step_graphs_free
//
// What the captured step contains and why each part may be captured (checked against the
// libraries' documentation and issue trackers; to be confirmed by tests/gpu/test_cuda_graph.c):
//   - our kernels, cudaMemsetAsync and device-to-device cudaMemcpy(2D)Async: plain graph
//     nodes. Every step-dependent value is read from device memory (kernels.h), and the
//     host-to-device copies of the inputs run before cudaGraphLaunch, outside the graph.
//   - cuBLAS with a user workspace (cublasSetWorkspace) on both handles, the backend's
//     (backend_cuda.cu) and the persistent LSTM's (lstm_impl_persistent.cu): the documented way
//     to keep cuBLAS from allocating during capture (pytorch/pytorch#83461).
//   - cuDNN's cudnnRNNForward / cudnnRNNBackwardData_v8 / cudnnRNNBackwardWeights_v8 are
//     enqueued on the handle's stream with caller-owned workspace and reserve space; PyTorch
//     captures them in its CUDA graphs (pytorch/pytorch#56433: the only trouble there was its
//     cuDNN dropout state's cross-stream events, which we do not use). Their sequence
//     lengths live in device memory that a length change rewrites from the host, so the
//     backend calls the LSTM's prepare(len) outside the graph before every replay.
//   - the persistent LSTM's cudaLaunchCooperativeKernel: a cooperative kernel is a valid
//     graph node (cudaLaunchAttributeCooperative, "valid for graph nodes, launches",
//     driver_types.h of CUDA 13); that its stream capture works is what the GPU test checks.
// Capture mode cudaStreamCaptureModeThreadLocal: an unsafe call (a synchronization, a
// blocking copy, a cudaMalloc) made by this thread during the capture fails it loudly
// instead of silently leaving work out of the graph.
// Warm-up: the first step of each (length, slot) runs eagerly and the second is captured,
// as CUDA's and PyTorch's graph guides ask: libraries initialize lazily on their first call
// (cuDNN creates internal resources; kernels load on first launch; a cuBLAS handle without
// a workspace of its own would allocate cuBLAS's default one), and
// none of that may happen inside a capture.
#include <stdio.h>
#include <stdlib.h>

#include "cuda_check.h"
#include "step_graph.h"

struct sk_step_graphs {
    int T;
    cudaGraphExec_t *exec; // (2, T+1): [slot][len], NULL until captured
    unsigned char *warm;   // (2, T+1): 1 once the key's step has run eagerly
    int64_t launches;      // cudaGraphLaunch calls that succeeded
    int eager_fallback;    // a failed capture turns the table off instead of failing the step
    int off;               // a capture failed under eager_fallback: every step runs eagerly
    int notice_unread;     // notice not yet taken
    char notice[SK_ERROR_MSG_MAX]; // why the table is off
};

sk_status sk_step_graphs_create(int T, int eager_fallback, sk_step_graphs **out, sk_error *err) {
    *out = NULL;
    sk_step_graphs *g = (sk_step_graphs *)calloc(1, sizeof *g);
    if (g) g->exec = (cudaGraphExec_t *)calloc((size_t)2 * (T + 1), sizeof *g->exec);
    if (g) g->warm = (unsigned char *)calloc((size_t)2 * (T + 1), 1);
    if (!g || !g->exec || !g->warm) {
        if (g) {
            free(g->exec);
            free(g->warm);
        }
        free(g);
        return sk_fail(err, SK_ERR_NOMEM, "out of memory for the CUDA graph table");
    }
    g->T = T;
    g->eager_fallback = eager_fallback;
    *out = g;
    return SK_OK;
}

static sk_status capture(cudaStream_t stream, int len, sk_step_enqueue_fn enqueue, void *ctx, cudaGraphExec_t *exec,
                         sk_error *err) {
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    sk_error inner;
    inner.msg[0] = '\0';
    sk_status st = enqueue(ctx, &inner);
    cudaGraph_t graph = NULL;
    cudaError_t ce = cudaStreamEndCapture(stream, &graph); // always: the stream leaves capture mode
    if (st != SK_OK || ce != cudaSuccess) {
        if (graph) cudaGraphDestroy(graph);
        (void)cudaGetLastError();
        // Every call inside returned success but the capture was invalidated: a call that is
        // not capturable (a library's synchronization or allocation) ran in between.
        return sk_fail(err, SK_ERR_DEVICE, "capturing the training step of %d steps into a CUDA graph failed: %s%s",
                       len, st != SK_OK ? inner.msg : "a call inside the step could not be captured: ",
                       st != SK_OK ? "" : cudaGetErrorName(ce));
    }
    // AutoFreeOnLaunch, as PyTorch instantiates its graphs: a library that allocates inside
    // the capture with cudaMallocAsync and frees later (as cuBLAS >= 12.2 does for a handle
    // without a workspace of its own; both of ours have one) leaves an allocation node whose
    // memory is unfreed at the next launch, and cudaGraphLaunch then fails with
    // cudaErrorInvalidValue. A guard, then: nothing of ours should need it.
    ce = cudaGraphInstantiate(exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch);
    cudaGraphDestroy(graph);
    if (ce != cudaSuccess) {
        *exec = NULL;
        (void)cudaGetLastError();
        return sk_fail(err, SK_ERR_DEVICE, "instantiating the CUDA graph of the training step (%d steps) failed: %s",
                       len, cudaGetErrorString(ce));
    }
    return SK_OK;
}

sk_status sk_step_graphs_launch(sk_step_graphs *g, int len, int slot, cudaStream_t stream, sk_step_enqueue_fn enqueue,
                                void *ctx, sk_error *err) {
    if (len < 1 || len > g->T || slot < 0 || slot > 1)
        return sk_fail(err, SK_ERR_ARG, "no CUDA graph for a window of %d steps in state slot %d", len, slot);
    const size_t key = (size_t)slot * (g->T + 1) + len;
    cudaGraphExec_t *exec = &g->exec[key];
    if (g->off) return enqueue(ctx, err);
    if (!*exec && !g->warm[key]) { // the warm-up: this step runs eagerly
        SK_TRY(enqueue(ctx, err));
        g->warm[key] = 1;
        return SK_OK;
    }
    if (!*exec) {
        sk_status st = capture(stream, len, enqueue, ctx, exec, err);
        if (st != SK_OK && !g->eager_fallback) return st;
        if (st != SK_OK) {
            g->off = 1, g->notice_unread = 1;
            snprintf(g->notice, sizeof g->notice, "%s", err->msg);
            return enqueue(ctx, err);
        }
    }
    CUDA_CHECK(cudaGraphLaunch(*exec, stream));
    g->launches++;
    return SK_OK;
}

const char *sk_step_graphs_take_notice(sk_step_graphs *g) {
    if (!g || !g->notice_unread) return NULL;
    g->notice_unread = 0;
    return g->notice;
}

int64_t sk_step_graphs_launches(const sk_step_graphs *g) { return g ? g->launches : 0; }

void sk_step_graphs_free(sk_step_graphs *g) {
    if (!g) return;
    for (int i = 0; i < 2 * (g->T + 1); i++)
        if (g->exec[i]) cudaGraphExecDestroy(g->exec[i]);
    (void)cudaGetLastError();
    free(g->exec);
    free(g->warm);
    free(g);
}
