/* plot.c — see plot.h. */
#include "attnlab/sweep/plot.h"
#include "attnlab/report/curve.h"
#include "attnlab/report/svg.h"
#include "attnlab/sweep/spec.h"
#include "attnlab/util/fsutil.h"
#include "attnlab/util/strbuf.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One sweep folder's grid.json and the lines drawn from it. */
typedef struct GridLines {
    char path[AL_PATH_MAX], name[256];  /* the grid.json; the sweep folder's name */
    cJSON *root;
    const cJSON *axes, *rows, *x_axis;  /* x_axis: the --x entry of axes */
    int nx, n_lines;
    double *x, *y, *y_err;              /* x: nx values, increasing; y, y_err: n_lines × nx */
    char **names;                       /* n_lines legend names (malloc'ed) */
} GridLines;

static const char *axis_key(const cJSON *axis) {
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(axis, "key"));
}

static const cJSON *axis_values(const cJSON *axis) { return cJSON_GetObjectItemCaseSensitive(axis, "values"); }

/* Axes as ./train sweep writes them: {key, values: [≥ 1 value]}, at most as many
 * points as a sweep may have. */
static int axes_ok(const cJSON *axes) {
    double points = 1;
    for (const cJSON *a = axes ? axes->child : NULL; a; a = a->next) {
        int n = cJSON_GetArraySize(axis_values(a));
        if (!axis_key(a) || !cJSON_IsArray(axis_values(a)) || n < 1) return 0;
        points *= n;
    }
    return cJSON_IsArray(axes) && cJSON_GetArraySize(axes) > 0 && points <= SWEEP_MAX_CELLS;
}

static int load_grid(const char *dir, GridLines *g, AlError *err) {
    if (al_path_fmt(g->path, sizeof g->path, err, "%s/grid.json", dir)) return 2;
    report_folder_name(dir, g->name, sizeof g->name);
    char *text = al_read_file(g->path, NULL);
    if (!text)
        return al_fail(err, 2, "cannot read '%s': %s (is '%s' a sweep folder? ./train sweep CONFIG writes its "
                       "grid.json)", g->path, strerror(errno), dir);
    g->root = cJSON_Parse(text);
    free(text);
    g->axes = cJSON_GetObjectItemCaseSensitive(g->root, "axes");
    g->rows = cJSON_GetObjectItemCaseSensitive(g->root, "rows");
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(g->root, "metric")) || !axes_ok(g->axes) ||
        !cJSON_IsArray(g->rows))
        return al_fail(err, 2, "%s: not a sweep grid (expected a JSON object with \"metric\", \"axes\" "
                       "[{\"key\", \"values\"}] and \"rows\", as ./train sweep writes)", g->path);
    return 0;
}

static int numeric_axis(const cJSON *axis) {
    for (const cJSON *v = axis_values(axis)->child; v; v = v->next)
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return 0;
    return 1;
}

/* "task.seq_len, model.n_layers": the axes' keys (only the numeric ones), or "none". */
static const char *list_axes(const cJSON *axes, int numeric_only, char *out, size_t n) {
    size_t len = 0;
    snprintf(out, n, "none");
    for (const cJSON *a = axes->child; a && len < n; a = a->next)
        if (!numeric_only || numeric_axis(a)) len += snprintf(out + len, n - len, "%s%s", len ? ", " : "", axis_key(a));
    return out;
}

/* Does the row hold metric m as {mean, …}? */
static int has_metric(const cJSON *row, const char *m) {
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(row, m), "mean") != NULL;
}

/* "token_acc, seq_acc": the metrics of the grid's first row, or "none". */
static const char *list_metrics(const cJSON *rows, char *out, size_t n) {
    size_t len = 0;
    snprintf(out, n, "none");
    const cJSON *row = rows->child;
    for (const cJSON *m = row ? row->child : NULL; m && len < n; m = m->next)
        if (has_metric(row, m->string)) len += snprintf(out + len, n - len, "%s%s", len ? ", " : "", m->string);
    return out;
}

