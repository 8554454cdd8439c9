// model_file.c: the loaded model file's own operations, apart from the format that fills it
// (safetensors.c reads and writes the file; model_file.h has both sides' declarations).
// defines: sk_model_file_free, sk_model_file_check_finite
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shakespeare/model_file.h"

void sk_model_file_free(sk_model_file *f) {
    sk_param_layout_free(&f->layout);
    sk_vocab_free(&f->vocab);
    free(f->params);
    free(f->train_config);
    free(f->state_file);
    memset(f, 0, sizeof *f);
}

sk_status sk_model_file_check_finite(const sk_model_file *f, const char *path, sk_error *err) {
    const sk_param_layout *lay = &f->layout;
    sk_status st = SK_OK;
    for (int i = 0; i < lay->n_tensors && st == SK_OK; i++) {
        const sk_tensor_info *t = &lay->tensors[i];
        const float *p = f->params + t->offset;
        for (size_t j = 0; j < t->numel; j++) {
            if (isfinite(p[j])) continue;
            char at[48]; // [row, column] of a matrix, [index] of a vector
            if (t->ndim == 2)
                snprintf(at, sizeof at, "[%zu, %zu]", j / (size_t)t->shape[1], j % (size_t)t->shape[1]);
            else
                snprintf(at, sizeof at, "[%zu]", j);
            st = sk_fail(err, SK_ERR_FORMAT, "%s: %s%s is %s; a model with non-finite weights cannot be used (did "
                         "its training diverge?)", path, t->name, at, isnan(p[j]) ? "NaN" : p[j] > 0 ? "+inf" : "-inf");
            break;
        }
    }
    return st;
}
