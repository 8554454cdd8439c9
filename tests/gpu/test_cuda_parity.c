// test_cuda_parity.c: the CUDA backend against the CPU reference backend, from the same
// parameters and the same nonzero carried state: loss, logits, final h/c, every gradient
// tensor, the gradient norm and one AdamW step, over windows of varying length in both
// modes, for each LSTM implementation (--rnn-impl cudnn and persistent, the same cases
// and tolerances), for a tiny model, a model of config A's shapes, a one-layer model with
// dropout (its only site is the one before fc), and two- and three-layer models with dropout
// between layers too (H = 24 and 40, not multiples of 32), and weight drop on W_hh (with
// and without dropout: the GPU masks a copy of the weights it hands the LSTM implementation
// and the W_hh gradients, the CPU its own copy). Every dropout mask on both
// backends is hash.h's, keyed by (seed, step, site), so the masks are identical and the
// tolerances below hold unchanged with dropout on: a mask that differed anywhere would
// zero an element on one side only and miss them by O(scale). The GPU's inter-layer
// dropout runs the layers as separate cuDNN networks in a wavefront of time chunks
// (lstm_impl_cudnn_wavefront.cu), a path the dropout-free cases do not take; chunks of about
// 2 steps here (cudnn_chunk_steps 2: T = 7 runs as 7 chunks of 1, T = 6 as 3 of 2),
// so that chunk borders, their state and state gradient, and the lanes' ordering are
// all held to the CPU. Further shapes: L = 4, T = 1, B = 1, E > H, H not a
// multiple of 32, and six random shapes (H 1..70, L 1..4, B 1..5, T 1..9; seed fixed).
// Data-parallel: both backends as one rank's share of a larger global batch (stream_offset
// > 0), with dropout between layers and before fc, so the GPU's masks are indexed by the
// global stream exactly as the CPU's (whose sharding the MPI tests hold to one process).
// Cells (with SK_CELLS_ONLY=1, test_cuda_cells.sh, instead of the rest): the GRU and the RNN
// (cell.h) through cuDNN (CUDNN_GRU, CUDNN_RNN_TANH) over the same fixed cases and a rank's
// share, in fp32 and tf32, with the same tolerances (the same arithmetic in other gates);
// --rnn-impl persistent with either is refused, saying why.
// Also: error paths (bad ids, backward without a training forward, non-finite gradients),
// and an inference-only CUDA backend. Exits 77 (skipped) without a usable GPU, after
// checking that creating the CUDA backend then fails cleanly with SK_ERR_DEVICE.
// Precisions (--precision): every implementation in every precision it computes in
// (cudnn: fp32, tf32; cudnn-persist: fp32, tf32, where cuDNN takes the shape, else its
// refusal is printed; persistent: fp32, tf32, bf16) over the same fixed and random shapes,
// each with its own tolerances (precision_tolerance.h derives tf32's and bf16's from the
// operands' unit roundoff); cudnn and cudnn-persist must refuse bf16 with the reason. The
// persistent kernel's tf32 and bf16 also run with its inner products on tensor cores
// (sk_tensor_cores ON) and on CUDA cores (OFF), with the same
// tolerances: the operands are rounded the same way, only the summation order differs;
// ON in fp32 is refused.
//
// fp32 tolerances (|got - ref| <= atol + rtol*|ref|, atol scaled by the tensor's max |ref|):
//   forward (logits, h, c): atol 1e-5*scale, rtol 1e-4. Both sides are fp32; cuDNN and
//     cuBLAS (and the persistent kernel, with expf/tanhf where the CPU has its own ~2-ulp
//     activations) sum in other orders (and fuse multiply-adds), so each dot product differs by
//     a few ulps of its terms, ~1e-6 of the tensor's scale, growing mildly over T steps.
//   loss sum: rtol 1e-5 (a sum of B*T rows whose fp32 errors are ~1e-7 each, relative).
//   gradients: atol 1e-4*scale, rtol 1e-3. Backprop through T steps and L layers chains
//     ~2T GEMMs, each adding ulp-level reordering noise; elements near zero are judged by
//     atol. A wrong gate, transposed weight or misplaced cuDNN matrix errs by O(scale).
//   grad norm: rtol 1e-4 (a sum of squares of the gradients above).
//   AdamW on the GPU vs sk_optim_update on the host, fed the GPU's own gradients, state and
//     gradient norm: bitwise. The scalars are formed on the host the same way (in double
//     from the double hyperparameters, rounded once) and the kernel performs the CPU's
//     float operations in the CPU's order without FMA, so nothing may differ. The
//     hyperparameters are double literals (0.999, not 0.999f): with float literals
//     (float)(1.0 - beta2) == 1.0f - (float)beta2 and a kernel that rounds 1 - beta in
//     float would pass unnoticed.
//   params after the step, GPU vs CPU backend: Adam normalizes each gradient element, so
//     a near-zero gradient whose sign differs between the backends moves its parameter by
//     up to 2*lr. Compared only where |g| >= 1e-3 * max|g| of its tensor, where the
//     update's relative error is at most the gradient's (~1e-2): atol 0.05*lr.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shakespeare/backend.h"
#include "shakespeare/optim.h"
#include "shakespeare/rng.h"
#include "gpu_test_util.h"
#include "precision_tolerance.h"
#include "test_util.h"

