/* fsutil.h — folders for run outputs. */
#ifndef ATTNLAB_UTIL_FSUTIL_H
#define ATTNLAB_UTIL_FSUTIL_H

#include "attnlab/util/error.h"

/* mkdir -p: creates path and its missing parents.  Returns 0, or 1 with err naming
 * the folder that could not be created (or a path that exists but is no folder). */
int al_mkdir_p(const char *path, AlError *err);

#endif
