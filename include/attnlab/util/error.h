/* error.h — one error record passed down by callers, filled by the first failure.
 *
 * Why a record and not errno or stderr prints: a failing loader deep in the call
 * stack knows *what* is wrong (key path, byte offset), while the caller knows the
 * file name and the exit code.  The message is complete when it reaches main(). */
#ifndef ATTNLAB_UTIL_ERROR_H
#define ATTNLAB_UTIL_ERROR_H

#include <stddef.h>

#define AL_ERR_MAX 1024

typedef struct AlError {
    int  code;              /* 0 = ok; otherwise the process exit code to use (1 or 2) */
    char msg[AL_ERR_MAX];   /* full, user-facing message, no trailing newline */
} AlError;

/* Sets err->code and formats err->msg (printf-style).  Returns code, so callers can
 * write `return al_fail(err, 2, "...")`.  err may be NULL (then it only returns). */
int al_fail(AlError *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to an existing message (adds the file name on the way up). */
void al_error_prefix(AlError *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* printf into a message buffer of n bytes, cut short on purpose when it does not
 * fit: for human-readable text only (a log line, an error message), never for a
 * path, which al_path_fmt (util/fsutil.h) refuses to cut.  Returns buf. */
char *al_msgf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Aborts with file:line on a broken internal invariant (a bug, never bad input). */
#define AL_ASSERT(c) do { if (!(c)) al_panic(__FILE__, __LINE__, #c); } while (0)
void al_panic(const char *file, int line, const char *what) __attribute__((noreturn));

/* malloc/calloc that never return NULL: out of memory is fatal with a clear message. */
void *al_malloc(size_t n);
void *al_calloc(size_t n, size_t size);
void *al_realloc(void *p, size_t n);

#endif
