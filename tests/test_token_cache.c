// test_token_cache.c: the token cache against the in-memory tokenizer (corpus.h): the same ids,
// vocabulary and splits; id widths 8/16/32; every staleness and corruption case rebuilt with
// one notice; a source changed during tokenization; concurrent builders; byte vocabularies.
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "io/binio.h"
#include "shakespeare/corpus.h"
#include "shakespeare/token_cache.h"
#include "shakespeare/utf8.h"
#include "test_util.h"

static char tmp[512], cache_dir[600];

typedef struct {
    int notices;
    char last[SK_ERROR_MSG_MAX];
    const char *append_to; // progress hook: appends to this file between the two passes
    uint64_t source_size;
} hook_log;

static void on_notice(void *ctx, const char *line) {
    hook_log *h = ctx;
    h->notices++;
    snprintf(h->last, sizeof h->last, "%s", line);
}

static void on_progress(void *ctx, uint64_t done, uint64_t total, double elapsed, double cpu) {
    hook_log *h = ctx;
    (void)total, (void)elapsed, (void)cpu;
    if (h->append_to && done == h->source_size) { // after pass 1
        FILE *f = fopen(h->append_to, "ab");
        fputs("more text\n", f);
        fclose(f);
        h->append_to = NULL;
    }
}

// The cache's ids, vocabulary and splits equal what sk_corpus_from_text makes of the file.
static void check_same_as_corpus(const sk_token_cache *c, const char *path, int want_width) {
    sk_error err = {{0}};
    sk_corpus ref;
    CHECK_OK(sk_corpus_load(&ref, path, &err));
    CHECK(c->ids.width == want_width);
    CHECK(c->ids.n == ref.n);
    CHECK(sk_vocab_equal(&c->vocab, &ref.vocab));
    size_t bad = 0;
    int32_t id;
    for (size_t i = 0; i < ref.n && i < c->ids.n; i++) {
        sk_tokens_read(&c->ids, i, 1, &id);
        bad += id != ref.ids[i];
    }
    CHECK(bad == 0);
    size_t tr, va, te;
    CHECK_OK(sk_split_sizes(ref.n, 0.9, 0.1, &tr, &va, &te, &err));
    CHECK(c->n_train == tr && c->n_val == va && c->n_test == te);
    sk_corpus_free(&ref);
}

static sk_status open_cache(sk_token_cache *c, const char *path, sk_vocab_mode mode, hook_log *h, sk_error *err) {
    sk_cache_hooks hooks = {h, on_notice, on_progress};
    return sk_token_cache_open(c, path, mode, cache_dir, 0.9, 0.1, &hooks, err);
}

static void test_tiny_shakespeare(void) {
    sk_error err = {{0}};
    char path[600];
    sk_test_source_path(path, sizeof path, "data/tinyshakespeare.txt");
    sk_token_cache c;
    hook_log h = {0};
    CHECK_OK(open_cache(&c, path, SK_VOCAB_UTF8, &h, &err));
    CHECK(c.built == 1 && h.notices == 0 && c.vocab.size == 65 && !c.vocab.bytes);
    check_same_as_corpus(&c, path, 1);
    sk_token_cache_close(&c);
    // The second open reuses it.
    CHECK_OK(open_cache(&c, path, SK_VOCAB_UTF8, &h, &err));
    CHECK(c.built == 0 && h.notices == 0);
    check_same_as_corpus(&c, path, 1);
    sk_token_cache_close(&c);
    sk_token_cache_close(&c); // twice is safe
}

// A text of `distinct` different code points (from U+0020 up, skipping surrogates), each once,
// then a fixed pseudo-random sequence of them.
static void write_many_symbols(const char *path, uint32_t distinct, size_t extra) {
    FILE *f = fopen(path, "wb");
    char u[4];
    uint32_t cp = 0x20;
    for (uint32_t i = 0; i < distinct; i++, cp++) {
        if (cp == 0xD800) cp = 0xE000;
        fwrite(u, 1, (size_t)sk_utf8_encode(cp, u), f);
    }
    uint64_t x = 12345;
    for (size_t i = 0; i < extra; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t k = (uint32_t)(x >> 33) % distinct, c = 0x20 + k;
        if (c >= 0xD800) c += 0x800;
        fwrite(u, 1, (size_t)sk_utf8_encode(c, u), f);
    }
    fclose(f);
}

static void test_widths(void) {
    sk_error err = {{0}};
    const struct { uint32_t distinct; int width; } cases[] = {{200, 1}, {256, 1}, {257, 2}, {3000, 2}, {65536, 2},
                                                             {65537, 4}, {70000, 4}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/symbols%u.txt", tmp, cases[i].distinct);
        write_many_symbols(path, cases[i].distinct, 5000);
        sk_token_cache c;
        hook_log h = {0};
        CHECK_OK(open_cache(&c, path, SK_VOCAB_UTF8, &h, &err));
        CHECK(c.vocab.size == (int)cases[i].distinct);
        check_same_as_corpus(&c, path, cases[i].width);
        sk_token_cache_close(&c);
    }
}