static precision_tol tol; // of the case being run
static sk_cell_kind g_cell; // the cell of the cases being run (cell.h): the LSTM but where main says

typedef struct {
    const char *name;
    int V, E, H, L, B, T;
    float dropout;
    float weight_drop;
} parity_case;

static void random_ids(sk_rng *r, int32_t *ids, size_t n, int V) {
    for (size_t i = 0; i < n; i++) ids[i] = (int32_t)(sk_rng_u64(r) % (uint64_t)V);
}

// Both backends run one window; compares loss, logits and the carried state.
static void forward_both(sk_backend *cpu, sk_backend *gpu, const int32_t *x, const int32_t *y, int len,
                         sk_mode mode, int64_t step, const char *tag) {
    const size_t nl = (size_t)sk_backend_cfg(cpu)->batch_size * len * sk_backend_cfg(cpu)->model.vocab_size;
    const size_t ns = (size_t)sk_backend_cfg(cpu)->model.num_layers * sk_backend_cfg(cpu)->batch_size * sk_backend_cfg(cpu)->model.hidden_size;
    double lc = -1.0, lg = -2.0;
    OP_OK(cpu, sk_backend_forward(cpu, x, y, len, mode, step, &lc));
    OP_OK(gpu, sk_backend_forward(gpu, x, y, len, mode, step, &lg));
    printf(" %s: len %d %s loss cpu %.9g cuda %.9g\n", tag, len, mode == SK_MODE_TRAIN ? "train" : "eval", lc, lg);
    if (y) CHECK(fabs(lg - lc) <= tol.loss_rtol * fabs(lc) + 1e-6);
    else CHECK(lc == 0.0 && lg == 0.0);
    float *a = alloc_f(nl), *b = alloc_f(nl);
    OP_OK(cpu, sk_backend_get_logits(cpu, a));
    OP_OK(gpu, sk_backend_get_logits(gpu, b));
    compare_scaled("logits", b, a, nl, tol.fwd_atol, tol.fwd_rtol);
    free(a);
    free(b);
    const int S = sk_model_cell(&sk_backend_layout(cpu)->cfg)->n_states;
    float *hc = alloc_f(S * ns), *hg = alloc_f(S * ns); // the states: h, then an LSTM's c
    OP_OK(cpu, sk_backend_get_state(cpu, hc));
    OP_OK(gpu, sk_backend_get_state(gpu, hg));
    compare_scaled("final h", hg, hc, ns, tol.fwd_atol, tol.fwd_rtol);
    if (S > 1) compare_scaled("final c", hg + ns, hc + ns, ns, tol.fwd_atol, tol.fwd_rtol);
    free(hc), free(hg);
}

// Bitwise equality of n floats; prints the first difference and the count.
static void compare_exact(const char *what, const float *got, const float *ref, size_t n) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        if (memcmp(&got[i], &ref[i], sizeof(float)) != 0) {
            if (!bad) first = i;
            bad++;
        }
    }
    printf("  %-28s n=%-8zu %zu bitwise difference(s)", what, n, bad);
    if (bad) printf(", first [%zu] got %.9g ref %.9g  FAIL", first, got[first], ref[first]);
    printf("\n");
    if (bad) sk_test_failures++;
}

