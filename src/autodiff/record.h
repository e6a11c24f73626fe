/* record.h — how an op appends its tape entry: the whole entry as one compound
 * literal, so the op states in one place what its backward reads —
 *
 *     if (needs_grad)
 *         ad_record(t, (TapeEntry){ .op = OP_L2NORM, .backward = l2norm_backward, .out = y,
 *                                   .in = { x }, .saved = { norm }, .f = { eps }, .first_write = 1 });
 *
 * — and every field it leaves out is zero (NULL inputs and saved buffers, 0
 * parameters).  Initialiser expressions are evaluated in no fixed order, so an op
 * allocating several scratch buffers does it into variables first.  Internal to
 * src/autodiff. */
#ifndef ATTNLAB_AUTODIFF_RECORD_H
#define ATTNLAB_AUTODIFF_RECORD_H

#include "attnlab/autodiff/tape.h"

#include <string.h>

static inline TapeEntry *ad_record(Tape *t, TapeEntry entry) {
    TapeEntry *e = tape_record(t, entry.op, entry.backward, entry.out, entry.in[0], entry.in[1], entry.in[2]);
    *e = entry;
    return e;
}

/* An arena copy of a caller's buffer (ids, targets, a mask) for the entry to keep:
 * the caller may refill its buffer before backward runs. */
static inline void *ad_saved_copy(Tape *t, const void *src, size_t bytes) {
    return memcpy(tape_scratch(t, bytes), src, bytes);
}

#endif