static void copy_file(const char *from, const char *to) {
    uint8_t *b;
    size_t n;
    sk_error err = {{0}};
    CHECK_OK(sk_read_file(from, 0, &b, &n, &err));
    sk_test_write_file(to, b, n);
    free(b);
}

// Overwrites byte `at` of path (negative: from the end) with its complement.
static void flip_byte(const char *path, long at) {
    int fd = open(path, O_RDWR);
    struct stat sb;
    fstat(fd, &sb);
    off_t off = at >= 0 ? at : sb.st_size + at;
    unsigned char b;
    CHECK(pread(fd, &b, 1, off) == 1);
    b = (unsigned char)~b;
    CHECK(pwrite(fd, &b, 1, off) == 1);
    close(fd);
}

static void set_u32(const char *path, off_t at, uint32_t v) {
    int fd = open(path, O_RDWR);
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
    CHECK(pwrite(fd, b, 4, at) == 4);
    close(fd);
}

// Sets id number i of a width-1 cache to v and writes the ids' checksum that matches (token_cache.h
// has the layout): a cache that only the range of its ids tells from a good one.
static void set_id_resealed(const char *path, size_t i, uint8_t v) {
    uint8_t *b;
    size_t n;
    sk_error err = {{0}};
    CHECK_OK(sk_read_file(path, 0, &b, &n, &err));
    uint32_t V = sk_get_le32(b + 20);
    uint64_t count = sk_get_le64(b + 24), off = (96 + 4 * (uint64_t)V + 63) / 64 * 64;
    CHECK(sk_get_le32(b + 16) == 1 && i < count && off + count + 8 == n);
    b[off + i] = v;
    sk_sum64 s;
    sk_sum64_init(&s);
    sk_sum64_update(&s, b + off, (size_t)count);
    sk_put_le64(b + off + count, sk_sum64_final(&s));
    sk_test_write_file(path, b, n);
    free(b);
}

// Opens path's cache, expecting a rebuild announced by one notice containing `reason`.
static void expect_rebuild(const char *path, const char *reason) {
    sk_error err = {{0}};
    sk_token_cache c;
    hook_log h = {0};
    CHECK_OK(open_cache(&c, path, SK_VOCAB_UTF8, &h, &err));
    if (!(c.built == 1 && h.notices == 1 && strstr(h.last, reason) && strstr(h.last, "rebuilding")))
        fprintf(stderr, "want a rebuild for \"%s\": built %d, %d notices, last \"%s\"\n", reason, c.built, h.notices,
                h.last);
    CHECK(c.built == 1 && h.notices == 1 && strstr(h.last, reason) != NULL);
    check_same_as_corpus(&c, path, 1);
    sk_token_cache_close(&c);
}

static void test_stale_and_corrupt(void) {
    sk_error err = {{0}};
    char src[600], path[600];
    sk_test_source_path(src, sizeof src, "data/tinyshakespeare.txt");
    snprintf(path, sizeof path, "%s/stale.txt", tmp);
    copy_file(src, path);
    sk_token_cache c;
    hook_log h = {0};
    CHECK_OK(open_cache(&c, path, SK_VOCAB_UTF8, &h, &err));
    char *cpath = strdup(c.path);
    sk_token_cache_close(&c);

    // The source grows: size.
    FILE *f = fopen(path, "ab");
    fputs("ANOTHER LINE\n", f);
    fclose(f);
    expect_rebuild(path, "the source changed (");
    // The same size, a new modification time.
    struct timespec times[2] = {{0, UTIME_OMIT}, {1000000000, 5}};
    utimensat(AT_FDCWD, path, times, 0);
    expect_rebuild(path, "modified since");
    // The cache: truncated, extra bytes, a flipped id, a flipped vocabulary entry, a flipped
    // header byte, a foreign file, an old format version, a flipped id checksum.
    truncate(cpath, 1000);
    expect_rebuild(path, "truncated");
    f = fopen(cpath, "ab");
    fputc('x', f);
    fclose(f);
    expect_rebuild(path, "corrupt (");
    flip_byte(cpath, 5000);
    expect_rebuild(path, "corrupt token ids");
    flip_byte(cpath, 96 + 4 * 3);
    expect_rebuild(path, "corrupt header (checksum");
    flip_byte(cpath, 60);
    expect_rebuild(path, "corrupt header (checksum");
    flip_byte(cpath, 2);
    expect_rebuild(path, "bad magic");
    set_u32(cpath, 8, SK_TOKEN_CACHE_VERSION - 1);
    expect_rebuild(path, "format version 0");
    flip_byte(cpath, -3);
    expect_rebuild(path, "corrupt token ids");
    // An id equal to V (65) or 255 under a matching checksum: outside the vocabulary.
    set_id_resealed(cpath, 1234, 65);
    expect_rebuild(path, "corrupt token ids (id 65 outside the vocabulary of 65)");
    set_id_resealed(cpath, 0, 255);
    expect_rebuild(path, "corrupt token ids (id 255 outside");
    truncate(cpath, 0);
    expect_rebuild(path, "truncated (0 bytes)");
    // A source changed between the two passes is an error, and leaves no cache behind.
    unlink(cpath);
    struct stat sb;
    stat(path, &sb);
    h = (hook_log){0, "", path, (uint64_t)sb.st_size};
    CHECK(open_cache(&c, path, SK_VOCAB_UTF8, &h, &err) == SK_ERR_IO);
    CHECK(strstr(err.msg, "changed while it was being tokenized") != NULL);
    CHECK(access(cpath, F_OK) != 0);
    h = (hook_log){0};
    CHECK_OK(open_cache(&c, path, SK_VOCAB_UTF8, &h, &err)); // and it works once the file is stable
    check_same_as_corpus(&c, path, 1);
    sk_token_cache_close(&c);
    free(cpath);
}

