// test_checkpoint.c: model files (safetensors), training-state files and the two-file protocol.
// Covers: CRC-32 and the JSON parser; bit-exact round trips; the file being standard safetensors
// (read back by hand, and a hand-built file in Python's tensor order read by the loader);
// refusal of corrupt, truncated, foreign and inconsistent files (SK_ERR_FORMAT, messages
// naming the path), in this format and the previous one (tests/data/v1); state/model pairing; the save protocol, including SIGKILL mid-save;
// sk_point_params's named views against the layout's names.
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint/safetensors.h"
#include "io/binio.h"
#include "io/json.h"
#include "shakespeare/checkpoint.h"
#include "test_util.h"

// ---- helpers -------------------------------------------------------------------------------

static unsigned char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len + 1);
    if (!b || fread(b, 1, (size_t)len, f) != (size_t)len) exit(1);
    fclose(f);
    *n = (size_t)len;
    return b;
}

// buf = "dir/name"; a path too long for buf ends the test.
static void join(char *buf, size_t size, const char *dir, const char *name) {
    if (snprintf(buf, size, "%s/%s", dir, name) >= (int)size) {
        fprintf(stderr, "path too long: %s/%s\n", dir, name);
        exit(1);
    }
}

static int starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static char *find_bytes(unsigned char *hay, size_t n, const char *needle) {
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(hay + i, needle, k) == 0) return (char *)hay + i;
    return NULL;
}

// Expects status want and a message that starts with "<path>: " and contains needle (if any).
static void expect_fail(const char *file, int line, const char *call, sk_status got, sk_status want,
                        const sk_error *err, const char *path, const char *needle) {
    size_t k = strlen(path);
    int named = strncmp(err->msg, path, k) == 0 && err->msg[k] == ':' && err->msg[k + 1] == ' ';
    if (got != want || !named || (needle && !strstr(err->msg, needle))) {
        fprintf(stderr, "%s:%d: %s -> %s \"%s\", expected %s naming %s with \"%s\"\n", file, line, call,
                sk_status_str(got), err->msg, sk_status_str(want), path, needle ? needle : "");
        sk_test_failures++;
    }
}
#define EXPECT_FAIL(call, want, path, needle) \
    expect_fail(__FILE__, __LINE__, #call, (call), (want), &err, (path), (needle))

// Files in dir whose names end in ".state"; the last one seen is copied to name.
static int count_states(const char *dir, char *name, size_t size) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        size_t k = strlen(de->d_name);
        if (k > 6 && strcmp(de->d_name + k - 6, ".state") == 0) {
            n++;
            snprintf(name, size, "%s", de->d_name);
        }
    }
    if (d) closedir(d);
    return n;
}

static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *de;
    char p[1024];
    while (d && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        join(p, sizeof p, dir, de->d_name);
        unlink(p);
    }
    if (d) closedir(d);
    rmdir(dir);
}

typedef struct {
    sk_model_config cfg;
    sk_vocab vocab;
    sk_param_layout lay;
    float *params;
} model;

static void model_init(model *m, const uint32_t *chars, int V, int E, int H, int L, float dropout, uint64_t seed) {
    sk_error err;
    m->cfg = (sk_model_config){.vocab_size = V, .embed_size = E, .hidden_size = H, .num_layers = L, .dropout = dropout};
    CHECK_OK(sk_vocab_from_codepoints(&m->vocab, chars, V, &err));
    CHECK_OK(sk_param_layout_init(&m->lay, &m->cfg, &err));
    m->params = malloc(m->lay.total * sizeof(float));
    sk_params_init(m->params, &m->lay, SK_INIT_UNIFORM, 0.08f, 1.0f, seed);
}

static void model_free(model *m) {
    sk_vocab_free(&m->vocab);
    sk_param_layout_free(&m->lay);
    free(m->params);
}

static const uint32_t TINY_VOCAB[] = {10, 0xE9, 0x1F600};

// ---- CRC-32 and JSON -----------------------------------------------------------------------

static void test_crc32(void) {
    // The standard check value of CRC-32/ISO-HDLC (zlib's crc32) for "123456789".
    CHECK(sk_crc32(0, "123456789", 9) == 0xCBF43926u);
    CHECK(sk_crc32(0, "", 0) == 0);
    CHECK(sk_crc32(sk_crc32(0, "1234", 4), "56789", 5) == 0xCBF43926u); // continuation
}

static void test_json(void) {
    sk_error err;
    sk_json d;
    const char *ok = " {\"a\" : [1, -2.5e3, true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\\\"\"], \"b\":{}, \"a\":0} ";
    CHECK_OK(sk_json_parse(&d, ok, strlen(ok), 100, &err));
    CHECK(d.nodes[0].type == SK_JSON_OBJECT && d.nodes[0].count == 3);
    size_t a = sk_json_get(&d, 0, "a"); // the first "a"
    CHECK(a != SK_JSON_NONE && d.nodes[a].type == SK_JSON_ARRAY && d.nodes[a].count == 6);
    size_t k = d.nodes[a].first;
    uint64_t u;
    CHECK(sk_json_u64(&d, k, &u) && u == 1);
    k = d.nodes[k].next;
    CHECK(d.nodes[k].type == SK_JSON_NUMBER && !sk_json_u64(&d, k, &u)); // -2.5e3 is no u64
    k = d.nodes[k].next;
    CHECK(d.nodes[k].type == SK_JSON_TRUE);
    k = d.nodes[d.nodes[d.nodes[k].next].next].next;
    size_t len;
    char *s = sk_json_string(&d, k, &len);
    CHECK(s && len == 9 && memcmp(s, "x\xc3\xa9\xf0\x9f\x98\x80\n\"", 9) == 0);
    free(s);
    CHECK(sk_json_string_eq(&d, k, "x\xc3\xa9\xf0\x9f\x98\x80\n\""));
    CHECK(sk_json_get(&d, 0, "b") != SK_JSON_NONE && sk_json_get(&d, 0, "c") == SK_JSON_NONE);
    sk_json_free(&d);
    sk_json_free(&d); // twice is safe

    const char *big[] = {"18446744073709551615", "18446744073709551616", "1.0", "-1", "0"};
    const int big_ok[] = {1, 0, 0, 0, 1};
    for (int i = 0; i < 5; i++) {
        CHECK_OK(sk_json_parse(&d, big[i], strlen(big[i]), 1, &err));
        CHECK(sk_json_u64(&d, 0, &u) == big_ok[i]);
        sk_json_free(&d);
    }

    const char *bad[] = {"", "{", "[1,]", "{\"a\":1,}", "01", "1.", "-", "1e", "\"\\ud800\"", "\"\\udc00\"",
                         "\"\\ud800\\u0041\"", "\"\x01\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"",
                         "[1] x", "nul", "{\"a\" 1}", "\"abc", "\"\\x\"", "\"\\u12g4\"", "{1:2}", "[1 2]", "'a'"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        sk_status st = sk_json_parse(&d, bad[i], strlen(bad[i]), 100, &err);
        CHECK(st == SK_ERR_FORMAT && starts_with(err.msg, "invalid JSON at byte "));
        if (st == SK_OK) fprintf(stderr, "  accepted bad JSON #%zu\n", i);
        sk_json_free(&d);
    }
    // Bounded: "[1,2]" cut to 3 bytes is incomplete even though the bytes after it exist.
    CHECK(sk_json_parse(&d, "[1,2]", 3, 100, &err) == SK_ERR_FORMAT);
    // Value limit: "[1,2,3]" is 4 values.
    CHECK(sk_json_parse(&d, "[1,2,3]", 7, 3, &err) == SK_ERR_FORMAT && strstr(err.msg, "too many values"));
    CHECK_OK(sk_json_parse(&d, "[1,2,3]", 7, 4, &err));
    sk_json_free(&d);
    // Depth limit: SK_JSON_MAX_DEPTH nested arrays parse, one more does not.
    char deep[2 * SK_JSON_MAX_DEPTH + 3];
    for (int depth = SK_JSON_MAX_DEPTH; depth <= SK_JSON_MAX_DEPTH + 1; depth++) {
        memset(deep, '[', (size_t)depth);
        memset(deep + depth, ']', (size_t)depth);
        sk_status st = sk_json_parse(&d, deep, 2 * (size_t)depth, 100, &err);
        CHECK((st == SK_OK) == (depth == SK_JSON_MAX_DEPTH));
        sk_json_free(&d);
    }
}

