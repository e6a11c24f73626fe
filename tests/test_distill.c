/* test_distill.c — the distillation workflow end to end on a small Match2 run.
 *
 * Trains a tiny unit-norm surrogate with distill.enabled, then checks the outputs:
 * the CSV has one row per (ℓ, z) cell with mean/std over the runs, the summary
 * names the surrogate's error and the best cell, both SVG figures exist.  About
 * accuracy only sanity is assumed: errors lie in [0, 1], and 6 tables at z = 1 are
 * no worse than 1 (the trend ANNA's theory predicts, tested loosely).
 * Then `./train distill` on the same folder with other settings reproduces the same
 * numbers for the shared cells (hash functions are seeded and nested). */
#include "check.h"
#include "testutil.h"
#include "attnlab/anna/distill.h"
#include "attnlab/train/trainer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmp[256];

static char *slurp(const char *path) { return tu_read_file(path, NULL); }

/* Mean test error of the cell "tables,funcs," in a one-layer grid CSV (the third
 * column after them: valid mean, valid std, test mean); −1 if absent. */
static double cell(const char *csv, int tables, int funcs) {
    char key[32];
    snprintf(key, sizeof key, "\n%d,%d,", tables, funcs);
    const char *p = strstr(csv, key);
    if (!p) return -1;
    p += strlen(key);
    for (int skip = 0; skip < 2 && p; skip++) p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL;
    return p ? atof(p) : -1;
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/attnlab_distill_XXXXXX");
    if (!mkdtemp(tmp)) return 1;
    char cfg[512], out[512], path[600];
    snprintf(cfg, sizeof cfg, "%s/c.json", tmp);
    FILE *f = fopen(cfg, "w");
    fputs("{ \"task\": {\"type\": \"match2\", \"seq_len\": 16, \"modulus\": 13, \"train_size\": 2000},\n"
          "  \"model\": {\"d_model\": 32, \"attention\": {\"score\": \"unit_norm\", \"beta\": 0.5}},\n"
          "  \"train\": {\"lr\": 0.01, \"steps\": 400},\n  \"eval\": {\"every\": 200, \"test_size\": 64},\n"
          "  \"distill\": {\"enabled\": true, \"tables\": \"1..6\", \"funcs\": \"1..3\", \"runs\": 4} }\n", f);
    fclose(f);
    snprintf(out, sizeof out, "%s/run", tmp);
    AlError err = {0};
    TrainOptions o = { .config_path = cfg, .out_dir = out, .quiet = 1 };
    CHECK(train_run(&o, &err) == 0, "train + distill failed: %s", err.msg);

    snprintf(path, sizeof path, "%s/anna_grid.csv", out);
    char *csv = slurp(path);
    const char *header = "layer0_tables,layer0_funcs,valid_mean_error,valid_std_error,test_mean_error,test_std_error,runs\n";
    CHECK(csv && !strncmp(csv, header, strlen(header)), "csv header: %.120s", csv ? csv : "");
    int rows = 0;
    for (const char *p = csv; p && *p; p++) rows += *p == '\n';
    CHECK(rows == 1 + 6 * 3, "csv has %d lines, want 19", rows);
    double worst = 0;
    for (int l = 1; l <= 6; l++)
        for (int z = 1; z <= 3; z++) {
            double e = cell(csv, l, z);
            CHECK(e >= 0 && e <= 1, "cell (%d,%d) error %g", l, z, e);
            if (e > worst) worst = e;
        }
    CHECK(cell(csv, 6, 1) <= cell(csv, 1, 1) + 1e-9, "more tables made z=1 worse: %g vs %g", cell(csv, 6, 1), cell(csv, 1, 1));
    const char *figs[] = {"anna_error_vs_tables.svg", "anna_heatmap.svg", "anna_summary.json"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", out, figs[i]);
        char *s = slurp(path);
        CHECK(s && strlen(s) > 100, "missing or empty %s", figs[i]);
        free(s);
    }

    /* Re-running on a sub-grid gives the same numbers: seeded, nested hashes. */
    const char *sets[] = {"distill.tables=2..4", "distill.funcs=2"};
    CHECK(distill_main(out, sets, 2, 1, &err) == 0, "./train distill failed: %s", err.msg);
    snprintf(path, sizeof path, "%s/anna_grid.csv", out);
    char *sub = slurp(path);
    for (int l = 2; l <= 4; l++)
        CHECK(sub && cell(sub, l, 2) == cell(csv, l, 2), "cell (%d,2) changed: %g vs %g", l, cell(sub, l, 2), cell(csv, l, 2));
    free(sub);
    free(csv);

    /* Only softmax attention can be distilled. */
    const char *lin[] = {"model.attention.type=linear"};
    CHECK(distill_main(out, lin, 1, 1, &err) == 2 && strstr(err.msg, "softmax"), "linear model: %s", err.msg);

    /* Two layers with one shared z axis: each tied cell (l1, z, l2, z) is the
     * untied grid's cell with the same values, row for row. */
    snprintf(cfg, sizeof cfg, "%s/c2.json", tmp);
    f = fopen(cfg, "w");
    fputs("{ \"task\": {\"type\": \"match2\", \"seq_len\": 16, \"modulus\": 13, \"train_size\": 500},\n"
          "  \"model\": {\"d_model\": 16, \"n_layers\": 2, \"attention\": {\"score\": \"unit_norm\"}},\n"
          "  \"train\": {\"steps\": 20},\n  \"eval\": {\"every\": 20, \"test_size\": 32},\n"
          "  \"distill\": {\"enabled\": true, \"tables\": \"1,2;1,3\", \"funcs\": \"1..2\", \"runs\": 2, "
          "\"same_funcs\": true} }\n", f);
    fclose(f);
    snprintf(out, sizeof out, "%s/run2", tmp);
    TrainOptions o2 = { .config_path = cfg, .out_dir = out, .quiet = 1 };
    CHECK(train_run(&o2, &err) == 0, "two-layer train + distill failed: %s", err.msg);
    snprintf(path, sizeof path, "%s/anna_grid.csv", out);
    char *tied = slurp(path);
    const char *untie[] = {"distill.same_funcs=false"};
    CHECK(distill_main(out, untie, 1, 1, &err) == 0, "untied distill failed: %s", err.msg);
    char *full = slurp(path);
    int tied_rows = 0, full_rows = 0, found = 0;
    for (const char *p = full; p && *p; p++) full_rows += *p == '\n';
    for (char *line = tied ? strchr(tied, '\n') : NULL; line && line[1]; line = strchr(line + 1, '\n')) {
        char row[128];
        size_t n = strcspn(line + 1, "\n");
        snprintf(row, sizeof row, "\n%.*s\n", (int)n, line + 1);
        tied_rows++;
        found += full && strstr(full, row) != NULL;
    }
    CHECK(tied_rows == 2 * 2 * 2 && full_rows == 1 + 2 * 2 * 2 * 2, "rows: %d tied, %d untied lines", tied_rows, full_rows);
    CHECK(found == tied_rows, "%d of %d tied rows are not in the untied grid", tied_rows - found, tied_rows);
    static const int l1s[] = {1, 2}, l2s[] = {1, 3};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int z = 1; z <= 2; z++) {
                char key[64];
                snprintf(key, sizeof key, "\n%d,%d,%d,%d,", l1s[a], z, l2s[b], z);
                CHECK(tied && strstr(tied, key), "tied grid lacks the cell %s", key + 1);
            }
    free(tied);
    free(full);

    /* ./train distill of a 9-layer run (trained without distillation): "all" is one
     * layer too many for a grid, refused before the grid's layer table is written. */
    snprintf(cfg, sizeof cfg, "%s/c9.json", tmp);
    f = fopen(cfg, "w");
    fputs("{ \"task\": {\"type\": \"match2\", \"seq_len\": 8, \"modulus\": 7, \"train_size\": 32},\n"
          "  \"model\": {\"d_model\": 8, \"n_layers\": 9, \"attention\": {\"score\": \"unit_norm\"}},\n"
          "  \"train\": {\"steps\": 2, \"batch_size\": 4},\n"
          "  \"eval\": {\"every\": 2, \"test_size\": 8} }\n", f);
    fclose(f);
    snprintf(out, sizeof out, "%s/run9", tmp);
    TrainOptions o9 = { .config_path = cfg, .out_dir = out, .quiet = 1 };
    CHECK(train_run(&o9, &err) == 0, "nine-layer train failed: %s", err.msg);
    CHECK(distill_main(out, NULL, 0, 1, &err) == 2 && strstr(err.msg, "distill.layers \"all\" selects 9 layers"),
          "nine layers: %s", err.msg);
    const char *eight[] = {"distill.layers=1..8", "distill.tables=1", "distill.funcs=1", "distill.runs=1"};
    CHECK(distill_main(out, eight, 4, 1, &err) == 0, "eight of nine layers: %s", err.msg);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmp);
    return check_exit("test_distill");
}
