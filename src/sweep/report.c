/* report.c — a grid's heatmaps (src/report/svg.c) and its summary tables: per
 * architecture and problem size, the smallest width whose mean metric reaches the
 * threshold, and that model's FLOPs per sequence (paper 004, Table 2); then the
 * metric at every point, laid out as a write-up's table (paper 004, Fig. 1).
 *
 * Layout: the spec's rows and cols axes span each heatmap (and the table's size
 * and width); every value combination of the remaining axes — the "panels", e.g.
 * model.attention.type — gets its own heatmap and its own table rows. */
#include "attnlab/sweep/grid.h"
#include "attnlab/io/atomic_file.h"
#include "attnlab/report/svg.h"
#include "attnlab/util/fsutil.h"
#include "files.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The panel axes and how many value combinations they have. */
static unsigned panel_mask(const SweepSpec *s, long *n_panels) {
    unsigned mask = 0;
    *n_panels = 1;
    for (int a = 0; a < s->n_axes; a++)
        if (a != s->rows && a != s->cols) mask |= 1u << a, *n_panels *= s->axes[a].n;
    return mask;
}

/* Panel q's value indices into vi (the rows and cols entries are left alone). */
static void panel_values(const SweepSpec *s, unsigned mask, long q, int *vi) {
    for (int a = s->n_axes - 1; a >= 0; a--) {
        if (!((mask >> a) & 1u)) continue;
        vi[a] = (int)(q % s->axes[a].n);
        q /= s->axes[a].n;
    }
}

static int n_rows(const SweepSpec *s) { return s->rows >= 0 ? s->axes[s->rows].n : 1; }

static const GridRow *row_at(const SweepGrid *g, int *vi, int r, int c) {
    if (g->spec->rows >= 0) vi[g->spec->rows] = r;
    vi[g->spec->cols] = c;
    return &g->rows[grid_point_of(g->spec, vi)];
}

/* ---- heatmaps ---------------------------------------------------------------------------- */

static int write_heatmap(const SweepGrid *g, const char *out_dir, unsigned mask, long q, AlError *err) {
    const SweepSpec *s = g->spec;
    const SweepAxis *cols = &s->axes[s->cols], *rows = s->rows >= 0 ? &s->axes[s->rows] : NULL;
    int vi[SWEEP_MAX_AXES] = {0}, R = n_rows(s), C = cols->n;
    panel_values(s, mask, q, vi);
    char panel[SWEEP_NAME_MAX], title[SWEEP_NAME_MAX + 128], path[AL_PATH_MAX], bar[96];
    sweep_values_name(s, vi, mask, panel, sizeof panel);
    double *values = al_malloc(sizeof(double) * (size_t)R * C);
    int seeds_max = 0;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            const GridRow *row = row_at(g, vi, r, c);
            values[r * C + c] = row->mean[s->metric];
            if (row->n[s->metric] > seeds_max) seeds_max = row->n[s->metric];
        }
    snprintf(title, sizeof title, "%s, mean over up to %d seed%s%s%s", sweep_metric_names[s->metric], seeds_max,
             seeds_max == 1 ? "" : "s", *panel ? " | " : "", panel);
    snprintf(bar, sizeof bar, "test %s", sweep_metric_names[s->metric]);
    SvgHeatmap h = { title, cols->key, rows ? rows->key : "", R, C, (const char *const *)cols->label,
                     rows ? (const char *const *)rows->label : NULL, values, 0, "%.2f", 1, 0, 1, bar };
    const char *no_row[1] = { "" };
    if (!rows) h.y_labels = no_row;
    int rc = al_path_fmt(path, sizeof path, err, "%s/heatmap%s%s.svg", out_dir, *panel ? "_" : "", panel) ||
             svg_heatmap(path, &h, err);
    free(values);
    return rc;
}

/* Per-group accuracy of every rows × cols point of panel q: one heatmap row per
 * point ("task.seq_len=50,model.n_layers=2"), one column per group ("hops_3"). */
static int write_groups_heatmap(const SweepGrid *g, const char *out_dir, unsigned mask, long q, AlError *err) {
    const SweepSpec *s = g->spec;
    int vi[SWEEP_MAX_AXES] = {0}, R = n_rows(s), C = s->axes[s->cols].n, G = g->n_groups;
    panel_values(s, mask, q, vi);
    unsigned point_axes = (1u << s->cols) | (s->rows >= 0 ? 1u << s->rows : 0);
    char panel[SWEEP_NAME_MAX], title[SWEEP_NAME_MAX + 128], path[AL_PATH_MAX];
    sweep_values_name(s, vi, mask, panel, sizeof panel);
    double *values = al_malloc(sizeof(double) * (size_t)R * C * G);
    char (*labels)[SWEEP_NAME_MAX] = al_malloc(sizeof *labels * (size_t)R * C);
    const char **y = al_malloc(sizeof *y * (size_t)R * C), *x[CELL_MAX_GROUPS];
    for (int i = 0; i < G; i++) x[i] = g->group_name[i];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            const GridRow *row = row_at(g, vi, r, c);
            sweep_values_name(s, vi, point_axes, labels[r * C + c], SWEEP_NAME_MAX);
            y[r * C + c] = labels[r * C + c];
            for (int i = 0; i < G; i++) values[(r * C + c) * G + i] = row->group_mean[i];
        }
    snprintf(title, sizeof title, "token accuracy per test group, mean over seeds%s%s", *panel ? " | " : "", panel);
    SvgHeatmap h = { title, "test group", "", R * C, G, x, y, values, 0, "%.3f", 1, 0, 1, "test token_acc" };
    int rc = al_path_fmt(path, sizeof path, err, "%s/groups%s%s.svg", out_dir, *panel ? "_" : "", panel) ||
             svg_heatmap(path, &h, err);
    free(values);
    free(labels);
    free(y);
    return rc;
}

