/* overlap.h — how many of a run's test examples its training also contains.
 *
 * A generated task's fixed training set is disjoint from its test set by
 * construction (taskgen_dataset); a streaming run draws fresh examples every step
 * from the same distribution as the test set, so with a small enough example space
 * some test examples are among the training rows, and a test accuracy partly
 * measures recall.  Files (task type "file") may share rows too.  This counts, by
 * the keys that keep datasets distinct (taskgen_row_key: the prompt for chain of
 * thought, else the whole row), what the two have in common: for a fixed set, its
 * rows; for a stream, the rows the run drew, replayed from the stream's rng. */
#ifndef ATTNLAB_DATA_OVERLAP_H
#define ATTNLAB_DATA_OVERLAP_H

#include "attnlab/data/task.h"

typedef struct Overlap {
    int  streaming;            /* the training rows are a replayed stream */
    int  by_prompt;            /* keys are prompts (chain of thought), not whole rows */
    long train_rows;           /* rows of the training set, or rows the stream drew */
    long train_rows_in_test;   /* of them, rows whose key is a test example's */
    int  test_rows;            /* rows of the test set */
    int  test_rows_in_train;   /* of them, rows whose key training contains */
    int  n_groups;             /* the task's test groups (TaskGen.n_groups; 0: none) … */
    int  group_rows[TASKGEN_MAX_GROUPS], group_in_train[TASKGEN_MAX_GROUPS];   /* … and the two counts per group */
} Overlap;

/* The overlap of td's training data with td->test.  A streaming td: the first
 * stream_rows rows drawn from *stream (advanced past them); otherwise td->train
 * (stream unused). */
void overlap_measure(const TaskData *td, Rng *stream, long stream_rows, Overlap *o);

#endif
