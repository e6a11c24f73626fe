/* spec.c — see spec.h.
 *
 * The section arrives as JSON text cut out of the config file by cfg_load_sweep, so
 * it is well-formed; what is checked here is its shape (known keys, types, sizes)
 * and then every cell's config, through cfg_set_all — the loader's own type, range
 * and cross-key rules — then task_check and task_check_memory, as the trainer runs
 * them, so that a sweep cannot ask for a run `./train` would refuse.
 * The loader's message is kept and re-attributed to the sweep key it came from. */
#include "attnlab/sweep/spec.h"
#include "attnlab/data/task.h"
#include "attnlab/io/json_diag.h"

#include <cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const sweep_metric_names[METRIC_COUNT] = { "token_acc", "seq_acc", "answer_acc" };
const char *const sweep_metric_summary_keys[METRIC_COUNT] = { "test_token_acc", "test_seq_acc", "test_answer_acc" };

static const char *const SWEEP_KEYS[] = { "axes", "seeds", "metric", "rows", "cols", "threshold", NULL };

const char *sweep_help(void) {
    return "\nsweep: a grid of runs, read by ./train sweep CONFIG only (README: Sweeps and grids)\n"
           "  sweep.axes                 object: config key path -> list of values, e.g.\n"
           "      {\"model.attention.type\": [\"softmax\", \"linear\"], \"model.d_model\": [16, 32]};\n"
           "      at most 8 axes of 64 values; each value is checked as --set key=value would be\n"
           "  sweep.seeds                list of seeds, each cell runs once per seed (default [seed];\n"
           "      ./train sweep --seeds 1,2,3 replaces it)\n"
           "  sweep.metric               the primary figure: \"token_acc\" | \"seq_acc\" | \"answer_acc\"\n"
           "      (default answer_acc for arith, lis, ed; seq_acc for index_lookup, dyck; else token_acc)\n"
           "  sweep.rows, sweep.cols     key paths of the heatmaps' row and column axes (default the\n"
           "      first task.* axis and model.d_model; the other axes get one heatmap per value)\n"
           "  sweep.threshold            number in (0, 1]: summary.md lists the smallest column value\n"
           "      reaching it (default 0.9)\n";
}

int sweep_axis_of(const SweepSpec *s, const char *key, size_t len) {
    for (int a = 0; a < s->n_axes; a++)
        if (strlen(s->axes[a].key) == len && !strncmp(s->axes[a].key, key, len)) return a;
    return -1;
}

static int find_axis(const SweepSpec *s, const char *key) { return sweep_axis_of(s, key, strlen(key)); }

/* ---- the section's members ---------------------------------------------------------- */

static int parse_axis(SweepAxis *ax, const cJSON *item, const char *src, AlError *err) {
    char got[96];
    snprintf(ax->key, sizeof ax->key, "%s", item->string);
    if (strlen(item->string) >= sizeof ax->key)
        return al_fail(err, 2, "%s: sweep.axes: key path '%.60s...' is too long", src, item->string);
    if (!strcmp(item->string, "seed"))
        return al_fail(err, 2, "%s: sweep.axes: 'seed' is not an axis: list the seeds in sweep.seeds", src);
    if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) == 0)
        return al_fail(err, 2, "%s: sweep.axes[\"%s\"]: expected a non-empty list of values, e.g. [16, 32], got %s",
                       src, ax->key, json_diag_as_written(item, got, sizeof got));
    if (cJSON_GetArraySize(item) > SWEEP_MAX_VALUES)
        return al_fail(err, 2, "%s: sweep.axes[\"%s\"]: at most %d values, got %d", src, ax->key, SWEEP_MAX_VALUES,
                       cJSON_GetArraySize(item));
    for (const cJSON *v = item->child; v; v = v->next) {
        if (!cJSON_IsNumber(v) && !cJSON_IsString(v) && !cJSON_IsBool(v))
            return al_fail(err, 2, "%s: sweep.axes[\"%s\"]: values must be numbers, strings or true/false, got %s",
                           src, ax->key, json_diag_as_written(v, got, sizeof got));
        int i = ax->n++;
        ax->json[i] = cJSON_PrintUnformatted(v);
        ax->label[i] = cJSON_IsString(v) ? strdup(v->valuestring) : strdup(ax->json[i]);
        ax->num[i] = cJSON_IsNumber(v) ? v->valuedouble : NAN;
        for (int j = 0; j < i; j++)
            if (!strcmp(ax->json[j], ax->json[i]))
                return al_fail(err, 2, "%s: sweep.axes[\"%s\"]: value %s is listed twice", src, ax->key, ax->json[i]);
    }
    return 0;
}

