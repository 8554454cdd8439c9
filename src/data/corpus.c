// corpus.c: reading a text file, tokenizing it, and sizing its train/val/test splits.
#include "shakespeare/corpus.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shakespeare/utf8.h"

// Largest single read(): Linux transfers at most 0x7ffff000 bytes per call anyway.
#define SK_READ_CHUNK ((size_t)1 << 30)

sk_status sk_read_file(const char *path, int allow_empty, uint8_t **out, size_t *n, sk_error *err) {
    if (!path || !out || !n) return sk_fail(err, SK_ERR_ARG, "sk_read_file: NULL argument");
    *out = NULL;
    *n = 0;
    if (!*path) return sk_fail(err, SK_ERR_IO, "cannot open a file with an empty path");

    // O_NONBLOCK so that opening a FIFO does not wait for a writer; it is rejected below.
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return sk_fail(err, SK_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return sk_fail(err, SK_ERR_IO, "cannot stat %s: %s", path, strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return sk_fail(err, SK_ERR_IO, "%s is a directory, not a text file", path);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return sk_fail(err, SK_ERR_IO, "%s is not a regular file", path);
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    if (st.st_size < 0 || (unsigned long long)st.st_size >= (unsigned long long)SIZE_MAX) {
        close(fd);
        return sk_fail(err, SK_ERR_IO, "%s is too large to read into memory", path);
    }

    // Read until end of file; the size from fstat is only the first guess, in case the
    // file changes underneath us. One spare byte for the terminating NUL.
    size_t cap = (size_t)st.st_size + 1, len = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return sk_fail(err, SK_ERR_NOMEM, "cannot allocate %zu bytes to read %s", cap, path);
    }
    for (;;) {
        if (len + 1 == cap) { // full: grow by half
            size_t grown = cap + cap / 2 + 4096;
            uint8_t *bigger = grown > cap ? realloc(buf, grown) : NULL;
            if (!bigger) {
                free(buf);
                close(fd);
                return sk_fail(err, SK_ERR_NOMEM, "cannot allocate memory to read %s", path);
            }
            buf = bigger;
            cap = grown;
        }
        size_t want = cap - 1 - len;
        if (want > SK_READ_CHUNK) want = SK_READ_CHUNK;
        ssize_t got = read(fd, buf + len, want);
        if (got < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            free(buf);
            close(fd);
            return sk_fail(err, SK_ERR_IO, "cannot read %s: %s", path, strerror(e));
        }
        if (got == 0) break;
        len += (size_t)got;
    }
    close(fd);
    if (len == 0 && !allow_empty) {
        free(buf);
        return sk_fail(err, SK_ERR_IO, "%s is empty", path);
    }
    buf[len] = 0;
    *out = buf;
    *n = len;
    return SK_OK;
}

sk_status sk_corpus_from_text(sk_corpus *c, const uint8_t *bytes, size_t nbytes, const char *what,
                              sk_error *err) {
    if (!c) return sk_fail(err, SK_ERR_ARG, "sk_corpus_from_text: NULL corpus");
    memset(c, 0, sizeof *c);
    if (!what) what = "text";
    if (nbytes == 0) return sk_fail(err, SK_ERR_FORMAT, "%s is empty", what);

    uint32_t *cps = NULL;
    size_t n = 0;
    sk_status st = sk_utf8_decode(bytes, nbytes, what, &cps, &n, err);
    if (st != SK_OK) return st;
    st = sk_vocab_build(&c->vocab, cps, n, err);
    if (st != SK_OK) {
        free(cps);
        return st;
    }
    c->ids = malloc(n * sizeof *c->ids);
    if (!c->ids) {
        free(cps);
        sk_corpus_free(c);
        return sk_fail(err, SK_ERR_NOMEM, "%s: cannot allocate %zu token ids", what, n);
    }
    st = sk_vocab_encode(&c->vocab, cps, n, c->ids, what, err); // cannot fail: the vocabulary is the text's own
    free(cps);
    if (st != SK_OK) {
        sk_corpus_free(c);
        return st;
    }
    c->n = n;
    return SK_OK;
}

sk_status sk_corpus_load(sk_corpus *c, const char *path, sk_error *err) {
    if (!c) return sk_fail(err, SK_ERR_ARG, "sk_corpus_load: NULL corpus");
    memset(c, 0, sizeof *c);
    uint8_t *bytes = NULL;
    size_t nbytes = 0;
    sk_status st = sk_read_file(path, 0, &bytes, &nbytes, err);
    if (st != SK_OK) return st;
    st = sk_corpus_from_text(c, bytes, nbytes, path, err);
    free(bytes);
    return st;
}

void sk_corpus_free(sk_corpus *c) {
    if (!c) return;
    sk_vocab_free(&c->vocab);
    free(c->ids);
    c->ids = NULL;
    c->n = 0;
}

static sk_status check_fraction(const char *name, double f, sk_error *err) {
    if (isnan(f) || f < 0.0 || f > 1.0)
        return sk_fail(err, SK_ERR_ARG, "%s fraction must lie in [0, 1], got %g", name, f);
    return SK_OK;
}

sk_status sk_split_sizes(size_t n, double train_frac, double val_frac, size_t *n_train, size_t *n_val,
                         size_t *n_test, sk_error *err) {
    if (!n_train || !n_val || !n_test) return sk_fail(err, SK_ERR_ARG, "sk_split_sizes: NULL argument");
    sk_status st = check_fraction("training", train_frac, err);
    if (st != SK_OK) return st;
    st = check_fraction("validation", val_frac, err);
    if (st != SK_OK) return st;
    double sum = train_frac + val_frac;
    if (sum > 1.0 + 1e-9)
        return sk_fail(err, SK_ERR_ARG, "training and validation fractions sum to %g, more than 1 (%g + %g)", sum,
                       train_frac, val_frac);

    size_t tr = (size_t)floor((double)n * train_frac);
    if (tr > n) tr = n; // (double)n may round up for n above 2^53
    size_t va;
    // The same 1e-9 slack as above, so that fractions meant to sum to 1 (0.7 + 0.3 may
    // land a hair below 1.0 in binary) leave no one-character test split behind.
    if (sum >= 1.0 - 1e-9) {
        va = n - tr;
    } else {
        va = (size_t)floor((double)n * val_frac);
        if (va > n - tr) va = n - tr;
    }
    *n_train = tr;
    *n_val = va;
    *n_test = n - tr - va;
    return SK_OK;
}