// Gradients of both, tensor by tensor; then one optimizer step on both, checked against
// sk_optim_update on the host and against each other.
static void backward_and_step(sk_backend *cpu, sk_backend *gpu, const sk_optim_hparams *hp, float lr, int64_t step) {
    const sk_param_layout *lay = sk_backend_layout(cpu);
    const size_t n = lay->total;
    float *gc = alloc_f(n), *gg = alloc_f(n), *p0 = alloc_f(n), *s0 = alloc_f(2 * n), *m0 = s0, *v0 = s0 + n;
    OP_OK(cpu, sk_backend_backward(cpu));
    OP_OK(gpu, sk_backend_backward(gpu));
    OP_OK(cpu, sk_backend_get_grads(cpu, gc));
    OP_OK(gpu, sk_backend_get_grads(gpu, gg));
    for (int t = 0; t < lay->n_tensors; t++) {
        const sk_tensor_info *ti = &lay->tensors[t];
        char what[64];
        snprintf(what, sizeof what, "grad %s", ti->name);
        compare_scaled(what, gg + ti->offset, gc + ti->offset, ti->numel, tol.grad_atol, tol.grad_rtol);
    }
    // Host reference of the GPU's step from the GPU's own gradients and state.
    OP_OK(gpu, sk_backend_get_params(gpu, p0));
    OP_OK(gpu, sk_backend_get_optimizer_state(gpu, 0, m0));
    OP_OK(gpu, sk_backend_get_optimizer_state(gpu, 1, v0));
    double nc = -1.0, ng = -2.0;
    OP_OK(cpu, sk_backend_step(cpu, hp, lr, step, &nc));
    OP_OK(gpu, sk_backend_step(gpu, hp, lr, step, &ng));
    printf("  grad norm cpu %.9g cuda %.9g (clip %g)\n", nc, ng, (double)hp->grad_clip);
    CHECK(fabs(ng - nc) <= tol.norm_rtol * nc);
    double nh = sk_grad_norm(gg, n);
    CHECK(fabs(ng - nh) <= 1e-9 * nh); // same gradients: the double sums differ by rounding only
    // The GPU clipped with its own norm ng: so does the reference (nh may differ in the
    // last bit of a double, which could move the float clip scale by an ulp).
    sk_optim_update(p0, gg, s0, lay, hp, lr, sk_clip_scale(ng, hp->grad_clip), step); // slots m0, v0
    float *pg = alloc_f(n), *mg = alloc_f(n), *vg = alloc_f(n), *pc = alloc_f(n);
    OP_OK(gpu, sk_backend_get_params(gpu, pg));
    OP_OK(gpu, sk_backend_get_optimizer_state(gpu, 0, mg));
    OP_OK(gpu, sk_backend_get_optimizer_state(gpu, 1, vg));
    OP_OK(cpu, sk_backend_get_params(cpu, pc));
    compare_exact("adam params vs host", pg, p0, n);
    compare_exact("adam m vs host", mg, m0, n);
    compare_exact("adam v vs host", vg, v0, n);
    // GPU vs CPU backend, where the gradient is clearly nonzero (see the header).
    size_t k = 0;
    for (int t = 0; t < lay->n_tensors; t++) {
        const sk_tensor_info *ti = &lay->tensors[t];
        double gmax = max_abs(gc + ti->offset, ti->numel);
        for (size_t j = 0; j < ti->numel; j++) {
            size_t i = ti->offset + j;
            if (fabs((double)gc[i]) >= tol.adam_gmin * gmax && gmax > 0.0) {
                gg[k] = pg[i]; // reuse gg, gc as compaction buffers (k <= i)
                gc[k] = pc[i];
                k++;
            }
        }
    }
    sk_test_compare("params after step vs cpu", gg, gc, k, tol.adam_atol_lr * lr, 1e-6);
    free(gc), free(gg), free(p0), free(s0), free(pg), free(mg), free(vg), free(pc);
}

