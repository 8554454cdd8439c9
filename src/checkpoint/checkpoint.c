// checkpoint.c: the training-state file and the two-file checkpoint protocol.
// defines: sk_train_state_alloc, sk_train_state_free, sk_state_save, sk_state_load, sk_state_load_mem,
//          sk_checkpoint_save, sk_checkpoint_load, sk_checkpoint_remove, sk_is_state_of, sk_train_config_value
//
// State file (<name>.<step>.state), all integers and floats little-endian:
//   offset  size  field
//   0       8     magic "SKSTATE\0"
//   8       4     u32 version (4; versions 1, 773fb49 and before, 2 and 3 are read too)
//   12      4     u32 checksum of the model file this state belongs to (its "checksum" metadata)
//   16      8     u64 n_params
//   24      4     u32 L
//   28      4     u32 B
//   32      4     u32 H
//   36      4     u32 T, the window length the carried state ends (0: not recorded)
//   40      8     i64 step
//   48      8     i64 epoch
//   56      8     i64 window
//   64      8     f64 best_val_loss
//   72      8     i64 best_step
//   80      8     u64 seed
//   88      32    u64 rng.s[0..3]
//   120     16    the optimizer's name (a name of optim.h's table: "adam", ...), NUL-padded
//   136     4     u32 S, its state slots
//   140     16*S  each slot's name (the table's, in slot order: adam's "m", "v"), NUL-padded
//   +0      8     f64 elapsed_s, the run's wall-clock seconds up to this checkpoint, over resumes
//   +8      8     f64 val_loss of this checkpoint's model, NaN when it was not evaluated at its step
//   +16     4     u32 N, the cell's state tensors per layer (cell.h's n_states: an LSTM's 2, a GRU's
//                 or an RNN's 1), 1 to SK_MAX_CELL_STATES
//           4*n_params     f32 slot 0
//           ...            (S slots)
//           4*N*L*B*H      f32 the carried state: the cell's N state tensors (cell.h) of (L, B, H),
//                          h first (an LSTM's h then c, as version 1 files have always held them;
//                          a GRU's or RNN's h alone)
//   end-4   4     u32 CRC-32 (sk_crc32) of every byte before it
// Version 1 has neither the optimizer's name nor its slots' count and names: its 120-byte
// header is followed by Adam's m and v, then h and c, which load as the optimizer adam.
// Versions 1 and 2 have neither elapsed_s nor val_loss: they load as 0 and NaN.
// Versions 1 to 3 do not record N: it is what the file's size leaves for the carried state.
//
// Checkpoint protocol (sk_checkpoint_save): the state is written first under a new name,
// "<name>.<step %09lld>.state" (or "<name>.<step>.<k>.state", k = 1, 2, ..., when that name
// already exists: an existing state may be the one the current model names, and replacing it
// would pair that model with a state of another model), then the model that names it
// replaces <name>.safetensors, then the other "<name>.<digits>[.<digits>].state" files go.
// Each write is atomic (fsutil.h), so after a kill at any instant <name>.safetensors and the
// state it names are both on disk.
#include "shakespeare/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/binio.h"
#include "safetensors.h"
#include "io/json.h"

#define STATE_MAGIC "SKSTATE\0"
#define STATE_VERSION 4u
#define STATE_HEADER 120 // the fields every version shares
#define STATE_NAME 16    // an optimizer's or a slot's name, NUL-padded
#define STATE_OPTIM(S) (STATE_NAME + 4 + STATE_NAME * (size_t)(S)) // version 2's optimizer record
#define STATE_TIMES 16   // version 3's elapsed_s and val_loss, after the optimizer record
#define STATE_CELL 4     // version 4's N, the cell's state tensors per layer, after the times

// ---- training state ------------------------------------------------------------------------

// Elements of an (L, B, H) tensor, or SIZE_MAX when that overflows or a size is negative.
static size_t lbh(int64_t L, int64_t B, int64_t H) {
    if (L < 0 || B < 0 || H < 0 || L > INT32_MAX || B > INT32_MAX || H > INT32_MAX) return SIZE_MAX;
    uint64_t lb = (uint64_t)L * (uint64_t)B; // < 2^62
    if (H && lb > (SIZE_MAX / 8) / (uint64_t)H) return SIZE_MAX;
    return (size_t)(lb * (uint64_t)H);
}