static int parse_axes(SweepSpec *s, const cJSON *axes, const char *src, AlError *err) {
    char got[96];
    if (!cJSON_IsObject(axes) || !axes->child)
        return al_fail(err, 2, "%s: sweep.axes: expected an object of key paths and value lists, "
                       "e.g. {\"model.d_model\": [16, 32]}, got %s", src, json_diag_as_written(axes, got, sizeof got));
    for (const cJSON *it = axes->child; it; it = it->next) {
        if (s->n_axes == SWEEP_MAX_AXES)
            return al_fail(err, 2, "%s: sweep.axes: at most %d axes", src, SWEEP_MAX_AXES);
        if (find_axis(s, it->string) >= 0)
            return al_fail(err, 2, "%s: sweep.axes: duplicate key '%s'", src, it->string);
        if (parse_axis(&s->axes[s->n_axes++], it, src, err)) return err->code;
    }
    return 0;
}

static int parse_seeds(SweepSpec *s, const cJSON *seeds, const char *src, AlError *err) {
    char got[96];
    if (!cJSON_IsArray(seeds) || cJSON_GetArraySize(seeds) == 0 || cJSON_GetArraySize(seeds) > SWEEP_MAX_SEEDS)
        return al_fail(err, 2, "%s: sweep.seeds: expected a list of 1 to %d seeds, e.g. [1, 2, 3], got %s", src,
                       SWEEP_MAX_SEEDS, json_diag_as_written(seeds, got, sizeof got));
    for (const cJSON *v = seeds->child; v; v = v->next) {
        double x = v->valuedouble;
        if (!cJSON_IsNumber(v) || x != floor(x) || x < 0 || x > 9007199254740992.0)
            return al_fail(err, 2, "%s: sweep.seeds: expected integers in [0, 9007199254740992], got %s", src,
                           json_diag_as_written(v, got, sizeof got));
        for (int j = 0; j < s->n_seeds; j++)
            if (s->seeds[j] == (uint64_t)x)
                return al_fail(err, 2, "%s: sweep.seeds: seed %s is listed twice", src,
                               json_diag_as_written(v, got, sizeof got));
        s->seeds[s->n_seeds++] = (uint64_t)x;
    }
    return 0;
}

static int parse_metric(SweepSpec *s, const cJSON *v, const char *src, AlError *err) {
    char got[96];
    for (int m = 0; m < METRIC_COUNT && cJSON_IsString(v); m++)
        if (!strcmp(v->valuestring, sweep_metric_names[m])) {
            s->metric = (SweepMetric)m;
            return 0;
        }
    return al_fail(err, 2, "%s: sweep.metric: expected one of \"token_acc\", \"seq_acc\", \"answer_acc\"; got %s", src,
                   json_diag_as_written(v, got, sizeof got));
}

static int parse_layout_axis(const SweepSpec *s, const cJSON *v, const char *what, int *out, const char *src,
                             AlError *err) {
    char got[96];
    *out = cJSON_IsString(v) ? find_axis(s, v->valuestring) : -1;
    if (*out < 0)
        return al_fail(err, 2, "%s: sweep.%s: expected the key path of one of the sweep.axes, got %s", src, what,
                       json_diag_as_written(v, got, sizeof got));
    return 0;
}

/* Defaults: columns = the width (model.d_model) or the last axis; rows = the first
 * task.* axis (the problem size) or the first other one; the rest are panels. */
static void default_layout(SweepSpec *s, int rows_given, int cols_given) {
    if (!cols_given) {
        s->cols = find_axis(s, "model.d_model");
        if (s->cols < 0 || (rows_given && s->cols == s->rows)) s->cols = s->n_axes - 1;
        if (rows_given && s->cols == s->rows) s->cols = s->n_axes > 1 ? (s->rows + 1) % s->n_axes : s->rows;
    }
    if (rows_given && s->cols == s->rows) s->rows = -1;   /* one axis: it is the columns */
    if (rows_given) return;
    s->rows = -1;
    for (int a = 0; a < s->n_axes && s->rows < 0; a++)
        if (a != s->cols && !strncmp(s->axes[a].key, "task.", 5)) s->rows = a;
    for (int a = 0; a < s->n_axes && s->rows < 0; a++)
        if (a != s->cols) s->rows = a;
}

