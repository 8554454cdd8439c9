// test_sample_emu.cpp: the sampling kernel (kernels/sample_persistent_kernels.cuh, the code the
// GPU runs) executed on the CPU by tests/emu/cuda_emu.h, one fiber per GPU thread, against the
// CPU backend fed the same tokens.
// Per case (random weights, a nonzero initial state, n steps of B streams):
//  1. race-free: the launch in both schedules (threads in ascending, then descending order
//     between barriers) gives the same tokens, logits and final state bit for bit;
//  2. the plan's synchronization: no block passes a grid sync (blocks wait on hand-off words,
//     h and the tokens, for what they read; the emulator runs the other threads while one polls,
//     and dies if every runnable thread polls);
//  3. the draw is the CPU's: the last step's token of every stream is what sk_sample_token
//     draws from the kernel's own logits with the same keyed uniform (the same logits in, the
//     same arithmetic of sample_draw.h: bit for bit, no tolerance);
//  4. the LSTM is the CPU's: the CPU backend, from the same state, fed the kernel's inputs (x,
//     then its tokens), ends with logits and state within 1e-5 of the tensor's scale + 1e-4
//     relative (fp32 sums in other orders: test_cuda_parity.c's forward tolerance);
//  5. no deadlock, no write past the shared memory the plan asked for, and buffers the kernel
//     must write start as NaN (cuda_emu's checks and the comparisons above; the hand-off words'
//     NaN bytes carry a tag no step writes);
//  6. block_draw alone, one block, on 300 random logit vectors (ties, NaNs, one token far ahead)
//     under argmax, plain draws, top-k, top-p and both: the token sk_sample_token draws from
//     the same logits and uniform, bit for bit (the one-pass running sums and their searches
//     against the CPU's loops).
// Shapes: H not a multiple of the block's units (a last block with fewer), L = 1, 2 and 3,
// B = 1 (every block draws: plan.draw_all), B above the block count (blocks draw several
// streams), B = 33 (two stream groups; a group's polls over 16 loads a thread), fewer staged streams than B (a small shared-memory budget, the embedding and fc read
// from global memory; also at B = 1), argmax, top-k with top-p, and plain draws.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "sample_persistent_kernels.cuh"

extern "C" {
#include "shakespeare/rng.h"
#include "shakespeare/sampler.h"
#include "test_util.h"
}

using std::vector;

