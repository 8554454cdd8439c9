// trainer_setup.c: a training run's setup and teardown (see trainer.h): the options and
// their checks, the out-dir's claim, the data (token cache, splits, batchers), the
// checkpoint a run resumes from, the backend, and the agreement of every rank on all of it.
// The loop itself is in trainer.c; both share trainer_internal.h.
// defines: sk_train_options_default, sk_trainer_init, sk_trainer_free, sk_trainer_failed_alone
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distributed/shard.h"
#include "io/fsutil.h"
#include "trainer_internal.h"

// Lines for the user (separated by '\n'), from rank 0 only (the others would repeat them).
static void notice(sk_trainer *t, const char *lines) {
    if (t->rank != 0 || !t->cb.on_notice) return;
    char line[SK_ERROR_MSG_MAX];
    for (const char *p = lines; *p;) {
        size_t n = strcspn(p, "\n");
        snprintf(line, sizeof line, "%.*s", (int)n, p);
        if (n) t->cb.on_notice(t->cb.ctx, line);
        p += n + (p[n] == '\n');
    }
}

void sk_train_options_default(sk_train_options *o) {
    memset(o, 0, sizeof *o);
    o->data_path = "data/tinyshakespeare.txt";
    o->train_frac = 0.9, o->val_frac = 0.1;
    // Dropout 0.2 (without it this model overfits within 10 epochs) and 9 epochs (so that the
    // dropout's cost leaves the run no longer): docs/benchmarks.md, scripts/sweep_defaults.sh.
    o->model = (sk_model_config){.embed_size = 128, .hidden_size = 256, .num_layers = 2, .dropout = 0.2f};
    o->init = SK_INIT_PYTORCH, o->init_scale = 0.08f, o->forget_bias = 0.0f; // bench/results/cpu-defaults-*
    o->batch_size = 32, o->seq_len = 100;
    // lr 0: the optimizer's default (optim.h's table), resolved once a resume's record is taken.
    o->lr = (sk_lr_schedule){.kind = SK_LR_CONSTANT, .lr = 0.0f, .min_lr = 1e-4f, .decay = 0.97f, .decay_after = -1};
    o->optim = (sk_optim_hparams){.kind = SK_OPTIM_ADAM, .beta1 = 0.9, .beta2 = 0.999, .alpha = 0.99, .momentum = 0.0,
                                  .eps = 1e-8, .weight_decay = 0.0, .grad_clip = 5.0}; // torch.optim's defaults
    o->max_iters = 0, o->max_epochs = 9;
    o->eval_every = 500, o->checkpoint_every = 500, o->sample_every = 0, o->sample_length = 200;
    o->log_every = 10;
    o->out_dir = "out";
    o->seed = 1337;
    o->device = "auto";
    o->backend.precision = SK_PRECISION_AUTO; // tf32 on CUDA, fp32 on the CPU (backend.h)
}

// The precision the backend computes in and the LSTM implementation it runs become the run's:
// auto resolves per device (backend.h), and the options record names the result, so that a
// resume compares like with like and runs the same implementation.
static sk_status record_options(sk_trainer *t, sk_error *err) {
    if (t->o.take_resolved) t->o.take_resolved(&t->o, sk_backend_cfg(t->be), NULL, 0);
    if (!t->o.options_json) return SK_OK;
    if (!(t->train_config = t->o.options_json(&t->o)))
        return sk_fail(err, SK_ERR_NOMEM, "out of memory for the training options");
    return SK_OK;
}

static sk_status check_ranks(sk_trainer *t, sk_error *err) {
    sk_rank_identity id;
    memset(&id, 0, sizeof id);
    if (t->nranks == 1) return SK_OK; // nothing to compare (and no pass over a large corpus)
    const sk_tokens *ids = &t->cache.ids;
    id.n_chars = ids->n;
    id.data_crc = sk_crc32(0, ids->data, (size_t)ids->width * ids->n);
    id.vocab_size = t->cache.vocab.size;
    id.vocab_crc = sk_crc32(0, t->cache.vocab.chars, sizeof t->cache.vocab.chars[0] * (size_t)t->cache.vocab.size);
    snprintf(id.data_path, sizeof id.data_path, "%s", t->o.data_path);
    char *(*identity)(const sk_train_options *) = t->o.options_identity ? t->o.options_identity : t->o.options_json;
    char *mine = identity ? identity(&t->o) : NULL;
    if (identity && !mine) return sk_fail(err, SK_ERR_NOMEM, "out of memory for the options identity");
    if (mine && strlen(mine) >= sizeof id.options) {
        free(mine);
        return sk_fail(err, SK_ERR_ARG, "the options identity is longer than %zu bytes", sizeof id.options - 1);
    }
    snprintf(id.options, sizeof id.options, "%s", mine ? mine : "");
    free(mine);
    return sk_shard_check_ranks(t->comm, &id, err);
}