// Makes the CPU backend continue from exactly the GPU's parameters, moments and state, so
// that every window is compared from identical inputs.
static void resync(sk_backend *cpu, sk_backend *gpu) {
    const size_t n = sk_backend_layout(cpu)->total;
    const size_t ns = (size_t)sk_backend_cfg(cpu)->model.num_layers * sk_backend_cfg(cpu)->batch_size * sk_backend_cfg(cpu)->model.hidden_size;
    float *p = alloc_f(n), *m = alloc_f(n), *v = alloc_f(n), *h = alloc_f(SK_MAX_CELL_STATES * ns);
    OP_OK(gpu, sk_backend_get_params(gpu, p));
    OP_OK(gpu, sk_backend_get_optimizer_state(gpu, 0, m));
    OP_OK(gpu, sk_backend_get_optimizer_state(gpu, 1, v));
    OP_OK(gpu, sk_backend_get_state(gpu, h));
    OP_OK(cpu, sk_backend_set_params(cpu, p));
    OP_OK(cpu, sk_backend_set_optimizer_state(cpu, 0, m));
    OP_OK(cpu, sk_backend_set_optimizer_state(cpu, 1, v));
    OP_OK(cpu, sk_backend_set_state(cpu, h));
    free(p), free(m), free(v), free(h);
}

