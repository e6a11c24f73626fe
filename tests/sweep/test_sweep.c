/* test_sweep.c — `./train sweep` end to end, through the real binary ($ATTNLAB_BIN),
 * on a 2 x 2 grid (softmax / linear attention x d_model 8 / 16, two seeds) of tiny
 * index-lookup runs:
 *   - grid.csv and grid.json hold, per point, the mean and sample std over seeds of
 *     the cells' summary.json figures (recomputed here), params and FLOPs;
 *   - --jobs 1 and --jobs 2 give the same files, byte for byte;
 *   - resume: a finished cell is not touched (mtimes), unfinished ones continue
 *     from their checkpoints, and the grid equals the uninterrupted one;
 *   - --shard 0/2 + --shard 1/2, then --merge, gives the unsharded grid;
 *   - --only runs the cells it keeps, bit-identical to the whole sweep's, and the
 *     whole sweep then runs only the rest;
 *   - --seeds replaces sweep.seeds: added seeds run into a finished folder, bit-identical
 *     to a sweep of those seeds alone, and a list that drops a seed with runs is refused;
 *   - a failing cell is recorded (exit code, log) and retried on the next run;
 *   - a task with test-row groups (Dyck) gets per-group columns and groups.svg;
 *   - SIGTERM reaches the workers, which checkpoint; the sweep exits 143;
 *   - command-line and folder errors, each naming what is wrong. */
#include "check.h"
#include "testutil.h"
#include "sweep_fixture.h"

#include <cJSON.h>

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

static const char *bin;
static char tmp[256], cfg[300], out_text[300];


/* ---- helpers ----------------------------------------------------------------------------- */

/* Runs `bin ARGS…` (NULL-terminated), stdout+stderr to out_text. */
static pid_t start(const char *const *args) {
    const char *argv[32];
    int n = 0;
    argv[n++] = bin;
    for (int i = 0; args[i] && n < 31; i++) argv[n++] = args[i];
    argv[n] = NULL;
    return tu_spawn(argv, out_text);
}

static int finish(pid_t pid) { return tu_wait(pid); }

#define RUN(...) finish(start((const char *const[]){ __VA_ARGS__, NULL }))

static char *output(void) { return tu_read_file(out_text, NULL); }

static const char *in(const char *dir, const char *file) { return tu_path(dir, file); }

static char *read_in(const char *dir, const char *file) { return tu_read_file(in(dir, file), NULL); }

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static long mtime_ns(const char *path) {
    struct stat st;
    return stat(path, &st) ? -1 : (long)st.st_mtim.tv_sec * 1000000000L + st.st_mtim.tv_nsec;
}

static void expect_output(int line, const char *what) {
    char *o = output();
    CHECK(o && strstr(o, what), "line %d: output lacks '%s':\n%s", line, what, o ? o : "(none)");
    free(o);
}
#define EXPECT_OUTPUT(what) expect_output(__LINE__, what)

/* Splits one CSV line into fields (quotes handled); returns the count. */
static int csv_fields(const char *line, char fields[][256], int max) {
    int n = 0;
    const char *p = line;
    while (n < max) {
        size_t len = 0;
        if (*p == '"') {
            for (p++; *p && !(*p == '"' && p[1] != '"'); p++) {
                if (*p == '"') p++;
                if (len < 255) fields[n][len++] = *p;
            }
            if (*p == '"') p++;
        } else {
            for (; *p && *p != ',' && *p != '\n'; p++)
                if (len < 255) fields[n][len++] = *p;
        }
        fields[n++][len] = 0;
        if (*p != ',') break;
        p++;
    }
    return n;
}

static double summary_number(const char *dir, const char *key) {
    char *text = read_in(dir, "summary.json");
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    cJSON_Delete(j);
    free(text);
    return x;
}

/* ---- the grid against the cells ------------------------------------------------------------ */

