/* spec.h — a sweep: the grid of runs a config's "sweep" section asks for.
 *
 *   "sweep": {
 *     "axes": { "model.attention.type": ["softmax", "linear"],
 *               "task.length": [5, 10], "model.d_model": [16, 32] },
 *     "seeds": [1, 2],                 default: [the config's seed]
 *     "metric": "answer_acc",          token_acc | seq_acc | answer_acc; default by task
 *     "rows": "task.length",           heatmap rows (default: the first task.* axis)
 *     "cols": "model.d_model",         heatmap columns (default: model.d_model, else the last axis)
 *     "threshold": 0.9                 the summary table's "smallest width reaching it"
 *   }
 *
 * Every axis is a config key path with a list of values; a *point* is one value per
 * axis, a *cell* is a point and a seed — one normal training run, given to the
 * trainer as `--set key=value` overrides over the base config (the file without its
 * sweep section).  Points enumerate the axes like nested loops in the order written,
 * the last axis fastest; cell = point · n_seeds + seed index.
 *
 * Parsing checks every cell's config with the config loader's own rules, the task
 * generator's checks and the memory its run needs (task_check, task_check_memory)
 * before anything runs, so a bad axis value is reported up front with the loader's
 * message, naming the sweep key and the value (or the cell).  Errors have code 2. */
#ifndef ATTNLAB_SWEEP_SPEC_H
#define ATTNLAB_SWEEP_SPEC_H

#include "attnlab/config/config.h"
#include "attnlab/util/error.h"

#include <stdint.h>

#define SWEEP_MAX_AXES 8
#define SWEEP_MAX_VALUES 64
#define SWEEP_MAX_SEEDS 64
#define SWEEP_MAX_CELLS 100000
#define SWEEP_KEY_MAX 128
#define SWEEP_NAME_MAX 256     /* a cell folder name: one path component */

typedef enum { METRIC_TOKEN_ACC, METRIC_SEQ_ACC, METRIC_ANSWER_ACC, METRIC_COUNT } SweepMetric;

extern const char *const sweep_metric_names[METRIC_COUNT];      /* "token_acc", ... */
extern const char *const sweep_metric_summary_keys[METRIC_COUNT]; /* "test_token_acc", ... */

typedef struct SweepAxis {
    char key[SWEEP_KEY_MAX];          /* config key path, e.g. "model.d_model" */
    int n;                            /* values */
    char *json[SWEEP_MAX_VALUES];     /* each value as JSON: 32, "linear", true */
    char *label[SWEEP_MAX_VALUES];    /* as printed in tables and figures: 32, linear, true */
    double num[SWEEP_MAX_VALUES];     /* the number, or NaN for strings and booleans */
} SweepAxis;

typedef struct SweepSpec {
    SweepAxis axes[SWEEP_MAX_AXES];
    int n_axes;
    uint64_t seeds[SWEEP_MAX_SEEDS];
    int n_seeds;
    SweepMetric metric;
    int rows, cols;                   /* axis indices of heatmap rows / columns; rows −1: one row */
    double threshold;
    long n_points, n_cells;
} SweepSpec;

/* Parses the sweep section `json` (from cfg_load_sweep) and checks it against the
 * valid base config: axes, seeds, metric, layout, and every cell's config.  `src`
 * (the config file) starts every message.  Returns 0 or 2; free with sweep_spec_free
 * either way. */
/* The sweep keys for ./train --help-config (static text). */
const char *sweep_help(void);
int  sweep_spec_parse(SweepSpec *s, const char *json, const Config *base, const char *src, AlError *err);
void sweep_spec_free(SweepSpec *s);
/* The normalised section (defaults filled in) as pretty JSON, for the sweep folder's
 * sweep.json; parsing it back gives the same spec (malloc'ed). */
char *sweep_spec_to_json(const SweepSpec *s);

/* The axis whose key is the first len characters of key, or −1. */
int  sweep_axis_of(const SweepSpec *s, const char *key, size_t len);
/* Point p's value index on every axis (vi has n_axes entries). */
void sweep_point_values(const SweepSpec *s, long point, int *vi);
/* Cell c's overrides: "key=json" per axis, then "seed=N" (n_axes + 1 strings in
 * sets[], each malloc'ed; free with sweep_free_sets).  Returns their count. */
int  sweep_cell_sets(const SweepSpec *s, long cell, char **sets);
void sweep_free_sets(char **sets, int n);
/* Cell c's folder name: "attention.type=linear,task.length=20,d_model=32,seed=2"
 * (key paths without "model.", values with characters unsafe in file names as '_'). */
void sweep_cell_name(const SweepSpec *s, long cell, char *out, size_t n);
/* An axis key as cell folders and figures show it: without "model."
 * ("model.attention.type" → "attention.type"; "task.seq_len" stays). */
const char *sweep_short_key(const char *key);
/* The same "key=value,…" text for the axes in axes_mask (bit a = axis a). */
void sweep_values_name(const SweepSpec *s, const int *vi, unsigned axes_mask, char *out, size_t n);
/* The effective config of cell c (base + its overrides).  Returns 0 or 2. */
int  sweep_cell_config(const SweepSpec *s, const Config *base, long cell, Config *out, AlError *err);
/* Does the task of config c report this metric (answer_acc: chain-of-thought tasks)? */
int  sweep_metric_applies(SweepMetric m, const Config *c);

#endif
