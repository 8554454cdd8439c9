// cli_backend_options.h: the backend's options (fields of sk_backend_config, which both programs'
// options embed as `backend`), defined once for shakespeare-train's and shakespeare-sample's tables.
// defines: CLI_BACKEND_OPTIONS
// Each program's table splices the list at its runtime rows:
//     CLI_BACKEND_OPTIONS(ROW_BOTH, ROW_TRAIN, ROW_SAMPLE, AT)
// where AT(field) is offsetof(the program's options struct, field), and each ROW_* macro makes a
// table entry of its designated initializers ({__VA_ARGS__}) or drops the row. A row marked BOTH
// is taken by both programs (so a backend option that sampling should take is one BOTH row);
// TRAIN or SAMPLE rows are one program's, where the two differ (cuda-graph and tensor-cores are
// training's; precision's default and help differ). --device is here too, as both programs take it
// in this place (its field is the program's own, not the backend's). .json, .resolved and
// .per_rank matter only where a program records its options (shakespeare-train's record and
// identity; shakespeare-sample records nothing), so a BOTH row may carry them.
#ifndef SK_CLI_BACKEND_OPTIONS_H
#define SK_CLI_BACKEND_OPTIONS_H

#include "cli_kinds.h"

#define CLI_BACKEND_OPTIONS(BOTH, TRAIN, SAMPLE, AT)                                                               \
    BOTH(.name = "threads", .arg = "N", .type = CLI_INT, .offset = AT(backend.threads), .hi = 1024,                \
         .help = "CPU threads; 0 = all cores", .per_rank = 1)                                                      \
    BOTH(.name = "device", .arg = "D", .type = CLI_KIND, .offset = AT(device), .kind = &cli_kind_device,           \
         .help = "auto | cpu | cuda | cuda:N")                                                                     \
    /* The record holds the implementation that ran (auto's choice, resolved), which a resume takes again. */     \
    BOTH(.name = "rnn-impl", .arg = "I", .type = CLI_KIND, .offset = AT(backend.rnn_impl),                         \
         .kind = &cli_kind_rnn_impl, .help = "the CUDA LSTM implementation (the CPU takes only auto)",             \
         .json = "rnn_impl", .resolved = 1)                                                                        \
    TRAIN(.name = "cuda-graph", .arg = "G", .type = CLI_KIND, .offset = AT(backend.cuda_graph),                    \
          .kind = &cli_kind_cuda_graph,                                                                            \
          .help = "replay each CUDA training step as one captured graph: on (a failed capture\n"                   \
                  "is an error) | try (a failed capture: eager from there, with a notice) |\n"                     \
                  "auto (= try) | off; graphs are for one process; the CPU runs eagerly and\n"                     \
                  "refuses on")                                                                                    \
    /* Hidden, for benchmarks (scripts/bench_sample.sh): the loop the fused sampler replaced. */                   \
    SAMPLE(.name = "no-fused-sampler", .type = CLI_FLAG, .offset = AT(backend.no_fused_sampler))                   \
    /* The record holds the precision computed in (resolved: the trainer records its options after the */         \
    /* backend resolved auto, tf32 on CUDA, fp32 on the CPU). Sampling's default is fp32. */                       \
    TRAIN(.name = "precision", .arg = "P", .type = CLI_KIND, .offset = AT(backend.precision),                      \
          .kind = &cli_kind_precision,                                                                             \
          .help = "the arithmetic: auto (tf32 on CUDA, as PyTorch's cuDNN RNNs; fp32 on the\n"                     \
                  "CPU) | fp32 (strict fp32) | tf32 (TF32 tensor cores: 10-bit mantissa\n"                         \
                  "operands, fp32 accumulation) | bf16 (bf16 LSTM operands, fp32\n"                                \
                  "accumulation, cell state and master weights); the CPU takes fp32, and\n"                        \
                  "bf16 where it has bf16 dot products (AVX512_BF16, AMX) and oneDNN\n",                           \
          .json = "precision", .resolved = 1)                                                                      \
    SAMPLE(.name = "precision", .arg = "P", .type = CLI_KIND, .offset = AT(backend.precision),                     \
           .kind = &cli_kind_precision,                                                                            \
           .help = "the arithmetic: fp32 | tf32 | bf16 | auto (see shakespeare-train --help);\n"                    \
                   "on the CPU bf16 means bf16 weights, fp32 sums and state (any CPU)")                            \
    TRAIN(.name = "tensor-cores", .arg = "T", .type = CLI_KIND, .offset = AT(backend.plstm_tensor_cores),          \
          .kind = &cli_kind_tensor_cores,                                                                          \
          .help = "the persistent LSTM kernel's inner products: auto (tensor cores for tf32\n"                     \
                  "and bf16) | on | off (CUDA cores); others ignore it", .json = "tensor_cores", .resolved = 1)    \
    /* Hidden, for benchmarks (docs/gpu.md): the cuDNN wavefront's chunk length in steps. */                       \
    TRAIN(.name = "cudnn-chunk-steps", .arg = "N", .type = CLI_INT, .offset = AT(backend.cudnn_chunk_steps),       \
          .lo = -1, .hi = 1 << 20)

// The ROW_* macros a table passes: take the row, or drop it.
#define CLI_ROW(...) {__VA_ARGS__},
#define CLI_NO_ROW(...)

#endif
