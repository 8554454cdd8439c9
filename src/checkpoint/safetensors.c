// safetensors.c: the model file, a standard safetensors file with shakespeare metadata.
// defines: sk_model_save, sk_model_load, sk_model_load_mem, sk_model_checksum
//
// Layout (https://github.com/huggingface/safetensors):
//   u64 LE  N                 header length; N % 8 == 0 (padded with spaces) so data is aligned
//   N bytes JSON header       {"__metadata__":{...strings...},
//                              "embedding.weight":{"dtype":"F32","shape":[V,E],"data_offsets":[0,4VE]},...}
//   data                      the tensors in model.h's order, contiguous, F32 little-endian
// The loader accepts any member order and any tensor order in the data section, but, like the
// safetensors library, requires the tensors to tile the data section exactly (no gaps, no
// overlap, nothing after). The checksum (model_checksum.c) depends on the format version: version 2
// covers the content whatever its layout, version 1 the data section as stored. Which metadata
// a file needs, and when it may lack a checksum: model_file.h.
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "io/binio.h"
#include "model_checksum.h"
#include "safetensors.h"
#include "io/json.h"

#define SK_MAX_HEADER (100u << 20) // the safetensors library's own limit
#define SK_MAX_META 64             // metadata entries
#define SK_MAX_HEADER_VALUES 16384 // JSON values in a header (ours: about 12 per tensor, at most 259 tensors)

// ---- small helpers -------------------------------------------------------------------------

typedef struct {
    char *s;
    size_t len, cap;
    int oom;
} strbuf;