static void check_grid(const char *out) {
    char *csv = read_in(out, "grid.csv");
    CHECK(csv != NULL, "no %s/grid.csv", out);
    if (!csv) return;
    char f[20][256];
    const char *header = "model.attention.type,model.d_model,seeds_done,seeds_failed,seeds_pending,token_acc_mean,"
                         "token_acc_std,seq_acc_mean,seq_acc_std,n_params,flops_per_seq,failures\n";
    CHECK(!strncmp(csv, header, strlen(header)), "grid.csv header:\n%s", csv);
    const char *archs[2] = { "softmax", "linear" }, *widths[2] = { "8", "16" };
    const char *line = strchr(csv, '\n') + 1;
    int rows = 0;
    for (int a = 0; a < 2; a++)
        for (int w = 0; w < 2; w++, rows++) {
            int n = csv_fields(line, f, 20);
            CHECK(n == 12 && !strcmp(f[0], archs[a]) && !strcmp(f[1], widths[w]), "row %d: %s,%s,... (%d fields)",
                  rows, f[0], f[1], n);
            CHECK(!strcmp(f[2], "2") && !strcmp(f[3], "0") && !strcmp(f[4], "0") && !f[11][0], "row %d counts", rows);
            const char *keys[2] = { "test_token_acc", "test_seq_acc" };
            for (int m = 0; m < 2; m++) {
                double x[2];
                for (int s = 0; s < 2; s++) {
                    char dir[512];
                    snprintf(dir, sizeof dir, "%s/cells/attention.type=%s,d_model=%s,seed=%d", out, archs[a],
                             widths[w], s + 1);
                    x[s] = summary_number(dir, keys[m]);
                    if (m == 0) {
                        CHECK(summary_number(dir, "n_params") == atof(f[9]), "row %d n_params", rows);
                        CHECK(summary_number(dir, "flops_per_seq") == atof(f[10]), "row %d flops", rows);
                    }
                }
                double mean = (x[0] + x[1]) / 2, sd = fabs(x[0] - x[1]) / sqrt(2.0);   /* sample std of two */
                CHECK_NEAR(atof(f[5 + 2 * m]), mean, 1e-12, "mean");
                CHECK_NEAR(atof(f[6 + 2 * m]), sd, 1e-12, "std");
            }
            line = strchr(line, '\n') + 1;
        }
    CHECK(*line == 0, "grid.csv has more than 4 rows");
    free(csv);

    char *json_text = read_in(out, "grid.json");
    cJSON *j = json_text ? cJSON_Parse(json_text) : NULL;
    const cJSON *cells = cJSON_GetObjectItemCaseSensitive(j, "cells"), *rowsj = cJSON_GetObjectItemCaseSensitive(j, "rows");
    CHECK(cJSON_GetObjectItemCaseSensitive(cells, "total")->valuedouble == 8 &&
          cJSON_GetObjectItemCaseSensitive(cells, "done")->valuedouble == 8, "grid.json cell counts");
    CHECK(cJSON_GetArraySize(rowsj) == 4, "grid.json rows");
    const cJSON *r3 = cJSON_GetArrayItem(rowsj, 3), *c1 = cJSON_GetArrayItem(cJSON_GetObjectItem(r3, "cells"), 1);
    CHECK(!strcmp(cJSON_GetObjectItem(c1, "status")->valuestring, "done") &&
          !strcmp(cJSON_GetObjectItem(c1, "dir")->valuestring, "cells/attention.type=linear,d_model=16,seed=2"),
          "grid.json cell entry");
    CHECK(!strcmp(cJSON_GetObjectItem(j, "metric")->valuestring, "seq_acc"), "primary metric");
    cJSON_Delete(j);
    free(json_text);
    CHECK(exists(in(out, "heatmap.svg")) && exists(in(out, "summary.md")) && exists(in(out, "summary.csv")),
          "figures and summary table");
    char *svg = read_in(out, "heatmap.svg");
    CHECK(svg && strstr(svg, ">softmax<") && strstr(svg, ">linear<"), "heatmap rows are the architectures");
    free(svg);
}

static void same_grid(const char *a, const char *b) {
    const char *files[] = { "grid.csv", "grid.json", "heatmap.svg", "summary.csv", "summary.md" };
    for (int i = 0; i < 5; i++)
        CHECK(tu_same_text(in(a, files[i]), in(b, files[i])), "%s/%s differs from %s's", b, files[i], a);
}

/* ---- the tests ----------------------------------------------------------------------------- */

static char A[300], B[300];

static void test_grid_and_jobs(void) {
    snprintf(A, sizeof A, "%s/a", tmp);
    snprintf(B, sizeof B, "%s/b", tmp);
    CHECK(RUN("sweep", cfg, "--out", A, "--jobs", "1") == 0, "sweep --jobs 1 failed");
    EXPECT_OUTPUT("sweep: 8 cells (4 points x 2 seeds): 0 finished, 0 to resume, 8 to start; 1 worker");
    EXPECT_OUTPUT("[8/8] done");
    check_grid(A);
    CHECK(RUN("sweep", cfg, "--out", B, "--jobs", "2", "--quiet") == 0, "sweep --jobs 2 failed");
    same_grid(A, B);
    /* Each cell is a normal run folder; its log starts with the worker's command. */
    char *log = read_in(A, "cells/attention.type=linear,d_model=16,seed=2/train.log");
    CHECK(log && strstr(log, "--set model.attention.type=\"linear\" --set model.d_model=16 --set seed=2 --out"),
          "train.log header:\n%s", log ? log : "(none)");
    free(log);
    CHECK(exists(in(A, "cells/attention.type=linear,d_model=16,seed=2/model.safetensors")), "model.safetensors");
}

