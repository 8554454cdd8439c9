// test_vocab.c: building, looking up, encoding with and describing the character vocabulary.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shakespeare/utf8.h"
#include "shakespeare/vocab.h"
#include "test_util.h"

static void expect_describe(uint32_t cp, const char *want) {
    char buf[64];
    sk_vocab_describe_char(cp, buf, sizeof buf);
    if (strcmp(buf, want) != 0) {
        fprintf(stderr, "  describe(U+%04X): expected \"%s\", got \"%s\"\n", (unsigned)cp, want, buf);
        sk_test_failures++;
    }
}

static void test_build_index_encode(void) {
    sk_error err = {{0}};
    // "hello, wörld\n" plus an emoji: repeated, unsorted, multi-byte.
    const uint32_t text[] = {'h', 'e', 'l', 'l', 'o', ',', ' ', 'w', 0xF6, 'r', 'l', 'd', '\n', 0x1F600, 'h'};
    const size_t n = sizeof text / sizeof text[0];
    sk_vocab v;
    CHECK_OK(sk_vocab_build(&v, text, n, &err));
    const uint32_t want[] = {'\n', ' ', ',', 'd', 'e', 'h', 'l', 'o', 'r', 'w', 0xF6, 0x1F600};
    CHECK(v.size == (int)(sizeof want / sizeof want[0]));
    CHECK(v.size == 12 && memcmp(v.chars, want, sizeof want) == 0);

    for (int i = 0; i < v.size; i++) CHECK(sk_vocab_index(&v, v.chars[i]) == i);
    CHECK(sk_vocab_index(&v, 'a') == -1);       // between entries
    CHECK(sk_vocab_index(&v, 0) == -1);         // below the first
    CHECK(sk_vocab_index(&v, 0x10FFFF) == -1);  // above the last
    CHECK(sk_vocab_index(&v, 0x1F601) == -1);

    int32_t ids[sizeof text / sizeof text[0]];
    CHECK_OK(sk_vocab_encode(&v, text, n, ids, "text", &err));
    for (size_t i = 0; i < n; i++) CHECK(ids[i] >= 0 && ids[i] < v.size && v.chars[ids[i]] == text[i]);
    CHECK(ids[0] == 5 && ids[14] == 5 && ids[13] == 11 && ids[12] == 0);

    // Out of vocabulary: character, code point and 0-based character position.
    const uint32_t prime[] = {'h', 'e', 'l', 'l', 'o', ' ', 'Z', 'e'};
    sk_status st = sk_vocab_encode(&v, prime, 8, ids, "prime text", &err);
    CHECK(st == SK_ERR_MISMATCH);
    CHECK(strcmp(err.msg, "prime text has character 'Z' (U+005A) at position 7 that is not in the vocabulary") == 0);
    if (st == SK_ERR_MISMATCH) printf("  message: %s\n", err.msg);

    const uint32_t ctrl[] = {'h', 0x7};
    CHECK(sk_vocab_encode(&v, ctrl, 2, ids, "prime text", &err) == SK_ERR_MISMATCH);
    CHECK(strcmp(err.msg, "prime text has character U+0007 at position 2 that is not in the vocabulary") == 0);
    const uint32_t tab[] = {'\t'};
    CHECK(sk_vocab_encode(&v, tab, 1, ids, "prime text", &err) == SK_ERR_MISMATCH);
    CHECK(strstr(err.msg, "character '\\t' (U+0009) at position 1") != NULL);

    // Build from a single repeated character.
    sk_vocab one;
    const uint32_t same[] = {'a', 'a', 'a'};
    CHECK_OK(sk_vocab_build(&one, same, 3, &err));
    CHECK(one.size == 1 && one.chars[0] == 'a');
    CHECK(!sk_vocab_equal(&v, &one));

    sk_vocab_free(&one);
    sk_vocab_free(&one); // safe twice
    CHECK(one.chars == NULL && one.size == 0);
    sk_vocab_free(&v);
}

// A text's vocabulary mapped into a model's larger one: every id to the model's, and the
// symbols the model lacks counted and named, the first max_missing of them.
static void test_map(void) {
    sk_error err = {{0}};
    sk_vocab model, data, copy;
    const uint32_t m[] = {'\n', ' ', 'a', 'b', 'c', 0xE9};
    CHECK_OK(sk_vocab_from_codepoints(&model, m, 6, &err));
    const uint32_t d[] = {' ', 'c', 0xE9};
    CHECK_OK(sk_vocab_from_codepoints(&data, d, 3, &err));
    int32_t map[3];
    CHECK(sk_vocab_map(&data, &model, map, NULL, 0) == 0);
    CHECK(map[0] == 1 && map[1] == 4 && map[2] == 5);
    uint32_t missing[2];
    int32_t back[6];
    CHECK(sk_vocab_map(&model, &data, back, missing, 2) == 3); // '\n', 'a', 'b': two named
    CHECK(missing[0] == '\n' && missing[1] == 'a');
    CHECK(back[0] == -1 && back[1] == 0 && back[2] == -1 && back[4] == 1 && back[5] == 2);
    model.bytes = 1;
    CHECK_OK(sk_vocab_copy(&copy, &model, &err));
    CHECK(sk_vocab_equal(&copy, &model) && copy.chars != model.chars && copy.bytes == 1);
    sk_vocab_free(&copy);
    sk_vocab_free(&data);
    sk_vocab_free(&model);
}

