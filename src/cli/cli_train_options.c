// cli_train_options.c: the table of shakespeare-train's options (cli_options.h): each flag, the
// field of sk_train_options it sets, its range or choices, help text and options-record key.
#include "cli_train_options.h"

#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli_args.h"
#include "cli_backend_options.h"
#include "cli_kinds.h"

// --cell: a name of cell.h's table.
static sk_status cell_parse(const char *s, sk_cell_kind *out, sk_error *err) {
    const sk_cell *c = sk_cell_by_name(s);
    if (!c) return sk_fail(err, SK_ERR_ARG, "--cell expects %s, got \"%s\"", sk_cell_names(), s);
    *out = c->kind;
    return SK_OK;
}
static const char *cell_name(sk_cell_kind k) { return sk_cell_get(k)->name; }
static const char *cell_word_at(int i, const char **help) {
    if (i >= SK_CELL_COUNT) return NULL;
    const sk_cell *c = sk_cell_get((sk_cell_kind)i);
    *help = c->equations;
    return c->name;
}
// Each row's phrase and its default --lr (the row's default_lr).
static const char *optimizer_word_at(int i, const char **help) {
    static char phrase[SK_OPTIM_COUNT][256];
    const sk_optim_info *o = sk_optim_of((sk_optim_kind)i);
    if (!o) return NULL;
    snprintf(phrase[i], sizeof phrase[i], "%s; --lr %g by default", o->help, (double)o->default_lr);
    *help = phrase[i];
    return o->name;
}

WORDS_KIND(kind_vocab, sk_vocab_mode, sk_vocab_mode_words)
WORDS_KIND(kind_init, sk_init_scheme, sk_init_scheme_words)
ENUM_KIND(kind_cell, sk_cell_kind, cell_parse, cell_name, cell_word_at)
WORDS_KIND(kind_lr_schedule, sk_lr_kind, sk_lr_kind_words)
ENUM_KIND(kind_optimizer, sk_optim_kind, sk_optim_kind_parse, sk_optim_kind_name, optimizer_word_at)

