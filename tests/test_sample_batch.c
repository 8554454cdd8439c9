// test_sample_batch.c: sk_generate_batch's bookkeeping, on a stand-in backend whose logits
// are small integers computed from each stream's own inputs (exact in float, so a batch of
// B computes every row exactly as a batch of one: only the sampler is under test):
//  1. stream i of a 5-stream batch, drawing from a generator seeded s + i, emits exactly what
//     sk_generate emits on a batch-1 backend seeded s + i, for every i (prime longer than the
//     backend's window, so priming takes several forwards);
//  2. the streams are independent: their texts are not all the same;
//  3. an emit that returns nonzero stops every stream at that step;
//  4. a comparison that can fail: stream 1's text differs from what seed s (stream 0's) draws;
//  5. with a fused sampler (backend.h's sk_backend_sample, here the stand-in's own per-token loop
//     drawing with the keyed uniforms), the chunked path (16, 32, then what is left) emits
//     exactly what the host loop emits, and stops where it stops.
// Tolerance: none (integers in float).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h" // sk_backend_ops: the stand-in backends fill one
#include "shakespeare/sampler.h"
#include "test_util.h"

enum { V = 7, T = 4, STREAMS = 5, LENGTH = 60, PRIME = 9 };

// The stand-in: per stream, the last input and the count of inputs seen; logits of position t
// of stream s depend on that stream's inputs only.
typedef struct {
    int32_t last[STREAMS];
    int seen[STREAMS];
    int len; // of the last forward
    float logits[STREAMS * T * V];
} fake;

static fake *fake_of(sk_backend *b) { return b->impl; }

static sk_status fake_set_state(sk_backend *b, const float *state) {
    (void)state;
    fake *f = fake_of(b);
    memset(f->last, 0, sizeof f->last), memset(f->seen, 0, sizeof f->seen);
    return SK_OK;
}

static sk_status fake_forward(sk_backend *b, const int32_t *x, const int32_t *y, int len, sk_mode mode, int64_t step,
                              double *loss) {
    (void)y, (void)mode, (void)step, (void)loss;
    fake *f = fake_of(b);
    f->len = len;
    for (int s = 0; s < b->cfg.batch_size; s++)
        for (int t = 0; t < len; t++) {
            f->last[s] = x[s * len + t], f->seen[s]++;
            for (int v = 0; v < V; v++) // 0..4 in steps of 0.5: exact, and varied enough to draw from
                f->logits[(s * len + t) * V + v] = (float)((f->last[s] * 3 + v * 5 + f->seen[s]) % 9) * 0.5f;
        }
    return SK_OK;
}

static sk_status fake_get_logits(sk_backend *b, float *out) {
    // (B, len, V) of the last forward, as backend.h's get_logits.
    memcpy(out, fake_of(b)->logits, sizeof(float) * (size_t)b->cfg.batch_size * fake_of(b)->len * V);
    return SK_OK;
}

// sk_backend_sample's contract on the stand-in: feeds x, draws n tokens per stream, feeding each
// but the last; counts its calls.
static int fused_calls;
static sk_status fake_sample(sk_backend *b, const int32_t *x, int n, const sk_sample_opts *o, const uint64_t *keys,
                             int64_t position, int32_t *out) {
    const int B = b->cfg.batch_size;
    int32_t in[STREAMS];
    float p[V];
    sk_candidate c[V];
    memcpy(in, x, sizeof(int32_t) * (size_t)B);
    fused_calls++;
    for (int i = 0; i < n; i++) {
        fake_forward(b, in, NULL, 1, SK_MODE_EVAL, 0, NULL);
        for (int s = 0; s < B; s++)
            in[s] = out[s * n + i] = sk_sample_token(fake_of(b)->logits + s * V, V, o,
                                                      sk_sample_uniform(keys[s], (uint64_t)(position + i)), p, c);
    }
    return SK_OK;
}

static const sk_backend_ops fake_ops = {.name = "fake", .set_state = fake_set_state, .forward = fake_forward,
                                        .get_logits = fake_get_logits};
static const sk_backend_ops fused_ops = {.name = "fused", .set_state = fake_set_state, .forward = fake_forward,
                                         .get_logits = fake_get_logits, .sample = fake_sample};

static void make(sk_backend *b, fake *f, int batch) {
    memset(b, 0, sizeof *b);
    memset(f, 0, sizeof *f);
    b->ops = &fake_ops, b->impl = f;
    b->cfg.batch_size = batch, b->cfg.seq_len = T;
    b->layout.cfg.vocab_size = V;
}

