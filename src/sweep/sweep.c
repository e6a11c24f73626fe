/* sweep.c — see sweep.h: the command line, the plan, and how a run ends. */
#include "attnlab/sweep/sweep.h"
#include "attnlab/io/atomic_file.h"
#include "attnlab/io/dirlock.h"
#include "attnlab/sweep/cell.h"
#include "attnlab/sweep/grid.h"
#include "attnlab/sweep/mpi.h"
#include "attnlab/sweep/runner.h"
#include "attnlab/train/runfolder.h"
#include "attnlab/util/fsutil.h"
#include "files.h"

#include <cJSON.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SETS 64
#define MAX_MERGE 256

typedef struct SweepOpts {
    const char *config, *out;
    const char *sets[MAX_SETS];
    const char *only[MAX_SETS];           /* --only KEY=VALUE, as given */
    int n_sets, n_only, jobs, quiet;
    int shard_i, shard_n;                 /* shard_n 0: no --shard */
    uint64_t seeds[SWEEP_MAX_SEEDS];      /* --seeds: replace sweep.seeds (n_seeds 0: no --seeds) */
    int n_seeds;
    const char *merge[MAX_MERGE];
    int n_merge, merging;
} SweepOpts;

/* ---- options ------------------------------------------------------------------------------ */

static int usage(AlError *err, const char *what, const char *arg) {
    return al_fail(err, 2, "sweep: %s%s%s%s\n(usage: ./train sweep CONFIG.json [--set key=value]... [--out DIR] "
                   "[--jobs N] [--shard I/N] [--only key=value]... [--seeds S,S...] [--quiet]  |  ./train sweep --merge DIR... [--out DIR])",
                   what, arg ? " '" : "", arg ? arg : "", arg ? "'" : "");
}

static int parse_count(const char *s, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > 4096) return -1;
    *out = (int)v;
    return 0;
}

static int parse_shard(const char *s, SweepOpts *o) {
    char *end;
    long i = strtol(s, &end, 10), n;
    if (end == s || *end != '/') return -1;
    const char *rest = end + 1;
    n = strtol(rest, &end, 10);
    if (end == rest || *end || n < 1 || n > 100000 || i < 0 || i >= n) return -1;
    o->shard_i = (int)i, o->shard_n = (int)n;
    return 0;
}

/* --seeds 1,2,3: the seeds, as sweep.seeds would list them. */
static int parse_seeds(const char *s, SweepOpts *o, AlError *err) {
    const char *p = s;
    o->n_seeds = 0;
    for (;;) {
        char *end;
        errno = 0;
        unsigned long long v = *p >= '0' && *p <= '9' ? strtoull(p, &end, 10) : 0;
        if (p[0] < '0' || p[0] > '9' || errno || v > (1ULL << 53) || (*end && *end != ','))
            return usage(err, "--seeds needs integers in [0, 9007199254740992] separated by commas, e.g. "
                         "--seeds 1,2,3, got", s);
        for (int j = 0; j < o->n_seeds; j++)
            if (o->seeds[j] == v)
                return al_fail(err, 2, "sweep: --seeds %s: seed %llu is listed twice", s, v);
        if (o->n_seeds == SWEEP_MAX_SEEDS)
            return al_fail(err, 2, "sweep: --seeds %s: at most %d seeds", s, SWEEP_MAX_SEEDS);
        o->seeds[o->n_seeds++] = v;
        if (!*end) return 0;
        p = end + 1;
    }
}

