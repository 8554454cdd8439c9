// outdir.h: one run per output directory. The directory's lock, the refusal of a fresh run
// over a finished one, --overwrite's deferred replacement, the locked metrics log, and the
// names of the epoch checkpoints.
// defines: sk_outdir, SK_OUTDIR_INIT, sk_outdir_open, sk_outdir_claim, sk_outdir_open_log,
//          sk_outdir_log, sk_outdir_checkpoint_written, sk_outdir_epoch_name, sk_outdir_remove_epochs,
//          sk_outdir_contains, sk_outdir_close
//
// The rules:
//  - A run holds flock(LOCK_EX) on <dir>/.lock for its whole life; the file holds its pid.
//    A second run is refused at once (SK_ERR_BUSY naming the directory and the holder's pid,
//    found in /proc/locks). The kernel drops the lock when the process dies, so a killed run
//    leaves no stale lock; the holder removes the file when it lets go, and a taker checks,
//    after flock, that the path still names the file it locked, so the removal never lets
//    two runs in.
//  - The metrics log, when it is a regular file, is locked the same way (flock on the log
//    itself), wherever it lies: two runs never write one log.
//  - A fresh run refuses a directory that holds a checkpoint (last.safetensors or
//    best.safetensors) unless told to overwrite, and so does a run started --init-from a
//    checkpoint of another directory (continuing the run in the directory itself, from its own
//    last.* or best.*, is what --init-from is for, and overwriting it is refused). Overwriting touches nothing at start-up: the
//    new run logs to a temporary file beside the log, and only its first checkpoint removes
//    the old run's other checkpoints (last, best, epoch-*) and renames the new log over the
//    old one. A run that dies
//    before its first checkpoint leaves the old run as it was.
#ifndef SHAKESPEARE_OUTDIR_H
#define SHAKESPEARE_OUTDIR_H

#include <stddef.h>
#include <stdint.h>

#include "io/fsutil.h"
#include "shakespeare/status.h"

typedef struct {
    char *dir;            // owned; NULL until sk_outdir_open
    char *lock_path;      // <dir>/.lock, owned
    int lock_fd;          // holds the directory's lock; -1 when not held
    int created_dir;      // this run created dir (removed again by close when still empty)
    int replace_pending;  // overwriting: the old run's files go at the first checkpoint
    char *log_path;       // owned; NULL until sk_outdir_open_log
    int log_fd;           // the run's metrics log, written through sk_outdir_log; -1 when none
    int old_log_fd;       // overwriting: holds the lock of the old log until it is replaced; -1 when none
    sk_atomic_file new_log; // overwriting: the new log's temporary file until the first checkpoint
    int new_log_pending;  // new_log is open and not yet renamed into place
} sk_outdir;

#define SK_OUTDIR_INIT {.lock_fd = -1, .log_fd = -1, .old_log_fd = -1, .new_log = {.fd = -1}}

// Creates dir (mkdir -p) and takes its lock; removes temporary files and training states (no
// model file names them) that killed checkpoint writes left behind. SK_ERR_BUSY naming dir and the holder's pid when another run holds it,
// SK_ERR_IO when dir cannot be created or written. od must be SK_OUTDIR_INIT.
sk_status sk_outdir_open(sk_outdir *od, const char *dir, sk_error *err);

// For a fresh run (init_from NULL) or one started from a checkpoint outside the directory:
// SK_ERR_ARG when the directory holds a checkpoint and overwrite is 0, with a message naming
// the directory, the step and validation loss of what is there and the ways on; with
// overwrite, marks the old run for replacement at the first checkpoint. A checkpoint inside
// the directory continues its run: SK_OK, or SK_ERR_ARG with overwrite.
sk_status sk_outdir_claim(sk_outdir *od, const char *init_from, int overwrite, sk_error *err);

// Opens and locks the metrics log at path: appended to when append is set (a resumed run),
// started anew otherwise (in a temporary file while an overwrite is pending). SK_ERR_BUSY when
// another run holds it, SK_ERR_IO when it cannot be opened.
sk_status sk_outdir_open_log(sk_outdir *od, const char *path, int append, sk_error *err);

// Appends one formatted record to the log in one write. SK_ERR_IO naming the log and the
// system's reason (no space, quota, file size limit, I/O error) when the write fails; the
// log is then cut back to its whole records.
sk_status sk_outdir_log(sk_outdir *od, sk_error *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

// Tells that the checkpoint <dir>/<name>.safetensors was just written. The first time, while
// an overwrite is pending, removes the old run's other checkpoints and puts the new log in place.
sk_status sk_outdir_checkpoint_written(sk_outdir *od, const char *name, sk_error *err);

// --keep-checkpoints' name for the checkpoint written when `epoch` epochs are done:
// "epoch-NNNN-valL.LLLL", its model's validation loss to 4 decimals in the name (char-rnn's
// lm_lstm_epoch1.00_1.4534.t7), or "epoch-NNNN" when val_loss is not finite (not evaluated: no
// validation split; also every epoch checkpoint of an older run, which sk_outdir_remove_epochs
// therefore reads too).
void sk_outdir_epoch_name(int64_t epoch, double val_loss, char *out, size_t n);

// Removes dir's epoch checkpoints, model and states, of either name form: those of `epoch`
// (every epoch when epoch < 0) but the one named keep (NULL: none). SK_ERR_IO when dir cannot be
// read or a file removed.
sk_status sk_outdir_remove_epochs(const char *dir, int64_t epoch, const char *keep, sk_error *err);

// Whether file lies in directory dir (the same directory, however spelled).
int sk_outdir_contains(const char *dir, const char *file);

// Closes the log, drops a pending overwrite (the old files stay), removes an unfinished new
// log, removes the lock file and releases the lock. Safe on SK_OUTDIR_INIT and twice.
void sk_outdir_close(sk_outdir *od);

#endif
