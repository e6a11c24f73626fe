/* mpi.h — one sweep shared by the ranks of an `mpirun` (src/sweep/mpi.c, compiled
 * only when CMake finds MPI: ATTNLAB_HAVE_MPI).
 *
 * Rank 0 owns the queue of cells.  Every rank, rank 0 included, runs up to --jobs
 * workers (runner.h); the other ranks ask rank 0 for a cell whenever a worker slot
 * is free and report each cell's exit code back, so rank 0 prints the progress of
 * the whole job.  Workers write into the sweep folder directly, so across hosts it
 * must be on a shared file system.  Messages are three 64-bit integers. */
#ifndef ATTNLAB_SWEEP_MPI_H
#define ATTNLAB_SWEEP_MPI_H

#include "attnlab/sweep/runner.h"

/* The job size mpirun (Open MPI, MPICH, Slurm's PMI) announces in the environment;
 * 1 when not started by a launcher.  Needs no MPI library. */
int sweep_mpi_world_size(void);

#ifdef ATTNLAB_HAVE_MPI
/* MPI_Init; *rank, *size of MPI_COMM_WORLD.  Returns 0, or 1 with err filled. */
int  sweep_mpi_init(int *rank, int *size, AlError *err);
/* Rank 0's value of v, on every rank (MPI_Bcast). */
int  sweep_mpi_share(int v);
/* Rank 0: a source over q that also serves the other ranks; others: a source that
 * asks rank 0.  `storage` must outlive the source. */
typedef struct SweepMpiState { CellQueue *queue; int rank, size, stops_sent; long outstanding; } SweepMpiState;
CellSource sweep_mpi_source(const SweepRun *run, SweepMpiState *storage, SweepTally *tally);
void sweep_mpi_barrier(void);
void sweep_mpi_finalize(void);
#endif

#endif
