/* cell.h — one cell of a sweep on disk: a normal run folder, SWEEP/cells/NAME/.
 *
 * The trainer owns config.json, metrics.jsonl, summary.json and the checkpoints;
 * the sweep adds train.log (the worker's stdout and stderr, appended per sitting)
 * and sweep_cell.json (the last sitting's exit code), so that a failure is known
 * to whoever aggregates the grid later — another shard, rank or machine. */
#ifndef ATTNLAB_SWEEP_CELL_H
#define ATTNLAB_SWEEP_CELL_H

#include "attnlab/sweep/spec.h"

#define CELL_LOG "train.log"
#define CELL_STATUS "sweep_cell.json"

typedef enum {
    CELL_NEW,        /* nothing worth keeping: run from scratch */
    CELL_RESUME,     /* a checkpoint of this config: continue with --resume */
    CELL_DONE,       /* summary.json of exactly this config, all steps; or stopped early
                        (eval.stop_at_error) with this config up to train.steps */
    CELL_CONFLICT    /* the folder holds another config's run: never touched */
} CellState;

/* What dir holds, judged against the cell's expected config.  *why (CONFLICT)
 * says what differs; for a NEW cell whose checkpoint is gone it says that the run
 * starts again (runfolder_lost_checkpoint; else it is left as given).  Everything
 * the trainer may change on --resume (name, train.steps, train.threads, eval.*)
 * only makes a finished cell resumable. */
CellState cell_inspect(const char *dir, const Config *expect, char *why, size_t why_len);

/* The final figures of a finished cell, from its summary.json.  Metrics the run
 * did not report are NaN.  Returns 0, or 1 if the file is unreadable. */
#define CELL_MAX_GROUPS 16
#define CELL_GROUP_NAME 32
typedef struct CellResult {
    double metric[METRIC_COUNT];   /* by SweepMetric: token, sequence, answer accuracy */
    double n_params, flops_per_seq;
    long steps;
    /* Token accuracy per test-row group (k-hop: per hop count; Dyck: positives,
     * negatives, type-only negatives), from summary.json's test_group_token_acc. */
    int n_groups;
    char group_name[CELL_MAX_GROUPS][CELL_GROUP_NAME];
    double group_acc[CELL_MAX_GROUPS];
} CellResult;
int cell_read_result(const char *dir, CellResult *r);

/* The last recorded sitting: its exit code, or −1 when no sitting was recorded. */
int  cell_last_exit(const char *dir);
int  cell_record_exit(const char *dir, int exit_code, AlError *err);

#endif
