/* distill.c — see distill.h. */
#include "attnlab/anna/distill.h"
#include "attnlab/anna/finetune.h"
#include "attnlab/anna/grid_journal.h"
#include "attnlab/anna/lsh.h"
#include "attnlab/anna/ops_anna.h"
#include "attnlab/data/task.h"
#include "attnlab/io/atomic_file.h"
#include "attnlab/io/crc32c.h"
#include "attnlab/io/dirlock.h"
#include "attnlab/report/svg.h"
#include "attnlab/train/checkpoint.h"
#include "attnlab/train/evaluate.h"
#include "attnlab/train/progress.h"
#include "attnlab/util/fsutil.h"
#include "attnlab/util/intlist.h"
#include "attnlab/util/rng.h"
#include "attnlab/util/strbuf.h"

#include <cJSON.h>
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
    int same_funcs;                          /* one z axis shared by every layer */
    long cells;
} Grid;

static int grid_from_config(const CfgDistill *d, int n_layers, Grid *g, AlError *err) {
    char why[160];
    memset(g, 0, sizeof *g);
    /* Checked before g->layer[] is written: it has room for DISTILL_MAX_LAYERS. */
    if (!strcmp(d->layers, "all") && n_layers > DISTILL_MAX_LAYERS)
        return al_fail(err, 2, "distill.layers \"all\" selects %d layers (model.n_layers), more than the %d one "
                       "distillation grid replaces: list at most %d, e.g. \"0..%d\"", n_layers, DISTILL_MAX_LAYERS,
                       DISTILL_MAX_LAYERS, DISTILL_MAX_LAYERS - 1);
    if (!strcmp(d->layers, "all")) {
        g->n = n_layers;
        for (int l = 0; l < n_layers; l++) g->layer[l] = l;
    } else if (intlist_parse(d->layers, 0, n_layers - 1, g->layer, DISTILL_MAX_LAYERS, &g->n, why, sizeof why)) {
        return al_fail(err, 2, "distill.layers \"%s\": %s", d->layers, why);
    }
    if (intlist_parse_per(d->tables, g->n, 1, 4096, &g->tables[0][0], DISTILL_MAX_VALUES, g->n_tables, why, sizeof why) ||
        intlist_parse_per(d->funcs, g->n, 1, 64, &g->funcs[0][0], DISTILL_MAX_VALUES, g->n_funcs, why, sizeof why))
        return al_fail(err, 2, "distill.tables/funcs: %s", why);
    g->same_funcs = d->same_funcs;   /* the config check made every layer's z list the same */
    g->cells = g->same_funcs ? g->n_funcs[0] : 1;
    for (int i = 0; i < g->n; i++) g->cells *= (long)g->n_tables[i] * (g->same_funcs ? 1 : g->n_funcs[i]);
    return 0;
}

/* Cell c → per layer (table index, func index); the last layer varies fastest,
 * a shared z fastest of all. */
static void cell_indices(const Grid *g, long c, int *ti, int *zi) {
    int shared = 0;
    if (g->same_funcs) {
        shared = (int)(c % g->n_funcs[0]);
        c /= g->n_funcs[0];
    }
    for (int i = g->n - 1; i >= 0; i--) {
        zi[i] = shared;
        if (!g->same_funcs) {
            zi[i] = (int)(c % g->n_funcs[i]);
            c /= g->n_funcs[i];
        }
        ti[i] = (int)(c % g->n_tables[i]);
        c /= g->n_tables[i];
    }
}

/* A cell's errors over its draws: on the validation set (what cells are chosen
 * by) and on the test set (what is reported). */
typedef struct Cell { double v_mean, v_std, mean, std; } Cell;

static AnnaCell grid_cell(const Grid *g, long c) {
    int ti[DISTILL_MAX_LAYERS], zi[DISTILL_MAX_LAYERS];
    cell_indices(g, c, ti, zi);
    AnnaCell a = { .n = g->n };
    for (int i = 0; i < g->n; i++) {
        a.layer[i] = g->layer[i];
        a.tables[i] = g->tables[i][ti[i]];
        a.funcs[i] = g->funcs[i][zi[i]];
    }
    return a;
}

LshFamily distill_family(const CfgDistill *d) {
    return d->family == DISTILL_CROSSPOLYTOPE ? LSH_CROSSPOLYTOPE : LSH_HYPERPLANE;
}

/* The seed of cell c's draw r (derivation in distill.h): a chain of rng_stream
 * steps, each folding one word into the running value. */