static int parse_opts(int argc, char **argv, SweepOpts *o, AlError *err) {
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--set")) {
            if (!more) return usage(err, "--set needs key.path=value", NULL);
            if (o->n_sets == MAX_SETS) return usage(err, "too many --set options", NULL);
            o->sets[o->n_sets++] = argv[++i];
        } else if (!strcmp(a, "--only")) {
            if (!more || !strchr(argv[i + 1], '='))
                return usage(err, "--only needs an axis and one of its values, e.g. --only task.seq_len=400, got",
                             more ? argv[i + 1] : "");
            if (o->n_only == MAX_SETS) return usage(err, "too many --only options", NULL);
            o->only[o->n_only++] = argv[++i];
        } else if (!strcmp(a, "--out")) {
            if (!more) return usage(err, "--out needs a folder", NULL);
            o->out = argv[++i];
        } else if (!strcmp(a, "--jobs")) {
            if (!more || parse_count(argv[i + 1], &o->jobs))
                return usage(err, "--jobs needs a number of worker processes in 1..4096, got", more ? argv[i + 1] : "");
            i++;
        } else if (!strcmp(a, "--shard")) {
            if (!more || parse_shard(argv[i + 1], o))
                return usage(err, "--shard needs I/N with 0 <= I < N (e.g. --shard 0/4), got", more ? argv[i + 1] : "");
            i++;
        } else if (!strcmp(a, "--seeds")) {
            if (!more) return usage(err, "--seeds needs the seeds, e.g. --seeds 1,2,3", NULL);
            if (parse_seeds(argv[++i], o, err)) return err->code;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (!strcmp(a, "--merge")) {
            o->merging = 1;
        } else if (a[0] == '-') {
            return usage(err, "unknown option", a);
        } else if (o->merging) {
            if (o->n_merge == MAX_MERGE) return usage(err, "too many folders to merge", NULL);
            o->merge[o->n_merge++] = a;
        } else if (o->config) {
            return usage(err, "more than one config file given", a);
        } else {
            o->config = a;
        }
    }
    if (o->merging && (o->config || o->n_sets || o->n_only || o->shard_n || o->jobs || o->n_seeds))
        return usage(err, "--merge takes sweep folders (and --out, --quiet) only", NULL);
    if (o->merging && !o->n_merge) return usage(err, "--merge needs the sweep folders to gather", NULL);
    if (!o->merging && !o->config) return usage(err, "no config file given", NULL);
    return o->config ? al_path_check(o->config, 0, "the config file", err) : 0;
}

/* ---- loading -------------------------------------------------------------------------------- */

/* The key of "--set KEY=VALUE" is `key`: leading blanks, then key, then '=' or a blank. */
static int set_names(const char *set, const char *key, int prefix_ok) {
    size_t n = strlen(key);
    while (*set == ' ') set++;
    return !strncmp(set, key, n) && (set[n] == '=' || set[n] == ' ' || (prefix_ok && set[n] == '.'));
}

/* The sweep section is the grid itself: --set would reach it only as an unknown key. */
static int check_section_sets(const SweepOpts *o, AlError *err) {
    for (int i = 0; i < o->n_sets; i++)
        if (set_names(o->sets[i], "sweep", 1))
            return al_fail(err, 2, "--set %s: the sweep section is not changed by --set: edit it in %s, or choose "
                           "its cells with --only KEY=VALUE and its seeds with --seeds 1,2,3", o->sets[i], o->config);
    return 0;
}

/* An override of a key the sweep varies would be silently replaced per cell. */
static int check_sets(const SweepOpts *o, const SweepSpec *s, AlError *err) {
    for (int i = 0; i < o->n_sets; i++) {
        for (int a = 0; a < s->n_axes; a++)
            if (set_names(o->sets[i], s->axes[a].key, 0))
                return al_fail(err, 2, "--set %s: %s is a sweep axis (sweep.axes in %s), which sets it per cell",
                               o->sets[i], s->axes[a].key, o->config);
        if (set_names(o->sets[i], "seed", 0))
            return al_fail(err, 2, "--set %s: the seeds come from sweep.seeds in %s, or from --seeds 1,2,3",
                           o->sets[i], o->config);
    }
    return 0;
}

/* --seeds: the section's "seeds" replaced, before it is parsed like any other. */
static int replace_seeds(char **json, const SweepOpts *o) {
    cJSON *section = cJSON_Parse(*json);
    if (!cJSON_IsObject(section)) {   /* sweep_spec_parse reports it */
        cJSON_Delete(section);
        return 0;
    }
    cJSON *seeds = cJSON_CreateArray();
    for (int i = 0; i < o->n_seeds; i++) cJSON_AddItemToArray(seeds, cJSON_CreateNumber((double)o->seeds[i]));
    cJSON_DeleteItemFromObjectCaseSensitive(section, "seeds");
    cJSON_AddItemToObject(section, "seeds", seeds);
    char *text = cJSON_PrintUnformatted(section);
    cJSON_Delete(section);
    if (!text) return -1;
    free(*json);
    *json = text;
    return 0;
}

