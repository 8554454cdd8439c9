// sample_cuda.cu: the CUDA backend's fused sampler (see sample_cuda.h).
// defines: sk_cuda_sampler_create, sk_cuda_sampler_run, sk_cuda_sampler_free
#include "sample_cuda.h"

#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "sample_persistent.h"

struct sk_cuda_sampler {
    sk_sample_plan plan;
    int B, V, E, H, L;
    size_t off_emb, off_fcw, off_fcb;
    sk_plstm_layer *layers; // (L,) device
    uint64_t *hll;          // (2, L, B, H) the kernel's hand-off words of h
    uint64_t *tokll;        // (B,) and of the tokens
    int32_t *x;             // (B,)
    uint64_t *keys;         // (B,)
    int32_t *tokens;        // (B, cap)
    int cap;                // steps the tokens buffer holds (grown on demand)
};

void sk_cuda_sampler_free(sk_cuda_sampler *s) {
    if (!s) return;
    cudaFree(s->layers), cudaFree(s->hll), cudaFree(s->tokll), cudaFree(s->x), cudaFree(s->keys), cudaFree(s->tokens);
    free(s);
}

static sk_status alloc(void **p, size_t bytes, sk_error *err) {
    CUDA_CHECK(cudaMalloc(p, bytes ? bytes : 1));
    return SK_OK;
}

// The float offset of tensor t into params: the kernel takes the buffer and offsets.
static size_t offset_of(const float *t, const float *params) { return (size_t)(t - params); }

sk_status sk_cuda_sampler_create(int device, const sk_param_layout *layout, float *params, int B,
                                 sk_cuda_sampler **out, char *why, size_t why_size, sk_error *err) {
    *out = NULL;
    const sk_model_config *m = &layout->cfg;
    const int L = m->num_layers, H = m->hidden_size;
    if (m->cell != SK_CELL_LSTM) { // its kernel is the LSTM's (kernels/sample_persistent.h)
        snprintf(why, why_size, "the fused sampler runs the lstm cell, not %s", sk_model_cell(m)->name);
        return SK_OK;
    }
    const sk_param_tensors w = sk_point_params(layout, params);
    sk_sample_plan plan;
    CUDA_CHECK(sk_sample_plan_make(&plan, device, B, m->vocab_size, m->embed_size, H, L));
    if (!plan.supported) {
        snprintf(why, why_size, "%s", plan.why_not);
        return SK_OK;
    }
    sk_cuda_sampler *s = (sk_cuda_sampler *)calloc(1, sizeof *s);
    sk_plstm_layer *host = (sk_plstm_layer *)calloc((size_t)L, sizeof *host);
    sk_status st = s && host ? SK_OK : sk_fail(err, SK_ERR_NOMEM, "out of memory creating the sampler");
    if (st == SK_OK) {
        s->plan = plan, s->B = B, s->V = m->vocab_size, s->E = m->embed_size, s->H = H, s->L = L;
        s->off_emb = offset_of(w.embedding, params), s->off_fcw = offset_of(w.fc_w, params);
        s->off_fcb = offset_of(w.fc_b, params);
        for (int k = 0; k < L; k++) {
            const sk_layer_tensors *t = &w.layer[k];
            host[k] = (sk_plstm_layer){.w_ih = offset_of(t->w_ih, params), .w_hh = offset_of(t->w_hh, params),
                                       .b_ih = offset_of(t->b_ih, params), .b_hh = offset_of(t->b_hh, params),
                                       .in = k == 0 ? m->embed_size : H};
        }
        const size_t state = (size_t)L * B * H;
        st = alloc((void **)&s->layers, sizeof *host * (size_t)L, err);
        if (st == SK_OK) st = alloc((void **)&s->hll, sizeof(uint64_t) * 2 * state, err);
        if (st == SK_OK) st = alloc((void **)&s->tokll, sizeof(uint64_t) * (size_t)B, err);
        if (st == SK_OK) st = alloc((void **)&s->x, sizeof(int32_t) * (size_t)B, err);
        if (st == SK_OK) st = alloc((void **)&s->keys, sizeof(uint64_t) * (size_t)B, err);
        if (st == SK_OK && cudaMemcpy(s->layers, host, sizeof *host * (size_t)L, cudaMemcpyHostToDevice) != cudaSuccess)
            st = sk_fail(err, SK_ERR_DEVICE, "copying the sampler's layer table to the device failed");
    }
    free(host);
    if (st != SK_OK) {
        sk_cuda_sampler_free(s);
        return st;
    }
    *out = s;
    return SK_OK;
}

sk_status sk_cuda_sampler_run(sk_cuda_sampler *s, const sk_cuda_sampler_io *io, const int32_t *x, int n,
                              const sk_sample_opts *o, const uint64_t *keys, int64_t position, int32_t *out,
                              sk_error *err) {
    const size_t B = (size_t)s->B;
    if (n > s->cap) { // grown outside any step: sampling is never captured
        cudaFree(s->tokens);
        s->tokens = NULL, s->cap = 0;
        SK_TRY(alloc((void **)&s->tokens, sizeof(int32_t) * B * (size_t)n, err));
        s->cap = n;
    }
    CUDA_CHECK(cudaMemcpyAsync(s->x, x, sizeof(int32_t) * B, cudaMemcpyHostToDevice, io->stream));
    CUDA_CHECK(cudaMemcpyAsync(s->keys, keys, sizeof(uint64_t) * B, cudaMemcpyHostToDevice, io->stream));
    // Tags 0: no word of an earlier launch passes for one of this launch's steps.
    CUDA_CHECK(cudaMemsetAsync(s->hll, 0, sizeof(uint64_t) * 2 * (size_t)s->L * B * (size_t)s->H, io->stream));
    CUDA_CHECK(cudaMemsetAsync(s->tokll, 0, sizeof(uint64_t) * B, io->stream));
    sk_sample_args a;
    memset(&a, 0, sizeof a);
    a.B = s->B, a.V = s->V, a.E = s->E, a.H = s->H, a.L = s->L, a.plan = s->plan;
    a.w = io->params, a.layers = s->layers, a.off_emb = s->off_emb, a.off_fcw = s->off_fcw, a.off_fcb = s->off_fcb;
    a.hx = io->hx, a.cx = io->cx, a.hy = io->hy, a.cy = io->cy, a.hll = s->hll, a.tokll = s->tokll;
    a.x = s->x, a.n = n, a.position = position, a.keys = s->keys, a.opts = *o;
    a.tokens = s->tokens, a.logits = io->logits;
    CUDA_CHECK(sk_sample_run(&a, io->stream));
    CUDA_CHECK(cudaMemcpyAsync(out, s->tokens, sizeof(int32_t) * B * (size_t)n, cudaMemcpyDeviceToHost, io->stream));
    CUDA_CHECK(cudaStreamSynchronize(io->stream));
    return SK_OK;
}
