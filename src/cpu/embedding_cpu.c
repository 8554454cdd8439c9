// embedding_cpu.c: embedding lookup and its row-ordered scatter-add (see embedding_cpu.h).
#include "embedding_cpu.h"

#include <stddef.h>
#include <string.h>

void sk_embedding_cpu_forward(float *out, const float *weight, const int32_t *ids, int rows, int E) {
    for (int r = 0; r < rows; r++) memcpy(out + (size_t)r * E, weight + (size_t)ids[r] * E, sizeof(float) * E);
}

void sk_embedding_cpu_backward(float *dweight, const float *dout, const int32_t *ids, int rows, int V, int E) {
    memset(dweight, 0, sizeof(float) * (size_t)V * E);
    for (int r = 0; r < rows; r++) {
        float *dst = dweight + (size_t)ids[r] * E;
        const float *src = dout + (size_t)r * E;
        for (int j = 0; j < E; j++) dst[j] += src[j];
    }
}