static void sb_add(strbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void sb_str(strbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

__attribute__((format(printf, 2, 3))) static void sb_printf(strbuf *b, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k > 0) sb_add(b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

// s as a JSON string literal (s is valid UTF-8; control characters, '"' and '\' escaped).
static void sb_json_string(strbuf *b, const char *s) {
    sb_add(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sb_add(b, e, 2);
        } else if (c < 0x20) {
            sb_printf(b, "\\u%04x", c);
        } else {
            sb_add(b, (const char *)&c, 1);
        }
    }
    sb_add(b, "\"", 1);
}

// An untrusted string for a one-line message: quoted, at most 40 bytes, non-printables as '?'.
static const char *quoted(char *buf, size_t size, const char *s, size_t n) {
    size_t o = 0, lim = n > 40 ? 40 : n;
    buf[o++] = '"';
    for (size_t i = 0; i < lim && o + 6 < size; i++)
        buf[o++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    if (n > lim) buf[o++] = '.', buf[o++] = '.', buf[o++] = '.';
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

// SK_ERR_FORMAT with the message "<path>: <formatted>".
__attribute__((format(printf, 3, 4))) static sk_status bad(sk_error *err, const char *path, const char *fmt, ...) {
    char tmp[SK_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    return sk_fail(err, SK_ERR_FORMAT, "%s: %s", path, tmp);
}

bool sk_valid_basename(const char *s, size_t n) {
    if (n == 0 || n > 255 || memchr(s, '/', n) || memchr(s, '\0', n)) return false;
    return !(n == 1 && s[0] == '.') && !(n == 2 && s[0] == '.' && s[1] == '.');
}

// ---- save ----------------------------------------------------------------------------------

// Shortest "%.*g" text that reads back (strtof) as exactly x, so Python sees "0.1", not "0.100000001".
static void format_float(char *buf, size_t size, float x) {
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, size, "%.*g", prec, (double)x);
        if (strtof(buf, NULL) == x) return;
    }
}

typedef struct {
    sk_param_layout layout;
    char *header; // (header_len,) JSON padded with spaces, owned
    size_t header_len;
    uint32_t checksum;
} prepared;

static void prepared_free(prepared *p) {
    sk_param_layout_free(&p->layout);
    free(p->header);
    p->header = NULL;
}

// Validates the arguments of a save and builds the header and the checksum.
static sk_status prepare(const sk_model_config *cfg, const sk_vocab *vocab, const float *params,
                         const char *train_config, const char *state_file, prepared *p, sk_error *err) {
    memset(p, 0, sizeof *p);
    if (!cfg || !vocab || !params) return sk_fail(err, SK_ERR_ARG, "model save: NULL config, vocabulary or parameters");
    if (vocab->size != cfg->vocab_size || !vocab->chars)
        return sk_fail(err, SK_ERR_ARG, "model save: the vocabulary has %d characters, the config says %d", vocab->size,
                       cfg->vocab_size);
    for (int i = 0; i < vocab->size; i++) {
        uint32_t c = vocab->chars[i];
        if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF) || (i > 0 && c <= vocab->chars[i - 1]))
            return sk_fail(err, SK_ERR_ARG, "model save: vocabulary entry %d (0x%X) is out of order or invalid", i,
                           (unsigned)c);
    }
    if (train_config && sk_utf8_valid_prefix(train_config, strlen(train_config)) != strlen(train_config))
        return sk_fail(err, SK_ERR_ARG, "model save: train_config is not valid UTF-8");
    if (state_file && !sk_valid_basename(state_file, strlen(state_file)))
        return sk_fail(err, SK_ERR_ARG, "model save: state file name \"%s\" is not a plain file name", state_file);
    sk_status st = sk_param_layout_init(&p->layout, cfg, err);
    if (st != SK_OK) return st;

    // Metadata values.
    char num[4][16], drop[32], wdrop[32];
    snprintf(num[0], sizeof num[0], "%d", cfg->vocab_size);
    snprintf(num[1], sizeof num[1], "%d", cfg->embed_size);
    snprintf(num[2], sizeof num[2], "%d", cfg->hidden_size);
    snprintf(num[3], sizeof num[3], "%d", cfg->num_layers);
    format_float(drop, sizeof drop, cfg->dropout);
    format_float(wdrop, sizeof wdrop, cfg->weight_drop);
    strbuf vs = {0};
    sb_str(&vs, "[");
    for (int i = 0; i < vocab->size; i++) sb_printf(&vs, i ? ",%u" : "%u", (unsigned)vocab->chars[i]);
    sb_str(&vs, "]");
    sk_meta_entry e[12];
    size_t n = 0;
#define META(k, v) (e[n].key = (char *)(k), e[n].klen = strlen(k), e[n].val = (char *)(v), e[n].vlen = strlen(v), n++)
    META("format", SK_MODEL_FORMAT);
    META("vocab_size", num[0]);
    META("embed_size", num[1]);
    META("hidden_size", num[2]);
    META("num_layers", num[3]);
    META("dropout", drop);
    if (cfg->weight_drop > 0.0f) META("weight_drop", wdrop); // absent: 0 (and files before it)
    if (cfg->cell != SK_CELL_LSTM) META("cell", sk_model_cell(cfg)->name); // absent: lstm (and files before it)
    META("vocab", vs.oom ? "" : vs.s);
    if (train_config) META("train_config", train_config);
    if (state_file) META("state_file", state_file);
    if (vocab->bytes) META("vocab_mode", "bytes"); // absent: code points (files before byte vocabularies)
    if (vocab->start_newline) META("start_context", "\n"); // absent: a zero state (files before it)
#undef META
    uint32_t crc = sk_checksum_v2(e, n, &p->layout, params); // sorts e: the header lists keys in order
    p->checksum = crc;

    strbuf h = {0};
    sb_str(&h, "{\"__metadata__\":{");
    for (size_t i = 0; i < n; i++) {
        sb_json_string(&h, e[i].key);
        sb_str(&h, ":");
        sb_json_string(&h, e[i].val);
        sb_str(&h, ",");
    }
    sb_printf(&h, "\"checksum\":\"crc32:%08x\"}", (unsigned)crc);
    size_t off = 0;
    for (int i = 0; i < p->layout.n_tensors; i++) {
        const sk_tensor_info *t = &p->layout.tensors[i];
        sb_printf(&h, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%d", t->name, t->shape[0]);
        if (t->ndim == 2) sb_printf(&h, ",%d", t->shape[1]);
        sb_printf(&h, "],\"data_offsets\":[%zu,%zu]}", off, off + 4 * t->numel);
        off += 4 * t->numel;
    }
    sb_str(&h, "}");
    while (h.len % 8) sb_str(&h, " ");
    free(vs.s);
    if (vs.oom || h.oom) {
        free(h.s);
        prepared_free(p);
        return sk_fail(err, SK_ERR_NOMEM, "model save: out of memory building the header");
    }
    p->header = h.s;
    p->header_len = h.len;
    return SK_OK;
}

sk_status sk_model_checksum(const sk_model_config *cfg, const sk_vocab *vocab, const float *params,
                            const char *train_config, const char *state_file, uint32_t *out, sk_error *err) {
    prepared p;
    sk_status st = prepare(cfg, vocab, params, train_config, state_file, &p, err);
    if (st == SK_OK) *out = p.checksum;
    prepared_free(&p);
    return st;
}

sk_status sk_model_save(const char *path, const sk_model_config *cfg, const sk_vocab *vocab, const float *params,
                        const char *train_config, const char *state_file, uint32_t *checksum_out, sk_error *err) {
    prepared p;
    sk_status st = prepare(cfg, vocab, params, train_config, state_file, &p, err);
    if (st != SK_OK) {
        char tmp[SK_ERROR_MSG_MAX];
        snprintf(tmp, sizeof tmp, "%s", err ? err->msg : "");
        return sk_fail(err, st, "%s: %s", path, tmp);
    }
    unsigned char len8[8];
    sk_put_le64(len8, (uint64_t)p.header_len);
    sk_atomic_file af;
    st = sk_atomic_open(&af, path, err);
    if (st == SK_OK) st = sk_atomic_write(&af, len8, 8, err);
    if (st == SK_OK) st = sk_atomic_write(&af, p.header, p.header_len, err);
    if (st == SK_OK) st = sk_write_f32_le(&af, params, p.layout.total, NULL, err);
    if (st == SK_OK) st = sk_atomic_commit(&af, err);
    else sk_atomic_abort(&af);
    if (st == SK_OK && checksum_out) *checksum_out = p.checksum;
    prepared_free(&p);
    return st;
}

// ---- load ----------------------------------------------------------------------------------

// A positive decimal integer written without sign or leading zeros, at most 1 << 30.
static bool parse_count(const char *s, size_t n, int *out) {
    if (n == 0 || n > 10 || s[0] == '0') return false;
    long long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v > (1 << 30)) return false;
    *out = (int)v;
    return true;
}

static bool parse_dropout(const char *s, size_t n, float *out) {
    char buf[64];
    if (n == 0 || n >= sizeof buf || strspn(s, "0123456789.eE+-") < n) return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    double d = strtod(buf, &end);
    if (end != buf + n || !isfinite(d) || d < 0.0 || d >= 1.0) return false;
    *out = (float)d;
    return *out < 1.0f;
}

typedef struct {
    sk_meta_entry e[SK_MAX_META];
    size_t n;
    int version; // of the checksum: 1 or 2 (a file without "format" is read as the current version)
} meta_list;

static void meta_list_free(meta_list *m) {
    for (size_t i = 0; i < m->n; i++) free(m->e[i].key), free(m->e[i].val);
    m->n = 0;
}

static const sk_meta_entry *meta_find(const meta_list *m, const char *key) {
    for (size_t i = 0; i < m->n; i++)
        if (m->e[i].klen == strlen(key) && memcmp(m->e[i].key, key, m->e[i].klen) == 0) return &m->e[i];
    return NULL;
}

#define SK_REQUIRED_META "vocab, vocab_size, embed_size, hidden_size and num_layers"

static sk_status read_meta(const char *path, const sk_json *doc, size_t meta, meta_list *m, sk_error *err) {
    char q[64];
    if (meta == SK_JSON_NONE || doc->nodes[meta].type != SK_JSON_OBJECT)
        return bad(err, path, "not a shakespeare checkpoint (no __metadata__; a model file needs the metadata "
                              SK_REQUIRED_META ")");
    if (doc->nodes[meta].count > SK_MAX_META) return bad(err, path, "too many metadata entries");
    for (size_t k = doc->nodes[meta].first; k != SK_JSON_NONE; k = doc->nodes[doc->nodes[k].next].next) {
        size_t v = doc->nodes[k].next;
        sk_meta_entry *e = &m->e[m->n];
        e->key = sk_json_string(doc, k, &e->klen);
        e->val = doc->nodes[v].type == SK_JSON_STRING ? sk_json_string(doc, v, &e->vlen) : NULL;
        if (e->key) m->n++;
        else free(e->val);
        if (!e->key || (!e->val && doc->nodes[v].type == SK_JSON_STRING))
            return sk_fail(err, SK_ERR_NOMEM, "%s: out of memory reading metadata", path);
        if (!e->val) return bad(err, path, "metadata %s is not a string", quoted(q, sizeof q, e->key, e->klen));
        for (size_t i = 0; i + 1 < m->n; i++)
            if (sk_meta_cmp(&m->e[i], e) == 0)
                return bad(err, path, "duplicate metadata key %s", quoted(q, sizeof q, e->key, e->klen));
    }
    // "format" is shakespeare's stamp, and it promises a checksum; another writer's file may
    // leave out both (then nothing vouches for the content, and the caller says so).
    const sk_meta_entry *f = meta_find(m, "format");
    m->version = 2;
    if (f && f->vlen == strlen(SK_MODEL_FORMAT_V1) && memcmp(f->val, SK_MODEL_FORMAT_V1, f->vlen) == 0)
        m->version = 1;
    else if (f && (f->vlen != strlen(SK_MODEL_FORMAT) || memcmp(f->val, SK_MODEL_FORMAT, f->vlen) != 0))
        return bad(err, path, "not a shakespeare checkpoint (format %s, expected \"%s\" or \"%s\")",
                   quoted(q, sizeof q, f->val, f->vlen), SK_MODEL_FORMAT, SK_MODEL_FORMAT_V1);
    static const char *required[] = {"vocab", "vocab_size", "embed_size", "hidden_size", "num_layers"};
    for (size_t i = 0; i < sizeof required / sizeof *required; i++)
        if (!meta_find(m, required[i]))
            return bad(err, path, "missing metadata \"%s\" (a model file needs " SK_REQUIRED_META ")", required[i]);
    if (f && !meta_find(m, "checksum"))
        return bad(err, path, "missing metadata \"checksum\", which format %s requires (a file from another "
                              "writer leaves out both)", quoted(q, sizeof q, f->val, f->vlen));
    return SK_OK;
}

// The hyperparameters into out->cfg (the sizes, the optional dropout, weight_drop and cell), checked,
// and their layout into out->layout.
static sk_status meta_hyperparams(const char *path, const meta_list *m, sk_model_file *out, sk_error *err) {
    char q[64];
    static const char *ints[] = {"vocab_size", "embed_size", "hidden_size", "num_layers"};
    int *dst[] = {&out->cfg.vocab_size, &out->cfg.embed_size, &out->cfg.hidden_size, &out->cfg.num_layers};
    for (int i = 0; i < 4; i++) {
        const sk_meta_entry *e = meta_find(m, ints[i]);
        if (!parse_count(e->val, e->vlen, dst[i]))
            return bad(err, path, "bad metadata %s = %s (expected a positive integer)", ints[i],
                       quoted(q, sizeof q, e->val, e->vlen));
    }
    const sk_meta_entry *e = meta_find(m, "dropout"); // optional in another writer's file
    if (e && !parse_dropout(e->val, e->vlen, &out->cfg.dropout))
        return bad(err, path, "bad metadata dropout = %s (expected a number in [0, 1))",
                   quoted(q, sizeof q, e->val, e->vlen));
    if ((e = meta_find(m, "weight_drop")) && !parse_dropout(e->val, e->vlen, &out->cfg.weight_drop))
        return bad(err, path, "bad metadata weight_drop = %s (expected a number in [0, 1))",
                   quoted(q, sizeof q, e->val, e->vlen));
    if ((e = meta_find(m, "cell"))) { // absent: an LSTM, as every file before cells were named
        char name[16] = "";
        if (e->vlen < sizeof name) memcpy(name, e->val, e->vlen);
        const sk_cell *cell = sk_cell_by_name(name); // a longer value names no cell
        if (!cell)
            return bad(err, path, "bad metadata cell = %s (expected one of %s)", quoted(q, sizeof q, e->val, e->vlen),
                       sk_cell_names());
        out->cfg.cell = cell->kind;
    }
    // The one check of the config and the one build of its layout (model_file.h: the loaded model
    // carries it); only running out of memory fails it otherwise.
    sk_status st = sk_param_layout_init(&out->layout, &out->cfg, err);
    if (st == SK_ERR_NOMEM) return sk_fail(err, st, "%s: out of memory for the parameter layout", path);
    if (st != SK_OK) {
        char tmp[SK_ERROR_MSG_MAX];
        snprintf(tmp, sizeof tmp, "%s", err ? err->msg : "");
        return bad(err, path, "bad hyperparameters (%s)", tmp);
    }
    return SK_OK;
}

// The optional checksum, "crc32:" and 8 hex digits.
static sk_status meta_checksum(const char *path, const meta_list *m, sk_model_file *out, sk_error *err) {
    char q[64];
    const sk_meta_entry *e = meta_find(m, "checksum");
    if (!e) return SK_OK;
    if (e->vlen != 14 || memcmp(e->val, "crc32:", 6) != 0 || strspn(e->val + 6, "0123456789abcdef") != 8)
        return bad(err, path, "bad metadata checksum = %s (expected \"crc32:\" and 8 hex digits)",
                   quoted(q, sizeof q, e->val, e->vlen));
    out->checksum = (uint32_t)strtoul(e->val + 6, NULL, 16);
    out->has_checksum = 1;
    return SK_OK;
}

// The vocabulary: a JSON array of vocab_size code points, ascending.
static sk_status meta_vocab(const char *path, const meta_list *m, sk_model_file *out, sk_error *err) {
    const sk_meta_entry *e = meta_find(m, "vocab");
    sk_json vd;
    if (sk_json_parse(&vd, e->val, e->vlen, (size_t)out->cfg.vocab_size + 1, NULL) != SK_OK || vd.nodes[0].type != SK_JSON_ARRAY) {
        sk_json_free(&vd);
        return bad(err, path, "bad metadata vocab (expected a JSON array of code points)");
    }
    if (vd.nodes[0].count != (size_t)out->cfg.vocab_size) {
        size_t cnt = vd.nodes[0].count;
        sk_json_free(&vd);
        return bad(err, path, "vocab has %zu entries, vocab_size says %d", cnt, out->cfg.vocab_size);
    }
    uint32_t *cps = malloc(vd.nodes[0].count * sizeof *cps);
    if (!cps) {
        sk_json_free(&vd);
        return sk_fail(err, SK_ERR_NOMEM, "%s: out of memory reading the vocabulary", path);
    }
    size_t i = 0;
    sk_status st = SK_OK;
    for (size_t k = vd.nodes[0].first; k != SK_JSON_NONE; k = vd.nodes[k].next, i++) {
        uint64_t v;
        if (!sk_json_u64(&vd, k, &v) || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF) || (i > 0 && v <= cps[i - 1])) {
            st = bad(err, path, "bad metadata vocab: entry %zu is not a code point above the previous one", i);
            break;
        }
        cps[i] = (uint32_t)v;
    }
    sk_json_free(&vd);
    if (st == SK_OK) {
        st = sk_vocab_from_codepoints(&out->vocab, cps, out->cfg.vocab_size, err);
        if (st != SK_OK) {
            char tmp[SK_ERROR_MSG_MAX];
            snprintf(tmp, sizeof tmp, "%s", err ? err->msg : "");
            st = sk_fail(err, st, "%s: bad metadata vocab (%s)", path, tmp);
        }
    }
    free(cps);
    return st;
}

