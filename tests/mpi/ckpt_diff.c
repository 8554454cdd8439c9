// ckpt_diff: compares two checkpoints (model + training state) element by element.
//   ckpt_diff A.safetensors B.safetensors TOL
// Prints the largest absolute difference of the parameters, the optimizer's slots and the carried
// h and c, and exits 0 when every one is <= TOL (TOL 0: bitwise equal), 1 when not, 2 on a
// file that does not load or shapes that differ.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shakespeare/checkpoint.h"

static double max_diff(const float *a, const float *b, size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m)) m = d; // NaN counts as the largest
    }
    return m;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: ckpt_diff A.safetensors B.safetensors TOL\n");
        return 2;
    }
    double tol = strtod(argv[3], NULL);
    sk_model_file f[2];
    sk_train_state s[2];
    int has[2];
    memset(s, 0, sizeof s);
    memset(f, 0, sizeof f);
    sk_error err;
    for (int i = 0; i < 2; i++) {
        if (sk_checkpoint_load(argv[1 + i], &f[i], &s[i], &has[i], &err) != SK_OK) {
            fprintf(stderr, "error: %s\n", err.msg);
            return 2;
        }
    }
    const sk_param_layout *lay = &f[0].layout;
    if (!has[0] || !has[1] || s[0].n_params != s[1].n_params ||
        s[0].optimizer != s[1].optimizer || s[0].S != s[1].S ||
        s[0].L != s[1].L || s[0].B != s[1].B || s[0].H != s[1].H || f[0].cfg.hidden_size != f[1].cfg.hidden_size ||
        f[0].cfg.vocab_size != f[1].cfg.vocab_size || f[0].cfg.num_layers != f[1].cfg.num_layers ||
        f[0].cfg.embed_size != f[1].cfg.embed_size) {
        fprintf(stderr, "error: the checkpoints differ in shape or lack a training state\n");
        return 2;
    }
    const size_t state = (size_t)s[0].S * s[0].L * s[0].B * s[0].H;
    const size_t slots = (size_t)s[0].n_slots * lay->total; // the optimizer's state (the same kind, above)
    double d[3] = {max_diff(f[0].params, f[1].params, lay->total), max_diff(s[0].slots, s[1].slots, slots),
                   max_diff(s[0].state, s[1].state, state)};
    const char *names[3] = {"params", "slots", "state"};
    int ok = s[0].step == s[1].step && s[0].window == s[1].window && s[0].epoch == s[1].epoch;
    printf("step %lld vs %lld:", (long long)s[0].step, (long long)s[1].step);
    for (int i = 0; i < 3; i++) {
        printf(" max|d%s| %.3g", names[i], d[i]);
        ok = ok && d[i] <= tol;
    }
    printf(" (tolerance %g): %s\n", tol, ok ? "ok" : "DIFFERENT");
    for (int i = 0; i < 2; i++) sk_model_file_free(&f[i]), sk_train_state_free(&s[i]);
    return ok ? 0 : 1;
}
