// outdir.c: one run per output directory (see outdir.h): the lock, the refusal of a fresh run
// over a finished one, --overwrite's deferred replacement, the locked metrics log, and the
// names of the epoch checkpoints.
// defines: sk_outdir_open, sk_outdir_claim, sk_outdir_open_log, sk_outdir_log, sk_outdir_epoch_name,
//          sk_outdir_remove_epochs, sk_outdir_checkpoint_written, sk_outdir_contains, sk_outdir_close
#include "outdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "shakespeare/checkpoint.h"

// ---- the directory -----------------------------------------------------------------------------

// mkdir -p (fsutil.h); an existing directory is fine, anything else in the way is an error.
static sk_status make_dirs(const char *path, sk_error *err) {
    if (!path[0] || strlen(path) >= 4096)
        return sk_fail(err, SK_ERR_ARG, "out-dir must be a non-empty path shorter than 4096 bytes");
    sk_status st = sk_mkdir_p(path, "output directory", err);
    if (st != SK_OK) return st;
    if (access(path, W_OK | X_OK) != 0)
        return sk_fail(err, SK_ERR_IO, "output directory %s is not writable: %s", path, strerror(errno));
    return SK_OK;
}

// Removes the temporary files of atomic writes (fsutil.c names them ".<file>.tmp.XXXXXX") in dir
// whose names start with prefix: what killed writes left behind. Only the holder of the lock
// that covers those files may call this.
static void remove_temps(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    if (!d) return;
    size_t n = strlen(prefix);
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, prefix, n) != 0 || !strstr(e->d_name + n - 1, ".tmp.")) continue;
        char *p = sk_path_join(dir, e->d_name);
        if (p) unlink(p);
        free(p);
    }
    closedir(d);
}

// The state file a model file names (its "state_file" metadata) into out[0..n), read from the
// safetensors header alone; "" when it names none or does not read.
static void named_state(const char *model_path, char *out, size_t n) {
    out[0] = '\0';
    FILE *f = fopen(model_path, "rb");
    if (!f) return;
    unsigned char len8[8];
    uint64_t len = 0;
    if (fread(len8, 1, 8, f) == 8)
        for (int i = 7; i >= 0; i--) len = len << 8 | len8[i];
    char *header = len > 0 && len < ((uint64_t)64 << 20) ? malloc((size_t)len + 1) : NULL;
    if (header && fread(header, 1, (size_t)len, f) == (size_t)len) {
        header[len] = '\0';
        const char *p = strstr(header, "\"state_file\"");
        if (p) p += strlen("\"state_file\""), p += strspn(p, " \t\r\n:"), p += *p == '"';
        const size_t k = p ? strcspn(p, "\"") : 0;
        if (p && p[k] == '"' && k < n) memcpy(out, p, k), out[k] = '\0';
    }
    free(header);
    fclose(f);
}

// Whether a model file in dir names the training state f, "<name>.<step>[.<k>].state" (true for
// a file of another form: not ours to remove). A name may hold dots itself (epoch-0003-val1.4534),
// so every <name> that leaves such a tail is tried.
static bool state_is_named(const char *dir, const char *f) {
    bool tried = false;
    for (const char *dot = strchr(f, '.'); dot; dot = strchr(dot + 1, '.')) {
        char name[256], model[256 + sizeof ".safetensors"], named[256];
        if (dot == f || (size_t)(dot - f) >= sizeof name) continue;
        snprintf(name, sizeof name, "%.*s", (int)(dot - f), f);
        if (!sk_is_state_of(f, name)) continue;
        tried = true;
        snprintf(model, sizeof model, "%s.safetensors", name);
        char *model_path = sk_path_join(dir, model);
        if (!model_path) return true; // out of memory: remove nothing
        named_state(model_path, named, sizeof named);
        free(model_path);
        if (strcmp(named, f) == 0) return true;
    }
    return !tried;
}

// Removes the training states that no model file in dir names (state_is_named). sk_checkpoint_save
// writes the state, then the model naming it, then removes the name's other states; a process
// killed in between (a second stop signal ends it at once) leaves the new state without its
// model, or the old one beside the new model; sk_checkpoint_remove removes the model, then its states.
static void remove_orphan_states(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (state_is_named(dir, e->d_name)) continue;
        char *path = sk_path_join(dir, e->d_name);
        if (path) unlink(path);
        free(path);
    }
    closedir(d);
}

// ---- locks ------------------------------------------------------------------------------------