// The optional vocab_mode, "utf8" or "bytes" (then no entry above 255).
static sk_status meta_vocab_mode(const char *path, const meta_list *m, sk_model_file *out, sk_error *err) {
    char q[64];
    const sk_meta_entry *e = meta_find(m, "vocab_mode");
    if (!e) return SK_OK;
    if (e->vlen == 5 && memcmp(e->val, "bytes", 5) == 0) out->vocab.bytes = 1;
    else if (!(e->vlen == 4 && memcmp(e->val, "utf8", 4) == 0))
        return bad(err, path, "bad metadata vocab_mode = %s (expected \"utf8\" or \"bytes\")",
                   quoted(q, sizeof q, e->val, e->vlen));
    if (out->vocab.bytes && out->vocab.chars[out->vocab.size - 1] > 255)
        return bad(err, path, "bad metadata vocab: a byte vocabulary with an entry above 255");
    return SK_OK;
}

// The optional start_context: "\n" (the texts begin after a newline, which the vocabulary holds).
static sk_status meta_start_context(const char *path, const meta_list *m, sk_model_file *out, sk_error *err) {
    char q[64];
    const sk_meta_entry *e = meta_find(m, "start_context");
    if (!e || e->vlen == 0) return SK_OK;
    if (e->vlen != 1 || e->val[0] != '\n')
        return bad(err, path, "bad metadata start_context = %s (expected \"\\n\" or none)",
                   quoted(q, sizeof q, e->val, e->vlen));
    if (sk_vocab_index(&out->vocab, '\n') < 0)
        return bad(err, path, "bad metadata start_context: the vocabulary has no newline");
    out->vocab.start_newline = 1;
    return SK_OK;
}

