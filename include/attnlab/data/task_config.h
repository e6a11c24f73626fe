/* task_config.h — the settings of the task to learn: the task.* keys of a run's
 * config.
 *
 * They live here, with the module that generates or reads the data from them, so
 * that data needs nothing from the layers above it; the config module
 * (config/config.h) reads them from JSON into Config.task with its schema, which
 * documents every key, its range and default. */
#ifndef ATTNLAB_DATA_TASK_CONFIG_H
#define ATTNLAB_DATA_TASK_CONFIG_H

#include "attnlab/util/fsutil.h"   /* AL_PATH_MAX: the one path maximum */

#include <stdint.h>

typedef enum { TASK_MATCH2, TASK_KHOP, TASK_INDEX_LOOKUP, TASK_ARITH, TASK_LIS, TASK_ED, TASK_DYCK,
               TASK_ASSOC_RECALL, TASK_EQ_RANDOM, TASK_EQ_ONE, TASK_EQ_NCP, TASK_FILE } CfgTaskType;   /* "file" stays last in the listed choices */

typedef struct CfgTask {
    CfgTaskType type;        /* "match2" | "khop" | "index_lookup" | "arith" | "lis" | "ed" | "dyck" |
                                "assoc_recall" | "eq_random" | "eq_one" | "eq_ncp" | "file" */
    int seq_len;             /* match2: N; khop: tokens incl. the hop-count token; index_lookup: max symbols N;
                                assoc_recall: context (key, value) pairs n; eq_*: symbols N of both halves */
    int modulus;             /* match2: M, tokens are 1..M−1; arith: the prime p */
    int train_size;          /* fixed training set size; 0 = fresh examples every step (not match2) */
    int alphabet;            /* khop, index_lookup: |Σ| */
    int min_hops, max_hops;  /* khop: training hop counts, uniform over [min, max] */
    int test_hops;           /* khop: hop count of test examples; −1 = same range as training */
    int score_first;         /* khop bool: score position 0 (target: the null class) in training and tests */
    int min_len;             /* index_lookup: fewest symbols of a training example */
    int n_ops;               /* arith: operators per expression */
    int under;               /* arith: bool, training operator counts 1..n_ops ∝ i (public --under) */
    int direct;              /* chain-of-thought tasks: bool, answer only (no chain of thought) */
    int length;              /* lis: sequence length n; ed: string length ℓ */
    int number_range;        /* lis: values 1..range−1; ed: integer tokens; 0 = the task's default */
    int letters;             /* ed: alphabet the strings use (public --using) */
    int uniform_costs;       /* ed: bool, Levenshtein costs instead of the public generator's */
    int local;               /* ed: bool, ED_Local: every chain-of-thought cell restates its two letters */
    int depth, types;        /* dyck: bounded depth and bracket types (paper 003: 2, 2) */
    int keys;                /* assoc_recall: key alphabet K >= seq_len; 0 = 4 * seq_len */
    int symbols;             /* eq_one, eq_ncp: |Σ| besides [sep] (paper 003: 1024); eq_random: 2 */
    char train_path[AL_PATH_MAX], test_path[AL_PATH_MAX];   /* file: JSONL datasets (data/README.md) */
} CfgTask;

/* Everything building a run's data reads (data/task.h): the task section and the
 * few settings of other sections that size or seed its splits.  The config module
 * fills it from a whole config (cfg_task_spec), so this layer needs nothing of the
 * config schema. */
typedef struct TaskSpec {
    CfgTask task;
    uint64_t seed;           /* seed: the train, test and validation splits draw from its streams */
    int test_size;           /* eval.test_size */
    int valid_size;          /* distill.valid_size: rows of the validation split; 0 = test_size */
    int distilling;          /* distill.enabled: task_check then also refuses a validation split
                                match2 could not fill, before the run trains */
} TaskSpec;

#endif
