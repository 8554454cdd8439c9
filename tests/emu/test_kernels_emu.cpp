// test_kernels_emu.cpp: the CUDA backend's own kernels other than the persistent LSTM
// (kernels/optim_kernels.cuh, softmax_xent_kernels.cuh, embedding_kernels.cuh,
// dropout_kernels.cuh, kernels/copy_segments_kernel.cuh: the code the GPU runs) executed on
// the CPU by tests/emu/cuda_emu.h, one fiber per GPU thread, launched with the grids their
// launchers compute (the same *_blocks functions), against the CPU backend's computation.
//
// Every launch runs in both schedules (threads in ascending, then descending (block,
// thread) order between barriers; blocks in ascending, then descending order) from the same
// inputs, and every output must agree bit for bit between the two: a missing __syncthreads
// or __syncwarp makes a result depend on who ran first. Outputs start as NaN (or a
// sentinel), so an element never written shows, and elements a kernel must leave alone
// (rows past n, skipped updates, gaps between weight segments) are checked unchanged.
// Sizes cover n not a multiple of the block, grids past the launchers' caps (so that the
// grid-stride loops take a second lap), V below, at and above 32 and not a multiple of it,
// B*len past the embedding gradient's 1024-id chunk, p = 0 and p > 0.
//
// Against the CPU, with the tolerance each kernel's documentation claims:
//   optim_kernel vs sk_optim_update (optim.c), for Adam, RMSprop and SGD (with and without
//     momentum, SGD's also with Nesterov's): bitwise (both run step_math.h's sk_optim_element,
//     the kernel's operations without FMA; kernels.h), with clip scale != 1, decay on 2-D
//     tensors only, steps 1 and 7, and *skip != 0 leaving params and the slots untouched.
//   sumsq_stage1/2 (the squared gradient norm): bitwise against the documented fixed order
//     (lane-strided sums, a halving tree per block, the same over the partials; a function
//     of n only) replayed on the host; and sqrt of it vs sk_grad_norm (the CPU's order,
//     sequential) within n * 2^-52 relative: both sum n non-negative doubles, each with a
//     relative error of at most (n-1) * 2^-53, and the sqrt halves it.
//   step_finish_kernel: bitwise: norm = sqrt(sumsq), the clip scale of optim.h's
//     sk_clip_scale, the mean loss's non-finite test before the norm's, the first bad step
//     sticky; cases include a loss sum whose double mean is finite but float mean is not.
//   softmax_xent_kernel: the logits + bias in place bitwise (one float add). Loss rows and
//     dlogits vs xent_cpu.c: the kernel forms the same double expressions and the same float
//     roundings (__fmul_rn, __fsub_rn) but sums the normalizer s in another order (lanes,
//     then a butterfly) than the CPU (index order); s's relative error is at most V * 2^-53
//     on either side. Loss (log s + max - z_y, rounded once): |diff| <= 1 float ulp of the
//     reference + 4 V 2^-53 (log's absolute error). dlogits: p_j = (float)(e_j / s) moves by
//     at most 1 ulp, times inv_n by at most 2: |diff| <= 2 ulps of the reference, and 3 ulps
//     of inv_n at the target (p_y - inv_n). And at most 1% of these elements may differ from
//     the CPU's bits at all: the order flips a float rounding with a probability of about
//     V 2^-28 per element (1e-6 at V = 200; none here), while a kernel whose roundings
//     differ from the CPU's (p * inv_n in double, say) changes about a quarter of them,
//     within the ulp bounds. (The emulator calls the host's exp and log, so
//     the device's libm is not what is checked here; tests/gpu/test_cuda_parity.c is.)
//   sum_double_kernel: bitwise against its fixed order replayed; vs the sequential double
//     sum of the CPU backend's loss within n * 2^-52 * sum |x|.
//   dropout_kernel: bitwise against hash.h's masks, kept where sk_hash_uniform >= p and
//     scaled by 1/(1-p) (the CPU backend's apply_dropout); p = 0 is the identity; in place;
//     a mask index past 2^32; an element whose uniform is exactly p (kept).
//   embedding_forward_kernel / embedding_backward_kernel vs embedding_cpu.c: bitwise (a
//     copy; the gradient adds positions in the CPU's time-major order, kernels.h).
//   copy_segments_kernel: bitwise, both directions, against the segment table's definition.
// And the emulator's thread-block clusters (cuda_emu.h), with a kernel of this file's own: a
// double-buffered exchange through map_shared_rank and cluster.sync, bitwise against the
// host in both schedules, each cluster run whole and the clusters in order, one cluster.sync
// per step counted per block; without the cluster.sync it must go wrong in some schedule;
// and the misuses the emulator reports (a bad configuration and a skipped cluster.sync as
// errors; cluster functions outside a cluster launch and map_shared_rank past the cluster
// or off the dynamic shared memory by ending the process, checked in a child).
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "optim_kernels.cuh"
#include "copy_segments_kernel.cuh"
#include "dropout_kernels.cuh"
#include "embedding_kernels.cuh"
#include "softmax_xent_kernels.cuh"

extern "C" {
#include "cpu/embedding_cpu.h"
#include "cpu/xent_cpu.h"
#include "shakespeare/hash.h"
#include "shakespeare/optim.h"
#include "test_util.h"
}

using std::vector;