// ---- model file ----------------------------------------------------------------------------

static void test_model_round_trip(const char *dir) {
    sk_error err;
    const uint32_t chars[] = {10, 32, 97, 0xE9, 0x1F600}; // '\n', ' ', 'a', U+00E9, U+1F600
    model m;
    model_init(&m, chars, 5, 3, 4, 2, 0.1f, 7);
    // Special values survive bit for bit.
    m.params[0] = -0.0f;
    m.params[1] = 1e-45f;
    m.params[2] = INFINITY;
    uint32_t nan_bits = 0x7fc12345u;
    memcpy(&m.params[3], &nan_bits, 4);
    const char *tc = "{\"lr\": 0.002, \"name\": \"caf\xc3\xa9 \\\"q\\\"\\n\", \"tab\": \"\t\"}";
    char path[512];
    join(path, sizeof path, dir, "rt.safetensors");
    uint32_t cs = 0;
    m.cfg.weight_drop = 0.3f;
    CHECK_OK(sk_model_save(path, &m.cfg, &m.vocab, m.params, tc, "rt.000000042.state", &cs, &err));
    m.cfg.weight_drop = 0.0f;
    sk_model_file f;
    CHECK_OK(sk_model_load(path, &f, &err));
    CHECK(f.cfg.vocab_size == 5 && f.cfg.embed_size == 3 && f.cfg.hidden_size == 4 && f.cfg.num_layers == 2);
    CHECK(f.cfg.dropout == 0.1f && f.cfg.weight_drop == 0.3f);
    // The loaded model carries its layout: the saved model's, tensor for tensor.
    CHECK(f.layout.total == m.lay.total && f.layout.n_tensors == m.lay.n_tensors && f.layout.n_tensors == 3 + 4 * 2);
    for (int i = 0; i < m.lay.n_tensors; i++)
        CHECK(strcmp(f.layout.tensors[i].name, m.lay.tensors[i].name) == 0 &&
              f.layout.tensors[i].offset == m.lay.tensors[i].offset && f.layout.tensors[i].numel == m.lay.tensors[i].numel);
    CHECK(sk_vocab_equal(&f.vocab, &m.vocab));
    CHECK(memcmp(f.params, m.params, m.lay.total * sizeof(float)) == 0);
    CHECK(f.train_config && strcmp(f.train_config, tc) == 0);
    CHECK(f.state_file && strcmp(f.state_file, "rt.000000042.state") == 0);
    CHECK(f.checksum == cs && cs != 0);
    sk_model_file_free(&f);
    sk_model_file_free(&f); // twice is safe

    // Optional entries absent.
    CHECK_OK(sk_model_save(path, &m.cfg, &m.vocab, m.params, NULL, NULL, NULL, &err));
    CHECK_OK(sk_model_load(path, &f, &err));
    CHECK(!f.train_config && !f.state_file && memcmp(f.params, m.params, m.lay.total * sizeof(float)) == 0);
    sk_model_file_free(&f);

    // Bad arguments are refused before anything is written.
    CHECK(sk_model_save(path, &m.cfg, &m.vocab, m.params, NULL, "../x.state", NULL, &err) == SK_ERR_ARG);
    CHECK(sk_model_save(path, &m.cfg, &m.vocab, m.params, "\xff", NULL, NULL, &err) == SK_ERR_ARG);
    m.cfg.vocab_size = 4;
    CHECK(sk_model_save(path, &m.cfg, &m.vocab, m.params, NULL, NULL, NULL, &err) == SK_ERR_ARG);
    model_free(&m);
}

// The programs' check for non-finite weights names the first one: tensor, [row, column] or
// [index], and the kind of value; a finite model passes.
static void test_check_finite(void) {
    sk_error err;
    const uint32_t chars[] = {10, 32, 97};
    model m;
    model_init(&m, chars, 3, 2, 4, 2, 0.0f, 9);
    sk_model_file f = {.cfg = m.cfg, .layout = m.lay, .params = m.params}; // borrowed: m owns them
    CHECK_OK(sk_model_file_check_finite(&f, "m.safetensors", &err));
    const sk_tensor_info *hh = sk_param_find(&m.lay, "lstm.weight_hh_l1"), *b = sk_param_find(&m.lay, "fc.bias");
    m.params[b->offset + 2] = -INFINITY; // a later tensor: the earlier one is named
    m.params[hh->offset + 2 * 4 + 3] = NAN;
    CHECK(sk_model_file_check_finite(&f, "m.safetensors", &err) == SK_ERR_FORMAT);
    CHECK(strncmp(err.msg, "m.safetensors: lstm.weight_hh_l1[2, 3] is NaN;", 46) == 0);
    m.params[hh->offset + 2 * 4 + 3] = 0.5f;
    CHECK(sk_model_file_check_finite(&f, "m.safetensors", &err) == SK_ERR_FORMAT);
    CHECK(strncmp(err.msg, "m.safetensors: fc.bias[2] is -inf;", 34) == 0);
    m.params[b->offset + 2] = INFINITY;
    CHECK(sk_model_file_check_finite(&f, "m.safetensors", &err) == SK_ERR_FORMAT && strstr(err.msg, "is +inf;"));
    m.params[b->offset + 2] = 3.4e38f; // the largest floats are finite
    CHECK_OK(sk_model_file_check_finite(&f, "m.safetensors", &err));
    model_free(&m);
}

