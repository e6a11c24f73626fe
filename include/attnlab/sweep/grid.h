/* grid.h — a sweep's results, gathered from its cell folders and written out.
 *
 * One row per point (the axis values other than the seed): every metric's mean
 * and standard deviation over the seeds that finished (sample std, n − 1; empty
 * with one seed), the seeds finished / failed / pending, the model's parameter
 * count and forward FLOPs per sequence (model_flops_per_seq, from summary.json),
 * and the failed seeds' exit codes and logs.  The files, all rewritten atomically
 * from the folders alone, so a re-run, a merge of shards or a grid gathered on
 * another machine give the same bytes (by the same build: grid.json's provenance
 * names the build that wrote it):
 *   grid.csv, grid.json    the rows (grid.json also every cell: status, exit code, log;
 *                          and the provenance of the build that wrote it, util/version.h)
 *   heatmap[_PANEL].svg    the primary metric, rows × columns axes, one file per
 *                          value combination of the other axes
 *   groups[_PANEL].svg     when the task has test-row groups (k-hop hop counts, Dyck
 *                          negatives): token accuracy per group (columns) for every
 *                          rows × columns point of the panel (rows); grid.csv and
 *                          grid.json carry the same means
 *   summary.md, summary.csv  per panel and row value: the smallest column value
 *                          (width) whose mean reaches the threshold, with its FLOPs,
 *                          and the narrower widths not finished yet (provisional);
 *                          summary.md then has every point's metric in one table
 *                          (rows axis down, panels × columns across) */
#ifndef ATTNLAB_SWEEP_GRID_H
#define ATTNLAB_SWEEP_GRID_H

#include "attnlab/sweep/cell.h"
#include "attnlab/sweep/spec.h"

typedef enum { GRID_DONE, GRID_FAILED, GRID_PENDING } GridStatus;

typedef struct GridCell {
    GridStatus status;
    int exit_code;                /* of the last sitting, −1 if none */
    CellResult result;            /* GRID_DONE only */
} GridCell;

typedef struct GridRow {
    int done, failed, pending;    /* seeds */
    double mean[METRIC_COUNT], std[METRIC_COUNT];   /* NaN: no seed reported it / fewer than 2 */
    int n[METRIC_COUNT];
    double n_params, flops_per_seq;                 /* NaN until a seed finished */
    double group_mean[CELL_MAX_GROUPS];             /* by SweepGrid.group_name; NaN: none */
} GridRow;

typedef struct SweepGrid {
    const SweepSpec *spec;
    GridCell *cells;              /* n_cells */
    GridRow *rows;                /* n_points */
    int has_answer;               /* some cell is a chain-of-thought task */
    int n_groups;                 /* test-row groups any finished cell reported, in */
    char group_name[CELL_MAX_GROUPS][CELL_GROUP_NAME];   /* order of first appearance */
    int done, failed, pending;    /* cells */
} SweepGrid;

/* Reads every cell folder under out_dir/cells.  A folder holding another config's
 * run is an error (code 2) naming it.  Free with grid_free. */
int  grid_collect(SweepGrid *g, const SweepSpec *s, const Config *base, const char *out_dir, AlError *err);
void grid_free(SweepGrid *g);
/* Writes every file listed above into out_dir.  Returns 0 or 1 (I/O). */
int  grid_write(const SweepGrid *g, const char *out_dir, AlError *err);

/* Internals shared with report.c. */
long grid_point_of(const SweepSpec *s, const int *vi);        /* inverse of sweep_point_values */
const char *grid_fmt(double v, char *buf, size_t n);          /* shortest exact %g; "" for NaN */
int  grid_write_figures(const SweepGrid *g, const char *out_dir, AlError *err);
int  grid_write_summary(const SweepGrid *g, const char *out_dir, AlError *err);

#endif
