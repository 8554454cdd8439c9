// test_precision.c: the --precision choice at the backend interface, on any machine.
//  1. sk_precision_parse takes exactly fp32, tf32, bf16 (names round-trip through
//     sk_precision_name), refuses anything else with a line naming the value, and leaves
//     *out untouched on failure; fp32 is the zero value, so a config that never sets the
//     field asks for fp32;
//  2. the CPU backend takes fp32, and bf16 where oneDNN and bf16 dot products are there
//     (src/cpu/lstm_onednn.h; bf16 for the LSTM only: the GRU and the RNN refused, "not yet");
//     it refuses tf32, and bf16 elsewhere, with one line naming the
//     flag and the reason (directly, through sk_backend_create with --device cpu, and, with
//     no usable GPU, with --device auto), rather than silently computing in fp32;
//  3. likewise the CPU backend refuses tensor cores asked for (sk_tensor_cores, the
//     persistent LSTM kernel's switch) and takes the default and OFF.
// The CUDA side (each precision against the CPU reference) is in tests/gpu.
#include <stdio.h>
#include <string.h>

#include "cpu/lstm_onednn.h"
#include "shakespeare/backend.h"
#include "shakespeare/cell.h"
#include "test_util.h"

int main(void) {
    sk_error err = {{0}};
    static const char *const names[] = {"fp32", "tf32", "bf16", "auto"};
    for (int i = 0; i < 4; i++) {
        sk_precision p = (sk_precision)-1;
        CHECK_OK(sk_precision_parse(names[i], &p, &err));
        CHECK((int)p == i);
        CHECK(strcmp(sk_precision_name(p), names[i]) == 0);
    }
    CHECK(SK_PRECISION_FP32 == 0);
    CHECK(strcmp(sk_precision_name((sk_precision)7), "unknown") == 0);
    static const char *const bad[] = {"", "FP32", "fp16", "bf16 ", " tf32", "float", "fp32x", "Auto"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sk_precision p = SK_PRECISION_TF32;
        err.msg[0] = '\0';
        CHECK(sk_precision_parse(bad[i], &p, &err) == SK_ERR_ARG);
        char want[96];
        snprintf(want, sizeof want, "precision expects fp32, tf32, bf16 or auto, got \"%s\"", bad[i]);
        CHECK(strcmp(err.msg, want) == 0);
        CHECK(p == SK_PRECISION_TF32); // untouched on failure
    }

    sk_backend_config cfg = {.model = {.vocab_size = 7, .embed_size = 4, .hidden_size = 8, .num_layers = 2, .dropout = 0.1f, .weight_drop = 0.0f}, .batch_size = 2, .seq_len = 3, .training = 1,
                             .threads = 1, .seed = 3};
    sk_backend *be = NULL;
    CHECK(cfg.precision == SK_PRECISION_FP32);
    char why[256];
    const int cpu_bf16 = sk_onednn_bf16_check(why, sizeof why);
    for (int i = 1; i < 3; i++) {
        cfg.precision = (sk_precision)i;
        if (i == SK_PRECISION_BF16 && cpu_bf16) { // oneDNN and bf16 dot products: taken (test_lstm_onednn)
            CHECK_OK(sk_backend_create_cpu(&cfg, &be, &err));
            CHECK(sk_backend_cfg(be)->precision == SK_PRECISION_BF16);
            sk_backend_free(be);
            continue;
        }
        char want[320];
        if (i == SK_PRECISION_BF16)
            snprintf(want, sizeof want, "precision bf16 on the CPU: %s", why);
        else
            snprintf(want, sizeof want, "precision tf32 needs a CUDA device; the CPU backend computes in fp32 or bf16");
        err.msg[0] = '\0';
        CHECK(sk_backend_create_cpu(&cfg, &be, &err) == SK_ERR_ARG && be == NULL);
        printf("cpu, precision %s: %s\n", names[i], err.msg);
        CHECK(strstr(err.msg, want) == err.msg && strchr(err.msg, '\n') == NULL);
        char notice[256] = "x";
        CHECK(sk_backend_create(&cfg, "cpu", &be, notice, sizeof notice, &err) == SK_ERR_ARG && be == NULL);
        CHECK(strstr(err.msg, want) == err.msg);
        char reason[256];
        if (!sk_cuda_available(0, reason, sizeof reason)) {
            CHECK(sk_backend_create(&cfg, "auto", &be, notice, sizeof notice, &err) == SK_ERR_ARG && be == NULL);
            CHECK(strstr(err.msg, want) == err.msg);
        }
    }
    // bf16 on the CPU is oneDNN's LSTM: the GRU and the RNN are refused in one line, "not yet".
    for (int kind = SK_CELL_GRU; kind <= SK_CELL_RNN; kind++) {
        sk_backend_config gc = cfg;
        gc.model.cell = (sk_cell_kind)kind;
        gc.precision = SK_PRECISION_BF16;
        char want[160];
        snprintf(want, sizeof want, "precision bf16 on the CPU runs oneDNN's LSTM; the %s not yet",
                 sk_cell_get((sk_cell_kind)kind)->name);
        err.msg[0] = '\0';
        CHECK(sk_backend_create_cpu(&gc, &be, &err) == SK_ERR_ARG && be == NULL);
        printf("cpu, precision bf16, cell %s: %s\n", sk_cell_get((sk_cell_kind)kind)->name, err.msg);
        CHECK(strstr(err.msg, want) == err.msg && strchr(err.msg, '\n') == NULL);
    }
    cfg.precision = SK_PRECISION_FP32;
    CHECK_OK(sk_backend_create_cpu(&cfg, &be, &err));
    CHECK(sk_backend_notice(be)[0] == '\0' && sk_backend_cfg(be)->precision == SK_PRECISION_FP32);
    sk_backend_free(be);
    cfg.precision = SK_PRECISION_AUTO; // the CPU's default is fp32, and the backend says so
    CHECK_OK(sk_backend_create_cpu(&cfg, &be, &err));
    CHECK(sk_backend_cfg(be)->precision == SK_PRECISION_FP32);
    sk_backend_free(be);
    cfg.precision = SK_PRECISION_FP32;

    static const char *const tc[] = {"auto", "on", "off"};
    for (int i = 0; i < 3; i++) {
        sk_tensor_cores t = (sk_tensor_cores)-1;
        CHECK_OK(sk_tensor_cores_parse(tc[i], &t, &err));
        CHECK((int)t == i && strcmp(sk_tensor_cores_name(t), tc[i]) == 0);
    }
    sk_tensor_cores t = SK_TENSOR_CORES_OFF;
    CHECK(sk_tensor_cores_parse("yes", &t, &err) == SK_ERR_ARG && t == SK_TENSOR_CORES_OFF);
    CHECK(strcmp(err.msg, "tensor-cores expects auto, on or off, got \"yes\"") == 0); // the setting; the CLI says the flag
    CHECK(SK_TENSOR_CORES_DEFAULT == 0); // a config that never sets it takes the default
    cfg.plstm_tensor_cores = SK_TENSOR_CORES_ON;
    err.msg[0] = '\0';
    CHECK(sk_backend_create_cpu(&cfg, &be, &err) == SK_ERR_ARG && be == NULL);
    printf("cpu, tensor cores on: %s\n", err.msg);
    CHECK(strstr(err.msg, "tensor cores need a CUDA device") == err.msg && strchr(err.msg, '\n') == NULL);
    cfg.plstm_tensor_cores = SK_TENSOR_CORES_OFF;
    CHECK_OK(sk_backend_create_cpu(&cfg, &be, &err));
    sk_backend_free(be);
    return sk_test_done("test_precision");
}