// Reads the file the way any safetensors reader does, without the library's loader.
static void test_standard_layout(const char *dir) {
    sk_error err;
    model m;
    model_init(&m, TINY_VOCAB, 3, 2, 2, 2, 0.25f, 3);
    char path[512];
    join(path, sizeof path, dir, "std.safetensors");
    CHECK_OK(sk_model_save(path, &m.cfg, &m.vocab, m.params, NULL, NULL, NULL, &err));
    size_t n;
    unsigned char *b = read_all(path, &n);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | b[i];
    CHECK((8 + hlen) % 8 == 0);                    // data 8-byte aligned
    CHECK(8 + hlen + 4 * m.lay.total == n);        // nothing but the tensors after the header
    char *hdr = malloc(hlen + 1);
    memcpy(hdr, b + 8, hlen);
    hdr[hlen] = '\0';
    CHECK(starts_with(hdr, "{\"__metadata__\":{"));
    CHECK(strstr(hdr, "\"format\":\"shakespeare-lstm-2\""));
    CHECK(strstr(hdr, "\"vocab\":\"[10,233,128512]\""));
    CHECK(strstr(hdr, "\"dropout\":\"0.25\"") && strstr(hdr, "\"num_layers\":\"2\""));
    CHECK(!strstr(hdr, "weight_drop")); // written only when above 0
    size_t off = 0;
    for (int i = 0; i < m.lay.n_tensors; i++) { // PyTorch's names, shapes, contiguous offsets
        const sk_tensor_info *t = &m.lay.tensors[i];
        char want[256];
        if (t->ndim == 2)
            snprintf(want, sizeof want, "\"%s\":{\"dtype\":\"F32\",\"shape\":[%d,%d],\"data_offsets\":[%zu,%zu]}",
                     t->name, t->shape[0], t->shape[1], off, off + 4 * t->numel);
        else
            snprintf(want, sizeof want, "\"%s\":{\"dtype\":\"F32\",\"shape\":[%d],\"data_offsets\":[%zu,%zu]}",
                     t->name, t->shape[0], off, off + 4 * t->numel);
        if (!strstr(hdr, want)) fprintf(stderr, "  header lacks %s\n", want), sk_test_failures++;
        float x;
        memcpy(&x, b + 8 + hlen + off, 4); // first element, little-endian F32 (this host is LE)
        CHECK(x == m.params[t->offset]);
        off += 4 * t->numel;
    }
    CHECK(strstr(hdr, "\"lstm.weight_ih_l1\":{\"dtype\":\"F32\",\"shape\":[8,2]")); // (4H, H)
    // Everything after the JSON is padding spaces.
    sk_json d;
    CHECK_OK(sk_json_parse(&d, hdr, hlen, 1000, &err));
    CHECK(d.nodes[0].type == SK_JSON_OBJECT && d.nodes[0].count == (size_t)m.lay.n_tensors + 1);
    sk_json_free(&d);
    free(hdr);
    free(b);
    model_free(&m);
}

// A hand-built safetensors file of format 1 ("shakespeare-lstm-1", whose files still load):
// metadata meta[0..nmeta) (+ a checksum computed by that format's rule unless the list has one), tensors in alphabetical order as Python's
// safetensors writes them (data in that order too), optionally one extra tensor.
typedef struct {
    const char *key, *val;
} kv;

static int kv_cmp(const void *a, const void *b) { return strcmp(((const kv *)a)->key, ((const kv *)b)->key); }
static int name_cmp(const void *a, const void *b) {
    return strcmp(((const sk_tensor_info *)a)->name, ((const sk_tensor_info *)b)->name);
}

static size_t build_file(unsigned char *out, size_t cap, const kv *meta, int nmeta, const model *m,
                         const char *extra, const char *dtype) {
    kv sorted[16];
    memcpy(sorted, meta, (size_t)nmeta * sizeof *meta);
    qsort(sorted, (size_t)nmeta, sizeof *sorted, kv_cmp);
    sk_tensor_info t[64];
    int nt = m->lay.n_tensors;
    memcpy(t, m->lay.tensors, (size_t)nt * sizeof *t);
    qsort(t, (size_t)nt, sizeof *t, name_cmp);
    unsigned char *data = malloc(4 * m->lay.total + 64);
    size_t dn = 0;
    for (int i = 0; i < nt; i++) {
        memcpy(data + dn, m->params + t[i].offset, 4 * t[i].numel);
        dn += 4 * t[i].numel;
    }
    uint32_t crc = 0;
    int has_checksum = 0;
    for (int i = 0; i < nmeta; i++) {
        if (strcmp(sorted[i].key, "checksum") == 0) {
            has_checksum = 1;
            continue;
        }
        char line[1024];
        int k = snprintf(line, sizeof line, "%s=%s\n", sorted[i].key, sorted[i].val);
        crc = sk_crc32(crc, line, (size_t)k);
    }
    crc = sk_crc32(crc, data, dn);
    char *h = malloc(1 << 16);
    int hn = sprintf(h, "{\n  \"__metadata__\": {");
    for (int i = 0; i < nmeta; i++) hn += sprintf(h + hn, "%s\"%s\": \"%s\"", i ? ", " : "", sorted[i].key, sorted[i].val);
    if (!has_checksum) hn += sprintf(h + hn, "%s\"checksum\": \"crc32:%08x\"", nmeta ? ", " : "", (unsigned)crc);
    hn += sprintf(h + hn, "}");
    size_t off = 0;
    for (int i = 0; i < nt; i++) {
        hn += sprintf(h + hn, ",\n  \"%s\": {\"shape\": [%d", t[i].name, t[i].shape[0]);
        if (t[i].ndim == 2) hn += sprintf(h + hn, ", %d", t[i].shape[1]);
        hn += sprintf(h + hn, "], \"data_offsets\": [%zu, %zu], \"dtype\": \"%s\"}", off, off + 4 * t[i].numel,
                      dtype ? dtype : "F32");
        off += 4 * t[i].numel;
    }
    if (extra) { // a 1-element tensor after the others
        hn += sprintf(h + hn, ",\n  \"%s\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [%zu, %zu]}", extra,
                      off, off + 4);
        memset(data + dn, 0, 4);
        dn += 4;
    }
    hn += sprintf(h + hn, "\n}"); // deliberately not padded to 8 bytes: readers must not care
    size_t n = 8 + (size_t)hn + dn;
    if (n > cap) exit(1);
    for (int i = 0; i < 8; i++) out[i] = (unsigned char)((uint64_t)hn >> (8 * i));
    memcpy(out + 8, h, (size_t)hn);
    memcpy(out + 8 + hn, data, dn);
    free(h);
    free(data);
    return n;
}