sk_status sk_train_state_alloc(sk_train_state *s, size_t n_params, sk_optim_kind optimizer, int S, int L, int B,
                               int H, sk_error *err) {
    memset(s, 0, sizeof *s);
    size_t nh = lbh(L, B, H);
    const sk_optim_info *opt = sk_optim_of(optimizer);
    if (nh == SIZE_MAX || n_params > SIZE_MAX / (4 * SK_OPTIM_MAX_SLOTS) || !opt || S < 1 || S > SK_MAX_CELL_STATES)
        return sk_fail(err, SK_ERR_ARG,
                       "training state: bad sizes (n_params %zu, S %d, L %d, B %d, H %d) or optimizer %d", n_params, S,
                       L, B, H, (int)optimizer);
    nh *= (size_t)S;
    s->S = S, s->L = L, s->B = B, s->H = H;
    s->n_params = n_params;
    s->optimizer = optimizer, s->n_slots = opt->n_slots;
    s->best_val_loss = INFINITY;
    s->val_loss = NAN;
    const size_t slots = (size_t)opt->n_slots * n_params;
    s->slots = calloc(slots ? slots : 1, sizeof(float));
    s->state = calloc(nh ? nh : 1, sizeof(float));
    if (!s->slots || !s->state) {
        sk_train_state_free(s);
        return sk_fail(err, SK_ERR_NOMEM, "out of memory for a training state of %zu + %zu floats", slots, nh);
    }
    return SK_OK;
}

void sk_train_state_free(sk_train_state *s) {
    free(s->slots);
    free(s->state);
    memset(s, 0, sizeof *s);
}

// Version 2's optimizer record: its name, its slots' count and names (the layout above).
static void put_optimizer(unsigned char *rec, const sk_optim_info *opt) {
    memset(rec, 0, STATE_OPTIM(opt->n_slots));
    memcpy(rec, opt->name, strlen(opt->name)); // the table's names are shorter than STATE_NAME
    sk_put_le32(rec + STATE_NAME, (uint32_t)opt->n_slots);
    for (int k = 0; k < opt->n_slots; k++)
        memcpy(rec + STATE_NAME + 4 + STATE_NAME * k, opt->slot_names[k], strlen(opt->slot_names[k]));
}

static void put_f64(unsigned char *p, double x) {
    uint64_t bits;
    memcpy(&bits, &x, 8);
    sk_put_le64(p, bits);
}

static double get_f64(const unsigned char *p) {
    const uint64_t bits = sk_get_le64(p);
    double x;
    memcpy(&x, &bits, 8);
    return x;
}

