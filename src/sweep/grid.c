/* grid.c — see grid.h: gathering the cells, and grid.csv / grid.json. */
#include "attnlab/sweep/grid.h"
#include "attnlab/io/atomic_file.h"
#include "attnlab/util/version.h"
#include "attnlab/util/fsutil.h"
#include "files.h"

#include <cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long grid_point_of(const SweepSpec *s, const int *vi) {
    long p = 0;
    for (int a = 0; a < s->n_axes; a++) p = p * s->axes[a].n + vi[a];
    return p;
}

const char *grid_fmt(double v, char *buf, size_t n) {
    if (!isfinite(v)) {
        snprintf(buf, n, "%s", "");
        return buf;
    }
    return al_fmt_double(v, buf, n);
}

/* ---- gathering ------------------------------------------------------------------------- */

static int collect_cell(SweepGrid *g, const Config *base, const char *out_dir, long c, AlError *err) {
    char name[SWEEP_NAME_MAX], dir[AL_PATH_MAX], why[512];
    Config expect;
    if (sweep_cell_config(g->spec, base, c, &expect, err)) return err->code;
    g->has_answer |= sweep_metric_applies(METRIC_ANSWER_ACC, &expect);
    sweep_cell_name(g->spec, c, name, sizeof name);
    if (al_path_fmt(dir, sizeof dir, err, "%s/cells/%s", out_dir, name)) return 2;
    GridCell *cell = &g->cells[c];
    CellState st = cell_inspect(dir, &expect, why, sizeof why);
    if (st == CELL_CONFLICT)
        return al_fail(err, 2, "%s %s: delete that folder, or give the sweep another --out", dir, why);
    cell->exit_code = cell_last_exit(dir);
    if (st == CELL_DONE && !cell_read_result(dir, &cell->result)) cell->status = GRID_DONE;
    else if (cell->exit_code > 0 && cell->exit_code != 130 && cell->exit_code != 143) cell->status = GRID_FAILED;
    else cell->status = GRID_PENDING;
    return 0;
}

/* The grid's index of group `name`, added when new; −1 when the table is full. */
static int grid_group(SweepGrid *g, const char *name) {
    for (int i = 0; i < g->n_groups; i++)
        if (!strcmp(g->group_name[i], name)) return i;
    if (g->n_groups == CELL_MAX_GROUPS) return -1;
    snprintf(g->group_name[g->n_groups], CELL_GROUP_NAME, "%s", name);
    return g->n_groups++;
}

/* Mean group accuracies over the seeds that reported each group. */
static void summarise_groups(SweepGrid *g, long p) {
    const SweepSpec *s = g->spec;
    double sum[CELL_MAX_GROUPS] = {0};
    int n[CELL_MAX_GROUPS] = {0};
    for (int k = 0; k < s->n_seeds; k++) {
        const GridCell *c = &g->cells[p * s->n_seeds + k];
        for (int i = 0; c->status == GRID_DONE && i < c->result.n_groups; i++) {
            int gi = grid_group(g, c->result.group_name[i]);
            if (gi >= 0) sum[gi] += c->result.group_acc[i], n[gi]++;
        }
    }
    for (int i = 0; i < CELL_MAX_GROUPS; i++) g->rows[p].group_mean[i] = n[i] ? sum[i] / n[i] : NAN;
}

/* Mean and sample standard deviation of the seeds that reported each metric. */
static void summarise_row(SweepGrid *g, long p) {
    const SweepSpec *s = g->spec;
    GridRow *row = &g->rows[p];
    double sum[METRIC_COUNT] = {0}, sq[METRIC_COUNT] = {0};
    row->n_params = row->flops_per_seq = NAN;
    for (int k = 0; k < s->n_seeds; k++) {
        const GridCell *c = &g->cells[p * s->n_seeds + k];
        row->done += c->status == GRID_DONE;
        row->failed += c->status == GRID_FAILED;
        row->pending += c->status == GRID_PENDING;
        if (c->status != GRID_DONE) continue;
        if (isnan(row->n_params)) row->n_params = c->result.n_params, row->flops_per_seq = c->result.flops_per_seq;
        for (int m = 0; m < METRIC_COUNT; m++)
            if (isfinite(c->result.metric[m])) sum[m] += c->result.metric[m], row->n[m]++;
    }
    for (int m = 0; m < METRIC_COUNT; m++) {
        row->mean[m] = row->n[m] ? sum[m] / row->n[m] : NAN;
        for (int k = 0; k < s->n_seeds && row->n[m]; k++) {
            const GridCell *c = &g->cells[p * s->n_seeds + k];
            if (c->status == GRID_DONE && isfinite(c->result.metric[m]))
                sq[m] += (c->result.metric[m] - row->mean[m]) * (c->result.metric[m] - row->mean[m]);
        }
        row->std[m] = row->n[m] > 1 ? sqrt(sq[m] / (row->n[m] - 1)) : NAN;
    }
    summarise_groups(g, p);
}