static void test_hand_built(const char *dir) {
    sk_error err;
    model m;
    model_init(&m, TINY_VOCAB, 3, 2, 2, 1, 0.0f, 11);
    static unsigned char buf[1 << 16];
    char path[512];
    join(path, sizeof path, dir, "hand.safetensors");
    kv good[] = {{"format", "shakespeare-lstm-1"}, {"vocab_size", "3"}, {"embed_size", "2"}, {"hidden_size", "2"},
                 {"num_layers", "1"}, {"dropout", "0"}, {"vocab", "[10, 233, 128512]"}, {"note", "extra"}};
    size_t n = build_file(buf, sizeof buf, good, 8, &m, NULL, NULL);
    sk_test_write_file(path, buf, n);
    sk_model_file f;
    CHECK_OK(sk_model_load(path, &f, &err)); // any tensor order, unknown metadata covered by the checksum
    CHECK(memcmp(f.params, m.params, m.lay.total * sizeof(float)) == 0 && sk_vocab_equal(&f.vocab, &m.vocab));
    sk_model_file_free(&f);

    // Each variant differs from good in one entry (checksums recomputed, so only the check fires).
    struct {
        const char *key, *val, *extra, *dtype, *needle;
    } cases[] = {
        {"format", "other", NULL, NULL, "not a shakespeare checkpoint"},
        {"vocab_size", "03", NULL, NULL, "vocab_size"},
        {"vocab_size", "3x", NULL, NULL, "vocab_size"},
        {"hidden_size", "0", NULL, NULL, "hidden_size"},
        {"num_layers", "99999", NULL, NULL, "bad hyperparameters"},
        {"dropout", "1.0", NULL, NULL, "dropout"},
        {"dropout", "nan", NULL, NULL, "dropout"},
        {"dropout", "0x0.1p0", NULL, NULL, "dropout"},
        {"weight_drop", "1", NULL, NULL, "bad metadata weight_drop = \"1\""},
        {"weight_drop", "-0.5", NULL, NULL, "bad metadata weight_drop"},
        {"vocab", "[10, 10, 128512]", NULL, NULL, "vocab"},
        {"vocab", "[10, 55296, 128512]", NULL, NULL, "vocab"}, // a surrogate
        {"vocab", "[10, 233]", NULL, NULL, "vocab has 2 entries"},
        {"vocab", "10,233,128512", NULL, NULL, "vocab"},
        {"state_file", "../evil.state", NULL, NULL, "state_file"},
        {"state_file", "..", NULL, NULL, "state_file"},
        {"checksum", "crc32:12345678", NULL, NULL, "checksum mismatch"},
        {"checksum", "crc32:XYZ", NULL, NULL, "checksum"},
        {NULL, NULL, "fc.extra", NULL, "unexpected tensor \"fc.extra\""},
        {NULL, NULL, NULL, "F16", "dtype \"F16\""},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        kv meta[9];
        memcpy(meta, good, sizeof good);
        int nm = 8, replaced = 0;
        for (int i = 0; i < nm && cases[c].key; i++)
            if (strcmp(meta[i].key, cases[c].key) == 0) meta[i].val = cases[c].val, replaced = 1;
        if (cases[c].key && !replaced) meta[nm++] = (kv){cases[c].key, cases[c].val};
        n = build_file(buf, sizeof buf, meta, nm, &m, cases[c].extra, cases[c].dtype);
        sk_test_write_file(path, buf, n);
        EXPECT_FAIL(sk_model_load(path, &f, &err), SK_ERR_FORMAT, path, cases[c].needle);
        CHECK(f.params == NULL && f.vocab.chars == NULL); // nothing leaks out of a failed load
    }
    // A valid safetensors file that is not ours: no model metadata, or no metadata at all.
    kv foreign[] = {{"author", "someone"}};
    n = build_file(buf, sizeof buf, foreign, 1, &m, NULL, NULL);
    sk_test_write_file(path, buf, n);
    EXPECT_FAIL(sk_model_load(path, &f, &err), SK_ERR_FORMAT, path, "missing metadata \"vocab\"");
    const char *bare = "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    n = strlen(bare);
    memset(buf, 0, 8);
    buf[0] = (unsigned char)n;
    memcpy(buf + 8, bare, n);
    memset(buf + 8 + n, 0, 4);
    sk_test_write_file(path, buf, 8 + n + 4);
    EXPECT_FAIL(sk_model_load(path, &f, &err), SK_ERR_FORMAT, path, "not a shakespeare checkpoint");
    model_free(&m);
}

// Every single-bit flip (bits 0, 3, 6) of every byte of a good model file (header and data)
// is refused: CRC-32 catches all single-bit errors, and the header checks catch the rest
// (a flip in the "checksum" key leaves a file with "format" but no checksum: refused too).
// So is every truncation. From memory; label names the file in messages.
static void refuses_flips_and_truncations(const char *label, const unsigned char *good, size_t n) {
    sk_error err;
    sk_model_file f;
    unsigned char *b = malloc(n);
    int accepted = 0, bad_prefix = 0;
    for (size_t i = 0; i < n; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            memcpy(b, good, n);
            b[i] ^= (unsigned char)(1u << bit);
            sk_status st = sk_model_load_mem(label, b, n, &f, &err);
            if (st != SK_ERR_FORMAT || !starts_with(err.msg, label)) accepted++;
            sk_model_file_free(&f);
        }
    }
    for (size_t len = 0; len < n; len++) {
        sk_status st = sk_model_load_mem(label, good, len, &f, &err);
        if (st != SK_ERR_FORMAT || !starts_with(err.msg, label)) bad_prefix++;
        sk_model_file_free(&f);
    }
    if (accepted || bad_prefix) fprintf(stderr, "  %s: %d flips and %d truncations not refused\n", label, accepted, bad_prefix);
    CHECK(accepted == 0 && bad_prefix == 0);
    CHECK(sk_model_load_mem(label, good, n, &f, &err) == SK_OK); // the intact file loads
    sk_model_file_free(&f);
    free(b);
}

// A file of the previous format, written by the previous release: damage is refused the same way.
static void test_corruption_format_1(void) {
    char path[600];
    sk_test_source_path(path, sizeof path, "tests/data/v1/last.safetensors");
    size_t n;
    unsigned char *good = read_all(path, &n);
    refuses_flips_and_truncations(path, good, n);
    free(good);
}

static void test_corruption(const char *dir) {
    sk_error err;
    model m;
    model_init(&m, TINY_VOCAB, 3, 2, 2, 1, 0.5f, 5);
    char path[512], bad_path[512];
    join(path, sizeof path, dir, "c.safetensors");
    join(bad_path, sizeof bad_path, dir, "bad.safetensors");
    CHECK_OK(sk_model_save(path, &m.cfg, &m.vocab, m.params, "{\"x\":1}", "c.000000001.state", NULL, &err));
    size_t n;
    unsigned char *good = read_all(path, &n);
    unsigned char *b = malloc(n + 16);
    sk_model_file f;

    // A flipped byte in the tensor data: only the checksum can tell.
    memcpy(b, good, n);
    b[n - 3] ^= 0x10;
    sk_test_write_file(bad_path, b, n);
    EXPECT_FAIL(sk_model_load(bad_path, &f, &err), SK_ERR_FORMAT, bad_path, "checksum mismatch (file is corrupt)");
    printf("  flipped data byte: %s\n", err.msg);

    refuses_flips_and_truncations(bad_path, good, n);

    // A changed vocab entry (same length, still increasing): checksum mismatch.
    memcpy(b, good, n);
    char *v = find_bytes(b, n, "[10,233,128512]");
    CHECK(v != NULL);
    if (v) v[6] = '4'; // 233 -> 234
    sk_test_write_file(bad_path, b, n);
    EXPECT_FAIL(sk_model_load(bad_path, &f, &err), SK_ERR_FORMAT, bad_path, "checksum mismatch");

    // Truncations through a file, for a sample of lengths (refuses_flips_and_truncations: all, from memory).
    for (size_t len = 0; len < n; len++) {
        if (len % 37 == 0 || len == n - 1 || len == 8) {
            sk_test_write_file(bad_path, good, len);
            EXPECT_FAIL(sk_model_load(bad_path, &f, &err), SK_ERR_FORMAT, bad_path, NULL);
        }
    }
    sk_test_write_file(bad_path, good, n - 1);
    EXPECT_FAIL(sk_model_load(bad_path, &f, &err), SK_ERR_FORMAT, bad_path, "truncated (header says");
    printf("  truncated: %s\n", err.msg);
    sk_test_write_file(bad_path, good, 100);
    EXPECT_FAIL(sk_model_load(bad_path, &f, &err), SK_ERR_FORMAT, bad_path, "truncated (header says");

    // Extra bytes at the end.
    memcpy(b, good, n);
    b[n] = 0;
    sk_test_write_file(bad_path, b, n + 1);
    EXPECT_FAIL(sk_model_load(bad_path, &f, &err), SK_ERR_FORMAT, bad_path, "unexpected bytes");

    // Garbage and text.
    uint64_t x = 12345;
    for (size_t i = 0; i < n; i++) b[i] = (unsigned char)((x = sk_mix64(x)) >> 56);
    sk_test_write_file(bad_path, b, n);
    EXPECT_FAIL(sk_model_load(bad_path, &f, &err), SK_ERR_FORMAT, bad_path, NULL);
    const char *text = "First Citizen:\nBefore we proceed any further, hear me speak.\n";
    sk_test_write_file(bad_path, text, strlen(text));
    EXPECT_FAIL(sk_model_load(bad_path, &f, &err), SK_ERR_FORMAT, bad_path, "not a shakespeare checkpoint");
    printf("  text file: %s\n", err.msg);

    // Missing file and a directory: SK_ERR_IO naming the path.
    char missing[600];
    join(missing, sizeof missing, dir, "nope.safetensors");
    EXPECT_FAIL(sk_model_load(missing, &f, &err), SK_ERR_IO, missing, "No such file");
    EXPECT_FAIL(sk_model_load(dir, &f, &err), SK_ERR_IO, dir, NULL);
    free(b);
    free(good);
    model_free(&m);
}