// An int in [0, hi], or a word that stands for -1.
static sk_status int_or_word_parse(const char *word, long hi, const char *flag, const char *s, void *field,
                                   sk_error *err) {
    if (strcmp(s, word) == 0) return *(int *)field = -1, SK_OK;
    return cli_parse_int(flag, s, 0, hi, field, err);
}
static const char *int_or_word_name(const char *word, const void *field, char *buf, size_t n) {
    if (*(const int *)field < 0) return word;
    snprintf(buf, n, "%d", *(const int *)field);
    return buf;
}
#define INT_OR_WORD_KIND(kind, word, hi)                                                                \
    static sk_status kind##_parse(const char *flag, const char *s, void *field, sk_error *err) {        \
        return int_or_word_parse(word, hi, flag, s, field, err);                                        \
    }                                                                                                   \
    static const char *kind##_name(const void *field, char *buf, size_t n) {                            \
        return int_or_word_name(word, field, buf, n);                                                   \
    }                                                                                                   \
    static const cli_kind kind = {.parse = kind##_parse, .name = kind##_name, .quoted = 1};

INT_OR_WORD_KIND(kind_keep, "all", 1000000)       // --keep-checkpoints N|all
INT_OR_WORD_KIND(kind_decay_after, "auto", 1 << 30) // --lr-decay-after N|auto: the trainer derives auto

// An entry with a JSON key is in the checkpoint's options record, and a resume (--init-from,
// --eval-only) takes its recorded value unless the command line names it (cli_options_inherit).
// The entries without a key belong to each run, not to the model's training: where this run
// writes and reads its files (--out-dir, --log, --cache-dir), the machine (--threads, --device,
// --cuda-graph), where it starts (--init-from, --init-weights, --overwrite, --eval-only), and what the model file
// itself holds (--vocab and the shape: its own metadata, checked against the command line).
#define AT(field) offsetof(sk_train_options, field)
#define BIG ((double)(INT64_MAX / 2))

static const cli_option train_opts[] = {
    {.section = "Data:", .name = "data", .arg = "FILE", .type = CLI_STR, .offset = AT(data_path),
     .help = "training text, UTF-8 unless --vocab bytes (default: tinyshakespeare.txt, found from the\n"
             "program's directory: ../share/shakespeare/ installed, ../data/ in the source tree)", .json = "data",
     .per_rank = 1},
    {.name = "vocab", .arg = "utf8|bytes", .type = CLI_KIND, .offset = AT(vocab_mode), .kind = &kind_vocab,
     .help = "symbols: Unicode code points, or byte values (any file trains);\n"
             "a resumed run keeps the checkpoint's", .set_bit = SK_SET_VOCAB},
    {.name = "cache-dir", .arg = "DIR", .type = CLI_STR, .offset = AT(cache_dir),
     .help = "where the data's token cache lives, tokenized once and\n"
             "memory-mapped by later runs\n", .per_rank = 1,
     .default_text = "$XDG_CACHE_HOME/shakespeare or ~/.cache/shakespeare, else in --out-dir"},
    {.name = "train-frac", .arg = "F", .type = CLI_DOUBLE, .offset = AT(train_frac), .hi = 1, .lo_open = 1,
     .help = "leading fraction used for training", .json = "train_frac"},
    {.name = "val-frac", .arg = "F", .type = CLI_DOUBLE, .offset = AT(val_frac), .hi = 1, .hi_open = 1,
     .help = "next fraction used for validation; the rest is test", .json = "val_frac"},
    {.section = "Model:", .name = "cell", .arg = "C", .type = CLI_KIND, .offset = AT(model.cell),
     .kind = &kind_cell, .help = "the recurrent cell; a resumed or fine-tuned model keeps its own", .set_bit = SK_SET_CELL},
    {.name = "embed-size", .arg = "N", .type = CLI_INT, .offset = AT(model.embed_size), .lo = 1,
     .hi = 65536, .help = "embedding width E", .set_bit = SK_SET_EMBED},
    {.name = "hidden-size", .arg = "N", .type = CLI_INT, .offset = AT(model.hidden_size), .lo = 1, .hi = 65536,
     .help = "hidden width H of every layer", .set_bit = SK_SET_HIDDEN},
    {.name = "num-layers", .arg = "N", .type = CLI_INT, .offset = AT(model.num_layers), .lo = 1, .hi = 64,
     .help = "recurrent layers L", .set_bit = SK_SET_LAYERS},
    {.name = "dropout", .arg = "P", .type = CLI_FLOAT, .offset = AT(model.dropout), .hi = 1, .hi_open = 1,
     .help = "dropout between layers and before the output layer, in [0, 1)", .json = "dropout",
     .set_bit = SK_SET_DROPOUT},
    {.name = "weight-drop", .arg = "P", .type = CLI_FLOAT, .offset = AT(model.weight_drop), .hi = 1, .hi_open = 1,
     .help = "DropConnect on the recurrent weights W_hh (AWD-LSTM's weight drop): each\n"
             "training step drops a fraction P of them, in [0, 1)", .json = "weight_drop",
     .set_bit = SK_SET_WEIGHT_DROP},
    {.name = "init", .arg = "uniform|pytorch", .type = CLI_KIND, .offset = AT(init), .kind = &kind_init,
     .help = "initialization: U(+-init-scale) as char-rnn, or PyTorch's defaults", .json = "init"},
    {.name = "init-scale", .arg = "A", .type = CLI_FLOAT, .offset = AT(init_scale), .hi = 100, .lo_open = 1,
     .help = "the uniform initialization's bound", .json = "init_scale"},
    {.name = "forget-bias", .arg = "F", .type = CLI_FLOAT, .offset = AT(forget_bias), .lo = -100, .hi = 100,
     .help = "added to the forget-gate bias at initialization (lstm: the others have no forget gate)",
     .json = "forget_bias"},
    {.section = "Batching:", .name = "batch-size", .arg = "N", .type = CLI_INT, .offset = AT(batch_size), .lo = 1,
     .hi = 1 << 20, .help = "parallel streams B", .json = "batch_size"},
    {.name = "seq-length", .arg = "N", .type = CLI_INT, .offset = AT(seq_len), .lo = 1, .hi = 1 << 20,
     .help = "window length T for truncated back-propagation", .json = "seq_length"},
    // The record holds the optimizer, which a resume keeps (its state file's slots are that one's).
    {.section = "Optimization:", .name = "optimizer", .arg = "O", .type = CLI_KIND, .offset = AT(optim.kind),
     .kind = &kind_optimizer, .help = "the optimizer; a resume keeps the checkpoint's", .json = "optimizer"},
    {.name = "lr", .arg = "F", .type = CLI_FLOAT, .offset = AT(lr.lr), .hi = 10,
     .lo_open = 1, .help = "learning rate", .json = "lr",
     .default_text = "the optimizer's, named under --optimizer"},
    {.name = "lr-schedule", .arg = "S", .type = CLI_KIND, .offset = AT(lr.kind), .kind = &kind_lr_schedule,
     .help = "constant | step (char-rnn: x lr-decay per epoch after lr-decay-after epochs)\n"
             "| cosine (to min-lr at cosine-iters, by default the run's end)", .json = "lr_schedule"},
    {.name = "warmup-iters", .arg = "N", .type = CLI_I64, .offset = AT(lr.warmup_iters), .hi = BIG,
     .help = "linear warm-up steps, any schedule", .json = "warmup_iters"},
    {.name = "min-lr", .arg = "F", .type = CLI_FLOAT, .offset = AT(lr.min_lr), .hi = 10, .help = "cosine floor",
     .json = "min_lr"},
    {.name = "cosine-iters", .arg = "N", .type = CLI_I64, .offset = AT(lr.max_iters), .hi = BIG,
     .help = "the cosine schedule's last step (nanoGPT's lr_decay_iters); 0 = the run's\n"
             "end, recorded as such: a resume to a later end keeps the schedule and\n"
             "runs on at min-lr unless this is named", .json = "cosine_iters"},
    {.name = "lr-decay", .arg = "F", .type = CLI_FLOAT, .offset = AT(lr.decay), .hi = 1, .lo_open = 1,
     .help = "step decay factor per epoch", .json = "lr_decay"},
    {.name = "lr-decay-after", .arg = "N|auto", .type = CLI_KIND, .offset = AT(lr.decay_after),
     .kind = &kind_decay_after, .help = "epochs before step decay starts; auto = a fifth of the run's epochs\n"
             "(char-rnn's 10 of 50), so that a step schedule decays in any run of 2\n"
             "epochs or more", .json = "lr_decay_after"},
    {.name = "beta1", .arg = "F", .type = CLI_DOUBLE, .offset = AT(optim.beta1), .hi = 1, .hi_open = 1,
     .help = "adam: the first moment's decay rate", .json = "beta1"},
    {.name = "beta2", .arg = "F", .type = CLI_DOUBLE, .offset = AT(optim.beta2), .hi = 1, .hi_open = 1,
     .help = "adam: the second moment's decay rate", .json = "beta2"},
    {.name = "alpha", .arg = "F", .type = CLI_DOUBLE, .offset = AT(optim.alpha), .hi = 1, .hi_open = 1,
     .help = "rmsprop: the squared gradients' average's decay rate (char-rnn's\n"
             "decay_rate 0.95)", .json = "alpha"},
    {.name = "momentum", .arg = "F", .type = CLI_DOUBLE, .offset = AT(optim.momentum), .hi = 1, .hi_open = 1,
     .help = "rmsprop, sgd: momentum; 0 = none", .json = "momentum"},
    {.name = "nesterov", .type = CLI_FLAG, .offset = AT(optim.nesterov),
     .help = "sgd: Nesterov's momentum (needs --momentum above 0)", .json = "nesterov"},
    // eps: FLT_MIN, as a smaller one is 0 in single precision
    {.name = "eps", .arg = "F", .type = CLI_DOUBLE, .offset = AT(optim.eps), .lo = FLT_MIN, .hi = 1,
     .help = "adam, rmsprop: added to the denominator's square root", .json = "eps"},
    {.name = "weight-decay", .arg = "F", .type = CLI_DOUBLE, .offset = AT(optim.weight_decay), .hi = 1,
     .help = "weight decay on weight matrices: decoupled for adam (AdamW), an L2\n"
             "term in the gradient for rmsprop and sgd (as torch.optim's)", .json = "weight_decay"},
    {.name = "grad-clip", .arg = "F", .type = CLI_DOUBLE, .offset = AT(optim.grad_clip), .hi = 1e30,
     .help = "clip the global gradient norm to F; 0 disables", .json = "grad_clip"},
    // The run's end: a limit named alone (above 0) is the only one (the other's default does not
    // cap it); both are recorded, and a resume keeps them unless one is named.
    {.section = "Length:", .name = "max-epochs", .arg = "N", .type = CLI_INT, .offset = AT(max_epochs), .hi = 1 << 30,
     .help = "stop after N epochs; 0 = no limit; above 0 and named alone, the only\n"
             "limit; a resume keeps its run's limits unless one is named", .json = "max_epochs",
     .set_bit = SK_SET_MAX_EPOCHS},
    {.name = "max-iters", .arg = "N", .type = CLI_I64, .offset = AT(max_iters), .hi = BIG,
     .help = "stop after N optimizer steps in total; 0 = no limit; above 0 and\n"
             "named alone, the only limit (the default --max-epochs does not cap it)", .json = "max_iters",
     .set_bit = SK_SET_MAX_ITERS},
    {.section = "Evaluation, checkpoints, logs:", .name = "out-dir", .arg = "DIR", .type = CLI_STR,
     .offset = AT(out_dir), .help = "checkpoints (last.*, best.*) and metrics.jsonl (default: out);\n"
             "one run at a time; a fresh run, or one --init-from another directory,\n"
             "refuses a DIR holding a checkpoint", .per_rank = 1},
    {.name = "eval-every", .arg = "N", .type = CLI_I64, .offset = AT(eval_every), .hi = BIG,
     .help = "validation every N steps and at the end; 0 = only at the end", .json = "eval_every"},
    {.name = "eval-tokens", .arg = "N", .type = CLI_I64, .offset = AT(eval_tokens), .hi = BIG,
     .help = "validate on the first ceil(N/B) positions of each of the B streams of\n"
             "the validation (and test) split; 0 = the whole split", .json = "eval_tokens"},
    {.name = "checkpoint-every", .arg = "N", .type = CLI_I64, .offset = AT(checkpoint_every), .hi = BIG,
     .help = "write last.* every N steps and at the end; 0 = only at the end", .json = "checkpoint_every"},
    {.name = "keep-checkpoints", .arg = "N|all", .type = CLI_KIND, .offset = AT(keep_checkpoints), .kind = &kind_keep,
     .help = "also write epoch-NNNN-valL.LLLL.* at each epoch's end, named with its\n"
             "validation loss (epoch-NNNN.* without a validation split), keeping\n"
             "the last N of them (or all); 0 = none", .json = "keep_checkpoints"},
    {.name = "sample-every", .arg = "N", .type = CLI_I64, .offset = AT(sample_every), .hi = BIG,
     .help = "print a sample every N steps; 0 = never", .json = "sample_every"},
    {.name = "sample-length", .arg = "N", .type = CLI_INT, .offset = AT(sample_length), .lo = 1, .hi = 1 << 20,
     .help = "characters per printed sample", .json = "sample_length"},
    {.name = "log-every", .arg = "N", .type = CLI_I64, .offset = AT(log_every), .lo = 1, .hi = BIG,
     .help = "steps between progress lines and metrics records", .json = "log_every"},
    {.name = "log", .arg = "FILE", .type = CLI_STR, .offset = AT(log_path),
     .help = "JSON Lines metrics log, one run at a time", .default_text = "OUT_DIR/metrics.jsonl", .per_rank = 1},
    {.name = "init-from", .arg = "CKPT|DIR", .type = CLI_STR, .offset = AT(init_from),
     .help = "resume from a checkpoint (model, optimizer, data position, RNG), with the\n"
             "options it records (--data, --lr, --max-iters, ...) unless named here; a\n"
             "run's directory DIR means DIR/last.safetensors and --out-dir DIR\n",
     .default_text = "none, a fresh start"},
    {.name = "init-weights", .arg = "FILE", .type = CLI_STR, .offset = AT(init_weights),
     .help = "start a new run from a model file's weights (fine-tuning; a file from\n"
             "PyTorch's save_checkpoint), with a fresh optimizer"},
    {.name = "overwrite", .type = CLI_FLAG, .offset = AT(overwrite),
     .help = "let a fresh run (or one --init-from another directory) replace the run in\n"
             "--out-dir; the old files go when the new run writes its first checkpoint,\n"
             "not before"},
    {.name = "eval-only", .type = CLI_FLAG, .offset = AT(eval_only),
     .help = "with --init-from: print the validation loss and exit"},
    {.section = "Runtime:", .name = "seed", .arg = "N", .type = CLI_U64, .offset = AT(seed),
     .help = "seed for initialization, dropout and samples", .json = "seed", .set_bit = SK_SET_SEED},
    CLI_BACKEND_OPTIONS(CLI_ROW, CLI_ROW, CLI_NO_ROW, AT)
    {.name = "help", .type = CLI_ACTION, .help = ""},
    {.name = "version", .type = CLI_ACTION, .help = ""},
};

const cli_program cli_train_program = {
    "shakespeare-train",
    "Usage: shakespeare-train [OPTIONS]\n"
    "Trains a character-level LSTM language model (embedding -> LSTM stack -> linear -> softmax).\n\n",
    train_opts, sizeof train_opts / sizeof train_opts[0], offsetof(sk_train_options, model_set)};

char *cli_train_options_json(const sk_train_options *o) { return cli_options_json(&cli_train_program, o); }

char *cli_train_options_identity(const sk_train_options *o) { return cli_options_identity(&cli_train_program, o); }

int cli_train_take_resolved(sk_train_options *o, const sk_backend_config *from, char *took, size_t n) {
    return cli_options_take_resolved(&cli_train_program, o, offsetof(sk_train_options, backend), sizeof *from, from,
                                     took, n);
}
