// test_train_e2e.c: the trainer end to end on a small repetitive text (written here):
//  1. training drives the loss far below ln(V) (the loss of a uniform guess);
//  2. the same seed and thread count give a bit-identical run (the second one overwrites the
//     run of part 1, which a fresh run without overwrite refuses);
//  3. a run stopped after N steps and resumed to 2N ends with parameters bit-identical
//     to an uninterrupted 2N-step run (dropout on, so the dropout keys must resume too).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shakespeare/checkpoint.h"
#include "shakespeare/trainer.h"
#include "test_util.h"

static char g_data[1024];

static void options(sk_train_options *o, const char *out_dir, int64_t iters, float dropout) {
    sk_train_options_default(o);
    o->data_path = g_data;
    o->out_dir = out_dir;
    o->model = (sk_model_config){.embed_size = 16, .hidden_size = 32, .num_layers = 2, .dropout = dropout};
    o->batch_size = 4, o->seq_len = 16;
    o->lr.lr = 1e-2f;
    o->max_iters = iters, o->max_epochs = 0;
    o->eval_every = 50, o->checkpoint_every = 50, o->log_every = 10;
    o->backend.threads = 1, o->seed = 42, o->device = "cpu";
}

static sk_train_summary train(const sk_train_options *o) {
    sk_error err;
    sk_trainer *t;
    sk_train_summary s;
    CHECK_OK(sk_trainer_init(&t, o, NULL, &err));
    CHECK_OK(sk_trainer_run(t, &s, &err));
    sk_trainer_free(t);
    return s;
}

static float *load_params(const char *dir, size_t *n) {
    sk_error err;
    char path[1024];
    snprintf(path, sizeof path, "%s/last.safetensors", dir);
    sk_model_file f;
    CHECK_OK(sk_model_load(path, &f, &err));
    sk_param_layout l;
    CHECK_OK(sk_param_layout_init(&l, &f.cfg, &err));
    *n = l.total;
    float *p = malloc(sizeof(float) * l.total);
    memcpy(p, f.params, sizeof(float) * l.total);
    sk_param_layout_free(&l);
    sk_model_file_free(&f);
    return p;
}

int main(void) {
    char dir[512], a[600], b[600], c[600];
    sk_test_tmpdir(dir, sizeof dir, "e2e");
    snprintf(g_data, sizeof g_data, "%s/text.txt", dir);
    FILE *f = fopen(g_data, "w");
    for (int i = 0; i < 200; i++) fputs("the quick brown fox jumps over the lazy dog. ", f);
    fclose(f);
    const double ln_v = log(28.0); // a pangram: 26 letters, space and period
    snprintf(a, sizeof a, "%s/a", dir), snprintf(b, sizeof b, "%s/b", dir), snprintf(c, sizeof c, "%s/c", dir);

    // 1. Learning: 400 steps of a 2x32 LSTM on a 45-character cycle.
    sk_train_options o;
    options(&o, a, 400, 0.0f);
    sk_train_summary s = train(&o);
    printf("final train loss %.4f, best val loss %.4f (ln V ~ %.3f)\n", s.final_train_loss, s.best_val_loss, ln_v);
    CHECK(s.final_train_loss < 0.1);
    CHECK(s.best_val_loss < 0.1);

    // 2 + 3. Determinism and resume, with dropout.
    options(&o, b, 120, 0.2f);
    train(&o);
    options(&o, c, 60, 0.2f);
    train(&o);
    char resume[700];
    snprintf(resume, sizeof resume, "%s/last.safetensors", c);
    options(&o, c, 120, 0.2f);
    o.init_from = resume;
    train(&o);
    size_t nb, nc;
    float *pb = load_params(b, &nb), *pc = load_params(c, &nc);
    CHECK(nb == nc && memcmp(pb, pc, nb * sizeof(float)) == 0);
    options(&o, a, 120, 0.2f); // a holds the run of part 1: a fresh run replaces it only when told to
    sk_trainer *t;
    sk_error err;
    CHECK(sk_trainer_init(&t, &o, NULL, &err) == SK_ERR_ARG && strstr(err.msg, "already holds a run"));
    o.overwrite = 1;
    train(&o);
    size_t na;
    float *pa = load_params(a, &na);
    CHECK(na == nb && memcmp(pa, pb, nb * sizeof(float)) == 0);
    free(pa), free(pb), free(pc);
    return sk_test_done("test_train_e2e");
}