static uint64_t fold(uint64_t acc, uint64_t word) {
    Rng r = rng_stream(acc, word);
    return rng_u64(&r);
}

uint64_t distill_cell_seed(const CfgDistill *d, const AnnaCell *c, int r) {
    uint64_t acc = fold((uint64_t)d->seed, 0x616e6e6163656c6cull /* "annacell" */);
    acc = fold(acc, (uint64_t)c->n);
    for (int i = 0; i < c->n; i++) {
        acc = fold(acc, (uint64_t)c->layer[i]);
        acc = fold(acc, (uint64_t)c->tables[i]);
        acc = fold(acc, (uint64_t)c->funcs[i]);
    }
    return fold(acc, (uint64_t)r);
}

int anna_hashes_init(AnnaHashes *h, const Model *m, const AnnaCell *c, LshFamily family, int last_dim,
                     uint64_t seed, AlError *err) {
    int H = m->cfg.n_heads, dh = m->cfg.d_model / H, rc = 0;
    h->lsh = al_calloc((size_t)c->n * H, sizeof *h->lsh);
    h->per_layer = al_calloc((size_t)m->cfg.n_layers, sizeof *h->per_layer);
    h->model_anna = (ModelAnna){ ad_anna_attention, h->per_layer };
    for (int i = 0; i < c->n && !rc; i++) {
        for (int k = 0; k < H && !rc; k++)
            rc = lsh_init_last(&h->lsh[i * H + k], family, dh, c->tables[i], c->funcs[i],
                               family == LSH_CROSSPOLYTOPE ? last_dim : 0, lsh_head_seed(seed, c->layer[i], k), err);
        h->per_layer[c->layer[i]] = &h->lsh[i * H];
    }
    /* lsh_free is safe on the zeroed (never drawn or failed) entries. */
    h->n_lsh = c->n * H;
    return rc;
}

void anna_hashes_free(AnnaHashes *h) {
    for (int i = 0; i < h->n_lsh; i++) lsh_free(&h->lsh[i]);
    free(h->lsh);
    free(h->per_layer);
    memset(h, 0, sizeof *h);
}

double anna_test_error(Model *m, Tape *t, const Dataset *test, const AnnaHashes *h, int batch_size) {
    m->anna = h ? &h->model_anna : NULL;
    double error = 1 - evaluate(m, t, test, batch_size, 0).token_acc;
    m->anna = NULL;
    return error;
}

int distill_draw_hashes(AnnaHashes *h, const Config *cfg, const Model *m, const AnnaCell *cell, int r, AlError *err) {
    return anna_hashes_init(h, m, cell, distill_family(&cfg->distill), cfg->distill.last_dim,
                            distill_cell_seed(&cfg->distill, cell, r), err);
}

static void mean_std(const double *x, int n, double *mean, double *std) {
    double sum = 0, sq = 0;
    for (int r = 0; r < n; r++) sum += x[r];
    *mean = sum / n;
    for (int r = 0; r < n; r++) sq += (x[r] - *mean) * (x[r] - *mean);
    *std = n > 1 ? sqrt(sq / (n - 1)) : 0;
}

/* Each of the cell's draws on both sets (valid may be NULL); tick (may be NULL)
 * after every draw, for the progress lines. */
static int cell_errors(const Config *cfg, Model *m, Tape *t, const Dataset *valid, const Dataset *test,
                       const AnnaCell *cell, double *v_mean, double *v_std, double *mean, double *std,
                       void (*tick)(void *), void *tick_arg, AlError *err) {
    const int runs = cfg->distill.runs, bs = cfg->train.batch_size;
    double *errs = al_calloc((size_t)runs * 2, sizeof(double));
    int rc = 0;
    for (int r = 0; r < runs && !rc; r++) {
        AnnaHashes h;
        rc = distill_draw_hashes(&h, cfg, m, cell, r, err);
        if (!rc && valid) errs[runs + r] = anna_test_error(m, t, valid, &h, bs);
        if (!rc) errs[r] = anna_test_error(m, t, test, &h, bs);
        anna_hashes_free(&h);
        if (!rc && tick) tick(tick_arg);
    }
    mean_std(errs, runs, mean, std);
    if (valid) mean_std(errs + runs, runs, v_mean, v_std);
    free(errs);
    return rc;
}