namespace {

uint64_t g_rng = 0x6b65726e;
float uniform(float lo, float hi) {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (float)((g_rng >> 40) * (1.0 / 16777216.0));
}
int below(int n) { return (int)uniform(0.0f, (float)n) % n; }
vector<float> random_floats(size_t n, float lo, float hi) {
    vector<float> v(n);
    for (float &x : v) x = uniform(lo, hi);
    return v;
}

const char *schedule_name(bool reverse) { return reverse ? "descending" : "ascending"; }

// One launch of grid x grid_y blocks of `block` threads; a deadlock or a shared-memory
// overrun counts as a failure.
void launch(const char *what, unsigned grid, unsigned grid_y, unsigned block, bool reverse,
            const std::function<void()> &body) {
    sk_emu_config cfg;
    cfg.grid = grid, cfg.grid_y = grid_y, cfg.block = block, cfg.reverse = reverse;
    const std::string err = sk_emu_launch(cfg, body);
    if (!err.empty()) fprintf(stderr, "  %s (%s schedule): %s\n", what, schedule_name(reverse), err.c_str());
    CHECK(err.empty());
}

// Elements whose bits differ; prints the first.
template <typename T> size_t bit_diffs(const char *what, const T *got, const T *ref, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &ref[i], sizeof(T)) != 0 && bad++ == 0)
            fprintf(stderr, "  %s: element %zu is %.9g, expected %.9g\n", what, i, (double)got[i], (double)ref[i]);
    return bad;
}
template <typename T> void expect_bits(const char *what, const vector<T> &got, const vector<T> &ref) {
    CHECK(got.size() == ref.size());
    const size_t bad = bit_diffs(what, got.data(), ref.data(), got.size() < ref.size() ? got.size() : ref.size());
    if (bad) fprintf(stderr, "  %s: %zu of %zu elements differ bitwise\n", what, bad, ref.size());
    CHECK(bad == 0);
}
void expect_bits(const char *what, double got, double ref) {
    expect_bits(what, vector<double>{got}, vector<double>{ref});
}

// Both schedules from the same inputs: run(reverse) fills its outputs; every output of the
// two runs must be the same bits.
template <typename Out> void both_schedules(const char *what, const std::function<Out(bool)> &run, Out *up) {
    *up = run(false);
    const Out down = run(true);
    char line[160];
    snprintf(line, sizeof line, "%s: ascending vs descending schedule", what);
    up->same_as(line, down);
}

// The fixed order of sumsq_stage1/2 and sum_double_kernel, replayed on the host: lane t of
// a block of `lanes` adds terms[first + t], terms[first + t + stride], ... in turn, then the
// lanes' sums meet by the halving tree sh[t] += sh[t + s], s = lanes/2, ..., 1.
double tree_sum(const vector<double> &terms, size_t first, size_t stride, int lanes) {
    vector<double> sh((size_t)lanes, 0.0);
    for (int t = 0; t < lanes; t++)
        for (size_t i = first + (size_t)t; i < terms.size(); i += stride) sh[(size_t)t] += terms[i];
    for (int s = lanes / 2; s > 0; s >>= 1)
        for (int t = 0; t < s; t++) sh[(size_t)t] += sh[(size_t)(t + s)];
    return sh[0];
}

// ---- optim_kernels.cuh ---------------------------------------------------------------------

struct SumsqOut {
    vector<double> partials, out;
    void same_as(const char *what, const SumsqOut &o) const {
        expect_bits(what, partials, o.partials), expect_bits(what, out, o.out);
    }
};

void test_sumsq(size_t n) {
    const vector<float> x = random_floats(n, -3.0f, 3.0f);
    const int G = sk_optim_gpu::sumsq_blocks(n);
    printf("sumsq: n=%zu, %d stage-1 blocks\n", n, G);
    SumsqOut got;
    both_schedules<SumsqOut>("sumsq", [&](bool reverse) {
        SumsqOut o;
        o.partials.assign((size_t)G, nan(""));
        o.out.assign(1, nan(""));
        vector<double> scratch(SK_CUDA_SUMSQ_PARTIALS, nan(""));
        launch("sumsq_stage1", (unsigned)G, 1, sk_optim_gpu::kThreads, reverse,
               [&] { sk_optim_gpu::sumsq_stage1(scratch.data(), x.data(), n); });
        launch("sumsq_stage2", 1, 1, sk_optim_gpu::kThreads, reverse,
               [&] { sk_optim_gpu::sumsq_stage2(o.out.data(), scratch.data(), G); });
        memcpy(o.partials.data(), scratch.data(), (size_t)G * sizeof(double));
        return o;
    }, &got);
    vector<double> terms(n), partials((size_t)G);
    for (size_t i = 0; i < n; i++) terms[i] = (double)x[i] * (double)x[i];
    const int T = sk_optim_gpu::kThreads;
    const size_t stride = (size_t)G * T;
    for (int b = 0; b < G; b++) partials[(size_t)b] = tree_sum(terms, (size_t)b * T, stride, T);
    expect_bits("sumsq partials vs the documented order", got.partials, partials);
    expect_bits("sumsq vs the documented order", got.out[0], tree_sum(partials, 0, T, T));
    const double norm = sqrt(got.out[0]), ref = sk_grad_norm(x.data(), n);
    const double tol = (double)n * ldexp(1.0, -52) * ref;
    if (!(fabs(norm - ref) <= tol)) fprintf(stderr, "  sumsq: norm %.17g vs sk_grad_norm %.17g\n", norm, ref);
    CHECK(fabs(norm - ref) <= tol);
}

