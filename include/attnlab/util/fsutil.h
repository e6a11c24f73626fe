/* fsutil.h — folders for run outputs, and reading a whole file. */
#ifndef ATTNLAB_UTIL_FSUTIL_H
#define ATTNLAB_UTIL_FSUTIL_H

#include "attnlab/util/error.h"

#include <stddef.h>

/* mkdir -p: creates path and its missing parents.  Returns 0, or 1 with err naming
 * the folder that could not be created (or a path that exists but is no folder). */
int al_mkdir_p(const char *path, AlError *err);

/* The whole file, NUL-terminated (malloc'ed), or NULL with errno set when it cannot
 * be read (a folder: EISDIR).  *len (may be NULL) gets its size in bytes. */
char *al_read_file(const char *path, size_t *len);

#endif
