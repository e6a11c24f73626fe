/* taskgen.h — a task as a generator of Examples, and the data a run draws from it.
 *
 * Every generated task (k-hop, index lookup, Dyck, chain of thought) is one
 * TaskGen: sizes, and a sample() that writes one Example.  From it come
 *   - fixed datasets of distinct examples (taskgen_dataset), the test set disjoint
 *     from the training set, keyed by the whole sequence or, for chain of thought,
 *     by the prompt (the rest is a function of it);
 *   - fresh batches for streaming training (taskgen_batch).
 * Rows are right-padded to max_len with pad_id and ignored targets. */
#ifndef ATTNLAB_DATA_TASKGEN_H
#define ATTNLAB_DATA_TASKGEN_H

#include "attnlab/data/dataset.h"
#include "attnlab/data/example.h"
#include "attnlab/data/seqset.h"

#define TASKGEN_MAX_GROUPS 16

typedef enum { SPLIT_TRAIN, SPLIT_TEST } TaskSplit;

typedef struct TaskGen TaskGen;
struct TaskGen {
    const char *name;
    int vocab_size, n_classes, max_len, pad_id;
    int key_is_prompt;                 /* dedup by the prompt, not the whole sequence */
    int multilabel;                    /* targets are k-hot codes (dataset.h): eq_ncp */
    int eos_id;                        /* chain of thought: generation stops here */
    int n_groups;                      /* 0: no per-group metrics */
    const char *group_names[TASKGEN_MAX_GROUPS];
    /* Writes one example; split lets a task test on another distribution (e.g.
     * index lookup at length exactly N, k-hop at one hop count). */
    void (*sample)(const TaskGen *g, Rng *rng, TaskSplit split, Example *ex);
    /* Chain of thought: the final-answer span of a generated sequence (0 = malformed). */
    int  (*extract_answer)(const TaskGen *g, const int *tokens, int len, int *start, int *alen);
    /* The printed name of token id (chain of thought: "3", "+", "<eos>", …), or NULL
     * when the task's tokens have no names (then tools print ids). */
    const char *(*token_name)(const TaskGen *g, int id);
    const void *params;                /* the task's own parameters */
};

/* n distinct examples of `split` whose keys are not in `exclude` (may be NULL);
 * their keys are added to `keys` when it is not NULL (to exclude them from the
 * next split).  At most max(1000, 100·n) draws: a task whose space is too small for
 * n distinct examples is an error (code 2) that says how many were found. */
int taskgen_dataset(const TaskGen *g, TaskSplit split, int n, Rng *rng, const SeqSet *exclude,
                    SeqSet *keys, Dataset *out, AlError *err);

/* Adds the dedup keys of d's rows (d drawn from g, with info; or any rows, with
 * g->key_is_prompt 0) to keys, whose seq_len is at least d's: a split drawn later
 * with keys as its `exclude` is disjoint from d. */
void taskgen_add_keys(const TaskGen *g, const Dataset *d, SeqSet *keys);

/* Fills every row of b (b->seq_len == max_len) with a fresh example. */
void taskgen_batch(const TaskGen *g, TaskSplit split, Rng *rng, Batch *b);

/* The dedup key of a row drawn from g (or, with g->key_is_prompt 0, of any row):
 * its prompt for chain of thought, else its info->len real tokens, then −1 up to
 * key_len (≥ that length). */
void taskgen_row_key(const TaskGen *g, const int *tokens, const RowInfo *info, int key_len, int *key);

/* Row r of d's key (taskgen_row_key), the whole row when d has no info. */
void taskgen_dataset_row_key(const TaskGen *g, const Dataset *d, int r, int key_len, int *key);

/* Draws n examples of `split` from *rng exactly as taskgen_batch draws them (the
 * same rows in the same order, whatever the batch size), keeps none, and returns
 * how many have a key in `keys` (keys->seq_len ≥ max_len); those keys are added to
 * `hit` when it is not NULL.  A streaming run's training rows, replayed. */
long taskgen_count_drawn(const TaskGen *g, TaskSplit split, Rng *rng, long n, const SeqSet *keys, SeqSet *hit);

#endif