// The device of this rank: with several ranks, "auto" and "cuda" mean cuda:local_rank, or
// cuda:0 where the process sees one GPU only (a scheduler's GPU per task, or a
// CUDA_VISIBLE_DEVICES of its own). Where that leaves ranks on one GPU or on different
// backends, check_devices says so.
static const char *rank_device(const sk_trainer *t, char *buf, size_t n) {
    const char *d = t->o.device;
    if (t->nranks > 1 && (strcmp(d, "cuda") == 0 || strcmp(d, "auto") == 0)) {
        char reason[256];
        const int index = sk_cuda_device_count() == 1 ? 0 : sk_comm_local_rank(t->comm);
        if (strcmp(d, "cuda") == 0 || sk_cuda_available(index, reason, sizeof reason)) {
            snprintf(buf, n, "cuda:%d", index);
            return buf;
        }
    }
    return d;
}

// Collective: every rank on the same backend, no two on one GPU.
static sk_status check_devices(sk_trainer *t, sk_error *err) {
    if (t->nranks == 1) return SK_OK;
    sk_rank_device mine;
    memset(&mine, 0, sizeof mine);
    snprintf(mine.backend, sizeof mine.backend, "%s", sk_backend_name(t->be));
    snprintf(mine.device, sizeof mine.device, "%s", sk_backend_device(t->be));
    snprintf(mine.uuid, sizeof mine.uuid, "%s", sk_backend_device_uuid(t->be));
    return sk_shard_check_devices(t->comm, &mine, err);
}

// The options' own consistency: checked as given, and again with a checkpoint's recorded ones.
static sk_status check_options(const sk_train_options *o, sk_error *err) {
    if (o->batch_size < 1) return sk_fail(err, SK_ERR_ARG, "batch-size must be positive");
    if (o->seq_len < 1) return sk_fail(err, SK_ERR_ARG, "seq-length must be positive");
    if (o->eval_only && !o->init_from) return sk_fail(err, SK_ERR_ARG, "eval-only needs --init-from CHECKPOINT");
    if (o->init_from && o->init_weights)
        return sk_fail(err, SK_ERR_ARG, "init-from resumes a run and --init-weights starts a new one from a model's "
                                        "weights: give one of them");
    if (o->eval_only && o->overwrite)
        return sk_fail(err, SK_ERR_ARG, "overwrite replaces the run in --out-dir; it does not go with --eval-only, "
                                        "which writes nothing");
    if (o->max_iters == 0 && o->max_epochs == 0 && !o->eval_only)
        return sk_fail(err, SK_ERR_ARG, "max-iters 0 and --max-epochs 0 would train forever; set one of them");
    if (o->train_frac + o->val_frac > 1.0 + 1e-9)
        return sk_fail(err, SK_ERR_ARG, "train-frac + --val-frac must not exceed 1, got %g + %g", o->train_frac,
                       o->val_frac);
    if (o->lr.kind == SK_LR_COSINE && o->lr.lr > 0.0f && o->lr.min_lr > o->lr.lr) // 0: not yet resolved
        return sk_fail(err, SK_ERR_ARG, "min-lr (%g) must not exceed --lr (%g)", (double)o->lr.min_lr,
                       (double)o->lr.lr);
    return SK_OK;
}

// What the run's options ask of its ranks.
static sk_status check_ranks_options(const sk_trainer *t, sk_error *err) {
    const sk_train_options *o = &t->o;
    if (o->batch_size % t->nranks != 0)
        return sk_fail(err, SK_ERR_ARG, "batch-size %d is not divisible by the %d ranks; use a multiple of %d",
                       o->batch_size, t->nranks, t->nranks);
    if (t->data_parallel && o->backend.cuda_graph == SK_GRAPH_ON) {
        const int one = t->nranks == 1;
        return sk_fail(err, SK_ERR_ARG, "cuda-graph on is for one process; %d data-parallel rank%s all-reduce%s the "
                       "gradients between backward and the norm, and step%s eagerly (use --cuda-graph auto or off)",
                       t->nranks, one ? "" : "s", one ? "s" : "", one ? "s" : "");
    }
    return SK_OK;
}

// The model's vocabulary for the run: a model file's (a resume, fine-tuning), else the data's,
// else (a new --vocab bytes model) all 256 byte values. It holds every symbol of the data, which
// may use fewer of them; the data's ids then become the model's through t->id_map when read. A
// symbol the model lacks is refused, naming the first MAX_NAMED of them.
#define MAX_NAMED 10
static sk_status map_vocab(sk_trainer *t, const sk_vocab *model, const char *model_path, sk_error *err) {
    const sk_vocab *data = &t->cache.vocab;
    sk_status st = model || !data->bytes ? sk_vocab_copy(&t->vocab, model ? model : data, err)
                                         : sk_vocab_all_bytes(&t->vocab, err);
    if (st != SK_OK) return st;
    // A new model (fresh, or --init-weights) begins its texts after a newline; a resumed one keeps
    // its file's start (none for files written before it), so that it samples as it did.
    if (!t->o.init_from) t->vocab.start_newline = sk_vocab_index(&t->vocab, '\n') >= 0;
    if (sk_vocab_equal(data, &t->vocab)) return SK_OK;
    model = &t->vocab;
    uint32_t missing[MAX_NAMED];
    if (!(t->id_map = malloc(sizeof(int32_t) * (size_t)data->size))) return sk_fail(err, SK_ERR_NOMEM, "out of memory");
    const int n = sk_vocab_map(data, model, t->id_map, missing, MAX_NAMED);
    if (n == 0) return SK_OK;
    char list[MAX_NAMED * 32];
    sk_vocab_describe_list(missing, MAX_NAMED, n, model->bytes, list, sizeof list);
    if (model->bytes)
        return sk_fail(err, SK_ERR_MISMATCH, "%s has %d byte value%s that the model %s lacks: %s; this --vocab "
                       "bytes model, written before byte models took all 256 values, knows only the bytes of the "
                       "text it was trained on (a model trained now knows them all)", t->o.data_path, n,
                       n == 1 ? "" : "s", model_path, list);
    return sk_fail(err, SK_ERR_MISMATCH, "%s has %d symbol%s that the model %s lacks: %s; a model knows the symbols "
                   "it was trained on (train the next one with --vocab bytes to take any text)", t->o.data_path, n,
                   n == 1 ? "" : "s", model_path, list);
}

