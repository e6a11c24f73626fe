/* task.h — turns the config's `task` section into train and test datasets.
 *
 * The one place that knows every task type: the trainer asks for datasets and
 * shapes and never looks at task-specific details.  What a build reads of the run's
 * config is a TaskSpec (data/task_config.h; cfg_task_spec fills one from a Config). */
#ifndef ATTNLAB_DATA_TASK_H
#define ATTNLAB_DATA_TASK_H

#include "attnlab/data/dataset.h"
#include "attnlab/data/assoc_recall.h"
#include "attnlab/data/cot_arith.h"
#include "attnlab/data/cot_ed.h"
#include "attnlab/data/cot_lis.h"
#include "attnlab/data/dyck.h"
#include "attnlab/data/equality.h"
#include "attnlab/data/index_lookup.h"
#include "attnlab/data/khop.h"
#include "attnlab/data/taskgen.h"
#include "attnlab/data/task_config.h"
#include "attnlab/nn/model_config.h"
#include "attnlab/util/fsutil.h"

/* k-hop's parameters plus the hop count of test examples (−1: like training). */
typedef struct KhopTask { KhopParams p; int test_hops; } KhopTask;

typedef struct TaskData {
    Dataset train, test;          /* train is empty when streaming */
    int streaming;                /* 1: every step draws a fresh batch from gen */
    TaskGen gen;                  /* generated tasks; gen.sample is NULL for match2 */
    union {                       /* gen.params points here */
        KhopTask khop;
        IdxParams idx;
        ArithParams arith;
        LisParams lis;
        EdParams ed;
        DyckParams dyck;
        ArParams ar;
        EqParams eq;
    } params;
    int vocab_size, n_classes;
    int seq_len;                  /* the longest row of any split (the model's max_len) */
    int n_distinct_train;         /* distinct training sequences */
    char summary[512];            /* one line for the log, e.g. sizes and generator stats */
    char source[AL_PATH_MAX];     /* task_build_from's config file, for later messages */
} TaskData;

/* Generates the datasets of s->task from s->seed (train and test from separate
 * streams; the test set is disjoint from the training set).  Returns 0 or an error
 * code with err filled. */
int  task_build(const TaskSpec *s, TaskData *td, AlError *err);
/* task_build for a config read from `source` (its file name).  First task_check and
 * a check that the datasets fit in memory (al_machine_memory), so nothing is drawn
 * for a config that would fail; then a generated task the generator refuses gets
 * "SOURCE: KEY.PATH: " before the generator's message, so the user sees which config
 * key to change.  JSONL errors name their file and line; one that cannot be opened
 * also gets "SOURCE: task.train_path: " (or test_path). */
int  task_build_from(const TaskSpec *s, const char *source, TaskData *td, AlError *err);
/* What the generator refuses, without generating: its parameter checks (as
 * task_build runs them) and, for match2, sizes that rejection sampling could not
 * fill in reasonable time (match2_check_size).  File tasks pass (their reader
 * checks them).  Messages start with "SOURCE: KEY: " (source may be NULL).
 * Returns 0 or 2.  The sweep runs it for every cell before the first one starts. */
int  task_check(const TaskSpec *s, const char *source, AlError *err);
/* model_memory_check for a run of s with `model` and batches of `batch_size`
 * (train.batch_size): td is the built data (the trainer, after task_build_from), or
 * NULL to take the shapes from the generator and the sizes from s (the sweep's
 * check of a cell; file tasks then pass, as their shapes are known only once the
 * files are read).  It stays here, not in train, because its messages name the task
 * keys that set the rows' length and count, which only this module knows.
 * Returns 0 or 2. */
int  task_check_memory(const TaskSpec *s, const CfgModel *model, int batch_size, const TaskData *td,
                       const char *source, AlError *err);
void task_free(TaskData *td);
/* A validation split of s->valid_size rows (0: s->test_size), for choosing
 * distillation cells without looking at the test set: drawn like the test set
 * (same generator and split, e.g. k-hop at the test hop count, Match2's balanced
 * bins) from its own stream (s->seed, "valid"), and disjoint from td's training
 * and test rows by the same mechanism that keeps the test set apart from the
 * training set (a set of the rows' dedup keys as `exclude`).  A streaming task has
 * no fixed training rows to avoid.  File tasks have no generator: an error (2)
 * naming distill.valid_size, as is a task too small for the size. */
int  task_build_validation(const TaskSpec *s, const TaskData *td, Dataset *out, AlError *err);
/* Writes the generated train and test sets to dir/train.jsonl and dir/test.jsonl
 * (format: data/README.md), so they can be inspected or trained on with task type
 * "file".  Streaming tasks have no training set to write: an error (code 2). */
int  task_write_jsonl(const TaskData *td, const char *dir, AlError *err);
/* 0 when td has a training set to write (not a streaming task) whose targets are
 * single classes (not a multi-label task, e.g. eq_ncp); else err (code 2) naming
 * the config and task.train_size or task.type.  `./train data` asks before making
 * its folder. */
int  task_check_writable(const TaskData *td, AlError *err);

#endif
