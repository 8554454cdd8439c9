// xent_cpu.c: numerically stable softmax cross-entropy per row (see xent_cpu.h).
#include "xent_cpu.h"

#include <math.h>

double sk_xent_row_sumexp(const float *z, int V, float *mx_out) {
    float mx = z[0];
    for (int v = 1; v < V; v++) mx = z[v] > mx ? z[v] : mx;
    double s = 0.0;
    for (int v = 0; v < V; v++) s += exp((double)(z[v] - mx));
    *mx_out = mx;
    return s;
}

float sk_xent_row_loss(const float *z, int V, int32_t y) {
    float mx;
    double s = sk_xent_row_sumexp(z, V, &mx);
    return (float)(log(s) + (double)mx - (double)z[y]);
}

void sk_xent_row_dlogits(const float *z, int V, int32_t y, float inv_n, float *d) {
    float mx;
    double s = sk_xent_row_sumexp(z, V, &mx);
    for (int v = 0; v < V; v++) d[v] = (float)(exp((double)(z[v] - mx)) / s) * inv_n;
    d[y] -= inv_n;
}
