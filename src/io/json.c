// json.c: the strict, bounded JSON parser of json.h (recursive descent, depth-limited).
#include "json.h"

#include "shakespeare/utf8.h"

#include <stdlib.h>
#include <string.h>

// ---- UTF-8 ---------------------------------------------------------------------------------

// Length (1..4) of the valid UTF-8 sequence at s[0..n), storing its code point, or 0.
static int utf8_one(const unsigned char *s, size_t n, uint32_t *cp) {
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int k;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) k = 2, v = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) k = 3, v = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) k = 4, v = c & 0x07, min = 0x10000;
    else return 0; // continuation byte, overlong 2-byte lead, or beyond U+10FFFF
    if ((size_t)k > n) return 0;
    for (int i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return k;
}

size_t sk_utf8_valid_prefix(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    uint32_t cp;
    while (i < n) {
        int k = utf8_one(u + i, n - i, &cp);
        if (!k) return i;
        i += (size_t)k;
    }
    return n;
}

// ---- parser --------------------------------------------------------------------------------

typedef struct {
    sk_json *doc;
    size_t pos;
    sk_error *err;
    sk_status st; // first failure
} parser;

static size_t fail(parser *p, size_t at, const char *why) {
    if (p->st == SK_OK) p->st = sk_fail(p->err, SK_ERR_FORMAT, "invalid JSON at byte %zu: %s", at, why);
    return SK_JSON_NONE;
}

static size_t new_node(parser *p, sk_json_type type, size_t start) {
    sk_json *d = p->doc;
    if (d->n == d->max) return fail(p, start, "too many values");
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 16;
        if (cap > d->max) cap = d->max;
        sk_json_node *nodes = realloc(d->nodes, cap * sizeof *nodes);
        if (!nodes) {
            if (p->st == SK_OK) p->st = sk_fail(p->err, SK_ERR_NOMEM, "out of memory parsing JSON");
            return SK_JSON_NONE;
        }
        d->nodes = nodes;
        d->cap = cap;
    }
    sk_json_node *nd = &d->nodes[d->n];
    memset(nd, 0, sizeof *nd);
    nd->type = type;
    nd->start = start;
    nd->first = nd->next = SK_JSON_NONE;
    return d->n++;
}

static void skip_ws(parser *p) {
    const char *s = p->doc->src;
    while (p->pos < p->doc->len && (s[p->pos] == ' ' || s[p->pos] == '\t' || s[p->pos] == '\n' || s[p->pos] == '\r'))
        p->pos++;
}

static int hex4(const char *s, size_t n, size_t at, uint32_t *out) {
    if (at + 4 > n) return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[at + (size_t)i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return 0;
        v = v * 16 + (uint32_t)d;
    }
    *out = v;
    return 1;
}

static size_t parse_string(parser *p) {
    const char *s = p->doc->src;
    size_t n = p->doc->len, open = p->pos++;
    size_t id = new_node(p, SK_JSON_STRING, p->pos);
    if (id == SK_JSON_NONE) return id;
    bool escaped = false;
    for (;;) {
        if (p->pos >= n) return fail(p, open, "unterminated string");
        unsigned char c = (unsigned char)s[p->pos];
        if (c == '"') break;
        if (c < 0x20) return fail(p, p->pos, "control character in string");
        if (c == '\\') {
            escaped = true;
            if (p->pos + 1 >= n) return fail(p, open, "unterminated string");
            char e = s[p->pos + 1];
            if (strchr("\"\\/bfnrt", e) && e != '\0') {
                p->pos += 2;
                continue;
            }
            if (e != 'u') return fail(p, p->pos, "invalid escape");
            uint32_t u, lo;
            if (!hex4(s, n, p->pos + 2, &u)) return fail(p, p->pos, "invalid \\u escape");
            if (u >= 0xDC00 && u <= 0xDFFF) return fail(p, p->pos, "lone low surrogate in \\u escape");
            if (u >= 0xD800 && u <= 0xDBFF) {
                if (p->pos + 7 >= n || s[p->pos + 6] != '\\' || s[p->pos + 7] != 'u' || !hex4(s, n, p->pos + 8, &lo) ||
                    lo < 0xDC00 || lo > 0xDFFF)
                    return fail(p, p->pos, "lone high surrogate in \\u escape");
                p->pos += 6;
            }
            p->pos += 6;
            continue;
        }
        uint32_t cp;
        int k = utf8_one((const unsigned char *)s + p->pos, n - p->pos, &cp);
        if (!k) return fail(p, p->pos, "invalid UTF-8 in string");
        p->pos += (size_t)k;
    }
    p->doc->nodes[id].len = p->pos - p->doc->nodes[id].start;
    p->doc->nodes[id].escaped = escaped;
    p->pos++; // closing quote
    return id;
}