// A resumed model keeps its shape: an explicit shape option that disagrees is an error.
// (--dropout and --weight-drop are not part of the shape: given with --init-from, they replace
// the checkpoint's.)
static sk_status check_shape(const sk_train_options *o, const sk_model_config *ck, sk_error *err) {
    const struct { int bit; const char *setting; double want, have; } f[] = {
        {SK_SET_EMBED, "embed-size", o->model.embed_size, ck->embed_size},
        {SK_SET_HIDDEN, "hidden-size", o->model.hidden_size, ck->hidden_size},
        {SK_SET_LAYERS, "num-layers", o->model.num_layers, ck->num_layers},
    };
    const char *from = o->init_from ? o->init_from : o->init_weights;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if ((o->model_set & f[i].bit) && f[i].want != f[i].have)
            return sk_fail(err, SK_ERR_ARG, "%s %g differs from the checkpoint %s (%g); a resumed model keeps its shape",
                           f[i].setting, f[i].want, from, f[i].have);
    if ((o->model_set & SK_SET_CELL) && o->model.cell != ck->cell)
        return sk_fail(err, SK_ERR_ARG, "cell %s differs from the checkpoint %s (%s); a resumed or fine-tuned model "
                       "keeps its cell", sk_model_cell(&o->model)->name, from, sk_model_cell(ck)->name);
    return SK_OK;
}

static sk_status setup_splits(sk_trainer *t, sk_error *err) {
    const sk_train_options *o = &t->o;
    t->n_train = t->cache.n_train, t->n_val = t->cache.n_val, t->n_test = t->cache.n_test;
    const sk_tokens *all = &t->cache.ids;
    const uint8_t *base = all->data;
    sk_status st;
    if (!o->eval_only) {
        sk_tokens tr = {.data = base, .width = all->width, .n = t->n_train, .map = t->id_map};
        st = sk_batcher_init_tokens(&t->train, &tr, o->batch_size, o->seq_len, "training split", err);
        if (st != SK_OK) return st;
    }
    // Evaluation walks whole splits; a split shorter than one window uses shorter windows.
    struct { sk_batcher *b; size_t off, n; int *has; const char *name; } ev[2] = {
        {&t->val, t->n_train, t->n_val, &t->has_val, "validation split"},
        {&t->test, t->n_train + t->n_val, t->n_test, &t->has_test, "test split"},
    };
    for (int i = 0; i < 2; i++) {
        if (ev[i].n == 0) continue;
        size_t S = (ev[i].n - 1) / (size_t)o->batch_size;
        if (S < 1)
            return sk_fail(err, SK_ERR_ARG,
                           "%s has %zu characters, too short for %d streams (needs at least %d); lower "
                           "--batch-size or change the split fractions",
                           ev[i].name, ev[i].n, o->batch_size, o->batch_size + 1);
        int T = S < (size_t)o->seq_len ? (int)S : o->seq_len;
        sk_tokens split = {.data = base + ev[i].off * (size_t)all->width, .width = all->width, .n = ev[i].n,
                           .map = t->id_map};
        st = sk_batcher_init_tokens(ev[i].b, &split, o->batch_size, T, ev[i].name, err);
        if (st != SK_OK) return st;
        if (o->eval_tokens > 0) // ceil(N / B) positions of every stream
            sk_batcher_limit(ev[i].b, (size_t)((o->eval_tokens + o->batch_size - 1) / o->batch_size));
        *ev[i].has = 1;
    }
    if (o->eval_only && !t->has_val) return sk_fail(err, SK_ERR_ARG, "eval-only needs a validation split (a val-frac above 0)");
    return SK_OK;
}

// The run's cache directory (malloc'd, NULL when out of memory): --cache-dir, or
// "shakespeare-cache" beside the out-dir.
static char *cache_dir_of(const sk_train_options *o) {
    return o->cache_dir ? strdup(o->cache_dir) : sk_token_cache_default_dir(o->out_dir);
}

// This rank's view of the data: the cache of o->data_path in mode, validated or (re)built.
static sk_status open_cache(sk_trainer *t, const sk_train_options *o, sk_vocab_mode mode, sk_error *err) {
    char *cache_dir = cache_dir_of(o);
    sk_cache_hooks hooks = {.ctx = t->cb.ctx, .notice = t->cb.on_notice, .progress = t->cb.on_tokenize};
    sk_status st = cache_dir ? sk_token_cache_open(&t->cache, o->data_path, mode, cache_dir, o->train_frac,
                                                   o->val_frac, &hooks, err)
                             : sk_fail(err, SK_ERR_NOMEM, "out of memory");
    free(cache_dir);
    return st;
}