static SweepMetric default_metric(const Config *base) {
    switch (base->task.type) {
    case TASK_ARITH: case TASK_LIS: case TASK_ED: return METRIC_ANSWER_ACC;   /* paper 004's figure */
    case TASK_INDEX_LOOKUP: case TASK_DYCK: return METRIC_SEQ_ACC;             /* one scored token */
    case TASK_EQ_RANDOM: case TASK_EQ_ONE: case TASK_EQ_NCP: return METRIC_SEQ_ACC;   /* eq_ncp: every prefix */
    default: return METRIC_TOKEN_ACC;
    }
}

int sweep_metric_applies(SweepMetric m, const Config *c) {
    if (m != METRIC_ANSWER_ACC) return 1;
    return c->task.type == TASK_ARITH || c->task.type == TASK_LIS || c->task.type == TASK_ED;
}

/* ---- cells ---------------------------------------------------------------------------- */

void sweep_point_values(const SweepSpec *s, long point, int *vi) {
    for (int a = s->n_axes - 1; a >= 0; a--) {
        vi[a] = (int)(point % s->axes[a].n);
        point /= s->axes[a].n;
    }
}

int sweep_cell_sets(const SweepSpec *s, long cell, char **sets) {
    int vi[SWEEP_MAX_AXES];
    sweep_point_values(s, cell / s->n_seeds, vi);
    for (int a = 0; a < s->n_axes; a++) {
        const SweepAxis *ax = &s->axes[a];
        size_t n = strlen(ax->key) + strlen(ax->json[vi[a]]) + 2;
        sets[a] = al_malloc(n);
        snprintf(sets[a], n, "%s=%s", ax->key, ax->json[vi[a]]);
    }
    sets[s->n_axes] = al_malloc(32);
    snprintf(sets[s->n_axes], 32, "seed=%llu", (unsigned long long)s->seeds[cell % s->n_seeds]);
    return s->n_axes + 1;
}

void sweep_free_sets(char **sets, int n) {
    for (int i = 0; i < n; i++) free(sets[i]);
}

/* Appends text, with characters unsafe in a file name (or our separators) as '_'. */
static void append_safe(char *out, size_t n, size_t *len, const char *text, int raw) {
    for (const char *p = text; *p && *len + 1 < n; p++) {
        char ch = *p;
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || strchr("._+-", ch);
        out[(*len)++] = ok || raw ? ch : '_';
    }
    out[*len] = 0;
}

const char *sweep_short_key(const char *key) {
    return strncmp(key, "model.", 6) ? key : key + 6;   /* the most common axes read shortest */
}

void sweep_values_name(const SweepSpec *s, const int *vi, unsigned axes_mask, char *out, size_t n) {
    size_t len = 0;
    out[0] = 0;
    for (int a = 0; a < s->n_axes; a++) {
        if (!((axes_mask >> a) & 1u)) continue;
        if (len) append_safe(out, n, &len, ",", 1);
        append_safe(out, n, &len, sweep_short_key(s->axes[a].key), 0);
        append_safe(out, n, &len, "=", 1);
        append_safe(out, n, &len, s->axes[a].label[vi[a]], 0);
    }
}

void sweep_cell_name(const SweepSpec *s, long cell, char *out, size_t n) {
    int vi[SWEEP_MAX_AXES];
    char seed[40];
    sweep_point_values(s, cell / s->n_seeds, vi);
    sweep_values_name(s, vi, ~0u, out, n);
    size_t len = strlen(out);
    snprintf(seed, sizeof seed, "%sseed=%llu", s->n_axes ? "," : "", (unsigned long long)s->seeds[cell % s->n_seeds]);
    append_safe(out, n, &len, seed, 1);
}

int sweep_cell_config(const SweepSpec *s, const Config *base, long cell, Config *out, AlError *err) {
    char *sets[SWEEP_MAX_AXES + 1];
    int n = sweep_cell_sets(s, cell, sets);
    *out = *base;
    int rc = cfg_set_all(out, (const char *const *)sets, n, "the sweep's base config", err);
    sweep_free_sets(sets, n);
    return rc;
}

