// words.c: an enumeration's parser and names from its table of words (words.h).
// defines: sk_words_parse, sk_words_name
#include "shakespeare/words.h"

#include <stdio.h>
#include <string.h>

sk_status sk_words_parse(const sk_words *t, const char *s, int *out, sk_error *err) {
    char list[256] = "";
    size_t at = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (strcmp(s, t->rows[i].word) == 0) {
            *out = t->rows[i].value;
            return SK_OK;
        }
        if (at < sizeof list)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%s",
                                   i == 0 ? "" : i == t->n - 1 ? " or " : ", ", t->rows[i].word);
    }
    return sk_fail(err, SK_ERR_ARG, "%s expects %s, got \"%s\"", t->setting, list, s);
}

const char *sk_words_name(const sk_words *t, int value) {
    for (size_t i = 0; i < t->n; i++)
        if (t->rows[i].value == value) return t->rows[i].word;
    return "unknown";
}