// ---- state file ----------------------------------------------------------------------------

static void fill_state(sk_train_state *s, uint64_t seed) {
    sk_rng r;
    sk_rng_seed(&r, seed);
    for (size_t i = 0; i < (size_t)s->n_slots * s->n_params; i++) s->slots[i] = sk_rng_normal(&r);
    size_t nh = (size_t)s->S * (size_t)s->L * (size_t)s->B * (size_t)s->H;
    for (size_t i = 0; i < nh; i++) s->state[i] = sk_rng_normal(&r);
    s->step = 1234567890123ll;
    s->epoch = 3;
    s->window = 17;
    s->T = 100;
    s->best_val_loss = 1.4142135623730951;
    s->best_step = 1000;
    s->seed = 0xDEADBEEFCAFEF00Dull;
    s->elapsed_s = 12345.678;
    s->val_loss = 1.7320508075688772;
    s->rng = r;
}

static int state_equal(const sk_train_state *a, const sk_train_state *b) {
    size_t nh = (size_t)a->S * (size_t)a->L * (size_t)a->B * (size_t)a->H;
    return a->n_params == b->n_params && a->S == b->S && a->L == b->L && a->B == b->B && a->H == b->H && a->T == b->T &&
           a->step == b->step &&
           a->epoch == b->epoch && a->window == b->window && memcmp(&a->best_val_loss, &b->best_val_loss, 8) == 0 &&
           a->best_step == b->best_step && a->seed == b->seed && memcmp(a->rng.s, b->rng.s, sizeof a->rng.s) == 0 &&
           memcmp(&a->elapsed_s, &b->elapsed_s, 8) == 0 && memcmp(&a->val_loss, &b->val_loss, 8) == 0 &&
           a->optimizer == b->optimizer && a->n_slots == b->n_slots &&
           memcmp(a->slots, b->slots, 4 * a->n_params * (size_t)a->n_slots) == 0 &&
           memcmp(a->state, b->state, 4 * nh) == 0;
}

// Version 4 records N, the carried state's tensors a layer (a GRU's h alone here): a record
// outside 1..SK_MAX_CELL_STATES is refused naming it, and one that the file's bytes do not hold
// as truncated; a checkpoint whose state's N is not its model's cell's (an LSTM's h and c) is
// refused in one line naming both.
static void test_state_cell(const char *dir) {
    sk_error err;
    model m;
    model_init(&m, TINY_VOCAB, 3, 2, 4, 2, 0.0f, 8); // an LSTM: N = 2
    sk_train_state s, t;
    CHECK_OK(sk_train_state_alloc(&s, m.lay.total, SK_OPTIM_ADAM, 1, 2, 3, 4, &err));
    fill_state(&s, 2);
    char path[512];
    join(path, sizeof path, dir, "cell.000000001.state");
    CHECK_OK(sk_state_save(path, &s, 5, &err));
    CHECK_OK(sk_state_load(path, &t, 5, &err));
    CHECK(t.S == 1 && state_equal(&s, &t));
    sk_train_state_free(&t);
    size_t n;
    unsigned char *img = read_all(path, &n);
    const size_t at = 120 + 16 + 4 + 2 * 16 + 16; // N: after adam's record and the times
    CHECK(img[8] == 4 && sk_get_le32(img + at) == 1);
    const uint32_t bad[] = {0, SK_MAX_CELL_STATES + 1, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) { // under a good CRC
        sk_put_le32(img + at, bad[i]);
        sk_put_le32(img + n - 4, sk_crc32(0, img, n - 4));
        CHECK(sk_state_load_mem(path, img, n, &t, 5, &err) == SK_ERR_FORMAT && strstr(err.msg, "state tensors a layer"));
        CHECK(t.slots == NULL);
    }
    sk_put_le32(img + at, 2); // two tensors recorded, one held
    sk_put_le32(img + n - 4, sk_crc32(0, img, n - 4));
    CHECK(sk_state_load_mem(path, img, n, &t, 5, &err) == SK_ERR_FORMAT && strstr(err.msg, "truncated"));
    free(img);
    CHECK_OK(sk_checkpoint_save(dir, "cell", &m.cfg, &m.vocab, m.params, "{}", &s, &err));
    char model_path[512];
    join(model_path, sizeof model_path, dir, "cell.safetensors");
    sk_model_file f;
    int has = -1;
    CHECK(sk_checkpoint_load(model_path, &f, &t, &has, &err) == SK_ERR_MISMATCH &&
          strstr(err.msg, "training state holds 1 state tensor a layer; the model's lstm cell carries 2") &&
          !strchr(err.msg, '\n'));
    CHECK(t.slots == NULL && f.params == NULL);
    CHECK_OK(sk_checkpoint_remove(dir, "cell", &err));
    sk_train_state_free(&s);
    model_free(&m);
}