sk_status sk_state_save(const char *path, const sk_train_state *s, uint32_t model_checksum, sk_error *err) {
    size_t nh = lbh(s->L, s->B, s->H);
    const sk_optim_info *opt = sk_optim_of(s->optimizer);
    if (nh == SIZE_MAX || !opt || s->n_slots != opt->n_slots || s->S < 1 || s->S > SK_MAX_CELL_STATES || !s->slots ||
        !s->state)
        return sk_fail(err, SK_ERR_ARG, "%s: training state with bad sizes or missing buffers", path);
    unsigned char hd[STATE_HEADER + STATE_OPTIM(SK_OPTIM_MAX_SLOTS) + STATE_TIMES + STATE_CELL];
    const size_t times_at = STATE_HEADER + STATE_OPTIM(opt->n_slots), header = times_at + STATE_TIMES + STATE_CELL;
    memcpy(hd, STATE_MAGIC, 8);
    sk_put_le32(hd + 8, STATE_VERSION);
    sk_put_le32(hd + 12, model_checksum);
    sk_put_le64(hd + 16, (uint64_t)s->n_params);
    sk_put_le32(hd + 24, (uint32_t)s->L);
    sk_put_le32(hd + 28, (uint32_t)s->B);
    sk_put_le32(hd + 32, (uint32_t)s->H);
    sk_put_le32(hd + 36, (uint32_t)s->T);
    sk_put_le64(hd + 40, (uint64_t)s->step);
    sk_put_le64(hd + 48, (uint64_t)s->epoch);
    sk_put_le64(hd + 56, (uint64_t)s->window);
    put_f64(hd + 64, s->best_val_loss);
    sk_put_le64(hd + 72, (uint64_t)s->best_step);
    sk_put_le64(hd + 80, s->seed);
    for (int i = 0; i < 4; i++) sk_put_le64(hd + 88 + 8 * i, s->rng.s[i]);
    put_optimizer(hd + STATE_HEADER, opt);
    put_f64(hd + times_at, s->elapsed_s);
    put_f64(hd + times_at + 8, s->val_loss);
    sk_put_le32(hd + times_at + STATE_TIMES, (uint32_t)s->S);
    uint32_t crc = sk_crc32(0, hd, header);
    sk_atomic_file af;
    sk_status st = sk_atomic_open(&af, path, err);
    if (st == SK_OK) st = sk_atomic_write(&af, hd, header, err);
    if (st == SK_OK) st = sk_write_f32_le(&af, s->slots, (size_t)s->n_slots * s->n_params, &crc, err);
    if (st == SK_OK) st = sk_write_f32_le(&af, s->state, (size_t)s->S * nh, &crc, err);
    unsigned char tail[4];
    sk_put_le32(tail, crc);
    if (st == SK_OK) st = sk_atomic_write(&af, tail, 4, err);
    if (st == SK_OK) st = sk_atomic_commit(&af, err);
    else sk_atomic_abort(&af);
    return st;
}

// The counters of the shared header: step, epoch, window, best loss and step, seed, generator.
static void read_counters(const unsigned char *hd, sk_train_state *out) {
    out->step = (int64_t)sk_get_le64(hd + 40);
    out->epoch = (int64_t)sk_get_le64(hd + 48);
    out->window = (int64_t)sk_get_le64(hd + 56);
    out->best_val_loss = get_f64(hd + 64);
    out->best_step = (int64_t)sk_get_le64(hd + 72);
    out->seed = sk_get_le64(hd + 80);
    for (int i = 0; i < 4; i++) out->rng.s[i] = sk_get_le64(hd + 88 + 8 * i);
}

// Version 2's optimizer record at rec (its first STATE_NAME + 4 bytes read): the optimizer it
// names, which must be one of optim.h's table with the table's slots; reads the slots' names.
static sk_status read_optimizer(const char *path, sk_reader *r, unsigned char *rec, sk_optim_kind *kind,
                                sk_error *err) {
    char name[STATE_NAME + 1] = {0};
    memcpy(name, rec, STATE_NAME);
    const sk_optim_info *opt = NULL;
    for (int k = 0; k < SK_OPTIM_COUNT && !opt; k++)
        if (strcmp(name, sk_optim_kind_name((sk_optim_kind)k)) == 0) opt = sk_optim_of((sk_optim_kind)k);
    if (!opt || memchr(rec, 0, STATE_NAME) == NULL)
        return sk_fail(err, SK_ERR_FORMAT, "%s: the training state's optimizer \"%.16s\" is not one this build knows",
                       path, name);
    const uint32_t n_slots = sk_get_le32(rec + STATE_NAME);
    if (n_slots != (uint32_t)opt->n_slots)
        return sk_fail(err, SK_ERR_FORMAT, "%s: the training state holds %u slots of %s, which has %d", path, n_slots,
                       opt->name, opt->n_slots);
    sk_status st = sk_reader_read(r, rec + STATE_NAME + 4, STATE_NAME * (size_t)n_slots, path, err);
    for (int k = 0; st == SK_OK && k < opt->n_slots; k++) {
        const unsigned char *slot = rec + STATE_NAME + 4 + STATE_NAME * k;
        char want[STATE_NAME] = {0};
        memcpy(want, opt->slot_names[k], strlen(opt->slot_names[k]));
        if (memcmp(slot, want, STATE_NAME) != 0)
            st = sk_fail(err, SK_ERR_FORMAT, "%s: the training state's slot %d of %s is \"%.16s\", not \"%s\"", path,
                         k, opt->name, (const char *)slot, opt->slot_names[k]);
    }
    *kind = opt->kind;
    return st;
}

