/* runner.h — running cells as worker processes, N at a time.
 *
 * Each cell is one child process: the attnlab binary itself (exe) on the sweep's
 * base_config.json with the cell's --set overrides, --out its folder and --resume
 * when it holds a checkpoint; ATTNLAB_THREADS=OPENBLAS_NUM_THREADS=1, stdout and
 * stderr appended to the cell's train.log.  The same arguments and environment on
 * any machine, rank or shard: a cell's result never depends on how it was scheduled.
 *
 * Children get their own process group (a terminal's Ctrl-C reaches the sweep once,
 * which forwards it) and SIGTERM when the sweep dies (PR_SET_PDEATHSIG), so no
 * worker outlives it.  SIGINT/SIGTERM to the sweep go to every worker, which saves
 * a checkpoint and exits 130/143; the sweep then returns 128 + the signal.
 *
 * Where cells come from is a CellSource: a local queue (one machine, or a shard),
 * or under MPI rank 0's queue shared with the other ranks (mpi.c). */
#ifndef ATTNLAB_SWEEP_RUNNER_H
#define ATTNLAB_SWEEP_RUNNER_H

#include "attnlab/sweep/spec.h"

typedef struct SweepRun {
    const SweepSpec *spec;
    const Config *base;
    const char *out_dir;          /* the sweep folder: base_config.json, cells/ */
    const char *exe;              /* its path, for logs (workers exec /proc/self/exe) */
    int jobs;                     /* workers at once */
    int quiet;                    /* only failures and the final line */
    int rank;                     /* MPI rank (named in each cell's log), or −1 */
} SweepRun;

/* Cells of this sitting: to run, and how they ended.  workers: cells running at once
 * over all ranks (0: run->jobs); done_seconds: the wall time of the done cells, for
 * the ETA of the progress lines. */
typedef struct SweepTally {
    int total, done, failed, stopped;
    int workers;
    double done_seconds;
} SweepTally;

typedef struct CellSource CellSource;
struct CellSource {
    long (*take)(CellSource *src);                      /* a cell to start, or −1: no more */
    void (*finished)(CellSource *src, long cell, int exit_code, double seconds);
    int  (*serve)(CellSource *src);                     /* NULL, or answer other ranks (never blocks);
                                                           1 if it handled anything */
    int  (*others_busy)(CellSource *src);               /* NULL, or: other ranks still run cells */
    const SweepRun *run;
    SweepTally *tally;
    void *state;
};

/* A local queue of cells: take() pops, finished() reports. */
typedef struct CellQueue { const long *cells; long n, next; } CellQueue;
CellSource sweep_queue_source(const SweepRun *run, CellQueue *q, SweepTally *tally);

/* Runs cells from src on up to run->jobs workers until src has none left and
 * every worker has exited.  Returns 0, or 128 + the signal that interrupted it. */
int sweep_run_cells(CellSource *src);
/* The signal received during sweep_run_cells, or 0 (a source stops handing out cells). */
int sweep_signal(void);

/* One progress line for a finished cell (the tally is updated either way):
 * "[k/N] done  CELL  METRIC  SECONDS | ETA hh:mm:ss", k the cells finished of the
 * N this sitting runs; the ETA is the mean wall time of this sitting's done cells
 * times the cells not finished, over the workers (sweep_eta_s). */
void sweep_report_cell(const SweepRun *run, SweepTally *tally, long cell, int exit_code, double seconds);
/* Seconds until the tally's last cell ends, as above; −1 before a cell is done. */
double sweep_eta_s(const SweepTally *tally, int jobs);

/* Path helpers: OUT/cells/NAME and OUT/base_config.json (n: AL_PATH_MAX; the sweep
 * folder was checked to leave room for them, so a path that does not fit is a bug). */
void sweep_cell_dir(const SweepRun *run, long cell, char *out, size_t n);
void sweep_base_path(const char *out_dir, char *out, size_t n);

#endif
