/* test_distill.c — the distillation workflow end to end on a small Match2 run.
 *
 * Trains a tiny unit-norm surrogate with distill.enabled, then checks the outputs:
 * the CSV has one row per (ℓ, z) cell with mean/std over the runs, the summary
 * names the surrogate's error and the best cell, both SVG figures exist.  About
 * accuracy only sanity is assumed: errors lie in [0, 1], and 6 tables at z = 1 are
 * no worse than 1 (the trend ANNA's theory predicts, tested loosely).
 * Then `./train distill` on the same folder with other settings reproduces the same
 * numbers for the shared cells (each cell's draws have their own seed).
 * The summary says cells were chosen on validation, and its best cell is the CSV's
 * least validation error.  Also, without training:
 *   - independent draws: two cells (differing in one z) and two draws of a cell
 *     share no hash function (hyperplane normal or cross-polytope sign vectors),
 *     a cell's draw is the same bits when drawn again, and the seed changes with
 *     every input of its derivation;
 *   - the validation split: its size (distill.valid_size, or eval.test_size), rows
 *     distinct and in neither train nor test (Match2, k-hop with a fixed training
 *     set, streaming k-hop), k-hop rows at the test hop count, reproducible;
 *   - score_all: a k-hop evaluation set gets the null class at position 0 and
 *     nothing else changes; without it, or for Match2, the copy is unchanged;
 *   - a model with "dot" scores is refused by ./train distill, naming the key. */
#include "check.h"
#include "testutil.h"
#include "attnlab/anna/distill.h"
#include "attnlab/cli/run.h"
#include "attnlab/train/trainer.h"
#include "attnlab/data/seqset.h"
#include "attnlab/nn/model.h"

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


/* Every hash function of a draw, as a vector of floats: hyperplane normals
 * (column t·z + f of proj) or cross-polytope sign vectors (3p values). */
static int functions_of(const AnnaHashes *h, float **out, int *len) {
    int n = 0;
    for (int k = 0; k < h->n_lsh; k++) {
        const Lsh *l = &h->lsh[k];
        for (int f = 0; f < l->n_tables * l->n_funcs; f++) {
            if (l->family == LSH_HYPERPLANE) {
                *len = l->dim;
                out[n] = malloc((size_t)l->dim * sizeof(float));
                for (int r = 0; r < l->dim; r++) out[n][r] = l->proj[(long)r * l->n_proj + f];
            } else {
                *len = LSH_ROTATIONS * l->rot_dim;
                out[n] = malloc((size_t)*len * sizeof(float));
                memcpy(out[n], l->signs + (long)f * *len, (size_t)*len * sizeof(float));
            }
            n++;
        }
    }
    return n;
}

static int shared_functions(const AnnaHashes *a, const AnnaHashes *b) {
    float *fa[256], *fb[256];
    int len = 0, na = functions_of(a, fa, &len), nb = functions_of(b, fb, &len), shared = 0;
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++) shared += !memcmp(fa[i], fb[j], (size_t)len * sizeof(float));
    for (int i = 0; i < na; i++) free(fa[i]);
    for (int j = 0; j < nb; j++) free(fb[j]);
    return shared;
}