static sk_status init_model(sk_trainer *t, const sk_train_options *o, sk_error *err);

sk_status sk_trainer_init(sk_trainer **out, const sk_train_options *o, const sk_train_callbacks *cb, sk_error *err) {
    *out = NULL;
    sk_status st = check_options(o, err);
    if (st != SK_OK) return st;
    sk_trainer *t = calloc(1, sizeof *t);
    if (!t) return sk_fail(err, SK_ERR_NOMEM, "out of memory");
    t->o = *o;
    if (cb) t->cb = *cb;
    t->last_eval_step = -1;
    t->od = (sk_outdir)SK_OUTDIR_INIT;

    t->comm = o->comm;
    if (!t->comm && !(t->comm = t->own_comm = sk_comm_single())) {
        free(t);
        return sk_fail(err, SK_ERR_NOMEM, "out of memory");
    }
    t->rank = sk_comm_rank(t->comm), t->nranks = sk_comm_size(t->comm);
    t->data_parallel = t->nranks > 1 || o->data_parallel_step;
    // One run per out-dir, held by rank 0, the only rank that writes there: the lock first,
    // so that nothing below reads a checkpoint that another run is writing; a fresh run never
    // silently replaces a finished one. Every rank reaches each agreement, so one rank's
    // failure (here: rank 0's refusal) stops all of them together.
    st = SK_OK;
    if (!o->eval_only && t->rank == 0) {
        st = sk_outdir_open(&t->od, o->out_dir, err);
        if (st == SK_OK) st = sk_outdir_claim(&t->od, o->init_from, o->overwrite, err);
    }
    if ((st = sk_comm_agree(t->comm, st, err)) != SK_OK) goto fail;
    st = init_model(t, o, err);
    if ((st = sk_comm_agree(t->comm, st, err)) != SK_OK || (st = check_devices(t, err)) != SK_OK) goto fail;
    notice(t, t->option_notes); // once the run is sure to start: a refusal is its one line
    if (t->data_parallel) {
        char line[160];
        snprintf(line, sizeof line, "data-parallel over %d rank%s (%s): %d of the %d streams each", t->nranks,
                 t->nranks == 1 ? "" : "s", sk_comm_name(t->comm), t->b_local, t->o.batch_size);
        notice(t, line);
    }
    *out = t;
    return SK_OK;
fail:
    sk_trainer_free(t);
    return st;
}

// The model file a run starts from: a checkpoint to resume (with its training state), or
// --init-weights' file (its weights only: a new run). Owns ckpt and saved.
typedef struct {
    const char *from;        // o->init_from, o->init_weights or NULL (a fresh model)
    sk_model_file ckpt;
    sk_train_state saved;
    int has_state;
    sk_vocab_mode mode;      // the vocabulary the run uses: the file's, else the options'
} start_point;

// Loads the model file (if any) and checks it against the options' shape and vocabulary.
static sk_status load_start(const sk_train_options *o, start_point *sp, sk_error *err) {
    sp->from = o->init_from ? o->init_from : o->init_weights;
    sp->mode = o->vocab_mode;
    if (!sp->from) return SK_OK;
    sk_status st = o->init_from ? sk_checkpoint_load(sp->from, &sp->ckpt, &sp->saved, &sp->has_state, err)
                                : sk_model_load(sp->from, &sp->ckpt, err);
    if (st == SK_OK) st = sk_model_file_check_finite(&sp->ckpt, sp->from, err);
    sk_vocab_mode ck_mode = sp->ckpt.vocab.bytes ? SK_VOCAB_BYTES : SK_VOCAB_UTF8;
    if (st == SK_OK && (o->model_set & SK_SET_VOCAB) && sp->mode != ck_mode)
        st = sk_fail(err, SK_ERR_ARG,
                     "vocab %s differs from the checkpoint %s (%s); a resumed model keeps its vocabulary",
                     sk_vocab_mode_name(sp->mode), sp->from, sk_vocab_mode_name(ck_mode));
    sp->mode = ck_mode;
    if (st == SK_OK) st = check_shape(o, &sp->ckpt.cfg, err);
    return st;
}

// Collective: the token cache, rank 0 first (building or checking it); the other ranks then
// find it ready (or, with a cache directory of their own on another node, build theirs: builds
// are atomic). Then every rank's data and options are checked to agree.
static sk_status open_data(sk_trainer *t, const sk_train_options *o, sk_vocab_mode mode, sk_error *err) {
    sk_status st = SK_OK;
    if (t->rank == 0) st = open_cache(t, o, mode, err);
    if ((st = sk_comm_agree(t->comm, st, err)) != SK_OK) return st;
    if (t->rank != 0) st = open_cache(t, o, mode, err);
    if ((st = sk_comm_agree(t->comm, st, err)) != SK_OK || (st = check_ranks(t, err)) != SK_OK) return st;
    if (t->cache.map_len >= ((size_t)16 << 20)) { // a large corpus: say what start-up cost
        char line[SK_ERROR_MSG_MAX];
        snprintf(line, sizeof line, "token cache %s: %zu ids of %d bits, %d symbols, checked and mapped in %.2f s",
                 t->cache.path, t->cache.ids.n, 8 * t->cache.ids.width, t->cache.vocab.size, t->cache.open_s);
        notice(t, line);
    }
    return SK_OK;
}

