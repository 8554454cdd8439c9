// utf8.c: strict UTF-8 decoding (RFC 3629) and encoding of Unicode scalar values.
#include "shakespeare/utf8.h"

#include <stdint.h>
#include <stdlib.h>

// Length of the sequence a lead byte announces, or 0 for a byte that cannot start one:
// 0x80..0xBF are continuation bytes, 0xF8..0xFF never occur in UTF-8. 0xC0, 0xC1 and
// 0xF5..0xF7 are structurally leads; the value checks below reject them as overlong or
// above U+10FFFF, which names the problem better than "invalid lead byte".
static int sequence_length(uint8_t lead) {
    if (lead < 0x80) return 1;
    if (lead < 0xC0) return 0;
    if (lead < 0xE0) return 2;
    if (lead < 0xF0) return 3;
    if (lead < 0xF8) return 4;
    return 0;
}

int sk_utf8_decode_one(const uint8_t *p, size_t avail, uint32_t *cp, const char **why) {
    static const uint32_t min_for_length[5] = {0, 0, 0x80, 0x800, 0x10000};
    uint8_t lead = p[0];
    if (lead < 0x80) {
        *cp = lead;
        return 1;
    }
    int len = sequence_length(lead);
    if (len == 0) {
        *why = lead < 0xC0 ? "unexpected continuation byte" : "invalid lead byte";
        return -1;
    }
    uint32_t v = lead & (0x7Fu >> len); // payload bits of the lead byte
    int k;
    for (k = 1; k < len && (size_t)k < avail; k++) {
        uint8_t c = p[k];
        if ((c & 0xC0) != 0x80) break;
        v = (v << 6) | (c & 0x3Fu);
    }
    if (k < len) {
        if ((size_t)k >= avail) {
            *why = "truncated sequence";
            return 0;
        }
        *why = "missing continuation byte";
        return -1;
    }
    if (v < min_for_length[len]) *why = "overlong encoding";
    else if (v >= 0xD800 && v <= 0xDFFF) *why = "surrogate code point";
    else if (v > 0x10FFFF) *why = "code point above U+10FFFF";
    else {
        *cp = v;
        return len;
    }
    return -1;
}

sk_status sk_utf8_decode(const uint8_t *bytes, size_t n, const char *what, uint32_t **out, size_t *out_n,
                         sk_error *err) {
    if (!what) what = "text";
    if (!out || !out_n || (n > 0 && !bytes))
        return sk_fail(err, SK_ERR_ARG, "%s: sk_utf8_decode: NULL argument", what);
    *out = NULL;
    *out_n = 0;
    if (n > SIZE_MAX / sizeof(uint32_t)) return sk_fail(err, SK_ERR_NOMEM, "%s: %zu bytes is too large to decode", what, n);

    uint32_t *cps = malloc((n ? n : 1) * sizeof *cps); // at most one code point per byte
    if (!cps) return sk_fail(err, SK_ERR_NOMEM, "%s: cannot allocate %zu code points", what, n);

    size_t count = 0, i = 0;
    const char *reason = NULL;
    while (i < n) {
        uint8_t lead = bytes[i];
        if (lead < 0x80) { // ASCII fast path
            cps[count++] = lead;
            i++;
            continue;
        }
        int len = sk_utf8_decode_one(bytes + i, n - i, &cps[count], &reason);
        if (len <= 0) break;
        count++;
        i += (size_t)len;
    }
    if (i < n) {
        free(cps);
        return sk_fail(err, SK_ERR_ENCODING, "%s: invalid UTF-8 at byte %zu (%s)", what, i, reason);
    }
    if (count < n) { // give back the unused tail; keep the larger block if realloc fails
        uint32_t *shrunk = realloc(cps, (count ? count : 1) * sizeof *cps);
        if (shrunk) cps = shrunk;
    }
    *out = cps;
    *out_n = count;
    return SK_OK;
}

int sk_utf8_encode(uint32_t cp, char out[4]) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp <= 0x10FFFF) {
        out[0] = (char)(0xF0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        return 4;
    }
    return 0;
}
