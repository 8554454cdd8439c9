// token_cache.h: a text file tokenized once into a file of token ids, memory-mapped by later runs.
// defines: sk_vocab_mode, sk_vocab_mode_words, sk_vocab_mode_name, sk_vocab_mode_parse, sk_cache_hooks, sk_token_cache,
//          sk_token_cache_open, sk_token_cache_close, sk_token_cache_path, sk_token_cache_default_dir,
//          sk_token_cache_default_dir_of_file,
//          SK_TOKEN_CACHE_VERSION
//
// Cache file "<cache_dir>/<basename>.<16 hex digits of the source's absolute path>.<mode>.tokens",
// all integers little-endian:
//   offset  size  field
//   0       8     magic "SKTOKENS"
//   8       4     u32 format version (SK_TOKEN_CACHE_VERSION)
//   12      4     u32 vocabulary mode (0 utf8: code points, 1 bytes: byte values)
//   16      4     u32 id width in bytes: 1 when V <= 256, 2 when V <= 65536, else 4
//   20      4     u32 V
//   24      8     u64 n, tokens
//   32      8     u64 source size in bytes
//   40      8     i64 source modification time, seconds
//   48      8     i64 source modification time, nanoseconds
//   56      8     u64 source content checksum (sk_sum64 of its bytes)
//   64      24    u64 n_train, n_val, n_test: the splits of the fractions it was built with
//   88      4     u32 CRC-32 of bytes [0, 88) and the vocabulary
//   92      4     zero
//   96      4*V   u32 vocabulary, strictly increasing
//   D       n*w   ids, D = 96 + 4V rounded up to a multiple of 64
//   D+n*w   8     u64 sk_sum64 of the ids
// A cache is used only when all of it checks out: magic, version, header CRC, sizes against the
// file size, the id checksum, every id below V, and the source's size and modification time as
// they are now. Any
// mismatch is reported in one line (hooks->notice) and the cache is rebuilt: streamed from the
// source in two passes (vocabulary, then ids) into a temporary file that is renamed into place,
// so concurrent builders never leave a broken cache. A source whose size, time or content
// checksum changes between the passes is an error.
#ifndef SHAKESPEARE_TOKEN_CACHE_H
#define SHAKESPEARE_TOKEN_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "shakespeare/batcher.h"
#include "shakespeare/status.h"
#include "shakespeare/vocab.h"
#include "shakespeare/words.h"

#define SK_TOKEN_CACHE_VERSION 1u

typedef enum { SK_VOCAB_UTF8 = 0, SK_VOCAB_BYTES = 1 } sk_vocab_mode;

// The modes' words (words.h): utf8, bytes.
extern const sk_words sk_vocab_mode_words;
const char *sk_vocab_mode_name(sk_vocab_mode m); // "utf8" | "bytes"
sk_status sk_vocab_mode_parse(const char *s, sk_vocab_mode *out, sk_error *err);

typedef struct {
    void *ctx;
    void (*notice)(void *ctx, const char *line); // a stale or corrupt cache, rebuilt
    // While tokenizing: bytes processed of total (two passes: total = 2 * source size), the
    // wall-clock and the CPU seconds (user + system) so far.
    // Called about 10 times a second, once between the passes (done == source size) and once
    // with done == total at the end.
    void (*progress)(void *ctx, uint64_t done, uint64_t total, double elapsed_s, double cpu_s);
} sk_cache_hooks;

typedef struct {
    sk_vocab vocab;       // owned; vocab.bytes set in bytes mode
    sk_tokens ids;        // (n,) the whole text, pointing into the mapping
    size_t n_train, n_val, n_test;
    char *path;           // owned: the cache file
    void *map;            // read-only mapping of the whole cache file
    size_t map_len;
    int built;            // 1 when this open tokenized the source
    double build_s;       // seconds spent tokenizing (0 when reused)
    double open_s;        // seconds spent checking and mapping the cache
} sk_token_cache;

// The cache of source in cache_dir (created when missing), validated or (re)built. A cache_dir
// that cannot be created, or written when the cache must be built, is SK_ERR_IO naming it and
// --cache-dir. Source errors are corpus.h's: missing, a directory, empty, invalid UTF-8 in
// utf8 mode (SK_ERR_ENCODING, with the byte offset). hooks may be NULL.
sk_status sk_token_cache_open(sk_token_cache *c, const char *source, sk_vocab_mode mode, const char *cache_dir,
                              double train_frac, double val_frac, const sk_cache_hooks *hooks, sk_error *err);
// Safe to call twice.
void sk_token_cache_close(sk_token_cache *c);

// The cache file name for source (a new string; NULL when the source cannot be resolved).
char *sk_token_cache_path(const char *source, sk_vocab_mode mode, const char *cache_dir);

// The cache directory when the programs find no per-user one (cli_default_cache_dir):
// "shakespeare-cache" inside dir (the out-dir, or the directory of a checkpoint), so that a run
// needs no more than its out-dir to be writable. A new string; NULL when out of memory.
char *sk_token_cache_default_dir(const char *dir);
// The same for the directory a file (a checkpoint) is in.
char *sk_token_cache_default_dir_of_file(const char *file);

#endif