// stream_offset, global_batch: the backends hold streams [stream_offset, stream_offset + B)
// of a global batch (0, 0: one process).
static void run_case(const parity_case *pc, sk_rnn_impl impl, sk_precision prec, sk_tensor_cores tc,
                     int stream_offset, int global_batch) {
    sk_error err = {{0}};
    printf("%s%s%s: V=%d E=%d H=%d L=%d B=%d T=%d dropout=%.2f weight_drop=%.2f, streams [%d, %d) of %d, "
           "--rnn-impl %s --precision %s%s\n",
           g_cell ? sk_cell_get(g_cell)->name : "", g_cell ? " " : "", pc->name, pc->V, pc->E, pc->H, pc->L, pc->B, pc->T, (double)pc->dropout, (double)pc->weight_drop,
           stream_offset, stream_offset + pc->B, global_batch ? global_batch : pc->B, sk_rnn_impl_name(impl),
           sk_precision_name(prec), tc == SK_TENSOR_CORES_ON ? ", tensor cores" : "");
    tol = precision_tol_of(prec);
    sk_backend_config cfg = {.model = {.vocab_size = pc->V, .embed_size = pc->E, .hidden_size = pc->H, .num_layers = pc->L, .dropout = pc->dropout, .weight_drop = pc->weight_drop, .cell = g_cell},
                             .batch_size = pc->B, .seq_len = pc->T, .training = 1, .threads = 0, .device_index = 0,
                             .seed = 1234,
                             .stream_offset = stream_offset, .global_batch = global_batch, .cudnn_chunk_steps = 2};
    sk_backend *cpu, *gpu;
    CHECK_OK(sk_backend_create_cpu(&cfg, &cpu, &err)); // the reference: fp32, its own LSTM
    cfg.rnn_impl = impl, cfg.precision = prec, cfg.plstm_tensor_cores = tc;
    sk_status st = sk_backend_create_cuda(&cfg, &gpu, &err);
    // Skipped with the reason: cuDNN's persistent algorithms refusing a shape (cuDNN's
    // choice), and the tensor cores' padding (units to 16) overflowing a block's shared
    // memory where the CUDA cores' slice fits (config A's widths in tf32 on a device with
    // few SMs, such as the emulated one; on an H100 every shape here fits).
    if (st == SK_ERR_ARG && (impl == SK_RNN_CUDNN_PERSIST ||
                             (tc == SK_TENSOR_CORES_ON && strstr(err.msg, "does not fit") != NULL))) {
        printf("  skipped: %s\n", err.msg);
        sk_backend_free(cpu);
        return;
    }
    CHECK_OK(st);
    if (sk_backend_notice(gpu)[0]) printf("  notice: %s\n", sk_backend_notice(gpu));
    CHECK(strcmp(sk_backend_name(gpu), "cuda") == 0);
    CHECK(sk_backend_layout(gpu)->total == sk_backend_layout(cpu)->total);
    const size_t n = sk_backend_layout(cpu)->total, bt = (size_t)pc->B * pc->T;
    const size_t ns = (size_t)pc->L * pc->B * pc->H;
    float *p = alloc_f(n), *h0 = alloc_f(SK_MAX_CELL_STATES * ns); // the states: h, then an LSTM's c
    sk_params_init(p, sk_backend_layout(cpu), SK_INIT_PYTORCH, 0.0f, 1.0f, 7);
    sk_rng r;
    sk_rng_seed(&r, 2024);
    for (size_t i = 0; i < ns; i++) h0[i] = sk_rng_uniform(&r) - 0.5f, h0[ns + i] = 2.0f * sk_rng_uniform(&r) - 1.0f;
    OP_OK(cpu, sk_backend_set_params(cpu, p));
    OP_OK(gpu, sk_backend_set_params(gpu, p));
    OP_OK(cpu, sk_backend_set_state(cpu, h0));
    OP_OK(gpu, sk_backend_set_state(gpu, h0));
    int32_t *x = malloc(bt * sizeof(int32_t)), *y = malloc(bt * sizeof(int32_t));
    if (!x || !y) exit(1);
    sk_optim_hparams hp = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.1, .grad_clip = 0.0};
    const float lr = 2e-3f;
    const int short_len = pc->T > 3 ? pc->T - 3 : 1;

    // 1: a full training window from the nonzero state, no clipping.
    random_ids(&r, x, bt, pc->V), random_ids(&r, y, bt, pc->V);
    forward_both(cpu, gpu, x, y, pc->T, SK_MODE_TRAIN, 1, "window 1");
    backward_and_step(cpu, gpu, &hp, lr, 1);
    resync(cpu, gpu);
    // 2: a shorter training window continuing the carried state, with clipping active.
    hp.grad_clip = 1e-3;
    random_ids(&r, x, bt, pc->V), random_ids(&r, y, bt, pc->V);
    forward_both(cpu, gpu, x, y, short_len, SK_MODE_TRAIN, 2, "window 2");
    backward_and_step(cpu, gpu, &hp, lr, 2);
    resync(cpu, gpu);
    // 3: evaluation with targets; 4: one step without targets (as the sampler does);
    // 5: a full training window again after the length changes.
    random_ids(&r, x, bt, pc->V), random_ids(&r, y, bt, pc->V);
    forward_both(cpu, gpu, x, y, pc->T, SK_MODE_EVAL, 0, "window 3");
    forward_both(cpu, gpu, x, NULL, 1, SK_MODE_EVAL, 0, "window 4");
    random_ids(&r, x, bt, pc->V), random_ids(&r, y, bt, pc->V);
    forward_both(cpu, gpu, x, y, pc->T, SK_MODE_TRAIN, 3, "window 5");
    hp.grad_clip = 5.0;
    backward_and_step(cpu, gpu, &hp, lr, 3);

    // Error paths: they must be refused the same way, not crash.
    int32_t keep = x[0];
    x[0] = pc->V;
    CHECK(sk_backend_forward(gpu, x, y, pc->T, SK_MODE_EVAL, 0, NULL) == SK_ERR_ARG);
    x[0] = keep;
    CHECK(sk_backend_forward(gpu, x, y, pc->T + 1, SK_MODE_EVAL, 0, NULL) == SK_ERR_ARG);
    CHECK(sk_backend_forward(gpu, x, y, pc->T, SK_MODE_EVAL, 0, NULL) == SK_OK);
    CHECK(sk_backend_backward(gpu) == SK_ERR_ARG); // the last forward was an evaluation
    CHECK(sk_backend_step(gpu, &hp, lr, 0, NULL) == SK_ERR_ARG);

    // A NaN parameter gives a NaN gradient norm: SK_ERR_NUMERIC, params and moments kept.
    float *pa = alloc_f(n), *ma = alloc_f(n), *va = alloc_f(n), *pb = alloc_f(n), *mb = alloc_f(n), *vb = alloc_f(n);
    OP_OK(gpu, sk_backend_get_params(gpu, pa));
    pa[sk_param_find(sk_backend_layout(gpu), "fc.bias")->offset] = NAN;
    OP_OK(gpu, sk_backend_set_params(gpu, pa));
    OP_OK(gpu, sk_backend_get_optimizer_state(gpu, 0, ma));
    OP_OK(gpu, sk_backend_get_optimizer_state(gpu, 1, va));
    OP_OK(gpu, sk_backend_forward(gpu, x, y, pc->T, SK_MODE_TRAIN, 4, NULL));
    OP_OK(gpu, sk_backend_backward(gpu));
    double gn = 0.0;
    CHECK(sk_backend_step(gpu, &hp, lr, 4, &gn) == SK_ERR_NUMERIC);
    CHECK(!isfinite(gn));
    OP_OK(gpu, sk_backend_get_params(gpu, pb));
    OP_OK(gpu, sk_backend_get_optimizer_state(gpu, 0, mb));
    OP_OK(gpu, sk_backend_get_optimizer_state(gpu, 1, vb));
    CHECK(memcmp(pa, pb, n * sizeof(float)) == 0);
    CHECK(memcmp(ma, mb, n * sizeof(float)) == 0 && memcmp(va, vb, n * sizeof(float)) == 0);
    free(pa), free(ma), free(va), free(pb), free(mb), free(vb);

    // An inference-only CUDA backend gives the same logits and refuses training calls.
    cfg.training = 0;
    sk_backend *inf;
    CHECK_OK(sk_backend_create_cuda(&cfg, &inf, &err));
    OP_OK(inf, sk_backend_set_params(inf, p));
    OP_OK(inf, sk_backend_set_state(inf, h0));
    OP_OK(cpu, sk_backend_set_params(cpu, p));
    OP_OK(cpu, sk_backend_set_state(cpu, h0));
    forward_both(cpu, inf, x, y, short_len, SK_MODE_EVAL, 0, "inference-only");
    CHECK(sk_backend_forward(inf, x, y, pc->T, SK_MODE_TRAIN, 1, NULL) == SK_ERR_ARG);
    CHECK(sk_backend_get_grads(inf, p) == SK_ERR_ARG);
    CHECK(sk_backend_step(inf, &hp, lr, 1, NULL) == SK_ERR_ARG);
    sk_backend_free(inf);

    free(p), free(h0), free(x), free(y);
    sk_backend_free(cpu);
    sk_backend_free(gpu);
}