static void test_resume(void) {
    char C[300], cell[512], other[512], cmd[2048], *log;
    snprintf(C, sizeof C, "%s/c", tmp);
    /* Every cell 20 of 40 steps in, with a checkpoint; then one finished cell copied in. */
    CHECK(RUN("sweep", cfg, "--out", C, "--set", "train.steps=20", "--quiet") == 0, "20-step sweep failed");
    snprintf(cell, sizeof cell, "%s/cells/attention.type=softmax,d_model=8,seed=1", C);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s/cells/attention.type=softmax,d_model=8,seed=1' '%s'", cell, A, cell);
    CHECK(system(cmd) == 0, "%s", cmd);
    const char *files[] = { "summary.json", "config.json", "model.safetensors", "train.log", "metrics.jsonl" };
    struct utimbuf old = { 1000000000, 1000000000 };
    for (int i = 0; i < 5; i++) utime(in(cell, files[i]), &old);
    /* One cell's checkpoint lost (a new machine keeps only what git tracks): it starts
     * again from step 0, saying so, and ends as the uninterrupted run did. */
    char lost[512];
    snprintf(lost, sizeof lost, "%s/cells/attention.type=softmax,d_model=16,seed=2", C);
    snprintf(cmd, sizeof cmd, "cd '%s' && rm summary.json model.safetensors train_state.safetensors", lost);
    CHECK(system(cmd) == 0, "%s", cmd);
    CHECK(RUN("sweep", cfg, "--out", C, "--jobs", "2") == 0, "resumed sweep failed");
    EXPECT_OUTPUT("8 cells (4 points x 2 seeds): 1 finished, 6 to resume, 1 to start");
    EXPECT_OUTPUT("softmax,d_model=16,seed=2/metrics.jsonl reaches step 20 but no train_state.safetensors is "
                  "left to continue it: the run starts again from step 0");
    log = read_in(lost, "train.log");
    CHECK(log && strstr(log, "\nattnlab: ") && strstr(log, "seed=2/metrics.jsonl reaches step 20 but"),
          "the restart is not in the cell's log:\n%s", log ? log : "(none)");
    free(log);
    for (int i = 0; i < 5; i++) CHECK(mtime_ns(in(cell, files[i])) == 1000000000L * 1000000000L, "%s was rewritten", files[i]);
    snprintf(other, sizeof other, "%s/cells/attention.type=linear,d_model=8,seed=2", C);
    log = read_in(other, "train.log");
    CHECK(log && strstr(log, "--resume"), "an unfinished cell did not continue with --resume");
    free(log);
    same_grid(A, C);   /* --resume is bit-exact, so the grid is the uninterrupted one */
    /* A finished sweep is not run again: only the grid is rewritten. */
    long before = mtime_ns(in(other, "summary.json"));
    CHECK(RUN("sweep", cfg, "--out", C) == 0, "re-run of a finished sweep failed");
    EXPECT_OUTPUT("8 finished, 0 to resume, 0 to start");
    CHECK(mtime_ns(in(other, "summary.json")) == before, "a finished cell ran again");
    /* Nor with another thread count: how the cells were computed, not what they are. */
    CHECK(RUN("sweep", cfg, "--out", C, "--set", "train.threads=1") == 0, "re-run with train.threads=1 failed");
    EXPECT_OUTPUT("8 finished, 0 to resume, 0 to start");
    CHECK(mtime_ns(in(other, "summary.json")) == before, "a finished cell ran again with another thread count");
    same_grid(A, C);
}

static void test_shards(void) {
    char S0[300], S1[300], M[300];
    snprintf(S0, sizeof S0, "%s/s0", tmp);
    snprintf(S1, sizeof S1, "%s/s1", tmp);
    snprintf(M, sizeof M, "%s/m", tmp);
    CHECK(RUN("sweep", cfg, "--out", S0, "--shard", "0/2") == 0, "shard 0/2 failed");
    EXPECT_OUTPUT("shard 0/2: 4 cells done, 0 failed");
    CHECK(RUN("sweep", cfg, "--out", S1, "--shard", "1/2", "--quiet") == 0, "shard 1/2 failed");
    CHECK(!exists(in(S0, "grid.csv")), "a shard wrote a grid");
    /* Shard 0 runs the even cells: seed 1 of every point. */
    CHECK(exists(in(S0, "cells/attention.type=linear,d_model=8,seed=1/summary.json")) &&
          !exists(in(S0, "cells/attention.type=linear,d_model=8,seed=2")), "shard 0's cells");
    CHECK(RUN("sweep", "--merge", S0, S1, "--out", M) == 0, "merge into a new folder failed");
    same_grid(A, M);
    CHECK(RUN("sweep", "--merge", S0, S1) == 0, "merge into the first folder failed");
    same_grid(A, S0);
    /* The merged folder is a complete sweep: running it starts nothing. */
    CHECK(RUN("sweep", cfg, "--out", M) == 0, "sweep over a merged folder failed");
    EXPECT_OUTPUT("8 finished, 0 to resume, 0 to start");
}