static void test_build_errors(void) {
    sk_error err = {{0}};
    sk_vocab v;
    const uint32_t x[] = {'a'};
    CHECK(sk_vocab_build(&v, x, 0, &err) == SK_ERR_ARG);
    CHECK(strstr(err.msg, "empty") != NULL);
    CHECK(v.chars == NULL && v.size == 0);
    const uint32_t bad[] = {'a', 0xD800};
    CHECK(sk_vocab_build(&v, bad, 2, &err) == SK_ERR_FORMAT);
    CHECK(strstr(err.msg, "position 1") != NULL);
    CHECK(v.chars == NULL);
    sk_vocab_free(&v);
}

static void test_from_codepoints(void) {
    sk_error err = {{0}};
    const uint32_t chars[] = {'\n', ' ', 'A', 'a', 0xE9, 0x10FFFF};
    sk_vocab a, b;
    memset(&a, 0xFF, sizeof a); // whatever the struct held before: no flag survives
    CHECK_OK(sk_vocab_from_codepoints(&a, chars, 6, &err));
    CHECK(a.size == 6 && a.chars != chars && memcmp(a.chars, chars, sizeof chars) == 0);
    CHECK(a.bytes == 0 && a.start_newline == 0);

    // The same set built from text is equal.
    const uint32_t text[] = {0x10FFFF, 'a', 'A', ' ', 0xE9, '\n', 'a'};
    CHECK_OK(sk_vocab_build(&b, text, 7, &err));
    CHECK(sk_vocab_equal(&a, &b));
    b.chars[2] = 'B';
    CHECK(!sk_vocab_equal(&a, &b));
    sk_vocab_free(&b);

    const uint32_t unsorted[] = {'a', 'b', 'b'};
    CHECK(sk_vocab_from_codepoints(&b, unsorted, 3, &err) == SK_ERR_FORMAT);
    CHECK(strstr(err.msg, "entry 2") != NULL);
    CHECK(b.chars == NULL && b.size == 0);
    const uint32_t decreasing[] = {'b', 'a'};
    CHECK(sk_vocab_from_codepoints(&b, decreasing, 2, &err) == SK_ERR_FORMAT);
    const uint32_t surrogate[] = {'a', 0xDC00};
    CHECK(sk_vocab_from_codepoints(&b, surrogate, 2, &err) == SK_ERR_FORMAT);
    const uint32_t too_big[] = {'a', 0x110000};
    CHECK(sk_vocab_from_codepoints(&b, too_big, 2, &err) == SK_ERR_FORMAT);
    CHECK(sk_vocab_from_codepoints(&b, chars, 0, &err) == SK_ERR_FORMAT);
    CHECK(sk_vocab_from_codepoints(&b, chars, -3, &err) == SK_ERR_FORMAT);
    sk_vocab_free(&b);
    sk_vocab_free(&a);
}

static void test_describe(void) {
    expect_describe('a', "'a'");
    expect_describe(' ', "' '");
    expect_describe('~', "'~'");
    expect_describe('\n', "'\\n'");
    expect_describe('\t', "'\\t'");
    expect_describe('\r', "'\\r'");
    expect_describe('\\', "'\\\\'");
    expect_describe('\'', "'\\''");
    expect_describe(0x00, "U+0000");
    expect_describe(0x7F, "U+007F");
    expect_describe(0x85, "U+0085");   // C1 control (next line)
    expect_describe(0xA0, "U+00A0");   // no-break space
    expect_describe(0xAD, "U+00AD");   // soft hyphen
    expect_describe(0x2028, "U+2028"); // line separator: must not break the line
    expect_describe(0x0301, "U+0301"); // combining accent
    expect_describe(0xE000, "U+E000");  // private use
    expect_describe(0xFE0F, "U+FE0F");  // variation selector
    expect_describe(0x1F600, "'\xF0\x9F\x98\x80' (U+1F600)"); // every script's visible characters as themselves
    expect_describe(0x4E2D, "'\xE4\xB8\xAD' (U+4E2D)");        // CJK
    expect_describe(0x0915, "'\xE0\xA4\x95' (U+0915)");        // Devanagari
    expect_describe(0xD800, "U+D800");
    expect_describe(0xE9, "'\xC3\xA9' (U+00E9)");
    expect_describe(0x2014, "'\xE2\x80\x94' (U+2014)"); // em dash

    // Truncation to a small buffer stays NUL-terminated.
    char small[4];
    sk_vocab_describe_char(0xE0001, small, sizeof small);
    CHECK(strcmp(small, "U+E") == 0);

    // Lists for messages: all of them, or the first few and a count.
    const uint32_t syms[] = {'X', 0xE9, '\n'};
    char list[96];
    sk_vocab_describe_list(syms, 8, 3, 0, list, sizeof list);
    CHECK(strcmp(list, "'X', '\xC3\xA9' (U+00E9), '\\n'") == 0);
    sk_vocab_describe_list(syms, 2, 5, 0, list, sizeof list);
    CHECK(strcmp(list, "'X', '\xC3\xA9' (U+00E9) and 3 more") == 0);
    sk_vocab_describe_list(syms, 1, 3, 1, list, sizeof list);
    CHECK(strcmp(list, "0x58 and 2 more") == 0);

    // Every code point gives one non-empty line.
    char buf[64];
    for (uint32_t cp = 0; cp < 0x110000; cp++) {
        sk_vocab_describe_char(cp, buf, sizeof buf);
        if (buf[0] == 0 || strchr(buf, '\n') || strchr(buf, '\r')) {
            fprintf(stderr, "  describe(U+%04X) is not one line: \"%s\"\n", (unsigned)cp, buf);
            sk_test_failures++;
            break;
        }
    }
}

int main(void) {
    test_build_index_encode();
    test_build_errors();
    test_map();
    test_from_codepoints();
    test_describe();
    return sk_test_done("test_vocab");
}
