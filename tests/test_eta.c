// test_eta.c: the progress line's ETA (sk_progress_eta_s) is the run's remaining steps at this
// process's own step rate. A run resumed at step 1000 of 1040 whose first 20 steps here took
// 10 s has 20 steps, 10 s, left; counting the checkpoint's 1000 steps as this process's would
// say 0.2 s ("0m00s with 27 s left"). Exact arithmetic on given numbers: no clock.
#include "shakespeare/trainer.h"
#include "test_util.h"

int main(void) {
    sk_progress p = {0};
    p.start_step = 1000, p.step = 1020, p.max_iters = 1040, p.elapsed_s = 10.0;
    double eta = sk_progress_eta_s(&p), real = 10.0; // 20 steps left at 0.5 s a step
    printf("resumed at 1000, 20 steps in 10 s, 20 left: eta %.3f s, real %.3f s\n", eta, real);
    CHECK(eta >= real / 2 && eta <= real * 2);
    CHECK(fabs(eta - real) < 1e-9); // the formula itself: elapsed / own steps * steps left
    // A fresh run is the same formula from step 0.
    p.start_step = 0, p.step = 100, p.max_iters = 400, p.elapsed_s = 5.0;
    CHECK(fabs(sk_progress_eta_s(&p) - 15.0) < 1e-9);
    // Unknown: no length (--max-iters 0 with no epoch limit), or no step of this process yet.
    p.max_iters = 0;
    CHECK(sk_progress_eta_s(&p) < 0);
    p.max_iters = 400, p.start_step = 100;
    CHECK(sk_progress_eta_s(&p) < 0);
    return sk_test_done("test_eta");
}
