/* runner.c — see runner.h. */
#include "attnlab/sweep/runner.h"
#include "attnlab/sweep/cell.h"
#include "attnlab/train/progress.h"
#include "attnlab/util/fsutil.h"
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t g_signal;
static void on_signal(int sig) { g_signal = sig; }
int sweep_signal(void) { return g_signal; }

void sweep_cell_dir(const SweepRun *run, long cell, char *out, size_t n) {
    char name[SWEEP_NAME_MAX];
    sweep_cell_name(run->spec, cell, name, sizeof name);
    AL_ASSERT(!al_path_fmt(out, n, NULL, "%s/cells/%s", run->out_dir, name));   /* the sweep folder was checked */
}

void sweep_base_path(const char *out_dir, char *out, size_t n) {
    AL_ASSERT(!al_path_fmt(out, n, NULL, "%s/base_config.json", out_dir));
}

/* ---- one worker ------------------------------------------------------------------------ */

typedef struct Worker { pid_t pid; long cell; double t0; } Worker;

/* The worker's argv: exe base --set … --out DIR [--resume] (strings malloc'ed). */
static int worker_argv(const SweepRun *run, long cell, const char *dir, int resume, char **argv) {
    char base[AL_PATH_MAX];
    sweep_base_path(run->out_dir, base, sizeof base);
    int n = 0;
    argv[n++] = strdup(run->exe);
    argv[n++] = strdup(base);
    char *sets[SWEEP_MAX_AXES + 1];
    int n_sets = sweep_cell_sets(run->spec, cell, sets);
    for (int i = 0; i < n_sets; i++) {
        argv[n++] = strdup("--set");
        argv[n++] = sets[i];
    }
    argv[n++] = strdup("--out");
    argv[n++] = strdup(dir);
    if (resume) argv[n++] = strdup("--resume");
    argv[n] = NULL;
    return n;
}

static void child_exec(int log, char **argv) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    close(log);
    setenv("ATTNLAB_THREADS", "1", 1);
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    /* The running binary itself, even if build/attnlab was rebuilt or removed meanwhile
     * (argv[0] keeps its name for the log and ps). */
    execv("/proc/self/exe", argv);
    fprintf(stderr, "attnlab sweep: cannot run '%s': %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Starts cell's worker; returns its pid, or −1 (the reason is in the cell's log or
 * printed).  The folder is judged again here: a checkpoint means --resume. */
static pid_t worker_start(const SweepRun *run, long cell) {
    char dir[AL_PATH_MAX], log_path[AL_PATH_MAX], why[512] = "";
    sweep_cell_dir(run, cell, dir, sizeof dir);
    AL_ASSERT(!al_path_fmt(log_path, sizeof log_path, NULL, "%s/%s", dir, CELL_LOG));
    AlError err = {0};
    Config expect;
    if (al_mkdir_p(dir, &err) || sweep_cell_config(run->spec, run->base, cell, &expect, &err)) {
        fprintf(stderr, "attnlab sweep: %s\n", err.msg);
        return -1;
    }
    CellState state = cell_inspect(dir, &expect, why, sizeof why);
    int log = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (log < 0) {
        fprintf(stderr, "attnlab sweep: cannot write '%s': %s\n", log_path, strerror(errno));
        return -1;
    }
    if (state == CELL_CONFLICT) {   /* planned cells are checked first; only a race gets here */
        dprintf(log, "attnlab sweep: %s %s; not run\n", dir, why);
        close(log);
        return -1;
    }
    char *argv[2 * SWEEP_MAX_AXES + 12];
    int argc = worker_argv(run, cell, dir, state == CELL_RESUME, argv);
    if (run->rank >= 0) dprintf(log, "==== attnlab sweep (MPI rank %d):", run->rank);
    else dprintf(log, "==== attnlab sweep:");
    for (int i = 0; i < argc; i++) dprintf(log, " %s", argv[i]);
    dprintf(log, "\n");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) child_exec(log, argv);
    if (pid < 0) dprintf(log, "attnlab sweep: fork failed: %s\n", strerror(errno));
    close(log);
    for (int i = 0; i < argc; i++) free(argv[i]);
    return pid;
}

static int exit_code_of(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
}

/* ---- progress ---------------------------------------------------------------------------- */

/* Only done cells time the ETA: a failed cell often dies in its first second, a
 * stopped one was cut short.  Cells still running count as not finished, so with
 * W workers the estimate is the throughput of W cells at a time. */
double sweep_eta_s(const SweepTally *t, int jobs) {
    int workers = t->workers > 0 ? t->workers : jobs > 0 ? jobs : 1;
    int left = t->total - t->done - t->failed - t->stopped;
    if (t->done == 0) return left > 0 ? -1 : 0;
    return t->done_seconds / t->done * left / workers;
}

