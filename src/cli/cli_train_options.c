// cli_train_options.c: the table of shakespeare-train's options (cli_options.h): each flag, the
// field of sk_train_options it sets, its range or choices, help text and options-record key.
#include "cli_train_options.h"

#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli_args.h"
#include "cli_kinds.h"

static sk_status init_scheme_parse(const char *s, sk_init_scheme *out, sk_error *err) {
    if (strcmp(s, "uniform") == 0) *out = SK_INIT_UNIFORM;
    else if (strcmp(s, "pytorch") == 0) *out = SK_INIT_PYTORCH;
    else return sk_fail(err, SK_ERR_ARG, "--init expects uniform or pytorch, got \"%s\"", s);
    return SK_OK;
}
static const char *init_scheme_name(sk_init_scheme s) { return s == SK_INIT_UNIFORM ? "uniform" : "pytorch"; }

ENUM_KIND(kind_vocab, sk_vocab_mode, sk_vocab_mode_parse, sk_vocab_mode_name)
ENUM_KIND(kind_init, sk_init_scheme, init_scheme_parse, init_scheme_name)
ENUM_KIND(kind_lr_schedule, sk_lr_kind, sk_lr_kind_parse, sk_lr_kind_name)
ENUM_KIND(kind_cuda_graph, sk_cuda_graph, sk_cuda_graph_parse, sk_cuda_graph_name)
ENUM_KIND(kind_tensor_cores, sk_tensor_cores, sk_tensor_cores_parse, sk_tensor_cores_name)

// --keep-checkpoints N|all: all is -1.
static sk_status keep_parse(const char *flag, const char *s, void *field, sk_error *err) {
    if (strcmp(s, "all") == 0) return *(int *)field = -1, SK_OK;
    return cli_parse_int(flag, s, 0, 1000000, field, err);
}
static const char *keep_name(const void *field, char *buf, size_t n) {
    const int k = *(const int *)field;
    if (k < 0) return "all";
    snprintf(buf, n, "%d", k);
    return buf;
}
static const cli_kind kind_keep = {keep_parse, keep_name, 1};

// An entry with a JSON key is in the checkpoint's options record, and a resume (--init-from,
// --eval-only) takes its recorded value unless the command line names it (cli_options_inherit).
// The entries without a key belong to each run, not to the model's training: where this run
// writes and reads its files (--out-dir, --log, --cache-dir), the machine (--threads, --device,
// --cuda-graph), how long it goes on (--max-iters, --max-epochs: a resume extends them), where
// it starts (--init-from, --init-weights, --overwrite, --eval-only), and what the model file
// itself holds (--vocab and the shape: its own metadata, checked against the command line).
#define AT(field) offsetof(sk_train_options, field)
#define BIG ((double)(INT64_MAX / 2))