static size_t digits(const char *s, size_t n, size_t i) {
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    return i;
}

static size_t parse_number(parser *p) {
    const char *s = p->doc->src;
    size_t n = p->doc->len, i = p->pos, start = p->pos;
    if (i < n && s[i] == '-') i++;
    if (i >= n || s[i] < '0' || s[i] > '9') return fail(p, start, "invalid number");
    i = s[i] == '0' ? i + 1 : digits(s, n, i);
    if (i < n && s[i] == '.') {
        size_t j = digits(s, n, i + 1);
        if (j == i + 1) return fail(p, start, "invalid number");
        i = j;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        size_t j = digits(s, n, i);
        if (j == i) return fail(p, start, "invalid number");
        i = j;
    }
    size_t id = new_node(p, SK_JSON_NUMBER, start);
    if (id == SK_JSON_NONE) return id;
    p->doc->nodes[id].len = i - start;
    p->pos = i;
    return id;
}

static size_t parse_value(parser *p, int depth);

// Appends child to parent's children after prev (SK_JSON_NONE: first child).
static void link_child(parser *p, size_t parent, size_t prev, size_t child) {
    if (prev == SK_JSON_NONE) p->doc->nodes[parent].first = child;
    else p->doc->nodes[prev].next = child;
}

static size_t parse_container(parser *p, int depth, bool object) {
    const char *s = p->doc->src;
    size_t n = p->doc->len, start = p->pos;
    char close = object ? '}' : ']';
    size_t id = new_node(p, object ? SK_JSON_OBJECT : SK_JSON_ARRAY, start);
    if (id == SK_JSON_NONE) return id;
    p->pos++;
    skip_ws(p);
    size_t prev = SK_JSON_NONE, count = 0;
    if (p->pos < n && s[p->pos] == close) {
        p->pos++;
    } else {
        for (;;) {
            skip_ws(p);
            if (object) {
                if (p->pos >= n || s[p->pos] != '"') return fail(p, p->pos, "expected a string key");
                size_t key = parse_string(p);
                if (key == SK_JSON_NONE) return key;
                link_child(p, id, prev, key);
                prev = key;
                skip_ws(p);
                if (p->pos >= n || s[p->pos] != ':') return fail(p, p->pos, "expected ':'");
                p->pos++;
            }
            size_t v = parse_value(p, depth + 1);
            if (v == SK_JSON_NONE) return v;
            link_child(p, id, prev, v);
            prev = v;
            count++;
            skip_ws(p);
            if (p->pos < n && s[p->pos] == ',') {
                p->pos++;
                continue;
            }
            if (p->pos < n && s[p->pos] == close) {
                p->pos++;
                break;
            }
            return fail(p, p->pos, object ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
    p->doc->nodes[id].count = count;
    p->doc->nodes[id].len = p->pos - start;
    return id;
}

static size_t parse_literal(parser *p, const char *word, sk_json_type type) {
    size_t k = strlen(word);
    if (p->doc->len - p->pos < k || memcmp(p->doc->src + p->pos, word, k) != 0)
        return fail(p, p->pos, "unexpected character");
    size_t id = new_node(p, type, p->pos);
    if (id == SK_JSON_NONE) return id;
    p->doc->nodes[id].len = k;
    p->pos += k;
    return id;
}

static size_t parse_value(parser *p, int depth) {
    if (depth > SK_JSON_MAX_DEPTH) return fail(p, p->pos, "nesting too deep");
    skip_ws(p);
    if (p->pos >= p->doc->len) return fail(p, p->pos, "unexpected end of input");
    char c = p->doc->src[p->pos];
    switch (c) {
    case '{': return parse_container(p, depth, true);
    case '[': return parse_container(p, depth, false);
    case '"': return parse_string(p);
    case 't': return parse_literal(p, "true", SK_JSON_TRUE);
    case 'f': return parse_literal(p, "false", SK_JSON_FALSE);
    case 'n': return parse_literal(p, "null", SK_JSON_NULL);
    default:
        if (c == '-' || (c >= '0' && c <= '9')) return parse_number(p);
        return fail(p, p->pos, "unexpected character");
    }
}

sk_status sk_json_parse(sk_json *doc, const char *src, size_t len, size_t max_nodes, sk_error *err) {
    memset(doc, 0, sizeof *doc);
    doc->src = src;
    doc->len = len;
    doc->max = max_nodes;
    parser p = {.doc = doc, .pos = 0, .err = err, .st = SK_OK};
    size_t root = parse_value(&p, 1);
    if (root != SK_JSON_NONE) {
        skip_ws(&p);
        if (p.pos != len) fail(&p, p.pos, "unexpected data after the value");
    }
    if (p.st != SK_OK) sk_json_free(doc);
    return p.st;
}

void sk_json_free(sk_json *doc) {
    free(doc->nodes);
    doc->nodes = NULL;
    doc->n = doc->cap = 0;
}

// ---- accessors -----------------------------------------------------------------------------

char *sk_json_string(const sk_json *doc, size_t node, size_t *len) {
    const sk_json_node *nd = &doc->nodes[node];
    const char *s = doc->src + nd->start;
    size_t n = nd->len, o = 0;
    char *out = malloc(n + 1); // escapes never expand: \uXXXX is 6 bytes for at most 3
    if (!out) return NULL;
    for (size_t i = 0; i < n;) {
        if (s[i] != '\\') {
            out[o++] = s[i++];
            continue;
        }
        char e = s[i + 1];
        i += 2;
        switch (e) {
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'u': {
            uint32_t u = 0, lo = 0;
            hex4(s, n, i, &u); // validated by the parser
            i += 4;
            if (u >= 0xD800 && u <= 0xDBFF) {
                hex4(s, n, i + 2, &lo);
                i += 6;
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            }
            o += (size_t)sk_utf8_encode(u, out + o); // lone surrogates were refused by the parser
            break;
        }
        default: out[o++] = e; break; // " \ /
        }
    }
    out[o] = '\0';
    if (len) *len = o;
    return out;
}

bool sk_json_string_eq(const sk_json *doc, size_t node, const char *s) {
    const sk_json_node *nd = &doc->nodes[node];
    if (nd->type != SK_JSON_STRING) return false;
    size_t k = strlen(s);
    if (!nd->escaped) return nd->len == k && memcmp(doc->src + nd->start, s, k) == 0;
    size_t n;
    char *d = sk_json_string(doc, node, &n);
    bool eq = d && n == k && memcmp(d, s, k) == 0;
    free(d);
    return eq;
}

size_t sk_json_get(const sk_json *doc, size_t obj, const char *key) {
    if (obj == SK_JSON_NONE || doc->nodes[obj].type != SK_JSON_OBJECT) return SK_JSON_NONE;
    for (size_t k = doc->nodes[obj].first; k != SK_JSON_NONE;) {
        size_t v = doc->nodes[k].next;
        if (sk_json_string_eq(doc, k, key)) return v;
        k = doc->nodes[v].next;
    }
    return SK_JSON_NONE;
}

bool sk_json_u64(const sk_json *doc, size_t node, uint64_t *out) {
    const sk_json_node *nd = &doc->nodes[node];
    if (nd->type != SK_JSON_NUMBER || nd->len == 0) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < nd->len; i++) {
        char c = doc->src[nd->start + i];
        if (c < '0' || c > '9') return false;
        unsigned d = (unsigned)(c - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}
