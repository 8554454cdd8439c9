// cli_kinds.c: the option kinds both programs share (cli_kinds.h).
#include "cli_kinds.h"

#include "shakespeare/backend.h"

ENUM_KIND_FNS(rnn_impl_kind, sk_rnn_impl, sk_rnn_impl_parse, sk_rnn_impl_name)
ENUM_KIND_FNS(precision_kind, sk_precision, sk_precision_parse, sk_precision_name)
const cli_kind cli_kind_rnn_impl = {rnn_impl_kind_parse, rnn_impl_kind_name, 1};
const cli_kind cli_kind_precision = {precision_kind_parse, precision_kind_name, 1};

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
const cli_kind cli_kind_device = {device_parse, device_name, 1};
