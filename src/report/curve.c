/* curve.c — see curve.h. */
#include "attnlab/report/curve.h"
#include "attnlab/report/svg.h"
#include "attnlab/util/fsutil.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_POINTS = 100000, MAX_LINE = 1 << 16 };

/* The finite value of key in a metrics line — positive ones only for a log axis —
 * or NaN (a missing point). */
static double value_of(const cJSON *line, const char *key, int log_axis) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(line, key);
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) && (!log_axis || v->valuedouble > 0) ? v->valuedouble : NAN;
}

/* Reads run_dir/metrics.jsonl: for each line with a step, x[i] = step and
 * y[k][i] = value_of(keys[k]).  x and every y[k] hold MAX_POINTS.  Returns the
 * number of points, or −1 (err filled). */
static int read_metrics(const char *run_dir, const char *const *keys, int n_keys, int log_axis, double *x,
                        double **y, AlError *err) {
    char path[AL_PATH_MAX];
    if (al_path_fmt(path, sizeof path, err, "%s/metrics.jsonl", run_dir)) return -1;
    char *text = malloc(MAX_LINE);
    FILE *f = fopen(path, "r");
    if (!f) {
        free(text);
        al_fail(err, 1, "cannot read '%s': %s", path, strerror(errno));
        return -1;
    }
    int n = 0;
    while (n < MAX_POINTS && fgets(text, MAX_LINE, f)) {
        cJSON *line = cJSON_Parse(text);
        const cJSON *step = cJSON_GetObjectItemCaseSensitive(line, "step");
        if (cJSON_IsNumber(step)) {
            x[n] = step->valuedouble;
            for (int k = 0; k < n_keys; k++) y[k][n] = value_of(line, keys[k], log_axis);
            n++;
        }
        cJSON_Delete(line);
    }
    fclose(f);
    free(text);
    return n;
}

int report_curve(const char *run_dir, AlError *err) {
    double *x = malloc(3 * MAX_POINTS * sizeof *x), *y[2] = { x + MAX_POINTS, x + 2 * MAX_POINTS };
    static const char *const keys[2] = { "train_loss", "test_loss" };
    int n = read_metrics(run_dir, keys, 2, 1, x, y, err), rc = 0;
    if (n > 0) {
        SvgSeries s[2] = { { "train loss (mean since the last evaluation)", n, x, y[0], NULL },
                           { "test loss", n, x, y[1], NULL } };
        SvgLineChart c = { "training curve", "step", "cross-entropy (nats per scored token)", s, 2, 0, 10, 0, 0, 0 };
        char path[AL_PATH_MAX];
        rc = al_path_fmt(path, sizeof path, err, "%s/curve.svg", run_dir) || svg_line_chart(path, &c, err);
    }
    free(x);
    return n < 0 || rc ? 1 : 0;
}

/* The [start, end) span of dir's last component, trailing slashes ignored. */
static void last_component(const char *dir, size_t end, size_t *start, size_t *stop) {
    while (end > 1 && dir[end - 1] == '/') end--;
    size_t s = end;
    while (s > 0 && dir[s - 1] != '/') s--;
    *start = s;
    *stop = end;
}

const char *report_folder_name(const char *dir, char *buf, size_t len) {
    size_t s, e, ps, pe, ss, se;
    last_component(dir, strlen(dir), &s, &e);
    last_component(dir, s, &ps, &pe);
    if (pe - ps == 5 && !strncmp(dir + ps, "cells", 5) && ps > 0) {
        last_component(dir, ps, &ss, &se);
        snprintf(buf, len, "%.*s: %.*s", (int)(se - ss), dir + ss, (int)(e - s), dir + s);
    } else {
        snprintf(buf, len, "%.*s", (int)(e - s), dir + s);
    }
    return buf;
}

int report_compare(const char *const *run_dirs, int n_runs, const char *metric, const char *out_svg,
                   AlError *err) {
    static const char *const METRICS[] = { "token_acc", "seq_acc", "answer_acc", "test_loss" };
    int m = 0;
    while (m < 4 && strcmp(metric, METRICS[m])) m++;
    if (m == 4)
        return al_fail(err, 2, "curve: --metric must be token_acc, seq_acc, answer_acc or test_loss; got '%s'", metric);
    double *x = malloc(2 * (size_t)n_runs * MAX_POINTS * sizeof *x);
    SvgSeries *s = calloc((size_t)n_runs, sizeof *s);
    char (*names)[256] = calloc((size_t)n_runs, sizeof *names);
    int rc = 0, acc = m < 3;
    for (int r = 0; r < n_runs && !rc; r++) {
        double *xr = x + 2 * (size_t)r * MAX_POINTS, *yr = xr + MAX_POINTS;
        int n = read_metrics(run_dirs[r], &METRICS[m], 1, !acc, xr, &yr, err), any = 0;
        if (n < 0) rc = 1;
        for (int i = 0; i < n; i++) any |= !isnan(yr[i]);
        if (n >= 0 && !any)
            rc = al_fail(err, 2, "%s/metrics.jsonl: no '%s' in any line (chain-of-thought tasks report answer_acc; "
                         "every run reports token_acc, seq_acc and test_loss)", run_dirs[r], metric);
        s[r] = (SvgSeries){ report_folder_name(run_dirs[r], names[r], sizeof names[r]), n, xr, yr, NULL };
    }
    if (!rc) {
        char title[96];
        snprintf(title, sizeof title, "test %s vs step", metric);
        SvgLineChart c = { title, "step", acc ? metric : "test cross-entropy (nats per scored token)", s, n_runs,
                           0, acc ? 0 : 10, acc, 0, 1 };
        rc = svg_line_chart(out_svg, &c, err) ? 1 : 0;
    }
    free(x);
    free(s);
    free(names);
    return rc;
}