int distill_cell_error(const Config *cfg, Model *m, Tape *t, const Dataset *test, const AnnaCell *cell,
                       double *mean, double *std, AlError *err) {
    return cell_errors(cfg, m, t, NULL, test, cell, NULL, NULL, mean, std, NULL, NULL, err);
}

static int write_csv(const char *dir, const Grid *g, const Cell *cells, int runs, AlError *err) {
    size_t cap = 256 + (size_t)g->cells * (64 + 24 * g->n), len = 0;
    char *text = al_malloc(cap), path[AL_PATH_MAX];
    for (int i = 0; i < g->n; i++)
        len += (size_t)snprintf(text + len, cap - len, "layer%d_tables,layer%d_funcs,", g->layer[i], g->layer[i]);
    len += (size_t)snprintf(text + len, cap - len, "valid_mean_error,valid_std_error,test_mean_error,test_std_error,runs\n");
    int ti[DISTILL_MAX_LAYERS], zi[DISTILL_MAX_LAYERS];
    for (long c = 0; c < g->cells; c++) {
        cell_indices(g, c, ti, zi);
        for (int i = 0; i < g->n; i++)
            len += (size_t)snprintf(text + len, cap - len, "%d,%d,", g->tables[i][ti[i]], g->funcs[i][zi[i]]);
        len += (size_t)snprintf(text + len, cap - len, "%.6f,%.6f,%.6f,%.6f,%d\n", cells[c].v_mean, cells[c].v_std,
                                cells[c].mean, cells[c].std, runs);
    }
    int rc = al_path_fmt(path, sizeof path, err, "%s/anna_grid.csv", dir) ? err->code
                                                                        : write_text_atomic(path, text, err);
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
    char (*names)[32] = al_calloc((size_t)nZ, sizeof *names), title[256], path[AL_PATH_MAX];
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
    rc = al_path_fmt(path, sizeof path, err, "%s/anna_error_vs_tables.svg", dir) ? err->code
                                                                              : svg_line_chart(path, &chart, err);
    if (!rc) {
        char **xl = int_labels(g->funcs[0], nZ), **yl = int_labels(g->tables[0], nT);
        SvgHeatmap h = { title, "hash functions per table z", "hash tables l", nT, nZ, (const char *const *)xl,
                         (const char *const *)yl, heat, 1, "%.3f", 1, 0, 1, "test token error" };
        rc = al_path_fmt(path, sizeof path, err, "%s/anna_heatmap.svg", dir) ? err->code : svg_heatmap(path, &h, err);
        free_labels(xl, nZ);
        free_labels(yl, nT);
    }
    free(x); free(y); free(e); free(heat); free(series); free(names);
    return rc;
}

/* Two distilled layers: layer-1 ℓ × layer-2 ℓ; per square, the z pair of least mean
 * validation error, shown with its test error (the paper's Fig. 1b takes the best
 * over z; choosing it on validation keeps the test set out of the choice). */
static int figures_two_layers(const char *dir, const Grid *g, const Cell *cells, const char *what, AlError *err) {
    int n1 = g->n_tables[0], n2 = g->n_tables[1];
    double *best = al_malloc(sizeof(double) * n1 * n2), *best_v = al_malloc(sizeof(double) * n1 * n2);
    for (int i = 0; i < n1 * n2; i++) best[i] = best_v[i] = INFINITY;
    int ti[DISTILL_MAX_LAYERS], zi[DISTILL_MAX_LAYERS];
    for (long c = 0; c < g->cells; c++) {
        cell_indices(g, c, ti, zi);
        long k = (long)ti[0] * n2 + ti[1];
        if (cells[c].v_mean < best_v[k]) best_v[k] = cells[c].v_mean, best[k] = cells[c].mean;
    }
    free(best_v);
    char **xl = int_labels(g->tables[1], n2), **yl = int_labels(g->tables[0], n1), title[256], xt[64], yt[64], path[AL_PATH_MAX];
    snprintf(title, sizeof title, "ANNA test error, z chosen on validation (%s)", what);
    snprintf(xt, sizeof xt, "layer %d hash tables", g->layer[1]);
    snprintf(yt, sizeof yt, "layer %d hash tables", g->layer[0]);
    SvgHeatmap h = { title, xt, yt, n1, n2, (const char *const *)xl, (const char *const *)yl, best, 0, "%.3f",
                     1, 0, 1, "test token error" };
    int rc = al_path_fmt(path, sizeof path, err, "%s/anna_layers_heatmap.svg", dir) ? err->code
                                                                                 : svg_heatmap(path, &h, err);
    free_labels(xl, n2);
    free_labels(yl, n1);
    free(best);
    return rc;
}

