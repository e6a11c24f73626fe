/* use_common.c — see use_common.h. */
#include "use_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Is opt one word of the space-separated list? */
static int listed(const char *allowed, const char *opt) {
    size_t n = strlen(opt);
    for (const char *p = strstr(allowed, opt); p; p = strstr(p + 1, opt))
        if ((p == allowed || p[-1] == ' ') && (p[n] == ' ' || !p[n])) return 1;
    return 0;
}

/* A non-negative integer option value. */
static int parse_count(const char *cmd, const char *opt, const char *v, int *out, AlError *err) {
    char *end;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < 0 || x > 1000000000)
        return al_fail(err, 2, "%s: %s needs a whole number >= 0, got '%s'", cmd, opt, v);
    *out = (int)x;
    return 0;
}

static int take_value(UseArgs *a, const char *opt, const char *v, AlError *err) {
    if (!strcmp(opt, "--set")) {
        if (a->n_sets == USE_MAX_SETS) return al_fail(err, 2, "%s: more than %d --set options", a->cmd, USE_MAX_SETS);
        a->sets[a->n_sets++] = v;
        return 0;
    }
    if (!strcmp(opt, "--example")) return parse_count(a->cmd, opt, v, &a->example, err);
    if (!strcmp(opt, "--max-new")) return parse_count(a->cmd, opt, v, &a->max_new, err);
    if (!strcmp(opt, "--draw")) return parse_count(a->cmd, opt, v, &a->draw, err);
    if (!strcmp(opt, "--steps")) return parse_count(a->cmd, opt, v, &a->steps, err);
    if (!strcmp(opt, "--seq-len")) return parse_count(a->cmd, opt, v, &a->seq_len, err);
    const char **slot = !strcmp(opt, "--data")   ? &a->data
                        : !strcmp(opt, "--out")  ? &a->out
                        : !strcmp(opt, "--anna") ? &a->anna
                        : !strcmp(opt, "--grid") ? &a->grid
                                                 : &a->prompt;
    if (*slot) return al_fail(err, 2, "%s: %s given twice", a->cmd, opt);
    *slot = v;
    return 0;
}

int use_parse(int argc, char **argv, const char *allowed, UseArgs *a, AlError *err) {
    memset(a, 0, sizeof *a);
    a->cmd = argv[0];
    a->example = a->steps = a->seq_len = -1;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (s[0] != '-') {
            if (a->dir) return al_fail(err, 2, "%s: more than one run folder given ('%s')", a->cmd, s);
            a->dir = s;
        } else if (!listed(allowed, s)) {
            return al_fail(err, 2, "%s: unknown option '%s' (options: %s)", a->cmd, s, allowed);
        } else if (!strcmp(s, "--json")) {
            a->json = 1;
        } else if (!strcmp(s, "--by-position")) {
            a->by_position = 1;
        } else if (i + 1 == argc) {
            return al_fail(err, 2, "%s: %s needs a value", a->cmd, s);
        } else if (take_value(a, s, argv[++i], err)) {
            return err->code;
        }
    }
    if (!a->dir) return al_fail(err, 2, "%s needs a run folder (e.g. results/match2)", a->cmd);
    if (a->data && (a->prompt || a->example >= 0))
        return al_fail(err, 2, "%s: --data and %s exclude each other", a->cmd, a->prompt ? "--prompt" : "--example");
    if (a->data && a->seq_len >= 0)
        return al_fail(err, 2, "%s: --data and --seq-len exclude each other (--seq-len draws a test set of "
                       "another length from the run's generator; --data brings its own rows)", a->cmd);
    if (a->data && al_path_check(a->data, 0, "--data", err)) return err->code;
    if (a->out && al_path_check(a->out, AL_FOLDER_ROOM, "--out", err)) return err->code;
    if (a->grid && !a->anna) return al_fail(err, 2, "%s: --grid DIR names where --anna best reads anna_summary.json; "
                                            "it needs --anna", a->cmd);
    if (a->grid && al_path_check(a->grid, AL_FOLDER_ROOM, "--grid", err)) return err->code;
    return 0;
}

int use_start(UseRun *u, int argc, char **argv, const char *allowed, AlError *err) {
    memset(u, 0, sizeof *u);
    if (use_parse(argc, argv, allowed, &u->a, err) || runload_open(&u->r, u->a.dir, u->a.sets, u->a.n_sets, err))
        return err->code;
    if (u->a.seq_len >= 0 && runload_retest(&u->r, u->a.seq_len, u->a.sets, u->a.n_sets, err)) return err->code;
    u->d = &u->r.data.test;
    if (!u->a.data) return 0;
    u->d = &u->file;
    return runload_read_data(&u->r, u->a.data, &u->file, err);
}

void use_end(UseRun *u) {
    dataset_free(&u->file);
    runload_close(&u->r);
}

const char *use_token_label(const LoadedRun *r, int id, char *buf, size_t n) {
    const TaskGen *g = &r->data.gen;
    if (g->token_name) return g->token_name(g, id);
    snprintf(buf, n, "%d", id);
    return buf;
}

int use_row_len(const Dataset *d, int row) {
    return d->info && d->info[row].len > 0 ? d->info[row].len : d->seq_len;
}