// The header (every version) into hd, *len bytes of it, the optimizer it names and the
// version; *times_at: where version 3's fields begin (the end of the optimizer record).
static sk_status read_header(const char *path, sk_reader *r, unsigned char *hd, size_t *len, size_t *times_at,
                             sk_optim_kind *kind, uint32_t *version, sk_error *err) {
    size_t have = r->size < 8 ? (size_t)r->size : 8;
    sk_status st = sk_reader_read(r, hd, have, path, err);
    if (st != SK_OK) return st;
    if (memcmp(hd, STATE_MAGIC, have) != 0 || have == 0)
        return sk_fail(err, SK_ERR_FORMAT, "%s: not a shakespeare training state (bad magic)", path);
    if (r->size < STATE_HEADER + 4)
        return sk_fail(err, SK_ERR_FORMAT, "%s: truncated (file has %llu bytes, a training state has at least %d)",
                       path, (unsigned long long)r->size, STATE_HEADER + 4);
    if ((st = sk_reader_read(r, hd + 8, STATE_HEADER - 8, path, err)) != SK_OK) return st;
    *version = sk_get_le32(hd + 8);
    if (*version < 1 || *version > STATE_VERSION)
        return sk_fail(err, SK_ERR_FORMAT, "%s: unsupported training state version %u (expected 1 to %u)", path,
                       *version, STATE_VERSION);
    *kind = SK_OPTIM_ADAM, *len = *times_at = STATE_HEADER; // version 1: Adam's m and v
    if (*version == 1) return SK_OK;
    if ((st = sk_reader_read(r, hd + STATE_HEADER, STATE_NAME + 4, path, err)) != SK_OK) return st;
    if ((st = read_optimizer(path, r, hd + STATE_HEADER, kind, err)) != SK_OK) return st;
    *len = *times_at = STATE_HEADER + STATE_OPTIM(sk_optim_of(*kind)->n_slots);
    const size_t more = *version == 2 ? 0 : *version == 3 ? STATE_TIMES : STATE_TIMES + STATE_CELL;
    if ((st = sk_reader_read(r, hd + *len, more, path, err)) != SK_OK) return st;
    *len += more;
    return SK_OK;
}

// N, the carried state's tensors per layer: version 4's record (1 to SK_MAX_CELL_STATES), or
// before it as many as the file's bytes after the slots hold (at least 1, at most
// SK_MAX_CELL_STATES; the caller then checks that the file holds them exactly). fixed: the
// file's bytes but the carried state's; per: one state tensor's bytes. 0 for a corrupt record.
static uint64_t state_tensors(uint32_t version, const unsigned char *record, uint64_t size, uint64_t fixed,
                              uint64_t per) {
    if (version >= 4) {
        const uint32_t N = sk_get_le32(record);
        return N >= 1 && N <= SK_MAX_CELL_STATES ? N : 0;
    }
    const uint64_t N = size > fixed && per ? (size - fixed + per - 1) / per : 1;
    return N < 1 ? 1 : N > SK_MAX_CELL_STATES ? SK_MAX_CELL_STATES : N;
}

