// test_torch_reference.c: a backend against PyTorch's nn.LSTM, nn.GRU and nn.RNN and
// torch.optim on a tiny model: the CPU backend, or with the argument "cuda" the CUDA backend in
// strict fp32 (registered as gpu_test_torch_reference; exit 77 without a usable GPU, and on the
// emulated device in a build without one). One reference file per cell:
// tests/data/torch_reference.bin (the LSTM), torch_reference_gru.bin, torch_reference_rnn.bin,
// written by scripts/gen_torch_reference.py (format there): parameters, inputs, initial state,
// and PyTorch's logits, mean loss, final state, every gradient, the gradient norm, the parameters
// (and Adam moments) after one clipped Adam step and one clipped AdamW step, and (the LSTM's
// file) the parameters and slots after two clipped RMSprop steps and two of SGD (plain and Nesterov's). PyTorch computed in float64,
// so the reference is exact to fp32 rounding; what remains is this backend's fp32 error. Every
// optimizer step is also held bitwise to sk_optim_update on the host, fed the backend's own
// parameters, gradients, slots and norm (the CPU loop's element function, which the CUDA kernel
// must reproduce exactly).
//
// Tolerance: |got - ref| <= atol + rtol*|ref|, rtol = 1e-4 (the project's acceptance
// criterion). atol covers elements that are sums with cancellation: a gradient element is
// a sum over B*T = 18 positions (and back through T steps of recurrence) of products of
// size <= ~0.05; fp32 accumulation leaves an absolute error of about 18 * 0.05 * 6e-8
// ~ 5e-8 whatever the sum's value, so atol = 2e-7 for gradients and Adam moments (the
// largest gradient of every cell's case is 0.16), and 1e-6 for logits, state, loss and
// parameters (values of order 1, each from sums of E or H <= 7 products per step,
// compounded over T = 6 steps).
// RMSprop: its parameters and momentum buffer after two steps within ATOL_VALUE; square_avg
// = alpha sq + (1 - alpha) (s g)^2 moves by 2 (1 - alpha) s^2 |g| dg <= 2e-2 * 0.25 * 0.15 * 2e-7
// = 1.5e-10 per step for a gradient error dg: atol 3e-10 (ATOL_SQ_AVG).
// SGD (lr 0.5, momentum 0.9, L2 decay 0.1): its parameters after each step within ATOL_VALUE;
// momentum_buffer = 0.9 (s g1 + wd p0) + (s g2 + wd p1) carries the error of two clipped
// gradients (s < 1, each within ATOL_GRAD: 1.9 ATOL_GRAD) and 0.1 of p1's (within ATOL_VALUE):
// atol 2 ATOL_GRAD + 0.1 ATOL_VALUE = 5e-7 (ATOL_SGD_BUF).
// Then --precision bf16 on the CPU against the same reference (check_bf16 says its tolerance).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/lstm_onednn.h"
#include "shakespeare/backend.h"
#include "shakespeare/model.h"
#include "shakespeare/optim.h"
#include "test_util.h"

#define ATOL_VALUE 1e-6
#define ATOL_GRAD 2e-7
#define RTOL 1e-4
#define ATOL_SQ_AVG 3e-10
#define ATOL_SGD_BUF (2 * ATOL_GRAD + 0.1 * ATOL_VALUE)

// ---- a small bounded reader for the reference file ---------------------------------------

#define REF_MAX_BYTES (1u << 20)
#define REF_MAX_RECORDS 256
#define REF_MAX_NDIM 4

typedef struct {
    char name[64];
    int ndim;
    uint32_t dims[REF_MAX_NDIM];
    uint32_t dtype;    // 0 = f32, 1 = i32
    size_t count;      // elements
    const void *data;  // borrowed from ref_file.blob (4-byte aligned copy below)
} ref_record;

typedef struct {
    unsigned char *blob;  // owned: the whole file
    size_t size;
    uint32_t cfg[6];      // V, E, H, L, B, T
    int n;
    ref_record rec[REF_MAX_RECORDS];
    void *aligned[REF_MAX_RECORDS]; // owned: aligned copies of each record's data
} ref_file;