// The pid holding a flock on the file open as fd, from /proc/locks
// ("1: FLOCK  ADVISORY  WRITE 1234 fe:00:10953293 0 EOF"); 0 when it cannot be told.
static long flock_holder(int fd) {
    struct stat sb;
    if (fstat(fd, &sb) != 0) return 0;
    FILE *f = fopen("/proc/locks", "r");
    if (!f) return 0;
    char line[256], want[64], id[64];
    snprintf(want, sizeof want, "%02x:%02x:%llu", major(sb.st_dev), minor(sb.st_dev), (unsigned long long)sb.st_ino);
    long pid = 0, p;
    while (pid == 0 && fgets(line, sizeof line, f)) {
        if (strstr(line, "->")) continue; // a process waiting for the lock, not holding it
        if (sscanf(line, "%*s FLOCK %*s %*s %ld %63s", &p, id) == 2 && strcmp(id, want) == 0) pid = p;
    }
    fclose(f);
    return pid;
}

// Opens path with flags and, when it is a regular file, takes flock(LOCK_EX | LOCK_NB) on it,
// making sure afterwards that path still names the file locked (a holder removes its lock file
// when it lets go; whoever locked the removed file tries again). Returns 0 with *fd open (and
// locked), 1 when another process holds the lock (*fd open, for flock_holder), -1 on an error
// (errno set, nothing open).
static int lock_path(const char *path, int flags, int *fd) {
    for (int attempt = 0; attempt < 100; attempt++) {
        *fd = open(path, flags | O_CLOEXEC, 0666);
        if (*fd < 0) return -1;
        struct stat a, b;
        if (fstat(*fd, &a) != 0) break;
        if (!S_ISREG(a.st_mode)) return 0; // a terminal, a pipe, /dev/null: nothing to protect
        if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
            if (errno == EWOULDBLOCK) return 1;
            break;
        }
        if (stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) return 0;
        close(*fd); // removed or replaced while we took it: take the file the path names now
        *fd = -1;
    }
    int e = errno;
    if (*fd >= 0) close(*fd);
    *fd = -1;
    errno = e ? e : EAGAIN;
    return -1;
}

static void describe_holder(int fd, char *buf, size_t n) {
    long pid = flock_holder(fd);
    if (pid == 0) { // no /proc/locks: the pid the holder wrote into the file, if any
        char text[32] = {0};
        ssize_t k = pread(fd, text, sizeof text - 1, 0);
        if (k > 0) pid = strtol(text, NULL, 10);
    }
    if (pid > 0) snprintf(buf, n, "another run (pid %ld)", pid);
    else snprintf(buf, n, "another run");
}

sk_status sk_outdir_open(sk_outdir *od, const char *dir, sk_error *err) {
    struct stat sb;
    int existed = stat(dir, &sb) == 0;
    sk_status st = make_dirs(dir, err);
    if (st != SK_OK) return st;
    od->created_dir = !existed;
    od->dir = strdup(dir);
    od->lock_path = sk_path_join(dir, ".lock");
    if (!od->dir || !od->lock_path) return sk_fail(err, SK_ERR_NOMEM, "out of memory");
    int fd, r = lock_path(od->lock_path, O_RDWR | O_CREAT, &fd);
    if (r < 0) return sk_fail(err, SK_ERR_IO, "cannot lock output directory %s (%s): %s", dir, od->lock_path, strerror(errno));
    if (r > 0) {
        char who[64];
        describe_holder(fd, who, sizeof who);
        close(fd);
        return sk_fail(err, SK_ERR_BUSY, "output directory %s is in use by %s; one run writes to an out-dir at a time",
                       dir, who);
    }
    od->lock_fd = fd;
    char pid[32];
    int k = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    // Only informative (flock_holder reads /proc/locks): a full disk must not stop the run here.
    int pid_written = ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)k, 0) == k;
    (void)pid_written;
    remove_temps(dir, ".last.");
    remove_temps(dir, ".best.");
    remove_temps(dir, ".epoch-");
    remove_orphan_states(dir);
    return SK_OK;
}

// ---- a fresh run over an old one --------------------------------------------------------------------

static const char *const CHECKPOINT_NAMES[] = {"last", "best"};