int grid_write_figures(const SweepGrid *g, const char *out_dir, AlError *err) {
    long n_panels;
    unsigned mask = panel_mask(g->spec, &n_panels);
    for (long q = 0; q < n_panels; q++) {
        if (write_heatmap(g, out_dir, mask, q, err)) return err->code;
        if (g->n_groups && write_groups_heatmap(g, out_dir, mask, q, err)) return err->code;
    }
    return 0;
}

/* ---- the summary table ------------------------------------------------------------------- */

/* Whether column c comes before column `best` (−1: none yet) in width order: by
 * number when both values are numbers, else in the order listed. */
static int col_before(const SweepAxis *cols, int c, int best) {
    if (best < 0) return 1;
    if (isfinite(cols->num[c]) && isfinite(cols->num[best])) return cols->num[c] < cols->num[best];
    return c < best;
}

/* The column (width) index reaching the threshold with the smallest value — by
 * number when the values are numbers, else the first listed — or −1. */
static int smallest_reaching(const SweepGrid *g, int *vi, int r) {
    const SweepSpec *s = g->spec;
    const SweepAxis *cols = &s->axes[s->cols];
    int best = -1;
    for (int c = 0; c < cols->n; c++) {
        const GridRow *row = row_at(g, vi, r, c);
        if (row->mean[s->metric] >= s->threshold && col_before(cols, c, best)) best = c;
    }
    return best;
}

/* The columns before `best` (all of them when best is −1) where no seed has
 * finished, space-separated in the order listed: while there are any, the answer is
 * provisional — a narrower width may still reach the threshold.  Returns how many. */
static int unfinished_before(const SweepGrid *g, int *vi, int r, int best, StrBuf *out) {
    const SweepSpec *s = g->spec;
    const SweepAxis *cols = &s->axes[s->cols];
    int n = 0;
    for (int c = 0; c < cols->n; c++)
        if (col_before(cols, c, best) && row_at(g, vi, r, c)->n[s->metric] == 0)   /* never best itself */
            strbuf_printf(out, "%s%s", n++ ? " " : "", cols->label[c]);
    return n;
}

/* Every point's mean metric in one markdown table: the rows axis down; across, each
 * panel's columns ("attention.type=softmax, d_model=16", then "32", …).  Percent,
 * "± std" from two seeds on, "—" where no seed has finished. */
static void write_point_table(const SweepGrid *g, StrBuf *md) {
    const SweepSpec *s = g->spec;
    const SweepAxis *cols = &s->axes[s->cols], *rows = s->rows >= 0 ? &s->axes[s->rows] : NULL;
    const int m = s->metric;
    long n_panels;
    unsigned mask = panel_mask(s, &n_panels);
    int vi[SWEEP_MAX_AXES] = {0};
    char panel[SWEEP_NAME_MAX];
    strbuf_printf(md, "\n## Test %s at every point (%%, mean ± std over seeds)\n\n| %s |", sweep_metric_names[m],
                  rows ? rows->key : "");
    for (long q = 0; q < n_panels; q++) {
        panel_values(s, mask, q, vi);
        sweep_values_name(s, vi, mask, panel, sizeof panel);
        strbuf_printf(md, " %s%s%s=%s |", panel, *panel ? ", " : "", sweep_short_key(cols->key), cols->label[0]);
        for (int c = 1; c < cols->n; c++) strbuf_printf(md, " %s |", cols->label[c]);
    }
    strbuf_printf(md, "\n|---|");
    for (long k = 0; k < n_panels * cols->n; k++) strbuf_printf(md, "---|");
    for (int r = 0; r < n_rows(s); r++) {
        strbuf_printf(md, "\n| %s |", rows ? rows->label[r] : "all");
        for (long q = 0; q < n_panels; q++) {
            panel_values(s, mask, q, vi);
            for (int c = 0; c < cols->n; c++) {
                const GridRow *row = row_at(g, vi, r, c);
                if (row->n[m] == 0) {
                    strbuf_printf(md, " — |");
                    continue;
                }
                strbuf_printf(md, " %.1f", 100 * row->mean[m]);
                if (row->n[m] >= 2) strbuf_printf(md, " ± %.1f", 100 * row->std[m]);
                strbuf_printf(md, " |");
            }
        }
    }
    strbuf_printf(md, "\n");
}

/* The columns' smallest and largest values, for "none of 16..64": by number when
 * every value is a number, else the first and last listed. */
