// test_utf8.c: strict UTF-8 decoding and encoding.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shakespeare/utf8.h"
#include "test_util.h"

// Decodes bytes and expects SK_ERR_ENCODING with a message containing
// "invalid UTF-8 at byte <offset> (<reason>)" and naming the source.
static void expect_reject(const char *bytes, size_t n, size_t offset, const char *reason) {
    sk_error err = {{0}};
    uint32_t *cps = (uint32_t *)(uintptr_t)1; // must be reset to NULL on failure
    size_t count = 99;
    sk_status st = sk_utf8_decode((const uint8_t *)bytes, n, "input.txt", &cps, &count, &err);
    char want[128];
    snprintf(want, sizeof want, "input.txt: invalid UTF-8 at byte %zu (%s)", offset, reason);
    if (st != SK_ERR_ENCODING || strcmp(err.msg, want) != 0) {
        fprintf(stderr, "  expected \"%s\", got status %d: \"%s\"\n", want, (int)st, err.msg);
        sk_test_failures++;
    }
    CHECK(cps == NULL);
    CHECK(count == 0);
}

static void test_round_trip(void) {
    // One code point of each length, both ends of each length class, and the last scalar value.
    const uint32_t cps[] = {0x00, 0x41, 0x7F, 0x80, 0xE9, 0x7FF, 0x800, 0x20AC, 0xD7FF,
                            0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF};
    const int lens[] = {1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3, 3, 4, 4, 4};
    const size_t count = sizeof cps / sizeof cps[0];
    char text[4 * 16];
    size_t nbytes = 0;
    for (size_t i = 0; i < count; i++) {
        int len = sk_utf8_encode(cps[i], text + nbytes);
        CHECK(len == lens[i]);
        nbytes += (size_t)len;
    }
    CHECK(nbytes == 1 * 3 + 2 * 3 + 3 * 6 + 4 * 3);

    // Known encodings from RFC 3629's examples.
    char buf[4];
    CHECK(sk_utf8_encode(0x20AC, buf) == 3 && memcmp(buf, "\xE2\x82\xAC", 3) == 0);
    CHECK(sk_utf8_encode(0xE9, buf) == 2 && memcmp(buf, "\xC3\xA9", 2) == 0);
    CHECK(sk_utf8_encode(0x1F600, buf) == 4 && memcmp(buf, "\xF0\x9F\x98\x80", 4) == 0);

    sk_error err = {{0}};
    uint32_t *out = NULL;
    size_t n = 0;
    CHECK_OK(sk_utf8_decode((const uint8_t *)text, nbytes, "round trip", &out, &n, &err));
    CHECK(n == count);
    for (size_t i = 0; i < count && i < n; i++) CHECK(out[i] == cps[i]);
    free(out);

    // Empty input decodes to zero code points.
    out = NULL;
    CHECK_OK(sk_utf8_decode((const uint8_t *)"", 0, "empty", &out, &n, &err));
    CHECK(n == 0);
    free(out);
}

// Every scalar value encodes, and the concatenation decodes back to the same sequence;
// surrogates are the only values below U+110000 that encode to nothing.
static void test_exhaustive(void) {
    const uint32_t limit = 0x110000;
    char *text = malloc((size_t)limit * 4);
    uint32_t *want = malloc((size_t)limit * sizeof *want);
    size_t nbytes = 0, count = 0;
    for (uint32_t cp = 0; cp < limit; cp++) {
        int len = sk_utf8_encode(cp, text + nbytes);
        int expect = cp < 0x80 ? 1 : cp < 0x800 ? 2 : (cp >= 0xD800 && cp <= 0xDFFF) ? 0 : cp < 0x10000 ? 3 : 4;
        if (len != expect) {
            fprintf(stderr, "  sk_utf8_encode(U+%04X) returned %d, expected %d\n", (unsigned)cp, len, expect);
            sk_test_failures++;
            break;
        }
        nbytes += (size_t)len;
        if (len) want[count++] = cp;
    }
    sk_error err = {{0}};
    uint32_t *out = NULL;
    size_t n = 0;
    CHECK_OK(sk_utf8_decode((const uint8_t *)text, nbytes, "all scalar values", &out, &n, &err));
    CHECK(n == count);
    CHECK(n == limit - 0x800);
    CHECK(n == count && memcmp(out, want, n * sizeof *out) == 0);
    free(out);
    free(want);
    free(text);
}

static void test_encode_rejects(void) {
    char buf[4];
    CHECK(sk_utf8_encode(0xD800, buf) == 0);
    CHECK(sk_utf8_encode(0xDFFF, buf) == 0);
    CHECK(sk_utf8_encode(0x110000, buf) == 0);
    CHECK(sk_utf8_encode(0xFFFFFFFFu, buf) == 0);
}

static void test_decode_rejects(void) {
    // Stray continuation byte after valid text: offset of the stray byte.
    expect_reject("abc\x80xyz", 7, 3, "unexpected continuation byte");
    // A continuation byte after a complete 2-byte sequence.
    expect_reject("\xC3\xA9\xA9", 3, 2, "unexpected continuation byte");
    // Bytes that never occur in UTF-8.
    expect_reject("ab\xFF", 3, 2, "invalid lead byte");
    expect_reject("\xF8\x88\x80\x80\x80", 5, 0, "invalid lead byte");
    // Overlong forms: '/' in 2 bytes (C0 AF), U+0000 in 2 bytes, U+07FF in 3, U+FFFF in 4.
    expect_reject("x\xC0\xAF", 3, 1, "overlong encoding");
    expect_reject("\xC1\xBF", 2, 0, "overlong encoding");
    expect_reject("hello \xE0\x9F\xBF", 9, 6, "overlong encoding");
    expect_reject("\xF0\x8F\xBF\xBF", 4, 0, "overlong encoding");
    // Surrogates: U+D800 and U+DFFF encoded directly (CESU-8 style).
    expect_reject("ok\xED\xA0\x80", 5, 2, "surrogate code point");
    expect_reject("\xED\xBF\xBF", 3, 0, "surrogate code point");
    // Above U+10FFFF: U+110000 (F4 90 80 80) and a F5 lead.
    expect_reject("12345\xF4\x90\x80\x80", 9, 5, "code point above U+10FFFF");
    expect_reject("\xF5\x80\x80\x80", 4, 0, "code point above U+10FFFF");
    // Truncated at the end of input: the lead byte's offset is reported.
    expect_reject("abc\xE2\x82", 5, 3, "truncated sequence");
    expect_reject("\xF0\x9F\x98", 3, 0, "truncated sequence");
    expect_reject("ab\xC3", 3, 2, "truncated sequence");
    // A sequence interrupted by a non-continuation byte in the middle of the input.
    expect_reject("\xE2\x82" "A", 3, 0, "missing continuation byte");
    // Valid 3-byte text before the error: offsets count bytes, not characters.
    expect_reject("\xE2\x82\xAC\xE2\x82\xAC\x80", 7, 6, "unexpected continuation byte");

    // A large offset is printed in full.
    size_t big = 1234;
    char *text = malloc(big + 2);
    memset(text, 'a', big);
    text[big] = (char)0xE2;
    text[big + 1] = (char)0x82;
    expect_reject(text, big + 2, 1234, "truncated sequence");
    free(text);
}

int main(void) {
    test_round_trip();
    test_exhaustive();
    test_encode_rejects();
    test_decode_rejects();
    return sk_test_done("test_utf8");
}