static int rd_u32(const ref_file *f, size_t *pos, uint32_t *out) {
    if (f->size - *pos < 4) return 0;
    const unsigned char *p = f->blob + *pos;
    *out = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    *pos += 4;
    return 1;
}

// Returns NULL on success, else what is wrong with the file.
static const char *ref_load(ref_file *f, const char *path) {
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "rb");
    if (!fp) return "cannot open (run scripts/gen_torch_reference.py)";
    f->blob = malloc(REF_MAX_BYTES);
    if (!f->blob) {
        fclose(fp);
        return "out of memory";
    }
    f->size = fread(f->blob, 1, REF_MAX_BYTES, fp);
    int too_big = f->size == REF_MAX_BYTES && fgetc(fp) != EOF;
    fclose(fp);
    if (too_big) return "larger than 1 MiB";
    if (f->size < 8 || memcmp(f->blob, "SKREF001", 8) != 0) return "bad magic";
    size_t pos = 8;
    for (int i = 0; i < 6; i++)
        if (!rd_u32(f, &pos, &f->cfg[i]) || f->cfg[i] == 0 || f->cfg[i] > 4096) return "bad config";
    uint32_t n;
    if (!rd_u32(f, &pos, &n) || n > REF_MAX_RECORDS) return "bad record count";
    for (uint32_t i = 0; i < n; i++) {
        ref_record *r = &f->rec[i];
        uint32_t len, ndim;
        if (!rd_u32(f, &pos, &len) || len == 0 || len >= sizeof r->name || f->size - pos < len)
            return "bad record name";
        memcpy(r->name, f->blob + pos, len);
        pos += len;
        if (!rd_u32(f, &pos, &ndim) || ndim < 1 || ndim > REF_MAX_NDIM) return "bad record ndim";
        r->ndim = (int)ndim;
        r->count = 1;
        for (uint32_t d = 0; d < ndim; d++) {
            if (!rd_u32(f, &pos, &r->dims[d]) || r->dims[d] > (1u << 20)) return "bad record dims";
            r->count *= r->dims[d];
        }
        if (!rd_u32(f, &pos, &r->dtype) || r->dtype > 1) return "bad record dtype";
        if (r->count > (f->size - pos) / 4) return "truncated record data";
        f->aligned[i] = malloc(r->count * 4 + 1);
        if (!f->aligned[i]) return "out of memory";
        memcpy(f->aligned[i], f->blob + pos, r->count * 4); // the file is little-endian, as is x86
        r->data = f->aligned[i];
        pos += r->count * 4;
        f->n = (int)i + 1;
    }
    if (pos != f->size) return "trailing bytes after the last record";
    return NULL;
}

static void ref_free(ref_file *f) {
    for (int i = 0; i < f->n; i++) free(f->aligned[i]);
    free(f->blob);
    memset(f, 0, sizeof *f);
}

// The record `name` with `count` elements of `dtype`; exits when missing (the file and the
// test disagree, nothing later can be trusted).
static const ref_record *ref_get(const ref_file *f, const char *name, size_t count, uint32_t dtype) {
    for (int i = 0; i < f->n; i++) {
        const ref_record *r = &f->rec[i];
        if (strcmp(r->name, name) != 0) continue;
        if (r->count != count || r->dtype != dtype) {
            fprintf(stderr, "reference record %s has %zu elements of dtype %u, expected %zu of %u\n", name,
                    r->count, r->dtype, count, dtype);
            exit(1);
        }
        return r;
    }
    fprintf(stderr, "reference record %s is missing\n", name);
    exit(1);
}

static const float *ref_f32(const ref_file *f, const char *name, size_t count) {
    return (const float *)ref_get(f, name, count, 0)->data;
}

static float ref_scalar(const ref_file *f, const char *name) { return ref_f32(f, name, 1)[0]; }

// ---- the optimizer step, held to the host's ------------------------------------------------

