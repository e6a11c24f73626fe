/* atomic_file.h — replace a file all at once, or not at all.
 *
 * Why: a checkpoint or summary half-written when the disk fills up or the process is
 * killed must never replace a good one.  The bytes go to "<path>.tmp.<pid>" in the
 * same directory (rename(2) is atomic only within one file system), are written with
 * every call checked, flushed and fsync'ed, and only then renamed over <path>; the
 * directory is fsync'ed too so the rename itself survives a crash.  On any failure
 * the temporary file is removed, <path> is left exactly as it was, and err holds
 * "cannot write '<path>': <reason>" with code 1.  Only a regular file (or nothing)
 * at <path> is ever replaced: a device node, FIFO, socket, folder or symbolic link
 * there is refused before anything is written (`--out /dev/full` as root must not
 * turn the device into a file). */
#ifndef ATTNLAB_IO_ATOMIC_FILE_H
#define ATTNLAB_IO_ATOMIC_FILE_H

#include "attnlab/util/error.h"

#include <stddef.h>

/* Writes the concatenation of n_chunks byte ranges (chunks[i], sizes[i]) to path.
 * A chunk of size 0 may be NULL.  Returns 0, or err->code (1) on failure. */
int atomic_write(const char *path, const void *const *chunks, const size_t *sizes,
                 int n_chunks, AlError *err);

/* atomic_write of one NUL-terminated string (JSON summaries, configs, logs). */
int write_text_atomic(const char *path, const char *text, AlError *err);

/* Deletes the "*.tmp.PID" files in dir whose process no longer exists: what a
 * kill -9 during a write leaves behind.  Returns how many. */
int atomic_remove_stale(const char *dir);

#endif