/* --only runs the cells it keeps, each as the whole sweep would; the rest wait. */
static void test_only(void) {
    char O[300], cell[512];
    snprintf(O, sizeof O, "%s/o", tmp);
    CHECK(RUN("sweep", cfg, "--out", O, "--only", "model.attention.type=linear", "--only", "model.d_model=16") == 0,
          "sweep --only failed");
    EXPECT_OUTPUT("sweep: 8 cells (4 points x 2 seeds), 2 kept by --only: 0 finished, 0 to resume, 2 to start");
    EXPECT_OUTPUT("sweep: 2 of 8 cells done, 0 failed, 6 pending");
    for (int seed = 1; seed <= 2; seed++) {   /* the final loss to the last bit */
        char a[1024], o[1024];
        snprintf(cell, sizeof cell, "cells/attention.type=linear,d_model=16,seed=%d", seed);
        snprintf(a, sizeof a, "%s/%s", A, cell);
        snprintf(o, sizeof o, "%s/%s", O, cell);
        CHECK(summary_number(a, "test_loss") == summary_number(o, "test_loss"),
              "--only: %s ended otherwise than in the whole sweep", cell);
    }
    CHECK(!exists(in(O, "cells/attention.type=softmax,d_model=16,seed=1")) &&
          !exists(in(O, "cells/attention.type=linear,d_model=8,seed=1")), "--only ran a cell it does not keep");
    /* Values of one axis are alternatives; a number may be spelled another way. */
    CHECK(RUN("sweep", cfg, "--out", O, "--only", "model.d_model=8.0", "--only", "model.d_model=16",
              "--only", "model.attention.type=linear", "--quiet") == 0, "sweep --only with two values failed");
    CHECK(exists(in(O, "cells/attention.type=linear,d_model=8,seed=2/summary.json")) &&
          !exists(in(O, "cells/attention.type=softmax,d_model=8,seed=1")), "--only with two values of one axis");
    CHECK(RUN("sweep", cfg, "--out", O) == 0, "the whole sweep after --only failed");
    EXPECT_OUTPUT("8 cells (4 points x 2 seeds): 4 finished, 0 to resume, 4 to start");
    same_grid(A, O);
    /* A cell --only leaves out is still checked before anything starts: the grid
     * written at the end reads it. */
    char P[300], cmd[1024];
    snprintf(P, sizeof P, "%s/p", tmp);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/cells/attention.type=softmax,d_model=8,seed=1' && echo '{' > "
             "'%s/cells/attention.type=softmax,d_model=8,seed=1/config.json'", P, P);
    CHECK(system(cmd) == 0, "%s", cmd);
    CHECK(RUN("sweep", cfg, "--out", P, "--only", "model.attention.type=linear") == 2,
          "--only started cells beside a cell folder holding no valid config");
    EXPECT_OUTPUT("attention.type=softmax,d_model=8,seed=1 has a config.json that is not a valid config");
    CHECK(!exists(in(P, "cells/attention.type=linear,d_model=8,seed=1")), "a kept cell started before the check");
}

/* --seeds replaces sweep.seeds.  A finished folder grows by the seeds added, each
 * cell as a sweep of that seed alone runs it; seeds whose runs the folder holds
 * cannot be left out (the grid would lose them). */