int sk_outdir_contains(const char *dir, const char *file) {
    char *parent = sk_path_dir(file);
    struct stat a, b;
    int same = parent && stat(parent, &a) == 0 && stat(dir, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
    free(parent);
    return same;
}

sk_status sk_outdir_claim(sk_outdir *od, const char *init_from, int overwrite, sk_error *err) {
    if (init_from && sk_outdir_contains(od->dir, init_from)) { // the directory's own run, continued
        if (overwrite)
            return sk_fail(err, SK_ERR_ARG, "overwrite starts a fresh run; it does not go with --init-from %s, "
                                            "which continues the run in %s", init_from, od->dir);
        return SK_OK;
    }
    char file[64], *path = NULL;
    for (size_t i = 0; i < 2 && !path; i++) {
        snprintf(file, sizeof file, "%s.safetensors", CHECKPOINT_NAMES[i]);
        path = sk_path_join(od->dir, file);
        if (!path) return sk_fail(err, SK_ERR_NOMEM, "out of memory");
        struct stat sb;
        if (lstat(path, &sb) != 0) free(path), path = NULL;
    }
    if (!path) return SK_OK; // nothing there
    if (overwrite) {
        od->replace_pending = 1;
        free(path);
        return SK_OK;
    }
    char what[160];
    sk_model_file model = {0};
    sk_train_state state = {0};
    int has_state = 0;
    sk_error ignored;
    if (sk_checkpoint_load(path, &model, &state, &has_state, &ignored) != SK_OK)
        snprintf(what, sizeof what, "%s, which does not load", file);
    else if (!has_state) snprintf(what, sizeof what, "%s without a training state", file);
    else if (isfinite(state.best_val_loss))
        snprintf(what, sizeof what, "%s at step %lld, best validation loss %.4f", file, (long long)state.step,
                 state.best_val_loss);
    else snprintf(what, sizeof what, "%s at step %lld, no validation loss yet", file, (long long)state.step);
    sk_model_file_free(&model);
    sk_train_state_free(&state);
    sk_status st = init_from ? sk_fail(err, SK_ERR_ARG,
                                       "output directory %s already holds a run (%s), not the one --init-from %s "
                                       "belongs to; to replace it pass --overwrite, or choose another --out-dir",
                                       od->dir, what, init_from)
                             : sk_fail(err, SK_ERR_ARG,
                                       "output directory %s already holds a run (%s); to continue it pass "
                                       "--init-from %s, to start over pass --overwrite",
                                       od->dir, what, path);
    free(path);
    return st;
}

// ---- the metrics log ----------------------------------------------------------------------------------

sk_status sk_outdir_open_log(sk_outdir *od, const char *path, int append, sk_error *err) {
    od->log_path = strdup(path);
    if (!od->log_path) return sk_fail(err, SK_ERR_NOMEM, "out of memory");
    int fd, r = lock_path(path, O_WRONLY | O_APPEND | O_CREAT, &fd);
    if (r < 0) return sk_fail(err, SK_ERR_IO, "cannot write the metrics log %s: %s", path, strerror(errno));
    if (r > 0) {
        char who[64];
        describe_holder(fd, who, sizeof who);
        close(fd);
        return sk_fail(err, SK_ERR_BUSY, "metrics log %s is in use by %s; choose another --log", path, who);
    }
    struct stat sb;
    int regular = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
    if (regular) { // we hold the log's lock: temporary logs beside it are left over from killed runs
        char *dir = sk_path_dir(path), *prefix = malloc(strlen(path) + 3);
        const char *slash = strrchr(path, '/');
        if (dir && prefix) sprintf(prefix, ".%s.", slash ? slash + 1 : path), remove_temps(dir, prefix);
        free(dir);
        free(prefix);
    }
    sk_status st = SK_OK;
    if (od->replace_pending && regular && sb.st_size > 0) {
        // The old log stays (and stays locked) until the first checkpoint; the new one is written
        // beside it and renamed over it then.
        od->old_log_fd = fd;
        if ((st = sk_atomic_open(&od->new_log, path, err)) != SK_OK) return st;
        od->new_log_pending = 1;
        // Our own descriptor of the new log: it stays open (and locked) after the rename.
        od->log_fd = fcntl(od->new_log.fd, F_DUPFD_CLOEXEC, 0);
        if (od->log_fd < 0 || flock(od->log_fd, LOCK_EX | LOCK_NB) != 0)
            st = sk_fail(err, SK_ERR_IO, "cannot write the metrics log %s: %s", path, strerror(errno));
        return st;
    }
    od->log_fd = fd;
    if (!append && regular && ftruncate(fd, 0) != 0)
        st = sk_fail(err, SK_ERR_IO, "cannot write the metrics log %s: %s", path, strerror(errno));
    return st;
}

sk_status sk_outdir_log(sk_outdir *od, sk_error *err, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line)
        return sk_fail(err, SK_ERR_ARG, "metrics record longer than %zu bytes", sizeof line);
    struct stat sb;
    int regular = fstat(od->log_fd, &sb) == 0 && S_ISREG(sb.st_mode);
    for (size_t done = 0; done < (size_t)n;) {
        ssize_t w = write(od->log_fd, line + done, (size_t)n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            // A record cut short (the size limit or the disk reached in its middle) goes again, so
            // that a resumed run appends after whole records.
            int cut = regular && ftruncate(od->log_fd, sb.st_size) == 0;
            (void)cut;
            return sk_fail(err, SK_ERR_IO, "cannot write the metrics log %s: %s", od->log_path, strerror(e));
        }
        done += (size_t)w;
    }
    return SK_OK;
}