static const cli_option train_opts[] = {
    {"Data:", "data", "FILE", CLI_STR, AT(data_path), 0, 0, 0, 0, NULL,
     "training text, UTF-8 unless --vocab bytes (default: tinyshakespeare.txt, found from the\n"
     "program's directory: ../share/shakespeare/ installed, ../data/ in the source tree)", NULL, "data", 0, 1},
    {NULL, "vocab", "utf8|bytes", CLI_KIND, AT(vocab_mode), 0, 0, 0, 0, &kind_vocab,
     "symbols: Unicode code points, or byte values (any file trains);\n"
     "a resumed run keeps the checkpoint's", NULL, NULL, SK_SET_VOCAB, 0},
    {NULL, "cache-dir", "DIR", CLI_STR, AT(cache_dir), 0, 0, 0, 0, NULL,
     "where the data's token cache lives, tokenized once and\n"
     "memory-mapped by later runs", "shakespeare-cache beside --out-dir", NULL, 0, 1},
    {NULL, "train-frac", "F", CLI_DOUBLE, AT(train_frac), 0, 1, 1, 0, NULL,
     "leading fraction used for training", NULL, "train_frac", 0, 0},
    {NULL, "val-frac", "F", CLI_DOUBLE, AT(val_frac), 0, 1, 0, 1, NULL,
     "next fraction used for validation; the rest is test", NULL, "val_frac", 0, 0},
    {"Model:", "embed-size", "N", CLI_INT, AT(model.embed_size), 1, 65536, 0, 0, NULL,
     "embedding width E", NULL, NULL, SK_SET_EMBED, 0},
    {NULL, "hidden-size", "N", CLI_INT, AT(model.hidden_size), 1, 65536, 0, 0, NULL,
     "LSTM width H", NULL, NULL, SK_SET_HIDDEN, 0},
    {NULL, "num-layers", "N", CLI_INT, AT(model.num_layers), 1, 64, 0, 0, NULL,
     "LSTM layers L", NULL, NULL, SK_SET_LAYERS, 0},
    {NULL, "dropout", "P", CLI_FLOAT, AT(model.dropout), 0, 1, 0, 1, NULL,
     "dropout between layers and before the output layer, in [0, 1)", NULL, "dropout", SK_SET_DROPOUT, 0},
    {NULL, "weight-drop", "P", CLI_FLOAT, AT(model.weight_drop), 0, 1, 0, 1, NULL,
     "DropConnect on the recurrent weights W_hh (AWD-LSTM's weight drop): each\n"
     "training step drops a fraction P of them, in [0, 1)", NULL, "weight_drop", SK_SET_WEIGHT_DROP, 0},
    {NULL, "init", "uniform|pytorch", CLI_KIND, AT(init), 0, 0, 0, 0, &kind_init,
     "initialization: U(+-init-scale) as char-rnn, or PyTorch's defaults", NULL, "init", 0, 0},
    {NULL, "init-scale", "A", CLI_FLOAT, AT(init_scale), 0, 100, 1, 0, NULL,
     "the uniform initialization's bound", NULL, "init_scale", 0, 0},
    {NULL, "forget-bias", "F", CLI_FLOAT, AT(forget_bias), -100, 100, 0, 0, NULL,
     "added to the forget-gate bias at initialization", NULL, "forget_bias", 0, 0},
    {"Batching:", "batch-size", "N", CLI_INT, AT(batch_size), 1, 1 << 20, 0, 0, NULL,
     "parallel streams B", NULL, "batch_size", 0, 0},
    {NULL, "seq-length", "N", CLI_INT, AT(seq_len), 1, 1 << 20, 0, 0, NULL,
     "window length T for truncated back-propagation", NULL, "seq_length", 0, 0},
    {"Optimization (Adam):", "lr", "F", CLI_FLOAT, AT(lr.lr), 0, 10, 1, 0, NULL,
     "learning rate", NULL, "lr", 0, 0},
    {NULL, "lr-schedule", "S", CLI_KIND, AT(lr.kind), 0, 0, 0, 0, &kind_lr_schedule,
     "constant | step (char-rnn: x lr-decay per epoch after lr-decay-after epochs)\n"
     "| cosine (to min-lr at the run's end: max-iters or max-epochs)", NULL, "lr_schedule", 0, 0},
    {NULL, "warmup-iters", "N", CLI_I64, AT(lr.warmup_iters), 0, BIG, 0, 0, NULL,
     "linear warm-up steps, any schedule", NULL, "warmup_iters", 0, 0},
    {NULL, "min-lr", "F", CLI_FLOAT, AT(lr.min_lr), 0, 10, 0, 0, NULL, "cosine floor", NULL, "min_lr", 0, 0},
    {NULL, "lr-decay", "F", CLI_FLOAT, AT(lr.decay), 0, 1, 1, 0, NULL,
     "step decay factor per epoch", NULL, "lr_decay", 0, 0},
    {NULL, "lr-decay-after", "N", CLI_INT, AT(lr.decay_after), 0, 1 << 30, 0, 0, NULL,
     "epochs before step decay starts", NULL, "lr_decay_after", 0, 0},
    {NULL, "beta1", "F", CLI_DOUBLE, AT(adam.beta1), 0, 1, 0, 1, NULL, "", NULL, "beta1", 0, 0},
    {NULL, "beta2", "F", CLI_DOUBLE, AT(adam.beta2), 0, 1, 0, 1, NULL, "", NULL, "beta2", 0, 0},
    // eps: FLT_MIN, as a smaller one is 0 in single precision
    {NULL, "eps", "F", CLI_DOUBLE, AT(adam.eps), FLT_MIN, 1, 0, 0, NULL, "", NULL, "eps", 0, 0},
    {NULL, "weight-decay", "F", CLI_DOUBLE, AT(adam.weight_decay), 0, 1, 0, 0, NULL,
     "decoupled weight decay on weight matrices", NULL, "weight_decay", 0, 0},
    {NULL, "grad-clip", "F", CLI_DOUBLE, AT(adam.grad_clip), 0, 1e30, 0, 0, NULL,
     "clip the global gradient norm to F; 0 disables", NULL, "grad_clip", 0, 0},
    {"Length:", "max-epochs", "N", CLI_INT, AT(max_epochs), 0, 1 << 30, 0, 0, NULL,
     "stop after N epochs; 0 = no limit", NULL, NULL, 0, 0},
    {NULL, "max-iters", "N", CLI_I64, AT(max_iters), 0, BIG, 0, 0, NULL,
     "stop after N optimizer steps in total; 0 = no limit", NULL, NULL, 0, 0},
    {"Evaluation, checkpoints, logs:", "out-dir", "DIR", CLI_STR, AT(out_dir), 0, 0, 0, 0, NULL,
     "checkpoints (last.*, best.*) and metrics.jsonl (default: out);\n"
     "one run at a time; a fresh run, or one --init-from another directory,\n"
     "refuses a DIR holding a checkpoint", NULL, NULL, 0, 1},
    {NULL, "eval-every", "N", CLI_I64, AT(eval_every), 0, BIG, 0, 0, NULL,
     "validation every N steps and at the end; 0 = only at the end", NULL, "eval_every", 0, 0},
    {NULL, "eval-tokens", "N", CLI_I64, AT(eval_tokens), 0, BIG, 0, 0, NULL,
     "validate on the first ceil(N/B) positions of each of the B streams of\n"
     "the validation (and test) split; 0 = the whole split", NULL, "eval_tokens", 0, 0},
    {NULL, "checkpoint-every", "N", CLI_I64, AT(checkpoint_every), 0, BIG, 0, 0, NULL,
     "write last.* every N steps and at the end; 0 = only at the end", NULL, "checkpoint_every", 0, 0},
    {NULL, "keep-checkpoints", "N|all", CLI_KIND, AT(keep_checkpoints), 0, 0, 0, 0, &kind_keep,
     "also write epoch-NNNN.* at each epoch's end, keeping the last N of them\n"
     "(or all); 0 = none", NULL, "keep_checkpoints", 0, 0},
    {NULL, "sample-every", "N", CLI_I64, AT(sample_every), 0, BIG, 0, 0, NULL,
     "print a sample every N steps; 0 = never", NULL, "sample_every", 0, 0},
    {NULL, "sample-length", "N", CLI_INT, AT(sample_length), 1, 1 << 20, 0, 0, NULL,
     "characters per printed sample", NULL, "sample_length", 0, 0},
    {NULL, "log-every", "N", CLI_I64, AT(log_every), 1, BIG, 0, 0, NULL,
     "steps between progress lines and metrics records", NULL, "log_every", 0, 0},
    {NULL, "log", "FILE", CLI_STR, AT(log_path), 0, 0, 0, 0, NULL,
     "JSON Lines metrics log, one run at a time", "OUT_DIR/metrics.jsonl", NULL, 0, 1},
    {NULL, "init-from", "CKPT", CLI_STR, AT(init_from), 0, 0, 0, 0, NULL,
     "resume from a checkpoint (model, optimizer, data position, RNG), with the\n"
     "options it records (--data, --lr, ...) unless named here\n", "none, a fresh start", NULL, 0, 0},
    {NULL, "init-weights", "FILE", CLI_STR, AT(init_weights), 0, 0, 0, 0, NULL,
     "start a new run from a model file's weights (fine-tuning; a file from\n"
     "PyTorch's save_checkpoint), with a fresh optimizer", NULL, NULL, 0, 0},
    {NULL, "overwrite", NULL, CLI_FLAG, AT(overwrite), 0, 0, 0, 0, NULL,
     "let a fresh run (or one --init-from another directory) replace the run in\n"
     "--out-dir; the old files go when the new run writes its first checkpoint,\n"
     "not before", NULL, NULL, 0, 0},
    {NULL, "eval-only", NULL, CLI_FLAG, AT(eval_only), 0, 0, 0, 0, NULL,
     "with --init-from: print the validation loss and exit", NULL, NULL, 0, 0},
    {"Runtime:", "seed", "N", CLI_U64, AT(seed), 0, 0, 0, 0, NULL,
     "seed for initialization, dropout and samples", NULL, "seed", SK_SET_SEED, 0},
    {NULL, "threads", "N", CLI_INT, AT(threads), 0, 1024, 0, 0, NULL, "CPU threads; 0 = all cores", NULL, NULL, 0, 1},
    {NULL, "device", "D", CLI_KIND, AT(device), 0, 0, 0, 0, &cli_kind_device, "auto | cpu | cuda | cuda:N", NULL, NULL, 0, 0},
    // The record holds the implementation that ran (auto's choice), which a resume takes again.
    {NULL, "rnn-impl", "I", CLI_KIND, AT(rnn_impl), 0, 0, 0, 0, &cli_kind_rnn_impl,
     "the CUDA LSTM implementation: auto (the fastest that fits, measured at the\n"
     "start of a run and cached; a resume keeps the checkpoint's) | cudnn |\n"
     "cudnn-persist (cuDNN's persistent algorithms) | persistent (our kernels,\n"
     "wavefront) | persistent-layerwise (layer after layer) | persistent-cluster\n"
     "(layer after layer, thread-block clusters); the CPU takes only auto", NULL, "rnn_impl", 0, 0},
    {NULL, "cuda-graph", "G", CLI_KIND, AT(cuda_graph), 0, 0, 0, 0, &kind_cuda_graph,
     "replay each CUDA training step as one captured graph: on (a failed capture\n"
     "is an error) | try (a failed capture: eager from there, with a notice) |\n"
     "auto (= try) | off; graphs are for one process; the CPU runs eagerly and\n"
     "refuses on", NULL, NULL, 0, 0},
    // The record holds the precision computed in: the trainer records its options after the
    // backend resolved auto (tf32 on CUDA, fp32 on the CPU).
    {NULL, "precision", "P", CLI_KIND, AT(precision), 0, 0, 0, 0, &cli_kind_precision,
     "the arithmetic: auto (tf32 on CUDA, as PyTorch's cuDNN RNNs; fp32 on the\n"
     "CPU) | fp32 (strict fp32) | tf32 (TF32 tensor cores: 10-bit mantissa\n"
     "operands, fp32 accumulation) | bf16 (bf16 LSTM operands, fp32\n"
     "accumulation, cell state and master weights); the CPU takes only fp32\n", NULL, "precision", 0, 0},
    {NULL, "tensor-cores", "T", CLI_KIND, AT(tensor_cores), 0, 0, 0, 0, &kind_tensor_cores,
     "the persistent LSTM kernel's inner products: auto (tensor cores for tf32\n"
     "and bf16) | on | off (CUDA cores); others ignore it", NULL, "tensor_cores", 0, 0},
    // Hidden, for benchmarks (docs/gpu.md): the cuDNN wavefront's chunk length in steps.
    {NULL, "cudnn-chunk-steps", "N", CLI_INT, AT(cudnn_chunk_steps), -1, 1 << 20, 0, 0, NULL, NULL, NULL, NULL, 0,
     0},
    {NULL, "help", NULL, CLI_ACTION, 0, 0, 0, 0, 0, NULL, "", NULL, NULL, 0, 0},
    {NULL, "version", NULL, CLI_ACTION, 0, 0, 0, 0, 0, NULL, "", NULL, NULL, 0, 0},
};

const cli_program cli_train_program = {
    "shakespeare-train",
    "Usage: shakespeare-train [OPTIONS]\n"
    "Trains a character-level LSTM language model (embedding -> LSTM stack -> linear -> softmax).\n\n",
    train_opts, sizeof train_opts / sizeof train_opts[0], offsetof(sk_train_options, model_set)};

char *cli_train_options_json(const sk_train_options *o) { return cli_options_json(&cli_train_program, o); }

char *cli_train_options_identity(const sk_train_options *o) { return cli_options_identity(&cli_train_program, o); }
