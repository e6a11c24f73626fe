/* test_sweep_report.c — a grid's summary tables (src/sweep/report.c) from a grid whose
 * means are set by hand, so every expected line is written out here:
 *   - the smallest width reaching the threshold: by number, not by the order the
 *     widths are listed in; a mean equal to the threshold counts; a point with no
 *     finished seed never counts; "none of LO..HI" names the numeric range;
 *   - narrower widths with no finished seed are listed as not finished (the answer
 *     is provisional), and "none so far" replaces "none of" while any is missing;
 *   - summary.csv carries that width's metric, parameters and FLOPs;
 *   - summary.md's table of every point: percent, "± std" from two seeds on, "—"
 *     where nothing finished, panels side by side in the axes' order. */
#include "check.h"
#include "testutil.h"
#include "attnlab/sweep/grid.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *CONFIG =
    "{ \"name\": \"r\", \"seed\": 1,\n"
    "  \"task\": {\"type\": \"index_lookup\", \"seq_len\": 6, \"alphabet\": 4, \"min_len\": 2, \"train_size\": 100},\n"
    "  \"model\": {\"d_model\": 8, \"n_heads\": 2, \"positional\": \"learned\", \"attention\": {\"causal\": true}},\n"
    "  \"train\": {\"steps\": 10}, \"eval\": {\"every\": 5, \"test_size\": 16},\n"
    "  \"sweep\": {\"axes\": {\"model.attention.type\": [\"softmax\", \"linear\"], \"task.seq_len\": [5, 6, 7],\n"
    "                      \"model.d_model\": [32, 8, 16]},\n"
    "            \"seeds\": [1, 2], \"metric\": \"token_acc\", \"threshold\": 0.75} }\n";

/* Mean token accuracy per point (architecture, seq_len, width as listed: 32, 8, 16);
 * NaN: no seed finished. */
static const double MEAN[2][3][3] = {
    { { 0.90, 0.80, NAN }, { 0.75, 0.70, 0.60 }, { 0.74, 0.60, 0.50 } },
    { { 0.76, NAN, 0.76 }, { NAN, NAN, NAN }, { 0.30, 0.80, 0.10 } },
};

/* Seeds finished at a point: two at (linear, 7, 8), the only point with a std. */
static int seeds_at(int a, int l, int w) {
    if (isnan(MEAN[a][l][w])) return 0;
    return a == 1 && l == 2 && w == 1 ? 2 : 1;
}

static void fill_grid(SweepGrid *g, const SweepSpec *s) {
    memset(g, 0, sizeof *g);
    g->spec = s;
    g->rows = calloc((size_t)s->n_points, sizeof *g->rows);
    for (int a = 0; a < 2; a++)
        for (int l = 0; l < 3; l++)
            for (int w = 0; w < 3; w++) {
                GridRow *r = &g->rows[(a * 3 + l) * 3 + w];   /* axes nest in the order written */
                for (int m = 0; m < METRIC_COUNT; m++) r->mean[m] = r->std[m] = NAN;
                r->n[METRIC_TOKEN_ACC] = seeds_at(a, l, w);
                r->mean[METRIC_TOKEN_ACC] = MEAN[a][l][w];
                if (r->n[METRIC_TOKEN_ACC] == 2) r->std[METRIC_TOKEN_ACC] = 0.1;
                r->n_params = 1000 * (a + 1) + 100 * l + w;   /* tells every point apart */
                r->flops_per_seq = 2.5e6 * (w + 1);
            }
}

static void expect_line(int line, const char *text, const char *want) {
    CHECK(text && strstr(text, want), "line %d: lacks\n  %s\nin:\n%s", line, want, text ? text : "(none)");
}
#define EXPECT_LINE(text, want) expect_line(__LINE__, text, want)

int main(void) {
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "%s/attnlab_sweep_report_%d", tmp, (int)getpid());
    CHECK(mkdir(dir, 0755) == 0, "cannot create %s", dir);
    snprintf(path, sizeof path, "%s/config.json", dir);
    Config base;
    SweepSpec s;
    AlError err;
    int rc = tu_load_sweep(path, CONFIG, &base, &s, &err);
    CHECK(rc == 0, "spec refused: %s", err.msg);
    if (rc) return check_exit("test_sweep_report");
    CHECK(s.rows == 1 && s.cols == 2 && s.n_points == 18, "layout rows %d cols %d points %ld", s.rows, s.cols,
          s.n_points);
    SweepGrid g;
    fill_grid(&g, &s);
    CHECK(grid_write_summary(&g, dir, &err) == 0, "grid_write_summary: %s", err.msg);

    char *csv = tu_read_file(tu_path(dir, "summary.csv"), NULL);
    const char *want_csv =
        "model.attention.type,task.seq_len,smallest_model.d_model,token_acc_mean,n_params,flops_per_seq,"
        "not_finished\n"
        "softmax,5,8,0.8,1001,5000000,\n"       /* 8 reaches it: smaller than 32; the pending
                                                 * 16 is wider, so the answer is final */
        "softmax,6,32,0.75,1100,2500000,\n"     /* equal to the threshold counts */
        "softmax,7,,,,,\n"                      /* 0.74 < 0.75 */
        "linear,5,16,0.76,2002,7500000,8\n"     /* 16 and 32 tie at 0.76: the smaller; the
                                                 * pending 8 does not count, but is named */
        "linear,6,,,,,32 8 16\n"                /* nothing finished */
        "linear,7,8,0.8,2201,5000000,\n";
    CHECK(csv && !strcmp(csv, want_csv), "summary.csv:\n%s\nwanted:\n%s", csv ? csv : "(none)", want_csv);

    char *md = tu_read_file(tu_path(dir, "summary.md"), NULL);
    EXPECT_LINE(md, "# Smallest model.d_model reaching token_acc >= 0.75\n");
    EXPECT_LINE(md, "\n| softmax | 5 | 8 | 0.8000 | 1001 | 5e+06 | |\n");
    EXPECT_LINE(md, "\n| softmax | 7 | none of 8..32 | | | | |\n");
    EXPECT_LINE(md, "\n| linear | 5 | 16 | 0.7600 | 2002 | 7.5e+06 | 8 |\n");
    EXPECT_LINE(md, "\n| linear | 6 | none so far | | | | 32 8 16 |\n");
    EXPECT_LINE(md, "\n| linear | 7 | 8 | 0.8000 | 2201 | 5e+06 | |\n");
    /* The table of every point: widths in the order listed, softmax's then linear's. */
    EXPECT_LINE(md, "\n## Test token_acc at every point (%, mean ± std over seeds)\n\n"
                    "| task.seq_len | attention.type=softmax, d_model=32 | 8 | 16 |"
                    " attention.type=linear, d_model=32 | 8 | 16 |\n|---|---|---|---|---|---|---|\n"
                    "| 5 | 90.0 | 80.0 | — | 76.0 | — | 76.0 |\n"
                    "| 6 | 75.0 | 70.0 | 60.0 | — | — | — |\n"
                    "| 7 | 74.0 | 60.0 | 50.0 | 30.0 | 80.0 ± 10.0 | 10.0 |\n");
    free(csv);
    free(md);
    remove(path);
    remove(tu_path(dir, "summary.csv"));
    remove(tu_path(dir, "summary.md"));
    rmdir(dir);
    free(g.rows);
    sweep_spec_free(&s);
    return check_exit("test_sweep_report");
}