static int check_grid(GridLines *g, const char *x_key, const char *metric, AlError *err) {
    char list[512];
    for (const cJSON *a = g->axes->child; a && !g->x_axis; a = a->next)
        if (!strcmp(axis_key(a), x_key)) g->x_axis = a;
    if (!g->x_axis)
        return al_fail(err, 2, "%s: '%s' is not an axis of this grid (its axes: %s)", g->path, x_key,
                       list_axes(g->axes, 0, list, sizeof list));
    if (!numeric_axis(g->x_axis))
        return al_fail(err, 2, "%s: axis '%s' has non-numeric values; --x needs a numeric axis (numeric axes here: "
                       "%s)", g->path, x_key, list_axes(g->axes, 1, list, sizeof list));
    int any = 0;
    for (const cJSON *row = g->rows->child; row && !any; row = row->next) any = has_metric(row, metric);
    if (!any)
        return al_fail(err, 2, "%s: no metric '%s' in this grid (it has: %s)", g->path, metric,
                       list_metrics(g->rows, list, sizeof list));
    return 0;
}

/* Does this axis tell lines apart: not the x axis, and more than one value? */
static int splits(const GridLines *g, const cJSON *axis) {
    return axis != g->x_axis && cJSON_GetArraySize(axis_values(axis)) > 1;
}

/* The index of v among the axis's values, or −1. */
static int value_index(const cJSON *axis, const cJSON *v) {
    int i = 0;
    for (const cJSON *a = axis_values(axis)->child; a; a = a->next, i++)
        if (v && cJSON_Compare(a, v, 1)) return i;
    return -1;
}

/* The line of a row's values: its value indices on the splitting axes, the last
 * axis fastest (as the sweep enumerates points); −1 for a value of no axis. */
static int line_of(const GridLines *g, const cJSON *values) {
    int line = 0;
    for (const cJSON *a = g->axes->child; a; a = a->next) {
        if (!splits(g, a)) continue;
        int i = value_index(a, cJSON_GetObjectItemCaseSensitive(values, axis_key(a)));
        if (i < 0) return -1;
        line = line * cJSON_GetArraySize(axis_values(a)) + i;
    }
    return line;
}

/* A value as cell folders and tables print it: 0.001, linear, true. */
static const char *value_label(const cJSON *v, char *buf, size_t n) {
    if (cJSON_IsString(v)) return v->valuestring;
    if (cJSON_IsNumber(v)) return al_fmt_double(v->valuedouble, buf, n);
    return cJSON_IsTrue(v) ? "true" : "false";
}

/* "SWEEP: k=v,k=v" for line `line` (the inverse of line_of), or "SWEEP". */
static char *line_name(const GridLines *g, int line) {
    StrBuf b = {0};
    const char *sep = ": ";
    int stride = g->n_lines;
    strbuf_printf(&b, "%s", g->name);
    for (const cJSON *a = g->axes->child; a; a = a->next) {
        if (!splits(g, a)) continue;
        int size = cJSON_GetArraySize(axis_values(a));
        char num[32];
        stride /= size;
        strbuf_printf(&b, "%s%s=%s", sep, sweep_short_key(axis_key(a)),
                      value_label(cJSON_GetArrayItem(axis_values(a), line / stride % size), num, sizeof num));
        sep = ",";
    }
    return b.s;
}

/* The position of x = v in increasing order: how many axis values are smaller. */
static int x_rank(const cJSON *axis, double v) {
    int r = 0;
    for (const cJSON *a = axis_values(axis)->child; a; a = a->next) r += a->valuedouble < v;
    return r;
}

static double stat_of(const cJSON *row, const char *metric, const char *what) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(row, metric), what);
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : NAN;
}