static sk_status load_state(const char *path, sk_reader *r, sk_train_state *out, uint32_t expect, sk_error *err) {
    unsigned char hd[STATE_HEADER + STATE_OPTIM(SK_OPTIM_MAX_SLOTS) + STATE_TIMES + STATE_CELL], tail[4];
    size_t header = 0, times_at = 0;
    sk_optim_kind kind = SK_OPTIM_ADAM;
    uint32_t version = 0;
    sk_status st = read_header(path, r, hd, &header, &times_at, &kind, &version, err);
    if (st != SK_OK) return st;
    const uint64_t n_slots = (uint64_t)sk_optim_of(kind)->n_slots;
    uint64_t n = sk_get_le64(hd + 16);
    uint32_t L = sk_get_le32(hd + 24), B = sk_get_le32(hd + 28), H = sk_get_le32(hd + 32);
    size_t nh = lbh(L, B, H);
    // Sizes are checked against the file size before anything is allocated.
    if (nh == SIZE_MAX || sk_get_le32(hd + 36) > (1u << 30) || n > (UINT64_MAX / 16) || nh > (UINT64_MAX / 16) - n)
        return sk_fail(err, SK_ERR_FORMAT, "%s: corrupt training state header (sizes %llu, %u, %u, %u)", path,
                       (unsigned long long)n, L, B, H);
    const uint64_t fixed = header + 4 * n_slots * n + 4, per = 4 * (uint64_t)nh;
    const uint64_t N = state_tensors(version, hd + times_at + STATE_TIMES, r->size, fixed, per);
    if (N == 0)
        return sk_fail(err, SK_ERR_FORMAT, "%s: corrupt training state header (%u state tensors a layer; a cell "
                       "carries 1 to %d)", path, sk_get_le32(hd + times_at + STATE_TIMES), SK_MAX_CELL_STATES);
    const uint64_t need = fixed + N * per;
    if (r->size < need)
        return sk_fail(err, SK_ERR_FORMAT, "%s: truncated (header says %llu bytes, file has %llu)", path,
                       (unsigned long long)need, (unsigned long long)r->size);
    if (r->size > need)
        return sk_fail(err, SK_ERR_FORMAT, "%s: %llu unexpected bytes after the training state", path,
                       (unsigned long long)(r->size - need));
    if ((st = sk_train_state_alloc(out, (size_t)n, kind, (int)N, (int)L, (int)B, (int)H, err)) != SK_OK) // sizes checked
        return sk_fail(err, SK_ERR_NOMEM, "%s: out of memory for a training state of %llu bytes", path,
                       (unsigned long long)need);
    out->T = (int)sk_get_le32(hd + 36);
    uint32_t crc = sk_crc32(0, hd, header);
    if (st == SK_OK) st = sk_read_f32_le(r, out->slots, (size_t)n_slots * out->n_params, &crc, path, err);
    if (st == SK_OK) st = sk_read_f32_le(r, out->state, (size_t)N * nh, &crc, path, err);
    if (st == SK_OK) st = sk_reader_read(r, tail, 4, path, err);
    if (st != SK_OK) return st;
    if (sk_get_le32(tail) != crc) return sk_fail(err, SK_ERR_FORMAT, "%s: checksum mismatch (file is corrupt)", path);
    read_counters(hd, out);
    if (version >= 3) out->elapsed_s = get_f64(hd + times_at), out->val_loss = get_f64(hd + times_at + 8);
    if (!(out->elapsed_s >= 0 && isfinite(out->elapsed_s)) || isinf(out->val_loss) || out->val_loss < 0)
        return sk_fail(err, SK_ERR_FORMAT, "%s: corrupt training state (elapsed_s %g, val_loss %g)", path,
                       out->elapsed_s, out->val_loss);
    if (out->step < 0 || out->epoch < 0 || out->window < 0 || isnan(out->best_val_loss))
        return sk_fail(err, SK_ERR_FORMAT, "%s: corrupt training state (step %lld, epoch %lld, window %lld)", path,
                       (long long)out->step, (long long)out->epoch, (long long)out->window);
    uint32_t belongs = sk_get_le32(hd + 12);
    if (expect != 0 && belongs != expect)
        return sk_fail(err, SK_ERR_MISMATCH,
                       "%s: training state belongs to a different model file (state for crc32:%08x, model is crc32:%08x)",
                       path, (unsigned)belongs, (unsigned)expect);
    return SK_OK;
}

sk_status sk_state_load(const char *path, sk_train_state *out, uint32_t expect_checksum, sk_error *err) {
    memset(out, 0, sizeof *out);
    sk_reader r;
    sk_status st = sk_reader_open(&r, path, err);
    if (st != SK_OK) return st;
    st = load_state(path, &r, out, expect_checksum, err);
    sk_reader_close(&r);
    if (st != SK_OK) sk_train_state_free(out);
    return st;
}

sk_status sk_state_load_mem(const char *path, const void *data, size_t n, sk_train_state *out,
                            uint32_t expect_checksum, sk_error *err) {
    memset(out, 0, sizeof *out);
    sk_reader r = {.f = NULL, .mem = data, .size = n, .pos = 0};
    sk_status st = load_state(path, &r, out, expect_checksum, err);
    if (st != SK_OK) sk_train_state_free(out);
    return st;
}

