// test_backend_memory.c: sk_backend_cpu_bytes, the estimate a run is refused by when it cannot
// fit, is what sk_backend_create_cpu allocates: glibc's count of the bytes in use (mallinfo2)
// grows by the estimate, to 1% (the layout, the per-layer pointer arrays and malloc's own
// headers are not in it), for training with dropout and weight drop, training without them, and
// inference, and for the GRU and the RNN; the activations are the part that grows with B x T.
// The available memory is read.
#include <malloc.h>
#include <stdio.h>

#include "shakespeare/backend.h"
#include "test_util.h"

// AddressSanitizer replaces malloc, and glibc's counts then stay at zero: there only the
// estimate's own arithmetic is held.
#if defined(__SANITIZE_ADDRESS__)
#define SK_MALLOC_COUNTED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SK_MALLOC_COUNTED 0
#endif
#endif
#ifndef SK_MALLOC_COUNTED
#define SK_MALLOC_COUNTED 1
#endif

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
static size_t in_use(void) {
    const struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static void check_estimate(const char *what, sk_backend_config cfg) {
    sk_error err = {{0}};
    size_t acts = 0;
    const size_t est = sk_backend_cpu_bytes(&cfg, &acts);
    const size_t before = in_use();
    sk_backend *b = NULL;
    CHECK_OK(sk_backend_create_cpu(&cfg, &b, &err));
    const size_t grew = in_use() - before;
    sk_backend_free(b);
    printf("%s: estimate %zu bytes (activations %zu), allocated %zu\n", what, est, acts, grew);
    CHECK(est > 0);
    if (SK_MALLOC_COUNTED)
        CHECK(grew > 0 && (double)est >= 0.99 * (double)grew && (double)est <= 1.01 * (double)grew);
    // Twice the window: the activations double, the rest stays.
    cfg.seq_len *= 2;
    size_t acts2 = 0;
    const size_t est2 = sk_backend_cpu_bytes(&cfg, &acts2);
    CHECK(acts2 == 2 * acts && est2 - acts2 == est - acts);
}
#endif

int main(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    const sk_model_config m = {.vocab_size = 65, .embed_size = 48, .hidden_size = 96, .num_layers = 3,
                               .dropout = 0.2f, .weight_drop = 0.3f};
    sk_backend_config cfg = {.model = m, .batch_size = 8, .seq_len = 300, .training = 1, .threads = 1};
    check_estimate("training, dropout and weight drop", cfg);
    cfg.model.dropout = 0.0f, cfg.model.weight_drop = 0.0f;
    check_estimate("training", cfg);
    cfg.training = 0;
    check_estimate("inference", cfg);
    // The other cells (fewer gates, one state, the GRU's recurrent side apart).
    for (sk_cell_kind k = SK_CELL_GRU; k <= SK_CELL_RNN; k = (sk_cell_kind)(k + 1)) {
        char what[64];
        cfg.model = m, cfg.model.cell = k, cfg.training = 1;
        snprintf(what, sizeof what, "%s training, dropout and weight drop", sk_cell_get(k)->name);
        check_estimate(what, cfg);
        cfg.training = 0;
        snprintf(what, sizeof what, "%s inference", sk_cell_get(k)->name);
        check_estimate(what, cfg);
    }
    cfg.batch_size = 0;
    CHECK(sk_backend_cpu_bytes(&cfg, NULL) == 0); // a configuration the backend refuses
    const size_t avail = sk_host_memory_available();
    printf("available: %zu bytes\n", avail);
    CHECK(avail > 0);
    return sk_test_done("test_backend_memory");
#else
    printf("SKIP: mallinfo2 needs glibc 2.33\n");
    return 77;
#endif
}
