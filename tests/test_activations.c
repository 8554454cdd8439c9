// test_activations.c: the vectorizable expf / sigmoid / tanh of src/cpu/activations.h against
// libm in double, over a dense sweep of inputs, plus NaN propagation and saturation.
// Tolerances: exp within 3 ulp relative (Cephes' polynomial is ~1 ulp; the final scaling
// by 2^n is exact); sigmoid and tanh within 3e-7 absolute (about 2 ulp of values near 1,
// which is what the LSTM consumes), and tanh within 3 ulp relative near 0 (the odd
// polynomial branch, so that tiny inputs keep their relative precision).
#include <math.h>
#include <stdio.h>

#include "cpu/activations.h"
#include "test_util.h"

int main(void) {
    double worst_exp = 0, worst_sig = 0, worst_tanh = 0, worst_tanh_rel = 0;
    for (double x = -87.0; x <= 88.0; x += 0.000731) {
        float xf = (float)x;
        double ref = exp((double)xf);
        double ulp = nextafterf((float)ref, INFINITY) - (float)ref;
        double e = fabs((double)sk_expf(xf) - ref) / ulp;
        if (e > worst_exp) worst_exp = e;
        if (fabs(x) < 30) {
            double s = fabs((double)sk_sigmoidf(xf) - 1.0 / (1.0 + exp(-(double)xf)));
            double t = fabs((double)sk_tanhf(xf) - tanh((double)xf));
            if (s > worst_sig) worst_sig = s;
            if (t > worst_tanh) worst_tanh = t;
        }
    }
    for (double x = 1e-30; x < 0.625; x *= 1.01) {
        float xf = (float)x;
        double ref = tanh((double)xf), ulp = nextafterf((float)ref, INFINITY) - (float)ref;
        double r = fabs((double)sk_tanhf(xf) - ref) / ulp, rn = fabs((double)sk_tanhf(-xf) + ref) / ulp;
        if (r > worst_tanh_rel) worst_tanh_rel = r;
        if (rn > worst_tanh_rel) worst_tanh_rel = rn;
    }
    printf("exp worst %.2f ulp, sigmoid worst %.2e, tanh worst %.2e abs / %.2f ulp near 0\n", worst_exp, worst_sig,
           worst_tanh, worst_tanh_rel);
    CHECK(worst_exp <= 3.0);
    CHECK(worst_sig <= 3e-7);
    CHECK(worst_tanh <= 3e-7);
    CHECK(worst_tanh_rel <= 3.0);
    // Saturation: finite and exact limits, no overflow.
    CHECK(sk_sigmoidf(200.0f) == 1.0f && sk_sigmoidf(-200.0f) >= 0.0f && sk_sigmoidf(-200.0f) < 1e-37f);
    CHECK(sk_tanhf(50.0f) == 1.0f && sk_tanhf(-50.0f) == -1.0f);
    CHECK(sk_tanhf(INFINITY) == 1.0f && sk_tanhf(-INFINITY) == -1.0f);
    CHECK(isfinite(sk_expf(1000.0f)) && sk_expf(-1000.0f) >= 0.0f);
    // NaN in, NaN out: the trainer's divergence check depends on it.
    CHECK(isnan(sk_expf(NAN)) && isnan(sk_sigmoidf(NAN)) && isnan(sk_tanhf(NAN)));
    return sk_test_done("test_activations");
}
