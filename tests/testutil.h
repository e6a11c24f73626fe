/* testutil.h — file helpers shared by the test programs. */
#ifndef ATTNLAB_TESTS_TESTUTIL_H
#define ATTNLAB_TESTS_TESTUTIL_H

#include <stddef.h>

/* The whole file, NUL-terminated (malloc'ed), or NULL if unreadable; *len (may be
 * NULL) gets its size in bytes. */
char *tu_read_file(const char *path, size_t *len);
/* Writes text to path (plain fopen/fputs: test fixtures, not atomic). 0 on success. */
int   tu_write_file(const char *path, const char *text);

#endif
