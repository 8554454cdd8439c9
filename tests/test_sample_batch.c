// test_sample_batch.c: sk_generate_batch's bookkeeping, on a stand-in backend whose logits
// are small integers computed from each stream's own inputs (exact in float, so a batch of
// B computes every row exactly as a batch of one: only the sampler is under test):
//  1. stream i of a 5-stream batch, drawing from a generator seeded s + i, emits exactly what
//     sk_generate emits on a batch-1 backend seeded s + i, for every i (prime longer than the
//     backend's window, so priming takes several forwards);
//  2. the streams are independent: their texts are not all the same;
//  3. an emit that returns nonzero stops every stream at that step;
//  4. a comparison that can fail: stream 1's text differs from what seed s (stream 0's) draws.
// Tolerance: none (integers in float).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shakespeare/sampler.h"
#include "test_util.h"

enum { V = 7, T = 4, STREAMS = 5, LENGTH = 40, PRIME = 9 };

// The stand-in: per stream, the last input and the count of inputs seen; logits of position t
// of stream s depend on that stream's inputs only.
typedef struct {
    int32_t last[STREAMS];
    int seen[STREAMS];
    int len; // of the last forward
    float logits[STREAMS * T * V];
} fake;

static fake *fake_of(sk_backend *b) { return b->impl; }

static sk_status fake_set_state(sk_backend *b, const float *h, const float *c) {
    (void)h, (void)c;
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

static const sk_backend_ops fake_ops = {.name = "fake", .set_state = fake_set_state, .forward = fake_forward,
                                        .get_logits = fake_get_logits};

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
    sk_rng rngs[STREAMS];
    for (int i = 0; i < STREAMS; i++) sk_rng_seed(&rngs[i], seed + (uint64_t)i);
    CHECK_OK(sk_generate_batch(&batch, prime, PRIME, LENGTH, &o, rngs, record_batch, &got, &err));
    int same_as_single = 1;
    for (int i = 0; i < STREAMS; i++) {
        record want = {{{0}}, {0}, 0};
        sk_rng r;
        sk_rng_seed(&r, seed + (uint64_t)i);
        make(&one, &fo, 1);
        CHECK_OK(sk_generate(&one, prime, PRIME, LENGTH, &o, &r, record_one, &want, &err));
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
    for (int i = 0; i < STREAMS; i++) sk_rng_seed(&rngs[i], seed + (uint64_t)i);
    CHECK_OK(sk_generate_batch(&batch, prime, PRIME, LENGTH, &o, rngs, record_batch, &stopped, &err));
    for (int i = 0; i < STREAMS; i++) CHECK(stopped.n[i] == 12);
    return sk_test_done("test_sample_batch");
}