/* ---- --only: the cells a run may start ------------------------------------------------------ */

/* allow[a][v]: value v of axis a may run.  Values of one axis named by several
 * --only options are alternatives; options on different axes must all hold; an
 * axis no --only names allows every value. */
typedef struct CellFilter { int n_only; unsigned char allow[SWEEP_MAX_AXES][SWEEP_MAX_VALUES]; } CellFilter;

/* The axis value written as v: its JSON or its label, or the same number in
 * another spelling (5e-4 for 0.0005).  −1: none. */
static int axis_value_index(const SweepAxis *ax, const char *v) {
    char *end;
    double x = strtod(v, &end);
    int numeric = end != v && !*end;
    for (int i = 0; i < ax->n; i++)
        if (!strcmp(v, ax->json[i]) || !strcmp(v, ax->label[i]) || (numeric && x == ax->num[i])) return i;
    return -1;
}

/* "a, b, c": the axes' keys (axis −1) or one axis's values, for messages. */
static void list_names(const SweepSpec *s, int axis, char *out, size_t n) {
    size_t len = 0;
    int count = axis < 0 ? s->n_axes : s->axes[axis].n;
    out[0] = 0;
    for (int i = 0; i < count && len < n; i++)
        len += (size_t)snprintf(out + len, n - len, "%s%s", i ? ", " : "",
                                axis < 0 ? s->axes[i].key : s->axes[axis].label[i]);
}

static int parse_only(const SweepOpts *o, const SweepSpec *s, CellFilter *f, AlError *err) {
    int named[SWEEP_MAX_AXES] = {0};
    char names[1024];
    memset(f, 0, sizeof *f);
    f->n_only = o->n_only;
    for (int i = 0; i < o->n_only; i++) {
        const char *opt = o->only[i], *eq = strchr(opt, '=');
        int a = sweep_axis_of(s, opt, (size_t)(eq - opt));
        if (a < 0) {
            list_names(s, -1, names, sizeof names);
            return al_fail(err, 2, "--only %s: '%.*s' is not an axis of this sweep (sweep.axes in %s: %s)", opt,
                           (int)(eq - opt), opt, o->config, names);
        }
        int v = axis_value_index(&s->axes[a], eq + 1);
        if (v < 0) {
            list_names(s, a, names, sizeof names);
            return al_fail(err, 2, "--only %s: '%s' is not one of the values of sweep.axes[\"%s\"] in %s (%s)", opt,
                           eq + 1, s->axes[a].key, o->config, names);
        }
        named[a] = 1;
        f->allow[a][v] = 1;
    }
    for (int a = 0; a < s->n_axes; a++)
        if (!named[a]) memset(f->allow[a], 1, sizeof f->allow[a]);
    return 0;
}

static int filter_keeps(const CellFilter *f, const SweepSpec *s, long cell) {
    int vi[SWEEP_MAX_AXES];
    sweep_point_values(s, cell / s->n_seeds, vi);
    for (int a = 0; a < s->n_axes; a++)
        if (!f->allow[a][vi[a]]) return 0;
    return 1;
}

typedef struct Sweep {
    Config base;
    SweepSpec spec;
    CellFilter filter;                    /* --only (every cell when none is given) */
    char out[AL_PATH_MAX], exe[AL_PATH_MAX];
    char *base_json, *spec_json;          /* the two files every sweep folder holds */
} Sweep;

static void sweep_free(Sweep *w) {
    sweep_spec_free(&w->spec);
    free(w->base_json);
    free(w->spec_json);
}

/* base_config.json is read back by every worker: parse our own text, so the cells
 * the sweep checks are exactly the ones the workers will run. */
static int load_base_text(Sweep *w, const char *src, AlError *err) {
    Config parsed;
    if (cfg_parse(&parsed, w->base_json, src, err)) return err->code;
    w->base = parsed;
    return 0;
}