// The model's configuration (the file's, or the options' with the data's vocabulary) and the splits.
static sk_status configure_model(sk_trainer *t, const start_point *sp, sk_error *err) {
    sk_train_options *o = &t->o;
    sk_status st;
    if (sp->from) {
        if ((st = map_vocab(t, &sp->ckpt.vocab, sp->from, err)) != SK_OK) return st;
        const sk_model_config asked = o->model;
        o->model = sp->ckpt.cfg;
        if (o->model_set & SK_SET_DROPOUT) o->model.dropout = asked.dropout;
        if (o->model_set & SK_SET_WEIGHT_DROP) o->model.weight_drop = asked.weight_drop;
    } else {
        if ((st = map_vocab(t, NULL, NULL, err)) != SK_OK) return st;
        o->model.vocab_size = t->vocab.size;
    }
    // The one check of the run's config and the one build of its layout, which the trainer reads
    // wherever it needs the layout (the backend holds an equal one of its own).
    if ((st = sk_param_layout_init(&t->layout, &o->model, err)) != SK_OK) return st;
    const sk_cell *cell = sk_model_cell(&o->model);
    if (!sp->from && o->forget_bias != 0.0f && cell->forget_gate < 0)
        return sk_fail(err, SK_ERR_ARG, "--forget-bias %g needs a forget gate, and the %s cell has none (leave it at 0, "
                       "or use --cell lstm)", (double)o->forget_bias, cell->name);
    return setup_splits(t, err);
}

// What the backend is asked for: the run's model and options, this rank's share of the batch.
// rnn-impl auto (a fresh run; a resume names its checkpoint's choice): one process measures which
// implementation is fastest, caching the choice in tune_dir (borrowed); several ranks keep auto's
// fixed rule, since ranks that measured apart could choose apart.
static sk_backend_config backend_config(const sk_trainer *t, const char *tune_dir) {
    const sk_train_options *o = &t->o;
    const sk_backend_shape shape = {.model = o->model, .batch_size = t->b_local, .seq_len = o->seq_len,
                                    .training = !o->eval_only, .seed = o->seed, .stream_offset = t->b_off,
                                    .global_batch = o->batch_size};
    sk_backend_config c = sk_backend_config_make(&o->backend, &shape);
    c.rnn_autotune = t->nranks == 1, c.rnn_tune_dir = tune_dir;
    c.optimizer = o->optim.kind; // the optimizer's options are their own struct (sk_optim_hparams)
    return c;
}

// The device choices a resume took from its checkpoint (not named, so differing from given's),
// as "--precision tf32, --tensor-cores on", and given's values for them, into t->o.
static int restore_device_choices(sk_trainer *t, const sk_train_options *given, char *took, size_t n) {
    took[0] = '\0';
    return t->o.take_resolved && t->o.take_resolved(&t->o, &given->backend, took, n) > 0;
}

// n bytes for a message: "18.3 GB", "512.0 MB".
static const char *bytes_text(size_t n, char *buf, size_t size) {
    const double x = (double)n;
    if (x >= 1e12) snprintf(buf, size, "%.1f TB", x / 1e12);
    else if (x >= 1e9) snprintf(buf, size, "%.1f GB", x / 1e9);
    else snprintf(buf, size, "%.1f MB", x / 1e6);
    return buf;
}

// Whether `need` bytes fit in `available` with a tenth left to the rest of the system; an
// unknown need or availability (0) passes.
static int fits(size_t need, size_t available) { return need == 0 || available == 0 || need <= available / 10 * 9; }

// The refusal of a run that needs `need` bytes (`acts` of them activations) where `available`
// are free in `where`, naming the flags to lower: the window's when activations dominate.
static sk_status refuse_memory(const sk_train_options *o, size_t need, size_t acts, size_t available,
                               const char *where, sk_error *err) {
    char want[32], have[32], act[32];
    bytes_text(need, want, sizeof want), bytes_text(available, have, sizeof have), bytes_text(acts, act, sizeof act);
    if (2 * acts >= need)
        return sk_fail(err, SK_ERR_ARG, "seq-length %d with --batch-size %d needs about %s of %s (%s of it the "
                       "activations kept for backprop through time), more than 90%% of the %s available: lower "
                       "--seq-length or --batch-size", o->seq_len, o->batch_size, want, where, act, have);
    const sk_optim_info *opt = sk_optim_of(o->optim.kind);
    return sk_fail(err, SK_ERR_ARG, "hidden-size %d with --num-layers %d needs about %s of %s (the weights, their "
                   "gradients, %s's %d state slots and %s of activations), more than 90%% of the %s available: lower "
                   "--hidden-size or --num-layers", o->model.hidden_size, o->model.num_layers, want, where,
                   opt ? opt->name : "?", opt ? opt->n_slots : 0, act, have);
}

