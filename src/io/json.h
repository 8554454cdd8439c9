// json.h: a small, strict, bounded JSON parser (RFC 8259) for safetensors headers.
// defines: sk_json, sk_json_node, sk_json_parse, sk_json_free, sk_json_get, sk_json_string,
//          sk_json_string_eq, sk_json_u64, sk_utf8_valid_prefix
//
// The whole document is parsed into a flat array of nodes that point back into the source
// by byte spans (nothing is copied until asked for). Strict: UTF-8 validated, no trailing
// commas, no comments, no lone surrogates in \u escapes, no control characters in strings,
// nesting at most SK_JSON_MAX_DEPTH; only whitespace may follow the top-level value.
// The parser never reads outside [src, src + len) and needs no NUL terminator.
#ifndef SHAKESPEARE_JSON_H
#define SHAKESPEARE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shakespeare/status.h"

#define SK_JSON_MAX_DEPTH 32
#define SK_JSON_NONE ((size_t)-1)

typedef enum {
    SK_JSON_NULL,
    SK_JSON_FALSE,
    SK_JSON_TRUE,
    SK_JSON_NUMBER,
    SK_JSON_STRING,
    SK_JSON_ARRAY,
    SK_JSON_OBJECT,
} sk_json_type;

typedef struct {
    sk_json_type type;
    size_t start, len; // source span: strings without their quotes (escapes undecoded),
                       // numbers and literals as written, containers bracket to bracket
    size_t count;      // arrays: elements; objects: members
    size_t first;      // first child or SK_JSON_NONE; an object's children are key, value, key, ...
    size_t next;       // next sibling or SK_JSON_NONE
    bool escaped;      // strings: contains backslash escapes (decode with sk_json_string)
} sk_json_node;

typedef struct {
    const char *src;     // borrowed: must outlive the document
    size_t len;
    sk_json_node *nodes; // (n,) owned; nodes[0] is the top-level value
    size_t n, cap, max;
} sk_json;

// Parses src[0..len) into at most max_nodes values (keys count too), which bounds the memory
// an input can make it allocate. On failure SK_ERR_FORMAT with "invalid JSON at byte N: reason"
// (or SK_ERR_NOMEM) and an empty document. sk_json_free is safe on either, and twice.
sk_status sk_json_parse(sk_json *doc, const char *src, size_t len, size_t max_nodes, sk_error *err);
void sk_json_free(sk_json *doc);

// The value of the first member of object node obj whose key equals key, else SK_JSON_NONE.
size_t sk_json_get(const sk_json *doc, size_t obj, const char *key);

// The decoded string node as a new NUL-terminated malloc'ed buffer (*len excludes the NUL;
// the string may itself contain NUL bytes from \u0000). NULL when out of memory.
char *sk_json_string(const sk_json *doc, size_t node, size_t *len);

// Whether string node equals the NUL-terminated s (exactly, after decoding).
bool sk_json_string_eq(const sk_json *doc, size_t node, const char *s);

// A number node written as a plain non-negative integer (digits only, no sign, fraction or
// exponent) that fits in uint64_t.
bool sk_json_u64(const sk_json *doc, size_t node, uint64_t *out);

// Length of the longest prefix of s[0..n) that is valid UTF-8 (strict: no overlongs,
// surrogates or code points above U+10FFFF); n when all of it is.
size_t sk_utf8_valid_prefix(const char *s, size_t n);

#endif