/* The cell of least mean validation error (the first of equals): chosen without
 * looking at the test set, whose error is then reported for it. */
static long best_cell(const Grid *g, const Cell *cells) {
    long best = 0;
    for (long c = 1; c < g->cells; c++)
        if (cells[c].v_mean < cells[best].v_mean) best = c;
    return best;
}

/* extra: more members for the object ("\"finetune\": {…}"), or NULL. */
static int write_summary(const char *dir, const char *model_path, const Config *cfg, const Grid *g,
                         const Cell *cells, double surrogate, double surrogate_valid, int valid_n, int test_n,
                         double seconds, long resumed, const char *extra, AlError *err) {
    long best = best_cell(g, cells);
    AnnaCell a = grid_cell(g, best);
    char cell[512] = "";
    size_t len = 0, cap = 2112 + (extra ? strlen(extra) : 0) + 2 * strlen(model_path);
    cJSON *model_json = cJSON_CreateString(model_path);
    char *model = cJSON_PrintUnformatted(model_json);   /* the path as a JSON string, escaped */
    cJSON_Delete(model_json);
    if (!model) return al_fail(err, 1, "out of memory writing %s/anna_summary.json", dir);
    for (int i = 0; i < a.n; i++)
        len += (size_t)snprintf(cell + len, sizeof cell - len, "%s{\"layer\": %d, \"tables\": %d, \"funcs\": %d}",
                                i ? ", " : "", a.layer[i], a.tables[i], a.funcs[i]);
    /* A continued grid: "seconds" is the last sitting's; the cells the journal held are counted. */
    char resumed_note[64] = "";
    if (resumed) snprintf(resumed_note, sizeof resumed_note, ",\n  \"cells_from_journal\": %ld", resumed);
    char *text = al_malloc(cap);
    snprintf(text, cap,
             "{\n  \"model\": %s,\n  \"surrogate_test_error\": %.6f,\n  \"surrogate_valid_error\": %.6f,\n  \"family\": \"%s\",\n"
             "  \"last_dim\": %d,\n  \"runs\": %d,\n  \"seed\": %d,\n  \"cells\": %ld,\n  \"valid_size\": %d,\n  \"test_size\": %d,\n"
             "  \"positions\": \"%s\",\n  \"chosen_on\": \"validation\",\n"
             "  \"best_valid_mean_error\": %.6f,\n  \"best_valid_std_error\": %.6f,\n"
             "  \"best_mean_error\": %.6f,\n  \"best_std_error\": %.6f,\n  \"best_cell\": [%s],\n"
             "  \"seconds\": %.2f%s%s%s\n}\n",
             model, surrogate, surrogate_valid, cfg->distill.family == DISTILL_CROSSPOLYTOPE ? "crosspolytope" : "hyperplane",
             cfg->distill.last_dim, cfg->distill.runs, cfg->distill.seed, g->cells, valid_n, test_n,
             cfg->distill.score_all ? "all" : "task", cells[best].v_mean, cells[best].v_std, cells[best].mean,
             cells[best].std, cell, seconds, resumed_note, extra ? ",\n  " : "", extra ? extra : "");
    char path[AL_PATH_MAX];
    int rc = al_path_fmt(path, sizeof path, err, "%s/anna_summary.json", dir) ? err->code
                                                                           : write_text_atomic(path, text, err);
    free(text);
    cJSON_free(model);
    return rc;
}

/* The cells distill.finetune_cells names.  "auto": the grid's best cell, and its
 * best cell among those with the fewest tables in all (both by validation error) — the cheapest ANNA, where
 * the grid's error is largest and fine-tuning has the most room (one cell when
 * the two coincide).  A user's list: ℓ × z per distilled layer, in or off the grid. */
static int finetune_cells(const CfgDistill *d, const Grid *g, const Cell *cells, AnnaCell *out, int *n,
                          char *why, size_t why_len) {
    if (strcmp(d->finetune_cells, "auto")) {
        if (finetune_parse_cells(d->finetune_cells, g->n, out, FINETUNE_MAX_CELLS, n, why, why_len)) return -1;
        for (int c = 0; c < *n; c++)
            for (int i = 0; i < g->n; i++) out[c].layer[i] = g->layer[i];
        return 0;
    }
    long best = best_cell(g, cells), cheap = -1, cheap_tables = 0;
    for (long c = 0; c < g->cells; c++) {
        AnnaCell a = grid_cell(g, c);
        long tables = 0;
        for (int i = 0; i < a.n; i++) tables += a.tables[i];
        if (cheap < 0 || tables < cheap_tables || (tables == cheap_tables && cells[c].v_mean < cells[cheap].v_mean)) {
            cheap = c;
            cheap_tables = tables;
        }
    }
    out[0] = grid_cell(g, best);
    *n = 1;
    if (cheap != best) out[(*n)++] = grid_cell(g, cheap);
    return 0;
}