/* The loader blames one override ("--set KEY=V: ..."): say which sweep entry it is. */
static int cell_error(const SweepSpec *s, long cell, char **sets, int n, const AlError *e, const char *src,
                      AlError *err) {
    char name[SWEEP_NAME_MAX], prefix[512];
    sweep_cell_name(s, cell, name, sizeof name);
    for (int i = 0; i < n; i++) {
        snprintf(prefix, sizeof prefix, "--set %s: ", sets[i]);
        if (strncmp(e->msg, prefix, strlen(prefix))) continue;
        const char *rest = e->msg + strlen(prefix);
        if (i == s->n_axes)
            return al_fail(err, 2, "%s: sweep.seeds: seed %s (cell %s): %s", src, strchr(sets[i], '=') + 1, name, rest);
        if (!strncmp(rest, "unknown key", 11)) return al_fail(err, 2, "%s: sweep.axes: %s", src, rest);
        return al_fail(err, 2, "%s: sweep.axes[\"%s\"] = %s (cell %s): %s", src, s->axes[i].key,
                       strchr(sets[i], '=') + 1, name, rest);
    }
    return al_fail(err, 2, "%s: sweep cell %s: %s", src, name, e->msg);
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every cell: a config ./train accepts — the loader's rules, the task generator's
 * own checks and the memory the run needs (each worker's own; file tasks are
 * checked by their runs, once the files are read) — the metric reported, a unique
 * folder name. */
static int check_cells(const SweepSpec *s, const Config *base, const char *src, AlError *err) {
    char **names = al_calloc((size_t)s->n_cells, sizeof *names);
    int rc = 0;
    for (long c = 0; c < s->n_cells && !rc; c++) {
        char *sets[SWEEP_MAX_AXES + 1], name[SWEEP_NAME_MAX + 2];
        int n = sweep_cell_sets(s, c, sets);
        Config cfg = *base;
        AlError e = {0};
        TaskSpec spec;
        sweep_cell_name(s, c, name, sizeof name);
        if (cfg_set_all(&cfg, (const char *const *)sets, n, src, &e)) rc = cell_error(s, c, sets, n, &e, src, err);
        else if (task_check(cfg_task_spec(&cfg, &spec), NULL, &e) ||
                 task_check_memory(&spec, &cfg.model, cfg.train.batch_size, NULL, NULL, &e))
            rc = al_fail(err, 2, "%s: sweep cell %s: %s", src, name, e.msg);
        else if (!sweep_metric_applies(s->metric, &cfg))
            rc = al_fail(err, 2, "%s: sweep.metric \"%s\" is only reported for chain-of-thought tasks (arith, lis, "
                         "ed); cell %s is not one: set sweep.metric to \"token_acc\" or \"seq_acc\"", src,
                         sweep_metric_names[s->metric], name);
        else if (strlen(name) >= SWEEP_NAME_MAX)
            rc = al_fail(err, 2, "%s: sweep: cell folder name '%.80s...' is longer than %d characters "
                         "(shorter axis values, or fewer axes)", src, name, SWEEP_NAME_MAX - 1);
        sweep_free_sets(sets, n);
        names[c] = strdup(name);
    }
    if (!rc) {
        qsort(names, (size_t)s->n_cells, sizeof *names, cmp_names);
        for (long c = 1; c < s->n_cells && !rc; c++)
            if (!strcmp(names[c - 1], names[c]))
                rc = al_fail(err, 2, "%s: sweep: two cells would share the folder '%s' (axis values that differ "
                             "only in characters unsafe in file names)", src, names[c]);
    }
    for (long c = 0; c < s->n_cells; c++) free(names[c]);
    free(names);
    return rc;
}

/* ---- the whole section ------------------------------------------------------------------ */

static int parse_members(SweepSpec *s, const cJSON *root, const Config *base, const char *src, AlError *err) {
    char got[96];
    const cJSON *rows = NULL, *cols = NULL, *axes = NULL;
    s->metric = default_metric(base);
    for (const cJSON *it = root->child; it; it = it->next) {
        int known = 0;
        for (int k = 0; SWEEP_KEYS[k]; k++) known |= !strcmp(it->string, SWEEP_KEYS[k]);
        if (!known)
            return al_fail(err, 2, "%s: sweep: unknown key '%s' (valid keys: axes, seeds, metric, rows, cols, "
                           "threshold)", src, it->string);
        for (const cJSON *p = root->child; p != it; p = p->next)
            if (!strcmp(p->string, it->string))
                return al_fail(err, 2, "%s: sweep: duplicate key '%s'", src, it->string);
        int rc = 0;
        if (!strcmp(it->string, "axes")) axes = it;
        else if (!strcmp(it->string, "seeds")) rc = parse_seeds(s, it, src, err);
        else if (!strcmp(it->string, "metric")) rc = parse_metric(s, it, src, err);
        else if (!strcmp(it->string, "rows")) rows = it;
        else if (!strcmp(it->string, "cols")) cols = it;
        else if (!cJSON_IsNumber(it) || !(it->valuedouble > 0 && it->valuedouble <= 1))
            rc = al_fail(err, 2, "%s: sweep.threshold: expected a number in (0, 1], got %s", src,
                         json_diag_as_written(it, got, sizeof got));
        else s->threshold = it->valuedouble;
        if (rc) return rc;
    }
    if (!axes) return al_fail(err, 2, "%s: sweep: missing 'axes' (e.g. \"axes\": {\"model.d_model\": [16, 32]})", src);
    if (parse_axes(s, axes, src, err)) return err->code;
    if (rows && parse_layout_axis(s, rows, "rows", &s->rows, src, err)) return err->code;
    if (cols && parse_layout_axis(s, cols, "cols", &s->cols, src, err)) return err->code;
    if (rows && cols && s->rows == s->cols)
        return al_fail(err, 2, "%s: sweep.rows and sweep.cols are the same axis ('%s')", src, s->axes[s->rows].key);
    default_layout(s, rows != NULL, cols != NULL);
    return 0;
}

int sweep_spec_parse(SweepSpec *s, const char *json, const Config *base, const char *src, AlError *err) {
    char got[96];
    memset(s, 0, sizeof *s);
    s->rows = s->cols = -1;
    s->threshold = 0.9;
    cJSON *root = cJSON_Parse(json);
    int rc = 0;
    if (!cJSON_IsObject(root))
        rc = al_fail(err, 2, "%s: sweep: expected an object {\"axes\": {...}, \"seeds\": [...]}, got %s", src,
                     root ? json_diag_as_written(root, got, sizeof got) : "invalid JSON");
    if (!rc) rc = parse_members(s, root, base, src, err);
    cJSON_Delete(root);
    if (rc) return rc;
    if (s->n_seeds == 0) s->seeds[s->n_seeds++] = base->seed;
    s->n_points = 1;
    for (int a = 0; a < s->n_axes; a++) {
        s->n_points *= s->axes[a].n;
        if (s->n_points * s->n_seeds > SWEEP_MAX_CELLS)
            return al_fail(err, 2, "%s: sweep: more than %d cells (axes x seeds); split the grid", src, SWEEP_MAX_CELLS);
    }
    s->n_cells = s->n_points * s->n_seeds;
    return check_cells(s, base, src, err);
}

void sweep_spec_free(SweepSpec *s) {
    for (int a = 0; a < s->n_axes; a++)
        for (int i = 0; i < s->axes[a].n; i++) {
            free(s->axes[a].json[i]);
            free(s->axes[a].label[i]);
        }
    memset(s, 0, sizeof *s);
}

char *sweep_spec_to_json(const SweepSpec *s) {
    cJSON *root = cJSON_CreateObject(), *axes = cJSON_AddObjectToObject(root, "axes");
    for (int a = 0; a < s->n_axes; a++) {
        cJSON *list = cJSON_AddArrayToObject(axes, s->axes[a].key);
        for (int i = 0; i < s->axes[a].n; i++) cJSON_AddItemToArray(list, cJSON_Parse(s->axes[a].json[i]));
    }
    cJSON *seeds = cJSON_AddArrayToObject(root, "seeds");
    for (int i = 0; i < s->n_seeds; i++) cJSON_AddItemToArray(seeds, cJSON_CreateNumber((double)s->seeds[i]));
    cJSON_AddStringToObject(root, "metric", sweep_metric_names[s->metric]);
    if (s->rows >= 0) cJSON_AddStringToObject(root, "rows", s->axes[s->rows].key);
    cJSON_AddStringToObject(root, "cols", s->axes[s->cols].key);
    cJSON_AddNumberToObject(root, "threshold", s->threshold);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    size_t n = strlen(text);
    text = al_realloc(text, n + 2);
    memcpy(text + n, "\n", 2);
    return text;
}
