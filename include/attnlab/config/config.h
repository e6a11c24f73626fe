/* config.h — a run's configuration, read from JSON and validated strictly.
 *
 * Every field has a default (cfg_defaults), so a config file names only what it
 * changes.  cfg_load() rejects malformed JSON (line and column), unknown keys (full
 * key path and the closest valid key), wrong types, out-of-range and inconsistent
 * values, each with one message naming the file and key path; err->code is 2.
 * The schema (key paths, types, ranges, enum names) is one table in
 * src/config/schema.c, so adding a key is adding a row; the same table prints the
 * effective config.  The task and model sections are declared with the modules
 * that use them (data/task_config.h, nn/model_config.h), so those need nothing
 * from this layer. */
#ifndef ATTNLAB_CONFIG_CONFIG_H
#define ATTNLAB_CONFIG_CONFIG_H

#include "attnlab/data/task_config.h"
#include "attnlab/nn/model_config.h"
#include "attnlab/util/error.h"

#include <stdint.h>

#define CFG_NAME_MAX 128
#define DISTILL_MAX_LAYERS 8      /* layers one distillation grid may replace */
#define DISTILL_MAX_VALUES 256    /* values in one ℓ or z list */

typedef enum { SCHED_CONSTANT, SCHED_WARMUP_LINEAR, SCHED_WARMUP_COSINE } CfgSchedule;
typedef enum { NONFINITE_STOP, NONFINITE_SKIP } CfgNonfinite;   /* a step with a NaN/inf loss or grad norm */
typedef enum { STOP_ON_TOKEN, STOP_ON_SEQ } CfgStopMetric;       /* the error eval.stop_at_error bounds */

typedef struct CfgTrain {
    char optimizer[16];      /* "adam" | "adamw" (adamw = decoupled weight decay) */
    float lr, beta1, beta2, eps, weight_decay;
    CfgSchedule schedule;    /* "constant" | "warmup_linear" | "warmup_cosine" */
    int warmup_steps;
    float min_lr;            /* floor of the decayed schedules */
    int decay_steps;         /* the decay reaches min_lr at this step and holds it; 0 = train.steps */
    int batch_size, steps;
    float grad_clip;         /* max global grad norm; 0 = off */
    int threads;             /* data-parallel shards per step (train/step.h): 0 = $ATTNLAB_THREADS, else cores */
    int length_groups;       /* run each shard's rows in this many groups of similar length (train/step.h); 1 = off */
    CfgNonfinite on_nonfinite; /* "stop": end the run there; "skip": drop that step's update */
} CfgTrain;

typedef struct CfgEval {
    int every;               /* evaluate every N steps (and at the last step) */
    int test_size;           /* test sequences, drawn independently of the train set */
    float stop_at_error;     /* stop early when the test error of stop_metric is ≤ this; < 0 = never */
    CfgStopMetric stop_metric; /* token: scored positions; seq: whole sequences (every position right) */
    int checkpoint_every;    /* save model + training state every N steps; 0 = at evals */
} CfgEval;

typedef enum { DISTILL_HYPERPLANE, DISTILL_CROSSPOLYTOPE } CfgLshFamily;
typedef enum { FINETUNE_EXCEPT_QK, FINETUNE_EXCEPT_ATTENTION } CfgFinetuneParams;
typedef enum { FINETUNE_FIXED, FINETUNE_REDRAW } CfgFinetuneHashes;

/* Distillation into ANNA (paper 000): the trained softmax surrogate's attention in
 * the chosen layers is replaced by LSH attention and the test error measured over a
 * grid of (tables ℓ, functions z) per layer, `runs` hash draws per cell. */
typedef struct CfgDistill {
    int enabled;             /* bool: distil right after training (./train CONFIG) */
    char layers[64];         /* "all", or a list such as "0" or "0,1" */
    CfgLshFamily family;     /* "hyperplane" (SimHash) | "crosspolytope" */
    char tables[256];        /* ℓ values: "1..16", or per layer "32..96/8;4..32/4" */
    char funcs[256];         /* z values, same form: "1..6" */
    int same_funcs;          /* bool: one z for every distilled layer (one grid axis) */
    int last_dim;            /* cross-polytope: coordinates of each table's last function; 0 = all (lsh.h) */
    int runs;                /* hash draws per cell (mean and std over them) */
    int seed;                /* of the hash functions (each cell's draws: distill_cell_seed) */
    int valid_size;          /* validation sequences (choose cells on them); 0 = eval.test_size */
    int score_all;           /* bool: score every position, as paper 000's induction-head figure (k-hop's
                                position 0 included); false: the task's own scored positions */
    /* Fine-tuning with ANNA in the loop (src/anna/finetune.c), after the grid. */
    int finetune_steps;      /* Adam steps per fine-tuned cell; 0 = off */
    float finetune_lr;       /* constant learning rate */
    char finetune_cells[256];/* "auto", or cells "LxZ[+LxZ…]" separated by ',' */
    CfgFinetuneParams finetune_params; /* "except_qk" | "except_attention" */
    CfgFinetuneHashes finetune_hashes; /* "fixed" | "redraw" */
} CfgDistill;

typedef struct Config {
    char name[CFG_NAME_MAX];
    uint64_t seed;
    CfgTask task;
    CfgModel model;
    CfgTrain train;
    CfgEval eval;
    CfgDistill distill;
} Config;

void cfg_defaults(Config *c);
/* Parses and validates the JSON file `path` over the defaults; then applies the
 * `--set key.path=value` overrides (value parsed as JSON, or as a bare string).
 * Returns 0, or err->code (2) with err->msg naming the file / override and key path. */
int cfg_load(Config *c, const char *path, const char *const *overrides, int n_overrides, AlError *err);
/* cfg_load for `./train sweep`: a top-level "sweep" section is cut out before the
 * rest is read as a normal config, and returned as JSON text in *sweep_json
 * (malloc'ed; NULL when the file has none).  cfg_load itself refuses that section,
 * naming the command that runs it. */
int cfg_load_sweep(Config *c, const char *path, const char *const *overrides, int n_overrides,
                   char **sweep_json, AlError *err);
/* Same from a string already in memory (`source` names it in messages). */
int cfg_parse(Config *c, const char *json, const char *source, AlError *err);
/* Applies one "key.path=value" override to an already-valid config, then revalidates. */
int cfg_set(Config *c, const char *assignment, AlError *err);
/* Applies n overrides, then checks the cross-key rules once (so together they may
 * pass through states one alone would not), as cfg_load does after a file.  A broken
 * rule blames the last override involved, else `source`.  *c is unchanged on error. */
int cfg_set_all(Config *c, const char *const *assignments, int n, const char *source, AlError *err);
/* The effective config as pretty JSON (malloc'ed; caller frees).  Parsing it back
 * gives the same Config. */
char *cfg_to_json(const Config *c);
/* Every key with its type, range or choices, default and one-line doc, for
 * `--help` and docs (malloc'ed; caller frees). */
char *cfg_help(void);
/* The key path of the first (schema-order) setting in which a and b differ, or
 * NULL when they are the same config (keys that do not apply to a's task type are
 * ignored).  For the round-trip tests and for checking a resume against its run. */
const char *cfg_first_difference(const Config *a, const Config *b);
/* Fills spec with what building c's data reads (data/task_config.h: the task
 * section, seed, eval.test_size, distill.valid_size and distill.enabled) and
 * returns it, so a call can be the argument of task_build and its kin. */
const TaskSpec *cfg_task_spec(const Config *c, TaskSpec *spec);

#endif
