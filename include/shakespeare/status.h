// status.h: the error convention of the library.
// Library functions return an sk_status and, on failure, fill an sk_error with one
// human-readable line naming the thing and the value at fault. Only the CLI prints.
// defines: sk_status, sk_error, sk_status_str, sk_fail
#ifndef SHAKESPEARE_STATUS_H
#define SHAKESPEARE_STATUS_H

#include <stdarg.h>

typedef enum {
    SK_OK = 0,
    SK_ERR_ARG,         // an invalid argument or configuration value
    SK_ERR_IO,          // a file cannot be opened, read or written
    SK_ERR_FORMAT,      // malformed input: a corrupt or foreign checkpoint or cache
    SK_ERR_MISMATCH,    // valid inputs that do not belong together (vocabulary, shapes)
    SK_ERR_NOMEM,       // an allocation failed
    SK_ERR_NUMERIC,     // NaN or Inf in a loss or gradient
    SK_ERR_DEVICE,      // no usable GPU, or a backend that is not built in
    SK_ERR_INTERRUPTED, // stopped by a signal (SIGINT/SIGTERM)
    SK_ERR_BUSY,        // held by another run (an output directory's or a log's lock)
    SK_ERR_ENCODING,    // text that is not valid UTF-8 (the message names the byte)
} sk_status;

#define SK_ERROR_MSG_MAX 512

typedef struct {
    char msg[SK_ERROR_MSG_MAX]; // one line, no trailing newline, no "error:" prefix
} sk_error;

// Short name of a status, e.g. "invalid argument".
const char *sk_status_str(sk_status s);

// Formats err->msg (when err is not NULL) and returns s, so that callers can write
//   return sk_fail(err, SK_ERR_ARG, "--hidden-size must be positive, got %d", h);
sk_status sk_fail(sk_error *err, sk_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
