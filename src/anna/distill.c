/* distill.c — see distill.h. */
#include "attnlab/anna/distill.h"
#include "attnlab/anna/lsh.h"
#include "attnlab/data/task.h"
#include "attnlab/io/atomic_file.h"
#include "attnlab/report/svg.h"
#include "attnlab/train/checkpoint.h"
#include "attnlab/train/evaluate.h"
#include "attnlab/train/progress.h"
#include "attnlab/util/intlist.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The grid: which layers, and each one's ℓ and z values. */
typedef struct Grid {
    int n;                                   /* distilled layers */
    int layer[DISTILL_MAX_LAYERS];
    int tables[DISTILL_MAX_LAYERS][DISTILL_MAX_VALUES], n_tables[DISTILL_MAX_LAYERS];
    int funcs[DISTILL_MAX_LAYERS][DISTILL_MAX_VALUES], n_funcs[DISTILL_MAX_LAYERS];
    long cells;
} Grid;

static int grid_from_config(const CfgDistill *d, int n_layers, Grid *g, AlError *err) {
    char why[160];
    memset(g, 0, sizeof *g);
    if (!strcmp(d->layers, "all")) {
        g->n = n_layers;
        for (int l = 0; l < n_layers; l++) g->layer[l] = l;
    } else if (intlist_parse(d->layers, 0, n_layers - 1, g->layer, DISTILL_MAX_LAYERS, &g->n, why, sizeof why)) {
        return al_fail(err, 2, "distill.layers \"%s\": %s", d->layers, why);
    }
    if (g->n > DISTILL_MAX_LAYERS) return al_fail(err, 2, "distill: at most %d layers", DISTILL_MAX_LAYERS);
    if (intlist_parse_per(d->tables, g->n, 1, 4096, &g->tables[0][0], DISTILL_MAX_VALUES, g->n_tables, why, sizeof why) ||
        intlist_parse_per(d->funcs, g->n, 1, 64, &g->funcs[0][0], DISTILL_MAX_VALUES, g->n_funcs, why, sizeof why))
        return al_fail(err, 2, "distill.tables/funcs: %s", why);
    g->cells = 1;
    for (int i = 0; i < g->n; i++) g->cells *= (long)g->n_tables[i] * g->n_funcs[i];
    return 0;
}

/* Cell c → per layer (table index, func index); the last layer varies fastest. */
static void cell_indices(const Grid *g, long c, int *ti, int *zi) {
    for (int i = g->n - 1; i >= 0; i--) {
        zi[i] = (int)(c % g->n_funcs[i]);
        c /= g->n_funcs[i];
        ti[i] = (int)(c % g->n_tables[i]);
        c /= g->n_tables[i];
    }
}

typedef struct Cell { double mean, std; } Cell;

/* Test token error with ANNA in the grid's layers, hash functions of run r. */
static int run_cell(const Config *cfg, Model *m, Tape *t, const Dataset *test, const Grid *g, const int *ti,
                    const int *zi, int r, double *error, AlError *err) {
    int H = m->cfg.n_heads, dh = m->cfg.d_model / H, rc = 0;
    Lsh *lsh = al_calloc((size_t)g->n * H, sizeof *lsh);
    const Lsh **per_layer = al_calloc((size_t)m->cfg.n_layers, sizeof *per_layer);
    uint64_t seed = (uint64_t)cfg->distill.seed * 1000003u + (uint64_t)r;
    LshFamily fam = cfg->distill.family == DISTILL_CROSSPOLYTOPE ? LSH_CROSSPOLYTOPE : LSH_HYPERPLANE;
    for (int i = 0; i < g->n && !rc; i++) {
        for (int h = 0; h < H && !rc; h++)
            rc = lsh_init(&lsh[i * H + h], fam, dh, g->tables[i][ti[i]], g->funcs[i][zi[i]],
                          lsh_head_seed(seed, g->layer[i], h), err);
        per_layer[g->layer[i]] = &lsh[i * H];
    }
    if (!rc) {
        m->anna = per_layer;
        *error = 1 - evaluate(m, t, test, cfg->train.batch_size, 0).token_acc;
        m->anna = NULL;
    }
    for (int i = 0; i < g->n * H; i++) lsh_free(&lsh[i]);
    free(lsh);
    free(per_layer);
    return rc;
}

static int write_csv(const char *dir, const Grid *g, const Cell *cells, int runs, AlError *err) {
    size_t cap = 256 + (size_t)g->cells * (32 + 24 * g->n), len = 0;
    char *text = al_malloc(cap), path[1024];
    for (int i = 0; i < g->n; i++)
        len += (size_t)snprintf(text + len, cap - len, "layer%d_tables,layer%d_funcs,", g->layer[i], g->layer[i]);
    len += (size_t)snprintf(text + len, cap - len, "mean_error,std_error,runs\n");
    int ti[DISTILL_MAX_LAYERS], zi[DISTILL_MAX_LAYERS];
    for (long c = 0; c < g->cells; c++) {
        cell_indices(g, c, ti, zi);
        for (int i = 0; i < g->n; i++)
            len += (size_t)snprintf(text + len, cap - len, "%d,%d,", g->tables[i][ti[i]], g->funcs[i][zi[i]]);
        len += (size_t)snprintf(text + len, cap - len, "%.6f,%.6f,%d\n", cells[c].mean, cells[c].std, runs);
    }
    snprintf(path, sizeof path, "%s/anna_grid.csv", dir);
    int rc = write_text_atomic(path, text, err);
    free(text);
    return rc;
}