/* Fills x, y, y_err and names from the rows: NaN where no row (or no finished seed) is. */
static void build_lines(GridLines *g, const char *metric) {
    g->nx = cJSON_GetArraySize(axis_values(g->x_axis));
    g->n_lines = 1;
    for (const cJSON *a = g->axes->child; a; a = a->next)
        if (splits(g, a)) g->n_lines *= cJSON_GetArraySize(axis_values(a));
    size_t n = (size_t)g->n_lines * (size_t)g->nx;
    g->x = al_malloc((size_t)g->nx * sizeof *g->x);
    g->y = al_malloc(2 * n * sizeof *g->y);
    g->y_err = g->y + n;
    for (size_t i = 0; i < 2 * n; i++) g->y[i] = NAN;
    for (const cJSON *v = axis_values(g->x_axis)->child; v; v = v->next) g->x[x_rank(g->x_axis, v->valuedouble)] = v->valuedouble;
    for (const cJSON *row = g->rows->child; row; row = row->next) {
        const cJSON *values = cJSON_GetObjectItemCaseSensitive(row, "values");
        const cJSON *xv = cJSON_GetObjectItemCaseSensitive(values, axis_key(g->x_axis));
        int line = line_of(g, values);
        if (line < 0 || value_index(g->x_axis, xv) < 0) continue;
        size_t at = (size_t)line * (size_t)g->nx + (size_t)x_rank(g->x_axis, xv->valuedouble);
        g->y[at] = stat_of(row, metric, "mean");
        g->y_err[at] = stat_of(row, metric, "std");
    }
    g->names = al_calloc((size_t)g->n_lines, sizeof *g->names);
    for (int l = 0; l < g->n_lines; l++) g->names[l] = line_name(g, l);
}

static void free_lines(GridLines *g) {
    for (int l = 0; g->names && l < g->n_lines; l++) free(g->names[l]);
    free(g->names);
    free(g->x);
    free(g->y);
    cJSON_Delete(g->root);
}

/* log2 when every x is > 0 and they span a factor of 8 or more, else linear (0). */
static int pick_log_x(const GridLines *g, int n_grids) {
    double lo = INFINITY, hi = -INFINITY;
    for (int k = 0; k < n_grids; k++)
        for (int i = 0; i < g[k].nx; i++) lo = fmin(lo, g[k].x[i]), hi = fmax(hi, g[k].x[i]);
    return lo > 0 && hi >= 8 * lo ? 2 : 0;
}

static int is_accuracy(const char *metric) {
    for (int m = 0; m < METRIC_COUNT; m++)
        if (!strcmp(metric, sweep_metric_names[m])) return 1;
    return 0;
}

static int draw(const GridLines *g, int n_grids, const char *x_key, const char *metric, const char *out_svg,
                AlError *err) {
    int n = 0;
    for (int k = 0; k < n_grids; k++) n += g[k].n_lines;
    SvgSeries *s = al_calloc((size_t)n, sizeof *s);
    for (int k = 0, i = 0; k < n_grids; k++)
        for (int l = 0; l < g[k].n_lines; l++) {
            size_t at = (size_t)l * (size_t)g[k].nx;
            s[i++] = (SvgSeries){ g[k].names[l], g[k].nx, g[k].x, g[k].y + at, g[k].y_err + at };
        }
    char title[300];
    snprintf(title, sizeof title, "test %s vs %s", metric, x_key);
    int acc = is_accuracy(metric);
    SvgLineChart c = { title, x_key, metric, s, n, pick_log_x(g, n_grids), 0, acc, 0, 1 };
    int rc = svg_line_chart(out_svg, &c, err);
    free(s);
    return rc;
}

int sweep_grid_curve(const char *const *sweep_dirs, int n_dirs, const char *x_key, const char *metric,
                      const char *out_svg, AlError *err) {
    GridLines *g = al_calloc((size_t)n_dirs, sizeof *g);
    int rc = 0;
    for (int k = 0; k < n_dirs && !rc; k++) {
        rc = load_grid(sweep_dirs[k], &g[k], err);
        if (!rc && !metric) metric = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g[0].root, "metric"));
        if (!rc) rc = check_grid(&g[k], x_key, metric, err);
        if (!rc) build_lines(&g[k], metric);
    }
    if (!rc) rc = draw(g, n_dirs, x_key, metric, out_svg, err);
    for (int k = 0; k < n_dirs; k++) free_lines(&g[k]);
    free(g);
    return rc;
}