struct FinishCase {
    const char *name;
    double loss_sum, rows, sumsq, grad_clip;
    int64_t prior_bad; // bad_step before the kernel (0: none)
    // expected:
    int64_t bad_step;
    int bad_is_norm, skip;
};

struct FinishOut {
    vector<sk_cuda_step_stats> s;
    void same_as(const char *what, const FinishOut &o) const {
        const bool same = memcmp(s.data(), o.s.data(), sizeof(sk_cuda_step_stats)) == 0;
        if (!same) fprintf(stderr, "  %s: the stats differ\n", what);
        CHECK(same);
    }
};

void test_step_finish() {
    const double inf = INFINITY, NaN = nan("");
    const int64_t step = 7;
    const FinishCase cases[] = {
        {"finite, clipped", 25.0, 10.0, 4.0, 1.0, 0, 0, 0, 0},
        {"finite, no clip (grad_clip 0)", 25.0, 10.0, 4.0, 0.0, 0, 0, 0, 0},
        {"finite, norm below the clip", 25.0, 10.0, 4.0, 5.0, 0, 0, 0, 0},
        {"loss NaN", NaN, 10.0, 4.0, 1.0, 0, step, 0, 1},
        {"loss mean finite in double, not in float", 1e300, 1.0, 4.0, 1.0, 0, step, 0, 1},
        {"norm infinite", 25.0, 10.0, inf, 1.0, 0, step, 1, 1},
        {"loss and norm NaN: the loss is tested first", NaN, 10.0, NaN, 1.0, 0, step, 0, 1},
        {"an earlier bad step, finite now", 25.0, 10.0, 4.0, 1.0, 3, 3, 1, 1},
        {"an earlier bad step, bad again", NaN, 10.0, inf, 1.0, 3, 3, 1, 1},
    };
    for (const FinishCase &c : cases) {
        printf("step_finish: %s\n", c.name);
        sk_cuda_step_args a;
        memset(&a, 0, sizeof a);
        a.rows = c.rows, a.grad_clip = c.grad_clip, a.opt_step = step;
        sk_cuda_step_stats init;
        memset(&init, 0xff, sizeof init); // fields the kernel must write start as NaN / -1
        init.loss_sum = c.loss_sum, init.forward_loss_sum = 3.5, init.sumsq = c.sumsq;
        init.bad_step = c.prior_bad, init.bad_is_norm = 1, init.bad_loss_sum = -7.0, init.bad_norm = -8.0;
        FinishOut got;
        both_schedules<FinishOut>("step_finish", [&](bool reverse) {
            FinishOut o;
            o.s.assign(1, init);
            launch("step_finish_kernel", 1, 1, 1, reverse, [&] { sk_optim_gpu::step_finish_kernel(o.s.data(), &a); });
            return o;
        }, &got);
        const sk_cuda_step_stats &s = got.s[0];
        const double norm = sqrt(c.sumsq); // the host's: sk_grad_norm's sqrt of its sum
        const bool newly_bad = c.prior_bad == 0 && c.bad_step != 0;
        expect_bits("step_finish norm", s.norm, norm);
        CHECK(s.bad_step == c.bad_step && s.skip == c.skip);
        const float clip = c.skip ? 0.0f : sk_clip_scale(norm, c.grad_clip);
        CHECK(memcmp(&s.clip_scale, &clip, sizeof clip) == 0);
        CHECK(s.bad_is_norm == (newly_bad ? c.bad_is_norm : 1));
        expect_bits("step_finish bad_loss_sum", s.bad_loss_sum, newly_bad ? c.loss_sum : -7.0);
        expect_bits("step_finish bad_norm", s.bad_norm, newly_bad ? norm : -8.0);
        CHECK(s.forward_loss_sum == 3.5); // untouched
        expect_bits("step_finish loss_sum", s.loss_sum, c.loss_sum);
        expect_bits("step_finish sumsq", s.sumsq, c.sumsq);
    }
}

struct OptimOut {
    vector<float> p, state; // state: the optimizer's slots, (n_slots, n)
    void same_as(const char *what, const OptimOut &o) const { expect_bits(what, p, o.p), expect_bits(what, state, o.state); }
};