static void col_span(const SweepAxis *cols, int *lo, int *hi) {
    *lo = 0, *hi = cols->n - 1;
    for (int c = 0; c < cols->n; c++) {
        if (!isfinite(cols->num[c])) {
            *lo = 0, *hi = cols->n - 1;
            return;
        }
        if (cols->num[c] < cols->num[*lo]) *lo = c;
        if (cols->num[c] > cols->num[*hi]) *hi = c;
    }
}

/* One summary row (panel vi, row r): the smallest width reaching the threshold, its
 * metric, parameters and FLOPs, and the narrower widths not finished yet. */
static void summary_row(const SweepGrid *g, unsigned mask, int *vi, int r, StrBuf *csv, StrBuf *md) {
    const SweepSpec *s = g->spec;
    const SweepAxis *cols = &s->axes[s->cols];
    char num[40];
    int best = smallest_reaching(g, vi, r);
    const GridRow *row = best >= 0 ? row_at(g, vi, r, best) : NULL;
    StrBuf pending = {0};
    int n_pending = unfinished_before(g, vi, r, best, &pending);
    strbuf_printf(md, "|");
    for (int a = 0; a < s->n_axes; a++)
        if (((mask >> a) & 1u) || a == s->rows) {
            const char *label = s->axes[a].label[a == s->rows ? r : vi[a]];
            sw_csv_field(csv, label), strbuf_printf(csv, ",");
            strbuf_printf(md, " %s |", label);
        }
    if (!row) {
        int lo, hi;
        col_span(cols, &lo, &hi);
        if (n_pending) strbuf_printf(md, " none so far | | | |");
        else strbuf_printf(md, " none of %s..%s | | | |", cols->label[lo], cols->label[hi]);
        strbuf_printf(csv, ",,,");
    } else {
        sw_csv_field(csv, cols->label[best]);
        strbuf_printf(md, " %s |", cols->label[best]);
        strbuf_printf(csv, ",%s", grid_fmt(row->mean[s->metric], num, sizeof num));
        strbuf_printf(md, " %.4f |", row->mean[s->metric]);
        strbuf_printf(csv, ",%s", grid_fmt(row->n_params, num, sizeof num));
        strbuf_printf(md, " %s |", grid_fmt(row->n_params, num, sizeof num));
        strbuf_printf(csv, ",%s", grid_fmt(row->flops_per_seq, num, sizeof num));
        strbuf_printf(md, " %.4g |", row->flops_per_seq);
    }
    strbuf_printf(csv, ",");
    if (n_pending) sw_csv_field(csv, pending.s);
    strbuf_printf(csv, "\n");
    if (n_pending) strbuf_printf(md, " %s", pending.s);
    strbuf_printf(md, " |\n");
    free(pending.s);
}

int grid_write_summary(const SweepGrid *g, const char *out_dir, AlError *err) {
    const SweepSpec *s = g->spec;
    const SweepAxis *cols = &s->axes[s->cols];
    const char *metric = sweep_metric_names[s->metric];
    long n_panels;
    unsigned mask = panel_mask(s, &n_panels);
    StrBuf csv = {0}, md = {0};
    char num[40], path[AL_PATH_MAX];
    strbuf_printf(&md, "# Smallest %s reaching %s >= %s\n\n", cols->key, metric, grid_fmt(s->threshold, num, sizeof num));
    strbuf_printf(&md, "Mean test %s over the seeds that finished; FLOPs: forward FLOPs per sequence of that model "
              "(model_flops_per_seq, include/attnlab/nn/model.h); not finished: smaller %s values with no finished seed "
              "yet, so the answer may still change.\n\n|", metric, cols->key);
    for (int a = 0; a < s->n_axes; a++)
        if (((mask >> a) & 1u) || a == s->rows) {
            sw_csv_field(&csv, s->axes[a].key), strbuf_printf(&csv, ",");
            strbuf_printf(&md, " %s |", s->axes[a].key);
        }
    strbuf_printf(&csv, "smallest_%s,%s_mean,n_params,flops_per_seq,not_finished\n", cols->key, metric);
    strbuf_printf(&md, " smallest %s | %s | params | FLOPs/seq | not finished |\n|", cols->key, metric);
    for (int a = 0; a < s->n_axes; a++)
        if (((mask >> a) & 1u) || a == s->rows) strbuf_printf(&md, "---|");
    strbuf_printf(&md, "---|---|---|---|---|\n");
    int vi[SWEEP_MAX_AXES] = {0};
    for (long q = 0; q < n_panels; q++) {
        panel_values(s, mask, q, vi);
        for (int r = 0; r < n_rows(s); r++) summary_row(g, mask, vi, r, &csv, &md);
    }
    write_point_table(g, &md);
    int rc = al_path_fmt(path, sizeof path, err, "%s/summary.csv", out_dir) || write_text_atomic(path, csv.s, err);
    if (!rc) rc = al_path_fmt(path, sizeof path, err, "%s/summary.md", out_dir) || write_text_atomic(path, md.s, err);
    free(csv.s);
    free(md.s);
    return rc;
}
