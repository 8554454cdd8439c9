// fuzz_vocab.c: libFuzzer target for decoding, vocabulary building and tokenizing.
// Any byte string must either be rejected with a one-line message or give a corpus whose
// ids index a strictly increasing vocabulary; every character must describe in one line.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shakespeare/corpus.h"
#include "shakespeare/utf8.h"
#include "shakespeare/vocab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sk_error err = {{0}};
    sk_corpus c;
    if (sk_corpus_from_text(&c, data, size, "fuzz input", &err) != SK_OK) {
        if (err.msg[0] == 0 || strchr(err.msg, '\n')) abort(); // a failure always explains itself
        sk_corpus_free(&c);
        return 0;
    }
    if (c.n == 0 || c.n > size || c.vocab.size <= 0) abort();
    for (int i = 1; i < c.vocab.size; i++) {
        if (c.vocab.chars[i] <= c.vocab.chars[i - 1]) abort();
    }
    for (size_t i = 0; i < c.n; i++) {
        if (c.ids[i] < 0 || c.ids[i] >= c.vocab.size) abort();
    }
    // Re-encoding the decoded text gives back the input bytes.
    size_t pos = 0;
    for (size_t i = 0; i < c.n; i++) {
        char utf8[4];
        int len = sk_utf8_encode(c.vocab.chars[c.ids[i]], utf8);
        if (len <= 0 || pos + (size_t)len > size || memcmp(data + pos, utf8, (size_t)len) != 0) abort();
        pos += (size_t)len;
    }
    if (pos != size) abort();
    for (int i = 0; i < c.vocab.size; i++) {
        char desc[64];
        sk_vocab_describe_char(c.vocab.chars[i], desc, sizeof desc);
        if (desc[0] == 0 || strchr(desc, '\n') || strchr(desc, '\r')) abort();
        if (sk_vocab_index(&c.vocab, c.vocab.chars[i]) != i) abort();
    }
    sk_corpus_free(&c);
    sk_corpus_free(&c);
    return 0;
}
