// fuzz_token_cache.c: libFuzzer target for the token cache's validator (token_cache_internal.h),
// fed from memory: every input is a whole cache file, checked in both vocabulary modes against
// a source of SOURCE's size and modification time; then again "resealed" (the source fields set
// to SOURCE's, the header CRC and the ids' checksum recomputed), so that mutations reach the
// checks behind the checksums instead of stopping at them.
// Must hold for any input: no crash, leak or undefined behaviour (ASan/UBSan); a refusal is
// SK_ERR_FORMAT with a one-line reason (or SK_ERR_NOMEM) and no vocabulary; an accepted cache
// has a strictly increasing vocabulary of V symbols (bytes: at most 255), ids of its width
// inside the input, and every id below V.
//   CC=clang cmake -S . -B build-fuzz -DSHAKESPEARE_CUDA=OFF -DSHAKESPEARE_FUZZ=ON
//   cmake --build build-fuzz --target fuzz_token_cache
//   build-fuzz/fuzz_token_cache -max_total_time=30 <scratch corpus dir> tests/fuzz/corpus_token_cache
// Seeds (corpus_token_cache/), written by shakespeare-train --cache-dir: utf8_8bit and
// bytes_8bit, the caches of one 57-byte text (with é, ï and a NUL) whose modification time is
// SOURCE's (touch -d @1700000000.123456789); utf8_16bit, 300 distinct code points (16-bit ids,
// another source: accepted only once resealed); id_outside_vocab_16bit, what this target found
// within two minutes before the validator checked the ids' range (resealed, an id >= V).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/binio.h"
#include "shakespeare/corpus.h"
#include "data/token_cache_internal.h"

static const sk_source_id SOURCE = {57, 1700000000, 123456789};

static void require(int cond) {
    if (!cond) __builtin_trap();
}

static void check(const uint8_t *data, size_t size, sk_vocab_mode mode) {
    sk_token_cache c;
    memset(&c, 0, sizeof c);
    char why[256] = "";
    sk_error err = {{0}};
    sk_status st = sk_token_cache_check(&c, data, size, &SOURCE, mode, why, sizeof why, &err);
    if (st != SK_OK) {
        require(c.vocab.chars == NULL);
        require(st == SK_ERR_NOMEM || (st == SK_ERR_FORMAT && why[0] && !strchr(why, '\n')));
        return;
    }
    const int V = c.vocab.size;
    require(V >= 1 && c.vocab.chars && c.vocab.bytes == (mode == SK_VOCAB_BYTES));
    for (int i = 0; i < V; i++) {
        require(c.vocab.chars[i] <= (mode == SK_VOCAB_BYTES ? 255u : 0x10FFFFu));
        require(i == 0 || c.vocab.chars[i] > c.vocab.chars[i - 1]);
        require(sk_vocab_index(&c.vocab, c.vocab.chars[i]) == i);
    }
    const uint8_t *ids = c.ids.data;
    const size_t w = (size_t)c.ids.width;
    require(w == 1 || w == 2 || w == 4);
    require(ids >= data && (size_t)(ids - data) <= size && c.ids.n <= (size - (size_t)(ids - data)) / w);
    for (size_t i = 0; i < c.ids.n; i++) { // what the batcher and the scorer read
        int32_t id;
        sk_tokens_read(&c.ids, i, 1, &id);
        require(id >= 0 && id < V);
    }
    size_t tr, va, te;
    if (sk_split_sizes(c.ids.n, 0.9, 0.1, &tr, &va, &te, &err) == SK_OK) require(tr + va + te == c.ids.n);
    sk_vocab_free(&c.vocab);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    check(data, size, SK_VOCAB_UTF8);
    check(data, size, SK_VOCAB_BYTES);
    // Resealed: the header's source fields, CRC and (when the sizes add up) the ids' checksum.
    const size_t header = 96;
    if (size < header + 8) return 0;
    uint8_t *copy = malloc(size);
    if (!copy) return 0;
    memcpy(copy, data, size);
    sk_put_le64(copy + 32, SOURCE.size);
    sk_put_le64(copy + 40, (uint64_t)SOURCE.sec);
    sk_put_le64(copy + 48, (uint64_t)SOURCE.nsec);
    const uint64_t V = sk_get_le32(copy + 20), n = sk_get_le64(copy + 24), width = sk_get_le32(copy + 16);
    if (4 * V <= size - header) {
        memset(copy + 88, 0, 4);
        sk_put_le32(copy + 88, sk_crc32(sk_crc32(0, copy, header), copy + header, 4 * (size_t)V));
    }
    const uint64_t off = (header + 4 * V + 63) / 64 * 64;
    if ((width == 1 || width == 2 || width == 4) && n <= size && off + n * width + 8 == size) {
        sk_sum64 s;
        sk_sum64_init(&s);
        sk_sum64_update(&s, copy + off, (size_t)(n * width));
        sk_put_le64(copy + off + n * width, sk_sum64_final(&s));
    }
    check(copy, size, SK_VOCAB_UTF8);
    check(copy, size, SK_VOCAB_BYTES);
    free(copy);
    return 0;
}