// n elements as tensors of alternating 2-D (decayed) and 1-D shape; skip: -1 for a NULL
// skip pointer, else its value. h: the optimizer (its kind) and its hyperparameters.
void test_optim(const sk_optim_hparams &h, size_t n, int64_t step, int skip) {
    vector<sk_tensor_info> tensors;
    for (size_t at = 0, k = 0; at < n; k++) {
        sk_tensor_info t;
        memset(&t, 0, sizeof t);
        t.ndim = k % 2 == 0 ? 2 : 1;
        t.offset = at, t.numel = k % 2 == 0 ? n / 2 + 1 : 37;
        if (t.numel > n - at) t.numel = n - at;
        at += t.numel;
        tensors.push_back(t);
    }
    sk_param_layout layout;
    memset(&layout, 0, sizeof layout);
    layout.n_tensors = (int)tensors.size(), layout.tensors = tensors.data(), layout.total = n;
    vector<uint8_t> decay(n);
    for (const sk_tensor_info &t : tensors) memset(&decay[t.offset], sk_param_decays(&t), t.numel);
    const float lr = 2e-3f, clip_scale = 0.37f;
    const sk_optim_info *info = sk_optim_of(h.kind);
    sk_optim_args a;
    memset(&a, 0, sizeof a);
    a.kind = h.kind, a.clip_scale = 1.0f; // the kernel reads the clip scale from its pointer
    info->args_of(&h, lr, step, &a);      // as backend_cuda.cu's fill_args
    OptimOut init;
    init.p = random_floats(n, -1.0f, 1.0f);
    // slot 0: Adam's m, SGD's momentum buffer; RMSprop's square_avg must be >= 0
    init.state = random_floats(n, -0.01f, 0.01f);
    if (h.kind == SK_OPTIM_RMSPROP) init.state = random_floats(n, 0.0f, 1e-4f);
    if (info->n_slots > 1) { // Adam's v; RMSprop's momentum buffer
        const vector<float> second = random_floats(n, 0.0f, 1e-4f);
        init.state.insert(init.state.end(), second.begin(), second.end());
    }
    const vector<float> g = random_floats(n, -0.1f, 0.1f);
    const int blocks = sk_optim_gpu::optim_blocks(n);
    printf("optim %s: n=%zu step=%lld skip=%d, %d blocks\n", info->name, n, (long long)step, skip, blocks);
    OptimOut got;
    both_schedules<OptimOut>("optim", [&](bool reverse) {
        OptimOut o = init;
        const int skip_value = skip;
        launch("optim_kernel", (unsigned)blocks, 1, sk_optim_gpu::kThreads, reverse, [&] {
            sk_optim_gpu::optim_kernel(o.p.data(), g.data(), o.state.data(), decay.data(), n, &a, &clip_scale,
                                  skip < 0 ? nullptr : &skip_value);
        });
        return o;
    }, &got);
    OptimOut ref = init;
    if (skip <= 0) sk_optim_update(ref.p.data(), g.data(), ref.state.data(), &layout, &h, lr, clip_scale, step);
    expect_bits("optim params vs sk_optim_update", got.p, ref.p);
    expect_bits("optim state vs sk_optim_update", got.state, ref.state);
    CHECK(skip > 0 || got.p != init.p); // the step moved something
}

// ---- softmax_xent_kernels.cuh ---------------------------------------------------------------

struct XentOut {
    vector<float> logits, loss, dlogits;
    void same_as(const char *what, const XentOut &o) const {
        expect_bits(what, logits, o.logits), expect_bits(what, loss, o.loss), expect_bits(what, dlogits, o.dlogits);
    }
};

float ulp_of(float x) {
    x = fabsf(x) < FLT_MIN ? FLT_MIN : fabsf(x);
    return nextafterf(x, INFINITY) - x;
}

// with: 0 bias only (no targets), 1 loss and dlogits, 2 loss only, 3 dlogits only. One
// row past n in every buffer must stay as it was.
void test_softmax_xent(int n, int V, int with) {
    const float NaN = nanf("");
    const float inv_n = 1.0f / (float)(3 * n);
    XentOut init;
    init.logits = random_floats((size_t)(n + 1) * V, -6.0f, 6.0f);
    init.loss.assign((size_t)n + 1, NaN), init.dlogits.assign((size_t)(n + 1) * V, NaN);
    const vector<float> bias = random_floats((size_t)V, -2.0f, 2.0f);
    vector<int32_t> y((size_t)n + 1);
    for (int32_t &t : y) t = below(V);
    const bool targets = with != 0, loss = with == 1 || with == 2, dl = with == 1 || with == 3;
    printf("softmax_xent: n=%d V=%d%s%s%s, %d blocks\n", n, V, targets ? "" : " (bias only)", loss ? " loss" : "",
           dl ? " dlogits" : "", sk_xent::xent_blocks(n));
    XentOut got;
    both_schedules<XentOut>("softmax_xent", [&](bool reverse) {
        XentOut o = init;
        launch("softmax_xent_kernel", (unsigned)sk_xent::xent_blocks(n), 1, sk_xent::kWarpsPerBlock * 32, reverse, [&] {
            sk_xent::softmax_xent_kernel(o.logits.data(), bias.data(), targets ? y.data() : nullptr,
                                         loss ? o.loss.data() : nullptr, dl ? o.dlogits.data() : nullptr, inv_n, n, V);
        });
        return o;
    }, &got);
    XentOut ref = init;
    for (int r = 0; r < n; r++)
        for (int j = 0; j < V; j++) ref.logits[(size_t)r * V + j] += bias[(size_t)j];
    expect_bits("softmax_xent logits + bias", got.logits, ref.logits);
    size_t exact = 0, total = 0;
    for (int r = 0; r < n; r++) {
        const float *z = &ref.logits[(size_t)r * V];
        if (loss) {
            const float want = sk_xent_row_loss(z, V, y[(size_t)r]), have = got.loss[(size_t)r];
            const double tol = ulp_of(want) + 4.0 * V * ldexp(1.0, -53);
            exact += memcmp(&want, &have, sizeof want) == 0, total++;
            if (!(fabs((double)have - want) <= tol)) fprintf(stderr, "  row %d loss %.9g vs cpu %.9g\n", r, have, want);
            CHECK(fabs((double)have - want) <= tol);
        }
        if (dl) {
            vector<float> want((size_t)V);
            sk_xent_row_dlogits(z, V, y[(size_t)r], inv_n, want.data());
            for (int j = 0; j < V; j++) {
                const float have = got.dlogits[(size_t)r * V + j];
                const double tol = j == y[(size_t)r] ? 3.0 * ulp_of(inv_n) : 2.0 * ulp_of(want[(size_t)j]);
                exact += memcmp(&want[(size_t)j], &have, sizeof have) == 0, total++;
                if (!(fabs((double)have - want[(size_t)j]) <= tol))
                    fprintf(stderr, "  row %d dlogits[%d] %.9g vs cpu %.9g\n", r, j, have, want[(size_t)j]);
                CHECK(fabs((double)have - want[(size_t)j]) <= tol);
            }
        }
    }
    // A rounding flipped by the normalizer's order is rare (about V 2^-28 per element); a
    // kernel that rounds differently from the CPU changes a quarter of them.
    if (total) printf("  loss rows and dlogits: %zu of %zu bitwise equal to the CPU's\n", exact, total);
    CHECK(total - exact <= total / 100);
    // What the kernel must not write: all of a buffer it was not given, and row n of the others.
    if (!loss) expect_bits("softmax_xent loss untouched", got.loss, init.loss);
    else expect_bits("softmax_xent loss row n untouched", vector<float>{got.loss[(size_t)n]}, vector<float>{NaN});
    const vector<float> dl_tail(got.dlogits.begin() + (ptrdiff_t)n * V, got.dlogits.end());
    expect_bits("softmax_xent dlogits untouched", dl ? dl_tail : got.dlogits,
                dl ? vector<float>((size_t)V, NaN) : init.dlogits);
}