// ---- the two-file protocol -----------------------------------------------------------------

int sk_is_state_of(const char *file, const char *name) {
    size_t n = strlen(name), f = strlen(file);
    if (f <= n + 7 || strncmp(file, name, n) != 0 || file[n] != '.' || strcmp(file + f - 6, ".state") != 0)
        return 0;
    const char *p = file + n + 1, *end = file + f - 6;
    for (int group = 0; group < 2 && p < end; group++) {
        const char *q = p;
        while (q < end && *q >= '0' && *q <= '9') q++;
        if (q == p) return 0;
        if (q == end) return 1;
        if (*q != '.' || group == 1) return 0;
        p = q + 1;
    }
    return 0;
}

static void remove_other_states(const char *dir, const char *name, const char *keep) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!sk_is_state_of(de->d_name, name) || (keep && strcmp(de->d_name, keep) == 0)) continue;
        char *p = sk_path_join(dir, de->d_name);
        if (p) unlink(p);
        free(p);
    }
    closedir(d);
    sk_fsync_dir(dir, NULL);
}

sk_status sk_checkpoint_remove(const char *dir, const char *name, sk_error *err) {
    if (!name || !sk_valid_basename(name, strlen(name)) || strlen(name) > 200)
        return sk_fail(err, SK_ERR_ARG, "checkpoint name \"%s\" must be a plain file name", name ? name : "(null)");
    char model_name[256];
    snprintf(model_name, sizeof model_name, "%s.safetensors", name);
    char *path = sk_path_join(dir, model_name);
    if (!path) return sk_fail(err, SK_ERR_NOMEM, "out of memory");
    sk_status st = SK_OK;
    if (unlink(path) != 0 && errno != ENOENT) st = sk_fail(err, SK_ERR_IO, "%s: cannot remove (%s)", path, strerror(errno));
    free(path);
    if (st == SK_OK) remove_other_states(dir, name, NULL); // fsyncs the directory
    return st;
}

sk_status sk_checkpoint_save(const char *dir, const char *name, const sk_model_config *cfg, const sk_vocab *vocab,
                             const float *params, const char *train_config, const sk_train_state *state,
                             sk_error *err) {
    if (!dir || !*dir || !name || !sk_valid_basename(name, strlen(name)) || strlen(name) > 200)
        return sk_fail(err, SK_ERR_ARG, "checkpoint name \"%s\" must be a plain file name", name ? name : "(null)");
    if (state && state->step < 0)
        return sk_fail(err, SK_ERR_ARG, "checkpoint %s: negative step %lld", name, (long long)state->step);
    size_t nlen = strlen(name) + 64;
    char *base = malloc(nlen), *model_name = malloc(nlen), *state_path = NULL, *model_path = NULL;
    sk_status st = SK_OK;
    if (!base || !model_name) st = sk_fail(err, SK_ERR_NOMEM, "out of memory");
    if (st == SK_OK) {
        snprintf(model_name, nlen, "%s.safetensors", name);
        model_path = sk_path_join(dir, model_name);
        if (!model_path) st = sk_fail(err, SK_ERR_NOMEM, "out of memory");
    }
    for (int k = 0; st == SK_OK && state; k++) { // the first state name that does not exist yet
        if (k == 0) snprintf(base, nlen, "%s.%09lld.state", name, (long long)state->step);
        else snprintf(base, nlen, "%s.%09lld.%d.state", name, (long long)state->step, k);
        free(state_path);
        state_path = sk_path_join(dir, base);
        struct stat sb;
        if (!state_path) st = sk_fail(err, SK_ERR_NOMEM, "out of memory");
        else if (lstat(state_path, &sb) != 0) break;
        if (k == 1000) st = sk_fail(err, SK_ERR_IO, "%s: too many state files for step %lld", state_path, (long long)state->step);
    }
    uint32_t checksum = 0, written = 0;
    const char *state_file = state ? base : NULL;
    if (st == SK_OK) {
        st = sk_model_checksum(cfg, vocab, params, train_config, state_file, &checksum, err);
        if (st != SK_OK) {
            char tmp[SK_ERROR_MSG_MAX];
            snprintf(tmp, sizeof tmp, "%s", err ? err->msg : "");
            st = sk_fail(err, st, "%s: %s", model_path, tmp);
        }
    }
    if (st == SK_OK && state) st = sk_state_save(state_path, state, checksum, err);
    if (st == SK_OK) st = sk_model_save(model_path, cfg, vocab, params, train_config, state_file, &written, err);
    if (st == SK_OK && written != checksum) // params changed under us: the state names the wrong model
        st = sk_fail(err, SK_ERR_ARG, "%s: parameters changed while the checkpoint was being written", model_path);
    if (st == SK_OK) remove_other_states(dir, name, state_file);
    free(base);
    free(model_name);
    free(state_path);
    free(model_path);
    return st;
}