static char **int_labels(const int *v, int n) {
    char **labels = al_calloc((size_t)n, sizeof *labels);
    for (int i = 0; i < n; i++) {
        labels[i] = al_malloc(16);
        snprintf(labels[i], 16, "%d", v[i]);
    }
    return labels;
}

static void free_labels(char **labels, int n) {
    for (int i = 0; i < n; i++) free(labels[i]);
    free(labels);
}

/* One distilled layer: error vs ℓ per z, and the ℓ × z heatmap. */
static int figures_one_layer(const char *dir, const Grid *g, const Cell *cells, const char *what, AlError *err) {
    int nT = g->n_tables[0], nZ = g->n_funcs[0], rc;
    double *x = al_malloc(sizeof(double) * nT), *y = al_malloc(sizeof(double) * nT * nZ),
           *e = al_malloc(sizeof(double) * nT * nZ), *heat = al_malloc(sizeof(double) * nT * nZ);
    SvgSeries *series = al_calloc((size_t)nZ, sizeof *series);
    char (*names)[32] = al_calloc((size_t)nZ, sizeof *names), title[256], path[1024];
    for (int a = 0; a < nT; a++) x[a] = g->tables[0][a];
    for (int z = 0; z < nZ; z++) {
        for (int a = 0; a < nT; a++) {
            const Cell *c = &cells[(long)a * nZ + z];
            y[z * nT + a] = c->mean;
            e[z * nT + a] = c->std;
            heat[a * nZ + z] = c->mean;
        }
        snprintf(names[z], sizeof names[z], "z = %d", g->funcs[0][z]);
        series[z] = (SvgSeries){ names[z], nT, x, y + z * nT, e + z * nT };
    }
    snprintf(title, sizeof title, "ANNA test error vs hash tables (%s)", what);
    SvgLineChart chart = { title, "hash tables l", "test token error (mean ± std over runs)", series, nZ, 0, 0, 1, 0, 1 };
    snprintf(path, sizeof path, "%s/anna_error_vs_tables.svg", dir);
    rc = svg_line_chart(path, &chart, err);
    if (!rc) {
        char **xl = int_labels(g->funcs[0], nZ), **yl = int_labels(g->tables[0], nT);
        SvgHeatmap h = { title, "hash functions per table z", "hash tables l", nT, nZ, (const char *const *)xl,
                         (const char *const *)yl, heat, 1, "%.3f", 1, 0, 1, "test token error" };
        snprintf(path, sizeof path, "%s/anna_heatmap.svg", dir);
        rc = svg_heatmap(path, &h, err);
        free_labels(xl, nZ);
        free_labels(yl, nT);
    }
    free(x); free(y); free(e); free(heat); free(series); free(names);
    return rc;
}

/* Two distilled layers: layer-1 ℓ × layer-2 ℓ, the best mean error over all z pairs. */
static int figures_two_layers(const char *dir, const Grid *g, const Cell *cells, const char *what, AlError *err) {
    int n1 = g->n_tables[0], n2 = g->n_tables[1];
    double *best = al_malloc(sizeof(double) * n1 * n2);
    for (int i = 0; i < n1 * n2; i++) best[i] = INFINITY;
    int ti[DISTILL_MAX_LAYERS], zi[DISTILL_MAX_LAYERS];
    for (long c = 0; c < g->cells; c++) {
        cell_indices(g, c, ti, zi);
        double *b = &best[ti[0] * n2 + ti[1]];
        if (cells[c].mean < *b) *b = cells[c].mean;
    }
    char **xl = int_labels(g->tables[1], n2), **yl = int_labels(g->tables[0], n1), title[256], xt[64], yt[64], path[1024];
    snprintf(title, sizeof title, "ANNA test error, best over z (%s)", what);
    snprintf(xt, sizeof xt, "layer %d hash tables", g->layer[1]);
    snprintf(yt, sizeof yt, "layer %d hash tables", g->layer[0]);
    SvgHeatmap h = { title, xt, yt, n1, n2, (const char *const *)xl, (const char *const *)yl, best, 0, "%.3f",
                     1, 0, 1, "test token error" };
    snprintf(path, sizeof path, "%s/anna_layers_heatmap.svg", dir);
    int rc = svg_heatmap(path, &h, err);
    free_labels(xl, n2);
    free_labels(yl, n1);
    free(best);
    return rc;
}

