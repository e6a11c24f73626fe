/* p002_run.c — see p002_run.h. */
#include "attnlab/exp/p002_run.h"

#include "attnlab/io/atomic_file.h"
#include "attnlab/report/svg.h"
#include "attnlab/util/fsutil.h"
#include "attnlab/util/strbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The CSV: one row per point; numbers in al_fmt_double's exact shortest form. */
static char *csv_text(const McConfig *c, const McRates *r, const McParams *p) {
    StrBuf b = { 0 };
    char num[8][32];
    strbuf_printf(&b, "%s,success,exp_d1_pos,lin_d1_zero,exp_d0_zero,lin_d0_zero,success_se,repetitions,m,tau\n",
                  mc_param_names[c->param]);
    for (int i = 0; i < c->n_values; i++) {
        double se = sqrt(r[i].success * (1 - r[i].success) / r[i].reps);
        strbuf_printf(&b, "%s,%s,%s,%s,%s,%s,%s,%d,%d,%s\n", al_fmt_double(c->values[i], num[0], 32),
                      al_fmt_double(r[i].success, num[1], 32), al_fmt_double(r[i].exp_d1_pos, num[2], 32),
                      al_fmt_double(r[i].lin_d1_zero, num[3], 32), al_fmt_double(r[i].exp_d0_zero, num[4], 32),
                      al_fmt_double(r[i].lin_d0_zero, num[5], 32), al_fmt_double(se, num[6], 32), r[i].reps,
                      p[i].m, al_fmt_double(p[i].tau, num[7], 32));
    }
    return b.s;
}

static int write_svg(const McConfig *c, const McRates *r, const char *path, AlError *err) {
    int n = c->n_values;
    double *y = al_malloc(6 * (size_t)n * sizeof *y);
    double *se = y + 5 * (size_t)n;
    for (int i = 0; i < n; i++) {
        y[i] = r[i].success;
        y[n + i] = r[i].exp_d1_pos;
        y[2 * n + i] = r[i].lin_d1_zero;
        y[3 * n + i] = r[i].exp_d0_zero;
        y[4 * n + i] = r[i].lin_d0_zero;
        se[i] = sqrt(r[i].success * (1 - r[i].success) / r[i].reps);
    }
    SvgSeries s[5] = {
        { "success (all four; ± 1 s.e.)", n, c->values, y, se },
        { "softmax: F(D1) > 0", n, c->values, y + n, NULL },
        { "linear: F(D1) = 0", n, c->values, y + 2 * n, NULL },
        { "softmax: F(D0) = 0", n, c->values, y + 3 * n, NULL },
        { "linear: F(D0) = 0", n, c->values, y + 4 * n, NULL },
    };
    char title[320];
    if (c->title[0]) snprintf(title, sizeof title, "%s", c->title);
    else snprintf(title, sizeof title, "paper 002, %s: ratio of success vs %s", mc_setting_names[c->base.setting],
                  mc_param_names[c->param]);
    SvgLineChart ch = { .title = title, .x_title = mc_param_names[c->param],
                        .y_title = "fraction of repetitions", .series = s, .n_series = 5,
                        .fixed_y_range = 1, .y_min = 0, .y_max = 1 };
    int rc = svg_line_chart(path, &ch, err);
    free(y);
    return rc;
}

int mc_run(const McConfig *c, const char *out_dir, int quiet, AlError *err) {
    if (al_path_check(out_dir, AL_FOLDER_ROOM, "mc: the output folder", err) || al_mkdir_p(out_dir, err))
        return err->code;
    McRates *r = al_calloc((size_t)c->n_values, sizeof *r);
    McParams *p = al_calloc((size_t)c->n_values, sizeof *p);
    double t0 = now_seconds();
    for (int i = 0; i < c->n_values; i++) {
        mc_config_point(c, i, &p[i]);
        Rng rng = rng_stream(c->seed, (uint64_t)i + 1);
        double t = now_seconds();
        mc_estimate(&p[i], c->reps, &rng, &r[i]);
        if (!quiet) {
            char v[32], dtext[16] = "";
            if (p[i].setting != MC_TOY) snprintf(dtext, sizeof dtext, " d=%d", p[i].d);
            fprintf(stderr, "mc %s %s=%s (n=%d%s m=%d tau=%.4g): success %.3f  [exp D1>0 %.3f, lin D1=0 %.3f, "
                    "exp D0=0 %.3f, lin D0=0 %.3f]  %.2f s\n", mc_setting_names[p[i].setting],
                    mc_param_names[c->param], al_fmt_double(c->values[i], v, sizeof v), p[i].n, dtext, p[i].m,
                    p[i].tau, r[i].success, r[i].exp_d1_pos, r[i].lin_d1_zero, r[i].exp_d0_zero, r[i].lin_d0_zero,
                    now_seconds() - t);
        }
    }
    char path[AL_PATH_MAX];
    AL_ASSERT(!al_path_fmt(path, sizeof path, NULL, "%s/success.csv", out_dir));   /* out_dir was checked above */
    char *csv = csv_text(c, r, p);
    int rc = write_text_atomic(path, csv, err);
    free(csv);
    AL_ASSERT(!al_path_fmt(path, sizeof path, NULL, "%s/success.svg", out_dir));
    if (!rc && write_svg(c, r, path, err)) rc = err->code;
    if (!rc && !quiet)
        fprintf(stderr, "mc: %d points x %d repetitions in %.1f s -> %s/success.csv, success.svg\n", c->n_values,
                c->reps, now_seconds() - t0, out_dir);
    free(r);
    free(p);
    return rc;
}

int p002_mc_main(int argc, char **argv) {
    const char *config = NULL, *out = NULL;
    int quiet = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--quiet")) quiet = 1;
        else if (argv[i][0] == '-' || config) {
            fprintf(stderr, "attnlab: mc: unexpected argument '%s'\nusage: attnlab mc CONFIG.json [--out DIR] "
                    "[--quiet]  (configs/paper002/, include/attnlab/exp/p002_config.h)\n", argv[i]);
            return 2;
        } else config = argv[i];
    }
    if (!config) {
        fprintf(stderr, "attnlab: mc: no config file given\nusage: attnlab mc CONFIG.json [--out DIR] [--quiet]\n");
        return 2;
    }
    AlError err = { 0 };
    McConfig *c = al_malloc(sizeof *c);
    int rc = mc_config_load(c, config, &err);
    if (!rc) rc = mc_run(c, out ? out : c->out, quiet, &err);
    if (rc) fprintf(stderr, "attnlab: error: %s\n", err.msg);
    free(c);
    return rc;
}
