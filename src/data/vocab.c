// vocab.c: the character vocabulary: build, look up, encode, describe.
#include "shakespeare/vocab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shakespeare/utf8.h"

#define SK_MAX_CODEPOINT 0x10FFFFu

static bool is_scalar_value(uint32_t cp) { return cp <= SK_MAX_CODEPOINT && (cp < 0xD800 || cp > 0xDFFF); }

sk_status sk_vocab_build(sk_vocab *v, const uint32_t *cps, size_t n, sk_error *err) {
    if (!v) return sk_fail(err, SK_ERR_ARG, "sk_vocab_build: NULL vocabulary");
    *v = (sk_vocab){0};
    if (n == 0) return sk_fail(err, SK_ERR_ARG, "cannot build a vocabulary from an empty text");
    if (!cps) return sk_fail(err, SK_ERR_ARG, "sk_vocab_build: NULL code points");

    // A bitmap over all of Unicode (136 KiB) sorts and deduplicates in one pass.
    const size_t words = (SK_MAX_CODEPOINT + 1 + 63) / 64;
    uint64_t *seen = calloc(words, sizeof *seen);
    if (!seen) return sk_fail(err, SK_ERR_NOMEM, "cannot allocate the vocabulary bitmap");
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = cps[i];
        if (!is_scalar_value(cp)) {
            free(seen);
            return sk_fail(err, SK_ERR_FORMAT, "code point 0x%X at position %zu is not a Unicode scalar value",
                           (unsigned)cp, i);
        }
        seen[cp >> 6] |= (uint64_t)1 << (cp & 63);
    }
    size_t size = 0;
    for (size_t w = 0; w < words; w++) {
        for (uint64_t bits = seen[w]; bits; bits &= bits - 1) size++;
    }
    uint32_t *chars = malloc(size * sizeof *chars);
    if (!chars) {
        free(seen);
        return sk_fail(err, SK_ERR_NOMEM, "cannot allocate a vocabulary of %zu characters", size);
    }
    size_t k = 0;
    for (size_t w = 0; w < words; w++) {
        for (uint64_t bits = seen[w]; bits; bits &= bits - 1) {
            int bit = __builtin_ctzll(bits);
            chars[k++] = (uint32_t)(w * 64 + (size_t)bit);
        }
    }
    free(seen);
    v->chars = chars;
    v->size = (int)size; // at most 0x110000 distinct code points: fits in int
    return SK_OK;
}

sk_status sk_vocab_from_codepoints(sk_vocab *v, const uint32_t *chars, int size, sk_error *err) {
    if (!v) return sk_fail(err, SK_ERR_ARG, "sk_vocab_from_codepoints: NULL vocabulary");
    *v = (sk_vocab){0};
    if (size <= 0 || !chars) return sk_fail(err, SK_ERR_FORMAT, "vocabulary size must be positive, got %d", size);
    for (int i = 0; i < size; i++) {
        if (!is_scalar_value(chars[i]))
            return sk_fail(err, SK_ERR_FORMAT, "vocabulary entry %d (0x%X) is not a Unicode scalar value", i,
                           (unsigned)chars[i]);
        if (i > 0 && chars[i] <= chars[i - 1])
            return sk_fail(err, SK_ERR_FORMAT,
                           "vocabulary entry %d (U+%04X) does not follow entry %d (U+%04X) in increasing order", i,
                           (unsigned)chars[i], i - 1, (unsigned)chars[i - 1]);
    }
    uint32_t *copy = malloc((size_t)size * sizeof *copy);
    if (!copy) return sk_fail(err, SK_ERR_NOMEM, "cannot allocate a vocabulary of %d characters", size);
    memcpy(copy, chars, (size_t)size * sizeof *copy);
    v->chars = copy;
    v->size = size;
    return SK_OK;
}

sk_status sk_vocab_all_bytes(sk_vocab *v, sk_error *err) {
    uint32_t all[256];
    for (uint32_t b = 0; b < 256; b++) all[b] = b;
    sk_status st = sk_vocab_from_codepoints(v, all, 256, err);
    if (st == SK_OK) v->bytes = 1;
    return st;
}

sk_status sk_vocab_copy(sk_vocab *v, const sk_vocab *src, sk_error *err) {
    sk_status st = sk_vocab_from_codepoints(v, src->chars, src->size, err);
    if (st == SK_OK) v->bytes = src->bytes, v->start_newline = src->start_newline;
    return st;
}

