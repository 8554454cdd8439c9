// cli_kinds.c: the option kinds both programs share (cli_kinds.h).
#include "cli_kinds.h"

#include "shakespeare/backend.h"

WORDS_KIND_FNS(rnn_impl_kind, sk_rnn_impl, sk_rnn_impl_words)
WORDS_KIND_FNS(precision_kind, sk_precision, sk_precision_words)
WORDS_KIND_FNS(cuda_graph_kind, sk_cuda_graph, sk_cuda_graph_words)
WORDS_KIND_FNS(tensor_cores_kind, sk_tensor_cores, sk_tensor_cores_words)
const cli_kind cli_kind_rnn_impl = WORDS_KIND_INIT(rnn_impl_kind, sk_rnn_impl_words);
const cli_kind cli_kind_precision = WORDS_KIND_INIT(precision_kind, sk_precision_words);
const cli_kind cli_kind_cuda_graph = WORDS_KIND_INIT(cuda_graph_kind, sk_cuda_graph_words);
const cli_kind cli_kind_tensor_cores = WORDS_KIND_INIT(tensor_cores_kind, sk_tensor_cores_words);

static sk_status device_parse(const char *flag, const char *s, void *field, sk_error *err) {
    (void)flag;
    int is_auto, is_cuda, index;
    sk_status st = sk_device_parse(s, &is_auto, &is_cuda, &index, err);
    if (st == SK_OK) *(const char **)field = s;
    return st;
}
static const char *device_name(const void *field, char *buf, size_t n) {
    (void)buf, (void)n;
    return *(const char *const *)field;
}
const cli_kind cli_kind_device = {.parse = device_parse, .name = device_name, .quoted = 1};
