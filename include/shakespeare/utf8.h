// utf8.h: strict UTF-8 decoding and encoding of Unicode code points.
// defines: sk_utf8_decode, sk_utf8_decode_one, sk_utf8_encode
#ifndef SHAKESPEARE_UTF8_H
#define SHAKESPEARE_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "shakespeare/status.h"

// Decodes n bytes into a newly malloc'ed array of code points (*out, owned by the caller).
// Strict: rejects overlong forms, surrogates (U+D800..U+DFFF), code points above U+10FFFF,
// stray continuation bytes and truncated sequences, with SK_ERR_ENCODING and a message
// naming the byte offset ("invalid UTF-8 at byte 1234"). what names the source in the message.
sk_status sk_utf8_decode(const uint8_t *bytes, size_t n, const char *what,
                         uint32_t **out, size_t *out_n, sk_error *err);

// One code point at p[0..avail) (avail >= 1): returns its byte length and sets *cp; returns 0
// when p holds the valid start of a sequence that runs past avail (more input needed, or
// "truncated sequence" at the end of the input); returns -1 with *why set when invalid.
int sk_utf8_decode_one(const uint8_t *p, size_t avail, uint32_t *cp, const char **why);

// Writes the UTF-8 form of cp (at most 4 bytes) to out; returns the byte count,
// or 0 when cp is not a valid scalar value.
int sk_utf8_encode(uint32_t cp, char out[4]);

#endif
