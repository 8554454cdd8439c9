// token_cache_internal.h: the token cache's validator on a cache file's bytes, shared by
// token_cache.c (on the file's mapping) and the fuzz target (tests/fuzz/fuzz_token_cache.c).
// defines: sk_source_id, sk_token_cache_check
#ifndef SHAKESPEARE_TOKEN_CACHE_INTERNAL_H
#define SHAKESPEARE_TOKEN_CACHE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "shakespeare/token_cache.h"

// What identifies the source a cache was built from (besides its path): size and mtime.
typedef struct {
    uint64_t size;
    int64_t sec, nsec; // modification time
} sk_source_id;

// Checks the whole cache file image[0, len) (token_cache.h has the layout) against the source
// as it is now (id) and the mode. SK_OK: c->vocab (owned) and c->ids (pointing into image) are
// set, and every id is below the vocabulary's size. SK_ERR_FORMAT with the reason in why when
// the cache is stale or corrupt (to be rebuilt); SK_ERR_NOMEM (in err) when out of memory.
// c->vocab is left empty on failure. image may be NULL when len is below the header's size.
sk_status sk_token_cache_check(sk_token_cache *c, const uint8_t *image, size_t len, const sk_source_id *id,
                               sk_vocab_mode mode, char *why, size_t why_n, sk_error *err);

#endif