/* Every cell's run folder (OUT/cells/NAME) must fit the trainer's path limit: a path
 * cut short would send a run elsewhere.  Checked before anything is written. */
static int check_out_length(const Sweep *w, int out_len, const char *what, AlError *err) {
    size_t longest = 0;
    for (long c = 0; c < w->spec.n_cells; c++) {
        char name[SWEEP_NAME_MAX];
        sweep_cell_name(&w->spec, c, name, sizeof name);
        if (strlen(name) > longest) longest = strlen(name);
    }
    size_t need = (size_t)out_len + strlen("/cells/") + longest;
    if (out_len < 0 || need > RUNFOLDER_PATH_MAX)
        return al_fail(err, 2, "%s: the sweep folder path is %d characters long, and its longest cell folder would "
                       "be %zu; at most %d are supported (give a shorter --out)", what, out_len, need,
                       RUNFOLDER_PATH_MAX);
    return 0;
}

static int load_config(Sweep *w, const SweepOpts *o, AlError *err) {
    char *json = NULL;
    if (check_section_sets(o, err)) return err->code;
    if (cfg_load_sweep(&w->base, o->config, o->sets, o->n_sets, &json, err)) return err->code;
    if (!json)
        return al_fail(err, 2, "%s: no 'sweep' section: ./train sweep needs one, e.g. \"sweep\": {\"axes\": "
                       "{\"model.d_model\": [16, 32]}, \"seeds\": [1, 2]} (README: Sweeps and grids)", o->config);
    if (o->n_seeds && replace_seeds(&json, o)) {
        free(json);
        return al_fail(err, 1, "sweep: out of memory replacing the seeds");
    }
    w->base_json = cfg_to_json(&w->base);
    int rc = load_base_text(w, o->config, err);
    if (!rc) rc = sweep_spec_parse(&w->spec, json, &w->base, o->config, err);
    free(json);
    if (!rc) rc = check_sets(o, &w->spec, err);
    if (!rc) rc = parse_only(o, &w->spec, &w->filter, err);
    if (rc) return rc;
    w->spec_json = sweep_spec_to_json(&w->spec);
    int n = o->out ? snprintf(w->out, sizeof w->out, "%s", o->out)
                   : snprintf(w->out, sizeof w->out, "results/%s", w->base.name);
    return check_out_length(w, n, o->out ? "--out" : "name", err);
}

static int write_sweep_files(const Sweep *w, AlError *err) {
    char path[AL_PATH_MAX];
    if (al_mkdir_p(w->out, err)) return err->code;
    if (al_path_fmt(path, sizeof path, err, "%s/cells", w->out) || al_mkdir_p(path, err)) return err->code;
    sweep_base_path(w->out, path, sizeof path);
    if (write_text_atomic(path, w->base_json, err)) return err->code;
    if (al_path_fmt(path, sizeof path, err, "%s/sweep.json", w->out)) return err->code;
    return write_text_atomic(path, w->spec_json, err);
}

/* ---- the plan: which cells this run starts ---------------------------------------------- */

typedef struct Plan { long *cells, n, selected; int finished, resume; } Plan;

/* Cells of this shard that --only keeps and that are not finished.  A folder holding
 * another config's run stops everything before any cell starts, a cell --only leaves
 * out too: the grid written at the end reads every cell. */
static int make_plan(const Sweep *w, const SweepRun *run, int shard_i, int shard_n, Plan *p, AlError *err) {
    memset(p, 0, sizeof *p);
    p->cells = al_calloc((size_t)w->spec.n_cells, sizeof *p->cells);
    for (long c = 0; c < w->spec.n_cells; c++) {
        if (shard_n && c % shard_n != shard_i) continue;
        char dir[AL_PATH_MAX], why[512] = "";
        Config expect;
        if (sweep_cell_config(&w->spec, &w->base, c, &expect, err)) return err->code;
        sweep_cell_dir(run, c, dir, sizeof dir);
        CellState st = cell_inspect(dir, &expect, why, sizeof why);
        if (st == CELL_CONFLICT)
            return al_fail(err, 2, "%s %s: delete that folder, or give the sweep another --out", dir, why);
        if (!filter_keeps(&w->filter, &w->spec, c)) continue;
        p->selected++;
        if (st == CELL_DONE) p->finished++;
        else p->cells[p->n++] = c, p->resume += st == CELL_RESUME;
        if (st == CELL_NEW && why[0] && !run->quiet) printf("sweep: %s\n", why);
    }
    return 0;
}

