// plstm_cost.c: prints the persistent LSTM's cost models (bench/kernels/lstm_persistent_cost.h and the
// headers built on it) for configurations A and B, or one shape, for every operand kind the plan
// accepts, and last every kernel the H200 measured at 2d6bab0 predicted against the measurement
// (bench/kernels/plstm_measured.h).
// usage: plstm_cost [B E H L T]
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "lstm_persistent_rebuild_cost.h"
#include "plstm_measured.h"

static const char *name(sk_plstm_operands o) {
    static const char *n[] = {"fp32", "bf16", "bf16-mma", "tf32-mma"};
    return n[o];
}

static void row(const char *dir, const sk_plstm_cost *c, int steps) {
    printf("  %-4s %8.0f %8.0f %8.0f %8.0f %7.0f %4.0f %5.0f %4.0f %6.0f %8.2f %9.2f\n", dir, c->l2_rd / 1024,
           c->l2_wr / 1024, c->lds, c->fma, c->mma, c->bar, c->gsync, c->rt, c->inst_stage + c->inst, c->us,
           c->us * steps / 1e3);
}

static void config(const char *label, int B, int E, int H, int L, int T) {
    const int steps = T + L - 1; // chain steps per direction
    printf("config %s: B=%d E=%d H=%d L=%d T=%d, %d chain steps per direction\n", label, B, E, H, L, T, steps);
    for (int o = 0; o < 4; o++) {
        sk_plstm_plan p;
        if (!sk_plstm_plan_shape(&p, kSkCostSMs, kSkCostOptin, 9, B, E, H, L, (sk_plstm_operands)o)) {
            printf(" %-8s not planned: %s\n", name((sk_plstm_operands)o), p.why_not);
            continue;
        }
        printf(" %-8s U=%d blocks=%d bc fwd/bwd=%d/%d smem fwd/bwd=%zu/%zu KiB\n", name((sk_plstm_operands)o), p.U,
               p.blocks, p.bc_fwd, p.bc_bwd, p.smem_fwd >> 10, p.smem_bwd >> 10);
        printf("  dir  L2rd KiB L2wr KiB      lds      fma     mma  bar gsync   rt   inst  us/step  ms/window\n");
        const sk_plstm_cost f = sk_plstm_cost_forward(&p, B, E, H, L), b = sk_plstm_cost_backward(&p, B, H, L, T);
        row("fwd", &f, steps);
        row("bwd", &b, steps);
        const double chain = (f.us + b.us) * steps / 1e3;
        printf("  predicted per training step: chain (fwd + bwd) %.2f ms + off the chain %.2f ms (tf32 GEMMs; fp32 %.2f)\n",
               chain, sk_plstm_cost_offchain_ms(B, E, H, L, T, 0, 0), sk_plstm_cost_offchain_ms(B, E, H, L, T, 1, 0));
    }
}

// The rebuild's plan (bench/kernels/lstm_persistent_rebuild_cost.h): the best tile for every exchange
// and layer order with tensor-core operands.
static void rebuild(const char *label, int B, int E, int H, int L, int T) {
    static const sk_plstm_operands ops[2] = {SK_PLSTM_TF32_MMA, SK_PLSTM_BF16_MMA};
    printf("rebuild, config %s (B=%d E=%d H=%d L=%d T=%d):\n", label, B, E, H, L, T);
    for (int o = 0; o < 2; o++)
        for (int lw = 1; lw >= 0; lw--)
            for (int x = 0; x < 3; x++) {
                const sk_plstm_rebuild r =
                    sk_plstm_rebuild_best(B, E, H, L, T, ops[o], (sk_plstm_exchange)x, lw, kSkCostSMs, kSkCostOptin);
                printf(" %-8s %-9s %-9s", name(ops[o]), lw ? "layerwise" : "wavefront",
                       sk_plstm_exchange_name((sk_plstm_exchange)x));
                if (!r.ok) {
                    printf(" does not fit: %s\n", r.why_not);
                    continue;
                }
                printf(" Bb=%d U=%d blocks=%d smem %zu/%zu KiB; fwd %.2f us (%.0f mma, %.0f KiB staged), bwd %.2f us "
                       "(%.0f mma, %.0f KiB) x %.0f steps: chain %.2f + GEMMs %.2f = %.2f ms\n",
                       r.Bb, r.U, r.blocks, r.smem_fwd >> 10, r.smem_bwd >> 10, r.fwd.us, r.fwd.mma,
                       r.fwd.l2_rd / 1024, r.bwd.us, r.bwd.mma, r.bwd.l2_rd / 1024, r.steps, r.chain_ms, r.gemm_ms,
                       r.total_ms);
            }
}

