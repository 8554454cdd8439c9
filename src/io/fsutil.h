// fsutil.h: atomic file replacement and path helpers.
// defines: sk_atomic_file, sk_atomic_open, sk_atomic_write, sk_atomic_commit, sk_atomic_abort,
//          sk_fsync_dir, sk_path_dir, sk_path_join, sk_mkdir_p
//
// An atomic write goes to "<dir>/.<base>.tmp.XXXXXX" (created with O_EXCL, mode 0666 less the
// umask), is fsync'ed, renamed over <dir>/<base>, and the directory is fsync'ed: readers and
// a crash at any instant see either the whole old file or the whole new one. The temporary
// name starts with '.' and ends in random characters, so it never matches a name the
// checkpoint code looks for; a killed write may leave it behind.
#ifndef SHAKESPEARE_FSUTIL_H
#define SHAKESPEARE_FSUTIL_H

#include <stddef.h>

#include "shakespeare/status.h"

typedef struct {
    char *path;         // final path, owned
    char *tmp_path;     // temporary file in the same directory, owned
    int fd;             // -1 when closed
    unsigned char *buf; // (SK_ATOMIC_BUF,) write buffer, owned
    size_t buf_len;
    int no_sync;        // set after open: commit renames without the fsyncs (a file that every
                        // reader validates, e.g. a token cache: a crash may lose it, never corrupt it unseen)
} sk_atomic_file;

// Creates the temporary file. SK_ERR_IO naming path when the directory is missing or not
// writable. On failure af is left closed (sk_atomic_abort is harmless).
sk_status sk_atomic_open(sk_atomic_file *af, const char *path, sk_error *err);
sk_status sk_atomic_write(sk_atomic_file *af, const void *data, size_t n, sk_error *err);
// Flushes, fsyncs, renames over path and fsyncs the directory; then releases af.
// On failure the temporary file is removed and path is untouched.
sk_status sk_atomic_commit(sk_atomic_file *af, sk_error *err);
// Discards an unfinished write (removes the temporary file). Safe on any af that went
// through sk_atomic_open, after commit, and twice.
void sk_atomic_abort(sk_atomic_file *af);

// fsync of a directory, so that renames and unlinks in it are durable.
sk_status sk_fsync_dir(const char *dir, sk_error *err);

// The directory part of path as a new string: "a/b" for "a/b/c", "." for "c", "/" for "/c".
// NULL when out of memory.
char *sk_path_dir(const char *path);
// "dir/name" as a new string (no doubled '/'); NULL when out of memory.
char *sk_path_join(const char *dir, const char *name);

// mkdir -p: creates path and its missing parents; an existing directory is fine. SK_ERR_IO
// naming the component that cannot be created, or path when it is not a directory; `what`
// (e.g. "output directory", may be NULL) names the directory's role in those messages.
sk_status sk_mkdir_p(const char *path, const char *what, sk_error *err);

#endif