// sk_backend_step of hp at optimizer step `step` on be, then the same update by sk_optim_update
// on the host from what the backend held before it (parameters, gradients, slots) and the norm
// it reported: parameters and slots must be the same bits. Returns the norm.
static double step_checked(sk_backend *be, const sk_optim_hparams *hp, float lr, int64_t step) {
    sk_error err = {{0}};
    const size_t P = sk_backend_layout(be)->total, S = (size_t)sk_optim_of(hp->kind)->n_slots;
    float *p = calloc(P, sizeof(float)), *g = calloc(P, sizeof(float)), *st = calloc(S * P, sizeof(float));
    float *got = calloc(P + S * P, sizeof(float));
    CHECK(p && g && st && got);
    CHECK_OK(sk_backend_get_params(be, p));
    CHECK_OK(sk_backend_get_grads(be, g));
    for (size_t k = 0; k < S; k++) CHECK_OK(sk_backend_get_optimizer_state(be, (int)k, st + k * P));
    double norm = NAN;
    CHECK_OK(sk_backend_step(be, hp, lr, step, &norm));
    sk_optim_update(p, g, st, sk_backend_layout(be), hp, lr, sk_clip_scale(norm, hp->grad_clip), step);
    CHECK_OK(sk_backend_get_params(be, got));
    for (size_t k = 0; k < S; k++) CHECK_OK(sk_backend_get_optimizer_state(be, (int)k, got + P + k * P));
    const int same = memcmp(got, p, P * sizeof(float)) == 0 && memcmp(got + P, st, S * P * sizeof(float)) == 0;
    printf("  %s step %lld: parameters and slots %s sk_optim_update's on the host\n", sk_optim_kind_name(hp->kind),
           (long long)step, same ? "are the bits of" : "DIFFER from");
    CHECK(same);
    free(p), free(g), free(st), free(got);
    return norm;
}

// ---- comparisons ---------------------------------------------------------------------------

// Compares every tensor of the layout in buf against the records "<prefix><name>".
static void compare_tensors(const ref_file *f, const sk_param_layout *lay, const float *buf, const char *prefix,
                            double atol) {
    for (int i = 0; i < lay->n_tensors; i++) {
        const sk_tensor_info *t = &lay->tensors[i];
        char name[128];
        snprintf(name, sizeof name, "%s%s", prefix, t->name);
        sk_test_compare(name, buf + t->offset, ref_f32(f, name, t->numel), t->numel, atol, RTOL);
    }
}

// Copies the parameter records into the canonical buffer, checking names and shapes.
static void gather_params(const ref_file *f, const sk_param_layout *lay, float *params) {
    size_t covered = 0;
    for (int i = 0; i < lay->n_tensors; i++) {
        const sk_tensor_info *t = &lay->tensors[i];
        const ref_record *r = ref_get(f, t->name, t->numel, 0);
        CHECK(r->ndim == t->ndim);
        CHECK((int)r->dims[0] == t->shape[0]);
        if (t->ndim == 2) CHECK((int)r->dims[1] == t->shape[1]);
        memcpy(params + t->offset, r->data, t->numel * sizeof(float));
        covered += t->numel;
    }
    CHECK(covered == lay->total);
}

// The records "<state>0" (which == '0') or "<state>n" (which == 'n') of every state tensor of
// the cell (h, then an LSTM's c) into one (S, L, B, H) buffer, as the backend holds the state.
static void gather_state(const ref_file *f, const sk_cell *cell, char which, size_t S, float *out) {
    for (int s = 0; s < cell->n_states; s++) {
        char name[16];
        snprintf(name, sizeof name, "%s%c", cell->state_names[s], which);
        memcpy(out + (size_t)s * S, ref_f32(f, name, S), S * sizeof(float));
    }
}

// The final state against the records "<state>n".
static void compare_state(const ref_file *f, const sk_cell *cell, const float *got, size_t S, const char *what) {
    for (int s = 0; s < cell->n_states; s++) {
        char name[16], label[48];
        snprintf(name, sizeof name, "%sn", cell->state_names[s]);
        snprintf(label, sizeof label, "%s%s", name, what);
        sk_test_compare(label, got + (size_t)s * S, ref_f32(f, name, S), S, ATOL_VALUE, RTOL);
    }
}