/* "1, 2, 3" */
static void seed_list(const uint64_t *seeds, int n, const char *sep, char *out, size_t size) {
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; i < n && len < size; i++)
        len += (size_t)snprintf(out + len, size - len, "%s%" PRIu64, i ? sep : "", seeds[i]);
}

static int has_seed(const uint64_t *seeds, int n, uint64_t seed) {
    for (int i = 0; i < n; i++)
        if (seeds[i] == seed) return 1;
    return 0;
}

/* A cell folder of `seed` at any point of the grid, or 0: its name in `name`. */
static int seed_has_cells(const Sweep *w, uint64_t seed, char *name, size_t size) {
    SweepSpec one = w->spec;   /* the grid with that seed alone (axes shared, not freed) */
    one.seeds[0] = seed, one.n_seeds = 1, one.n_cells = one.n_points;
    for (long p = 0; p < one.n_points; p++) {
        char dir[AL_PATH_MAX];
        sweep_cell_name(&one, p, name, size);
        if (snprintf(dir, sizeof dir, "%s/cells/%s", w->out, name) < (int)sizeof dir && sweep_exists(dir)) return 1;
    }
    return 0;
}

/* The seeds the folder's sweep.json lists (none when it has no readable one). */
static int folder_seeds(const char *out, uint64_t *seeds, AlError *err) {
    char path[AL_PATH_MAX];
    if (al_path_fmt(path, sizeof path, err, "%s/sweep.json", out)) return -1;
    char *text = al_read_file(path, NULL);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "seeds");
    int n = 0;
    for (const cJSON *v = cJSON_IsArray(list) ? list->child : NULL; v && n < SWEEP_MAX_SEEDS; v = v->next)
        if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= 9007199254740992.0)
            seeds[n++] = (uint64_t)v->valuedouble;
    cJSON_Delete(j);
    free(text);
    return n;
}

/* Seeds the folder's sweep.json lists and this sweep does not (another --seeds, an
 * edited sweep.seeds): their cells would drop out of the grid, so a folder holding
 * any stops the sweep before anything is written. */
static int check_kept_seeds(const Sweep *w, AlError *err) {
    const SweepSpec *s = &w->spec;
    uint64_t keep[2 * SWEEP_MAX_SEEDS];
    int n_old = folder_seeds(w->out, keep, err);
    if (n_old < 0) return err->code;
    for (int i = 0; i < n_old; i++) {
        char name[SWEEP_NAME_MAX], now[1400], all[2800];
        if (has_seed(s->seeds, s->n_seeds, keep[i]) || !seed_has_cells(w, keep[i], name, sizeof name)) continue;
        int n_keep = n_old;   /* the folder's seeds, then this sweep's new ones */
        for (int j = 0; j < s->n_seeds; j++)
            if (!has_seed(keep, n_old, s->seeds[j])) keep[n_keep++] = s->seeds[j];
        seed_list(s->seeds, s->n_seeds, ", ", now, sizeof now);
        seed_list(keep, n_keep, ",", all, sizeof all);
        return al_fail(err, 2, "%s holds runs of seed %" PRIu64 " (%s/cells/%s), which this sweep's seeds (%s) "
                       "leave out: its grid would no longer list them.  Keep the seed (--seeds %s: finished cells "
                       "do not run again), or give the sweep another --out", w->out, keep[i], w->out, name, now, all);
    }
    return 0;
}