// Refuses, before anything is allocated, a run that cannot fit in memory with a tenth of it left
// to the rest of the system. Host memory holds the trainer's copies (parameters and the
// optimizer's slots, held twice while a resume's checkpoint is read; the carried state and a
// window's ids) and, on the CPU, the backend's buffers and the batch-1 backend of printed samples; a
// GPU holds its backend's buffers (sk_backend_memory_of), checked against its free memory.
// Each data-parallel rank counts its own share only, as ranks usually sit on nodes of their own.
static sk_status check_memory(const sk_trainer *t, const sk_backend_config *bc, const char *device, sk_error *err) {
    const sk_train_options *o = &t->o;
    sk_backend_memory m;
    sk_backend_memory_of(bc, device, &m);
    if (m.on_cuda && !fits(m.need, m.available))
        return refuse_memory(o, m.need, m.activations, m.available, "GPU memory", err);
    const size_t L = (size_t)o->model.num_layers, H = (size_t)o->model.hidden_size, B = (size_t)o->batch_size;
    const size_t params = t->layout.total;
    const sk_optim_info *opt = sk_optim_of(o->optim.kind);
    const size_t copies = 2 * (1 + (size_t)(opt ? opt->n_slots : SK_OPTIM_MAX_SLOTS)); // parameters and slots, twice
    size_t need = sizeof(float) * (copies * params + 2 * L * (B + (size_t)t->b_local) * H + 2 * B * o->seq_len);
    size_t acts = 0, available = m.on_cuda ? sk_host_memory_available() : m.available;
    if (!m.on_cuda) {
        need += m.need, acts = m.activations;
        if (o->sample_every > 0 && t->rank == 0) {
            sk_backend_config sampler = *bc;
            sampler.batch_size = 1, sampler.training = 0, sampler.stream_offset = 0, sampler.global_batch = 0;
            need += sk_backend_cpu_bytes(&sampler, NULL);
        }
    }
    if (fits(need, available)) return SK_OK;
    return refuse_memory(o, need, acts, available, "memory", err);
}

// This rank's backend for its share of the batch; the options then record what it resolved.
// A resume asks for its checkpoint's device choices; where this device refuses them (a GPU's
// run resumed on the CPU), it runs with the given ones (auto by default), and says so.
static sk_status create_backend(sk_trainer *t, const sk_train_options *given, sk_error *err) {
    char note[3 * SK_ERROR_MSG_MAX], dev[32], took[160];
    char *tune_dir = cache_dir_of(&t->o); // the LSTM choice's cache, beside the token caches
    if (!tune_dir) return sk_fail(err, SK_ERR_NOMEM, "out of memory");
    sk_backend_config bc = backend_config(t, tune_dir);
    const char *device = rank_device(t, dev, sizeof dev);
    sk_status st = check_memory(t, &bc, device, err);
    if (st == SK_OK) st = sk_backend_create(&bc, device, &t->be, note, sizeof note, err);
    if (st == SK_ERR_ARG && restore_device_choices(t, given, took, sizeof took)) {
        char why[SK_ERROR_MSG_MAX];
        snprintf(why, sizeof why, "%s", err->msg);
        bc = backend_config(t, tune_dir);
        if ((st = sk_backend_create(&bc, device, &t->be, note, sizeof note, err)) == SK_OK) {
            char line[SK_ERROR_MSG_MAX + 400];
            snprintf(line, sizeof line, "the checkpoint's %s cannot run on this device (%s): this run takes the "
                     "command line's choice and computes in %s", took, why, sk_precision_name(sk_backend_cfg(t->be)->precision));
            notice(t, line);
        }
    }
    free(tune_dir);
    if (st != SK_OK) return st;
    notice(t, note);
    return record_options(t, err);
}

// The training state and the host buffers: parameters (L layers, the layout's total), a batch
// of ids (B x T, x and y), this rank's carried state (S x L x b_local x H, the cell's S state
// tensors), and on rank 0 room to gather every rank's part of one state tensor (L x B x H).
static sk_status allocate(sk_trainer *t, const sk_train_options *o, sk_error *err) {
    const sk_param_layout *lay = &t->layout;
    const int L = t->o.model.num_layers, H = t->o.model.hidden_size, B = o->batch_size;
    t->n_states = sk_model_cell(&t->o.model)->n_states;
    sk_status st = sk_train_state_alloc(&t->st, lay->total, t->o.optim.kind, t->n_states, L, B, H, err);
    if (st != SK_OK) return st;
    t->st.best_step = -1;
    t->st.seed = o->seed;
    t->st.T = o->seq_len;
    sk_rng_seed(&t->st.rng, o->seed ^ 0x5A4D504C45ull);
    t->params = malloc(sizeof(float) * lay->total);
    t->x = malloc(sizeof(int32_t) * (size_t)B * o->seq_len);
    t->y = malloc(sizeof(int32_t) * (size_t)B * o->seq_len);
    const size_t local_state = (size_t)L * t->b_local * H;
    t->state_local = malloc(sizeof(float) * local_state * (size_t)t->n_states);
    t->gathered = t->rank == 0 ? malloc(sizeof(float) * local_state * (size_t)t->nranks) : NULL;
    if (!t->params || !t->x || !t->y || !t->state_local || (t->rank == 0 && !t->gathered))
        return sk_fail(err, SK_ERR_NOMEM, "out of memory");
    return SK_OK;
}