static void test_seeds(void) {
    char N[300], D[300], cmd[1024], cell[256], n_cell[600], d_cell[600];
    snprintf(N, sizeof N, "%s/n", tmp);
    snprintf(D, sizeof D, "%s/d", tmp);
    snprintf(cell, sizeof cell, "cells/attention.type=linear,d_model=8,seed=3");
    CHECK(RUN("sweep", cfg, "--out", N, "--seeds", "3", "--only", "model.attention.type=linear",
              "--only", "model.d_model=8") == 0, "sweep --seeds 3 failed");
    EXPECT_OUTPUT("sweep: 4 cells (4 points x 1 seed), 1 kept by --only: 0 finished, 0 to resume, 1 to start");
    char *spec = read_in(N, "sweep.json");
    CHECK(spec && strstr(spec, "\"seeds\":\t[3]"), "sweep.json seeds:\n%s", spec ? spec : "(none)");
    free(spec);
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", A, D);
    CHECK(system(cmd) == 0, "%s", cmd);
    CHECK(RUN("sweep", cfg, "--out", D, "--seeds", "1,2,3", "--only", "model.attention.type=linear",
              "--only", "model.d_model=8") == 0, "sweep --seeds 1,2,3 over a finished folder failed");
    EXPECT_OUTPUT("sweep: 12 cells (4 points x 3 seeds), 3 kept by --only: 2 finished, 0 to resume, 1 to start");
    EXPECT_OUTPUT("sweep: 9 of 12 cells done, 0 failed, 3 pending");
    snprintf(n_cell, sizeof n_cell, "%s/%s", N, cell);
    snprintf(d_cell, sizeof d_cell, "%s/%s", D, cell);
    CHECK(summary_number(n_cell, "test_loss") == summary_number(d_cell, "test_loss"),
          "seed 3 ended otherwise beside seeds 1 and 2 than alone");
    char *csv = read_in(D, "grid.csv");
    CHECK(csv && strstr(csv, "\nlinear,8,3,0,0,") && strstr(csv, "\nsoftmax,8,2,0,1,"), "grid.csv:\n%s",
          csv ? csv : "(none)");
    free(csv);
    /* Leaving out a seed whose runs the folder holds: refused, nothing written. */
    long before = mtime_ns(in(D, "sweep.json"));
    CHECK(RUN("sweep", cfg, "--out", D, "--seeds", "2,3") == 2, "--seeds dropping seed 1 of a folder accepted");
    EXPECT_OUTPUT(" holds runs of seed 1 (");
    EXPECT_OUTPUT("/cells/attention.type=softmax,d_model=8,seed=1), which this sweep's seeds (2, 3) leave out: its "
                  "grid would no longer list them.  Keep the seed (--seeds 1,2,3: finished cells do not run again), "
                  "or give the sweep another --out");
    CHECK(mtime_ns(in(D, "sweep.json")) == before, "a refused sweep rewrote sweep.json");
    CHECK(RUN("sweep", cfg, "--out", N) == 2, "the config's seeds, dropping the folder's seed 3, accepted");
    EXPECT_OUTPUT("which this sweep's seeds (1, 2) leave out");
    EXPECT_OUTPUT("Keep the seed (--seeds 3,1,2: ");
    /* The option itself. */
    const char *bad[] = { "", "1,,2", "x", "-1", "1.5", "2,", "9007199254740993", NULL };
    for (int i = 0; bad[i]; i++) {
        CHECK(RUN("sweep", cfg, "--out", N, "--seeds", bad[i]) == 2, "--seeds '%s' accepted", bad[i]);
        char want[200];
        snprintf(want, sizeof want, "sweep: --seeds needs integers in [0, 9007199254740992] separated by commas, "
                 "e.g. --seeds 1,2,3, got '%s'", bad[i]);
        EXPECT_OUTPUT(want);
    }
    CHECK(RUN("sweep", cfg, "--out", N, "--seeds", "4,5,4") == 2, "a repeated seed accepted");
    EXPECT_OUTPUT("sweep: --seeds 4,5,4: seed 4 is listed twice");
    char many[400];
    int len = 0;
    for (int i = 0; i < 65; i++) len += snprintf(many + len, sizeof many - len, "%s%d", i ? "," : "", i);
    CHECK(RUN("sweep", cfg, "--out", N, "--seeds", many) == 2, "65 seeds accepted");
    EXPECT_OUTPUT(": at most 64 seeds");
    CHECK(RUN("sweep", cfg, "--seeds") == 2, "--seeds without a value");
    EXPECT_OUTPUT("sweep: --seeds needs the seeds, e.g. --seeds 1,2,3");
    CHECK(RUN("sweep", "--merge", A, "--seeds", "1") == 2, "--merge with --seeds");
    EXPECT_OUTPUT("sweep: --merge takes sweep folders (and --out, --quiet) only");
}

static void test_failure(void) {
    char F[300];
    snprintf(F, sizeof F, "%s/f", tmp);
    /* 100 000 distinct examples do not exist at this size: that cell fails in the trainer. */
    CHECK(RUN("sweep", cfg, "--out", F, "--set", "sweep=1") == 2, "--set sweep accepted");
    char fcfg[300], text[2048];
    snprintf(fcfg, sizeof fcfg, "%s/fail.json", tmp);
    snprintf(text, sizeof text, "%.*s\"sweep\": {\"axes\": {\"task.train_size\": [100, 100000]}} }\n",
             (int)(strstr(CONFIG, "\"sweep\"") - CONFIG), CONFIG);
    CHECK(tu_write_file(fcfg, text) == 0, "write %s", fcfg);
    CHECK(RUN("sweep", fcfg, "--out", F) == 1, "a sweep with a failed cell must exit 1");
    EXPECT_OUTPUT("FAILED  task.train_size=100000,seed=1  (exit 2; log ");
    EXPECT_OUTPUT("sweep: 1 of 2 cells done, 1 failed, 0 pending");
    char *csv = read_in(F, "grid.csv");
    CHECK(csv && strstr(csv, "\n100000,0,1,0,,,,,,,\"seed 1: exit 2, cells/task.train_size=100000,seed=1/train.log\"\n"),
          "failed row in grid.csv:\n%s", csv ? csv : "");
    free(csv);
    char *json = read_in(F, "grid.json");
    CHECK(json && strstr(json, "\"status\":\t\"failed\"") && strstr(json, "\"exit_code\":\t2"), "grid.json failure");
    free(json);
    char *log = read_in(F, "cells/task.train_size=100000,seed=1/train.log");
    CHECK(log && strstr(log, "distinct training examples found"), "the trainer's message is in the log");
    free(log);
    /* The next run retries the failed cell only. */
    CHECK(RUN("sweep", fcfg, "--out", F) == 1, "re-run");
    EXPECT_OUTPUT("2 cells (2 points x 1 seed): 1 finished, 0 to resume, 1 to start");
}

