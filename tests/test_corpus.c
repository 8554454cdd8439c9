// test_corpus.c: reading files, loading a corpus, and the train/val/test split sizes.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shakespeare/corpus.h"
#include "test_util.h"

static char tmp[512];

static void path_in_tmp(char *buf, size_t size, const char *name) { snprintf(buf, size, "%s/%s", tmp, name); }

static void test_read_file(void) {
    sk_error err = {{0}};
    char path[600];
    uint8_t *bytes = NULL;
    size_t n = 0;

    path_in_tmp(path, sizeof path, "hello.txt");
    sk_test_write_file(path, "hello\n", 6);
    CHECK_OK(sk_read_file(path, 0, &bytes, &n, &err));
    CHECK(n == 6 && memcmp(bytes, "hello\n", 6) == 0 && bytes[6] == 0);
    free(bytes);
    unlink(path);

    // Missing file: names the path and the system's reason.
    path_in_tmp(path, sizeof path, "no-such-file.txt");
    CHECK(sk_read_file(path, 0, &bytes, &n, &err) == SK_ERR_IO);
    CHECK(strstr(err.msg, path) != NULL);
    CHECK(strstr(err.msg, "No such file or directory") != NULL);
    CHECK(bytes == NULL && n == 0);

    // A directory.
    CHECK(sk_read_file(tmp, 0, &bytes, &n, &err) == SK_ERR_IO);
    CHECK(strstr(err.msg, tmp) != NULL && strstr(err.msg, "is a directory") != NULL);

    // Empty: an error unless allowed.
    path_in_tmp(path, sizeof path, "empty.txt");
    sk_test_write_file(path, "", 0);
    CHECK(sk_read_file(path, 0, &bytes, &n, &err) == SK_ERR_IO);
    CHECK(strstr(err.msg, path) != NULL && strstr(err.msg, "is empty") != NULL);
    CHECK_OK(sk_read_file(path, 1, &bytes, &n, &err));
    CHECK(n == 0 && bytes != NULL && bytes[0] == 0);
    free(bytes);
    unlink(path);

    // A character device is not a regular file.
    CHECK(sk_read_file("/dev/null", 1, &bytes, &n, &err) == SK_ERR_IO);
    CHECK(strstr(err.msg, "/dev/null is not a regular file") != NULL);

    // Unreadable (root reads anything, so only as another user).
    if (geteuid() != 0) {
        path_in_tmp(path, sizeof path, "secret.txt");
        sk_test_write_file(path, "x", 1);
        CHECK(chmod(path, 0) == 0);
        CHECK(sk_read_file(path, 0, &bytes, &n, &err) == SK_ERR_IO);
        CHECK(strstr(err.msg, path) != NULL && strstr(err.msg, "Permission denied") != NULL);
        chmod(path, 0600);
        unlink(path);
    } else {
        printf("  (running as root: the unreadable-file check is skipped)\n");
    }

    // A file larger than one 64 KiB block, with every byte value, read back exactly.
    size_t big = 300000;
    uint8_t *data = malloc(big);
    for (size_t i = 0; i < big; i++) data[i] = (uint8_t)(i * 7 + (i >> 8));
    path_in_tmp(path, sizeof path, "big.bin");
    sk_test_write_file(path, data, big);
    CHECK_OK(sk_read_file(path, 0, &bytes, &n, &err));
    CHECK(n == big && memcmp(bytes, data, big) == 0 && bytes[big] == 0);
    free(bytes);
    free(data);
    unlink(path);
}

static void test_corpus_from_text(void) {
    sk_error err = {{0}};
    sk_corpus c;
    const char *text = "ba\xC3\xA9" "ab\n"; // b a é a b \n
    CHECK_OK(sk_corpus_from_text(&c, (const uint8_t *)text, strlen(text), "mem", &err));
    CHECK(c.n == 6);
    CHECK(c.vocab.size == 4);
    const uint32_t chars[] = {'\n', 'a', 'b', 0xE9};
    CHECK(c.vocab.size == 4 && memcmp(c.vocab.chars, chars, sizeof chars) == 0);
    const int32_t ids[] = {2, 1, 3, 1, 2, 0};
    CHECK(c.n == 6 && memcmp(c.ids, ids, sizeof ids) == 0);
    sk_corpus_free(&c);
    sk_corpus_free(&c); // safe twice
    CHECK(c.ids == NULL && c.n == 0 && c.vocab.chars == NULL);

    // Invalid UTF-8 names the source and the byte.
    CHECK(sk_corpus_from_text(&c, (const uint8_t *)"abc\xFF", 4, "mem", &err) == SK_ERR_ENCODING);
    CHECK(strcmp(err.msg, "mem: invalid UTF-8 at byte 3 (invalid lead byte)") == 0);
    CHECK(c.ids == NULL && c.n == 0 && c.vocab.chars == NULL);
    CHECK(sk_corpus_from_text(&c, (const uint8_t *)"", 0, "mem", &err) != SK_OK);
    CHECK(strstr(err.msg, "mem") != NULL);
    sk_corpus_free(&c);
}