/* ---- progress: the grid's size, an estimate before it starts, an ETA while it runs ----
 *
 * Every progress line goes to stderr (stdout keeps what the grid wrote), is
 * flushed, and names cells done/total, the elapsed time and an ETA.  A line is
 * due when none was printed for progress_interval_s() — checked after every hash
 * draw, so a grid whose cells take minutes still reports.  --quiet: none. */

/* A cell's hashing load: hash functions per head summed over its distilled layers
 * (tables × functions each).  What a draw costs grows with it; cells are ordered
 * cheap to dear along the lists, so a plain cells-done rate would promise too
 * early an end. */
static long cell_load(const Grid *g, long c) {
    AnnaCell a = grid_cell(g, c);
    long load = 0;
    for (int i = 0; i < a.n; i++) load += (long)a.tables[i] * a.funcs[i];
    return load;
}

/* Seconds per draw modelled as a + b·load, fitted to one timed draw of the first
 * and of the last cell (the grid's cheapest and dearest corners when its lists
 * ascend); done_w/total_w: predicted seconds of the draws done / of all, so the
 * ETA scales the prediction by how fast the run has really been. */
typedef struct GridClock {
    const Grid *g;
    int runs;
    double a, b, total_w, done_w;
    double t0, last_line, interval_s;
    long done, cell, draws;       /* cells finished; the cell running, its draws done */
    long resumed;                 /* of the cells finished, those read from the journal */
} GridClock;

static int time_one_draw(const Config *cfg, Model *m, Tape *t, const Dataset *valid, const Dataset *test,
                         const Grid *g, long c, double *seconds, AlError *err) {
    AnnaCell a = grid_cell(g, c);
    AnnaHashes h;
    double t0 = progress_now();
    int rc = distill_draw_hashes(&h, cfg, m, &a, 0, err);
    if (!rc) anna_test_error(m, t, valid, &h, cfg->train.batch_size);
    if (!rc) anna_test_error(m, t, test, &h, cfg->train.batch_size);
    anna_hashes_free(&h);
    *seconds = progress_now() - t0;
    return rc;
}

static void clock_fit(GridClock *k, const Grid *g, double t_first, double t_last) {
    long h_first = cell_load(g, 0), h_last = cell_load(g, g->cells - 1);
    k->b = h_last != h_first ? (t_last - t_first) / (double)(h_last - h_first) : 0;
    k->a = t_first - k->b * (double)h_first;
    if (k->b < 0) k->a = (t_first + t_last) / 2, k->b = 0;   /* timing noise: no trend */
    if (k->a < 0) k->a = 0, k->b = (t_first + t_last) / (double)(h_first + h_last);
}

static double clock_draw_weight(const GridClock *k, long c) { return k->a + k->b * (double)cell_load(k->g, c); }

/* Prints the grid's size, times the two calibration draws and prints the estimate
 * for the cells not done yet (done[c]: found in the journal). */
static int clock_start(GridClock *k, const Config *cfg, Model *m, Tape *t, const Dataset *valid, const Dataset *test,
                       const Grid *g, double surrogate, const unsigned char *done, long n_done, const char *journal,
                       AlError *err) {
    int runs = cfg->distill.runs;
    memset(k, 0, sizeof *k);
    k->g = g;
    k->runs = runs;
    k->done = k->resumed = n_done;
    fprintf(stderr, "distill: surrogate test token error %.4f; grid of %ld cells x %d draws = %ld evaluations of %d "
            "validation + %d test sequences\n", surrogate, g->cells, runs, g->cells * runs, valid->n, test->n);
    if (n_done)
        fprintf(stderr, "distill: continuing: %ld of %ld cells were done (read from the grid journal)\n", n_done,
                g->cells);
    fprintf(stderr, "distill: finished cells are kept in %s; if the grid is stopped, the same command with --resume "
            "continues it\n", journal);
    fflush(stderr);
    double t_first, t_last;
    if (time_one_draw(cfg, m, t, valid, test, g, 0, &t_first, err)) return err->code;
    if (g->cells == 1) t_last = t_first;
    else if (time_one_draw(cfg, m, t, valid, test, g, g->cells - 1, &t_last, err)) return err->code;
    clock_fit(k, g, t_first, t_last);
    for (long c = 0; c < g->cells; c++) k->total_w += done[c] ? 0 : runs * clock_draw_weight(k, c);
    char eta[32];
    progress_format_eta(eta, sizeof eta, k->total_w);
    fprintf(stderr, "distill: estimated %s for the grid (one draw of the first cell took %.3fs, of the last %.3fs)\n",
            eta, t_first, t_last);
    fflush(stderr);
    k->t0 = k->last_line = progress_now();
    k->interval_s = progress_interval_s();
    return 0;
}

