// test_model_checksum.c: the model file's content checksum and the loader's acceptance rules.
// Covers: the format-2 checksum equals the canonical form of checkpoint.h, computed here
// independently; the same content in other writers' layouts (tensor order, key order, JSON
// spacing) loads with the same checksum; a format-1 file written by the previous release
// (tests/data/v1) still loads with its state; a file without format and checksum loads
// unverified, and its state file is ignored; missing metadata, a missing, extra or misshapen
// tensor, a changed tensor or metadata value under the old checksum are refused with
// SK_ERR_FORMAT and a message naming the file and what is wrong.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoint/safetensors.h"
#include "shakespeare/checkpoint.h"
#include "test_util.h"

// ---- an independent writer of safetensors files ----------------------------------------------

typedef struct {
    const char *key, *val;
} kv;

typedef struct {
    const char *name, *dtype;
    int ndim, shape[2];
    const void *data; // little-endian bytes (this test runs on little-endian hosts)
    size_t nbytes;
} tensor_desc;

enum { NO_CHECKSUM, CHECKSUM_V2 };

static uint32_t crc_u64(uint32_t crc, uint64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
    return sk_crc32(crc, b, 8);
}
static uint32_t crc_str(uint32_t crc, const char *s) { return sk_crc32(crc_u64(crc, strlen(s)), s, strlen(s)); }
static int kv_key_cmp(const void *a, const void *b) { return strcmp(((const kv *)a)->key, ((const kv *)b)->key); }
static int desc_name_cmp(const void *a, const void *b) {
    return strcmp(((const tensor_desc *)a)->name, ((const tensor_desc *)b)->name);
}

// checkpoint.h's canonical form, restated: sorted metadata but "checksum", sorted tensors.
static uint32_t canonical_crc(const kv *meta, int nmeta, const tensor_desc *t, int nt) {
    kv m[32];
    tensor_desc d[64];
    int nm = 0;
    for (int i = 0; i < nmeta; i++)
        if (strcmp(meta[i].key, "checksum") != 0) m[nm++] = meta[i];
    memcpy(d, t, (size_t)nt * sizeof *t);
    qsort(m, (size_t)nm, sizeof *m, kv_key_cmp);
    qsort(d, (size_t)nt, sizeof *d, desc_name_cmp);
    uint32_t crc = crc_u64(0, (uint64_t)nm);
    for (int i = 0; i < nm; i++) crc = crc_str(crc_str(crc, m[i].key), m[i].val);
    crc = crc_u64(crc, (uint64_t)nt);
    for (int i = 0; i < nt; i++) {
        crc = crc_u64(crc_str(crc_str(crc, d[i].name), d[i].dtype), (uint64_t)d[i].ndim);
        for (int k = 0; k < d[i].ndim; k++) crc = crc_u64(crc, (uint64_t)d[i].shape[k]);
        crc = sk_crc32(crc_u64(crc, d[i].nbytes), d[i].data, d[i].nbytes);
    }
    return crc;
}