static void test_cell_seeds(void) {
    Config c;
    cfg_defaults(&c);
    c.model.d_model = 16;
    c.model.n_layers = 2;
    c.model.n_heads = 2;
    c.model.attention.score = SCORE_UNIT_NORM;
    Model *m = model_create(&c.model, 10, 5, 8, 1);
    AnnaCell a = { 2, { 0, 1 }, { 3, 2 }, { 1, 2 } }, b = { 2, { 0, 1 }, { 3, 2 }, { 2, 2 } };
    for (int fam = 0; fam <= 1; fam++) {
        c.distill.family = fam ? DISTILL_CROSSPOLYTOPE : DISTILL_HYPERPLANE;
        AnnaHashes a0, a1, b0, again;
        AlError err = { 0 };
        CHECK(!distill_draw_hashes(&a0, &c, m, &a, 0, &err) && !distill_draw_hashes(&a1, &c, m, &a, 1, &err) &&
              !distill_draw_hashes(&b0, &c, m, &b, 0, &err) && !distill_draw_hashes(&again, &c, m, &a, 0, &err),
              "draws: %s", err.msg);
        CHECK(shared_functions(&a0, &b0) == 0 && shared_functions(&a0, &a1) == 0 && shared_functions(&a1, &b0) == 0,
              "%s: cells or draws share hash functions (%d, %d, %d)", fam ? "crosspolytope" : "hyperplane",
              shared_functions(&a0, &b0), shared_functions(&a0, &a1), shared_functions(&a1, &b0));
        CHECK(shared_functions(&a0, &again) == 2 * (3 * 1 + 2 * 2), "%s: a cell's draw is not reproducible (%d of %d)",
              fam ? "crosspolytope" : "hyperplane", shared_functions(&a0, &again), 2 * (3 * 1 + 2 * 2));
        anna_hashes_free(&a0); anna_hashes_free(&a1); anna_hashes_free(&b0); anna_hashes_free(&again);
    }
    /* Every input of the derivation changes the seed. */
    uint64_t s0 = distill_cell_seed(&c.distill, &a, 0);
    AnnaCell v[4] = { a, a, a, a };
    v[0].layer[1] = 0;
    v[1].tables[0] = 4;
    v[2].funcs[1] = 3;
    v[3].n = 1;
    int distinct = distill_cell_seed(&c.distill, &a, 1) != s0 && s0 == distill_cell_seed(&c.distill, &a, 0);
    for (int i = 0; i < 4; i++) distinct &= distill_cell_seed(&c.distill, &v[i], 0) != s0;
    c.distill.seed = 2;
    distinct &= distill_cell_seed(&c.distill, &a, 0) != s0;
    CHECK(distinct, "a cell seed ignores one of its inputs");
    model_free(m);
}

/* Rows of v in neither a nor b, all distinct, v->n == n. */
static void check_disjoint(const char *what, const Dataset *v, const Dataset *a, const Dataset *b, int n) {
    SeqSet s;
    seqset_init(&s, v->seq_len, a->n + b->n + v->n);
    seqset_add_rows(&s, a->tokens, a->n);
    seqset_add_rows(&s, b->tokens, b->n);
    CHECK(v->n == n, "%s: validation has %d rows, want %d", what, v->n, n);
    CHECK(seqset_add_rows(&s, v->tokens, v->n) == v->n, "%s: a validation row repeats or is in train/test", what);
    seqset_free(&s);
}

