/* test_progress.c — progress off a terminal (issue 15, item 15): stdout is a file
 * here, as under Slurm or nohup.  Through the library and the real binary
 * ($ATTNLAB_BIN), with ATTNLAB_PROGRESS_INTERVAL_S=0 standing in for the 60 s:
 *   - progress.c: status lines "step S/T (P%) | X steps/s | ETA hh:mm:ss | loss …"
 *     between evaluations, evaluation lines ending in "| S/T (P%) | … | ETA …",
 *     none with a long interval or --quiet; the ETA format;
 *   - training: a run's log has the status lines; --quiet has none;
 *   - a sweep's "[k/N] done" lines carry an ETA;
 *   - ./train distill prints the grid's size (cells x draws = evaluations) and an
 *     estimated time before it starts, and progress lines while it runs — seen in
 *     the file while the process is still running, so they were flushed (a job
 *     killed at its time limit keeps them). */
#include "check.h"
#include "testutil.h"
#include "sweep_fixture.h"
#include "attnlab/train/progress.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *bin;
static char tmp[256];

static int contains(const char *text, const char *what) { return text && strstr(text, what); }

static int count(const char *text, const char *what) {
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, what)); p++) n++;
    return n;
}

/* ---- progress.c itself, stdout pointed at a file ----------------------------------- */

/* Runs steps 1..10 of a 10-step run with an evaluation at step 5, stdout into a
 * file; returns what was printed. */
static char *capture_run(const char *interval, int quiet) {
    char path[300];
    snprintf(path, sizeof path, "%s/capture.txt", tmp);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    close(fd);
    setenv("ATTNLAB_PROGRESS_INTERVAL_S", interval, 1);
    Progress p;
    progress_init(&p, quiet);
    for (long s = 1; s <= 10; s++) {
        ProgressInfo in = { s, 10, 0.5, s > 5 ? 0.75 : -1, 0.01f, 100 };
        if (s == 5) progress_eval(&p, s, "step %6ld | test loss 0.25", s);
        progress_step(&p, &in);
    }
    progress_line(&p, "a note");
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    unsetenv("ATTNLAB_PROGRESS_INTERVAL_S");
    return tu_read_file(path, NULL);
}

static void test_progress_lines(void) {
    char *t = capture_run("0", 0);
    CHECK(contains(t, "step 1/10 (10%) | 100 steps/s | ETA "), "no status line for step 1:\n%s", t ? t : "");
    CHECK(contains(t, "step 7/10 (70%) | ") && contains(t, "| loss 0.5000 | test acc 75.00% | lr 1.00e-02\n"),
          "status line of step 7:\n%s", t ? t : "");
    CHECK(count(t, "| loss 0.5000 |") == 10 && count(t, " steps/s | ETA ") == 11,
          "want 10 status lines and one evaluation line, each with steps/s and ETA:\n%s", t ? t : "");
    CHECK(contains(t, "step      5 | test loss 0.25 | 5/10 (50%) | 100 steps/s | ETA "),
          "the evaluation line lacks step/total and ETA:\n%s", t ? t : "");
    CHECK(!strchr(t ? t : "", '\r') && contains(t, "\na note\n"), "terminal codes or no note off a terminal");
    free(t);

    t = capture_run("3600", 0);   /* evaluations only, and the note */
    CHECK(t && count(t, "step ") == 1 && contains(t, "ETA") && contains(t, "a note"), "interval 3600:\n%s", t ? t : "");
    free(t);
    t = capture_run("0", 1);
    CHECK(t && !*t, "--quiet printed:\n%s", t ? t : "");
    free(t);

    char eta[32];
    progress_format_eta(eta, sizeof eta, 3725.4);
    CHECK(!strcmp(eta, "01:02:05"), "ETA of 3725 s: %s", eta);
    progress_format_eta(eta, sizeof eta, 400000);
    CHECK(!strcmp(eta, "111:06:40"), "ETA of 400000 s: %s", eta);
    progress_format_eta(eta, sizeof eta, -1);
    CHECK(!strcmp(eta, "?"), "unknown ETA: %s", eta);
    setenv("ATTNLAB_PROGRESS_INTERVAL_S", "soon", 1);
    CHECK(progress_interval_s() == 60, "a bad interval is not the default 60 s");
    unsetenv("ATTNLAB_PROGRESS_INTERVAL_S");
    CHECK(progress_interval_s() == 60, "the default interval is not 60 s");
}

/* ---- the binary ------------------------------------------------------------------------ */

static int run_bin(const char *const *args, const char *log) {
    const char *argv[24];
    int n = 0;
    argv[n++] = bin;
    for (int i = 0; args[i] && n < 23; i++) argv[n++] = args[i];
    argv[n] = NULL;
    return tu_wait(tu_spawn(argv, log));
}

static char cfg[300], sweep_cfg[300];

static void test_training_log(void) {
    char out[300], log[300];
    snprintf(out, sizeof out, "%s/run", tmp);
    snprintf(log, sizeof log, "%s/run.txt", tmp);
    setenv("ATTNLAB_PROGRESS_INTERVAL_S", "0", 1);
    int rc = run_bin((const char *const[]){ cfg, "--out", out, NULL }, log);
    char *t = tu_read_file(log, NULL);
    CHECK(rc == 0, "training failed (exit %d):\n%s", rc, t ? t : "");
    CHECK(contains(t, "\nstep 1/40 (2%) | ") && contains(t, "\nstep 39/40 (97%) | "),
          "no status line per step with the interval 0:\n%s", t ? t : "");
    CHECK(count(t, " steps/s | ETA ") >= 39, "status lines without steps/s and ETA:\n%s", t ? t : "");
    free(t);
    snprintf(out, sizeof out, "%s/quiet", tmp);
    rc = run_bin((const char *const[]){ cfg, "--out", out, "--quiet", NULL }, log);
    t = tu_read_file(log, NULL);
    CHECK(rc == 0 && !contains(t, "ETA"), "--quiet printed progress:\n%s", t ? t : "");
    free(t);
    unsetenv("ATTNLAB_PROGRESS_INTERVAL_S");
}