int sk_vocab_index(const sk_vocab *v, uint32_t cp) {
    if (!v || !v->chars) return -1;
    int lo = 0, hi = v->size; // search [lo, hi)
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (v->chars[mid] < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < v->size && v->chars[lo] == cp ? lo : -1;
}

sk_status sk_vocab_encode(const sk_vocab *v, const uint32_t *cps, size_t n, int32_t *ids, const char *what,
                          sk_error *err) {
    if (!what) what = "text";
    if (!v || (n > 0 && (!cps || !ids))) return sk_fail(err, SK_ERR_ARG, "%s: sk_vocab_encode: NULL argument", what);
    for (size_t i = 0; i < n; i++) {
        int id = sk_vocab_index(v, cps[i]);
        if (id < 0 && v->bytes)
            return sk_fail(err, SK_ERR_MISMATCH, "%s has byte 0x%02X at position %zu that is not in the vocabulary",
                           what, (unsigned)cps[i], i + 1);
        if (id < 0) {
            char desc[48];
            sk_vocab_describe_char(cps[i], desc, sizeof desc);
            // Non-ASCII descriptions already carry the code point; add it to the others.
            char code[16] = "";
            if (!strstr(desc, "U+")) snprintf(code, sizeof code, " (U+%04X)", (unsigned)cps[i]);
            return sk_fail(err, SK_ERR_MISMATCH, "%s has character %s%s at position %zu that is not in the vocabulary",
                           what, desc, code, i + 1);
        }
        ids[i] = id;
    }
    return SK_OK;
}

int sk_vocab_map(const sk_vocab *from, const sk_vocab *to, int32_t *map, uint32_t *missing, int max_missing) {
    int n = 0;
    for (int i = 0; i < from->size; i++) {
        if ((map[i] = sk_vocab_index(to, from->chars[i])) >= 0) continue;
        if (n < max_missing) missing[n] = from->chars[i];
        n++;
    }
    return n;
}

int sk_vocab_char_bytes(const sk_vocab *v, int32_t id, char out[4]) {
    if (v->bytes) return out[0] = (char)v->chars[id], 1;
    return sk_utf8_encode(v->chars[id], out);
}

bool sk_vocab_equal(const sk_vocab *a, const sk_vocab *b) {
    if (!a || !b) return false;
    if (a->size != b->size || a->bytes != b->bytes) return false;
    if (a->size == 0) return true;
    return memcmp(a->chars, b->chars, (size_t)a->size * sizeof *a->chars) == 0;
}

// Non-ASCII code points shown as themselves: the visible characters of every script (letters,
// CJK, symbols), which a UTF-8 terminal draws. Shown as U+XXXX only: what draws nothing or
// draws on its neighbour, the controls (C1), spaces and format characters, soft hyphen,
// combining marks, variation selectors and tags, private use and unassigned planes.
static bool shows_as_itself(uint32_t cp) {
    static const uint32_t hidden[][2] = {
        {0x80, 0xA0},       {0xAD, 0xAD},       {0x300, 0x36F},     {0x483, 0x489},     {0x1AB0, 0x1AFF},
        {0x1DC0, 0x1DFF},   {0x2000, 0x200F},   {0x2028, 0x202F},   {0x205F, 0x206F},   {0x20D0, 0x20FF},
        {0x3000, 0x3000},   {0xD800, 0xF8FF},   {0xFE00, 0xFE0F},   {0xFE20, 0xFE2F},   {0xFEFF, 0xFEFF},
        {0xFFF0, 0xFFFF},   {0xE0000, 0x10FFFF},
    };
    if (cp < 0x80) return false; // ASCII has its own forms
    for (size_t i = 0; i < sizeof hidden / sizeof hidden[0]; i++)
        if (cp >= hidden[i][0] && cp <= hidden[i][1]) return false;
    return true;
}

void sk_vocab_describe_char(uint32_t cp, char *buf, size_t bufsize) {
    if (!buf || bufsize == 0) return;
    switch (cp) {
    case '\n': snprintf(buf, bufsize, "'\\n'"); return;
    case '\t': snprintf(buf, bufsize, "'\\t'"); return;
    case '\r': snprintf(buf, bufsize, "'\\r'"); return;
    case '\\': snprintf(buf, bufsize, "'\\\\'"); return;
    case '\'': snprintf(buf, bufsize, "'\\''"); return;
    default: break;
    }
    if (cp >= 0x20 && cp < 0x7F) {
        snprintf(buf, bufsize, "'%c'", (char)cp);
    } else if (is_scalar_value(cp) && shows_as_itself(cp)) {
        char utf8[4];
        int len = sk_utf8_encode(cp, utf8);
        snprintf(buf, bufsize, "'%.*s' (U+%04X)", len, utf8, (unsigned)cp);
    } else {
        snprintf(buf, bufsize, "U+%04X", (unsigned)cp);
    }
}

void sk_vocab_describe_list(const uint32_t *syms, int named, int total, int bytes, char *buf, size_t bufsize) {
    if (!buf || bufsize == 0) return;
    buf[0] = '\0';
    size_t k = 0;
    for (int i = 0; i < named && i < total && k < bufsize; i++) {
        char one[32];
        if (bytes) snprintf(one, sizeof one, "0x%02X", (unsigned)syms[i]);
        else sk_vocab_describe_char(syms[i], one, sizeof one);
        k += (size_t)snprintf(buf + k, bufsize - k, "%s%s", i ? ", " : "", one);
    }
    if (total > named && k < bufsize) snprintf(buf + k, bufsize - k, " and %d more", total - named);
}

void sk_vocab_free(sk_vocab *v) {
    if (!v) return;
    free(v->chars);
    v->chars = NULL;
    v->size = 0;
    v->bytes = 0;
    v->start_newline = 0;
}