// The backend under test: the CPU's, or the CUDA backend's (strict fp32: a zeroed precision).
static sk_status create(const sk_backend_config *bc, int cuda, sk_backend **out, sk_error *err) {
    return cuda ? sk_backend_create_cuda(bc, out, err) : sk_backend_create_cpu(bc, out, err);
}

// One optimizer's two-step records in the reference: "<prefix>1.<name>" (parameters after step
// 1), "<prefix>.<name>" (after step 2) and, for slot k, "<slots[k]><name>" within atol[k].
typedef struct {
    const char *prefix;
    const char *slots[SK_OPTIM_MAX_SLOTS];
    double atol[SK_OPTIM_MAX_SLOTS];
} two_step_records;

// Two clipped steps of hp from the starting parameters and zero slots, each from its own training
// forward from h0 (the LSTM's h0, c0) and backward, against torch.optim's: the first by the eager
// ops, the second by sk_backend_train_step.
static void check_two_steps(const ref_file *ref, sk_backend_config bc, int cuda, const float *params, const float *h0,
                            const sk_optim_hparams *hp, float lr, const two_step_records *rec) {
    sk_error err = {{0}};
    bc.optimizer = hp->kind;
    sk_backend *be = NULL;
    CHECK_OK(create(&bc, cuda, &be, &err));
    const sk_param_layout *lay = sk_backend_layout(be);
    const size_t P = lay->total;
    const int32_t *x = ref_get(ref, "x", (size_t)bc.batch_size * bc.seq_len, 1)->data;
    const int32_t *y = ref_get(ref, "y", (size_t)bc.batch_size * bc.seq_len, 1)->data;
    float *buf = calloc(P, sizeof(float));
    CHECK(buf != NULL);
    CHECK_OK(sk_backend_set_params(be, params));
    // Step 1 by the eager ops, held bitwise to the host's update; step 2 as the trainer takes it
    // (sk_backend_train_step: on CUDA the deferred step, its clip scale formed on the device).
    double loss_sum = NAN;
    CHECK_OK(sk_backend_set_state(be, h0));
    CHECK_OK(sk_backend_forward(be, x, y, bc.seq_len, SK_MODE_TRAIN, 1, &loss_sum));
    CHECK_OK(sk_backend_backward(be));
    step_checked(be, hp, lr, 1);
    CHECK_OK(sk_backend_get_params(be, buf));
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%s1.", rec->prefix);
    compare_tensors(ref, lay, buf, prefix, ATOL_VALUE);
    CHECK_OK(sk_backend_set_state(be, h0));
    const sk_train_step_args a = {.x = x, .y = y, .len = bc.seq_len, .step = 2, .opt_step = 2, .optim = hp, .lr = lr};
    sk_step_stats stats;
    CHECK_OK(sk_backend_train_step(be, &a, &err));
    CHECK_OK(sk_backend_read_stats(be, &stats, &err));
    CHECK(stats.bad_step == 0);
    CHECK_OK(sk_backend_get_params(be, buf));
    snprintf(prefix, sizeof prefix, "%s.", rec->prefix);
    compare_tensors(ref, lay, buf, prefix, ATOL_VALUE);
    for (int k = 0; k < sk_optim_of(hp->kind)->n_slots; k++) {
        CHECK_OK(sk_backend_get_optimizer_state(be, k, buf));
        compare_tensors(ref, lay, buf, rec->slots[k], rec->atol[k]);
    }
    free(buf);
    sk_backend_free(be);
}