static void test_sweep_eta(void) {
    char out[300], log[300];
    snprintf(out, sizeof out, "%s/sweep", tmp);
    snprintf(log, sizeof log, "%s/sweep.txt", tmp);
    int rc = run_bin((const char *const[]){ "sweep", sweep_cfg, "--out", out, "--jobs", "2", "--set", "train.steps=4",
                                            "--set", "eval.every=2", NULL }, log);
    char *t = tu_read_file(log, NULL);
    CHECK(rc == 0, "sweep failed (exit %d):\n%s", rc, t ? t : "");
    CHECK(contains(t, "[1/8] done") && contains(t, "[8/8] done"), "no per-cell lines:\n%s", t ? t : "");
    CHECK(count(t, "] done ") == 8 && count(t, "s | ETA ") == 8, "a done line without an ETA:\n%s", t ? t : "");
    CHECK(contains(t, "s | ETA 00:00:00\n"), "the last cell's ETA is not 00:00:00:\n%s", t ? t : "");
    free(t);
}

/* Starts a long two-layer distillation with stdout in a file and waits, up to a
 * minute, for the size, estimate and progress lines to appear while it still runs. */
static void test_distill_lines(void) {
    char out[300], log[300];
    snprintf(out, sizeof out, "%s/d", tmp);
    snprintf(log, sizeof log, "%s/distill.txt", tmp);
    CHECK(run_bin((const char *const[]){ cfg, "--out", out, "--quiet", "--set", "model.n_layers=2", NULL }, log) == 0,
          "training the distillation's model failed");
    setenv("ATTNLAB_PROGRESS_INTERVAL_S", "0", 1);
    const char *argv[] = { bin, "distill", out, "--set", "distill.tables=1..64;1..64", "--set", "distill.funcs=1..8;1..8",
                           "--set", "distill.runs=3", NULL };
    pid_t pid = tu_spawn(argv, log);
    unsetenv("ATTNLAB_PROGRESS_INTERVAL_S");
    int running = 0, seen = 0;
    char *t = NULL;
    for (int i = 0; i < 1200 && !seen; i++) {
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        free(t);
        t = tu_read_file(log, NULL);
        seen = contains(t, "cells (") != 0;
        running = waitpid(pid, NULL, WNOHANG) == 0;
        if (!running) break;
    }
    CHECK(seen && running, "within a minute, %s:\n%s", running ? "no progress line in the file" : "distill ended",
          t ? t : "(nothing)");
    CHECK(contains(t, "grid of 262144 cells x 3 draws = 786432 evaluations of "), "no grid size line:\n%s", t ? t : "");
    CHECK(contains(t, "\ndistill: estimated ") && contains(t, " for the grid (one draw of the first cell took "),
          "no estimate before the grid:\n%s", t ? t : "");
    CHECK(contains(t, "/262144 cells (0%) | ") && contains(t, " evaluations/s | ETA "), "progress line:\n%s", t ? t : "");
    free(t);
    if (running) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    /* --quiet: nothing at all (the final line of a finished grid included).  The
     * killed grid left its journal, which a new grid would not replace: removed. */
    char journal[320];
    snprintf(journal, sizeof journal, "%s/anna_grid.journal", out);
    CHECK(unlink(journal) == 0, "the killed grid left no %s", journal);
    int rc = run_bin((const char *const[]){ "distill", out, "--set", "distill.tables=1..2", "--set", "distill.funcs=1",
                                            "--set", "distill.runs=1", "--quiet", NULL }, log);
    t = tu_read_file(log, NULL);
    CHECK(rc == 0 && t && !*t, "quiet distill (exit %d) printed:\n%s", rc, t ? t : "");
    free(t);
}

int main(void) {
    bin = getenv("ATTNLAB_BIN");
    if (!bin) {
        fprintf(stderr, "test_progress: set ATTNLAB_BIN to the attnlab binary (ctest does)\n");
        return 1;
    }
    snprintf(tmp, sizeof tmp, "/tmp/attnlab_progress_XXXXXX");
    if (!mkdtemp(tmp)) return 1;
    snprintf(cfg, sizeof cfg, "%s/c.json", tmp);
    snprintf(sweep_cfg, sizeof sweep_cfg, "%s/sweep.json", tmp);
    CHECK(tu_write_file(sweep_cfg, CONFIG) == 0, "cannot write %s", sweep_cfg);
    CHECK(tu_write_file(cfg, "{ \"task\": {\"type\": \"match2\", \"seq_len\": 16, \"modulus\": 13, \"train_size\": 200},\n"
                             "  \"model\": {\"d_model\": 16, \"attention\": {\"score\": \"unit_norm\"}},\n"
                             "  \"train\": {\"steps\": 40},\n  \"eval\": {\"every\": 20, \"test_size\": 32} }\n") == 0,
          "cannot write %s", cfg);
    test_progress_lines();
    test_training_log();
    test_sweep_eta();
    test_distill_lines();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmp);
    return check_exit("test_progress");
}
