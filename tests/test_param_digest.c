// test_param_digest.c: the behaviour guard. A fixed-seed CPU training run of shakespeare-train
// ($SK_TRAIN; 20 steps of a 2x16 LSTM with dropout, weight decay and clipping) must end with
// parameters whose digest (FNV-1a 64 over the float bits in layout order) is the one recorded
// below, bit for bit, so that a refactor which changes any arithmetic of the CPU training
// path, however slightly, fails here.
//
// Why the digest is the same on every x86-64 machine. Our own C code has no CPU-dependent
// rounding: ISO C11 keeps -ffp-contract=off (no FMA contraction, whatever -march=native
// allows), GCC never reorders float sums without -ffast-math, and the activations are our own
// polynomials (src/cpu/activations.h). What does depend on the CPU is pinned for the child:
//  - OpenBLAS picks its kernels per CPU (a Zen and a Xeon round differently):
//    OPENBLAS_CORETYPE=Prescott selects the SSE3 kernels that every x86-64 CPU since 2005
//    runs, one thread (the k-blocking is fixed per core type, not per cache size);
//  - libxsmm JIT-compiles the recurrent products for the CPU's ISA (FMA or not):
//    LIBXSMM_TARGET=generic turns the JIT off, so those products go through CBLAS (pinned);
//  - glibc's exp and log (the cross-entropy's) pick FMA variants at load time:
//    GLIBC_TUNABLES masks AVX2 and FMA, so every machine takes the SSE2 ones.
// The digest is GCC's: clang contracts a * b + c into an FMA by default even in ISO C mode, so a
// clang build's digest differs where the CPU has FMA (the test skips there, saying so).
// What the pins cannot fix is the library versions themselves (a new OpenBLAS may change a
// kernel, a new glibc its exp): the digest is recorded with OpenBLAS and glibc versions, and
// under other versions the test prints the digest it got and skips (exit 77) rather than
// failing for a change that is not ours; a refactor is checked on the machine that recorded it.
#define _GNU_SOURCE 1 // gnu_get_libc_version
#include <gnu/libc-version.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shakespeare/checkpoint.h"
#include "test_util.h"

char *openblas_get_config(void); // OpenBLAS's, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH ... Zen MAX_THREADS=64"

// Recorded at f4e9ffc under the pins (every refactor since must leave it as it is); the same with
// and without libxsmm in the build and with and without -march=native (an AMD EPYC with AVX2).
#define RECORDED_DIGEST UINT64_C(0x63ae3d0905810625)
#define RECORDED_OPENBLAS "OpenBLAS 0.3.21"
#define RECORDED_GLIBC "2.36"

static uint64_t fnv1a64(const void *data, size_t n) {
    const unsigned char *p = data;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * UINT64_C(0x100000001b3);
    return h;
}

// "OpenBLAS 0.3.21" from the configuration string: its first two words.
static void openblas_version(char *buf, size_t size) {
    snprintf(buf, size, "%s", openblas_get_config());
    char *sp = strchr(buf, ' ');
    if (sp) sp = strchr(sp + 1, ' ');
    if (sp) *sp = '\0';
}

int main(void) {
#if defined(__clang__)
    printf("test_param_digest: skipped: the digest was recorded from a GCC build (clang contracts into FMAs)\n");
    return 77;
#endif
    const char *train = getenv("SK_TRAIN");
    if (!train || !*train) {
        fprintf(stderr, "test_param_digest: SK_TRAIN (the shakespeare-train to run) is not set; run it under ctest\n");
        return 1;
    }
    char dir[512], text[600], cmd[4096];
    sk_test_tmpdir(dir, sizeof dir, "digest");
    snprintf(text, sizeof text, "%s/text.txt", dir);
    FILE *f = fopen(text, "w");
    if (!f) return perror(text), 1;
    for (int i = 0; i < 200; i++) fputs("the quick brown fox jumps over the lazy dog. ", f);
    fclose(f);

    // The pins (see the header); set here so that they hold whatever the caller's environment says.
    setenv("OPENBLAS_CORETYPE", "Prescott", 1);
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    setenv("LIBXSMM_TARGET", "generic", 1);
    setenv("GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX2,-FMA,-FMA4,-AVX2_Usable,-FMA_Usable,-FMA4_Usable", 1);
    snprintf(cmd, sizeof cmd,
             "'%s' --data '%s' --out-dir '%s/run' --cache-dir '%s/cache' --device cpu --threads 1 --seed 7"
             " --embed-size 8 --hidden-size 16 --num-layers 2 --dropout 0.1 --weight-decay 0.01 --grad-clip 1"
             " --batch-size 4 --seq-length 16 --max-iters 20 --max-epochs 0 --eval-every 0 --checkpoint-every 0"
             " --log-every 10 > '%s/train.log' 2>&1",
             train, text, dir, dir, dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "test_param_digest: training failed (log: %s/train.log)\n", dir);
        return 1;
    }

    char path[700];
    snprintf(path, sizeof path, "%s/run/last.safetensors", dir);
    sk_error err;
    sk_model_file m;
    CHECK_OK(sk_model_load(path, &m, &err));
    sk_param_layout l;
    CHECK_OK(sk_param_layout_init(&l, &m.cfg, &err));
    uint64_t digest = fnv1a64(m.params, l.total * sizeof(float)); // little-endian x86-64: the float bits
    printf("%zu parameters, digest 0x%016" PRIx64 " (recorded 0x%016" PRIx64 ")\n", l.total, digest,
           RECORDED_DIGEST);
    sk_param_layout_free(&l);
    sk_model_file_free(&m);

    char blas[128];
    openblas_version(blas, sizeof blas);
    if (strcmp(blas, RECORDED_OPENBLAS) != 0 || strcmp(gnu_get_libc_version(), RECORDED_GLIBC) != 0) {
        printf("test_param_digest: skipped: the digest was recorded under %s and glibc %s, this is %s and glibc %s\n",
               RECORDED_OPENBLAS, RECORDED_GLIBC, blas, gnu_get_libc_version());
        return 77;
    }
    CHECK(digest == RECORDED_DIGEST);
    if (!sk_test_failures) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) fprintf(stderr, "test_param_digest: could not remove %s\n", dir);
    }
    return sk_test_done("test_param_digest");
}