static void print_plan(const Sweep *w, const SweepRun *run, const Plan *p, const char *where) {
    if (run->quiet) return;
    char only[64] = "";
    if (w->filter.n_only) snprintf(only, sizeof only, ", %ld kept by --only", p->selected);
    printf("sweep: %ld cells (%ld points x %d seed%s)%s%s: %d finished, %d to resume, %ld to start; "
           "%d worker%s; folder %s\n",
           w->spec.n_cells, w->spec.n_points, w->spec.n_seeds, w->spec.n_seeds == 1 ? "" : "s", where, only,
           p->finished, p->resume, p->n - p->resume, run->jobs, run->jobs == 1 ? "" : "s", w->out);
    fflush(stdout);
}

/* ---- the end: the grid and the exit code --------------------------------------------------- */

static int write_grid(const Sweep *w, int quiet, AlError *err) {
    SweepGrid g;
    int rc = grid_collect(&g, &w->spec, &w->base, w->out, err);
    if (!rc) rc = grid_write(&g, w->out, err);
    if (!rc)
        printf("sweep: %d of %ld cells done, %d failed, %d pending; grid in %s/grid.csv (and grid.json, heatmap*.svg, "
               "summary.md)\n", g.done, w->spec.n_cells, g.failed, g.pending, w->out);
    if (!rc && g.failed) rc = al_fail(err, 1, "sweep: %d cell%s failed (their logs are listed in %s/grid.csv)",
                                      g.failed, g.failed == 1 ? "" : "s", w->out);
    (void)quiet;
    grid_free(&g);
    return rc;
}

static int exit_code(int signal_rc, const SweepTally *t, AlError *err) {
    if (signal_rc) return signal_rc;
    if (t->failed) return al_fail(err, 1, "sweep: %d cell%s failed (logs above)", t->failed, t->failed == 1 ? "" : "s");
    return 0;
}

