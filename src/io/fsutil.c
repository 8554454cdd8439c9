// fsutil.c: atomic file replacement (temp file, fsync, rename, fsync of the directory).
#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shakespeare/rng.h"

#define SK_ATOMIC_BUF (1u << 16)

char *sk_path_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, path, n);
    d[n] = '\0';
    return d;
}

char *sk_path_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    int sep = a > 0 && dir[a - 1] != '/';
    char *p = malloc(a + (size_t)sep + b + 1);
    if (!p) return NULL;
    memcpy(p, dir, a);
    if (sep) p[a] = '/';
    memcpy(p + a + (size_t)sep, name, b + 1);
    return p;
}

// A temporary name next to path: "<dir>/.<base>.tmp.XXXXXX" with 6 characters from seed.
static char *tmp_name(const char *path, uint64_t seed) {
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const char *slash = strrchr(path, '/');
    size_t dlen = slash ? (size_t)(slash - path) + 1 : 0; // directory part including '/'
    const char *base = path + dlen;
    size_t n = dlen + 1 + strlen(base) + 5 + 6 + 1;
    char *t = malloc(n);
    if (!t) return NULL;
    memcpy(t, path, dlen);
    int k = snprintf(t + dlen, n - dlen, ".%s.tmp.", base);
    char *x = t + dlen + k;
    for (int i = 0; i < 6; i++) {
        seed = sk_mix64(seed);
        x[i] = alphabet[seed % (sizeof alphabet - 1)];
    }
    x[6] = '\0';
    return t;
}

sk_status sk_atomic_open(sk_atomic_file *af, const char *path, sk_error *err) {
    memset(af, 0, sizeof *af);
    af->fd = -1;
    af->path = strdup(path);
    af->buf = malloc(SK_ATOMIC_BUF);
    if (!af->path || !af->buf) {
        sk_atomic_abort(af);
        return sk_fail(err, SK_ERR_NOMEM, "%s: out of memory", path);
    }
    // Unpredictable enough to avoid collisions; O_EXCL makes a collision a retry, not a clash.
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 16) ^
                    (uint64_t)(uintptr_t)af;
    for (int attempt = 0; attempt < 100; attempt++) {
        free(af->tmp_path);
        af->tmp_path = tmp_name(path, seed + (uint64_t)attempt);
        if (!af->tmp_path) {
            sk_atomic_abort(af);
            return sk_fail(err, SK_ERR_NOMEM, "%s: out of memory", path);
        }
        af->fd = open(af->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (af->fd >= 0) return SK_OK;
        if (errno != EEXIST) break;
    }
    int e = errno;
    char *dir = sk_path_dir(path);
    sk_status st = sk_fail(err, SK_ERR_IO, "%s: cannot write a file in directory %s (%s)", path, dir ? dir : "?",
                           strerror(e));
    free(dir);
    free(af->tmp_path); // nothing was created
    af->tmp_path = NULL;
    sk_atomic_abort(af);
    return st;
}

static int write_all(int fd, const unsigned char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static sk_status flush(sk_atomic_file *af, sk_error *err) {
    if (af->buf_len && write_all(af->fd, af->buf, af->buf_len) != 0)
        return sk_fail(err, SK_ERR_IO, "%s: write failed (%s)", af->path, strerror(errno));
    af->buf_len = 0;
    return SK_OK;
}

sk_status sk_atomic_write(sk_atomic_file *af, const void *data, size_t n, sk_error *err) {
    if (af->fd < 0) return sk_fail(err, SK_ERR_IO, "%s: write to a closed file", af->path ? af->path : "?");
    const unsigned char *p = data;
    while (n > 0) {
        if (af->buf_len == SK_ATOMIC_BUF) {
            sk_status st = flush(af, err);
            if (st != SK_OK) return st;
        }
        size_t k = SK_ATOMIC_BUF - af->buf_len;
        if (k > n) k = n;
        memcpy(af->buf + af->buf_len, p, k);
        af->buf_len += k;
        p += k;
        n -= k;
    }
    return SK_OK;
}

sk_status sk_fsync_dir(const char *dir, sk_error *err) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return sk_fail(err, SK_ERR_IO, "%s: cannot open directory (%s)", dir, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    // Some file systems cannot fsync a directory (EINVAL); there is nothing more to do there.
    if (rc != 0 && e != EINVAL) return sk_fail(err, SK_ERR_IO, "%s: fsync of the directory failed (%s)", dir, strerror(e));
    return SK_OK;
}

sk_status sk_atomic_commit(sk_atomic_file *af, sk_error *err) {
    if (af->fd < 0) return sk_fail(err, SK_ERR_IO, "%s: commit of a closed file", af->path ? af->path : "?");
    sk_status st = flush(af, err);
    if (st == SK_OK && !af->no_sync && fsync(af->fd) != 0)
        st = sk_fail(err, SK_ERR_IO, "%s: fsync failed (%s)", af->path, strerror(errno));
    int rc = close(af->fd);
    af->fd = -1;
    if (st == SK_OK && rc != 0) st = sk_fail(err, SK_ERR_IO, "%s: close failed (%s)", af->path, strerror(errno));
    if (st == SK_OK && rename(af->tmp_path, af->path) != 0)
        st = sk_fail(err, SK_ERR_IO, "%s: cannot rename %s into place (%s)", af->path, af->tmp_path, strerror(errno));
    if (st != SK_OK) {
        sk_atomic_abort(af);
        return st;
    }
    free(af->tmp_path); // renamed: nothing left to remove
    af->tmp_path = NULL;
    char *dir = af->no_sync ? NULL : sk_path_dir(af->path);
    st = af->no_sync ? SK_OK : dir ? sk_fsync_dir(dir, err) : sk_fail(err, SK_ERR_NOMEM, "%s: out of memory", af->path);
    free(dir);
    sk_atomic_abort(af);
    return st;
}

void sk_atomic_abort(sk_atomic_file *af) {
    if (af->fd >= 0) close(af->fd);
    af->fd = -1;
    if (af->tmp_path) unlink(af->tmp_path);
    free(af->tmp_path);
    free(af->path);
    free(af->buf);
    af->tmp_path = af->path = NULL;
    af->buf = NULL;
    af->buf_len = 0;
}

sk_status sk_mkdir_p(const char *path, const char *what, sk_error *err) {
    char buf[4096];
    if (!path[0] || snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return sk_fail(err, SK_ERR_ARG, "a directory path must be non-empty and shorter than 4096 bytes");
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char keep = *p;
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return sk_fail(err, SK_ERR_IO, "cannot create %s %s: %s", what ? what : "directory", buf, strerror(errno));
            *p = keep;
            if (keep == '\0') break;
        }
    }
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return what ? sk_fail(err, SK_ERR_IO, "%s %s is not a directory", what, path)
                    : sk_fail(err, SK_ERR_IO, "%s is not a directory", path);
    return SK_OK;
}