int main(void) {
    char reason[256];
    if (!sk_cuda_available(0, reason, sizeof reason)) {
        // Without a GPU the backend must refuse cleanly, with a message, and not crash.
        sk_backend_config cfg = {.model = {.vocab_size = 13, .embed_size = 8, .hidden_size = 16, .num_layers = 2, .dropout = 0.0f, .weight_drop = 0.0f}, .batch_size = 4, .seq_len = 9, .training = 1};
        char not_a_backend;
        sk_backend *be = (sk_backend *)(void *)&not_a_backend; // never read; must be reset to NULL
        sk_error err = {{0}};
        CHECK(sk_backend_create_cuda(&cfg, &be, &err) == SK_ERR_DEVICE);
        CHECK(be == NULL && err.msg[0] != '\0');
        printf("create_cuda: %s\n", err.msg);
        if (sk_test_failures) return sk_test_done("test_cuda_parity");
        printf("skipped: %s\n", reason);
        return 77;
    }
    static parity_case cases[] = {
        {"tiny", 13, 8, 16, 2, 4, 9, 0.0f, 0.0f},
        {"config A shapes", 65, 128, 256, 2, 8, 32, 0.0f, 0.0f},
        {"one layer with dropout", 29, 12, 24, 1, 3, 7, 0.25f, 0.0f},
        {"two layers with dropout", 29, 12, 24, 2, 3, 7, 0.3f, 0.0f},
        {"three layers with dropout, B = 1", 31, 10, 40, 3, 1, 6, 0.5f, 0.0f},
        {"four layers with dropout, H = 40", 17, 6, 40, 4, 2, 5, 0.2f, 0.0f},
        {"T = 1, B = 1, H = 33", 11, 5, 33, 2, 1, 1, 0.0f, 0.0f},
        {"one layer, T = 1, E > H", 9, 48, 7, 1, 3, 1, 0.0f, 0.0f},
        {"two layers, dropout and weight drop", 29, 12, 24, 2, 3, 7, 0.3f, 0.4f},
        {"three layers, weight drop only, H = 40", 17, 6, 40, 3, 2, 5, 0.0f, 0.5f},
        {"B = 11, dropout (batch groups of the layer-after-layer tiles)", 19, 9, 20, 2, 11, 5, 0.3f, 0.0f},
    };
    // On the emulated device config A's shapes run a window of 5 steps instead of 32 (and 2 for
    // window 2): what the case adds to the small ones is its widths (E = 128, H = 256: 11 units
    // a block on the emulator's 24 SMs, K across many mma k-steps) and a full tile of B = 8; the
    // window's length adds only steps, each as costly there as the small cases' whole windows.
    if (emulated_device()) cases[1].T = 5;
    // Every implementation in every precision it computes in, the same cases, each
    // precision with its tolerances; then random shapes (fixed seed, printed). The sharded
    // cases (mask indexing, which no precision changes) run in fp32 only.
    static const struct {
        sk_rnn_impl impl;
        sk_precision prec;
        sk_tensor_cores tc;
    } runs[] = {
        {SK_RNN_CUDNN, SK_PRECISION_FP32, SK_TENSOR_CORES_DEFAULT},
        {SK_RNN_PERSISTENT, SK_PRECISION_FP32, SK_TENSOR_CORES_DEFAULT},
        {SK_RNN_CUDNN_PERSIST, SK_PRECISION_FP32, SK_TENSOR_CORES_DEFAULT},
        {SK_RNN_CUDNN, SK_PRECISION_TF32, SK_TENSOR_CORES_DEFAULT},
        {SK_RNN_PERSISTENT, SK_PRECISION_TF32, SK_TENSOR_CORES_OFF},
        {SK_RNN_PERSISTENT, SK_PRECISION_TF32, SK_TENSOR_CORES_ON},
        {SK_RNN_CUDNN_PERSIST, SK_PRECISION_TF32, SK_TENSOR_CORES_DEFAULT},
        {SK_RNN_PERSISTENT, SK_PRECISION_BF16, SK_TENSOR_CORES_OFF},
        {SK_RNN_PERSISTENT, SK_PRECISION_BF16, SK_TENSOR_CORES_ON},
    };
    // Test hook SK_PARITY_ONLY=persistent-layerwise or persistent-cluster: those kernels alone, in
    // the persistent kernel's fp32 runs and its tf32 and bf16 runs on tensor cores
    // (test_plstm_layerwise.sh, test_plstm_cluster.sh; tf32 on CUDA cores is the fp32 kernel
    // again; bf16 on CUDA cores is emu_test_layerwise_emu's).
    const int family = layerwise_hook("SK_PARITY_ONLY");
    if (family < 0) return 2;
    // Test hook SK_CELLS_ONLY=1: the other cells' runs alone (test_cuda_cells.sh).
    const int cells_only = getenv("SK_CELLS_ONLY") != NULL;
    for (size_t m = 0; m < sizeof runs / sizeof runs[0] && !cells_only; m++) {
        sk_rnn_impl impl = runs[m].impl;
        const sk_precision prec = runs[m].prec;
        const sk_tensor_cores tc = runs[m].tc;
        if (family != SK_RNN_PERSISTENT) {
            if (impl != SK_RNN_PERSISTENT || (prec != SK_PRECISION_FP32 && tc != SK_TENSOR_CORES_ON)) continue;
            impl = (sk_rnn_impl)family;
        }
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i], impl, prec, tc, 0, 0);
        if (prec == SK_PRECISION_FP32) {
            // One rank's share: the second of 3 ranks of a global batch of 9, and the last of 4 of 8.
            run_case(&cases[3], impl, prec, tc, 3, 9);
            run_case(&cases[5], impl, prec, tc, 6, 8);
            run_case(&cases[8], impl, prec, tc, 3, 9); // weight drop: one mask for every rank
        }
        // The random shapes: in every precision on a GPU; on the emulated device in fp32 only,
        // where they vary the plans (units per block, groups) at the cost of a fixed case each:
        // the tf32 and bf16 operand paths at odd sizes are the fixed cases' (H = 7, 20, 33, 40;
        // B = 1, 11) and emu_test_plstm_emu's and emu_test_layerwise_emu's.
        if (emulated_device() && prec != SK_PRECISION_FP32) continue;
        sk_rng r;
        sk_rng_seed(&r, 99);
        for (int i = 0; i < 6; i++) {
            parity_case pc = {"random shape", 2 + (int)(sk_rng_u64(&r) % 40), 1 + (int)(sk_rng_u64(&r) % 40),
                              1 + (int)(sk_rng_u64(&r) % 70), 1 + (int)(sk_rng_u64(&r) % 4),
                              1 + (int)(sk_rng_u64(&r) % 5), 1 + (int)(sk_rng_u64(&r) % 9),
                              sk_rng_u64(&r) % 2 ? 0.3f : 0.0f, 0.0f};
            run_case(&pc, impl, prec, tc, 0, 0);
        }
    }
    // The GRU and the RNN through cuDNN (CUDNN_GRU, CUDNN_RNN_TANH), in fp32 and tf32: the fixed
    // cases (with and without dropout, the wavefront of chunks, weight drop, B = 1, T = 1,
    // E > H) and one rank's share; the persistent kernels and the cuDNN persist algorithms'
    // refusals are the LSTM's (the persistent kernels refuse another cell, with why).
    for (g_cell = SK_CELL_GRU; g_cell <= SK_CELL_RNN && cells_only; g_cell = (sk_cell_kind)(g_cell + 1)) {
        for (int p = 0; p < 2; p++) {
            const sk_precision prec = p ? SK_PRECISION_TF32 : SK_PRECISION_FP32;
            for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
                if (i != 10) run_case(&cases[i], SK_RNN_CUDNN, prec, SK_TENSOR_CORES_DEFAULT, 0, 0);
            if (!p) run_case(&cases[8], SK_RNN_CUDNN, prec, SK_TENSOR_CORES_DEFAULT, 3, 9);
        }
        sk_backend_config cfg = {.model = {.vocab_size = 13, .embed_size = 8, .hidden_size = 16, .num_layers = 2,
                                           .cell = g_cell},
                                 .batch_size = 4, .seq_len = 9, .training = 1, .rnn_impl = SK_RNN_PERSISTENT};
        sk_backend *be = NULL;
        sk_error err = {{0}};
        CHECK(sk_backend_create_cuda(&cfg, &be, &err) == SK_ERR_ARG && be == NULL);
        printf("--cell %s --rnn-impl persistent: %s\n", sk_cell_get(g_cell)->name, err.msg);
        CHECK(strstr(err.msg, "lstm cell only") != NULL);
    }
    g_cell = SK_CELL_LSTM;
    // cuDNN's RNN cannot give bf16 operands with an fp32 cell state: refused, with why.
    static const sk_rnn_impl no_bf16[] = {SK_RNN_CUDNN, SK_RNN_CUDNN_PERSIST};
    for (size_t m = 0; m < 2; m++) {
        sk_backend_config cfg = {.model = {.vocab_size = 13, .embed_size = 8, .hidden_size = 16, .num_layers = 2, .dropout = 0.0f, .weight_drop = 0.0f}, .batch_size = 4, .seq_len = 9, .training = 1,
                                 .rnn_impl = no_bf16[m], .precision = SK_PRECISION_BF16};
        sk_backend *be = NULL;
        sk_error err = {{0}};
        CHECK(sk_backend_create_cuda(&cfg, &be, &err) == SK_ERR_ARG && be == NULL);
        printf("--rnn-impl %s --precision bf16: %s\n", sk_rnn_impl_name(no_bf16[m]), err.msg);
        CHECK(strstr(err.msg, "cannot compute in --precision bf16") != NULL && strstr(err.msg, "cell state") != NULL);
    }
    // Strict fp32 has no tensor cores to offer: asking for them is refused, with why.
    {
        sk_backend_config cfg = {.model = {.vocab_size = 13, .embed_size = 8, .hidden_size = 16, .num_layers = 2, .dropout = 0.0f, .weight_drop = 0.0f}, .batch_size = 4, .seq_len = 9, .training = 1,
                                 .rnn_impl = SK_RNN_PERSISTENT, .plstm_tensor_cores = SK_TENSOR_CORES_ON};
        sk_backend *be = NULL;
        sk_error err = {{0}};
        CHECK(sk_backend_create_cuda(&cfg, &be, &err) == SK_ERR_ARG && be == NULL);
        printf("--rnn-impl persistent --precision fp32, tensor cores: %s\n", err.msg);
        CHECK(strstr(err.msg, "strict fp32") != NULL);
    }
    return sk_test_done("test_cuda_parity");
}