// torch.optim.RMSprop's two steps (momentum, L2 decay on matrices).
static void check_rmsprop(const ref_file *ref, const sk_backend_config *bc, int cuda, const float *params,
                          const float *h0) {
    const sk_optim_hparams hp = {.kind = SK_OPTIM_RMSPROP, .alpha = ref_scalar(ref, "rmsprop.alpha"),
                                 .momentum = ref_scalar(ref, "rmsprop.momentum"), .eps = ref_scalar(ref, "rmsprop.eps"),
                                 .weight_decay = ref_scalar(ref, "rmsprop.weight_decay"),
                                 .grad_clip = ref_scalar(ref, "clip")};
    printf("RMSprop, two steps (alpha %.3g, momentum %.3g, eps %.3g, weight decay %.3g on matrices):\n", hp.alpha,
           hp.momentum, hp.eps, hp.weight_decay);
    const two_step_records rec = {.prefix = "rmsprop", .slots = {"rmsprop_sq.", "rmsprop_buf."},
                                  .atol = {ATOL_SQ_AVG, ATOL_VALUE}};
    check_two_steps(ref, *bc, cuda, params, h0, &hp, ref_scalar(ref, "lr"), &rec);
}

// torch.optim.SGD's two steps (momentum, dampening 0, L2 decay on matrices), plain and Nesterov's.
static void check_sgd(const ref_file *ref, const sk_backend_config *bc, int cuda, const float *params,
                      const float *h0) {
    for (int nesterov = 0; nesterov <= 1; nesterov++) {
        const sk_optim_hparams hp = {.kind = SK_OPTIM_SGD, .momentum = ref_scalar(ref, "sgd.momentum"),
                                     .nesterov = nesterov, .weight_decay = ref_scalar(ref, "sgd.weight_decay"),
                                     .grad_clip = ref_scalar(ref, "clip")};
        const float lr = ref_scalar(ref, "sgd.lr");
        printf("SGD%s, two steps (lr %.3g, momentum %.3g, weight decay %.3g on matrices):\n",
               nesterov ? " (Nesterov)" : "", lr, hp.momentum, hp.weight_decay);
        const two_step_records rec = {.prefix = nesterov ? "sgdn" : "sgd",
                                      .slots = {nesterov ? "sgdn_buf." : "sgd_buf."}, .atol = {ATOL_SGD_BUF}};
        check_two_steps(ref, *bc, cuda, params, h0, &hp, lr, &rec);
    }
}

// Relative L2 error of got against ref.
static double rel_l2(const float *got, const float *ref, size_t n) {
    double d = 0.0, r = 0.0;
    for (size_t i = 0; i < n; i++) d += ((double)got[i] - ref[i]) * ((double)got[i] - ref[i]), r += (double)ref[i] * ref[i];
    return sqrt(d / (r > 0.0 ? r : 1.0));
}

static void check_l2(const char *what, const float *got, const float *ref, size_t n, double bound) {
    const double e = rel_l2(got, ref, n);
    printf("  %-28s relative L2 error %.3g (bound %.3g)%s\n", what, e, bound, e <= bound ? "" : "  FAIL");
    if (!(e <= bound)) sk_test_failures++;
}

