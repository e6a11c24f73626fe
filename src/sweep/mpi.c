/* mpi.c — see mpi.h.  Compiled only when CMake found MPI. */
#include "attnlab/sweep/mpi.h"

#include <mpi.h>

#include <stdio.h>

enum { TAG_REQUEST = 1, TAG_REPORT = 2, TAG_ASSIGN = 3 };

int sweep_mpi_init(int *rank, int *size, AlError *err) {
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS) return al_fail(err, 1, "sweep: MPI_Init failed");
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    return 0;
}

int sweep_mpi_share(int v) {
    MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return v;
}

void sweep_mpi_barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }
void sweep_mpi_finalize(void) { MPI_Finalize(); }

/* ---- rank 0: the queue, for its own workers and on request for the others ----------- */

static long root_take(CellSource *src) {
    SweepMpiState *m = src->state;
    return m->queue->next < m->queue->n ? m->queue->cells[m->queue->next++] : -1;
}

static void root_finished(CellSource *src, long cell, int exit_code, double seconds) {
    sweep_report_cell(src->run, src->tally, cell, exit_code, seconds);
}

/* Answers every message waiting; never blocks.  After a signal no cell is handed out. */
static int root_serve(CellSource *src) {
    SweepMpiState *m = src->state;
    int did = 0;
    for (;;) {
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        if (!flag) return did;
        did = 1;
        long long msg[3];
        MPI_Recv(msg, 3, MPI_LONG_LONG, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (st.MPI_TAG == TAG_REPORT) {
            m->outstanding--;
            sweep_report_cell(src->run, src->tally, (long)msg[0], (int)msg[1], (double)msg[2] / 1000);
            continue;
        }
        long long cell = sweep_signal() ? -1 : root_take(src);
        if (cell < 0) m->stops_sent++;
        else m->outstanding++;
        MPI_Send(&cell, 1, MPI_LONG_LONG, st.MPI_SOURCE, TAG_ASSIGN, MPI_COMM_WORLD);
    }
}

/* Busy until every other rank has been told "no more" and reported all its cells. */
static int root_others_busy(CellSource *src) {
    SweepMpiState *m = src->state;
    return m->outstanding > 0 || m->stops_sent < m->size - 1;
}

/* ---- the other ranks: ask, run, report -------------------------------------------------- */

static long rank_take(CellSource *src) {
    (void)src;
    long long msg[3] = { 0, 0, 0 }, cell = -1;
    MPI_Send(msg, 3, MPI_LONG_LONG, 0, TAG_REQUEST, MPI_COMM_WORLD);
    MPI_Recv(&cell, 1, MPI_LONG_LONG, 0, TAG_ASSIGN, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return (long)cell;
}

static void rank_finished(CellSource *src, long cell, int exit_code, double seconds) {
    (void)src;
    long long msg[3] = { cell, exit_code, (long long)(seconds * 1000) };
    MPI_Send(msg, 3, MPI_LONG_LONG, 0, TAG_REPORT, MPI_COMM_WORLD);
}

CellSource sweep_mpi_source(const SweepRun *run, SweepMpiState *m, SweepTally *tally) {
    if (m->rank == 0)
        return (CellSource){ .take = root_take, .finished = root_finished, .serve = root_serve,
                             .others_busy = root_others_busy, .run = run, .tally = tally, .state = m };
    return (CellSource){ .take = rank_take, .finished = rank_finished, .run = run, .tally = tally, .state = m };
}