static void test_interrupt(void) {
    char I[300], icfg[300], text[2048];
    snprintf(I, sizeof I, "%s/i", tmp);
    snprintf(icfg, sizeof icfg, "%s/long.json", tmp);
    snprintf(text, sizeof text, "%.*s\"sweep\": {\"axes\": {\"model.d_model\": [8, 16]}} }\n",
             (int)(strstr(CONFIG, "\"sweep\"") - CONFIG), CONFIG);
    CHECK(tu_write_file(icfg, text) == 0, "write %s", icfg);
    pid_t pid = start((const char *const[]){ "sweep", icfg, "--out", I, "--jobs", "2", "--set", "train.steps=10000000",
                                             "--set", "eval.every=5", NULL });
    const char *m[2] = { "cells/d_model=8,seed=1/metrics.jsonl", "cells/d_model=16,seed=1/metrics.jsonl" };
    for (int tries = 0; tries < 1200; tries++) {   /* until both workers train (at most two minutes) */
        char *a = read_in(I, m[0]), *b = read_in(I, m[1]);
        int ready = a && b && *a && *b;
        free(a);
        free(b);
        if (ready) break;
        nanosleep(&(struct timespec){ 0, 100000000 }, NULL);
    }
    kill(pid, SIGTERM);
    CHECK(finish(pid) == 143, "an interrupted sweep must exit 143");
    for (int i = 0; i < 2; i++) {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/%.*s", I, (int)(strrchr(m[i], '/') - m[i]), m[i]);
        CHECK(exists(in(dir, "train_state.safetensors")), "%s: no checkpoint after SIGTERM", dir);
        char *status = read_in(dir, "sweep_cell.json");
        CHECK(status && strstr(status, "\"exit_code\": 143"), "%s: worker exit %s", dir, status ? status : "?");
        free(status);
    }
    char *csv = read_in(I, "grid.csv");
    CHECK(csv && strstr(csv, "\n8,0,0,1,") && strstr(csv, "\n16,0,0,1,"), "pending rows:\n%s", csv ? csv : "");
    free(csv);
}

/* Tasks with test-row groups (Dyck: positives, broken-profile and type-only
 * negatives): grid.csv gets each group's mean token accuracy, recomputed here from
 * the cells' summary.json, and groups.svg shows them per point. */
static void test_groups(void) {
    char G[300], gcfg[300];
    snprintf(G, sizeof G, "%s/g", tmp);
    snprintf(gcfg, sizeof gcfg, "%s/dyck.json", tmp);
    CHECK(tu_write_file(gcfg,
        "{ \"name\": \"groups\", \"seed\": 1,\n"
        "  \"task\": {\"type\": \"dyck\", \"seq_len\": 12, \"train_size\": 0},\n"
        "  \"model\": {\"d_model\": 8, \"n_heads\": 1, \"attention\": {\"causal\": true}},\n"
        "  \"train\": {\"lr\": 0.01, \"batch_size\": 16, \"steps\": 20},\n"
        "  \"eval\": {\"every\": 20, \"test_size\": 64},\n"
        "  \"sweep\": {\"axes\": {\"model.d_model\": [8, 16]}} }\n") == 0, "write %s", gcfg);
    CHECK(RUN("sweep", gcfg, "--out", G, "--quiet") == 0, "dyck sweep failed");
    char *csv = read_in(G, "grid.csv");
    const char *names[3] = { "positive", "negative_profile", "negative_type_only" };
    CHECK(csv && strstr(csv, ",token_acc[positive]_mean,token_acc[negative_profile]_mean,"
                             "token_acc[negative_type_only]_mean,n_params,"), "grid.csv header:\n%s", csv ? csv : "");
    char f[16][256];
    const char *line = csv ? strchr(csv, '\n') + 1 : "";
    for (int w = 0; w < 2 && *line; w++, line = strchr(line, '\n') + 1) {
        int n = csv_fields(line, f, 16);
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/cells/d_model=%s,seed=1", G, f[0]);
        char *sum = read_in(dir, "summary.json");
        cJSON *j = cJSON_Parse(sum ? sum : ""), *grp = cJSON_GetObjectItem(j, "test_group_token_acc");
        CHECK(n == 14 && grp, "row %d: %d fields; %s/summary.json groups %s", w, n, dir, grp ? "ok" : "missing");
        for (int i = 0; i < 3 && grp && n == 14; i++) {
            cJSON *v = cJSON_GetObjectItem(grp, names[i]);
            CHECK(cJSON_IsNumber(v) && atof(f[8 + i]) == v->valuedouble, "row %d %s: %s", w, names[i], f[8 + i]);
        }
        cJSON_Delete(j);
        free(sum);
    }
    free(csv);
    char *svg = read_in(G, "groups.svg");
    CHECK(svg && strstr(svg, ">negative_type_only<") && strstr(svg, "d_model=16"), "groups.svg");
    free(svg);
}