struct SumOut {
    vector<double> out;
    void same_as(const char *what, const SumOut &o) const { expect_bits(what, out, o.out); }
};

void test_sum_double(int n) {
    const vector<float> x = random_floats((size_t)n, 0.0f, 5.0f);
    printf("sum_double: n=%d\n", n);
    SumOut got;
    both_schedules<SumOut>("sum_double", [&](bool reverse) {
        SumOut o;
        o.out.assign(1, nan(""));
        launch("sum_double_kernel", 1, 1, sk_xent::kSumThreads, reverse,
               [&] { sk_xent::sum_double_kernel(o.out.data(), x.data(), n); });
        return o;
    }, &got);
    vector<double> terms((size_t)n);
    double seq = 0.0, abs_sum = 0.0;
    for (int i = 0; i < n; i++) terms[(size_t)i] = x[(size_t)i], seq += x[(size_t)i], abs_sum += fabs(x[(size_t)i]);
    const int T = sk_xent::kSumThreads;
    expect_bits("sum_double vs the documented order", got.out[0], tree_sum(terms, 0, T, T));
    CHECK(fabs(got.out[0] - seq) <= (double)n * ldexp(1.0, -52) * abs_sum);
}

// ---- dropout_kernels.cuh --------------------------------------------------------------------

struct FloatsOut {
    vector<float> out;
    void same_as(const char *what, const FloatsOut &o) const { expect_bits(what, out, o.out); }
};

const uint64_t kDropoutKey = sk_dropout_key(1234, 56, 2);

// The first mask index whose uniform is exactly p (p a multiple of 2^-24): that element
// is kept (>= p, the CPU's rule). About 2^24 draws.
uint64_t index_at(float p) {
    for (uint64_t i = 0; i < ((uint64_t)1 << 30); i++)
        if (sk_hash_uniform(kDropoutKey, i) == p) return i;
    CHECK(!"no mask index with a uniform of exactly p");
    return 0;
}

void test_dropout(size_t n, uint64_t first, float p, bool in_place) {
    const uint64_t key = kDropoutKey;
    const float scale = 1.0f / (1.0f - p);
    const vector<float> in = random_floats(n, -2.0f, 2.0f);
    const int blocks = sk_dropout::dropout_blocks(n);
    printf("dropout: n=%zu first=%llu p=%.2f%s, %d blocks\n", n, (unsigned long long)first, p,
           in_place ? " in place" : "", blocks);
    FloatsOut got;
    both_schedules<FloatsOut>("dropout", [&](bool reverse) {
        FloatsOut o;
        o.out = in_place ? in : vector<float>(n, nanf(""));
        const float *src = in_place ? o.out.data() : in.data();
        launch("dropout_kernel", (unsigned)blocks, 1, sk_dropout::kThreads, reverse,
               [&] { sk_dropout::dropout_kernel(o.out.data(), src, n, first, &key, p, scale); });
        return o;
    }, &got);
    vector<float> ref(n);
    for (size_t i = 0; i < n; i++) // the CPU backend's apply_dropout, element i of the site
        ref[i] = in[i] * (sk_hash_uniform(key, first + (uint64_t)i) >= p ? scale : 0.0f);
    expect_bits("dropout vs hash.h's masks", got.out, ref);
    if (p == 0.0f) expect_bits("dropout with p = 0 is the identity", got.out, in);
}

// ---- embedding_kernels.cuh ------------------------------------------------------------------

// ids (B, len) stream-major with every id in [0, V - 1) (row V - 1 of the gradient gets none).
vector<int32_t> random_ids(int B, int len, int V) {
    vector<int32_t> ids((size_t)B * len);
    for (int32_t &i : ids) i = V > 1 ? below(V - 1) : 0;
    return ids;
}