// Eight processes build the same cache at once; every one gets a correct cache, and so does
// a run after them.
static void test_concurrent_builders(void) {
    sk_error err = {{0}};
    char src[600], path[600];
    sk_test_source_path(src, sizeof src, "data/tinyshakespeare.txt");
    snprintf(path, sizeof path, "%s/concurrent.txt", tmp);
    copy_file(src, path);
    enum { N = 8 };
    pid_t pids[N];
    for (int i = 0; i < N; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            sk_token_cache c;
            hook_log h = {0};
            sk_error e;
            if (open_cache(&c, path, SK_VOCAB_UTF8, &h, &e) != SK_OK) _exit(1);
            check_same_as_corpus(&c, path, 1);
            _exit(sk_test_failures ? 2 : 0);
        }
    }
    for (int i = 0; i < N; i++) {
        int status = -1;
        waitpid(pids[i], &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    sk_token_cache c;
    hook_log h = {0};
    CHECK_OK(open_cache(&c, path, SK_VOCAB_UTF8, &h, &err));
    CHECK(c.built == 0 && h.notices == 0);
    check_same_as_corpus(&c, path, 1);
    sk_token_cache_close(&c);
}

static void test_bytes(void) {
    sk_error err = {{0}};
    char path[600];
    snprintf(path, sizeof path, "%s/binary.bin", tmp);
    const unsigned char data[] = {'a', 0, 0xFF, 'b', 0xC3, 0x28, 0, 'a', 0x80, '\n'};
    sk_test_write_file(path, data, sizeof data);
    sk_token_cache c;
    hook_log h = {0};
    CHECK(open_cache(&c, path, SK_VOCAB_UTF8, &h, &err) == SK_ERR_ENCODING);
    CHECK(strstr(err.msg, "invalid UTF-8 at byte 2") && !strstr(err.msg, "--")); // flags are the CLI's to suggest
    CHECK_OK(open_cache(&c, path, SK_VOCAB_BYTES, &h, &err));
    const uint32_t want_vocab[] = {0, '\n', 'a', 'b', 0x28, 0x80, 0xC3, 0xFF};
    uint32_t sorted[8];
    memcpy(sorted, want_vocab, sizeof sorted);
    for (int i = 0; i < 8; i++) // insertion sort
        for (int j = i; j > 0 && sorted[j] < sorted[j - 1]; j--) {
            uint32_t t = sorted[j];
            sorted[j] = sorted[j - 1], sorted[j - 1] = t;
        }
    CHECK(c.vocab.bytes == 1 && c.vocab.size == 8 && memcmp(c.vocab.chars, sorted, sizeof sorted) == 0);
    CHECK(c.ids.n == sizeof data && c.ids.width == 1);
    for (size_t i = 0; i < sizeof data && c.ids.n == sizeof data; i++) {
        int32_t id;
        sk_tokens_read(&c.ids, i, 1, &id);
        CHECK(c.vocab.chars[id] == data[i]);
    }
    sk_token_cache_close(&c);
}

int main(void) {
    sk_test_tmpdir(tmp, sizeof tmp, "token-cache");
    snprintf(cache_dir, sizeof cache_dir, "%s/cache/nested", tmp); // created on first use
    test_tiny_shakespeare();
    test_widths();
    test_stale_and_corrupt();
    test_concurrent_builders();
    test_bytes();
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    return sk_test_done("test_token_cache");
}