// ---- epoch checkpoints --------------------------------------------------------------------------------

void sk_outdir_epoch_name(int64_t epoch, double val_loss, char *out, size_t n) {
    if (isfinite(val_loss)) snprintf(out, n, "epoch-%04lld-val%.4f", (long long)epoch, val_loss);
    else snprintf(out, n, "epoch-%04lld", (long long)epoch);
}

// The epoch of an epoch checkpoint's model file, "epoch-<digits>.safetensors" or
// "epoch-<digits>-val<digits>.<digits>.safetensors" (sk_outdir_epoch_name), with the length of
// its name (the file's without ".safetensors") in *len; -1 for any other file.
static int64_t epoch_of(const char *file, size_t *len) {
    if (strncmp(file, "epoch-", 6) != 0) return -1;
    const char *p = file + 6;
    const size_t digits = strspn(p, "0123456789");
    if (digits == 0 || digits > 18) return -1;
    const int64_t epoch = strtoll(p, NULL, 10);
    p += digits;
    if (strncmp(p, "-val", 4) == 0) {
        const size_t whole = strspn(p + 4, "0123456789");
        const size_t frac = p[4 + whole] == '.' ? strspn(p + 5 + whole, "0123456789") : 0;
        if (whole == 0 || frac == 0) return -1;
        p += 5 + whole + frac;
    }
    if (strcmp(p, ".safetensors") != 0) return -1;
    *len = (size_t)(p - file);
    return epoch;
}

sk_status sk_outdir_remove_epochs(const char *dir, int64_t epoch, const char *keep, sk_error *err) {
    DIR *d = opendir(dir);
    if (!d) return sk_fail(err, SK_ERR_IO, "cannot read the output directory %s: %s", dir, strerror(errno));
    char (*names)[64] = NULL; // read first, removed after: the directory is not changed while it is read
    size_t n = 0, cap = 0, len = 0;
    sk_status st = SK_OK;
    for (struct dirent *e; (e = readdir(d)) != NULL && st == SK_OK;) {
        const int64_t of = epoch_of(e->d_name, &len);
        if (of < 0 || (epoch >= 0 && of != epoch) || len >= sizeof *names) continue;
        if (keep && strlen(keep) == len && strncmp(e->d_name, keep, len) == 0) continue;
        if (n == cap) {
            void *grown = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof *names);
            if (!grown) st = sk_fail(err, SK_ERR_NOMEM, "out of memory");
            else names = grown;
        }
        if (st == SK_OK) snprintf(names[n++], sizeof *names, "%.*s", (int)len, e->d_name);
    }
    closedir(d);
    for (size_t i = 0; i < n && st == SK_OK; i++) st = sk_checkpoint_remove(dir, names[i], err);
    free(names);
    return st;
}

// ---- the first checkpoint of an overwriting run -----------------------------------------------------

sk_status sk_outdir_checkpoint_written(sk_outdir *od, const char *name, sk_error *err) {
    if (!od->replace_pending) return SK_OK;
    od->replace_pending = 0;
    sk_status st = SK_OK;
    if (od->new_log_pending) {
        od->new_log_pending = 0;
        st = sk_atomic_commit(&od->new_log, err); // fsync, rename over the old log, fsync of the directory
        close(od->old_log_fd);
        od->old_log_fd = -1;
        if (st != SK_OK) return st;
    }
    for (size_t i = 0; i < 2 && st == SK_OK; i++)
        if (strcmp(CHECKPOINT_NAMES[i], name) != 0) st = sk_checkpoint_remove(od->dir, CHECKPOINT_NAMES[i], err);
    return st == SK_OK ? sk_outdir_remove_epochs(od->dir, -1, name, err) : st; // the old run's, all of them
}

void sk_outdir_close(sk_outdir *od) {
    if (od->log_fd >= 0) close(od->log_fd);
    od->log_fd = -1;
    if (od->new_log_pending) sk_atomic_abort(&od->new_log); // the old log stays as it was
    od->new_log_pending = 0;
    if (od->old_log_fd >= 0) close(od->old_log_fd);
    od->old_log_fd = -1;
    free(od->log_path);
    od->log_path = NULL;
    if (od->lock_fd >= 0) { // removed while still held, so that no one takes the file we drop
        unlink(od->lock_path);
        close(od->lock_fd);
        od->lock_fd = -1;
    }
    if (od->created_dir && od->dir) rmdir(od->dir); // only when empty: a run that failed to start
    od->created_dir = 0;
    free(od->dir);
    free(od->lock_path);
    od->dir = od->lock_path = NULL;
}