/* A cell that stopped early (eval.stop_at_error) stays finished when the sweep's
 * train.steps is raised; the others continue. */
static void test_early_stop(void) {
    char S[300];
    snprintf(S, sizeof S, "%s/s", tmp);
    CHECK(RUN("sweep", cfg, "--out", S, "--set", "eval.stop_at_error=1", "--quiet") == 0, "early-stop sweep failed");
    CHECK(RUN("sweep", cfg, "--out", S, "--set", "eval.stop_at_error=1", "--set", "train.steps=80") == 0,
          "sweep with raised steps failed");
    EXPECT_OUTPUT("8 finished, 0 to resume, 0 to start");
    /* Without the stop criterion the same cells are unfinished: they continue. */
    CHECK(RUN("sweep", cfg, "--out", S, "--set", "eval.stop_at_error=-1", "--set", "train.steps=80") == 0,
          "sweep without early stop failed");
    EXPECT_OUTPUT("0 finished, 8 to resume, 0 to start");
}

static void test_errors(void) {
    char E[300], X[300];
    snprintf(E, sizeof E, "%s/e", tmp);
    CHECK(RUN("sweep", cfg, "--out", E, "--set", "model.d_model=32") == 2, "--set of an axis accepted");
    EXPECT_OUTPUT("--set model.d_model=32: model.d_model is a sweep axis (sweep.axes in ");
    CHECK(RUN("sweep", cfg, "--out", E, "--set", "seed=3") == 2, "--set seed accepted");
    EXPECT_OUTPUT("--set seed=3: the seeds come from sweep.seeds in ");
    EXPECT_OUTPUT(", or from --seeds 1,2,3");
    CHECK(RUN("sweep", cfg, "--out", E, "--set", "sweep.seeds=[3]") == 2, "--set of the sweep section accepted");
    EXPECT_OUTPUT("--set sweep.seeds=[3]: the sweep section is not changed by --set: edit it in ");
    EXPECT_OUTPUT(", or choose its cells with --only KEY=VALUE and its seeds with --seeds 1,2,3");
    CHECK(RUN("sweep", cfg, "--out", E, "--set", "train.lr=-1") == 2, "bad --set accepted");
    EXPECT_OUTPUT("--set train.lr=-1: train.lr: must be > 0, got -1");
    CHECK(!exists(E), "a refused sweep wrote its folder");
    CHECK(RUN("sweep", cfg, "--jobs", "0") == 2, "--jobs 0");
    EXPECT_OUTPUT("sweep: --jobs needs a number of worker processes in 1..4096, got '0'");
    CHECK(RUN("sweep", cfg, "--shard", "2/2") == 2, "--shard 2/2");
    EXPECT_OUTPUT("sweep: --shard needs I/N with 0 <= I < N (e.g. --shard 0/4), got '2/2'");
    CHECK(RUN("sweep", cfg, "--out", E, "--only", "16") == 2, "--only without a key");
    EXPECT_OUTPUT("sweep: --only needs an axis and one of its values, e.g. --only task.seq_len=400, got '16'");
    CHECK(RUN("sweep", cfg, "--out", E, "--only", "train.lr=0.01") == 2, "--only of a key that is not an axis");
    EXPECT_OUTPUT("--only train.lr=0.01: 'train.lr' is not an axis of this sweep (sweep.axes in ");
    EXPECT_OUTPUT(": model.attention.type, model.d_model)");
    CHECK(RUN("sweep", cfg, "--out", E, "--only", "model.d_model=12") == 2, "--only of a value the axis lacks");
    EXPECT_OUTPUT("--only model.d_model=12: '12' is not one of the values of sweep.axes[\"model.d_model\"] in ");
    EXPECT_OUTPUT(" (8, 16)");
    CHECK(RUN("sweep", "--merge", A, "--only", "model.d_model=8") == 2, "--merge with --only");
    EXPECT_OUTPUT("sweep: --merge takes sweep folders (and --out, --quiet) only");
    CHECK(RUN("sweep", cfg, "--frobnicate") == 2, "unknown option");
    EXPECT_OUTPUT("sweep: unknown option '--frobnicate'");
    CHECK(RUN("sweep") == 2, "no config");
    EXPECT_OUTPUT("sweep: no config file given");
    CHECK(RUN("sweep", "--merge") == 2, "--merge without folders");
    EXPECT_OUTPUT("sweep: --merge needs the sweep folders to gather");
    CHECK(RUN("sweep", "--merge", A, "--shard", "0/2") == 2, "--merge with --shard");
    EXPECT_OUTPUT("sweep: --merge takes sweep folders (and --out, --quiet) only");
    CHECK(RUN("sweep", "--merge", tmp) == 2, "--merge of a non-sweep folder");
    EXPECT_OUTPUT("is not a sweep folder (no readable base_config.json)");
    /* Merging two different sweeps: F (failure test) and A. */
    snprintf(X, sizeof X, "%s/f", tmp);
    CHECK(RUN("sweep", "--merge", A, X, "--out", E) == 2, "merge of different sweeps");
    EXPECT_OUTPUT("holds another sweep than");
    CHECK(RUN(cfg) == 2, "a plain run of a sweep config");
    EXPECT_OUTPUT("the 'sweep' section describes a grid of runs: run it with ./train sweep");
    /* A cell folder of another config is never overwritten. */
    CHECK(RUN("sweep", cfg, "--out", A, "--set", "train.lr=0.02") == 2, "conflicting folder accepted");
    EXPECT_OUTPUT("holds a run of another config (train.lr differs): delete that folder, or give the sweep another --out");
    CHECK(RUN("sweep", cfg, "--out", A, "--set", "train.steps=20") == 2, "longer run in the folder accepted");
    EXPECT_OUTPUT("holds a run of 40 steps, more than train.steps (20)");
    CHECK(RUN("sweep", cfg, cfg) == 2, "two configs");
    EXPECT_OUTPUT("sweep: more than one config file given '");
    /* A damaged cell folder stops the sweep before anything runs. */
    CHECK(tu_write_file(in(B, "cells/attention.type=softmax,d_model=16,seed=2/config.json"), "{\"model\": 3}") == 0, "w");
    CHECK(RUN("sweep", cfg, "--out", B) == 2, "damaged cell accepted");
    EXPECT_OUTPUT("cells/attention.type=softmax,d_model=16,seed=2 has a config.json that is not a valid config (");
    /* mpirun's environment: refused with --shard, and by a build without MPI. */
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    CHECK(RUN("sweep", cfg, "--out", E, "--shard", "0/2") == 2, "--shard under mpirun");
    EXPECT_OUTPUT("sweep: --shard and mpirun do not mix: the ranks share the grid");
#ifndef ATTNLAB_HAVE_MPI
    CHECK(RUN("sweep", cfg, "--out", E) == 2, "mpirun without MPI support");
    EXPECT_OUTPUT("sweep: started by mpirun (2 ranks), but this attnlab was built without MPI");
#endif
    unsetenv("OMPI_COMM_WORLD_SIZE");
    CHECK(!exists(E), "a refused sweep wrote its folder");
    char nosweep[300];
    snprintf(nosweep, sizeof nosweep, "%s/a/base_config.json", tmp);
    CHECK(RUN("sweep", nosweep) == 2, "a config without a sweep section");
    EXPECT_OUTPUT("base_config.json: no 'sweep' section: ./train sweep needs one");
}

int main(void) {
    bin = getenv("ATTNLAB_BIN");
    if (!bin || !*bin) {
        fprintf(stderr, "test_sweep: set ATTNLAB_BIN to the attnlab binary (ctest does)\n");
        return 1;
    }
    snprintf(tmp, sizeof tmp, "/tmp/attnlab_sweep_XXXXXX");
    CHECK(mkdtemp(tmp) != NULL, "mkdtemp");
    snprintf(cfg, sizeof cfg, "%s/tiny.json", tmp);
    snprintf(out_text, sizeof out_text, "%s/output.txt", tmp);
    CHECK(tu_write_file(cfg, CONFIG) == 0, "write %s", cfg);
    test_grid_and_jobs();
    test_resume();
    test_shards();
    test_only();
    test_seeds();
    test_failure();
    test_interrupt();
    test_groups();
    test_early_stop();
    test_errors();
    int rc = check_exit("test_sweep");
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (!rc && system(cmd)) fprintf(stderr, "could not remove %s\n", tmp);
    if (rc) fprintf(stderr, "test_sweep: files kept in %s\n", tmp);
    return rc;
}