sk_status sk_checkpoint_load(const char *model_path, sk_model_file *model, sk_train_state *state, int *has_state,
                             sk_error *err) {
    if (has_state) *has_state = 0;
    if (state) memset(state, 0, sizeof *state);
    sk_status st = sk_model_load(model_path, model, err);
    // Without a checksum nothing ties a state file to these weights: it is not read.
    if (st != SK_OK || !model->state_file || !model->has_checksum) return st;
    if (!state) {
        if (has_state) *has_state = 1;
        return SK_OK;
    }
    char *dir = sk_path_dir(model_path);
    char *path = dir ? sk_path_join(dir, model->state_file) : NULL;
    free(dir);
    if (!path) st = sk_fail(err, SK_ERR_NOMEM, "out of memory");
    struct stat s;
    if (st == SK_OK && stat(path, &s) != 0 && errno == ENOENT) // moved or deleted: say what it is and what else
        st = sk_fail(err, SK_ERR_IO, "%s: its optimizer state %s is missing, so the run cannot resume where it "
                     "stopped; to start a new run from these weights with a fresh optimizer, use --init-weights %s",
                     model_path, path, model_path);
    if (st == SK_OK) st = sk_state_load(path, state, model->checksum, err);
    if (st == SK_OK) {
        const sk_model_config *c = &model->cfg;
        const size_t total = model->layout.total;
        const sk_cell *cell = sk_model_cell(c);
        if (state->n_params != total || state->L != c->num_layers || state->H != c->hidden_size)
            st = sk_fail(err, SK_ERR_MISMATCH,
                         "%s: training state has %zu parameters and (L, H) = (%d, %d), the model %zu and (%d, %d)",
                         path, state->n_params, state->L, state->H, total, c->num_layers, c->hidden_size);
        else if (state->S != cell->n_states)
            st = sk_fail(err, SK_ERR_MISMATCH, "%s: training state holds %d state tensor%s a layer; the model's %s cell "
                         "carries %d", path, state->S, state->S == 1 ? "" : "s", cell->name, cell->n_states);
    }
    free(path);
    if (st != SK_OK) {
        sk_train_state_free(state);
        sk_model_file_free(model);
        return st;
    }
    if (has_state) *has_state = 1;
    return SK_OK;
}

sk_status sk_train_config_value(const char *train_config, const char *key, char *out, size_t n) {
    sk_json doc = {0};
    if (!train_config || sk_json_parse(&doc, train_config, strlen(train_config), 4096, NULL) != SK_OK ||
        doc.nodes[0].type != SK_JSON_OBJECT) {
        sk_json_free(&doc);
        return SK_ERR_ARG;
    }
    const size_t k = sk_json_get(&doc, 0, key);
    sk_status st = k == SK_JSON_NONE ? SK_ERR_ARG : SK_ERR_FORMAT;
    if (k != SK_JSON_NONE && doc.nodes[k].type == SK_JSON_STRING) {
        size_t len = 0;
        char *s = sk_json_string(&doc, k, &len);
        if (s && strlen(s) == len && len < n) memcpy(out, s, len + 1), st = SK_OK;
        free(s);
    } else if (k != SK_JSON_NONE && doc.nodes[k].type == SK_JSON_NUMBER && doc.nodes[k].len < n) {
        memcpy(out, train_config + doc.nodes[k].start, doc.nodes[k].len);
        out[doc.nodes[k].len] = '\0';
        st = SK_OK;
    }
    sk_json_free(&doc);
    return st;
}
