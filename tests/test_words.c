// test_words.c: an enumeration's table of words (words.h) and what derives from it:
//  1. sk_words_parse takes exactly each row's word, to its value, in a table whose values are
//     not its positions; anything else is SK_ERR_ARG, *out untouched, one line naming the
//     setting, every word (in the table's order, "a, b or c") and the value given;
//  2. sk_words_name names each value, and "unknown" a value outside the table;
//  3. every table of the library round-trips through its typed parse and name functions
//     (SK_WORDS_FNS), so that no enumeration keeps a second list of its words.
#include <stdio.h>
#include <string.h>

#include "shakespeare/backend.h"
#include "shakespeare/model.h"
#include "shakespeare/optim.h"
#include "shakespeare/token_cache.h"
#include "shakespeare/words.h"
#include "test_util.h"

static const sk_word rows[] = {
    {.value = 7, .word = "seven", .help = "a phrase"},
    {.value = -1, .word = "minus-one", .help = NULL},
    {.value = 0, .word = "zero", .help = NULL},
};
static const sk_words table = SK_WORDS("count", rows);

// Every row of t parses to its value and its value names it.
static void round_trip(const sk_words *t) {
    sk_error err = {{0}};
    CHECK(t->n >= 2);
    for (size_t i = 0; i < t->n; i++) {
        int v = 12345;
        CHECK_OK(sk_words_parse(t, t->rows[i].word, &v, &err));
        CHECK(v == t->rows[i].value);
        CHECK(strcmp(sk_words_name(t, v), t->rows[i].word) == 0);
    }
}

int main(void) {
    sk_error err = {{0}};
    round_trip(&table);
    CHECK(table.n == 3);
    static const char *const bad[] = {"", "Seven", "seven ", "sev", "0", "zero0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int v = 99;
        CHECK(sk_words_parse(&table, bad[i], &v, &err) == SK_ERR_ARG && v == 99);
        char want[128];
        snprintf(want, sizeof want, "count expects seven, minus-one or zero, got \"%s\"", bad[i]);
        CHECK(strcmp(err.msg, want) == 0);
    }
    CHECK(strcmp(sk_words_name(&table, 8), "unknown") == 0);

    const sk_words *tables[] = {&sk_rnn_impl_words,  &sk_cuda_graph_words,   &sk_tensor_cores_words,
                                &sk_precision_words, &sk_init_scheme_words, &sk_lr_kind_words,
                                &sk_vocab_mode_words};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) round_trip(tables[i]);
    CHECK(sk_rnn_impl_words.n == SK_RNN_IMPL_COUNT);
    sk_lr_kind k = SK_LR_CONSTANT;
    CHECK_OK(sk_lr_kind_parse("cosine", &k, &err));
    CHECK(k == SK_LR_COSINE && strcmp(sk_lr_kind_name(SK_LR_STEP_DECAY), "step") == 0);
    sk_init_scheme s = SK_INIT_PYTORCH;
    CHECK(sk_init_scheme_parse("gaussian", &s, &err) == SK_ERR_ARG && s == SK_INIT_PYTORCH);
    CHECK(strcmp(err.msg, "init expects uniform or pytorch, got \"gaussian\"") == 0);
    CHECK(strcmp(sk_tensor_cores_name(SK_TENSOR_CORES_OFF), "off") == 0);
    CHECK(strcmp(sk_precision_name((sk_precision)17), "unknown") == 0);
    return sk_test_done("test_words");
}