static int jobs_default(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* What a local sweep prints and returns once its cells have run (or it was stopped). */
static int run_local_end(const Sweep *w, const SweepOpts *o, int sig, const SweepTally *t, AlError *err) {
    if (o->shard_n) {
        printf("sweep: shard %d/%d: %d cells done, %d failed, %d stopped; gather the shards with "
               "./train sweep --merge DIR...\n", o->shard_i, o->shard_n, t->done, t->failed, t->stopped);
        return exit_code(sig, t, err);
    }
    if (sig) {   /* a partial grid still shows what is done */
        AlError ignore = {0};
        write_grid(w, o->quiet, &ignore);
        return sig;
    }
    int rc = write_grid(w, o->quiet, err);
    return rc ? rc : exit_code(0, t, err);
}

/* One sweep process per folder: a second one (another --set, another grid) would
 * rewrite base_config.json under the first one's workers, which read it.  Shards
 * of one sweep share the folder (README: Many machines, shards), so they share the
 * lock.  The folder is created for the lock, which goes when the process ends. */
static int lock_folder(const Sweep *w, int shard, DirLock *lock, AlError *err) {
    dirlock_init(lock);
    if (al_mkdir_p(w->out, err)) return err->code;
    return dirlock_acquire(lock, w->out, "sweep", shard, err);
}

static int run_local(Sweep *w, SweepRun *run, const SweepOpts *o, AlError *err) {
    Plan p = {0};
    char where[64] = "";
    if (o->shard_n) snprintf(where, sizeof where, ", shard %d/%d", o->shard_i, o->shard_n);
    DirLock lock;
    int rc = lock_folder(w, o->shard_n > 0, &lock, err);
    if (!rc) rc = make_plan(w, run, o->shard_i, o->shard_n, &p, err);
    if (!rc) rc = check_kept_seeds(w, err);
    if (!rc) rc = write_sweep_files(w, err);
    if (rc) {
        free(p.cells);
        dirlock_release(&lock);
        return rc;
    }
    print_plan(w, run, &p, where);
    SweepTally tally = { .total = (int)p.n, .workers = run->jobs };
    CellQueue q = { p.cells, p.n, 0 };
    CellSource src = sweep_queue_source(run, &q, &tally);
    int sig = sweep_run_cells(&src);
    free(p.cells);
    rc = run_local_end(w, o, sig, &tally, err);
    dirlock_release(&lock);
    return rc;
}

#ifdef ATTNLAB_HAVE_MPI
static int run_mpi(Sweep *w, SweepRun *run, const SweepOpts *o, AlError *err) {
    int rank, size;
    if (sweep_mpi_init(&rank, &size, err)) return err->code;
    Plan p = {0};
    int rc = 0;
    DirLock lock;   /* rank 0 holds the folder for the whole grid */
    dirlock_init(&lock);
    if (rank == 0) {
        char where[64];
        snprintf(where, sizeof where, ", %d MPI ranks", size);
        rc = lock_folder(w, 0, &lock, err);
        if (!rc) rc = make_plan(w, run, 0, 0, &p, err);
        if (!rc) rc = check_kept_seeds(w, err);
        if (!rc) rc = write_sweep_files(w, err);
        if (!rc) print_plan(w, run, &p, where);
    }
    if (sweep_mpi_share(rc)) {   /* rank 0's message is the one printed */
        sweep_mpi_finalize();
        free(p.cells);
        dirlock_release(&lock);
        return rc;
    }
    run->rank = rank;
    SweepTally tally = { .total = (int)p.n, .workers = run->jobs * size };   /* rank 0 reports all */
    CellQueue q = { p.cells, p.n, 0 };
    SweepMpiState m = { &q, rank, size, 0, 0 };
    CellSource src = sweep_mpi_source(run, &m, &tally);
    int sig = sweep_run_cells(&src);
    free(p.cells);
    if (sig) exit(sig);   /* no MPI_Finalize: the other ranks may be gone already */
    sweep_mpi_barrier();
    if (rank == 0) rc = write_grid(w, o->quiet, err);
    dirlock_release(&lock);
    sweep_mpi_finalize();
    return rank == 0 ? (rc ? rc : exit_code(0, &tally, err)) : 0;
}
#else
static int run_mpi(Sweep *w, SweepRun *run, const SweepOpts *o, AlError *err) {
    (void)w, (void)run, (void)o;
    return al_fail(err, 2, "sweep: started by mpirun (%d ranks), but this attnlab was built without MPI: every rank "
                   "would run the whole grid.  Install openmpi-bin and libopenmpi-dev, run cmake -U 'MPI_*' build and "
                   "rebuild, or run without mpirun", sweep_mpi_world_size());
}
#endif

/* ---- --merge ------------------------------------------------------------------------------- */

static int read_sweep_folder(const char *dir, char **base_json, char **spec_json, AlError *err) {
    char path[AL_PATH_MAX];
    if (al_path_fmt(path, sizeof path, err, "%s/base_config.json", dir)) return err->code;
    *base_json = al_read_file(path, NULL);
    if (al_path_fmt(path, sizeof path, err, "%s/sweep.json", dir)) return err->code;
    *spec_json = al_read_file(path, NULL);
    if (!*base_json || !*spec_json)
        return al_fail(err, 2, "sweep --merge: '%s' is not a sweep folder (no readable %s)", dir,
                       *base_json ? "sweep.json" : "base_config.json");
    return 0;
}

/* Brings cell c into w->out from the first folder where it is finished; a cell
 * finished nowhere is copied as it is (checkpoint, failure record) if out lacks it. */
static int merge_cell(const Sweep *w, const SweepRun *run, const SweepOpts *o, long c, AlError *err) {
    char out_dir[AL_PATH_MAX], from[AL_PATH_MAX], name[SWEEP_NAME_MAX], why[512];
    Config expect;
    if (sweep_cell_config(&w->spec, &w->base, c, &expect, err)) return err->code;
    sweep_cell_dir(run, c, out_dir, sizeof out_dir);
    sweep_cell_name(&w->spec, c, name, sizeof name);
    if (cell_inspect(out_dir, &expect, why, sizeof why) == CELL_DONE) return 0;
    const char *fallback = NULL;
    for (int i = 0; i < o->n_merge; i++) {
        if (al_path_fmt(from, sizeof from, err, "%s/cells/%s", o->merge[i], name)) return err->code;
        if (sweep_same_dir(from, out_dir) || !sweep_exists(from)) continue;
        CellState st = cell_inspect(from, &expect, why, sizeof why);
        if (st == CELL_CONFLICT) return al_fail(err, 2, "sweep --merge: %s %s", from, why);
        if (st == CELL_DONE) return sweep_copy_files(from, out_dir, err);
        if (!fallback) fallback = o->merge[i];
    }
    if (!fallback || sweep_exists(out_dir)) return 0;
    if (al_path_fmt(from, sizeof from, err, "%s/cells/%s", fallback, name)) return err->code;
    return sweep_copy_files(from, out_dir, err);
}

static int run_merge(const SweepOpts *o, AlError *err) {
    Sweep w = {0};
    int rc = read_sweep_folder(o->merge[0], &w.base_json, &w.spec_json, err);
    for (int i = 1; i < o->n_merge && !rc; i++) {
        char *b = NULL, *s = NULL;
        rc = read_sweep_folder(o->merge[i], &b, &s, err);
        if (!rc && (strcmp(b, w.base_json) || strcmp(s, w.spec_json)))
            rc = al_fail(err, 2, "sweep --merge: '%s' holds another sweep than '%s' (%s differs)", o->merge[i],
                         o->merge[0], strcmp(b, w.base_json) ? "base_config.json" : "sweep.json");
        free(b);
        free(s);
    }
    char src[AL_PATH_MAX];
    if (!rc) rc = al_path_fmt(src, sizeof src, err, "%s/base_config.json", o->merge[0]);
    if (!rc) rc = load_base_text(&w, src, err);
    if (!rc) rc = al_path_fmt(src, sizeof src, err, "%s/sweep.json", o->merge[0]);
    if (!rc) rc = sweep_spec_parse(&w.spec, w.spec_json, &w.base, src, err);
    int n = snprintf(w.out, sizeof w.out, "%s", o->out ? o->out : o->merge[0]);
    if (!rc) rc = check_out_length(&w, n, o->out ? "--out" : "sweep --merge", err);
    for (int i = 0; i < o->n_merge && !rc; i++) rc = check_out_length(&w, (int)strlen(o->merge[i]), "sweep --merge", err);
    if (!rc) rc = write_sweep_files(&w, err);
    SweepRun run = { .spec = &w.spec, .base = &w.base, .out_dir = w.out, .quiet = o->quiet, .rank = -1 };
    for (long c = 0; c < w.spec.n_cells && !rc; c++) rc = merge_cell(&w, &run, o, c, err);
    if (!rc) rc = write_grid(&w, o->quiet, err);
    sweep_free(&w);
    return rc;
}

/* ---- the command ----------------------------------------------------------------------------- */

int sweep_mpi_world_size(void) {
    static const char *const VARS[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", NULL };   /* Open MPI; MPICH, Slurm PMI */
    for (int i = 0; VARS[i]; i++) {
        const char *v = getenv(VARS[i]);
        if (v && atoi(v) > 0) return atoi(v);
    }
    return 1;
}

int sweep_main(int argc, char **argv, AlError *err) {
    SweepOpts o;
    if (parse_opts(argc, argv, &o, err)) return err->code;
    if (o.merging) return run_merge(&o, err);
    Sweep w = {0};
    int rc = load_config(&w, &o, err);
    ssize_t n = rc ? 0 : readlink("/proc/self/exe", w.exe, sizeof w.exe - 1);
    if (!rc && n <= 0) rc = al_fail(err, 1, "sweep: cannot find the attnlab binary (/proc/self/exe): %s", strerror(errno));
    int world = sweep_mpi_world_size();
    SweepRun run = { .spec = &w.spec, .base = &w.base, .out_dir = w.out, .exe = w.exe,
                     .jobs = o.jobs ? o.jobs : world > 1 ? 1 : jobs_default(), .quiet = o.quiet, .rank = -1 };
    if (!rc && world > 1 && o.shard_n) rc = usage(err, "--shard and mpirun do not mix: the ranks share the grid", NULL);
    if (!rc) rc = world > 1 ? run_mpi(&w, &run, &o, err) : run_local(&w, &run, &o, err);
    sweep_free(&w);
    return rc;
}