int grid_collect(SweepGrid *g, const SweepSpec *s, const Config *base, const char *out_dir, AlError *err) {
    memset(g, 0, sizeof *g);
    g->spec = s;
    g->cells = al_calloc((size_t)s->n_cells, sizeof *g->cells);
    g->rows = al_calloc((size_t)s->n_points, sizeof *g->rows);
    for (long c = 0; c < s->n_cells; c++)
        if (collect_cell(g, base, out_dir, c, err)) return err->code;
    for (long p = 0; p < s->n_points; p++) {
        summarise_row(g, p);
        g->done += g->rows[p].done;
        g->failed += g->rows[p].failed;
        g->pending += g->rows[p].pending;
    }
    return 0;
}

void grid_free(SweepGrid *g) {
    free(g->cells);
    free(g->rows);
    memset(g, 0, sizeof *g);
}

/* ---- grid.csv ---------------------------------------------------------------------------- */

static int metric_shown(const SweepGrid *g, int m) { return m != METRIC_ANSWER_ACC || g->has_answer; }

/* "seed 2: exit 1, cells/NAME/train.log; …" */
static void failures_text(const SweepGrid *g, long p, StrBuf *b) {
    const SweepSpec *s = g->spec;
    for (int k = 0; k < s->n_seeds; k++) {
        long c = p * s->n_seeds + k;
        if (g->cells[c].status != GRID_FAILED) continue;
        char name[SWEEP_NAME_MAX];
        sweep_cell_name(s, c, name, sizeof name);
        strbuf_printf(b, "%sseed %llu: exit %d, cells/%s/%s", b->len ? "; " : "", (unsigned long long)s->seeds[k],
                  g->cells[c].exit_code, name, CELL_LOG);
    }
}

static int write_csv(const SweepGrid *g, const char *out_dir, AlError *err) {
    const SweepSpec *s = g->spec;
    StrBuf b = {0};
    char num[40], path[AL_PATH_MAX];
    for (int a = 0; a < s->n_axes; a++) sw_csv_field(&b, s->axes[a].key), strbuf_printf(&b, ",");
    strbuf_printf(&b, "seeds_done,seeds_failed,seeds_pending");
    for (int m = 0; m < METRIC_COUNT; m++)
        if (metric_shown(g, m)) strbuf_printf(&b, ",%s_mean,%s_std", sweep_metric_names[m], sweep_metric_names[m]);
    for (int i = 0; i < g->n_groups; i++) strbuf_printf(&b, ",token_acc[%s]_mean", g->group_name[i]);
    strbuf_printf(&b, ",n_params,flops_per_seq,failures\n");
    int vi[SWEEP_MAX_AXES];
    for (long p = 0; p < s->n_points; p++) {
        const GridRow *r = &g->rows[p];
        sweep_point_values(s, p, vi);
        for (int a = 0; a < s->n_axes; a++) sw_csv_field(&b, s->axes[a].label[vi[a]]), strbuf_printf(&b, ",");
        strbuf_printf(&b, "%d,%d,%d", r->done, r->failed, r->pending);
        for (int m = 0; m < METRIC_COUNT; m++) {
            if (!metric_shown(g, m)) continue;
            strbuf_printf(&b, ",%s", grid_fmt(r->mean[m], num, sizeof num));
            strbuf_printf(&b, ",%s", grid_fmt(r->std[m], num, sizeof num));
        }
        for (int i = 0; i < g->n_groups; i++) strbuf_printf(&b, ",%s", grid_fmt(r->group_mean[i], num, sizeof num));
        strbuf_printf(&b, ",%s", grid_fmt(r->n_params, num, sizeof num));
        strbuf_printf(&b, ",%s,", grid_fmt(r->flops_per_seq, num, sizeof num));
        StrBuf f = {0};
        failures_text(g, p, &f);
        sw_csv_field(&b, f.s ? f.s : "");
        free(f.s);
        strbuf_printf(&b, "\n");
    }
    int rc = al_path_fmt(path, sizeof path, err, "%s/grid.csv", out_dir) || write_text_atomic(path, b.s, err);
    free(b.s);
    return rc;
}

/* ---- grid.json --------------------------------------------------------------------------- */

static void add_number_or_null(cJSON *o, const char *key, double v) {
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

static const char *const STATUS_NAMES[] = { "done", "failed", "pending" };

static cJSON *json_cell(const SweepGrid *g, long c) {
    const SweepSpec *s = g->spec;
    const GridCell *gc = &g->cells[c];
    char name[SWEEP_NAME_MAX], path[AL_PATH_MAX];
    sweep_cell_name(s, c, name, sizeof name);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "seed", (double)s->seeds[c % s->n_seeds]);
    AL_ASSERT(!al_path_fmt(path, sizeof path, NULL, "cells/%s", name));   /* a cell name is short */
    cJSON_AddStringToObject(o, "dir", path);
    cJSON_AddStringToObject(o, "status", STATUS_NAMES[gc->status]);
    if (gc->exit_code >= 0) cJSON_AddNumberToObject(o, "exit_code", gc->exit_code);
    else cJSON_AddNullToObject(o, "exit_code");
    AL_ASSERT(!al_path_fmt(path, sizeof path, NULL, "cells/%s/%s", name, CELL_LOG));
    cJSON_AddStringToObject(o, "log", path);
    for (int m = 0; m < METRIC_COUNT && gc->status == GRID_DONE; m++)
        if (metric_shown(g, m)) add_number_or_null(o, sweep_metric_names[m], gc->result.metric[m]);
    return o;
}

