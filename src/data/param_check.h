/* param_check.h — a generator's range check of one parameter, in the one message
 * form the generators share (task.c's PARAM_KEYS maps its start to a config key):
 *     "ed: length 2 must be in [4, 128] (why the bounds are what they are)"
 * Private to src/data. */
#ifndef ATTNLAB_SRC_DATA_PARAM_CHECK_H
#define ATTNLAB_SRC_DATA_PARAM_CHECK_H

#include "attnlab/util/error.h"

/* 0 when lo ≤ v ≤ hi, else 2 with the message in err. */
static inline int param_in_range(AlError *err, const char *task, const char *name, int v, int lo, int hi,
                                 const char *why) {
    if (v >= lo && v <= hi) return 0;
    return al_fail(err, 2, "%s: %s %d must be in [%d, %d] (%s)", task, name, v, lo, hi, why);
}

#endif