static void test_validation_split(void) {
    static const char *const configs[] = {
        "{\"task\": {\"type\": \"match2\", \"seq_len\": 8, \"modulus\": 7, \"train_size\": 200}, \"eval\": {\"test_size\": 40}}",
        "{\"task\": {\"type\": \"khop\", \"seq_len\": 12, \"alphabet\": 3, \"max_hops\": 2, \"test_hops\": 1, \"train_size\": 300},"
        " \"eval\": {\"test_size\": 50}, \"distill\": {\"valid_size\": 70}}",
        "{\"task\": {\"type\": \"khop\", \"seq_len\": 10, \"alphabet\": 4, \"test_hops\": 1, \"train_size\": 0},"
        " \"eval\": {\"test_size\": 30}}",
    };
    static const int want[] = { 40, 70, 30 };
    for (int k = 0; k < 3; k++) {
        Config c;
        AlError err = { 0 };
        CHECK(cfg_parse(&c, configs[k], "t.json", &err) == 0, "config %d: %s", k, err.msg);
        TaskData td;
        TaskSpec spec;
        CHECK(task_build(cfg_task_spec(&c, &spec), &td, &err) == 0, "task %d: %s", k, err.msg);
        Dataset v, v2;
        CHECK(task_build_validation(&spec, &td, &v, &err) == 0, "validation %d: %s", k, err.msg);
        CHECK(task_build_validation(&spec, &td, &v2, &err) == 0 && v.n == v2.n &&
              !memcmp(v.tokens, v2.tokens, (size_t)v.n * v.seq_len * sizeof(int)), "validation %d not reproducible", k);
        check_disjoint(configs[k], &v, &td.train, &td.test, want[k]);
        if (k > 0) {
            int hops_ok = 1;
            for (int r = 0; r < v.n; r++) hops_ok &= v.info[r].group == 1;
            CHECK(hops_ok, "k-hop validation rows are not at the test hop count");
            /* score_all: position 0 gets the null class, nothing else moves. */
            Dataset all, task;
            c.distill.score_all = 1;
            distill_eval_set(&c, &td, &v, &all);
            c.distill.score_all = 0;
            distill_eval_set(&c, &td, &v, &task);
            long moved = 0, first = 0;
            for (int r = 0; r < v.n; r++)
                for (int t = 0; t < v.seq_len; t++) {
                    long e = (long)r * v.seq_len + t;
                    if (t == 0) first += all.targets[e] == c.task.alphabet && task.targets[e] == DATASET_IGNORE;
                    else moved += all.targets[e] != v.targets[e] || task.targets[e] != v.targets[e];
                }
            CHECK(first == v.n && moved == 0, "score_all: %ld of %d rows scored at 0, %ld other targets moved", first,
                  v.n, moved);
            dataset_free(&all);
            dataset_free(&task);
        } else {
            Dataset all;
            distill_eval_set(&c, &td, &v, &all);
            CHECK(!memcmp(all.targets, v.targets, (size_t)v.n * v.seq_len * sizeof(int)), "score_all changed Match2");
            dataset_free(&all);
        }
        dataset_free(&v);
        dataset_free(&v2);
        task_free(&td);
    }
    Config f;
    AlError err = { 0 };
    CHECK(cfg_parse(&f, "{\"task\": {\"type\": \"file\"}, \"model\": {\"attention\": {\"causal\": true}}}", "f.json", &err) == 0,
          "file config: %s", err.msg);
    TaskData none;
    memset(&none, 0, sizeof none);
    Dataset v;
    TaskSpec spec;
    CHECK(task_build_validation(cfg_task_spec(&f, &spec), &none, &v, &err) == 2 &&
          strstr(err.msg, "distill.valid_size: task.type \"file\""),
          "file task: %s", err.msg);
}