// The optional state_file (a file name beside the checkpoint) and train_config, copied.
static sk_status meta_run_files(const char *path, const meta_list *m, sk_model_file *out, sk_error *err) {
    char q[64];
    const sk_meta_entry *e;
    if ((e = meta_find(m, "state_file"))) {
        if (!sk_valid_basename(e->val, e->vlen))
            return bad(err, path, "bad metadata state_file = %s (expected a file name without '/')",
                       quoted(q, sizeof q, e->val, e->vlen));
        out->state_file = strdup(e->val);
    }
    if ((e = meta_find(m, "train_config"))) out->train_config = strdup(e->val);
    if ((meta_find(m, "state_file") && !out->state_file) || (meta_find(m, "train_config") && !out->train_config))
        return sk_fail(err, SK_ERR_NOMEM, "%s: out of memory", path);
    return SK_OK;
}

// Hyperparameters, vocabulary, checksum, state_file and train_config into out.
static sk_status read_config(const char *path, const meta_list *m, sk_model_file *out, sk_error *err) {
    sk_status st = meta_hyperparams(path, m, out, err);
    if (st == SK_OK) st = meta_checksum(path, m, out, err);
    if (st == SK_OK) st = meta_vocab(path, m, out, err);
    if (st == SK_OK) st = meta_vocab_mode(path, m, out, err);
    if (st == SK_OK) st = meta_start_context(path, m, out, err);
    if (st == SK_OK) st = meta_run_files(path, m, out, err);
    return st;
}