// Version 3 records the run's elapsed seconds and the model's validation loss (NaN: not
// evaluated, what a new state holds); a version 2 file, the same bytes without them, loads with
// 0 and NaN; a negative or infinite elapsed_s, an infinite val_loss, and a version past 3 are refused.
static void test_state_times(const char *dir) {
    sk_error err;
    sk_train_state s, t;
    CHECK_OK(sk_train_state_alloc(&s, 5, SK_OPTIM_ADAM, 2, 1, 1, 2, &err));
    CHECK(s.elapsed_s == 0.0 && isnan(s.val_loss));
    fill_state(&s, 6);
    s.val_loss = NAN;
    char path[512], v2_path[512];
    join(path, sizeof path, dir, "times.000000001.state");
    join(v2_path, sizeof v2_path, dir, "times-v2.state");
    CHECK_OK(sk_state_save(path, &s, 9, &err));
    CHECK_OK(sk_state_load(path, &t, 9, &err));
    CHECK(state_equal(&s, &t) && t.elapsed_s == 12345.678 && isnan(t.val_loss));
    sk_train_state_free(&t);
    size_t n4;
    unsigned char *v4 = read_all(path, &n4);
    const size_t times = 120 + 16 + 4 + 2 * 16; // after adam's record
    CHECK(n4 > times + 16 + 4 + 4 && v4[8] == 4 && sk_get_le32(v4 + times + 16) == 2);
    // The version 3 image: the same bytes without version 4's N (the state tensors a layer, 2 here,
    // which version 3 leaves to the file's size), its own CRC.
    const size_t n = n4 - 4;
    unsigned char *v3 = malloc(n);
    memcpy(v3, v4, times + 16);
    memcpy(v3 + times + 16, v4 + times + 16 + 4, n - times - 16);
    v3[8] = 3;
    sk_put_le32(v3 + n - 4, sk_crc32(0, v3, n - 4));
    CHECK_OK(sk_state_load_mem(path, v3, n, &t, 9, &err));
    CHECK(state_equal(&s, &t) && t.S == 2);
    sk_train_state_free(&t);
    free(v4);
    CHECK(n > times + 16 + 4 && v3[8] == 3);
    // The version 2 image: the same bytes without the 16 of the times, its own CRC.
    unsigned char *v2 = malloc(n);
    memcpy(v2, v3, times);
    memcpy(v2 + times, v3 + times + 16, n - times - 16);
    v2[8] = 2;
    sk_put_le32(v2 + n - 16 - 4, sk_crc32(0, v2, n - 16 - 4));
    CHECK_OK(sk_state_load_mem(v2_path, v2, n - 16, &t, 9, &err));
    CHECK(t.elapsed_s == 0.0 && isnan(t.val_loss) && t.step == s.step && t.best_val_loss == s.best_val_loss &&
          memcmp(t.slots, s.slots, 4 * 2 * 5) == 0 && memcmp(t.state, s.state, 4 * 2 * 2) == 0);
    sk_train_state_free(&t);
    // Values no run writes, under a good CRC.
    const double bad[][2] = {{-1.0, 1.0}, {INFINITY, 1.0}, {NAN, 1.0}, {1.0, INFINITY}, {1.0, -0.5}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t bits[2];
        memcpy(bits, bad[i], 16);
        sk_put_le64(v3 + times, bits[0]);
        sk_put_le64(v3 + times + 8, bits[1]);
        sk_put_le32(v3 + n - 4, sk_crc32(0, v3, n - 4));
        CHECK(sk_state_load_mem(path, v3, n, &t, 9, &err) == SK_ERR_FORMAT && strstr(err.msg, "corrupt training state (elapsed_s"));
        CHECK(t.slots == NULL);
    }
    v3[8] = 5;
    sk_put_le32(v3 + n - 4, sk_crc32(0, v3, n - 4));
    CHECK(sk_state_load_mem(path, v3, n, &t, 9, &err) == SK_ERR_FORMAT &&
          strstr(err.msg, "unsupported training state version 5 (expected 1 to 4)"));
    free(v2);
    free(v3);
    sk_train_state_free(&s);
}

// Version 2 names the optimizer and its slots: an RMSprop state comes back as RMSprop's and an SGD
// state (one slot) as SGD's, and a file whose slot name, optimizer name or slot count is not the
// table's is refused naming it.
static void test_state_optimizer(const char *dir) {
    sk_error err;
    sk_train_state s, t;
    CHECK_OK(sk_train_state_alloc(&s, 13, SK_OPTIM_RMSPROP, 2, 1, 2, 3, &err));
    CHECK(s.n_slots == 2 && s.optimizer == SK_OPTIM_RMSPROP);
    fill_state(&s, 5);
    char path[512];
    join(path, sizeof path, dir, "r.000000001.state");
    CHECK_OK(sk_state_save(path, &s, 7, &err));
    CHECK_OK(sk_state_load(path, &t, 7, &err));
    CHECK(state_equal(&s, &t) && t.optimizer == SK_OPTIM_RMSPROP);
    sk_train_state_free(&t);
    size_t n;
    unsigned char *good = read_all(path, &n);
    CHECK(n > 172 && memcmp(good + 120, "rmsprop", 8) == 0 && memcmp(good + 140, "square_avg", 11) == 0 &&
          memcmp(good + 156, "momentum_buffer", 16) == 0);
    good[140] = 'S'; // "Square_avg" (the CRC is checked last: the name is refused first)
    CHECK(sk_state_load_mem(path, good, n, &t, 7, &err) == SK_ERR_FORMAT &&
          strstr(err.msg, "slot 0 of rmsprop is \"Square_avg\", not \"square_avg\"") != NULL);
    good[140] = 's', good[120] = 'R';
    CHECK(sk_state_load_mem(path, good, n, &t, 7, &err) == SK_ERR_FORMAT &&
          strstr(err.msg, "optimizer \"Rmsprop\" is not one this build knows") != NULL);
    CHECK(t.slots == NULL);
    // RMSprop's two slots under SGD's name: SGD has one slot, and the count is refused first.
    memcpy(good + 120, "sgd\0\0\0\0", 8);
    CHECK(sk_state_load_mem(path, good, n, &t, 7, &err) == SK_ERR_FORMAT &&
          strstr(err.msg, "holds 2 slots of sgd, which has 1") != NULL);
    free(good);
    sk_train_state_free(&s);
    // SGD's one slot, momentum_buffer, round-trips as SGD's.
    CHECK_OK(sk_train_state_alloc(&s, 13, SK_OPTIM_SGD, 2, 1, 2, 3, &err));
    CHECK(s.n_slots == 1 && s.optimizer == SK_OPTIM_SGD);
    fill_state(&s, 6);
    join(path, sizeof path, dir, "g.000000001.state");
    CHECK_OK(sk_state_save(path, &s, 7, &err));
    CHECK_OK(sk_state_load(path, &t, 7, &err));
    CHECK(state_equal(&s, &t) && t.optimizer == SK_OPTIM_SGD && t.n_slots == 1);
    sk_train_state_free(&t);
    good = read_all(path, &n);
    CHECK(n > 156 && memcmp(good + 120, "sgd", 4) == 0 && sk_get_le32(good + 136) == 1 &&
          memcmp(good + 140, "momentum_buffer", 16) == 0);
    free(good);
    sk_train_state_free(&s);
}