// A safetensors file: metadata in the given order (plus a format-2 checksum when asked), tensors
// and their data in the given order; pretty: spaces and newlines as Python's json.dumps(indent).
static size_t build(unsigned char *out, size_t cap, const kv *meta, int nmeta, const tensor_desc *t, int nt,
                    int checksum, int pretty) {
    static char h[1 << 16];
    const char *sep = pretty ? ",\n  " : ",", *colon = pretty ? ": " : ":";
    int hn = sprintf(h, "{%s\"__metadata__\"%s{", pretty ? "\n  " : "", colon);
    for (int i = 0; i < nmeta; i++) hn += sprintf(h + hn, "%s\"%s\"%s\"%s\"", i ? sep : "", meta[i].key, colon, meta[i].val);
    if (checksum == CHECKSUM_V2)
        hn += sprintf(h + hn, "%s\"checksum\"%s\"crc32:%08x\"", nmeta ? sep : "", colon,
                      (unsigned)canonical_crc(meta, nmeta, t, nt));
    hn += sprintf(h + hn, "}");
    size_t off = 0;
    for (int i = 0; i < nt; i++) {
        hn += sprintf(h + hn, "%s\"%s\"%s{\"dtype\"%s\"%s\",\"shape\"%s[%d", sep, t[i].name, colon, colon, t[i].dtype,
                      colon, t[i].shape[0]);
        if (t[i].ndim == 2) hn += sprintf(h + hn, ",%d", t[i].shape[1]);
        hn += sprintf(h + hn, "],\"data_offsets\"%s[%zu,%zu]}", colon, off, off + t[i].nbytes);
        off += t[i].nbytes;
    }
    hn += sprintf(h + hn, "%s}", pretty ? "\n" : "");
    while (!pretty && hn % 8) h[hn++] = ' ';
    size_t n = 8 + (size_t)hn + off;
    if (n > cap) exit(1);
    for (int i = 0; i < 8; i++) out[i] = (unsigned char)((uint64_t)hn >> (8 * i));
    memcpy(out + 8, h, (size_t)hn);
    unsigned char *p = out + 8 + hn;
    for (int i = 0; i < nt; i++) memcpy(p, t[i].data, t[i].nbytes), p += t[i].nbytes;
    return n;
}

// ---- a model and its descriptions ------------------------------------------------------------

static const uint32_t VOCAB[] = {10, 0xE9, 0x1F600};
#define VOCAB_JSON "[10,233,128512]"

typedef struct {
    sk_model_config cfg;
    sk_vocab vocab;
    sk_param_layout lay;
    float *params;
    tensor_desc t[64]; // the layout's tensors, in model.h's order
    int nt;
} model;

static void model_init(model *m, int L) {
    sk_error err;
    m->cfg = (sk_model_config){.vocab_size = 3, .embed_size = 2, .hidden_size = 2, .num_layers = L};
    CHECK_OK(sk_vocab_from_codepoints(&m->vocab, VOCAB, 3, &err));
    CHECK_OK(sk_param_layout_init(&m->lay, &m->cfg, &err));
    m->params = malloc(m->lay.total * sizeof(float));
    sk_params_init(m->params, &m->lay, SK_INIT_UNIFORM, 0.08f, 0.0f, 99);
    m->nt = m->lay.n_tensors;
    for (int i = 0; i < m->nt; i++) {
        const sk_tensor_info *ti = &m->lay.tensors[i];
        m->t[i] = (tensor_desc){ti->name, "F32", ti->ndim, {ti->shape[0], ti->ndim == 2 ? ti->shape[1] : 0},
                                m->params + ti->offset, 4 * ti->numel};
    }
}

static void model_free(model *m) {
    sk_vocab_free(&m->vocab);
    sk_param_layout_free(&m->lay);
    free(m->params);
}

// The metadata sk_model_save writes for m (no train_config, no state_file), in its order.
static int saved_meta(kv *meta, const model *m) {
    static char L[8];
    snprintf(L, sizeof L, "%d", m->cfg.num_layers);
    kv k[] = {{"format", SK_MODEL_FORMAT}, {"vocab_size", "3"}, {"embed_size", "2"}, {"hidden_size", "2"},
              {"num_layers", L},           {"dropout", "0"},    {"vocab", VOCAB_JSON}};
    memcpy(meta, k, sizeof k);
    return 7;
}

static void expect_refused(const char *path, const char *needle, const char *what) {
    sk_error err;
    sk_model_file f;
    size_t k = strlen(path);
    sk_status st = sk_model_load(path, &f, &err);
    if (st != SK_ERR_FORMAT || strncmp(err.msg, path, k) != 0 || strncmp(err.msg + k, ": ", 2) != 0 ||
        !strstr(err.msg, needle) || strchr(err.msg, '\n')) {
        fprintf(stderr, "%s: got %s \"%s\", want a refusal naming %s with \"%s\"\n", what, sk_status_str(st),
                st == SK_OK ? "" : err.msg, path, needle);
        sk_test_failures++;
    }
    CHECK(f.params == NULL && f.vocab.chars == NULL);
    sk_model_file_free(&f);
}