// The first parameters, the model file's or freshly initialized, into the backend.
static sk_status set_weights(sk_trainer *t, const sk_train_options *o, const start_point *sp, sk_error *err) {
    const sk_param_layout *lay = &t->layout;
    if (sp->from) memcpy(t->params, sp->ckpt.params, sizeof(float) * lay->total);
    else sk_params_init(t->params, lay, o->init, o->init_scale, o->forget_bias, o->seed);
    sk_status st;
    if ((st = sk_backend_set_params(t->be, t->params)) != SK_OK ||
        (st = sk_backend_set_state(t->be, NULL)) != SK_OK)
        return sk_backend_fail(err, st, t->be, "to take the parameters");
    return SK_OK;
}

// A resume with another batch shape (B x T): the carried state does not fit it, but the
// epoch goes on from as many tokens into it as the checkpoint's run had consumed (its window
// times its B x T), rounded down to a window of the new shape, so that nothing of the epoch is
// skipped (and less than one window is seen again). A checkpoint without its T starts the next epoch.
static void continue_epoch(sk_trainer *t, const sk_train_state *saved) {
    const size_t windows = sk_batcher_windows(&t->train, 0);
    const uint64_t done = (uint64_t)saved->window * (uint64_t)saved->B * (uint64_t)(saved->T > 0 ? saved->T : 0);
    const uint64_t per_window = (uint64_t)t->o.batch_size * (uint64_t)t->o.seq_len;
    const size_t w = saved->T <= 0 && saved->window > 0 ? windows : (size_t)(done / per_window);
    char line[SK_ERROR_MSG_MAX];
    int k = snprintf(line, sizeof line, "batch shape %d x %d differs from the checkpoint's %d x %d: ",
                     t->o.batch_size, t->o.seq_len, saved->B, saved->T);
    if (w < windows)
        snprintf(line + k, sizeof line - (size_t)k, "the epoch goes on %llu tokens in, where the checkpoint's run "
                 "stopped, with a zero carried state", (unsigned long long)(w * per_window));
    else
        snprintf(line + k, sizeof line - (size_t)k, "the next epoch starts%s, with a zero carried state",
                 saved->T <= 0 ? " (the checkpoint does not record its window length)" : "");
    t->st.epoch += w >= windows;
    t->st.window = w < windows ? (int64_t)w : 0;
    const size_t used = strlen(t->option_notes); // told after the options that changed the shape
    snprintf(t->option_notes + used, sizeof t->option_notes - used, "%s\n", line);
}

// A resume goes on with the optimizer whose state it saved; another one (--optimizer) is refused.
static sk_status check_resume_optimizer(const sk_train_options *o, const sk_train_state *saved, sk_error *err) {
    if (saved->optimizer == o->optim.kind) return SK_OK;
    const char *mine = sk_optim_kind_name(o->optim.kind), *theirs = sk_optim_kind_name(saved->optimizer);
    return sk_fail(err, SK_ERR_ARG, "optimizer %s differs from the checkpoint's %s, whose state it cannot take: resume "
                   "with --optimizer %s, or start a new run from its weights with --init-weights", mine, theirs,
                   theirs);
}

// Resume: optimizer slots, counters, generator, the position in the epoch; the carried
// state when the batching (B and T) is unchanged.
static sk_status resume(sk_trainer *t, const sk_train_options *o, const start_point *sp, sk_error *err) {
    const sk_train_state *saved = &sp->saved;
    const int L = t->o.model.num_layers, H = t->o.model.hidden_size, B = o->batch_size;
    t->st.step = saved->step, t->st.epoch = saved->epoch;
    t->st.best_val_loss = saved->best_val_loss, t->st.best_step = saved->best_step;
    t->st.rng = saved->rng;
    t->st.elapsed_s = saved->elapsed_s; // 0 from a state written before it was recorded
    sk_status st = SK_OK;
    for (int k = 0; k < saved->n_slots && st == SK_OK; k++)
        st = sk_backend_set_optimizer_state(t->be, k, saved->slots + (size_t)k * saved->n_params);
    if (st != SK_OK) return sk_backend_fail(err, st, t->be, "to take the optimizer state");
    // saved->S == t->n_states: sk_checkpoint_load refuses a state whose tensors are not the cell's.
    if (saved->B == B && saved->T == o->seq_len && saved->L == L && saved->H == H &&
        (size_t)saved->window < sk_batcher_windows(&t->train, 0)) {
        t->st.window = saved->window;
        const size_t global = (size_t)L * B * H, local = (size_t)L * t->b_local * H;
        for (int s = 0; s < t->n_states; s++)
            sk_shard_slice_state(saved->state + s * global, t->state_local + s * local, L, B, t->b_off, t->b_local, H);
        if ((st = sk_backend_set_state(t->be, t->state_local)) != SK_OK)
            return sk_backend_fail(err, st, t->be, "to take the carried state");
    } else {
        continue_epoch(t, saved);
    }
    snprintf(t->resumed, sizeof t->resumed, "resumed from %s at step %lld (epoch %.3f)", o->init_from,
             (long long)t->st.step,
             (double)t->st.epoch + (double)t->st.window / (double)sk_batcher_windows(&t->train, 0));
    return SK_OK;
}