void test_embedding_forward(int B, int len, int E, int V) {
    const vector<float> w = random_floats((size_t)V * E, -1.0f, 1.0f);
    const vector<int32_t> ids = random_ids(B, len, V);
    const size_t total = (size_t)B * len * E;
    const int blocks = sk_embedding::grid_for(total, sk_embedding::kThreads);
    printf("embedding forward: B=%d len=%d E=%d V=%d, %d blocks\n", B, len, E, V, blocks);
    FloatsOut got;
    both_schedules<FloatsOut>("embedding forward", [&](bool reverse) {
        FloatsOut o;
        o.out.assign(total + 1, nanf("")); // + 1: must stay unwritten
        launch("embedding_forward_kernel", (unsigned)blocks, 1, sk_embedding::kThreads, reverse,
               [&] { sk_embedding::embedding_forward_kernel(o.out.data(), w.data(), ids.data(), total, E); });
        return o;
    }, &got);
    vector<float> ref(total + 1, nanf(""));
    sk_embedding_cpu_forward(ref.data(), w.data(), ids.data(), B * len, E); // row order is irrelevant to a lookup
    expect_bits("embedding forward vs the CPU's", got.out, ref);
}

void test_embedding_backward(int B, int len, int V, int E) {
    const vector<int32_t> ids = random_ids(B, len, V);
    const vector<float> dout = random_floats((size_t)B * len * E, -1.0f, 1.0f);
    const unsigned cols = (unsigned)sk_embedding::bwd_column_blocks(E);
    printf("embedding backward: B=%d len=%d V=%d E=%d, %d x %u blocks\n", B, len, V, E, V, cols);
    FloatsOut got;
    both_schedules<FloatsOut>("embedding backward", [&](bool reverse) {
        FloatsOut o;
        o.out.assign((size_t)V * E, nanf(""));
        launch("embedding_backward_kernel", (unsigned)V, cols, sk_embedding::kBwdThreads, reverse, [&] {
            sk_embedding::embedding_backward_kernel(o.out.data(), dout.data(), ids.data(), B, len, E);
        });
        return o;
    }, &got);
    // The CPU backend's rows are time-major (r = t*B + b).
    vector<int32_t> ids_tm(ids.size());
    vector<float> dout_tm(dout.size());
    for (int b = 0; b < B; b++)
        for (int t = 0; t < len; t++) {
            const size_t p = (size_t)b * len + t, r = (size_t)t * B + b;
            ids_tm[r] = ids[p];
            memcpy(&dout_tm[r * E], &dout[p * E], (size_t)E * sizeof(float));
        }
    vector<float> ref((size_t)V * E);
    sk_embedding_cpu_backward(ref.data(), dout_tm.data(), ids_tm.data(), B * len, V, E);
    expect_bits("embedding backward vs the CPU's", got.out, ref);
}

// ---- copy_segments_kernel.cuh ---------------------------------------------------------------

struct CopyOut {
    vector<float> canon, ws;
    void same_as(const char *what, const CopyOut &o) const {
        expect_bits(what, canon, o.canon), expect_bits(what, ws, o.ws);
    }
};

void test_copy_segments(const vector<sk_wseg> &segs, size_t canon_n, size_t ws_n) {
    size_t seg_max = 0;
    for (const sk_wseg &s : segs) seg_max = s.n > seg_max ? s.n : seg_max;
    const unsigned cols = sk_wcopy::copy_column_blocks(seg_max);
    for (int to_ws = 1; to_ws >= 0; to_ws--) {
        printf("copy_segments: %zu segments, longest %zu, %s, %u x %zu blocks\n", segs.size(), seg_max,
               to_ws ? "to the weight space" : "back", cols, segs.size());
        CopyOut init; // the source random, the destination NaN (its gaps must stay so)
        init.canon = to_ws ? random_floats(canon_n, -1.0f, 1.0f) : vector<float>(canon_n, nanf(""));
        init.ws = to_ws ? vector<float>(ws_n, nanf("")) : random_floats(ws_n, -1.0f, 1.0f);
        CopyOut got;
        both_schedules<CopyOut>("copy_segments", [&](bool reverse) {
            CopyOut o = init;
            launch("copy_segments_kernel", cols, (unsigned)segs.size(), sk_wcopy::kCopyThreads, reverse, [&] {
                sk_wcopy::copy_segments_kernel(o.canon.data(), o.ws.data(), segs.data(), to_ws);
            });
            return o;
        }, &got);
        CopyOut ref = init;
        for (const sk_wseg &s : segs)
            if (to_ws) memcpy(&ref.ws[s.ws], &ref.canon[s.canon], s.n * sizeof(float));
            else memcpy(&ref.canon[s.canon], &ref.ws[s.ws], s.n * sizeof(float));
        expect_bits("copy_segments canonical", got.canon, ref.canon);
        expect_bits("copy_segments weight space", got.ws, ref.ws);
    }
}

// ---- thread-block clusters (cuda_emu.h) -----------------------------------------------------

namespace cg = cooperative_groups;

constexpr unsigned kClusterSize = 4, kClusters = 3, kClusterThreads = 64, kClusterSteps = 5;
constexpr size_t kClusterSmem = 2 * kClusterSize * kClusterThreads * sizeof(float);