static unsigned char buf[1 << 17];

// ---- tests ------------------------------------------------------------------------------------

// sk_model_save's checksum is the canonical form, and other layouts of the same content load
// with that checksum and those parameters.
static void test_layouts(const char *dir) {
    sk_error err;
    for (int L = 1; L <= 11; L += 10) { // 11 layers: "lstm.bias_hh_l10" sorts before "..._l2"
        model m;
        model_init(&m, L);
        char path[600];
        snprintf(path, sizeof path, "%s/ours.safetensors", dir);
        uint32_t cs;
        CHECK_OK(sk_model_save(path, &m.cfg, &m.vocab, m.params, NULL, NULL, &cs, &err));
        kv meta[16];
        int nm = saved_meta(meta, &m);
        CHECK(cs == canonical_crc(meta, nm, m.t, m.nt));

        // Other writers: tensors (and data) in name order or reversed, keys reversed, pretty JSON.
        tensor_desc sorted[64], reversed[64];
        memcpy(sorted, m.t, sizeof m.t);
        qsort(sorted, (size_t)m.nt, sizeof *sorted, desc_name_cmp);
        for (int i = 0; i < m.nt; i++) reversed[i] = m.t[m.nt - 1 - i];
        kv rmeta[16];
        for (int i = 0; i < nm; i++) rmeta[i] = meta[nm - 1 - i];
        struct { const kv *meta; const tensor_desc *t; int pretty; } v[] = {
            {meta, sorted, 0}, {rmeta, sorted, 1}, {rmeta, reversed, 0}};
        for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
            size_t n = build(buf, sizeof buf, v[i].meta, nm, v[i].t, m.nt, CHECKSUM_V2, v[i].pretty);
            snprintf(path, sizeof path, "%s/other%zu.safetensors", dir, i);
            sk_test_write_file(path, buf, n);
            sk_model_file f;
            CHECK_OK(sk_model_load(path, &f, &err));
            CHECK(f.has_checksum && f.checksum == cs);
            CHECK(memcmp(f.params, m.params, m.lay.total * sizeof(float)) == 0 && sk_vocab_equal(&f.vocab, &m.vocab));
            sk_model_file_free(&f);
        }
        model_free(&m);
    }
}

// A file of the previous format, written by the previous release, loads with its state.
static void test_format_1(void) {
    sk_error err;
    char path[600];
    sk_test_source_path(path, sizeof path, "tests/data/v1/last.safetensors");
    sk_model_file f;
    sk_train_state s;
    int has_state = 0;
    CHECK_OK(sk_checkpoint_load(path, &f, &s, &has_state, &err));
    CHECK(f.has_checksum && has_state && s.step == 150 && f.cfg.hidden_size == 16 && f.cfg.num_layers == 1);
    sk_train_state_free(&s);
    sk_model_file_free(&f);
}

// Another writer's file: no format, no checksum, no dropout; loads unverified, state ignored.
static void test_foreign(const char *dir) {
    sk_error err;
    model m;
    model_init(&m, 2);
    kv meta[] = {{"vocab", VOCAB_JSON}, {"vocab_size", "3"}, {"embed_size", "2"}, {"hidden_size", "2"},
                 {"num_layers", "2"}, {"state_file", "foreign.000000001.state"}};
    size_t n = build(buf, sizeof buf, meta, 6, m.t, m.nt, NO_CHECKSUM, 1);
    char path[600], state_path[600];
    snprintf(path, sizeof path, "%s/foreign.safetensors", dir);
    snprintf(state_path, sizeof state_path, "%s/foreign.000000001.state", dir);
    sk_test_write_file(path, buf, n);
    sk_train_state s;
    CHECK_OK(sk_train_state_alloc(&s, m.lay.total, SK_OPTIM_ADAM, 2, 2, 1, 2, &err));
    CHECK_OK(sk_state_save(state_path, &s, 0x1234u, &err)); // a state that exists, for any model
    sk_train_state_free(&s);
    sk_model_file f;
    int has_state = 1;
    CHECK_OK(sk_checkpoint_load(path, &f, &s, &has_state, &err));
    CHECK(!f.has_checksum && f.checksum == 0 && !has_state && s.slots == NULL);
    CHECK(f.cfg.dropout == 0.0f && f.cfg.num_layers == 2 && sk_vocab_equal(&f.vocab, &m.vocab));
    CHECK(memcmp(f.params, m.params, m.lay.total * sizeof(float)) == 0);
    sk_model_file_free(&f);
    model_free(&m);
}