typedef struct {
    int32_t ids[STREAMS][LENGTH];
    int n[STREAMS];
    int stop_after; // stop once this many steps were emitted (0: never)
} record;

static int record_batch(int stream, int32_t id, void *ctx) {
    record *r = ctx;
    r->ids[stream][r->n[stream]++] = id;
    return r->stop_after && stream == STREAMS - 1 && r->n[stream] == r->stop_after;
}

static int record_one(int32_t id, void *ctx) { return record_batch(0, id, ctx); }

int main(void) {
    const sk_sample_opts o = {.temperature = 1.0f, .top_p = 1.0f};
    const int32_t prime[PRIME] = {1, 2, 3, 4, 5, 6, 0, 1, 2};
    const uint64_t seed = 77;
    sk_error err = {{0}};
    sk_backend batch, one;
    fake fb, fo;
    make(&batch, &fb, STREAMS);

    // 1: each stream against a batch-1 run with its seed.
    record got = {{{0}}, {0}, 0};
    CHECK_OK(sk_generate_batch(&batch, prime, PRIME, LENGTH, &o, seed, record_batch, &got, &err));
    int same_as_single = 1;
    for (int i = 0; i < STREAMS; i++) {
        record want = {{{0}}, {0}, 0};
        make(&one, &fo, 1);
        CHECK_OK(sk_generate(&one, prime, PRIME, LENGTH, &o, seed + (uint64_t)i, record_one, &want, &err));
        CHECK(got.n[i] == LENGTH && want.n[0] == LENGTH);
        same_as_single &= memcmp(got.ids[i], want.ids[0], sizeof got.ids[i]) == 0;
    }
    CHECK(same_as_single);
    // 2 and 4: independent streams; stream 1 is not seed s's text.
    int all_same = 1;
    for (int i = 1; i < STREAMS; i++) all_same &= memcmp(got.ids[i], got.ids[0], sizeof got.ids[0]) == 0;
    CHECK(!all_same);
    CHECK(memcmp(got.ids[1], got.ids[0], sizeof got.ids[0]) != 0);
    printf("%d streams of %d tokens: each equals the batch-1 run with its seed: %s\n", STREAMS, LENGTH,
           same_as_single ? "yes" : "NO");

    // 3: stopped at step 12 by the last stream's emit: every stream has exactly 12.
    record stopped = {{{0}}, {0}, 12};
    CHECK_OK(sk_generate_batch(&batch, prime, PRIME, LENGTH, &o, seed, record_batch, &stopped, &err));
    for (int i = 0; i < STREAMS; i++) CHECK(stopped.n[i] == 12);

    // 5: the fused path, in chunks of 16, 32 and 12, against the host loop's texts; top-k and
    // top-p too (the ranking), and a stop inside the second chunk.
    const sk_sample_opts ranked = {.temperature = 0.8f, .top_k = 5, .top_p = 0.9f};
    record host = {{{0}}, {0}, 0}, fused = {{{0}}, {0}, 0}, fused_stop = {{{0}}, {0}, 20};
    make(&batch, &fb, STREAMS);
    CHECK_OK(sk_generate_batch(&batch, prime, PRIME, LENGTH, &ranked, seed, record_batch, &host, &err));
    make(&batch, &fb, STREAMS);
    batch.ops = &fused_ops;
    CHECK_OK(sk_generate_batch(&batch, prime, PRIME, LENGTH, &ranked, seed, record_batch, &fused, &err));
    const int calls = fused_calls;
    CHECK(calls == 3);
    int fused_same = 1;
    for (int i = 0; i < STREAMS; i++)
        fused_same &= fused.n[i] == LENGTH && memcmp(fused.ids[i], host.ids[i], sizeof host.ids[i]) == 0;
    CHECK(fused_same);
    CHECK_OK(sk_generate_batch(&batch, prime, PRIME, LENGTH, &ranked, seed, record_batch, &fused_stop, &err));
    for (int i = 0; i < STREAMS; i++)
        CHECK(fused_stop.n[i] == 20 && memcmp(fused_stop.ids[i], host.ids[i], 20 * sizeof(int32_t)) == 0);
    printf("the fused path in %d calls: the host loop's texts: %s\n", calls, fused_same ? "yes" : "NO");
    return sk_test_done("test_sample_batch");
}