// What a run that does not resume starts from, said once.
static void note_start(sk_trainer *t, const sk_train_options *o, const start_point *sp) {
    if (o->init_from && !o->eval_only && sp->ckpt.has_checksum) {
        notice(t, "the checkpoint has no training state: fine-tuning from its weights with a fresh optimizer");
    } else if (o->init_weights) {
        char line[SK_ERROR_MSG_MAX];
        snprintf(line, sizeof line, "a new run from the weights of %s, with a fresh optimizer", o->init_weights);
        notice(t, line);
    }
}

// Rank 0's metrics log: appended to by a resumed run, started afresh otherwise.
static sk_status open_log(sk_trainer *t, const sk_train_options *o, int resumed, sk_error *err) {
    if (o->eval_only || t->rank != 0) return SK_OK;
    char *log = o->log_path ? strdup(o->log_path) : sk_path_join(o->out_dir, "metrics.jsonl");
    sk_status st = log ? sk_outdir_open_log(&t->od, log, resumed, err) : sk_fail(err, SK_ERR_NOMEM, "out of memory");
    free(log);
    return st;
}

// A resume (and --eval-only) runs with the options its checkpoint records, but for those the
// user named (trainer.h's inherit_options), with a limit named alone as the only one, and the
// optimizer's default learning rate where none is given or recorded, checked as the given ones
// were and by the optimizer's row; then this rank's share of the batch.
static sk_status take_recorded_options(sk_trainer *t, const start_point *sp, sk_error *err) {
    sk_status st = SK_OK;
    if (t->o.init_from && t->o.inherit_options && sp->ckpt.train_config)
        st = t->o.inherit_options(&t->o, sp->ckpt.train_config, t->option_notes, sizeof t->option_notes, err);
    sk_plan_limits(t);
    const sk_optim_info *opt = sk_optim_of(t->o.optim.kind);
    if (t->o.lr.lr == 0.0f && opt) t->o.lr.lr = opt->default_lr; // none given or recorded
    if (st == SK_OK) st = sk_optim_check(&t->o.optim, err);
    if (st == SK_OK) st = check_options(&t->o, err);
    if (st == SK_OK) st = check_ranks_options(t, err);
    t->b_local = t->o.batch_size / t->nranks, t->b_off = t->rank * t->b_local;
    return st;
}

// Everything after the out-dir: the model file, the options it records, the data, the backend,
// the state, the log (this rank's part). Until the ranks have agreed on the data, every rank
// reaches every agreement, so one rank's failure stops all of them together (and none waits on
// a collective another left). given: the caller's options; t->o: the run's.
static sk_status init_model(sk_trainer *t, const sk_train_options *given, sk_error *err) {
    const sk_train_options *o = &t->o;
    start_point sp = {0};
    sk_status st = load_start(o, &sp, err);
    if (st == SK_OK) st = take_recorded_options(t, &sp, err);
    if ((st = sk_comm_agree(t->comm, st, err)) != SK_OK) goto done;
    if ((st = open_data(t, o, sp.mode, err)) != SK_OK) goto done;
    if ((st = configure_model(t, &sp, err)) != SK_OK) goto done;
    const int resuming = sp.has_state && !o->eval_only;
    // Dropout masks are keyed by (seed, step): a resume keeps the run's seed unless told otherwise.
    if (resuming && !(o->model_set & SK_SET_SEED)) t->o.seed = sp.saved.seed;
    if (resuming && (st = check_resume_optimizer(o, &sp.saved, err)) != SK_OK) goto done;
    if ((st = create_backend(t, given, err)) != SK_OK || (st = allocate(t, o, err)) != SK_OK ||
        (st = set_weights(t, o, &sp, err)) != SK_OK)
        goto done;
    if (resuming) {
        if ((st = resume(t, o, &sp, err)) != SK_OK) goto done;
    } else {
        note_start(t, o, &sp);
    }
    if (!o->eval_only &&
        (st = sk_plan_run(t, sp.from ? sp.ckpt.train_config : NULL, resuming ? o->init_from : NULL, err)) != SK_OK)
        goto done;
    if (sp.from && !sp.ckpt.has_checksum) {
        char line[SK_ERROR_MSG_MAX + 160];
        snprintf(line, sizeof line, "%s " SK_NO_CHECKSUM_NOTE "%s", sp.from,
                 o->eval_only ? "" : "; a new run starts from its weights with a fresh optimizer");
        notice(t, line);
    }
    st = open_log(t, o, sp.has_state, err);
done:
    sk_model_file_free(&sp.ckpt);
    sk_train_state_free(&sp.saved);
    return st;
}

void sk_trainer_free(sk_trainer *t) {
    if (!t) return;
    sk_comm_release_device(t->comm); // NCCL's, while the CUDA runtime is alive (comm.h)
    sk_outdir_close(&t->od);
    sk_backend_free(t->be);
    sk_backend_free(t->sampler);
    sk_train_state_free(&t->st);
    sk_token_cache_close(&t->cache);
    sk_vocab_free(&t->vocab);
    sk_param_layout_free(&t->layout);
    free(t->id_map);
    free(t->params);
    free(t->train_config);
    free(t->x);
    free(t->y);
    free(t->state_local);
    free(t->gathered);
    sk_comm_free(t->own_comm);
    free(t);
}

int sk_trainer_failed_alone(const sk_trainer *t) { return t && t->failed_alone; }
