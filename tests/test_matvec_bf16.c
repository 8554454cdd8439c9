// test_matvec_bf16.c: the bf16 weights of inference in bf16 (src/cpu/matvec_bf16.h).
//  1. sk_bf16_round rounds to nearest, ties to even (exact cases), keeps NaN a NaN, and rounds
//     past bf16's largest finite value to infinity; sk_bf16_widen is exact.
//  2. sk_matvec_bf16_rows over sk_bf16_pack_rows's layout against a float64 reference of the
//     same rounded weights, at shapes with a tail (K mod 32 != 0, G mod 4 != 0) and several
//     streams: each y within (K + 2) * 2^-24 * sum_k |w_k x_k| (+ |y0| * 2^-24 for the initial
//     value added in), the standard bound of an fp32 sum of K products in any order; a wrong
//     element, lane or layout is off by a whole product. And the same bits for a stream whatever
//     the number of streams beside it.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/matvec_bf16.h"
#include "test_util.h"

static float bits_f(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static void check_round(void) {
    CHECK(sk_bf16_round(1.0f) == 0x3f80);
    CHECK(sk_bf16_round(bits_f(0x3f808000u)) == 0x3f80); // a tie: to the even one below
    CHECK(sk_bf16_round(bits_f(0x3f818000u)) == 0x3f82); // a tie: to the even one above
    CHECK(sk_bf16_round(bits_f(0x3f808001u)) == 0x3f81); // above the tie: up
    CHECK(sk_bf16_round(-2.0f) == 0xc000);
    CHECK(isnan(sk_bf16_widen(sk_bf16_round(NAN))));
    CHECK(isinf(sk_bf16_widen(sk_bf16_round(3.4e38f))));
    CHECK(sk_bf16_widen(0x3f81) == bits_f(0x3f810000u));
}

static void check_matvec(int G, int K, int nb) {
    float *w = malloc(sizeof(float) * (size_t)G * K), *x = malloc(sizeof(float) * (size_t)nb * K);
    float *y = malloc(sizeof(float) * (size_t)nb * G), *y1 = malloc(sizeof(float) * (size_t)G);
    uint16_t *p = malloc(sizeof(uint16_t) * (size_t)G * K);
    srand(7);
    for (int i = 0; i < G * K; i++) w[i] = (float)((double)rand() / RAND_MAX) - 0.5f;
    for (int i = 0; i < nb * K; i++) x[i] = (float)((double)rand() / RAND_MAX) * 2.0f - 1.0f;
    for (int i = 0; i < nb * G; i++) y[i] = 0.25f * (float)(i % 3);
    sk_bf16_pack_rows(G, K, w, p);
    sk_matvec_bf16_rows(G, K, p, nb, x, K, y, G);
    double worst = 0.0;
    int bad = 0;
    for (int b = 0; b < nb; b++)
        for (int i = 0; i < G; i++) {
            const double y0 = 0.25 * ((b * G + i) % 3);
            double ref = y0, mag = 0.0;
            for (int k = 0; k < K; k++) {
                const double t = (double)sk_bf16_widen(sk_bf16_round(w[(size_t)i * K + k])) * x[(size_t)b * K + k];
                ref += t, mag += fabs(t);
            }
            const double err = fabs(y[(size_t)b * G + i] - ref), tol = ((K + 2) * mag + fabs(y0)) * ldexp(1.0, -24);
            if (err > tol) bad++;
            if (err / tol > worst) worst = err / tol;
        }
    printf("G=%d K=%d nb=%d: worst error %.3f of the bound\n", G, K, nb, worst);
    CHECK(bad == 0);
    // The last stream alone: the same bits as beside the others.
    for (int i = 0; i < G; i++) y1[i] = 0.25f * (float)(((nb - 1) * G + i) % 3);
    sk_matvec_bf16_rows(G, K, p, 1, x + (size_t)(nb - 1) * K, K, y1, G);
    CHECK(memcmp(y1, y + (size_t)(nb - 1) * G, sizeof(float) * (size_t)G) == 0);
    free(w), free(x), free(y), free(y1), free(p);
}

int main(void) {
    check_round();
    check_matvec(1024, 256, 1);
    check_matvec(37, 75, 3);
    check_matvec(5, 7, 2);
    return sk_test_done("test_matvec_bf16");
}