static int write_summary(const char *dir, const Config *cfg, const Grid *g, const Cell *cells, double surrogate,
                         double seconds, AlError *err) {
    long best = 0;
    for (long c = 1; c < g->cells; c++)
        if (cells[c].mean < cells[best].mean) best = c;
    int ti[DISTILL_MAX_LAYERS], zi[DISTILL_MAX_LAYERS];
    cell_indices(g, best, ti, zi);
    char text[2048], cell[512] = "";
    size_t len = 0;
    for (int i = 0; i < g->n; i++)
        len += (size_t)snprintf(cell + len, sizeof cell - len, "%s{\"layer\": %d, \"tables\": %d, \"funcs\": %d}",
                                i ? ", " : "", g->layer[i], g->tables[i][ti[i]], g->funcs[i][zi[i]]);
    snprintf(text, sizeof text,
             "{\n  \"surrogate_test_error\": %.6f,\n  \"family\": \"%s\",\n  \"runs\": %d,\n  \"cells\": %ld,\n"
             "  \"best_mean_error\": %.6f,\n  \"best_std_error\": %.6f,\n  \"best_cell\": [%s],\n"
             "  \"seconds\": %.2f\n}\n",
             surrogate, cfg->distill.family == DISTILL_CROSSPOLYTOPE ? "crosspolytope" : "hyperplane",
             cfg->distill.runs, g->cells, cells[best].mean, cells[best].std, cell, seconds);
    char path[1024];
    snprintf(path, sizeof path, "%s/anna_summary.json", dir);
    return write_text_atomic(path, text, err);
}

int distill_run(const Config *cfg, Model *m, const Dataset *test, const char *dir, int quiet, AlError *err) {
    if (m->cfg.type != MODEL_TRANSFORMER || m->cfg.attention.type != ATTN_SOFTMAX)
        return al_fail(err, 2, "distill: ANNA replaces softmax attention; this model is %s",
                       m->cfg.type == MODEL_LSTM ? "an LSTM" : "a linear/sparse-attention transformer");
    Grid g;
    if (grid_from_config(&cfg->distill, m->cfg.n_layers, &g, err)) return err->code;
    Arena arena;
    arena_init(&arena, 8u << 20);
    Tape tape;
    tape_init(&tape, &arena);
    double t0 = progress_now(), surrogate = 1 - evaluate(m, &tape, test, cfg->train.batch_size, 0).token_acc;
    if (!quiet) printf("distill: surrogate test token error %.4f; %ld cells x %d runs\n", surrogate, g.cells, cfg->distill.runs);
    Cell *cells = al_calloc((size_t)g.cells, sizeof *cells);
    double *errs = al_malloc(sizeof(double) * cfg->distill.runs);
    int rc = 0, ti[DISTILL_MAX_LAYERS], zi[DISTILL_MAX_LAYERS];
    for (long c = 0; c < g.cells && !rc; c++) {
        cell_indices(&g, c, ti, zi);
        double sum = 0, sq = 0;
        for (int r = 0; r < cfg->distill.runs && !rc; r++) {
            rc = run_cell(cfg, m, &tape, test, &g, ti, zi, r, &errs[r], err);
            sum += errs[r];
        }
        cells[c].mean = sum / cfg->distill.runs;
        for (int r = 0; r < cfg->distill.runs; r++) sq += (errs[r] - cells[c].mean) * (errs[r] - cells[c].mean);
        cells[c].std = cfg->distill.runs > 1 ? sqrt(sq / (cfg->distill.runs - 1)) : 0;
    }
    char what[128];
    snprintf(what, sizeof what, "%s LSH, %d runs per cell", cfg->distill.family == DISTILL_CROSSPOLYTOPE ?
             "cross-polytope" : "hyperplane", cfg->distill.runs);
    if (!rc) rc = write_csv(dir, &g, cells, cfg->distill.runs, err);
    if (!rc && g.n == 1) rc = figures_one_layer(dir, &g, cells, what, err);
    if (!rc && g.n == 2) rc = figures_two_layers(dir, &g, cells, what, err);
    if (!rc) rc = write_summary(dir, cfg, &g, cells, surrogate, progress_now() - t0, err);
    if (!rc && !quiet) printf("distill: wrote %s/anna_grid.csv (%.1fs)\n", dir, progress_now() - t0);
    free(cells);
    free(errs);
    tape_free(&tape);
    arena_free(&arena);
    return rc;
}

int distill_main(const char *run_dir, const char *const *overrides, int n_overrides, int quiet, AlError *err) {
    char path[1024];
    Config cfg;
    snprintf(path, sizeof path, "%s/config.json", run_dir);
    if (cfg_load(&cfg, path, overrides, n_overrides, err)) return err->code;
    TaskData td;
    if (task_build_from(&cfg, path, &td, err)) return err->code;
    Model *m = model_create(&cfg.model, td.vocab_size, td.n_classes, td.seq_len, cfg.seed);
    snprintf(path, sizeof path, "%s/model.safetensors", run_dir);
    int rc = checkpoint_load_model(path, m, err);
    if (!rc) rc = distill_run(&cfg, m, &td.test, run_dir, quiet, err);
    model_free(m);
    task_free(&td);
    return rc;
}