// --precision bf16 on the CPU (oneDNN's LSTM, src/cpu/lstm_onednn.h) against the same float64
// reference: the loss, logits, final state and every gradient of one training forward and
// backward (the LSTM's file; the GRU and the RNN have no bf16 on the CPU yet). Tolerance from bf16's 8 significant bits: each operand of the LSTM's products (W_ih,
// W_hh, the layer inputs, h) is off by <= 2^-9 relative, a product by <= 2^-8; rounding errors
// of random sign add in quadrature over a reduction of K = E + H (or 2H) terms and over the T
// steps the cell carries them, so a tensor's normalized (relative L2) error is bounded by about
// 2^-8 * sqrt(K * T); the output layer and the optimizer stay fp32. Skipped (with a line) where
// bf16 is unavailable: on an AVX-512 CPU without bf16 dot products it runs on oneDNN's reference
// kernels (the same arithmetic), on AVX2 or without oneDNN not at all.
static void check_bf16(const ref_file *ref, const sk_backend_config *fp32_cfg, const float *params, const int32_t *x,
                       const int32_t *y, const float *h0) {
    char why[256];
    if (!sk_onednn_bf16_check(why, sizeof why)) sk_onednn_test_reference_kernels(1);
    if (!sk_onednn_bf16_check(why, sizeof why)) {
        printf("bf16: skipped (%s)\n", why);
        return;
    }
    sk_error err = {{0}};
    sk_backend_config bc = *fp32_cfg;
    bc.precision = SK_PRECISION_BF16;
    sk_backend *be = NULL;
    CHECK_OK(sk_backend_create_cpu(&bc, &be, &err));
    const sk_param_layout *lay = sk_backend_layout(be);
    const int V = bc.model.vocab_size, E = bc.model.embed_size, H = bc.model.hidden_size, L = bc.model.num_layers;
    const size_t BT = (size_t)bc.batch_size * bc.seq_len, S = (size_t)L * bc.batch_size * H;
    const int K = E > H ? E + H : 2 * H;
    const double bound = ldexp(1.0, -8) * sqrt((double)K * bc.seq_len);
    float *logits = calloc(BT * V, sizeof(float)), *h = calloc(2 * S, sizeof(float));
    float *grads = calloc(lay->total, sizeof(float));
    printf("bf16 (oneDNN's LSTM) against the float64 reference:\n");
    double loss_sum = NAN;
    CHECK_OK(sk_backend_set_params(be, params));
    CHECK_OK(sk_backend_set_state(be, h0)); // (S, L, B, H): h0, then c0
    CHECK_OK(sk_backend_forward(be, x, y, bc.seq_len, SK_MODE_TRAIN, 1, &loss_sum));
    const float loss = (float)(loss_sum / (double)BT);
    check_l2("loss (mean)", &loss, ref_f32(ref, "loss", 1), 1, bound);
    CHECK_OK(sk_backend_get_logits(be, logits));
    check_l2("logits", logits, ref_f32(ref, "logits", BT * V), BT * V, bound);
    CHECK_OK(sk_backend_get_state(be, h));
    check_l2("hn", h, ref_f32(ref, "hn", S), S, bound);
    check_l2("cn", h + S, ref_f32(ref, "cn", S), S, bound);
    CHECK_OK(sk_backend_backward(be));
    CHECK_OK(sk_backend_get_grads(be, grads));
    for (int i = 0; i < lay->n_tensors; i++) {
        const sk_tensor_info *t = &lay->tensors[i];
        char name[128];
        snprintf(name, sizeof name, "grad.%s", t->name);
        check_l2(name, grads + t->offset, ref_f32(ref, name, t->numel), t->numel, bound);
    }
    sk_backend_free(be);
    free(logits), free(h), free(grads);
}