// The layer-after-layer kernels (bench/kernels/lstm_layerwise_cost.h) on the H200's SMs: fp32 on CUDA
// cores, TF32 and bf16 on tensor cores, each with grid.sync and with clusters (their prefetch and
// push counted both ways: as the H200 measured them, and precomputed per thread).
static void built_layerwise(const char *label, int B, int E, int H, int L, int T) {
    static const struct {
        const char *name;
        int mma, s;
    } kinds[3] = {{"fp32 CUDA cores", 0, 4}, {"TF32 tensor cores", 1, 4}, {"bf16 tensor cores", 1, 2}};
    for (int k = 0; k < 3; k++)
        for (int v = 0; v < 3; v++) {
            const int cl = v > 0;
            const sk_plstm_lw_issue how = v == 2 ? SK_PLSTM_LW_PER_THREAD : SK_PLSTM_LW_PER_ROW;
            sk_plstm_lw_plan p;
            printf("layer after layer, %s, %s, config %s (B=%d H=%d L=%d T=%d):", kinds[k].name,
                   !cl ? "grid.sync" : v == 1 ? "clusters, per-row prefetch" : "clusters, per-thread copies", label, B,
                   H, L, T);
            if (!sk_plstm_lw_plan_shape(&p, kSkCostSMs, kSkCostOptin, B, H, kinds[k].mma, kinds[k].s,
                                        cl ? SK_PLSTM_LW_MAX_CLUSTER : 0)) {
                printf(" does not fit: %s\n", p.why_not);
                continue;
            }
            const sk_plstm_cost f = sk_plstm_lw_cost_forward(&p, H, T, how), b = sk_plstm_lw_cost_backward(&p, H, T, how);
            printf(" Bb=%d U=%d blocks=%d smem %zu/%zu KiB waves %d/%d; fwd %.2f us (%.0f inst, %.0f KiB read, %.0f mma), "
                   "bwd %.2f us (%.0f inst, %.0f KiB, %.0f mma) x %d steps: chain %.2f ms, step %.2f ms\n",
                   p.Bb, p.U, p.blocks, p.smem_fwd >> 10, p.smem_bwd >> 10, sk_plstm_lw_waves(&p, 0),
                   sk_plstm_lw_waves(&p, 1), f.us, f.inst_stage + f.inst, f.l2_rd / 1024, f.mma, b.us,
                   b.inst_stage + b.inst, b.l2_rd / 1024, b.mma, L * T, sk_plstm_lw_chain_ms(&p, H, L, T, how),
                   sk_plstm_lw_step_ms(&p, B, E, H, L, T, how));
        }
}

// The sampling kernel (bench/kernels/sample_persistent_cost.h) at batch 1, 16 and 256: today's, and
// the one the H200 measured at 2d6bab0.
static void sampler(const char *label, int V, int E, int H, int L) {
    for (int B = 1; B <= 256; B *= 16) {
        sk_sample_plan p;
        printf("sampling kernel, config %s (V=%d E=%d H=%d L=%d), batch %d:", label, V, E, H, L, B);
        if (!sk_sample_plan_shape(&p, kSkCostSMs, kSkCostOptin, B, V, E, H, L)) {
            printf(" does not fit: %s\n", p.why_not);
            continue;
        }
        const double us = sk_sample_cost_step(&p, B, V, E, H, L), old = sk_sample_cost_step_2d6bab0(&p, B, V, E, H, L);
        printf(" %d blocks of %d units, streams staged at once %d, embedding and fc %s, %s; %.2f us a step: %.0f "
               "characters/s (2d6bab0's kernel: %.2f us, %.0f)\n",
               p.blocks, p.U, p.sb, p.resident ? "resident" : "from global memory",
               p.draw_all ? "every block draws" : "blocks draw their streams", us, B / us * 1e6, old, B / old * 1e6);
    }
}

// Every kernel the H200 measured at 2d6bab0 against the model (the cluster kernels counted as measured).
static void against_h200(void) {
    printf("against the H200 run of 2d6bab0 (bench/results/h200-2026-11-28-2d6bab0/):\n");
    for (size_t i = 0; i < sizeof kSkPlstmMeasured / sizeof kSkPlstmMeasured[0]; i++) {
        const sk_plstm_measured *m = &kSkPlstmMeasured[i];
        const double pred = sk_plstm_predicted(m, SK_PLSTM_LW_PER_ROW, NULL);
        const char *unit = m->kernel == SK_KERNEL_SAMPLER ? "us a character step" : "ms a training step";
        printf(" %c %-38s predicted %7.2f, measured %7.2f %s: %.2fx (%s)\n", m->config, m->name, pred, m->measured,
               unit, pred / m->measured, m->file);
    }
}

int main(int argc, char **argv) {
    printf("H200 assumptions: clock %.2f GHz, grid.sync %.2f us, dependent L2 round trip %.2f us (the flag hand-off's), HBM %.2f us (assumed), L2 %.1f B/ns "
           "per SM (%.1f with 8 loads in flight), %.0f LDS/clk, %.0f FMA warp-instr/clk, %.0f clk per mma.sync, "
           "__syncthreads %.2f us, a warp instruction every %.0f clk, cluster barrier %.2f us, DSMEM push with its "
           "barrier %.3f us + bytes at %.1f B/ns\n",
           kSkCostClockGHz, kSkCostGridSyncUs, kSkCostL2RoundTripUs, kSkCostDramRoundTripUs, kSkCostL2BytesPerNsPerSM,
           kSkCostL2x8BytesPerNsPerSM, kSkCostLdsPerClk, kSkCostFmaPerClk, kSkCostMmaClk, kSkCostBarUs,
           kSkCostIssueClk, kSkCostClusterSyncUs, kSkCostDsmemFixedUs, kSkCostDsmemBytesPerNs);
    if (argc == 6) {
        int v[5];
        for (int i = 0; i < 5; i++) {
            char *end;
            errno = 0;
            const long x = strtol(argv[i + 1], &end, 10);
            if (errno || *end || end == argv[i + 1] || x < 1 || x > 1 << 20) {
                fprintf(stderr, "error: plstm_cost expects positive integers B E H L T, got \"%s\"\n", argv[i + 1]);
                return 2;
            }
            v[i] = (int)x;
        }
        config("custom", v[0], v[1], v[2], v[3], v[4]);
        return 0;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: plstm_cost [B E H L T]\n");
        return 2;
    }
    config("A", 32, 128, 256, 2, 100);
    config("B", 64, 256, 512, 4, 128);
    rebuild("A", 32, 128, 256, 2, 100);
    rebuild("B", 64, 256, 512, 4, 128);
    built_layerwise("A", 32, 128, 256, 2, 100);
    built_layerwise("B", 64, 256, 512, 4, 128);
    sampler("A", 65, 128, 256, 2);
    against_h200();
    return 0;
}
