/* sweep.h — `./train sweep`: a grid of training runs, one command.
 *
 *   ./train sweep CONFIG.json [--set key=value]… [--out DIR] [--jobs N] [--shard I/N] [--quiet]
 *   ./train sweep --merge DIR… [--out OUT] [--quiet]
 *
 * CONFIG is a normal config plus a "sweep" section (spec.h).  The sweep folder
 * (default results/<name>) gets base_config.json (the config without the section,
 * --set applied: what every cell starts from), sweep.json (the section with its
 * defaults), cells/NAME/ (one normal run folder per cell, runner.h) and the grid
 * files (grid.h).  Re-running skips finished cells and resumes the others from
 * their checkpoints.
 *
 * --shard I/N runs only cells I, I+N, I+2N, … (a Slurm array task, or one host of
 * GNU parallel) and writes no grid; --merge gathers shard folders — the same one
 * on a shared file system, or copies — into OUT (default: the first DIR), copying
 * in the cells it lacks, and writes the grid.  Under mpirun (built with MPI) the
 * ranks take cells from rank 0, which writes the grid.
 *
 * Exit codes: 0 every cell done; 1 some cell failed (the grid says which, with its
 * log) or an I/O error; 2 bad usage, config or sweep section, or a cell folder that
 * holds another config's run; 130/143 interrupted (workers saved checkpoints). */
#ifndef ATTNLAB_SWEEP_SWEEP_H
#define ATTNLAB_SWEEP_SWEEP_H

#include "attnlab/util/error.h"

/* argv[0] is "sweep". */
int sweep_main(int argc, char **argv, AlError *err);

#endif
