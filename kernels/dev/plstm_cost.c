// plstm_cost.c: prints the persistent LSTM's cost model (kernels/lstm_persistent_cost.h) for
// configurations A and B, or one shape, for every operand kind the plan accepts.
// usage: plstm_cost [B E H L T]
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "lstm_persistent_cost.h"

static const char *name(sk_plstm_operands o) {
    static const char *n[] = {"fp32", "bf16", "bf16-mma", "tf32-mma"};
    return n[o];
}

static void row(const char *dir, const sk_plstm_cost *c, int steps) {
    printf("  %-4s %8.0f %8.0f %8.0f %8.0f %7.0f %4.0f %5.0f %4.0f %8.2f %9.2f\n", dir, c->l2_rd / 1024,
           c->l2_wr / 1024, c->lds, c->fma, c->mma, c->bar, c->gsync, c->rt, c->us, c->us * steps / 1e3);
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
        printf("  dir  L2rd KiB L2wr KiB      lds      fma     mma  bar gsync   rt  us/step  ms/window\n");
        const sk_plstm_cost f = sk_plstm_cost_forward(&p, B, E, H, L), b = sk_plstm_cost_backward(&p, B, H, L);
        row("fwd", &f, steps);
        row("bwd", &b, steps);
        printf("  predicted per training step (fwd + bwd chain): %.2f ms\n", (f.us + b.us) * steps / 1e3);
    }
}

// The rebuild's plan (not built; floor notes, "The rebuild's prediction"): the input
// projections and their gradients as batched GEMMs off the chain, so that the chain runs layer
// after layer (L*T steps per direction) over W_hh alone, on all 128 blocks (U = H/128, rows
// rounded up to 16 for the tensor cores); W_hh fragments held in registers for the window
// (B fragments by ldmatrix, one per 2 mma); h staged once per step in the operand precision
// (bytes B*H*s per block, the L2 term); one hand-off (flags, `sync_us`) and one dependent
// round trip per step; the GEMMs off the chain at ~300 TFLOP/s.
static void planned(int B, int E, int H, int L, int T, int s, int kstep, double sync_us) {
    const int blocks = 128, U = (H + blocks - 1) / blocks, rows = (4 * U + 15) / 16 * 16;
    const double mma_fwd = (double)(rows / 16) * ((B + 7) / 8) * ((H + kstep - 1) / kstep);
    const double mma_bwd = (double)((U + 15) / 16) * ((B + 7) / 8) * ((4 * H + kstep - 1) / kstep);
    const double stage_fwd = (double)B * H * s, stage_bwd = (double)B * 4 * H * s;
    const double clk_us = 1e-3 / kSkCostClockGHz;
    const double fwd = sync_us + kSkCostL2RoundTripUs + stage_fwd / kSkCostL2BytesPerNsPerSM / 1e3 +
                       mma_fwd * kSkCostMmaClk * clk_us + 2 * kSkCostBarUs;
    const double bwd = sync_us + kSkCostL2RoundTripUs + stage_bwd / kSkCostL2BytesPerNsPerSM / 1e3 +
                       mma_bwd * kSkCostMmaClk * clk_us + 2 * kSkCostBarUs;
    const double gemm_flop = 2.0 * 3 * (double)B * T * 4 * H * ((double)E + (L - 1.0) * H); // x W_ih^T, dx, dW_ih
    const double gemm_ms = gemm_flop / 300e12 * 1e3, steps = (double)L * T;
    printf("  plan (%d-byte operands, hand-off %.1f us): fwd %.2f us/step (%.0f mma, %.0f KiB staged), bwd %.2f "
           "us/step (%.0f mma, %.0f KiB), %.0f steps each: %.2f ms + GEMMs %.2f ms = %.2f ms per training step\n",
           s, sync_us, fwd, mma_fwd, stage_fwd / 1024, bwd, mma_bwd, stage_bwd / 1024, steps,
           (fwd + bwd) * steps / 1e3, gemm_ms, (fwd + bwd) * steps / 1e3 + gemm_ms);
}

int main(int argc, char **argv) {
    printf("H100 assumptions: clock %.3f GHz, grid.sync %.1f us, dependent L2 round trip %.2f us, L2 %.0f B/ns "
           "per SM, %.0f LDS/clk, %.0f FMA warp-instr/clk, %.0f clk per mma.sync, __syncthreads %.2f us\n",
           kSkCostClockGHz, kSkCostGridSyncUs, kSkCostL2RoundTripUs, kSkCostL2BytesPerNsPerSM, kSkCostLdsPerClk,
           kSkCostFmaPerClk, kSkCostMmaClk, kSkCostBarUs);
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
    printf("the rebuild's plan, not built (grid.sync at %.1f us, or a 1.0 us flag hand-off):\n", kSkCostGridSyncUs);
    printf(" config A, TF32\n");
    planned(32, 128, 256, 2, 100, 4, 8, kSkCostGridSyncUs);
    planned(32, 128, 256, 2, 100, 4, 8, 1.0);
    printf(" config A, bf16\n");
    planned(32, 128, 256, 2, 100, 2, 16, 1.0);
    printf(" config B, bf16\n");
    planned(64, 256, 512, 4, 128, 2, 16, kSkCostGridSyncUs);
    planned(64, 256, 512, 4, 128, 2, 16, 1.0);
    return 0;
}
