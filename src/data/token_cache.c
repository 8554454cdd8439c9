// token_cache.c: building, validating and memory-mapping token caches (see token_cache.h).
#define _XOPEN_SOURCE 700 // realpath
#include "shakespeare/token_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io/binio.h"
#include "shakespeare/corpus.h"
#include "shakespeare/utf8.h"
#include "token_cache_internal.h"

#define MAGIC "SKTOKENS"
#define HEADER 96
#define CHUNK ((size_t)1 << 20) // bytes read per call while tokenizing
#define N_CODEPOINTS 0x110000u

static double cpu_s(void) { // this process's CPU time (user + system)
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const sk_word vocab_mode_rows[] = {
    {.value = SK_VOCAB_UTF8, .word = "utf8", .help = NULL},
    {.value = SK_VOCAB_BYTES, .word = "bytes", .help = NULL},
};
const sk_words sk_vocab_mode_words = SK_WORDS("vocab", vocab_mode_rows);

SK_WORDS_FNS(sk_vocab_mode_parse, sk_vocab_mode_name, sk_vocab_mode, sk_vocab_mode_words)

char *sk_token_cache_path(const char *source, sk_vocab_mode mode, const char *cache_dir) {
    char *abs = realpath(source, NULL);
    if (!abs) return NULL;
    uint64_t h = 0xcbf29ce484222325ull; // FNV-1a of the absolute path
    for (const char *p = abs; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    const char *slash = strrchr(abs, '/');
    const char *base = slash ? slash + 1 : abs;
    size_t n = strlen(cache_dir) + strlen(base) + 48;
    char *path = malloc(n);
    if (path) {
        int sep = cache_dir[0] && cache_dir[strlen(cache_dir) - 1] != '/';
        snprintf(path, n, "%s%s%s.%016llx.%s.tokens", cache_dir, sep ? "/" : "", base, (unsigned long long)h,
                 sk_vocab_mode_name(mode));
    }
    free(abs);
    return path;
}

char *sk_token_cache_default_dir(const char *dir) { return sk_path_join(dir, "shakespeare-cache"); }

char *sk_token_cache_default_dir_of_file(const char *file) {
    char *dir = sk_path_dir(file);
    char *out = dir ? sk_token_cache_default_dir(dir) : NULL;
    free(dir);
    return out;
}

// ---- the source ----------------------------------------------------------------------------

static sk_source_id id_of(const struct stat *st) {
    return (sk_source_id){.size = (uint64_t)st->st_size, .sec = (int64_t)st->st_mtim.tv_sec,
                          .nsec = (int64_t)st->st_mtim.tv_nsec};
}

// Opens the source for reading with corpus.h's messages; *fd owned by the caller.
static sk_status open_source(const char *path, int *fd, sk_source_id *id, sk_error *err) {
    if (!*path) return sk_fail(err, SK_ERR_IO, "cannot open a file with an empty path");
    // O_NONBLOCK so that opening a FIFO does not wait for a writer; it is rejected below.
    *fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (*fd < 0) return sk_fail(err, SK_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    const char *why = NULL;
    if (fstat(*fd, &st) != 0) why = strerror(errno);
    else if (S_ISDIR(st.st_mode)) why = "is a directory, not a text file";
    else if (!S_ISREG(st.st_mode)) why = "is not a regular file";
    else if (st.st_size == 0) why = "is empty";
    if (why) {
        close(*fd);
        *fd = -1;
        return sk_fail(err, SK_ERR_IO, "%s %s", path, why);
    }
    int flags = fcntl(*fd, F_GETFL);
    if (flags >= 0) (void)fcntl(*fd, F_SETFL, flags & ~O_NONBLOCK);
    *id = id_of(&st);
    return SK_OK;
}

// ---- building ------------------------------------------------------------------------------

typedef struct {
    const char *path; // the source, for messages
    int fd;
    sk_vocab_mode mode;
    const sk_cache_hooks *hooks;
    uint64_t done, total; // bytes processed over both passes, for progress
    double t0, last_report, cpu0;
    uint8_t *buf;         // (CHUNK + 4,) read buffer: carried bytes of a split sequence, then a chunk
} builder;

static void report(builder *b, int final) {
    if (!b->hooks || !b->hooks->progress) return;
    double t = now_s();
    if (!final && t - b->last_report < 0.1) return;
    b->last_report = t;
    b->hooks->progress(b->hooks->ctx, b->done, b->total, t - b->t0, cpu_s() - b->cpu0);
}

// Pass 2's output: ids in `width` bytes, summed and written in blocks.
typedef struct {
    uint8_t buf[1 << 16];
    size_t n;
    int width;
    sk_atomic_file *af;
    sk_sum64 *sum;
} id_sink;

static sk_status sink_flush(id_sink *s, sk_error *err) {
    sk_sum64_update(s->sum, s->buf, s->n);
    sk_status st = sk_atomic_write(s->af, s->buf, s->n, err);
    s->n = 0;
    return st;
}

// Appends the ids of single-byte symbols p[0..m); returns the OR of the ids (negative when
// one of the symbols is not in the vocabulary).
static int32_t sink_bytes(id_sink *s, const int32_t *map, const uint8_t *p, size_t m, sk_status *st, sk_error *err) {
    int32_t all = 0;
    while (m > 0 && *st == SK_OK) {
        size_t room = (sizeof s->buf - s->n) / (size_t)s->width, k = m < room ? m : room;
        if (s->width == 1) {
            uint8_t *o = s->buf + s->n;
            for (size_t i = 0; i < k; i++) all |= map[p[i]], o[i] = (uint8_t)map[p[i]];
        } else {
            for (size_t i = 0; i < k; i++) {
                int32_t id = map[p[i]];
                all |= id;
                if (s->width == 2) { uint16_t v = (uint16_t)id; memcpy(s->buf + s->n + 2 * i, &v, 2); }
                else memcpy(s->buf + s->n + 4 * i, &id, 4);
            }
        }
        s->n += k * (size_t)s->width, p += k, m -= k;
        if (s->n + 4 > sizeof s->buf) *st = sink_flush(s, err);
    }
    return all;
}

// Appends one id to the sink.
static sk_status sink_id(id_sink *s, int32_t id, sk_error *err) {
    if (s->width == 2) { uint16_t v = (uint16_t)id; memcpy(s->buf + s->n, &v, 2); }
    else if (s->width == 4) memcpy(s->buf + s->n, &id, 4);
    else s->buf[s->n] = (uint8_t)id;
    s->n += (size_t)s->width;
    return s->n + 4 > sizeof s->buf ? sink_flush(s, err) : SK_OK;
}

// The failure of a source that changed between (or during) the passes.
static sk_status source_changed(const char *path, sk_error *err) {
    return sk_fail(err, SK_ERR_IO, "%s changed while it was being tokenized; run again once it is complete", path);
}

// The end of the run of single-byte symbols at p[i]: any bytes in bytes mode, ASCII in utf8 mode.
static size_t single_byte_run(const uint8_t *p, size_t i, size_t len, int bytes) {
    if (bytes) return len;
    size_t j = i;
    for (uint64_t w; j + 8 <= len; j += 8) {
        memcpy(&w, p + j, 8);
        if (w & 0x8080808080808080ull) break;
    }
    while (j < len && p[j] < 0x80) j++;
    return j;
}

// A pass's running state: pass 1 gathers the symbols, pass 2 writes their ids.
typedef struct {
    uint64_t *seen;     // pass 1: the set of symbols
    uint8_t seen1[256]; // pass 1: single-byte symbols
    const int32_t *map; // pass 2: every symbol's id
    id_sink *sink;      // pass 2's output; NULL in pass 1
    uint64_t n;         // symbols so far
} pass_state;

// The symbols of p[0, len) (source offset `offset`) into ps; returns the bytes consumed, all
// but a UTF-8 sequence split by the end of a chunk that is not the last (final = 0). A
// failure sets *st.
static size_t scan_chunk(const builder *b, pass_state *ps, const uint8_t *p, size_t len, int final, uint64_t offset,
                         sk_status *st, sk_error *err) {
    const int second = ps->sink != NULL;
    size_t i = 0;
    while (i < len) {
        size_t j = single_byte_run(p, i, len, b->mode == SK_VOCAB_BYTES);
        if (j > i) {
            if (!second) {
                for (size_t q = i; q < j; q++) ps->seen1[p[q]] = 1;
            } else if (sink_bytes(ps->sink, ps->map, p + i, j - i, st, err) < 0) {
                *st = source_changed(b->path, err);
            }
            if (*st != SK_OK) return i;
            ps->n += j - i;
            i = j;
            continue;
        }
        uint32_t cp;
        const char *why = NULL;
        int k = sk_utf8_decode_one(p + i, len - i, &cp, &why);
        if (k == 0 && !final) break; // a sequence split by the chunk: carried over
        if (k <= 0) {
            *st = second ? source_changed(b->path, err)
                         : sk_fail(err, SK_ERR_ENCODING, "%s: invalid UTF-8 at byte %llu (%s)", b->path,
                                   (unsigned long long)(offset + i), why);
            return i;
        }
        i += (size_t)k;
        ps->n++;
        if (!second) {
            ps->seen[cp >> 6] |= (uint64_t)1 << (cp & 63);
            continue;
        }
        int32_t id = ps->map[cp];
        if (id < 0) *st = source_changed(b->path, err);
        else *st = sink_id(ps->sink, id, err);
        if (*st != SK_OK) return i;
    }
    return i;
}

// Pass 1 (sink == NULL): the set of symbols (seen), their count and the content checksum.
// Pass 2: every symbol's id (map) into the sink. A decoding error in pass 2, or a count that
// differs from pass 1's, means that the file changed between the passes.
static sk_status pass(builder *b, uint64_t *seen, const int32_t *map, id_sink *sink, uint64_t *count,
                      uint64_t *checksum, sk_error *err) {
    const int second = sink != NULL;
    if (lseek(b->fd, 0, SEEK_SET) != 0) return sk_fail(err, SK_ERR_IO, "cannot read %s: %s", b->path, strerror(errno));
    sk_sum64 sum;
    sk_sum64_init(&sum);
    pass_state ps = {.seen = seen, .map = map, .sink = sink};
    size_t carry = 0;
    uint64_t offset = 0; // source offset of buf[0]
    sk_status st = SK_OK;
    for (;;) {
        ssize_t got = read(b->fd, b->buf + carry, CHUNK);
        if (got < 0) {
            if (errno == EINTR) continue;
            return sk_fail(err, SK_ERR_IO, "cannot read %s: %s", b->path, strerror(errno));
        }
        sk_sum64_update(&sum, b->buf + carry, (size_t)got);
        const int final = got == 0;
        const size_t len = carry + (size_t)got;
        const size_t i = scan_chunk(b, &ps, b->buf, len, final, offset, &st, err);
        if (st != SK_OK) return st;
        b->done += (size_t)got;
        report(b, 0);
        if (final) break;
        carry = len - i;
        memmove(b->buf, b->buf + i, carry);
        offset += i;
    }
    if (second && sink->n && (st = sink_flush(sink, err)) != SK_OK) return st;
    if (second && ps.n != *count) return source_changed(b->path, err);
    if (!second) {
        for (int c = 0; c < 256; c++)
            if (ps.seen1[c]) seen[c >> 6] |= (uint64_t)1 << (c & 63);
        report(b, 1); // between the passes, always
    }
    *count = ps.n;
    *checksum = sk_sum64_final(&sum);
    return SK_OK;
}

// Removes what killed builders left of cpath: its temporary files (fsutil.h names them
// ".<name>.tmp.XXXXXX") not written to for STALE_TEMP_S; a live builder writes continuously.
#define STALE_TEMP_S 600
static void remove_dead_temps(const char *cpath) {
    char *dir = sk_path_dir(cpath);
    const char *slash = strrchr(cpath, '/');
    const char *base = slash ? slash + 1 : cpath;
    char prefix[512];
    int k = snprintf(prefix, sizeof prefix, ".%s.tmp.", base);
    DIR *d = dir && k > 0 && (size_t)k < sizeof prefix ? opendir(dir) : NULL;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strncmp(e->d_name, prefix, (size_t)k) != 0) continue;
        char *p = sk_path_join(dir, e->d_name);
        struct stat sb;
        if (p && stat(p, &sb) == 0 && S_ISREG(sb.st_mode) && time(NULL) - sb.st_mtime > STALE_TEMP_S) unlink(p);
        free(p);
    }
    if (d) closedir(d);
    free(dir);
}

static uint64_t data_offset(uint32_t V) { return ((uint64_t)HEADER + 4 * (uint64_t)V + 63) / 64 * 64; }

// The vocabulary of the symbols seen, in code point order (to free), its size V, and every
// symbol's id in map (-1 for none).
static sk_status number_symbols(const uint64_t *seen, int32_t *map, uint32_t **vocab, uint32_t *V, sk_error *err) {
    *V = 0;
    for (uint32_t w = 0; w < N_CODEPOINTS / 64; w++) *V += (uint32_t)__builtin_popcountll(seen[w]);
    if (!(*vocab = malloc(*V * sizeof **vocab))) return sk_fail(err, SK_ERR_NOMEM, "out of memory");
    uint32_t k = 0;
    for (uint32_t cp = 0; cp < N_CODEPOINTS; cp++) {
        map[cp] = (seen[cp >> 6] >> (cp & 63)) & 1 ? (int32_t)k : -1;
        if (map[cp] >= 0) (*vocab)[k++] = cp;
    }
    return SK_OK;
}

// What the header records of a cache being built.
typedef struct {
    sk_vocab_mode mode;
    int width;              // bytes per id
    uint32_t V;
    const uint32_t *vocab;  // (V,) code points
    uint64_t n;             // symbols
    sk_source_id source;
    uint64_t checksum;      // of the source's content
    double train_frac, val_frac;
} cache_head;

// Opens the cache file at cpath and writes its header, vocabulary and padding.
static sk_status write_head(sk_atomic_file *af, const char *cpath, const cache_head *h, sk_error *err) {
    size_t tr, va, te;
    sk_status st = sk_split_sizes((size_t)h->n, h->train_frac, h->val_frac, &tr, &va, &te, err);
    if (st != SK_OK) return st;
    const uint32_t V = h->V;
    unsigned char hd[HEADER] = {0};
    memcpy(hd, MAGIC, 8);
    sk_put_le32(hd + 8, SK_TOKEN_CACHE_VERSION);
    sk_put_le32(hd + 12, (uint32_t)h->mode);
    sk_put_le32(hd + 16, (uint32_t)h->width);
    sk_put_le32(hd + 20, V);
    sk_put_le64(hd + 24, h->n);
    sk_put_le64(hd + 32, h->source.size);
    sk_put_le64(hd + 40, (uint64_t)h->source.sec);
    sk_put_le64(hd + 48, (uint64_t)h->source.nsec);
    sk_put_le64(hd + 56, h->checksum);
    sk_put_le64(hd + 64, tr), sk_put_le64(hd + 72, va), sk_put_le64(hd + 80, te);
    unsigned char *vb = malloc(4 * (size_t)V + 64);
    if (!vb) return sk_fail(err, SK_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < V; i++) sk_put_le32(vb + 4 * i, h->vocab[i]);
    uint32_t crc = sk_crc32(sk_crc32(0, hd, HEADER), vb, 4 * (size_t)V);
    sk_put_le32(hd + 88, crc);
    size_t pad = (size_t)(data_offset(V) - HEADER - 4 * (uint64_t)V);
    memset(vb + 4 * (size_t)V, 0, pad);
    st = sk_atomic_open(af, cpath, err);
    af->no_sync = 1; // validated on every open: a torn cache after a crash is rebuilt, not trusted
    if (st == SK_OK) st = sk_atomic_write(af, hd, HEADER, err);
    if (st == SK_OK) st = sk_atomic_write(af, vb, 4 * (size_t)V + pad, err);
    free(vb);
    return st;
}

// Pass 2 into the cache file: the ids, each in width bytes, summed into ids; *sum2 the
// source's checksum again.
static sk_status write_ids(builder *b, const int32_t *map, int width, sk_atomic_file *af, sk_sum64 *ids,
                           uint64_t *n, uint64_t *sum2, sk_error *err) {
    id_sink *sink = malloc(sizeof *sink);
    if (!sink) return sk_fail(err, SK_ERR_NOMEM, "out of memory");
    sink->n = 0, sink->width = width, sink->af = af, sink->sum = ids;
    sk_status st = pass(b, NULL, map, sink, n, sum2, err);
    free(sink);
    return st;
}

// The source as pass 1 read it (id0, content checksum sum1) and as pass 2 left it.
static sk_status check_unchanged(const builder *b, const sk_source_id *id0, uint64_t sum1, uint64_t sum2,
                                 sk_error *err) {
    struct stat sb;
    if (fstat(b->fd, &sb) != 0) return sk_fail(err, SK_ERR_IO, "cannot stat %s: %s", b->path, strerror(errno));
    sk_source_id id1 = id_of(&sb);
    if (id1.size != id0->size || id1.sec != id0->sec || id1.nsec != id0->nsec || sum1 != sum2)
        return source_changed(b->path, err);
    return SK_OK;
}

// The ids' checksum after them, and the file in place.
static sk_status commit_cache(sk_atomic_file *af, sk_sum64 *ids, sk_error *err) {
    unsigned char tail[8];
    sk_put_le64(tail, sk_sum64_final(ids));
    sk_status st = sk_atomic_write(af, tail, 8, err);
    return st == SK_OK ? sk_atomic_commit(af, err) : st;
}

static sk_status build(const char *source, const char *cpath, sk_vocab_mode mode, double train_frac,
                       double val_frac, const sk_cache_hooks *hooks, double *seconds, sk_error *err) {
    builder b = {.path = source, .fd = -1, .mode = mode, .hooks = hooks, .t0 = now_s(), .last_report = 0,
                 .cpu0 = cpu_s()};
    sk_source_id id0;
    sk_status st = open_source(source, &b.fd, &id0, err);
    if (st != SK_OK) return st;
    b.total = 2 * id0.size;
    uint64_t *seen = calloc(N_CODEPOINTS / 64, sizeof *seen);
    int32_t *map = malloc(N_CODEPOINTS * sizeof *map);
    uint32_t *vocab = NULL, V = 0;
    b.buf = malloc(CHUNK + 4);
    sk_atomic_file af = {.fd = -1};
    uint64_t n = 0, sum1 = 0, sum2 = 0;
    sk_sum64 ids;
    sk_sum64_init(&ids);
    if (!seen || !map || !b.buf) st = sk_fail(err, SK_ERR_NOMEM, "out of memory tokenizing %s", source);
    if (st == SK_OK) st = pass(&b, seen, NULL, NULL, &n, &sum1, err);
    if (st == SK_OK) st = number_symbols(seen, map, &vocab, &V, err);
    const int width = V <= 256 ? 1 : V <= 65536 ? 2 : 4;
    const cache_head head = {.mode = mode, .width = width, .V = V, .vocab = vocab, .n = n, .source = id0,
                             .checksum = sum1, .train_frac = train_frac, .val_frac = val_frac};
    if (st == SK_OK) st = write_head(&af, cpath, &head, err);
    if (st == SK_OK) st = write_ids(&b, map, width, &af, &ids, &n, &sum2, err);
    if (st == SK_OK) st = check_unchanged(&b, &id0, sum1, sum2, err);
    if (st == SK_OK) st = commit_cache(&af, &ids, err);
    b.done = b.total;
    if (st == SK_OK) report(&b, 1);
    sk_atomic_abort(&af); // nothing left after a commit
    *seconds = now_s() - b.t0;
    close(b.fd);
    free(seen);
    free(map);
    free(vocab);
    free(b.buf);
    return st;
}

// ---- validating and mapping ----------------------------------------------------------------

// The largest id among ids[0, n) of width bytes; scanned in blocks of one width, vectorizable.
static uint32_t max_id(const uint8_t *ids, size_t n, uint32_t width) {
    uint32_t m = 0;
    if (width == 1) {
        uint8_t m8 = 0;
        for (size_t i = 0; i < n; i++) m8 = ids[i] > m8 ? ids[i] : m8;
        m = m8;
    } else if (width == 2) {
        uint16_t m16 = 0;
        for (size_t i = 0; i < n; i++) {
            uint16_t v;
            memcpy(&v, ids + 2 * i, 2);
            m16 = v > m16 ? v : m16;
        }
        m = m16;
    } else {
        for (size_t i = 0; i < n; i++) {
            uint32_t v;
            memcpy(&v, ids + 4 * i, 4);
            m = v > m ? v : m;
        }
    }
    return m;
}

// The header of a cache image of len bytes: its format, its size, its checksum and the
// source it was built from (id); *V, *width and *n as it records them. SK_ERR_FORMAT with the
// reason in why.
static sk_status check_header(const uint8_t *image, size_t len, const sk_source_id *id, sk_vocab_mode mode,
                              uint32_t *V_out, uint32_t *width_out, uint64_t *n_out, char *why, size_t why_n) {
    if (len < HEADER + 8) {
        snprintf(why, why_n, "truncated (%zu bytes)", len);
        return SK_ERR_FORMAT;
    }
    const uint8_t *hd = image;
    if (memcmp(hd, MAGIC, 8) != 0) {
        snprintf(why, why_n, "not a token cache (bad magic)");
        return SK_ERR_FORMAT;
    }
    uint32_t version = sk_get_le32(hd + 8), fmode = sk_get_le32(hd + 12), width = sk_get_le32(hd + 16);
    uint32_t V = sk_get_le32(hd + 20);
    uint64_t n = sk_get_le64(hd + 24);
    if (version != SK_TOKEN_CACHE_VERSION) {
        snprintf(why, why_n, "format version %u, this program writes %u", version, SK_TOKEN_CACHE_VERSION);
        return SK_ERR_FORMAT;
    }
    if (fmode != (uint32_t)mode || V == 0 || V > N_CODEPOINTS || (mode == SK_VOCAB_BYTES && V > 256) ||
        width != (V <= 256 ? 1u : V <= 65536 ? 2u : 4u) || n > (UINT64_MAX >> 3)) {
        snprintf(why, why_n, "corrupt header (mode %u, width %u, V %u, n %llu)", fmode, width, V,
                 (unsigned long long)n);
        return SK_ERR_FORMAT;
    }
    uint64_t want = data_offset(V) + n * width + 8;
    if ((uint64_t)len != want) {
        snprintf(why, why_n, "%s (%zu bytes, the header says %llu)", (uint64_t)len < want ? "truncated" : "corrupt",
                 len, (unsigned long long)want);
        return SK_ERR_FORMAT;
    }
    unsigned char zeroed[HEADER];
    memcpy(zeroed, hd, HEADER);
    memset(zeroed + 88, 0, 4);
    if (sk_crc32(sk_crc32(0, zeroed, HEADER), image + HEADER, 4 * (size_t)V) != sk_get_le32(hd + 88)) {
        snprintf(why, why_n, "corrupt header (checksum mismatch)");
        return SK_ERR_FORMAT;
    }
    if (sk_get_le64(hd + 32) != id->size) {
        snprintf(why, why_n, "the source changed (%llu bytes, now %llu)", (unsigned long long)sk_get_le64(hd + 32),
                 (unsigned long long)id->size);
        return SK_ERR_FORMAT;
    }
    if ((int64_t)sk_get_le64(hd + 40) != id->sec || (int64_t)sk_get_le64(hd + 48) != id->nsec) {
        snprintf(why, why_n, "the source changed (modified since the cache was built)");
        return SK_ERR_FORMAT;
    }
    *V_out = V, *width_out = width, *n_out = n;
    return SK_OK;
}

// The n ids (width bytes each) against the checksum after them, and every one inside the
// vocabulary of V. An id outside it would index past the model's tables (the sampler's remap,
// the embedding), so a cache holding one is corrupt even when its checksum matches. Scanned a
// block at a time, while it is in cache.
static sk_status check_ids(const uint8_t *ids, uint64_t n, uint32_t width, uint32_t V, char *why, size_t why_n) {
    const size_t block = (size_t)1 << 16; // ids per block
    const int full = (width == 1 && V == 256) || (width == 2 && V == 65536); // every value is an id
    uint32_t top = 0;
    sk_sum64 s;
    sk_sum64_init(&s);
    for (size_t i = 0; i < n; i += block) {
        size_t k = n - i < block ? (size_t)(n - i) : block;
        sk_sum64_update(&s, ids + i * width, k * width);
        if (!full) {
            uint32_t m = max_id(ids + i * width, k, width);
            top = m > top ? m : top;
        }
    }
    if (sk_sum64_final(&s) != sk_get_le64(ids + n * width)) {
        snprintf(why, why_n, "corrupt token ids (checksum mismatch)");
        return SK_ERR_FORMAT;
    }
    if (top >= V) {
        snprintf(why, why_n, "corrupt token ids (id %u outside the vocabulary of %u)", top, V);
        return SK_ERR_FORMAT;
    }
    return SK_OK;
}

// c->vocab from the image's V code points (bytes, in bytes mode).
static sk_status read_vocab(sk_token_cache *c, const uint8_t *image, uint32_t V, sk_vocab_mode mode, char *why,
                            size_t why_n, sk_error *err) {
    uint32_t *chars = malloc(V * sizeof *chars);
    if (!chars) return sk_fail(err, SK_ERR_NOMEM, "out of memory for a vocabulary of %u symbols", V);
    for (uint32_t i = 0; i < V; i++) chars[i] = sk_get_le32(image + HEADER + 4 * (size_t)i);
    sk_status st = sk_vocab_from_codepoints(&c->vocab, chars, (int)V, NULL);
    if (st == SK_OK && mode == SK_VOCAB_BYTES && chars[V - 1] > 255) st = SK_ERR_FORMAT; // not a byte
    free(chars);
    if (st != SK_OK) {
        sk_vocab_free(&c->vocab);
        snprintf(why, why_n, "corrupt vocabulary");
        return SK_ERR_FORMAT;
    }
    c->vocab.bytes = mode == SK_VOCAB_BYTES;
    return SK_OK;
}

sk_status sk_token_cache_check(sk_token_cache *c, const uint8_t *image, size_t len, const sk_source_id *id,
                               sk_vocab_mode mode, char *why, size_t why_n, sk_error *err) {
    memset(&c->vocab, 0, sizeof c->vocab);
    uint32_t V, width;
    uint64_t n;
    sk_status st = check_header(image, len, id, mode, &V, &width, &n, why, why_n);
    const uint8_t *ids = st == SK_OK ? image + data_offset(V) : NULL;
    if (st == SK_OK) st = check_ids(ids, n, width, V, why, why_n);
    if (st == SK_OK) st = read_vocab(c, image, V, mode, why, why_n, err);
    if (st != SK_OK) return st;
    c->ids = (sk_tokens){.data = ids, .width = (int)width, .n = (size_t)n, .map = NULL};
    return SK_OK;
}

// Maps and checks the cache at cpath against the source as it is now (id). SK_ERR_FORMAT with
// the reason in why when it is missing, stale or corrupt (to be rebuilt); other statuses are
// failures of their own (out of memory).
static sk_status try_open(sk_token_cache *c, const char *cpath, const sk_source_id *id, sk_vocab_mode mode,
                          char *why, size_t why_n, sk_error *err) {
    int fd = open(cpath, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, why_n, "%s", errno == ENOENT ? "" : strerror(errno));
        return SK_ERR_FORMAT;
    }
    struct stat sb;
    sk_status st = SK_ERR_FORMAT;
    uint8_t *map = NULL;
    size_t len = 0;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(why, why_n, "not a regular file");
        goto out;
    }
    len = (size_t)sb.st_size;
    if (len >= HEADER + 8 && (map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        map = NULL;
        snprintf(why, why_n, "cannot be mapped (%s)", strerror(errno));
        goto out;
    }
    if ((st = sk_token_cache_check(c, map, len, id, mode, why, why_n, err)) != SK_OK) goto out;
    c->map = map;
    c->map_len = len;
    map = NULL;
out:
    if (map) munmap(map, len);
    close(fd);
    return st;
}