static void test_state(const char *dir) {
    sk_error err;
    sk_train_state s, t;
    CHECK_OK(sk_train_state_alloc(&s, 37, SK_OPTIM_ADAM, 2, 2, 3, 4, &err));
    CHECK(s.best_val_loss == INFINITY && s.step == 0 && s.slots[2 * 37 - 1] == 0.0f && s.state[47] == 0.0f);
    fill_state(&s, 9);
    char path[512], bad_path[512];
    join(path, sizeof path, dir, "s.000000001.state");
    join(bad_path, sizeof bad_path, dir, "bad.state");
    CHECK_OK(sk_state_save(path, &s, 0xABCD1234u, &err));
    CHECK_OK(sk_state_load(path, &t, 0xABCD1234u, &err));
    CHECK(state_equal(&s, &t));
    sk_train_state_free(&t);
    sk_train_state_free(&t); // twice is safe
    { // one state tensor a layer (a GRU's or an RNN's h): S comes back from the file's size
        sk_train_state one, back;
        char one_path[600];
        join(one_path, sizeof one_path, dir, "one.000000001.state");
        CHECK_OK(sk_train_state_alloc(&one, 37, SK_OPTIM_ADAM, 1, 2, 3, 4, &err));
        fill_state(&one, 10);
        CHECK_OK(sk_state_save(one_path, &one, 0xABCD1234u, &err));
        CHECK_OK(sk_state_load(one_path, &back, 0xABCD1234u, &err));
        CHECK(back.S == 1 && state_equal(&one, &back));
        sk_train_state_free(&back);
        sk_train_state_free(&one);
    }
    CHECK_OK(sk_state_load(path, &t, 0, &err)); // 0: no pairing check
    sk_train_state_free(&t);
    EXPECT_FAIL(sk_state_load(path, &t, 0xABCD1235u, &err), SK_ERR_MISMATCH, path,
                "training state belongs to a different model file");
    CHECK(t.slots == NULL);
    s.best_val_loss = INFINITY;
    CHECK_OK(sk_state_save(path, &s, 1, &err));
    CHECK_OK(sk_state_load(path, &t, 1, &err));
    CHECK(state_equal(&s, &t) && t.best_val_loss == INFINITY);
    sk_train_state_free(&t);

    size_t n;
    unsigned char *good = read_all(path, &n);
    CHECK(n == 120 + 16 + 4 + 2 * 16 + 16 + 4 + 4 * (2 * 37 + 2 * 24) + 4); // version 4: adam's record, slots m,
                                                                             // v; elapsed_s, val_loss; N
    unsigned char *b = malloc(n + 1);
    int wrong = 0;
    for (size_t len = 0; len < n; len++) { // every truncation
        if (sk_state_load_mem(bad_path, good, len, &t, 1, &err) != SK_ERR_FORMAT || !starts_with(err.msg, bad_path))
            wrong++;
        sk_train_state_free(&t);
    }
    for (size_t i = 0; i < n; i++) { // every byte flipped
        memcpy(b, good, n);
        b[i] ^= 0x41;
        if (sk_state_load_mem(bad_path, b, n, &t, 1, &err) != SK_ERR_FORMAT) wrong++;
        sk_train_state_free(&t);
    }
    CHECK(wrong == 0);
    sk_test_write_file(bad_path, good, n - 5);
    EXPECT_FAIL(sk_state_load(bad_path, &t, 1, &err), SK_ERR_FORMAT, bad_path, "truncated");
    memcpy(b, good, n);
    b[200] ^= 1;
    sk_test_write_file(bad_path, b, n);
    EXPECT_FAIL(sk_state_load(bad_path, &t, 1, &err), SK_ERR_FORMAT, bad_path, "checksum mismatch");
    sk_test_write_file(bad_path, "hello world, this is not a state file at all", 44);
    EXPECT_FAIL(sk_state_load(bad_path, &t, 1, &err), SK_ERR_FORMAT, bad_path, "not a shakespeare training state");
    // A state whose header claims huge sizes: refused from the file size, nothing allocated.
    memcpy(b, good, n);
    memset(b + 16, 0xFF, 8);
    EXPECT_FAIL(sk_state_load_mem(bad_path, b, n, &t, 1, &err), SK_ERR_FORMAT, bad_path, NULL);
    char missing[600];
    join(missing, sizeof missing, dir, "none.state");
    EXPECT_FAIL(sk_state_load(missing, &t, 1, &err), SK_ERR_IO, missing, NULL);
    free(b);
    free(good);
    sk_train_state_free(&s);
}

// ---- the two-file protocol -----------------------------------------------------------------

static void test_checkpoint_protocol(const char *dir) {
    sk_error err;
    model m;
    model_init(&m, TINY_VOCAB, 3, 2, 4, 2, 0.0f, 21);
    sk_train_state s, t;
    CHECK_OK(sk_train_state_alloc(&s, m.lay.total, SK_OPTIM_ADAM, 2, 2, 2, 4, &err));
    fill_state(&s, 4);
    char path[512], name[256], p2[800];
    join(path, sizeof path, dir, "ck.safetensors");
    // Files the cleanup must leave alone.
    const char *others[] = {"ck.best.000000001.state", "other.000000001.state", ".ck.safetensors.tmp.abcdef"};
    for (int i = 0; i < 3; i++) {
        join(p2, sizeof p2, dir, others[i]);
        sk_test_write_file(p2, "x", 1);
    }
    s.step = 5;
    CHECK_OK(sk_checkpoint_save(dir, "ck", &m.cfg, &m.vocab, m.params, "{}", &s, &err));
    m.params[0] += 1.0f;
    s.step = 12;
    s.slots[0] = 42.0f;
    CHECK_OK(sk_checkpoint_save(dir, "ck", &m.cfg, &m.vocab, m.params, "{}", &s, &err));
    CHECK(count_states(dir, name, sizeof name) == 3); // ours + the two that are not ours
    join(p2, sizeof p2, dir, "ck.000000005.state");
    CHECK(access(p2, F_OK) != 0);
    join(p2, sizeof p2, dir, "ck.000000012.state");
    CHECK(access(p2, F_OK) == 0);
    for (int i = 0; i < 3; i++) {
        join(p2, sizeof p2, dir, others[i]);
        CHECK(access(p2, F_OK) == 0);
        unlink(p2);
    }
    CHECK(count_states(dir, name, sizeof name) == 1 && strcmp(name, "ck.000000012.state") == 0);
    sk_model_file f;
    int has = -1;
    CHECK_OK(sk_checkpoint_load(path, &f, &t, &has, &err));
    CHECK(has == 1 && f.state_file && strcmp(f.state_file, name) == 0);
    CHECK(memcmp(f.params, m.params, m.lay.total * sizeof(float)) == 0 && state_equal(&s, &t));
    sk_model_file_free(&f);
    sk_train_state_free(&t);
    CHECK_OK(sk_checkpoint_load(path, &f, NULL, &has, &err)); // model only: still says it has one
    CHECK(has == 1);
    sk_model_file_free(&f);

    // Same step again (e.g. a final save right after a periodic one), different model: the
    // state the current model names is not overwritten; one state remains, paired correctly.
    m.params[1] += 1.0f;
    CHECK_OK(sk_checkpoint_save(dir, "ck", &m.cfg, &m.vocab, m.params, "{\"final\":true}", &s, &err));
    CHECK(count_states(dir, name, sizeof name) == 1);
    CHECK_OK(sk_checkpoint_load(path, &f, &t, &has, &err));
    CHECK(has == 1 && strcmp(f.state_file, name) == 0 && memcmp(f.params, m.params, 4 * m.lay.total) == 0);
    sk_model_file_free(&f);
    sk_train_state_free(&t);

    // A state that belongs to another model.
    join(p2, sizeof p2, dir, name);
    CHECK_OK(sk_state_save(p2, &s, 0x12345678u, &err));
    EXPECT_FAIL(sk_checkpoint_load(path, &f, &t, &has, &err), SK_ERR_MISMATCH, p2,
                "training state belongs to a different model file");
    CHECK(has == 0 && f.params == NULL && t.slots == NULL);
    printf("  mismatch: %s\n", err.msg);
    // The state it names is gone.
    unlink(p2);
    EXPECT_FAIL(sk_checkpoint_load(path, &f, &t, &has, &err), SK_ERR_IO, path, p2); // names the model and the state

    // Model only: no state named, old states removed.
    CHECK_OK(sk_checkpoint_save(dir, "ck", &m.cfg, &m.vocab, m.params, NULL, &s, &err));
    CHECK(count_states(dir, name, sizeof name) == 1);
    CHECK_OK(sk_checkpoint_save(dir, "ck", &m.cfg, &m.vocab, m.params, NULL, NULL, &err));
    CHECK_OK(sk_checkpoint_load(path, &f, &t, &has, &err));
    CHECK(has == 0 && f.state_file == NULL && t.slots == NULL && count_states(dir, name, sizeof name) == 0);
    sk_model_file_free(&f);

    // Unwritable: the directory's parent is a regular file (fails for root too).
    char fdir[600], sub[700], want[800];
    join(fdir, sizeof fdir, dir, "plainfile");
    sk_test_write_file(fdir, "x", 1);
    join(sub, sizeof sub, fdir, "sub");
    join(want, sizeof want, sub, "ck.000000012.state");
    EXPECT_FAIL(sk_checkpoint_save(sub, "ck", &m.cfg, &m.vocab, m.params, NULL, &s, &err), SK_ERR_IO, want, sub);
    printf("  unwritable: %s\n", err.msg);
    join(want, sizeof want, sub, "ck.safetensors");
    EXPECT_FAIL(sk_model_save(want, &m.cfg, &m.vocab, m.params, NULL, NULL, NULL, &err), SK_ERR_IO, want, NULL);
    unlink(fdir);
    if (geteuid() != 0) { // permissions do not apply to root
        join(sub, sizeof sub, dir, "ro");
        mkdir(sub, 0555);
        join(want, sizeof want, sub, "ck.safetensors");
        EXPECT_FAIL(sk_checkpoint_save(sub, "ck", &m.cfg, &m.vocab, m.params, NULL, NULL, &err), SK_ERR_IO, want,
                    "Permission denied");
        rmdir(sub);
    }
    CHECK(sk_checkpoint_save(dir, "a/b", &m.cfg, &m.vocab, m.params, NULL, NULL, &err) == SK_ERR_ARG);
    CHECK(sk_checkpoint_save(dir, "", &m.cfg, &m.vocab, m.params, NULL, NULL, &err) == SK_ERR_ARG);
    sk_train_state_free(&s);
    model_free(&m);
}

