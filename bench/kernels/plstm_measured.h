// plstm_measured.h: what the H200 measured of every persistent kernel at commit 2d6bab0
// (bench/results/h200-2026-11-28-2d6bab0/), beside what the cost models predict for it: the table
// bench/kernels/plstm_cost.c prints and tests/test_plstm_plan.c holds within 30%.
// defines: sk_plstm_measured, kSkPlstmMeasured, sk_plstm_predicted
#ifndef SK_PLSTM_MEASURED_H
#define SK_PLSTM_MEASURED_H

#include "lstm_layerwise_cost.h"
#include "sample_persistent_cost.h"

typedef enum { SK_KERNEL_WAVEFRONT, SK_KERNEL_LW_GRID, SK_KERNEL_LW_CLUSTER, SK_KERNEL_SAMPLER } sk_plstm_kernel;

typedef struct {
    const char *name;
    sk_plstm_kernel kernel;
    char config;         // 'A' (E128 H256 L2 B32 T100) or 'B' (E256 H512 L4 B64 T128); the sampler: A's model
    sk_plstm_operands op; // the wavefront's operands; the layer-after-layer kernels: mma and operand size from it
    int strict;          // --precision fp32: the GEMMs off the chain in strict fp32 (else TF32)
    int batch;           // the sampler's streams
    double measured;     // ms a training step (step_bench, graph, dropout 0), the sampler us a step
    const char *file;    // under bench/results/h200-2026-11-28-2d6bab0/
} sk_plstm_measured;

// step_bench's graph rows (10 steps x 3 rounds) and the sampler's characters per wall second
// (us a step: streams / (characters/s)).
static const sk_plstm_measured kSkPlstmMeasured[] = {
    {"wavefront fp32", SK_KERNEL_WAVEFRONT, 'A', SK_PLSTM_FP32, 1, 0, 4.976, "probe/probe-persistent.txt"},
    {"wavefront tf32 (CUDA cores)", SK_KERNEL_WAVEFRONT, 'A', SK_PLSTM_FP32, 0, 0, 4.860, "probe/probe-persistent.txt"},
    {"wavefront tf32 tensor cores", SK_KERNEL_WAVEFRONT, 'A', SK_PLSTM_TF32_MMA, 0, 0, 4.982, "probe/probe-persistent.txt"},
    {"wavefront bf16 (CUDA cores)", SK_KERNEL_WAVEFRONT, 'A', SK_PLSTM_BF16, 0, 0, 5.864, "probe/probe-persistent.txt"},
    {"wavefront bf16 tensor cores", SK_KERNEL_WAVEFRONT, 'A', SK_PLSTM_BF16_MMA, 0, 0, 4.419, "probe/probe-persistent.txt"},
    {"wavefront bf16 tensor cores", SK_KERNEL_WAVEFRONT, 'B', SK_PLSTM_BF16_MMA, 0, 0, 16.725, "probe/probe-persistent.txt"},
    {"layer after layer, grid.sync, fp32", SK_KERNEL_LW_GRID, 'A', SK_PLSTM_FP32, 1, 0, 3.293, "probe/probe-persistent.txt"},
    {"layer after layer, grid.sync, tf32", SK_KERNEL_LW_GRID, 'A', SK_PLSTM_TF32_MMA, 0, 0, 2.693, "probe/probe-persistent.txt"},
    {"layer after layer, grid.sync, bf16", SK_KERNEL_LW_GRID, 'A', SK_PLSTM_BF16_MMA, 0, 0, 2.364, "probe/probe-persistent.txt"},
    {"layer after layer, grid.sync, bf16", SK_KERNEL_LW_GRID, 'B', SK_PLSTM_BF16_MMA, 0, 0, 8.831, "probe/probe-persistent.txt"},
    {"layer after layer, clusters, fp32", SK_KERNEL_LW_CLUSTER, 'A', SK_PLSTM_FP32, 1, 0, 9.646, "probe/probe-persistent.txt"},
    {"layer after layer, clusters, tf32", SK_KERNEL_LW_CLUSTER, 'A', SK_PLSTM_TF32_MMA, 0, 0, 4.482, "probe/probe-persistent.txt"},
    {"layer after layer, clusters, bf16", SK_KERNEL_LW_CLUSTER, 'A', SK_PLSTM_BF16_MMA, 0, 0, 4.233, "probe/probe-persistent.txt"},
    {"layer after layer, clusters, bf16", SK_KERNEL_LW_CLUSTER, 'B', SK_PLSTM_BF16_MMA, 0, 0, 26.165, "probe/probe-persistent.txt"},
    {"fused sampler, batch 1", SK_KERNEL_SAMPLER, 'A', SK_PLSTM_FP32, 0, 1, 1e6 / 57273, "probe/sample-gpu.txt"},
    {"fused sampler, batch 16", SK_KERNEL_SAMPLER, 'A', SK_PLSTM_FP32, 0, 16, 16e6 / 485952, "probe/sample-gpu.txt"},
    {"fused sampler, batch 256", SK_KERNEL_SAMPLER, 'A', SK_PLSTM_FP32, 0, 256, 256e6 / 838794, "probe/sample-gpu.txt"},
};

// The model's figure for entry m (in m's unit) on the H200's 132 SMs, the cluster kernels counted
// `how` (SK_PLSTM_LW_PER_ROW: as the H200 measured them); *plan_out the layer-after-layer plan
// (may be NULL); 0 when the plan refuses the shape.
static inline double sk_plstm_predicted(const sk_plstm_measured *m, sk_plstm_lw_issue how, sk_plstm_lw_plan *plan_out) {
    const int a = m->config == 'A';
    const int B = a ? 32 : 64, E = a ? 128 : 256, H = a ? 256 : 512, L = a ? 2 : 4, T = a ? 100 : 128;
    if (m->kernel == SK_KERNEL_SAMPLER) {
        sk_sample_plan sp;
        if (!sk_sample_plan_shape(&sp, kSkCostSMs, kSkCostOptin, m->batch, 65, 128, 256, 2)) return 0;
        return sk_sample_cost_step_2d6bab0(&sp, m->batch, 65, 128, 256, 2); // the kernel measured
    }
    if (m->kernel == SK_KERNEL_WAVEFRONT) {
        sk_plstm_plan p;
        if (!sk_plstm_plan_shape(&p, kSkCostSMs, kSkCostOptin, 9, B, E, H, L, m->op)) return 0;
        const double chain = (sk_plstm_cost_forward(&p, B, E, H, L).us + sk_plstm_cost_backward(&p, B, H, L, T).us) *
                             (T + L - 1) / 1e3;
        return chain + sk_plstm_cost_offchain_ms(B, E, H, L, T, m->strict, 0);
    }
    sk_plstm_lw_plan p;
    const int mma = sk_plstm_uses_mma(m->op), s = (int)sk_plstm_operand_bytes(m->op);
    const int cl = m->kernel == SK_KERNEL_LW_CLUSTER ? SK_PLSTM_LW_MAX_CLUSTER : 0;
    if (!sk_plstm_lw_plan_shape(&p, kSkCostSMs, kSkCostOptin, B, H, mma, s, cl)) return 0;
    if (plan_out) *plan_out = p;
    return sk_plstm_lw_step_ms(&p, B, E, H, L, T, how);
}

#endif