static void check_cell(const char *file, sk_cell_kind kind, int cuda) {
    char path[4096];
    sk_test_source_path(path, sizeof path, file);
    ref_file *ref = malloc(sizeof *ref);
    const char *why = ref ? ref_load(ref, path) : "out of memory";
    if (why) {
        fprintf(stderr, "%s: %s\n", path, why);
        if (ref) ref_free(ref);
        free(ref);
        exit(1);
    }
    const int V = (int)ref->cfg[0], E = (int)ref->cfg[1], H = (int)ref->cfg[2], L = (int)ref->cfg[3];
    const int B = (int)ref->cfg[4], T = (int)ref->cfg[5];
    const sk_cell *cell = sk_cell_get(kind);
    printf("reference %s (nn.%s): V=%d E=%d H=%d L=%d B=%d T=%d, %d records\n", file, cell->torch_module, V, E, H, L,
           B, T, ref->n);

    sk_error err = {{0}};
    sk_backend_config bc;
    memset(&bc, 0, sizeof bc);
    bc.model = (sk_model_config){.vocab_size = V, .embed_size = E, .hidden_size = H, .num_layers = L, .dropout = 0.0f,
                                 .cell = kind};
    bc.batch_size = B;
    bc.seq_len = T;
    bc.training = 1;
    bc.threads = 1;
    bc.seed = 1;
    sk_backend *be = NULL;
    CHECK_OK(create(&bc, cuda, &be, &err));
    printf("backend: %s\n", sk_backend_device(be));
    const sk_param_layout *lay = sk_backend_layout(be);
    CHECK(lay->n_tensors == 3 + 4 * L);

    const size_t P = lay->total, S = (size_t)L * B * H, BT = (size_t)B * T;
    float *params = calloc(P, sizeof(float)), *buf = calloc(P, sizeof(float));
    float *m = calloc(P, sizeof(float)), *v = calloc(P, sizeof(float)), *zeros = calloc(P, sizeof(float));
    float *logits = calloc(BT * V, sizeof(float)), *h = calloc(SK_MAX_CELL_STATES * S, sizeof(float));
    float *h0 = calloc(SK_MAX_CELL_STATES * S, sizeof(float)); // (S, L, B, H): h, then an LSTM's c
    int32_t *xs = calloc(BT, sizeof(int32_t));
    CHECK(params && buf && m && v && zeros && logits && h && h0 && xs);
    gather_params(ref, lay, params);
    gather_state(ref, cell, '0', S, h0);
    const int32_t *x = ref_get(ref, "x", BT, 1)->data, *y = ref_get(ref, "y", BT, 1)->data;
    const float *ref_logits = ref_f32(ref, "logits", BT * V);

    // ---- training forward from a nonzero carried state, loss, final state --------------
    printf("forward (train, from a nonzero state):\n");
    double loss_sum = NAN;
    CHECK_OK(sk_backend_set_params(be, params));
    CHECK_OK(sk_backend_set_state(be, h0));
    CHECK_OK(sk_backend_forward(be, x, y, T, SK_MODE_TRAIN, 1, &loss_sum));
    float loss = (float)(loss_sum / (double)BT);
    sk_test_compare("loss (mean)", &loss, ref_f32(ref, "loss", 1), 1, ATOL_VALUE, RTOL);
    CHECK_OK(sk_backend_get_logits(be, logits));
    sk_test_compare("logits", logits, ref_logits, BT * V, ATOL_VALUE, RTOL);
    CHECK_OK(sk_backend_get_state(be, h));
    compare_state(ref, cell, h, S, "");

    // ---- backward: every gradient ---------------------------------------------------------
    printf("backward:\n");
    CHECK_OK(sk_backend_backward(be));
    CHECK_OK(sk_backend_get_grads(be, buf));
    compare_tensors(ref, lay, buf, "grad.", ATOL_GRAD);

    // ---- clipped Adam step 1: norm, parameters, moments ------------------------------------
    printf("Adam step (clip %.6g < norm %.6g):\n", ref_scalar(ref, "clip"), ref_scalar(ref, "grad_norm"));
    sk_optim_hparams hp = {.beta1 = ref_scalar(ref, "beta1"),
                          .beta2 = ref_scalar(ref, "beta2"),
                          .eps = ref_scalar(ref, "eps"),
                          .weight_decay = ref_scalar(ref, "weight_decay"),
                          .grad_clip = ref_scalar(ref, "clip")};
    const float lr = ref_scalar(ref, "lr");
    CHECK(hp.grad_clip < ref_scalar(ref, "grad_norm")); // clipping must act
    double gnorm = step_checked(be, &hp, lr, 1);
    float gnorm_f = (float)gnorm;
    sk_test_compare("grad_norm", &gnorm_f, ref_f32(ref, "grad_norm", 1), 1, ATOL_GRAD, RTOL);
    CHECK_OK(sk_backend_get_params(be, buf));
    compare_tensors(ref, lay, buf, "adam.", ATOL_VALUE);
    CHECK_OK(sk_backend_get_optimizer_state(be, 0, m));
    CHECK_OK(sk_backend_get_optimizer_state(be, 1, v));
    compare_tensors(ref, lay, m, "adam_m.", ATOL_GRAD);
    // v = (1 - beta2) (s g)^2 with clip scale s = 0.5, so an error dg in g moves v by
    // 2 (1 - beta2) s^2 |g| dg <= 2e-3 * 0.25 * 0.16 * 2e-7 = 1.6e-11: atol 3e-11.
    compare_tensors(ref, lay, v, "adam_v.", 3e-11);

    // ---- clipped AdamW step 1 (decay on matrices only) from the same start ------------------
    // Forward and backward again from the original parameters and state, so the step does
    // not depend on whether sk_backend_step leaves the gradient buffer clipped.
    printf("AdamW step (weight decay %.3g on matrices):\n", ref_scalar(ref, "adamw.weight_decay"));
    CHECK_OK(sk_backend_set_params(be, params));
    CHECK_OK(sk_backend_set_optimizer_state(be, 0, zeros));
    CHECK_OK(sk_backend_set_optimizer_state(be, 1, zeros));
    CHECK_OK(sk_backend_set_state(be, h0));
    CHECK_OK(sk_backend_forward(be, x, y, T, SK_MODE_TRAIN, 2, &loss_sum));
    CHECK_OK(sk_backend_backward(be));
    hp.weight_decay = ref_scalar(ref, "adamw.weight_decay");
    gnorm = step_checked(be, &hp, lr, 1);
    gnorm_f = (float)gnorm;
    sk_test_compare("grad_norm (again)", &gnorm_f, ref_f32(ref, "grad_norm", 1), 1, ATOL_GRAD, RTOL);
    CHECK_OK(sk_backend_get_params(be, buf));
    compare_tensors(ref, lay, buf, "adamw.", ATOL_VALUE);

    // ---- evaluation forward in two windows (len 4, then 2) carrying the state --------------
    // Same logits as one window of T (the model is causal) and the same final state; checks
    // the len < T path, the (B, len, V) logits layout and the state carried between calls.
    const int len1 = T > 2 ? T - 2 : 1, len2 = T - len1;
    printf("forward (eval, windows of %d and %d):\n", len1, len2);
    CHECK_OK(sk_backend_set_params(be, params));
    CHECK_OK(sk_backend_set_state(be, h0));
    int start = 0;
    for (int w = 0; w < 2; w++) {
        const int len = w == 0 ? len1 : len2;
        for (int b = 0; b < B; b++) memcpy(xs + (size_t)b * len, x + (size_t)b * T + start, len * sizeof(int32_t));
        CHECK_OK(sk_backend_forward(be, xs, NULL, len, SK_MODE_EVAL, 0, &loss_sum));
        CHECK_OK(sk_backend_get_logits(be, logits));
        for (int b = 0; b < B; b++) {
            char what[64];
            snprintf(what, sizeof what, "logits[%d, %d:%d]", b, start, start + len);
            sk_test_compare(what, logits + (size_t)b * len * V, ref_logits + ((size_t)b * T + start) * V,
                            (size_t)len * V, ATOL_VALUE, RTOL);
        }
        start += len;
    }
    CHECK_OK(sk_backend_get_state(be, h));
    compare_state(ref, cell, h, S, " (eval)");

    if (kind == SK_CELL_LSTM) { // RMSprop's and SGD's records: the LSTM's file
        check_rmsprop(ref, &bc, cuda, params, h0);
        check_sgd(ref, &bc, cuda, params, h0);
    }
    sk_backend_free(be);
    if (kind == SK_CELL_LSTM && !cuda) check_bf16(ref, &bc, params, x, y, h0);
    free(params);
    free(buf);
    free(m);
    free(v);
    free(zeros);
    free(logits);
    free(h);
    free(h0);
    free(xs);
    ref_free(ref);
    free(ref);
}

int main(int argc, char **argv) {
    const int cuda = argc > 1 && strcmp(argv[1], "cuda") == 0;
    char reason[256];
    if (cuda && !sk_cuda_available(0, reason, sizeof reason)) {
        printf("skipped: %s\n", reason);
        return 77;
    }
    check_cell("tests/data/torch_reference.bin", SK_CELL_LSTM, cuda);
    check_cell("tests/data/torch_reference_gru.bin", SK_CELL_GRU, cuda);
    check_cell("tests/data/torch_reference_rnn.bin", SK_CELL_RNN, cuda);
    return sk_test_done("test_torch_reference");
}
