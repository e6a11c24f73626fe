/* files.h — small file helpers the sweep modules share (not a public header). */
#ifndef ATTNLAB_SWEEP_FILES_H
#define ATTNLAB_SWEEP_FILES_H

#include "attnlab/util/error.h"
#include "attnlab/util/strbuf.h"

#include <stddef.h>

/* Appends one CSV field: quoted (with "" for ") when it holds , " or a line break. */
void sw_csv_field(StrBuf *b, const char *text);

/* Does path exist (any kind of file)? */
int   sweep_exists(const char *path);
/* Copies every regular file of folder `from` into folder `to` (created), each file
 * written atomically.  Returns 0, or 1 with err naming the file. */
int   sweep_copy_files(const char *from, const char *to, AlError *err);
/* Are a and b the same folder (same device and inode)? */
int   sweep_same_dir(const char *a, const char *b);

#endif
