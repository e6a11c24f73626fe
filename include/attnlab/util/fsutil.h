/* fsutil.h — paths and folders for run outputs, reading input files safely, and
 * how much memory the machine offers. */
#ifndef ATTNLAB_UTIL_FSUTIL_H
#define ATTNLAB_UTIL_FSUTIL_H

#include "attnlab/util/error.h"

#include <stddef.h>
#include <stdio.h>

/* The one path maximum: every buffer that holds a path has AL_PATH_MAX bytes, so a
 * path has at most AL_PATH_MAX - 1 characters.  Linux's own PATH_MAX (4096): a
 * longer path could not be opened anyway.  A path that does not fit is an error
 * naming it, never cut short: a truncated --out once sent a run elsewhere. */
#define AL_PATH_MAX 4096
/* What the program joins onto a folder a user gives (--out, a run folder): "/",
 * the longest file name it writes there, and an atomic write's ".tmp.PID". */
#define AL_FOLDER_ROOM 64

/* Formats a path (printf-style) into dst of cap bytes.  Returns 0, or 2 with err
 *   "path too long (N > cap-1 characters): '<its first 80 characters>…'"
 * and dst emptied when it does not fit. */
int al_path_fmt(char *dst, size_t cap, AlError *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A path a user gave (what: the option or key that gave it, e.g. "--out"), checked
 * as it enters, before any work starts.  room: the characters the program joins
 * onto it (a folder's "/" and longest file name; 0 for a file).  Returns 0, or 2
 * with err "what: path too long (N > M characters): '<first 80>…'". */
int al_path_check(const char *path, size_t room, const char *what, AlError *err);

/* mkdir -p: creates path and its missing parents.  Returns 0, or 1 with err naming
 * the folder that could not be created (or a path that exists but is no folder). */
int al_mkdir_p(const char *path, AlError *err);

/* Opens an input file ("rb"), refusing anything but a regular file before a read
 * could block: a FIFO would wait for a writer forever, a device may never end.
 * Returns the stream, or NULL with err (code `code`) saying
 *   "cannot open 'P': <strerror>"             (missing, no permission, …)
 *   "cannot read 'P': Is a directory"
 *   "cannot read 'P': it is a named pipe (FIFO), not a regular file (…)"
 * (also a character or block device, or a socket). */
FILE *al_open_regular(const char *path, int code, AlError *err);

/* The whole file, NUL-terminated (malloc'ed), or NULL with errno set when it cannot
 * be read (a folder: EISDIR; a FIFO, device or socket: EINVAL, refused unread as
 * al_open_regular does).  *len (may be NULL) gets its size in bytes. */
char *al_read_file(const char *path, size_t *len);

/* The memory this process can still get, in bytes: the machine's physical memory,
 * or less when an address-space or data-size limit (ulimit -v, ulimit -d) leaves
 * less room above what is already mapped.  what gets the phrase to put before the
 * figure: "this machine has", or "the address-space limit (ulimit -v) of 8.00 GiB
 * leaves". */
double al_machine_memory(char *what, size_t n);

/* "23.4 GiB", "812 KiB", "100 bytes" (powers of 1024). */
const char *al_fmt_bytes(double bytes, char *buf, size_t n);

#endif