// A cache directory that cannot be made or written: the message says how to name another.
static sk_status cache_dir_failed(sk_error *err) {
    char why[SK_ERROR_MSG_MAX];
    snprintf(why, sizeof why, "%s", err ? err->msg : "");
    return sk_fail(err, SK_ERR_IO, "%s; name a writable token cache directory with --cache-dir DIR", why);
}

sk_status sk_token_cache_open(sk_token_cache *c, const char *source, sk_vocab_mode mode, const char *cache_dir,
                              double train_frac, double val_frac, const sk_cache_hooks *hooks, sk_error *err) {
    memset(c, 0, sizeof *c);
    double t0 = now_s();
    int fd;
    sk_source_id id;
    sk_status st = open_source(source, &fd, &id, err);
    if (st != SK_OK) return st;
    close(fd);
    if ((st = sk_mkdir_p(cache_dir, "token cache directory", err)) != SK_OK) return cache_dir_failed(err);
    if (!(c->path = sk_token_cache_path(source, mode, cache_dir)))
        return sk_fail(err, SK_ERR_IO, "cannot resolve the path of %s: %s", source, strerror(errno));
    char why[256];
    st = try_open(c, c->path, &id, mode, why, sizeof why, err);
    if (st == SK_ERR_FORMAT) {
        if (why[0] && hooks && hooks->notice) {
            char line[SK_ERROR_MSG_MAX];
            snprintf(line, sizeof line, "token cache %s: %s; rebuilding it", c->path, why);
            hooks->notice(hooks->ctx, line);
        }
        c->built = 1;
        remove_dead_temps(c->path);
        st = build(source, c->path, mode, train_frac, val_frac, hooks, &c->build_s, err);
        if (st == SK_ERR_IO && access(cache_dir, W_OK) != 0) st = cache_dir_failed(err);
        if (st == SK_OK && (st = open_source(source, &fd, &id, err)) == SK_OK) close(fd);
        if (st == SK_OK) t0 = now_s();
        if (st == SK_OK && (st = try_open(c, c->path, &id, mode, why, sizeof why, err)) == SK_ERR_FORMAT)
            st = sk_fail(err, SK_ERR_IO, "token cache %s: %s right after it was built", c->path, why);
    }
    if (st == SK_OK) st = sk_split_sizes(c->ids.n, train_frac, val_frac, &c->n_train, &c->n_val, &c->n_test, err);
    if (st != SK_OK) {
        sk_token_cache_close(c);
        return st;
    }
    c->open_s = now_s() - t0;
    return SK_OK;
}

void sk_token_cache_close(sk_token_cache *c) {
    if (!c) return;
    if (c->map) munmap(c->map, c->map_len);
    sk_vocab_free(&c->vocab);
    free(c->path);
    memset(c, 0, sizeof *c);
}
