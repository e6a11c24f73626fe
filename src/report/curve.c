/* curve.c — see curve.h. */
#include "attnlab/report/curve.h"
#include "attnlab/report/svg.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_POINTS = 100000, MAX_LINE = 1 << 16 };

/* The positive value of key in a metrics line, or NaN (a missing point). */
static double positive(const cJSON *line, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(line, key);
    return cJSON_IsNumber(v) && v->valuedouble > 0 && isfinite(v->valuedouble) ? v->valuedouble : NAN;
}

int report_curve(const char *run_dir, AlError *err) {
    char path[1024], *text = malloc(MAX_LINE);
    snprintf(path, sizeof path, "%s/metrics.jsonl", run_dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        free(text);
        return al_fail(err, 1, "cannot read '%s': %s", path, strerror(errno));
    }
    double *x = malloc(3 * MAX_POINTS * sizeof *x), *train = x + MAX_POINTS, *test = x + 2 * MAX_POINTS;
    int n = 0;
    while (n < MAX_POINTS && fgets(text, MAX_LINE, f)) {
        cJSON *line = cJSON_Parse(text);
        const cJSON *step = cJSON_GetObjectItemCaseSensitive(line, "step");
        if (cJSON_IsNumber(step)) {
            x[n] = step->valuedouble;
            train[n] = positive(line, "train_loss");
            test[n] = positive(line, "test_loss");
            n++;
        }
        cJSON_Delete(line);
    }
    fclose(f);
    free(text);
    SvgSeries s[2] = { { "train loss (mean since the last evaluation)", n, x, train, NULL },
                       { "test loss", n, x, test, NULL } };
    SvgLineChart c = { "training curve", "step", "cross-entropy (nats per scored token)", s, 2, 0, 10, 0, 0, 0 };
    snprintf(path, sizeof path, "%s/curve.svg", run_dir);
    int rc = n ? svg_line_chart(path, &c, err) : 0;
    free(x);
    return rc ? 1 : 0;
}