// Each step, thread t of cluster rank me sends its v into slot [step % 2][me][t] of every
// block of its cluster (itself included), then sums slots [step % 2][0..n)[t] in rank order:
// out[g][step] = acc, and v = x[g] + 0.5 acc for the next step (g = the thread's global
// index). Double-buffered, one cluster.sync a step: a block writes a buffer again two steps
// on, after the next step's sync, which every peer reaches only once done reading it.
// ranks[block] = block_rank * 100 + num_blocks. sync = false: the race.
void cluster_exchange_kernel(float *out, unsigned *ranks, const float *x, bool sync) {
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned me = cluster.block_rank(), n = cluster.num_blocks(), t = threadIdx.x, T = blockDim.x;
    const size_t g = (size_t)blockIdx.x * T + t;
    float *slots = (float *)sk_dynamic_smem(); // [2][n][T]
    if (t == 0) ranks[blockIdx.x] = me * 100 + n;
    float v = x[g];
    for (unsigned s = 0; s < kClusterSteps; s++) {
        float *buf = slots + (size_t)(s % 2) * n * T;
        for (unsigned r = 0; r < n; r++) *cluster.map_shared_rank(buf + (size_t)me * T + t, r) = v;
        if (sync) cluster.sync();
        float acc = 0.0f;
        for (unsigned r = 0; r < n; r++) acc += buf[(size_t)r * T + t];
        out[g * kClusterSteps + s] = acc;
        v = x[g] + 0.5f * acc;
    }
}

sk_emu_config cluster_config(bool reverse) {
    sk_emu_config cfg;
    cfg.grid = kClusters * kClusterSize, cfg.block = kClusterThreads, cfg.cluster = kClusterSize;
    cfg.dynamic_smem = kClusterSmem, cfg.reverse = reverse;
    return cfg;
}

// Runs body in a child process, which must end on a signal (the emulator's die: abort) with
// `message` on its stderr.
void expect_death(const char *what, const char *message, const std::function<void()> &body) {
    fflush(stdout), fflush(stderr);
    int fds[2];
    CHECK(pipe(fds) == 0);
    const pid_t pid = fork();
    if (pid == 0) {
        const struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        dup2(fds[1], 2);
        close(fds[0]), close(fds[1]);
        body();
        _exit(0);
    }
    close(fds[1]);
    std::string err;
    char buf[256];
    for (ssize_t k; (k = read(fds[0], buf, sizeof buf)) > 0;) err.append(buf, (size_t)k);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    const bool died = WIFSIGNALED(status) && err.find(message) != std::string::npos;
    printf("  %s: %s", what, died ? err.c_str() : "did not die\n");
    if (!died) fprintf(stderr, "  %s: expected to die with \"%s\"; stderr: %s\n", what, message, err.c_str());
    CHECK(died);
}

void test_clusters() {
    const unsigned blocks = kClusters * kClusterSize, n = blocks * kClusterThreads;
    printf("clusters: %u of %u blocks x %u threads, %u steps\n", kClusters, kClusterSize, kClusterThreads,
           kClusterSteps);
    const vector<float> x = random_floats(n, -1.0f, 1.0f);
    // The host's exchange: each step, per cluster and thread, the blocks' v summed in rank order.
    vector<float> ref((size_t)n * kClusterSteps), v(x);
    for (unsigned s = 0; s < kClusterSteps; s++)
        for (unsigned c = 0; c < kClusters; c++)
            for (unsigned t = 0; t < kClusterThreads; t++) {
                float acc = 0.0f;
                for (unsigned r = 0; r < kClusterSize; r++) acc += v[(c * kClusterSize + r) * kClusterThreads + t];
                for (unsigned r = 0; r < kClusterSize; r++) {
                    const size_t g = (c * kClusterSize + r) * kClusterThreads + t;
                    ref[g * kClusterSteps + s] = acc;
                    v[g] = x[g] + 0.5f * acc;
                }
            }
    vector<float> out;
    vector<unsigned> ranks, started; // started: the order in which blocks began
    int raced = 0;
    for (int sync = 1; sync >= 0; sync--)
        for (bool reverse : {false, true}) {
            out.assign((size_t)n * kClusterSteps, nanf("")), ranks.assign(blocks, 0), started.assign(blocks, 0);
            unsigned next = 0;
            const std::string err = sk_emu_launch(cluster_config(reverse), [&] {
                if (threadIdx.x == 0) started[blockIdx.x] = next++;
                cluster_exchange_kernel(out.data(), ranks.data(), x.data(), sync != 0);
            });
            if (!sync) {
                raced += !err.empty() || memcmp(out.data(), ref.data(), out.size() * sizeof(float)) != 0;
                continue;
            }
            if (!err.empty()) fprintf(stderr, "  clusters (%s schedule): %s\n", schedule_name(reverse), err.c_str());
            CHECK(err.empty());
            expect_bits("clusters: the exchange vs the host's", out, ref);
            for (unsigned b = 0; b < blocks; b++) { // a cluster's blocks all start before the next cluster's
                const unsigned c = b / kClusterSize;
                CHECK(started[b] / kClusterSize == (reverse ? kClusters - 1 - c : c));
                CHECK(ranks[b] == b % kClusterSize * 100 + kClusterSize);
                CHECK(sk_emu_block_counts(b).cluster_syncs == kClusterSteps);
            }
        }
    printf("  without cluster.sync: wrong in %d of 2 schedules\n", raced);
    CHECK(raced > 0);

    // Configurations the emulator does not run: errors, not launches.
    for (int bad = 0; bad < 4; bad++) {
        sk_emu_config cfg = cluster_config(false);
        if (bad == 0) cfg.cooperative = true;
        if (bad == 1) cfg.grid = 6;
        if (bad == 2) cfg.cluster = 17, cfg.grid = 34;
        if (bad == 3) cfg.grid_y = 2;
        CHECK(!sk_emu_launch(cfg, [] { __trap(); }).empty());
    }
    // A block that skips a cluster.sync: a deadlock that names it.
    const std::string stuck = sk_emu_launch(cluster_config(false), [] {
        if (blockIdx.x % kClusterSize != 1) cg::this_cluster().sync();
    });
    printf("  a block skipping cluster.sync: %s\n", stuck.c_str());
    CHECK(stuck.find("cluster.sync()") != std::string::npos);
    // Misuses that end the process.
    expect_death("cluster.sync outside a cluster launch", "cluster.sync() outside a cluster launch", [] {
        sk_emu_config cfg;
        cfg.grid = 2, cfg.block = 32;
        sk_emu_launch(cfg, [] { cg::this_cluster().sync(); });
    });
    expect_death("map_shared_rank past the cluster", "rank 4 of a cluster of 4", [] {
        sk_emu_launch(cluster_config(false),
                      [] { cg::this_cluster().map_shared_rank(sk_dynamic_smem(), kClusterSize); });
    });
    expect_death("map_shared_rank off the dynamic shared memory", "outside the block's", [] {
        sk_emu_launch(cluster_config(false),
                      [] { cg::this_cluster().map_shared_rank(sk_dynamic_smem() + kClusterSmem, 0); });
    });
}

} // namespace