/* One draw of k->cell is done: a line when none was printed for the interval. */
static void clock_draw_done(void *arg) {
    GridClock *k = arg;
    k->done_w += clock_draw_weight(k, k->cell);
    if (++k->draws == k->runs) k->done++, k->draws = 0;
    double now = progress_now(), elapsed = now - k->t0;
    if (now - k->last_line < k->interval_s || k->done == k->g->cells) return;
    k->last_line = now;
    char eta[32], spent[32];
    progress_format_eta(eta, sizeof eta, k->done_w > 0 ? elapsed * (k->total_w - k->done_w) / k->done_w : -1);
    progress_format_eta(spent, sizeof spent, elapsed);
    long evals = (k->done - k->resumed) * k->runs + k->draws;   /* this sitting's */
    fprintf(stderr, "distill: %ld/%ld cells (%ld%%) | elapsed %s | %.1f evaluations/s | ETA %s\n", k->done,
            k->g->cells, 100 * k->done / k->g->cells, spent, elapsed > 0 ? (double)evals / elapsed : 0, eta);
    fflush(stderr);
}

/* ---- the evaluation sets ---- */

void distill_eval_set(const Config *cfg, const TaskData *td, const Dataset *src, Dataset *out) {
    dataset_alloc(out, src->n, src->seq_len, src->vocab_size, src->n_classes);
    memcpy(out->tokens, src->tokens, (size_t)src->n * src->seq_len * sizeof(int));
    memcpy(out->targets, src->targets, (size_t)src->n * src->seq_len * sizeof(int));
    if (src->info) {
        dataset_alloc_info(out);
        memcpy(out->info, src->info, (size_t)src->n * sizeof *src->info);
    }
    out->pad_id = src->pad_id;
    out->multilabel = src->multilabel;
    if (cfg->distill.score_all && cfg->task.type == TASK_KHOP)
        for (int r = 0; r < out->n; r++) {
            int *tgt = dataset_targets(out, r);
            if (tgt[0] == DATASET_IGNORE) tgt[0] = khop_null_class(&td->params.khop.p);
        }
}

/* What ANNA can replace: softmax attention over unit-norm queries and keys (the
 * LSH hashes directions; a "dot" surrogate's attention depends on norms too). */
static int check_model(const CfgModel *m, const char *source, AlError *err) {
    if (m->type != MODEL_TRANSFORMER)
        return al_fail(err, 2, "distill: ANNA replaces softmax attention; this model's model.type is \"%s\"",
                       model_type_name(m->type));
    if (m->attention.type != ATTN_SOFTMAX)
        return al_fail(err, 2, "distill: ANNA replaces softmax attention; this model is a linear/sparse-attention "
                       "transformer");
    if (m->attention.score != SCORE_UNIT_NORM)
        return al_fail(err, 2, "%s%smodel.attention.score: distillation into ANNA needs \"unit_norm\" (the softmax "
                       "surrogate must compare unit-norm queries and keys, as the LSH hashes directions only), but "
                       "this model's is \"%s\"", source ? source : "", source && *source ? ": " : "",
                       m->attention.score == SCORE_DOT ? "dot" : "unknown");
    return 0;
}

static uint32_t dataset_crc(const Dataset *d) {
    size_t n = (size_t)d->n * d->seq_len * sizeof(int);
    return crc32c(crc32c(0, d->tokens, n), d->targets, n);
}

/* The grid's identity for its journal: everything a cell's numbers depend on — the
 * model's parameters, the two evaluation sets (checksums), the hash family and
 * seeds, the draws per cell, the scored positions — and the grid's cells. */