typedef struct {
    uint64_t begin, end;
    int tensor; // index into the layout, -1 when not seen yet
} span;

static int span_cmp(const void *a, const void *b) {
    const span *x = a, *y = b;
    return (x->begin > y->begin) - (x->begin < y->begin);
}

// One tensor entry {"dtype":"F32","shape":[...],"data_offsets":[b,e]} checked against t.
static sk_status read_tensor(const char *path, const sk_json *doc, size_t info, const sk_tensor_info *t, span *s,
                             sk_error *err) {
    char q[64];
    size_t dtype = sk_json_get(doc, info, "dtype"), shape = sk_json_get(doc, info, "shape");
    size_t offs = sk_json_get(doc, info, "data_offsets");
    if (doc->nodes[info].type != SK_JSON_OBJECT || dtype == SK_JSON_NONE || shape == SK_JSON_NONE ||
        offs == SK_JSON_NONE || doc->nodes[info].count != 3)
        return bad(err, path, "tensor %s: expected exactly dtype, shape and data_offsets", t->name);
    if (!sk_json_string_eq(doc, dtype, "F32")) {
        const sk_json_node *d = &doc->nodes[dtype];
        return bad(err, path, "tensor %s has dtype %s, expected F32", t->name,
                   quoted(q, sizeof q, doc->src + d->start, d->len));
    }
    const sk_json_node *sh = &doc->nodes[shape];
    bool ok = sh->type == SK_JSON_ARRAY && sh->count == (size_t)t->ndim;
    size_t k = ok ? sh->first : SK_JSON_NONE;
    for (int i = 0; ok && i < t->ndim; i++, k = doc->nodes[k].next) {
        uint64_t v;
        ok = sk_json_u64(doc, k, &v) && v == (uint64_t)t->shape[i];
    }
    if (!ok) {
        char want[40];
        if (t->ndim == 2) snprintf(want, sizeof want, "[%d,%d]", t->shape[0], t->shape[1]);
        else snprintf(want, sizeof want, "[%d]", t->shape[0]);
        return bad(err, path, "tensor %s has shape %s, expected %s", t->name,
                   quoted(q, sizeof q, doc->src + sh->start, sh->len), want);
    }
    const sk_json_node *o = &doc->nodes[offs];
    if (o->type != SK_JSON_ARRAY || o->count != 2 || !sk_json_u64(doc, o->first, &s->begin) ||
        !sk_json_u64(doc, doc->nodes[o->first].next, &s->end) || s->end < s->begin)
        return bad(err, path, "tensor %s has bad data_offsets %s", t->name,
                   quoted(q, sizeof q, doc->src + o->start, o->len));
    if (s->end - s->begin != 4 * (uint64_t)t->numel)
        return bad(err, path, "tensor %s has %llu data bytes, its shape needs %llu", t->name,
                   (unsigned long long)(s->end - s->begin), 4 * (unsigned long long)t->numel);
    return SK_OK;
}

