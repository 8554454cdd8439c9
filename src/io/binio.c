// binio.c: bounded reader, little-endian integers and floats (see binio.h).
#include "binio.h"

#include "shakespeare/rng.h"

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
        sk_status st = sk_atomic_write(af, buf, 4 * k, err);
        if (st != SK_OK) return st;
        x += k;
        n -= k;
    }
    return SK_OK;
}

void sk_sum64_init(sk_sum64 *s) { memset(s, 0, sizeof *s); }

// Whole 32-byte blocks of p; the loop vectorizes (eight independent lanes).
static void sum_blocks(sk_sum64 *s, const unsigned char *p, size_t blocks) {
    uint64_t a[8], b[8];
    memcpy(a, s->a, sizeof a);
    memcpy(b, s->b, sizeof b);
    for (size_t i = 0; i < blocks; i++, p += 32) {
        uint32_t w[8];
        memcpy(w, p, sizeof w);
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
        for (int k = 0; k < 8; k++) w[k] = sk_get_le32(p + 4 * k);
#endif
        for (int k = 0; k < 8; k++) {
            a[k] += w[k];
            b[k] += a[k];
        }
    }
    memcpy(s->a, a, sizeof a);
    memcpy(s->b, b, sizeof b);
}

void sk_sum64_update(sk_sum64 *s, const void *data, size_t n) {
    const unsigned char *p = data;
    s->n += n;
    if (s->tail_n) {
        size_t k = 32 - s->tail_n < n ? 32 - s->tail_n : n;
        memcpy(s->tail + s->tail_n, p, k);
        s->tail_n += k, p += k, n -= k;
        if (s->tail_n < 32) return;
        sum_blocks(s, s->tail, 1);
        s->tail_n = 0;
    }
    sum_blocks(s, p, n / 32);
    p += n / 32 * 32;
    s->tail_n = n % 32;
    memcpy(s->tail, p, s->tail_n);
}

uint64_t sk_sum64_final(const sk_sum64 *s) {
    sk_sum64 t = *s;
    if (t.tail_n) { // zero-padded last block; the length below tells the padding apart
        memset(t.tail + t.tail_n, 0, 32 - t.tail_n);
        sum_blocks(&t, t.tail, 1);
    }
    uint64_t h = sk_mix64(t.n ^ 0x736b73756d363401ull);
    for (int k = 0; k < 8; k++) h = sk_mix64(h ^ t.a[k]) + t.b[k], h = sk_mix64(h);
    return h;
}