static char *journal_key(const Config *cfg, const Model *m, const Grid *g, const Dataset *valid, const Dataset *test) {
    const CfgDistill *d = &cfg->distill;
    StrBuf b = {0};
    strbuf_printf(&b, "family=%s last_dim=%d runs=%d seed=%d positions=%s model=%08x valid=%d:%08x test=%d:%08x",
                  lsh_family_name(distill_family(d)), d->last_dim, d->runs, d->seed, d->score_all ? "all" : "task",
                  crc32c(0, m->params.data, (size_t)m->params.total * sizeof(float)), valid->n, dataset_crc(valid),
                  test->n, dataset_crc(test));
    for (int i = 0; i < g->n; i++) {
        strbuf_printf(&b, " layer%d=tables:", g->layer[i]);
        for (int k = 0; k < g->n_tables[i]; k++) strbuf_printf(&b, "%s%d", k ? "," : "", g->tables[i][k]);
        strbuf_printf(&b, "/funcs:");
        for (int k = 0; k < g->n_funcs[i]; k++) strbuf_printf(&b, "%s%d", k ? "," : "", g->funcs[i][k]);
    }
    strbuf_printf(&b, " same_funcs=%d", g->same_funcs);
    return b.s;
}

/* Opens the journal and fills cells[] with the cells it holds (done[c] set). */
static int journal_resume(GridJournal *j, const char *dir, const char *key, const Grid *g, JournalMode mode,
                          Cell *cells, unsigned char *done, long *n_done, AlError *err) {
    double *vals = al_calloc((size_t)g->cells * JOURNAL_VALUES, sizeof(double));
    int rc = grid_journal_open(j, dir, key, g->cells, mode, done, vals, n_done, err);
    for (long c = 0; c < g->cells && !rc; c++)
        if (done[c]) {
            const double *v = vals + c * JOURNAL_VALUES;
            cells[c] = (Cell){ v[0], v[1], v[2], v[3] };
        }
    free(vals);
    return rc;
}

int distill_run(const Config *cfg, Model *m, const TaskData *td, const char *dir, const char *model_path, int quiet,
                JournalMode journal, AlError *err) {
    if (check_model(&m->cfg, td->source, err)) return err->code;
    Grid g;
    if (grid_from_config(&cfg->distill, m->cfg.n_layers, &g, err)) return err->code;
    Dataset drawn, valid, test;
    TaskSpec spec;
    if (task_build_validation(cfg_task_spec(cfg, &spec), td, &drawn, err)) return err->code;
    distill_eval_set(cfg, td, &drawn, &valid);
    distill_eval_set(cfg, td, &td->test, &test);
    dataset_free(&drawn);
    Arena arena;
    arena_init(&arena, 8u << 20);
    Tape tape;
    tape_init(&tape, &arena);
    double t0 = progress_now(), surrogate = anna_test_error(m, &tape, &test, NULL, cfg->train.batch_size);
    double surrogate_valid = anna_test_error(m, &tape, &valid, NULL, cfg->train.batch_size);
    Cell *cells = al_calloc((size_t)g.cells, sizeof *cells);
    unsigned char *done = al_calloc((size_t)g.cells, 1);
    char *key = journal_key(cfg, m, &g, &valid, &test);
    GridJournal jr;
    long n_done = 0;
    GridClock clock;
    int rc = journal_resume(&jr, dir, key, &g, journal, cells, done, &n_done, err);
    if (!rc && !quiet) rc = clock_start(&clock, cfg, m, &tape, &valid, &test, &g, surrogate, done, n_done, jr.path, err);
    for (long c = 0; c < g.cells && !rc; c++) {
        if (done[c]) continue;
        AnnaCell a = grid_cell(&g, c);
        clock.cell = c;
        rc = cell_errors(cfg, m, &tape, &valid, &test, &a, &cells[c].v_mean, &cells[c].v_std, &cells[c].mean,
                         &cells[c].std, quiet ? NULL : clock_draw_done, &clock, err);
        if (!rc) rc = grid_journal_add(&jr, c, (const double[]){ cells[c].v_mean, cells[c].v_std, cells[c].mean,
                                                                 cells[c].std }, err);
    }
    free(key);
    free(done);
    tape_free(&tape);
    arena_free(&arena);
    char what[128];
    snprintf(what, sizeof what, "%s LSH, %d runs per cell", cfg->distill.family == DISTILL_CROSSPOLYTOPE ?
             "cross-polytope" : "hyperplane", cfg->distill.runs);
    if (!rc) rc = write_csv(dir, &g, cells, cfg->distill.runs, err);
    if (!rc && g.n == 1) rc = figures_one_layer(dir, &g, cells, what, err);
    if (!rc && g.n == 2) rc = figures_two_layers(dir, &g, cells, what, err);
    if (!rc) rc = write_summary(dir, model_path, cfg, &g, cells, surrogate, surrogate_valid, valid.n, test.n,
                                progress_now() - t0, n_done, NULL, err);
    grid_journal_close(&jr, !rc);   /* kept unless the grid's outputs are all written */
    if (!rc && !quiet) {
        long best = best_cell(&g, cells);
        printf("distill: wrote %s/anna_grid.csv (%.1fs); best cell by validation error %.4f: test error %.4f ± %.4f "
               "(surrogate %.4f)\n", dir, progress_now() - t0, cells[best].v_mean, cells[best].mean, cells[best].std,
               surrogate);
        fflush(stdout);
    }
    if (!rc && cfg->distill.finetune_steps > 0) {
        /* The grid's outputs are written first: a failed fine-tuning keeps them. */
        AnnaCell ft[FINETUNE_MAX_CELLS];
        int n_ft = 0;
        char *extra = NULL, why[160];
        if (finetune_cells(&cfg->distill, &g, cells, ft, &n_ft, why, sizeof why))
            rc = al_fail(err, 2, "distill.finetune_cells \"%s\": %s", cfg->distill.finetune_cells, why);
        TaskData scored = *td;   /* the fine-tuning reports errors on the grid's test positions */
        scored.test = test;
        if (!rc) rc = finetune_run(cfg, m, &scored, ft, n_ft, dir, quiet, &extra, err);
        if (!rc) rc = write_summary(dir, model_path, cfg, &g, cells, surrogate, surrogate_valid, valid.n, test.n,
                                    progress_now() - t0, n_done, extra, err);
        free(extra);
    }
    free(cells);
    dataset_free(&valid);
    dataset_free(&test);
    return rc;
}