int main(void) {
    const size_t adam_cap = (size_t)4096 * sk_optim_gpu::kThreads; // past it the grid-stride loop laps
    // sumsq: stage 1 caps at SK_CUDA_SUMSQ_PARTIALS blocks of 8 * 256 elements.
    for (size_t n : {(size_t)0, (size_t)1, (size_t)300, (size_t)2048, (size_t)2049,
                     (size_t)SK_CUDA_SUMSQ_PARTIALS * 2048 + 3000})
        test_sumsq(n);
    test_step_finish();
    // C++17 wants every field named (in order) where C takes the rest as zero.
    const sk_optim_hparams adam = {.kind = SK_OPTIM_ADAM, .beta1 = 0.9, .beta2 = 0.999, .alpha = 0.0, .momentum = 0.0,
                                   .nesterov = 0, .eps = 1e-8, .weight_decay = 0.1, .grad_clip = 1.0};
    sk_optim_hparams rmsprop = {.kind = SK_OPTIM_RMSPROP, .beta1 = 0.0, .beta2 = 0.0, .alpha = 0.99, .momentum = 0.9,
                                .nesterov = 0, .eps = 1e-8, .weight_decay = 0.1, .grad_clip = 1.0};
    sk_optim_hparams sgd = {.kind = SK_OPTIM_SGD, .beta1 = 0.0, .beta2 = 0.0, .alpha = 0.0, .momentum = 0.9,
                            .nesterov = 0, .eps = 0.0, .weight_decay = 0.1, .grad_clip = 1.0};
    sk_optim_hparams nesterov = sgd;
    nesterov.nesterov = 1;
    for (const sk_optim_hparams *h : {&adam, (const sk_optim_hparams *)&rmsprop, (const sk_optim_hparams *)&sgd,
                                      (const sk_optim_hparams *)&nesterov}) {
        test_optim(*h, 1, 1, -1);
        test_optim(*h, 1000, 1, -1);
        test_optim(*h, 1000, 7, 0);
        test_optim(*h, 1000, 7, 1); // skipped: nothing moves
        test_optim(*h, adam_cap + 300, 3, -1);
    }
    rmsprop.momentum = 0.0, sgd.momentum = 0.0; // the branches without a momentum buffer
    test_optim(rmsprop, 1000, 2, -1);
    test_optim(sgd, 1000, 2, -1);

    for (int with = 0; with < 4; with++) test_softmax_xent(9, 65, with);
    test_softmax_xent(5, 7, 1);
    test_softmax_xent(8, 32, 1);
    test_softmax_xent(3, 200, 1);
    test_softmax_xent(6, 1, 1);
    for (int n : {0, 1, 255, 257, 3000}) test_sum_double(n);

    test_dropout(1, 0, 0.3f, false);
    test_dropout(1000, 12345, 0.5f, true);
    test_dropout(1000, 0, 0.0f, false);
    test_dropout(4096 * sk_dropout::kThreads + 77, (uint64_t)1 << 33, 0.25f, false);
    const uint64_t at_half = index_at(0.5f);
    test_dropout(300, at_half - 100, 0.5f, false); // element 100 sits on the boundary

    test_embedding_forward(3, 5, 7, 11);
    test_embedding_forward(2, 3, 300, 5);
    test_embedding_forward(64, 64, 257, 20); // past 4096 blocks of 256
    test_embedding_backward(3, 5, 11, 7);
    test_embedding_backward(7, 300, 13, 150); // 2100 ids: three chunks; E: a short second column block
    test_embedding_backward(1, 1025, 3, 128);  // one id past a chunk

    // canonical (offset, length) -> weight space, with gaps on both sides; the last one is
    // longer than 1024 blocks of 256.
    test_copy_segments({{0, 500, 300}, {300, 0, 1}, {301, 900, 77}}, 400, 1000);
    const size_t long_seg = 1024 * 256 + 100;
    test_copy_segments({{10, 5, 1000}, {1010, 2000, long_seg}}, 1010 + long_seg, 2000 + long_seg);

    test_clusters();
    return sk_test_done("test_kernels_emu");
}