// Checks every tensor entry of the header against the layout; spans[i] is tensor i's.
static sk_status read_tensors(const char *path, const sk_json *doc, const sk_param_layout *lay, span *spans,
                              sk_error *err) {
    char q[64];
    for (int i = 0; i < lay->n_tensors; i++) spans[i].tensor = -1;
    int seen_meta = 0;
    for (size_t k = doc->nodes[0].first; k != SK_JSON_NONE; k = doc->nodes[doc->nodes[k].next].next) {
        size_t klen;
        char *key = sk_json_string(doc, k, &klen);
        if (!key) return sk_fail(err, SK_ERR_NOMEM, "%s: out of memory", path);
        const sk_tensor_info *t = strlen(key) == klen ? sk_param_find(lay, key) : NULL;
        sk_status st = SK_OK;
        if (strcmp(key, "__metadata__") == 0 && klen == 12) {
            if (seen_meta++) st = bad(err, path, "duplicate __metadata__");
        } else if (!t) {
            st = bad(err, path, "unexpected tensor %s", quoted(q, sizeof q, key, klen));
        } else if (spans[t - lay->tensors].tensor >= 0) {
            st = bad(err, path, "duplicate tensor %s", t->name);
        } else {
            st = read_tensor(path, doc, doc->nodes[k].next, t, &spans[t - lay->tensors], err);
            spans[t - lay->tensors].tensor = (int)(t - lay->tensors);
        }
        free(key);
        if (st != SK_OK) return st;
    }
    for (int i = 0; i < lay->n_tensors; i++)
        if (spans[i].tensor < 0) return bad(err, path, "missing tensor %s", lay->tensors[i].name);
    // Like the safetensors library: sorted by offset, the tensors tile the data section.
    qsort(spans, (size_t)lay->n_tensors, sizeof *spans, span_cmp);
    uint64_t at = 0;
    for (int i = 0; i < lay->n_tensors; i++) {
        const char *name = lay->tensors[spans[i].tensor].name;
        if (spans[i].begin < at) return bad(err, path, "tensor %s overlaps another tensor's data", name);
        if (spans[i].begin > at) return bad(err, path, "unused bytes before tensor %s's data", name);
        at = spans[i].end;
    }
    return SK_OK;
}