int main(void) {
    test_cell_seeds();
    test_validation_split();
    snprintf(tmp, sizeof tmp, "/tmp/attnlab_distill_XXXXXX");
    if (!mkdtemp(tmp)) return 1;
    char cfg[512], out[512], path[1200];
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
    CHECK(cli_train_run(&o, &err) == 0, "train + distill failed: %s", err.msg);

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
    CHECK(distill_main(out, NULL, sets, 2, 1, 0, &err) == 0, "./train distill failed: %s", err.msg);
    snprintf(path, sizeof path, "%s/anna_grid.csv", out);
    char *sub = slurp(path);
    for (int l = 2; l <= 4; l++)
        CHECK(sub && cell(sub, l, 2) == cell(csv, l, 2), "cell (%d,2) changed: %g vs %g", l, cell(sub, l, 2), cell(csv, l, 2));
    free(csv);

    /* Cells are chosen on validation: the summary's best is the CSV's least validation error. */
    snprintf(path, sizeof path, "%s/anna_summary.json", out);
    char *sum = slurp(path);
    CHECK(sum && strstr(sum, "\"chosen_on\": \"validation\"") && strstr(sum, "\"positions\": \"all\""),
          "summary: %s", sum ? sum : "(missing)");
    {
        double best_v = 2, best_t = -1;
        for (char *line = sub ? strchr(sub, '\n') : NULL; line && line[1]; line = strchr(line + 1, '\n')) {
            int l, z;
            double vm, vs, tm;
            if (sscanf(line + 1, "%d,%d,%lf,%lf,%lf", &l, &z, &vm, &vs, &tm) == 5 && vm < best_v) best_v = vm, best_t = tm;
        }
        char want[96];
        snprintf(want, sizeof want, "\"best_mean_error\": %.6f", best_t);
        CHECK(sum && strstr(sum, want), "summary's best is not the least validation error (%s): %s", want, sum ? sum : "");
    }
    free(sum);

    /* --out: the same sub-grid with another family into a folder of its own; the
     * run folder's grid stays as it was, and the summary names the model. */
    char side[1100];
    snprintf(side, sizeof side, "%s/side/cp", out);
    const char *cp[] = {"distill.tables=2..4", "distill.funcs=2", "distill.family=crosspolytope"};
    CHECK(distill_main(out, side, cp, 3, 1, 0, &err) == 0, "distill --out failed: %s", err.msg);
    snprintf(path, sizeof path, "%s/anna_grid.csv", out);
    char *again = slurp(path);
    CHECK(again && sub && !strcmp(again, sub), "distill --out changed the run folder's anna_grid.csv");
    free(again);
    snprintf(path, sizeof path, "%s/anna_grid.csv", side);
    char *side_csv = slurp(path);
    CHECK(side_csv && cell(side_csv, 3, 2) >= 0, "no grid in the --out folder %s", side);
    free(side_csv);
    snprintf(path, sizeof path, "%s/anna_summary.json", side);
    char *side_sum = slurp(path), want_model[1200];
    snprintf(want_model, sizeof want_model, "\"model\": \"%s/model.safetensors\"", out);
    CHECK(side_sum && strstr(side_sum, want_model) && strstr(side_sum, "\"family\": \"crosspolytope\""),
          "--out summary lacks the model path or family: %s", side_sum ? side_sum : "(missing)");
    free(side_sum);
    free(sub);

    /* A model with "dot" scores: refused before any work, naming the key and the value. */
    const char *dot[] = {"model.attention.score=dot", "distill.enabled=false"};
    CHECK(distill_main(out, NULL, dot, 1, 1, 0, &err) == 2 && strstr(err.msg, "--set model.attention.score=dot: "
          "model.attention.score: distillation into ANNA (distill.enabled) needs \"unit_norm\""), "dot scores: %s", err.msg);
    CHECK(distill_main(out, NULL, dot, 2, 1, 0, &err) == 2 && strstr(err.msg, "config.json: model.attention.score: distillation "
          "into ANNA needs \"unit_norm\"") && strstr(err.msg, "but this model's is \"dot\""), "dot scores: %s", err.msg);

    /* Only softmax attention can be distilled. */
    const char *lin[] = {"model.attention.type=linear"};
    CHECK(distill_main(out, NULL, lin, 1, 1, 0, &err) == 2 && strstr(err.msg, "softmax"), "linear model: %s", err.msg);

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
    CHECK(cli_train_run(&o2, &err) == 0, "two-layer train + distill failed: %s", err.msg);
    snprintf(path, sizeof path, "%s/anna_grid.csv", out);
    char *tied = slurp(path);
    const char *untie[] = {"distill.same_funcs=false"};
    CHECK(distill_main(out, NULL, untie, 1, 1, 0, &err) == 0, "untied distill failed: %s", err.msg);
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
    CHECK(distill_main(out, NULL, NULL, 0, 1, 0, &err) == 2 && strstr(err.msg, "distill.layers \"all\" selects 9 layers"),
          "nine layers: %s", err.msg);
    const char *eight[] = {"distill.layers=1..8", "distill.tables=1", "distill.funcs=1", "distill.runs=1"};
    CHECK(distill_main(out, NULL, eight, 4, 1, 0, &err) == 0, "eight of nine layers: %s", err.msg);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmp);
    return check_exit("test_distill");
}