namespace {

struct Case {
    const char *name;
    int V, E, H, L, B, n;
    int sms;
    bool small_smem; // a budget that stages two streams at a time (one at B = 1), without the resident copies
    sk_sample_opts opts;
};

struct Result {
    vector<int32_t> tokens;
    vector<float> logits, hy, cy;
};

Result launch(const Case &c, const sk_sample_args &base, bool reverse, const sk_sample_plan &plan) {
    Result r;
    const size_t state = (size_t)c.L * c.B * c.H;
    r.tokens.assign((size_t)c.B * c.n, -1);
    r.logits.assign((size_t)c.B * c.V, NAN), r.hy.assign(state, NAN), r.cy.assign(state, NAN);
    vector<uint64_t> hll(2 * state, ~(uint64_t)0), tokll((size_t)c.B, ~(uint64_t)0); // NaN bytes: tag 0xffffffff
    sk_sample_args a = base;
    a.hy = r.hy.data(), a.cy = r.cy.data(), a.hll = hll.data(), a.tokll = tokll.data();
    a.tokens = r.tokens.data(), a.logits = r.logits.data();
    sk_emu_config cfg;
    cfg.grid = (unsigned)plan.blocks, cfg.block = SK_SAMPLE_THREADS, cfg.dynamic_smem = plan.smem;
    cfg.cooperative = true, cfg.reverse = reverse;
    const std::string err = sk_emu_launch(cfg, [&] { sk_sample::sample_kernel(a); });
    if (!err.empty()) {
        fprintf(stderr, "%s: %s\n", c.name, err.c_str());
        sk_test_failures++;
    }
    return r;
}

void run(const Case &c) {
    sk_model_config m = {.vocab_size = c.V, .embed_size = c.E, .hidden_size = c.H, .num_layers = c.L,
                         .dropout = 0.0f, .weight_drop = 0.0f, .cell = SK_CELL_LSTM}; // C++: every field named (-Wextra)
    sk_param_layout layout;
    sk_error err = {{0}};
    CHECK_OK(sk_param_layout_init(&layout, &m, &err));
    sk_rng r;
    sk_rng_seed(&r, 17 + (uint64_t)c.H);
    vector<float> w(layout.total), hx((size_t)c.L * c.B * c.H), cx(hx.size());
    for (float &v : w) v = 0.5f * (2.0f * sk_rng_uniform(&r) - 1.0f);
    for (size_t i = 0; i < hx.size(); i++) hx[i] = 0.3f * sk_rng_normal(&r), cx[i] = 0.5f * sk_rng_normal(&r);
    vector<int32_t> x((size_t)c.B);
    vector<uint64_t> keys((size_t)c.B);
    for (int b = 0; b < c.B; b++) x[b] = (int32_t)(sk_rng_u64(&r) % (uint64_t)c.V), keys[b] = sk_sample_key(40 + b);
    vector<sk_plstm_layer> layers((size_t)c.L);
    for (int k = 0; k < c.L; k++) {
        const sk_layer_offsets o = sk_layer_at(&layout, k);
        layers[k] = {o.w_ih, o.w_hh, o.b_ih, o.b_hh, o.in};
    }
    sk_sample_plan plan;
    int optin = 227 * 1024;
    const int sb_small = c.B > 1 ? 2 : 1;
    if (c.small_smem) { // exactly what sb_small staged streams need without the resident copies
        const int U = (c.H + c.sms - 1) / c.sms;
        optin = (int)sk_sample_smem_carve(U, sb_small, c.B, c.V, c.E, c.H, c.L, 0).total;
    }
    CHECK(sk_sample_plan_shape(&plan, c.sms, optin, c.B, c.V, c.E, c.H, c.L));
    CHECK(plan.resident == !c.small_smem && plan.draw_all == (c.B == 1));
    if (c.small_smem) CHECK(plan.sb == sb_small && (c.B == 1 || plan.sb < c.B));
    sk_sample_args a;
    memset(&a, 0, sizeof a);
    a.B = c.B, a.V = c.V, a.E = c.E, a.H = c.H, a.L = c.L, a.plan = plan, a.w = w.data(), a.layers = layers.data();
    a.off_emb = sk_param_find(&layout, "embedding.weight")->offset;
    a.off_fcw = sk_param_find(&layout, "fc.weight")->offset, a.off_fcb = sk_param_find(&layout, "fc.bias")->offset;
    a.hx = hx.data(), a.cx = cx.data(), a.x = x.data(), a.n = c.n, a.position = 7, a.keys = keys.data(), a.opts = c.opts;

    const Result up = launch(c, a, false, plan);
    int syncs_ok = 1;
    for (int b = 0; b < plan.blocks; b++) syncs_ok &= sk_emu_block_counts((unsigned)b).grid_syncs == 0;
    CHECK(syncs_ok); // 2
    const Result down = launch(c, a, true, plan);
    const int same = up.tokens == down.tokens && memcmp(up.logits.data(), down.logits.data(), up.logits.size() * 4) == 0 &&
                     memcmp(up.hy.data(), down.hy.data(), up.hy.size() * 4) == 0 &&
                     memcmp(up.cy.data(), down.cy.data(), up.cy.size() * 4) == 0;
    CHECK(same); // 1

    int draws_ok = 1; // 3
    vector<float> p((size_t)c.V);
    vector<sk_candidate> cand((size_t)c.V);
    for (int b = 0; b < c.B; b++) {
        for (int i = 0; i < c.n; i++) draws_ok &= up.tokens[(size_t)b * c.n + i] >= 0 && up.tokens[(size_t)b * c.n + i] < c.V;
        const float u = sk_sample_uniform(keys[b], (uint64_t)(a.position + c.n - 1));
        draws_ok &= sk_sample_token(&up.logits[(size_t)b * c.V], c.V, &c.opts, u, p.data(), cand.data()) ==
                    up.tokens[(size_t)b * c.n + c.n - 1];
    }
    CHECK(draws_ok);

    // 4: the CPU backend from the same state, fed the kernel's inputs.
    sk_backend_config bc;
    memset(&bc, 0, sizeof bc);
    bc.model = m, bc.batch_size = c.B, bc.seq_len = 1, bc.threads = 1;
    sk_backend *cpu;
    CHECK_OK(sk_backend_create_cpu(&bc, &cpu, &err));
    vector<float> hcx(hx); // the backend's state: h, then c
    hcx.insert(hcx.end(), cx.begin(), cx.end());
    CHECK(sk_backend_set_params(cpu, w.data()) == SK_OK && sk_backend_set_state(cpu, hcx.data()) == SK_OK);
    vector<int32_t> in = x;
    for (int i = 0; i < c.n; i++) {
        CHECK(sk_backend_forward(cpu, in.data(), NULL, 1, SK_MODE_EVAL, 0, NULL) == SK_OK);
        for (int b = 0; b < c.B; b++) in[b] = up.tokens[(size_t)b * c.n + i];
    }
    vector<float> lg((size_t)c.B * c.V), hc(2 * hx.size());
    CHECK(sk_backend_get_logits(cpu, lg.data()) == SK_OK && sk_backend_get_state(cpu, hc.data()) == SK_OK);
    const vector<float> h(hc.begin(), hc.begin() + (ptrdiff_t)hx.size()), cs(hc.begin() + (ptrdiff_t)hx.size(), hc.end());
    printf("%s: V=%d E=%d H=%d L=%d B=%d, %d steps, %d blocks of %d units, %d streams staged at once, embedding and "
           "fc %s, %s; both schedules bit-identical: %s; no grid sync: %s; last draws = the CPU's from the same "
           "logits: %s\n",
           c.name, c.V, c.E, c.H, c.L, c.B, c.n, plan.blocks, plan.U, plan.sb,
           plan.resident ? "in shared memory" : "from global memory",
           plan.draw_all ? "every block draws" : "blocks draw their streams", same ? "yes" : "NO",
           syncs_ok ? "yes" : "NO", draws_ok ? "yes" : "NO");
    auto scale = [](const vector<float> &v) {
        double s = 1e-3;
        for (float f : v) s = fmax(s, fabs((double)f));
        return s;
    };
    sk_test_compare("  logits", up.logits.data(), lg.data(), lg.size(), 1e-5 * scale(lg), 1e-4);
    sk_test_compare("  h", up.hy.data(), h.data(), h.size(), 1e-5 * scale(h), 1e-4);
    sk_test_compare("  c", up.cy.data(), cs.data(), cs.size(), 1e-5 * scale(cs), 1e-4);
    sk_backend_free(cpu);
    sk_param_layout_free(&layout);
}

// 6: block_draw alone (see the top).
void draws_alone() {
    enum { V = 70, TRIALS = 300 };
    const sk_sample_opts opts[] = {{1.0f, 0, 1, 0.0f}, {1.0f, 0, 0, 0.0f}, {0.7f, 5, 0, 0.0f},
                                   {1.2f, 0, 0, 0.9f}, {0.8f, 9, 0, 0.6f}, {1.0f, 0, 0, 1e-6f}};
    const int nopts = (int)(sizeof opts / sizeof opts[0]);
    sk_rng r;
    sk_rng_seed(&r, 23);
    vector<float> logits((size_t)TRIALS * V);
    vector<float> us(TRIALS);
    for (int t = 0; t < TRIALS; t++) {
        float *lg = &logits[(size_t)t * V];
        for (int v = 0; v < V; v++) lg[v] = 3.0f * sk_rng_normal(&r);
        if (t % 5 == 1) // ties: a third of the logits share four values
            for (int v = 0; v < V; v += 3) lg[v] = (float)(v % 4);
        if (t % 5 == 2) lg[t % V] = NAN, lg[(t + 7) % V] = NAN;
        if (t % 5 == 3) lg[t % V] = 80.0f; // one token holds nearly all the mass
        us[t] = t % 13 == 0 ? 0.0f : t % 13 == 1 ? 0x1.fffffep-1f : sk_rng_uniform(&r);
    }
    const sk_sample_smem_layout lay = sk_sample_smem_carve(1, 1, 1, V, 1, 1, 1, 0);
    vector<int> got(TRIALS, -1);
    sk_emu_config cfg;
    cfg.grid = 1, cfg.block = SK_SAMPLE_THREADS, cfg.dynamic_smem = lay.total, cfg.cooperative = true;
    const std::string err = sk_emu_launch(cfg, [&] {
        unsigned char *smem = sk_dynamic_smem();
        float *lg = (float *)(smem + lay.logits);
        for (int t = 0; t < TRIALS; t++) {
            for (int v = (int)threadIdx.x; v < V; v += (int)blockDim.x) lg[v] = logits[(size_t)t * V + v];
            __syncthreads();
            const int tok = sk_sample::block_draw(lg, V, opts[t % nopts], us[t], (float *)(smem + lay.weights),
                                                  (int *)(smem + lay.ranked), (double *)(smem + lay.sums),
                                                  (int *)(smem + lay.reduce));
            if (threadIdx.x == 0) got[t] = tok;
            __syncthreads();
        }
    });
    CHECK(err.empty());
    vector<float> p(V);
    vector<sk_candidate> cand(V);
    int differ = 0;
    for (int t = 0; t < TRIALS; t++) {
        const int want = sk_sample_token(&logits[(size_t)t * V], V, &opts[t % nopts], us[t], p.data(), cand.data());
        if (want != got[t] && differ++ < 3)
            fprintf(stderr, "draw %d (options %d, u %.9g): block_draw %d, sk_sample_token %d\n", t, t % nopts, us[t],
                    got[t], want);
    }
    printf("block_draw = sk_sample_token on %d random logit vectors: %s\n", TRIALS, differ ? "NO" : "yes");
    CHECK(differ == 0);
}

} // namespace

int main() {
    const Case cases[] = {
        {"top-k and top-p, a last block of 1 unit", 17, 6, 13, 2, 3, 6, 4, false, {0.8f, 5, 0, 0.9f}},
        {"one layer, B above the blocks", 11, 5, 7, 1, 5, 4, 4, false, {1.0f, 0, 0, 0.0f}},
        {"three layers, argmax, B = 1", 9, 4, 40, 3, 1, 5, 8, false, {1.0f, 0, 1, 0.0f}},
        {"two streams staged at a time", 13, 7, 10, 2, 6, 3, 3, true, {1.3f, 0, 0, 0.5f}},
        {"B = 1, top-k and top-p, every block draws", 17, 6, 13, 2, 1, 6, 4, false, {0.9f, 4, 0, 0.8f}},
        {"B = 1, plain draws, embedding and fc from global memory", 19, 5, 11, 2, 1, 5, 3, true, {1.1f, 0, 0, 0.0f}},
        {"33 streams: two groups, over 16 polled words a thread", 7, 5, 70, 2, 33, 3, 8, false, {1.0f, 0, 0, 0.0f}},
    };
    for (const Case &c : cases) run(c);
    draws_alone();
    return sk_test_done("test_sample_emu");
}
