// cli_kinds.h: option kinds (cli_options.h) that both programs' tables use, and ENUM_KIND,
// which makes a kind from a library enumeration's parse and name functions.
// defines: ENUM_KIND, ENUM_KIND_FNS, cli_kind_device, cli_kind_rnn_impl, cli_kind_precision
#ifndef SK_CLI_KINDS_H
#define SK_CLI_KINDS_H

#include "cli_options.h"

// A cli_kind `id` for an enumeration T with the library's parse(s, T *, err) and name(T);
// ENUM_KIND_FNS defines only its two functions, id_parse and id_name.
#define ENUM_KIND(id, T, parse_fn, name_fn)                                                              \
    ENUM_KIND_FNS(id, T, parse_fn, name_fn)                                                              \
    static const cli_kind id = {id##_parse, id##_name, 1};
#define ENUM_KIND_FNS(id, T, parse_fn, name_fn)                                                          \
    static sk_status id##_parse(const char *flag, const char *s, void *field, sk_error *err) {          \
        (void)flag;                                                                                      \
        T v = (T)0;                                                                                      \
        sk_status st = parse_fn(s, &v, err);                                                             \
        if (st == SK_OK) *(T *)field = v;                                                                \
        return st;                                                                                       \
    }                                                                                                    \
    static const char *id##_name(const void *field, char *buf, size_t n) {                               \
        (void)buf, (void)n;                                                                              \
        return name_fn(*(const T *)field);                                                               \
    }

// --device D (const char * field: checked here, kept as text; auto | cpu | cuda | cuda:N),
// --rnn-impl (sk_rnn_impl field), --precision (sk_precision field).
extern const cli_kind cli_kind_device, cli_kind_rnn_impl, cli_kind_precision;

#endif