// Every malformed variant of a good format-2 file is refused, naming what is wrong.
static void test_malformed(const char *dir) {
    model m;
    model_init(&m, 2);
    char path[600];
    snprintf(path, sizeof path, "%s/bad.safetensors", dir);
    kv good[16];
    int ngood = saved_meta(good, &m);
    static const float one = 1.0f;
    static const double f64[3] = {0, 0, 0};
    enum { SAME, TRANSPOSED, F64, EXTRA, DATA_CHANGED };
    struct {
        const char *what;
        const char *drop[2];             // metadata keys left out
        const char *set_key, *set_val;   // a metadata value changed after the checksum was made
        int checksum;                    // CHECKSUM_V2 (of the file as built) or NO_CHECKSUM
        const char *tensor;              // the tensor left out (odd == SAME) or made odd
        int odd;
        const char *needle;
    } cases[] = {
        {"no vocab", {"vocab"}, NULL, NULL, CHECKSUM_V2, NULL, SAME, "missing metadata \"vocab\""},
        {"no vocab_size", {"vocab_size"}, NULL, NULL, CHECKSUM_V2, NULL, SAME, "missing metadata \"vocab_size\""},
        {"no embed_size", {"embed_size"}, NULL, NULL, CHECKSUM_V2, NULL, SAME, "missing metadata \"embed_size\""},
        {"no hidden_size", {"hidden_size"}, NULL, NULL, CHECKSUM_V2, NULL, SAME, "missing metadata \"hidden_size\""},
        {"no num_layers", {"num_layers"}, NULL, NULL, CHECKSUM_V2, NULL, SAME, "missing metadata \"num_layers\""},
        {"foreign, no vocab", {"vocab", "format"}, NULL, NULL, NO_CHECKSUM, NULL, SAME, "missing metadata \"vocab\""},
        {"foreign, no num_layers", {"num_layers", "format"}, NULL, NULL, NO_CHECKSUM, NULL, SAME,
         "missing metadata \"num_layers\""},
        {"format, no checksum", {NULL}, NULL, NULL, NO_CHECKSUM, NULL, SAME, "missing metadata \"checksum\""},
        {"format 3", {NULL}, "format", "shakespeare-lstm-3", CHECKSUM_V2, NULL, SAME, "not a shakespeare checkpoint"},
        {"missing tensor", {NULL}, NULL, NULL, CHECKSUM_V2, "lstm.bias_hh_l1", SAME, "missing tensor lstm.bias_hh_l1"},
        {"foreign, missing tensor", {"format"}, NULL, NULL, NO_CHECKSUM, "fc.bias", SAME, "missing tensor fc.bias"},
        {"transposed", {NULL}, NULL, NULL, CHECKSUM_V2, "lstm.weight_ih_l0", TRANSPOSED,
         "tensor lstm.weight_ih_l0 has shape \"[2,8]\", expected [8,2]"},
        {"foreign, transposed", {"format"}, NULL, NULL, NO_CHECKSUM, "fc.weight", TRANSPOSED,
         "tensor fc.weight has shape \"[2,3]\", expected [3,2]"},
        {"F64", {NULL}, NULL, NULL, CHECKSUM_V2, "fc.bias", F64, "tensor fc.bias has dtype \"F64\""},
        {"extra tensor", {NULL}, NULL, NULL, CHECKSUM_V2, "fc.extra", EXTRA, "unexpected tensor \"fc.extra\""},
        {"vocab_size 4", {NULL}, "vocab_size", "4", CHECKSUM_V2, NULL, SAME, "vocab has 3 entries"},
        {"hidden_size 3", {NULL}, "hidden_size", "3", CHECKSUM_V2, NULL, SAME, "has shape"},
        {"changed tensor", {NULL}, NULL, NULL, CHECKSUM_V2, "fc.weight", DATA_CHANGED, "checksum mismatch (file is corrupt)"},
        {"changed dropout", {NULL}, "dropout", "0.5", CHECKSUM_V2, NULL, SAME, "checksum mismatch (file is corrupt)"},
        {"changed vocab", {NULL}, "vocab", "[10,234,128512]", CHECKSUM_V2, NULL, SAME, "checksum mismatch"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        kv meta[16];
        int nm = 0;
        for (int i = 0; i < ngood; i++) {
            int dropped = 0;
            for (int k = 0; k < 2; k++) dropped |= cases[c].drop[k] && strcmp(good[i].key, cases[c].drop[k]) == 0;
            if (!dropped) meta[nm++] = good[i];
        }
        tensor_desc t[64];
        int nt = 0;
        float changed[8];
        for (int i = 0; i < m.nt; i++) {
            int hit = cases[c].tensor && strcmp(m.t[i].name, cases[c].tensor) == 0;
            if (hit && cases[c].odd == SAME) continue;
            t[nt] = m.t[i];
            if (hit && cases[c].odd == TRANSPOSED) t[nt].shape[0] = m.t[i].shape[1], t[nt].shape[1] = m.t[i].shape[0];
            if (hit && cases[c].odd == F64) t[nt].dtype = "F64", t[nt].data = f64, t[nt].nbytes = sizeof f64;
            nt++;
        }
        if (cases[c].odd == EXTRA) t[nt++] = (tensor_desc){"fc.extra", "F32", 1, {1, 0}, &one, 4};
        int checksum = cases[c].checksum;
        char cs[32];
        if (cases[c].set_key || cases[c].odd == DATA_CHANGED) { // the checksum of the content before the change
            snprintf(cs, sizeof cs, "crc32:%08x", (unsigned)canonical_crc(meta, nm, t, nt));
            for (int i = 0; i < nm; i++)
                if (cases[c].set_key && strcmp(meta[i].key, cases[c].set_key) == 0) meta[i].val = cases[c].set_val;
            meta[nm++] = (kv){"checksum", cs};
            checksum = NO_CHECKSUM;
        }
        for (int i = 0; i < nt && cases[c].odd == DATA_CHANGED; i++) {
            if (strcmp(t[i].name, cases[c].tensor) != 0) continue;
            memcpy(changed, t[i].data, t[i].nbytes);
            changed[0] += 1.0f;
            t[i].data = changed;
        }
        size_t n = build(buf, sizeof buf, meta, nm, t, nt, checksum, (int)(c % 2));
        sk_test_write_file(path, buf, n);
        expect_refused(path, cases[c].needle, cases[c].what);
    }
    model_free(&m);
}

int main(void) {
    char dir[512];
    sk_test_tmpdir(dir, sizeof dir, "checksum");
    test_layouts(dir);
    test_format_1();
    test_foreign(dir);
    test_malformed(dir);
    const char *files[] = {"ours", "other0", "other1", "other2", "foreign", "foreign.000000001", "bad"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char p[700];
        snprintf(p, sizeof p, "%s/%s.%s", dir, files[i], strcmp(files[i], "foreign.000000001") ? "safetensors" : "state");
        remove(p);
    }
    rmdir(dir);
    return sk_test_done("test_model_checksum");
}