// A child saves checkpoints in a loop and is SIGKILLed at varying instants; after every kill
// the checkpoint must load with its state, and the pair must match (params[0] == step).
static void test_kill_during_save(const char *dir) {
    sk_error err;
    uint32_t chars[40];
    for (int i = 0; i < 40; i++) chars[i] = 32 + (uint32_t)i;
    model m;
    model_init(&m, chars, 40, 16, 48, 2, 0.0f, 1);
    sk_train_state s;
    CHECK_OK(sk_train_state_alloc(&s, m.lay.total, SK_OPTIM_ADAM, 2, 2, 8, 48, &err));
    // Kill instants spread over 0..2.5 save durations (fsync makes a save take milliseconds).
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 3; i++) {
        m.params[0] = 0.0f;
        s.step = 0;
        CHECK_OK(sk_checkpoint_save(dir, "k", &m.cfg, &m.vocab, m.params, NULL, &s, &err));
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double save_ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 3;
    char path[512];
    join(path, sizeof path, dir, "k.safetensors");
    int64_t last = 0, loads = 0;
    for (int trial = 0; trial < 24; trial++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            for (int64_t step = last + 1; step < last + 100000; step++) {
                m.params[0] = (float)step;
                s.step = step;
                s.slots[s.n_params - 1] = (float)step;
                if (sk_checkpoint_save(dir, "k", &m.cfg, &m.vocab, m.params, NULL, &s, &err) != SK_OK) _exit(3);
            }
            _exit(0);
        }
        double wait_ns = 50000.0 + save_ns * 2.5 * (double)((trial * 7) % 24) / 24.0;
        struct timespec ts = {(time_t)(wait_ns / 1e9), (long)fmod(wait_ns, 1e9)};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        sk_model_file f;
        sk_train_state t;
        int has = 0;
        sk_status st = sk_checkpoint_load(path, &f, &t, &has, &err);
        if (st != SK_OK) fprintf(stderr, "  after kill %d: %s\n", trial, err.msg);
        CHECK(st == SK_OK && has == 1);
        if (st == SK_OK) {
            CHECK(f.params[0] == (float)t.step && t.slots[t.n_params - 1] == (float)t.step && t.step >= last);
            last = t.step;
            loads++;
        }
        sk_model_file_free(&f);
        sk_train_state_free(&t);
    }
    printf("  %lld loads after SIGKILL, the last at step %lld (one save takes %.2f ms)\n", (long long)loads,
           (long long)last, save_ns / 1e6);
    sk_train_state_free(&s);
    model_free(&m);
}

// Every named pointer of sk_point_params's view is its tensor's offset (by name) into the
// buffer it was pointed at, for any buffer of the layout.
static void test_param_views(void) {
    sk_error err;
    const sk_model_config cfg = {.vocab_size = 5, .embed_size = 3, .hidden_size = 2, .num_layers = 3};
    sk_param_layout l;
    CHECK_OK(sk_param_layout_init(&l, &cfg, &err));
    float *bufs[2] = {calloc(l.total, sizeof(float)), calloc(l.total, sizeof(float))};
    CHECK(bufs[0] && bufs[1]);
    for (int i = 0; i < 2 && bufs[i]; i++) {
        float *b = bufs[i];
        const sk_param_tensors w = sk_point_params(&l, b);
        CHECK(w.embedding == b + sk_param_find(&l, "embedding.weight")->offset);
        CHECK(w.fc_w == b + sk_param_find(&l, "fc.weight")->offset);
        CHECK(w.fc_b == b + sk_param_find(&l, "fc.bias")->offset);
        for (int k = 0; k < cfg.num_layers; k++) {
            const char *names[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
            float *const got[4] = {w.layer[k].w_ih, w.layer[k].w_hh, w.layer[k].b_ih, w.layer[k].b_hh};
            for (int j = 0; j < 4; j++) {
                char name[SK_TENSOR_NAME_MAX];
                snprintf(name, sizeof name, "lstm.%s_l%d", names[j], k);
                CHECK(got[j] == b + sk_param_find(&l, name)->offset);
            }
        }
    }
    free(bufs[0]), free(bufs[1]);
    sk_param_layout_free(&l);
}

int main(void) {
    char dir[512];
    sk_test_tmpdir(dir, sizeof dir, "ckpt");
    test_crc32();
    test_json();
    test_model_round_trip(dir);
    test_check_finite();
    test_standard_layout(dir);
    test_param_views();
    test_hand_built(dir);
    test_corruption(dir);
    test_corruption_format_1();
    test_state(dir);
    test_state_times(dir);
    test_state_cell(dir);
    test_state_optimizer(dir);
    char sub[600];
    join(sub, sizeof sub, dir, "protocol"); // directories of their own: these count files
    mkdir(sub, 0777);
    test_checkpoint_protocol(sub);
    remove_dir(sub);
    join(sub, sizeof sub, dir, "kill");
    mkdir(sub, 0777);
    test_kill_during_save(sub);
    remove_dir(sub);
    remove_dir(dir);
    return sk_test_done("test_checkpoint");
}