static void test_corpus_load(void) {
    sk_error err = {{0}};
    sk_corpus c;
    char path[600];
    path_in_tmp(path, sizeof path, "bad.txt");
    sk_test_write_file(path, "To be\xED\xA0\x80", 8);
    CHECK(sk_corpus_load(&c, path, &err) == SK_ERR_ENCODING);
    CHECK(strstr(err.msg, path) != NULL && strstr(err.msg, "invalid UTF-8 at byte 5 (surrogate code point)") != NULL);
    sk_corpus_free(&c);
    unlink(path);

    path_in_tmp(path, sizeof path, "missing.txt");
    CHECK(sk_corpus_load(&c, path, &err) == SK_ERR_IO);
    CHECK(strstr(err.msg, path) != NULL);

    // Tiny Shakespeare, when the data file is present.
    sk_test_source_path(path, sizeof path, "data/tinyshakespeare.txt");
    if (access(path, R_OK) != 0) {
        printf("  (%s not found: the tiny Shakespeare checks are skipped)\n", path);
        return;
    }
    CHECK_OK(sk_corpus_load(&c, path, &err));
    CHECK(c.n == 1115394); // all ASCII: one character per byte
    CHECK(c.vocab.size == 65);
    CHECK(c.vocab.chars[0] == '\n' && c.vocab.chars[1] == ' ' && c.vocab.chars[64] == 'z');
    printf("  tiny Shakespeare: %zu characters, vocabulary %d\n", c.n, c.vocab.size);
    // "First Citizen:" opens the text.
    const char *start = "First Citizen:";
    for (size_t i = 0; i < strlen(start); i++) CHECK(c.vocab.chars[c.ids[i]] == (uint32_t)start[i]);
    size_t tr, va, te;
    CHECK_OK(sk_split_sizes(c.n, 0.9, 0.1, &tr, &va, &te, &err));
    CHECK(tr == 1003854 && va == 111540 && te == 0);
    CHECK(tr == (size_t)floor(0.9 * 1115394.0) && tr + va == c.n);
    sk_corpus_free(&c);
}

static void expect_split(size_t n, double ftr, double fva, size_t want_tr, size_t want_va, size_t want_te) {
    sk_error err = {{0}};
    size_t tr = 99, va = 99, te = 99;
    sk_status st = sk_split_sizes(n, ftr, fva, &tr, &va, &te, &err);
    if (st != SK_OK || tr != want_tr || va != want_va || te != want_te) {
        fprintf(stderr, "  split(%zu, %g, %g): expected %zu/%zu/%zu, got status %d %zu/%zu/%zu (%s)\n", n, ftr,
                fva, want_tr, want_va, want_te, (int)st, tr, va, te, st ? err.msg : "");
        sk_test_failures++;
    }
}

static void expect_split_error(double ftr, double fva, const char *fragment) {
    sk_error err = {{0}};
    size_t tr, va, te;
    sk_status st = sk_split_sizes(1000, ftr, fva, &tr, &va, &te, &err);
    if (st != SK_ERR_ARG || !strstr(err.msg, fragment)) {
        fprintf(stderr, "  split(%g, %g): expected SK_ERR_ARG with \"%s\", got %d \"%s\"\n", ftr, fva, fragment,
                (int)st, err.msg);
        sk_test_failures++;
    }
}

static void test_split_sizes(void) {
    expect_split(1000, 0.9, 0.1, 900, 100, 0);
    expect_split(1001, 0.9, 0.1, 900, 101, 0);   // sum == 1: validation takes the rest
    expect_split(1000, 0.8, 0.1, 800, 100, 100); // a test split
    expect_split(1009, 0.8, 0.1, 807, 100, 102); // floor of each, test takes the rest
    expect_split(1000, 0.7, 0.3, 700, 300, 0);
    expect_split(10, 1.0, 0.0, 10, 0, 0);
    expect_split(10, 0.0, 1.0, 0, 10, 0);
    expect_split(10, 0.0, 0.0, 0, 0, 10);
    expect_split(0, 0.9, 0.1, 0, 0, 0);
    expect_split(3, 0.5, 0.25, 1, 0, 2);
    expect_split(1000, 0.6, 0.4 + 5e-10, 600, 400, 0); // within the 1e-9 slack

    expect_split_error(-0.1, 0.1, "training fraction must lie in [0, 1], got -0.1");
    expect_split_error(1.5, 0.0, "training fraction");
    expect_split_error(0.5, 1.01, "validation fraction");
    expect_split_error(NAN, 0.1, "training fraction");
    expect_split_error(0.9, NAN, "validation fraction");
    expect_split_error(INFINITY, 0.1, "training fraction");
    expect_split_error(0.9, 0.2, "sum to 1.1");
    expect_split_error(0.5, 0.5 + 1e-6, "more than 1");
}

int main(void) {
    sk_test_tmpdir(tmp, sizeof tmp, "corpus");
    test_read_file();
    test_corpus_from_text();
    test_corpus_load();
    test_split_sizes();
    CHECK(rmdir(tmp) == 0); // every test removed the files it wrote
    return sk_test_done("test_corpus");
}