void sweep_report_cell(const SweepRun *run, SweepTally *t, long cell, int exit_code, double seconds) {
    char name[SWEEP_NAME_MAX], dir[AL_PATH_MAX], what[96] = "", eta[32];
    sweep_cell_name(run->spec, cell, name, sizeof name);
    sweep_cell_dir(run, cell, dir, sizeof dir);
    int stopped = exit_code == 130 || exit_code == 143;
    if (exit_code == 0) t->done++, t->done_seconds += seconds;
    else if (stopped) t->stopped++;
    else t->failed++;
    int k = t->done + t->failed + t->stopped;
    progress_format_eta(eta, sizeof eta, sweep_eta_s(t, run->jobs));
    if (exit_code && !stopped) {
        fprintf(stderr, "[%d/%d] FAILED  %s  (exit %d; log %s/%s) | ETA %s\n", k, t->total, name, exit_code, dir,
                CELL_LOG, eta);
        return;
    }
    if (run->quiet) return;
    CellResult r;
    if (exit_code == 0 && !cell_read_result(dir, &r) && isfinite(r.metric[run->spec->metric]))
        snprintf(what, sizeof what, "%s %.4f  ", sweep_metric_names[run->spec->metric], r.metric[run->spec->metric]);
    if (stopped) printf("[%d/%d] stopped (resumes on the next run)  %s  %.1fs\n", k, t->total, name, seconds);
    else printf("[%d/%d] done  %s  %s%.1fs | ETA %s\n", k, t->total, name, what, seconds, eta);
    fflush(stdout);
}

static long queue_take(CellSource *src) {
    CellQueue *q = src->state;
    return q->next < q->n ? q->cells[q->next++] : -1;
}

static void queue_finished(CellSource *src, long cell, int exit_code, double seconds) {
    sweep_report_cell(src->run, src->tally, cell, exit_code, seconds);
}

CellSource sweep_queue_source(const SweepRun *run, CellQueue *q, SweepTally *tally) {
    return (CellSource){ .take = queue_take, .finished = queue_finished, .run = run, .tally = tally, .state = q };
}

/* ---- the scheduler ----------------------------------------------------------------------- */

static void nap(void) {
    struct timespec ts = { 0, 20 * 1000 * 1000 };
    nanosleep(&ts, NULL);
}

/* A cell's sitting ended: record its exit code in its folder and tell the source. */
static void cell_ended(CellSource *src, long cell, int code, double t0) {
    AlError err = {0};
    char dir[AL_PATH_MAX];
    sweep_cell_dir(src->run, cell, dir, sizeof dir);
    if (sweep_exists(dir) && cell_record_exit(dir, code, &err)) fprintf(stderr, "attnlab sweep: %s\n", err.msg);
    src->finished(src, cell, code, progress_now() - t0);
}

int sweep_run_cells(CellSource *src) {
    const SweepRun *run = src->run;
    Worker *workers = al_calloc((size_t)run->jobs, sizeof *workers);
    int running = 0, exhausted = 0, forwarded = 0;
    struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;   /* no SA_RESTART: wake waitpid */
    sigemptyset(&sa.sa_mask);
    g_signal = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    for (;;) {
        if (g_signal && !forwarded) {
            for (int i = 0; i < run->jobs; i++)
                if (workers[i].pid > 0) kill(workers[i].pid, g_signal);
            forwarded = 1;
        }
        for (int i = 0; i < run->jobs && !g_signal && !exhausted; i++) {
            if (workers[i].pid > 0) continue;
            long cell = src->take(src);
            if (cell < 0) {
                exhausted = 1;
                break;
            }
            double t0 = progress_now();
            pid_t pid = worker_start(run, cell);
            if (pid < 0) {
                cell_ended(src, cell, 127, t0);
                continue;
            }
            workers[i] = (Worker){ pid, cell, t0 };
            running++;
        }
        int served = src->serve ? src->serve(src) : 0;
        int others = !g_signal && src->others_busy && src->others_busy(src);
        if (running == 0 && (exhausted || g_signal) && !others) break;
        if (running == 0) {
            if (!served) nap();
            continue;
        }
        int status;
        pid_t pid = waitpid(-1, &status, src->serve ? WNOHANG : 0);
        for (int i = 0; pid > 0 && i < run->jobs; i++)
            if (workers[i].pid == pid) {
                workers[i].pid = 0;
                running--;
                cell_ended(src, workers[i].cell, exit_code_of(status), workers[i].t0);
            }
        if (pid == 0 && !served) nap();
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    free(workers);
    return g_signal ? 128 + g_signal : 0;
}
