// cli_kinds.h: option kinds (cli_options.h) that both programs' tables use, and WORDS_KIND,
// which makes a kind from a library enumeration's table of words (words.h).
// defines: WORDS_KIND, WORDS_KIND_FNS, WORDS_KIND_INIT, ENUM_KIND, cli_kind_device, cli_kind_rnn_impl, cli_kind_precision,
//          cli_kind_cuda_graph, cli_kind_tensor_cores
#ifndef SK_CLI_KINDS_H
#define SK_CLI_KINDS_H

#include "cli_options.h"
#include "shakespeare/words.h"

// A cli_kind `id` for a field of enumeration type T whose words are `table` (an
// sk_words): parse and name derive from it, and --help lists the words that have help.
#define WORDS_KIND(id, T, table)                                                                         \
    WORDS_KIND_FNS(id, T, table)                                                                         \
    static const cli_kind id = WORDS_KIND_INIT(id, table);
// WORDS_KIND's two functions, id_parse and id_name, and its initializer.
#define WORDS_KIND_INIT(id, table) {.parse = id##_parse, .name = id##_name, .quoted = 1, .words = &(table)}
#define WORDS_KIND_FNS(id, T, table)                                                                     \
    static sk_status id##_parse(const char *flag, const char *s, void *field, sk_error *err) {          \
        (void)flag;                                                                                      \
        int v = 0;                                                                                       \
        sk_status st = sk_words_parse(&(table), s, &v, err);                                             \
        if (st == SK_OK) *(T *)field = (T)v;                                                             \
        return st;                                                                                       \
    }                                                                                                    \
    static const char *id##_name(const void *field, char *buf, size_t n) {                               \
        (void)buf, (void)n;                                                                              \
        return sk_words_name(&(table), (int)*(const T *)field);                                          \
    }

// A cli_kind `id` for an enumeration T with the library's parse(s, T *, err) and name(T), where
// its words are kept by other means (optim.h's table of optimizers); word_at_fn lists them for --help
// (cli_kind's word_at).
#define ENUM_KIND(id, T, parse_fn, name_fn, word_at_fn)                                                  \
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
    }                                                                                                    \
    static const cli_kind id = {.parse = id##_parse, .name = id##_name, .quoted = 1, .word_at = word_at_fn};

// --device D (const char * field: checked here, kept as text; auto | cpu | cuda | cuda:N),
// --rnn-impl (sk_rnn_impl field), --precision (sk_precision field), --cuda-graph (sk_cuda_graph),
// --tensor-cores (sk_tensor_cores): the backend's (cli_backend_options.h).
extern const cli_kind cli_kind_device, cli_kind_rnn_impl, cli_kind_precision, cli_kind_cuda_graph, cli_kind_tensor_cores;

#endif