static sk_status load(const char *path, sk_reader *r, sk_model_file *out, sk_error *err) {
    unsigned char len8[8];
    if (r->size < 8)
        return bad(err, path, "truncated (file has %llu bytes, a safetensors file has at least 8)",
                   (unsigned long long)r->size);
    sk_status st = sk_reader_read(r, len8, 8, path, err);
    if (st != SK_OK) return st;
    uint64_t hlen = sk_get_le64(len8);
    if (hlen > SK_MAX_HEADER)
        return bad(err, path, "not a shakespeare checkpoint (header length %llu is not plausible)",
                   (unsigned long long)hlen);
    if (hlen > r->size - 8)
        return bad(err, path, "truncated (header says %llu bytes, file has %llu)", (unsigned long long)(8 + hlen),
                   (unsigned long long)r->size);
    char *hdr = malloc(hlen ? hlen : 1);
    if (!hdr) return sk_fail(err, SK_ERR_NOMEM, "%s: out of memory for a %llu-byte header", path, (unsigned long long)hlen);
    sk_json doc = {0};
    meta_list meta = {0};
    const sk_param_layout *lay = &out->layout; // built by read_config
    span *spans = NULL;
    st = sk_reader_read(r, hdr, hlen, path, err);
    if (st == SK_OK && (hlen < 2 || hdr[0] != '{'))
        st = bad(err, path, "not a shakespeare checkpoint (no safetensors header)");
    if (st == SK_OK && (st = sk_json_parse(&doc, hdr, hlen, SK_MAX_HEADER_VALUES, err)) != SK_OK) {
        char tmp[SK_ERROR_MSG_MAX];
        snprintf(tmp, sizeof tmp, "%s", err ? err->msg : "");
        st = st == SK_ERR_NOMEM ? st : bad(err, path, "not a shakespeare checkpoint (header: %s)", tmp);
    }
    if (st == SK_OK) st = read_meta(path, &doc, sk_json_get(&doc, 0, "__metadata__"), &meta, err);
    if (st == SK_OK) st = read_config(path, &meta, out, err);
    if (st == SK_OK && !(spans = calloc((size_t)lay->n_tensors, sizeof *spans)))
        st = sk_fail(err, SK_ERR_NOMEM, "%s: out of memory", path);
    if (st == SK_OK) st = read_tensors(path, &doc, lay, spans, err);
    if (st == SK_OK) {
        uint64_t need = 4 * (uint64_t)lay->total, have = r->size - 8 - hlen;
        if (have < need)
            st = bad(err, path, "truncated (header says %llu bytes, file has %llu)",
                     (unsigned long long)(8 + hlen + need), (unsigned long long)r->size);
        else if (have > need)
            st = bad(err, path, "%llu unexpected bytes after the tensor data", (unsigned long long)(have - need));
    }
    if (st == SK_OK && !(out->params = malloc(lay->total * sizeof *out->params)))
        st = sk_fail(err, SK_ERR_NOMEM, "%s: out of memory for %zu parameters", path, lay->total);
    if (st == SK_OK) {
        uint32_t crc = meta.version == 1 ? sk_checksum_v1_meta(meta.e, meta.n) : 0;
        for (int i = 0; i < lay->n_tensors && st == SK_OK; i++) { // in file order
            const sk_tensor_info *t = &lay->tensors[spans[i].tensor];
            st = sk_read_f32_le(r, out->params + t->offset, t->numel, &crc, path, err);
        }
        if (st == SK_OK && meta.version == 2) crc = sk_checksum_v2(meta.e, meta.n, lay, out->params);
        if (st == SK_OK && out->has_checksum && crc != out->checksum)
            st = bad(err, path, "checksum mismatch (file is corrupt)");
    }
    free(spans);
    meta_list_free(&meta);
    sk_json_free(&doc);
    free(hdr);
    return st;
}

sk_status sk_model_load(const char *path, sk_model_file *out, sk_error *err) {
    memset(out, 0, sizeof *out);
    sk_reader r;
    sk_status st = sk_reader_open(&r, path, err);
    if (st != SK_OK) return st;
    st = load(path, &r, out, err);
    sk_reader_close(&r);
    if (st != SK_OK) sk_model_file_free(out);
    return st;
}

sk_status sk_model_load_mem(const char *path, const void *data, size_t n, sk_model_file *out, sk_error *err) {
    memset(out, 0, sizeof *out);
    sk_reader r = {.f = NULL, .mem = data, .size = n, .pos = 0};
    sk_status st = load(path, &r, out, err);
    if (st != SK_OK) sk_model_file_free(out);
    return st;
}
