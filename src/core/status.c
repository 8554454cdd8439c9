// status.c: status names and the formatted-error helper.
#include "shakespeare/status.h"

#include <stdio.h>

const char *sk_status_str(sk_status s) {
    switch (s) {
    case SK_OK: return "ok";
    case SK_ERR_ARG: return "invalid argument";
    case SK_ERR_IO: return "i/o error";
    case SK_ERR_FORMAT: return "bad format";
    case SK_ERR_MISMATCH: return "mismatch";
    case SK_ERR_NOMEM: return "out of memory";
    case SK_ERR_NUMERIC: return "non-finite value";
    case SK_ERR_DEVICE: return "device unavailable";
    case SK_ERR_INTERRUPTED: return "interrupted";
    case SK_ERR_BUSY: return "in use";
    case SK_ERR_ENCODING: return "invalid UTF-8";
    }
    return "unknown status";
}

sk_status sk_fail(sk_error *err, sk_status s, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return s;
}
