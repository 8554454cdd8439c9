// words.h: an enumeration's words written once. A table of (value, word, help) rows is the
// single list from which the enumeration's parser, its name function, the "a, b or c" of its
// messages and the lines of --help derive; adding a value is adding a row.
// defines: sk_word, sk_words, SK_WORDS, sk_words_parse, sk_words_name, SK_WORDS_FNS
#ifndef SHAKESPEARE_WORDS_H
#define SHAKESPEARE_WORDS_H

#include <stddef.h>

#include "shakespeare/status.h"

typedef struct {
    int value;        // the enumeration's value
    const char *word; // as the user writes it, and as records (checkpoints, caches) store it
    const char *help; // a phrase for --help ("cuDNN's RNN API"), or NULL
} sk_word;

typedef struct {
    const char *setting; // the setting's name, leading its messages: "rnn-impl"
    const sk_word *rows;
    size_t n;
} sk_words;

// An sk_words over a static array of rows.
#define SK_WORDS(setting, rows) {(setting), (rows), sizeof(rows) / sizeof((rows)[0])}

// The value whose word is s; else SK_ERR_ARG, "SETTING expects a, b or c, got \"s\"", and *out
// untouched.
sk_status sk_words_parse(const sk_words *t, const char *s, int *out, sk_error *err);
// The word of value, or "unknown" (never NULL).
const char *sk_words_name(const sk_words *t, int value);

// Defines an enumeration T's parser, sk_status fn(const char *s, T *out, sk_error *err), and its
// name function, const char *name_fn(T), from its table (an sk_words object).
#define SK_WORDS_FNS(fn, name_fn, T, table)                                                              \
    sk_status fn(const char *s, T *out, sk_error *err) {                                                \
        int v = 0;                                                                                       \
        sk_status st = sk_words_parse(&(table), s, &v, err);                                             \
        if (st == SK_OK) *out = (T)v;                                                                    \
        return st;                                                                                       \
    }                                                                                                    \
    const char *name_fn(T value) { return sk_words_name(&(table), (int)value); }

#endif
