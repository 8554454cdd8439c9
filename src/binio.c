// binio.c: bounded reader, little-endian integers and floats (see binio.h).
#include "binio.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

sk_status sk_reader_open(sk_reader *r, const char *path, sk_error *err) {
    memset(r, 0, sizeof *r);
    // O_NONBLOCK: opening a FIFO with no writer must not hang; the S_ISREG check below
    // then refuses it. Reads from a regular file are unaffected by the flag.
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return sk_fail(err, SK_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
    r->f = fdopen(fd, "rb");
    if (!r->f) {
        int e = errno;
        close(fd);
        return sk_fail(err, SK_ERR_IO, "%s: cannot open (%s)", path, strerror(e));
    }
    struct stat st;
    if (fstat(fileno(r->f), &st) != 0) {
        int e = errno;
        sk_reader_close(r);
        return sk_fail(err, SK_ERR_IO, "%s: cannot open (%s)", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        sk_reader_close(r);
        return sk_fail(err, SK_ERR_IO, "%s: cannot open (%s)", path,
                       S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
    }
    r->size = (uint64_t)st.st_size;
    return SK_OK;
}

void sk_reader_close(sk_reader *r) {
    if (r->f) fclose(r->f);
    r->f = NULL;
}

sk_status sk_reader_read(sk_reader *r, void *dst, size_t n, const char *path, sk_error *err) {
    if (n > r->size - r->pos) return sk_fail(err, SK_ERR_FORMAT, "%s: truncated", path);
    if (r->mem) memcpy(dst, r->mem + r->pos, n);
    else if (n && fread(dst, 1, n, r->f) != n)
        return sk_fail(err, SK_ERR_IO, "%s: read failed (%s)", path,
                       ferror(r->f) ? strerror(errno) : "the file shrank while being read");
    r->pos += n;
    return SK_OK;
}

void sk_put_le32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

void sk_put_le64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

uint32_t sk_get_le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t sk_get_le64(const unsigned char *p) { return (uint64_t)sk_get_le32(p) | (uint64_t)sk_get_le32(p + 4) << 32; }

sk_status sk_read_f32_le(sk_reader *r, float *x, size_t n, uint32_t *crc, const char *path, sk_error *err) {
    sk_status st = sk_reader_read(r, x, 4 * n, path, err);
    if (st != SK_OK) return st;
    *crc = sk_crc32(*crc, x, 4 * n);
    unsigned char *b = (unsigned char *)x; // little-endian bytes -> native floats, in place
    for (size_t i = 0; i < n; i++, b += 4) {
        uint32_t u = sk_get_le32(b);
        memcpy(b, &u, 4);
    }
    return SK_OK;
}

sk_status sk_write_f32_le(sk_atomic_file *af, const float *x, size_t n, uint32_t *crc, sk_error *err) {
    unsigned char buf[4096];
    while (n > 0) {
        size_t k = n < sizeof buf / 4 ? n : sizeof buf / 4;
        for (size_t i = 0; i < k; i++) {
            uint32_t u;
            memcpy(&u, &x[i], 4);
            sk_put_le32(buf + 4 * i, u);
        }
        if (crc) *crc = sk_crc32(*crc, buf, 4 * k);
        if (af) {
            sk_status st = sk_atomic_write(af, buf, 4 * k, err);
            if (st != SK_OK) return st;
        }
        x += k;
        n -= k;
    }
    return SK_OK;
}