static cJSON *json_row(const SweepGrid *g, long p) {
    const SweepSpec *s = g->spec;
    const GridRow *r = &g->rows[p];
    int vi[SWEEP_MAX_AXES];
    sweep_point_values(s, p, vi);
    cJSON *o = cJSON_CreateObject(), *values = cJSON_AddObjectToObject(o, "values");
    for (int a = 0; a < s->n_axes; a++) cJSON_AddItemToObject(values, s->axes[a].key, cJSON_Parse(s->axes[a].json[vi[a]]));
    cJSON_AddNumberToObject(o, "seeds_done", r->done);
    cJSON_AddNumberToObject(o, "seeds_failed", r->failed);
    cJSON_AddNumberToObject(o, "seeds_pending", r->pending);
    for (int m = 0; m < METRIC_COUNT; m++) {
        if (!metric_shown(g, m)) continue;
        cJSON *stat = cJSON_AddObjectToObject(o, sweep_metric_names[m]);
        add_number_or_null(stat, "mean", r->mean[m]);
        add_number_or_null(stat, "std", r->std[m]);
        cJSON_AddNumberToObject(stat, "n", r->n[m]);
    }
    if (g->n_groups) {
        cJSON *groups = cJSON_AddObjectToObject(o, "group_token_acc_mean");
        for (int i = 0; i < g->n_groups; i++) add_number_or_null(groups, g->group_name[i], r->group_mean[i]);
    }
    add_number_or_null(o, "n_params", r->n_params);
    add_number_or_null(o, "flops_per_seq", r->flops_per_seq);
    cJSON *cells = cJSON_AddArrayToObject(o, "cells");
    for (int k = 0; k < s->n_seeds; k++) cJSON_AddItemToArray(cells, json_cell(g, p * s->n_seeds + k));
    return o;
}

static int write_json(const SweepGrid *g, const char *out_dir, AlError *err) {
    const SweepSpec *s = g->spec;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "metric", sweep_metric_names[s->metric]);
    cJSON_AddNumberToObject(root, "threshold", s->threshold);
    cJSON *axes = cJSON_AddArrayToObject(root, "axes");
    for (int a = 0; a < s->n_axes; a++) {
        cJSON *ax = cJSON_CreateObject(), *vals = cJSON_AddArrayToObject(ax, "values");
        cJSON_AddStringToObject(ax, "key", s->axes[a].key);
        for (int i = 0; i < s->axes[a].n; i++) cJSON_AddItemToArray(vals, cJSON_Parse(s->axes[a].json[i]));
        cJSON_AddItemToArray(axes, ax);
    }
    cJSON *seeds = cJSON_AddArrayToObject(root, "seeds");
    for (int k = 0; k < s->n_seeds; k++) cJSON_AddItemToArray(seeds, cJSON_CreateNumber((double)s->seeds[k]));
    if (s->rows >= 0) cJSON_AddStringToObject(root, "rows_axis", s->axes[s->rows].key);
    else cJSON_AddNullToObject(root, "rows_axis");
    cJSON_AddStringToObject(root, "cols_axis", s->axes[s->cols].key);
    cJSON *count = cJSON_AddObjectToObject(root, "cells");
    cJSON_AddNumberToObject(count, "total", (double)s->n_cells);
    cJSON_AddNumberToObject(count, "done", g->done);
    cJSON_AddNumberToObject(count, "failed", g->failed);
    cJSON_AddNumberToObject(count, "pending", g->pending);
    cJSON *rows = cJSON_AddArrayToObject(root, "rows");
    for (long p = 0; p < s->n_points; p++) cJSON_AddItemToArray(rows, json_row(g, p));
    attnlab_add_provenance(root);   /* the build that wrote the grid; each cell's own files name theirs */
    char *text = cJSON_Print(root), path[AL_PATH_MAX];
    cJSON_Delete(root);
    StrBuf b = {0};
    strbuf_printf(&b, "%s\n", text);
    free(text);
    int rc = al_path_fmt(path, sizeof path, err, "%s/grid.json", out_dir) || write_text_atomic(path, b.s, err);
    free(b.s);
    return rc;
}

int grid_write(const SweepGrid *g, const char *out_dir, AlError *err) {
    if (write_csv(g, out_dir, err) || write_json(g, out_dir, err)) return err->code;
    if (grid_write_figures(g, out_dir, err) || grid_write_summary(g, out_dir, err)) return err->code;
    return 0;
}