int distill_main(const char *run_dir, const char *out_dir, const char *const *overrides, int n_overrides, int quiet,
                 int resume, AlError *err) {
    char path[AL_PATH_MAX], model_path[AL_PATH_MAX];
    Config cfg;
    /* Both folders fit with the files joined to them, or nothing starts. */
    if (al_path_check(run_dir, AL_FOLDER_ROOM, "distill: the run folder", err) ||
        (out_dir && al_path_check(out_dir, AL_FOLDER_ROOM, "distill: --out", err)))
        return err->code;
    AL_ASSERT(!al_path_fmt(path, sizeof path, NULL, "%s/config.json", run_dir));
    if (cfg_load(&cfg, path, overrides, n_overrides, err)) return err->code;
    if (check_model(&cfg.model, path, err)) return err->code;   /* before any data is drawn */
    TaskData td;
    TaskSpec spec;
    if (task_build_from(cfg_task_spec(&cfg, &spec), path, &td, err)) return err->code;
    /* Not while a run (or another distillation) is writing in the run folder, or
     * another distillation in the output folder. */
    DirLock lock, out_lock;
    dirlock_init(&lock);
    dirlock_init(&out_lock);
    int separate = out_dir && strcmp(out_dir, run_dir) != 0;
    if (dirlock_acquire(&lock, run_dir, "run", 0, err) ||
        (separate && (al_mkdir_p(out_dir, err) || dirlock_acquire(&out_lock, out_dir, "distillation", 0, err)))) {
        dirlock_release(&lock);
        task_free(&td);
        return err->code;
    }
    atomic_remove_stale(separate ? out_dir : run_dir);   /* what a killed grid's atomic write left */
    Model *m = model_create(&cfg.model, td.vocab_size, td.n_classes, td.seq_len, cfg.seed);
    AL_ASSERT(!al_path_fmt(model_path, sizeof model_path, NULL, "%s/model.safetensors", run_dir));
    int rc = checkpoint_load_model(model_path, m, err);
    if (!rc) rc = distill_run(&cfg, m, &td, separate ? out_dir : run_dir, model_path, quiet,
                              resume ? JOURNAL_RESUME : JOURNAL_FRESH, err);
    model_free(m);
    task_free(&td);
    dirlock_release(&out_lock);
    dirlock_release(&lock);
    return rc;
}
