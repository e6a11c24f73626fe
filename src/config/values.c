/* values.c — passes 1 and 2 of reading (schema.h): the walk over a JSON tree that
 * matches every member to a row of the table (unknown keys get the closest valid
 * key or the list of valid ones, duplicates and dotted keys are refused), and
 * the typed store of each matched value with its range check.  A config file and
 * a --set override go through the same two functions, so they give the same
 * messages. */
#include "schema.h"
#include "attnlab/io/json_diag.h"
#include "attnlab/util/strbuf.h"

#include <ctype.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------
 * Error messages about values
 * ---------------------------------------------------------------------------- */

static int cfg_fail_key(AlError *err, const char *src, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int cfg_fail_key(AlError *err, const char *src, const char *path, const char *fmt, ...) {
    char what[AL_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return al_fail(err, 2, "%s: %s: %s", src, path, what);
}

static const char *cfg_type_text(const CfgKey *k) {
    switch (k->type) {
    case CFG_OBJECT: return "an object";
    case CFG_INT:
    case CFG_U64:    return "an integer";
    case CFG_FLOAT:  return "a number";
    case CFG_BOOL:   return "true or false";
    case CFG_ENUM:   return "a string";
    case CFG_STRING: return "a string";
    }
    return "?";
}

static int cfg_type_error(const CfgKey *k, const cJSON *v, const char *src, AlError *err) {
    char got[96], names[256];
    if (k->names && !cJSON_IsString(v))
        return cfg_fail_key(err, src, k->path, "expected one of %s; got %s",
                            json_diag_choices(k->names, names, sizeof names),
                            json_diag_describe(v, JSON_TEXT_NO_CONTROL, NULL, got, sizeof got));
    return cfg_fail_key(err, src, k->path, "expected %s, got %s", cfg_type_text(k),
                        json_diag_describe(v, JSON_TEXT_NO_CONTROL, NULL, got, sizeof got));
}

static int cfg_range_error(const CfgKey *k, const char *range, double v, const char *src, AlError *err) {
    char num[32];
    return cfg_fail_key(err, src, k->path, "must be %s, got %s", range, al_fmt_double(v, num, sizeof num));
}

/* ------------------------------------------------------------------------------
 * Pass 2: type, range, store — one JSON value into one row
 * ---------------------------------------------------------------------------- */

static int cfg_in_range(const CfgKey *k, double v) {
    if (k->lo_open ? !(v > k->min) : !(v >= k->min)) return 0;
    if (k->hi_open ? !(v < k->max) : !(v <= k->max)) return 0;
    return 1;
}

/* Numbers: integral for integer keys, within the storage type, within the row. */
static int cfg_apply_number(Config *c, const CfgKey *k, const cJSON *v, const char *src, AlError *err) {
    char range[64], got[32];
    double x = v->valuedouble;
    if (!cJSON_IsNumber(v) || !isfinite(x)) return cfg_type_error(k, v, src, err);
    if (k->type != CFG_FLOAT && x != floor(x)) return cfg_type_error(k, v, src, err);
    if (k->type == CFG_FLOAT && fabs(x) > FLT_MAX)
        return cfg_fail_key(err, src, k->path, "must be within the float range (|x| <= %g), got %s",
                            (double)FLT_MAX, al_fmt_double(x, got, sizeof got));
    /* Check what will be stored: 1e-50 becomes a float 0, which "> 0" must reject. */
    double stored = k->type == CFG_FLOAT ? (double)(float)x : x;
    if (!cfg_in_range(k, stored)) return cfg_range_error(k, cfg_range_text(k, range, sizeof range), x, src, err);
    if (k->type == CFG_INT && (x < INT_MIN || x > INT_MAX))
        return cfg_fail_key(err, src, k->path, "must be <= %d (the int range), got %s", INT_MAX,
                            al_fmt_double(x, got, sizeof got));
    if (k->type == CFG_INT) *(int *)cfg_slot(c, k) = (int)x;
    else if (k->type == CFG_U64) *(uint64_t *)cfg_slot(c, k) = (uint64_t)x;
    else *(float *)cfg_slot(c, k) = (float)x;
    return 0;
}

/* Names safe in a file name: no spaces, slashes or leading dot. */
static int cfg_ident_ok(const char *s) {
    if (!*s || *s == '.') return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("._-+", *s)) return 0;
    return 1;
}

static int cfg_apply_string(Config *c, const CfgKey *k, const cJSON *v, const char *src, AlError *err) {
    char names[256], got[96];
    if (!cJSON_IsString(v)) return cfg_type_error(k, v, src, err);
    const char *s = v->valuestring;
    int idx = k->names ? json_diag_name_index(k->names, s) : 0;
    if (idx < 0) {
        const char *near = json_diag_closest(k->names, s);
        char hint[96] = "";
        if (near) snprintf(hint, sizeof hint, " (did you mean \"%s\"?)", near);
        return cfg_fail_key(err, src, k->path, "expected one of %s; got \"%.40s\"%s",
                            json_diag_choices(k->names, names, sizeof names), s, hint);
    }
    if (k->type == CFG_ENUM) {
        *(int *)cfg_slot(c, k) = idx;
        return 0;
    }
    if (!k->ident && strlen(s) >= k->size)
        return cfg_fail_key(err, src, k->path, "too long (%zu > %zu characters)", strlen(s), k->size - 1);
    if (k->ident && (strlen(s) >= k->size || !cfg_ident_ok(s)))
        return cfg_fail_key(err, src, k->path,
                            "must be 1-%zu characters of A-Z a-z 0-9 . _ - + (not starting with '.'), got %s",
                            k->size - 1, json_diag_describe(v, JSON_TEXT_NO_CONTROL, NULL, got, sizeof got));
    /* An empty path would only fail later as "cannot open ''", far from the key
     * (the distill lists say "empty list" themselves). */
    if (!*s && strstr(k->path, "_path"))
        return cfg_fail_key(err, src, k->path, "must not be empty (the path of a JSONL file)");
    memset(cfg_slot(c, k), 0, k->size);
    memcpy(cfg_slot(c, k), s, strlen(s));
    return 0;
}

/* `task.foo: not valid for task.type "match2" (only for "copy")` */
static int cfg_not_applicable(const Config *c, const CfgKey *k, const char *src, AlError *err) {
    const CfgKey *d = &cfg_keys[cfg_find(k->when)];
    char only[256];
    size_t len = 0;
    only[0] = 0;
    for (int i = 0; d->names[i] && len < sizeof only; i++)
        if ((k->when_mask >> i) & 1u)
            len += (size_t)snprintf(only + len, sizeof only - len, "%s\"%s\"", len ? ", " : "", d->names[i]);
    return cfg_fail_key(err, src, k->path, "not valid for %s \"%s\" (only for %s)", d->path,
                        d->names[*(const int *)cfg_cslot(c, d)], only);
}

static int cfg_apply(Config *c, const CfgKey *k, const cJSON *v, const char *src, AlError *err) {
    /* An empty section sets nothing, so it is harmless for any type (earlier builds
     * wrote "retnet": {} into every config, and their checkpoints must resume). */
    if (!cfg_applies(c, k) && k->type == CFG_OBJECT && cJSON_IsObject(v) && !v->child) return 0;
    if (!cfg_applies(c, k)) return cfg_not_applicable(c, k, src, err);
    switch (k->type) {
    case CFG_OBJECT:
        return 0;                       /* its members are rows of their own */
    case CFG_INT:
    case CFG_U64:
    case CFG_FLOAT:
        return cfg_apply_number(c, k, v, src, err);
    case CFG_BOOL:
        if (!cJSON_IsBool(v)) return cfg_type_error(k, v, src, err);
        *(int *)cfg_slot(c, k) = cJSON_IsTrue(v);
        return 0;
    case CFG_ENUM:
    case CFG_STRING:
        return cfg_apply_string(c, k, v, src, err);
    }
    return 0;
}

/* Discriminators come first in the table, so they are applied first. */
int cfg_apply_seen(Config *c, const cJSON *const *seen, const char *src, AlError *err) {
    for (int i = 0; i < cfg_nkeys; i++)
        if (seen[i] && cfg_apply(c, &cfg_keys[i], seen[i], src, err)) return err->code;
    return 0;
}

/* ------------------------------------------------------------------------------
 * Pass 1: walk the JSON tree — unknown keys, duplicates, objects
 * ---------------------------------------------------------------------------- */

/* "(valid keys under 'model': d_model, n_layers, ...)" */
static void cfg_list_children(const char *parent, char *buf, size_t n) {
    size_t len = (size_t)snprintf(buf, n, *parent ? "valid keys under '%s': " : "valid top-level keys: %s",
                                  parent);
    int first = 1;
    for (int i = 0; i < cfg_nkeys && len < n; i++) {
        if (!cfg_is_child(cfg_keys[i].path, parent)) continue;
        len += (size_t)snprintf(buf + len, n - len, "%s%s", first ? "" : ", ", cfg_leaf(cfg_keys[i].path));
        first = 0;
    }
}

static int key_depth(const char *path) {
    int n = 0;
    for (; *path; path++) n += *path == '.';
    return n;
}

/* The best suggestion for an unknown component `comp` under `parent`, followed by
 * `rest` (the components after it, for --set paths): a sibling first, else the
 * same name anywhere in the schema. */
static int cfg_suggest(const char *parent, const char *comp, const char *rest, char *out, size_t n) {
    int best = -1, best_d = INT_MAX;
    for (int i = 0; i < cfg_nkeys; i++) {
        if (!cfg_is_child(cfg_keys[i].path, parent)) continue;
        int d = json_diag_closeness(comp, cfg_leaf(cfg_keys[i].path));
        if (d >= 0 && d < best_d) best_d = d, best = i;
    }
    if (best >= 0) {
        snprintf(out, n, "%s%s", cfg_keys[best].path, rest);
        if (*rest && cfg_find(out) < 0) snprintf(out, n, "%s", cfg_keys[best].path);
        return 1;
    }
    if (*rest) return 0;
    /* Anywhere: the closest leaf, and of equally close ones the shallowest key
     * ("lr" -> "train.lr", not "model.dss.lr"). */
    for (int i = 0; i < cfg_nkeys; i++) {
        int d = json_diag_closeness(comp, cfg_leaf(cfg_keys[i].path));
        if (d < 0 || d >= 100) continue;
        if (d < best_d || (d == best_d && key_depth(cfg_keys[i].path) < key_depth(cfg_keys[best].path)))
            best_d = d, best = i;
    }
    if (best < 0) return 0;
    snprintf(out, n, "%s", cfg_keys[best].path);
    return 1;
}

int cfg_unknown(const char *path, const char *src, AlError *err) {
    char parent[CFG_KEY_MAX] = "", comp[CFG_KEY_MAX], sugg[CFG_KEY_MAX], list[512];
    const char *p = path;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        snprintf(comp, sizeof comp, "%.*s", (int)n, p);
        char probe[CFG_KEY_MAX];
        /* A probe longer than any key is no key (never a cut-short match). */
        int len = snprintf(probe, sizeof probe, "%s%s%s", parent, *parent ? "." : "", comp);
        int i = len < (int)sizeof probe ? cfg_find(probe) : -1;
        if (i >= 0 && dot && cfg_keys[i].type != CFG_OBJECT)
            return al_fail(err, 2, "%s: unknown key '%s' ('%s' has no sub-keys)", src, path, probe);
        if (i < 0 || !dot) break;
        snprintf(parent, sizeof parent, "%s", probe);
        p = dot + 1;
    }
    const char *rest = p + strlen(comp);
    if (cfg_suggest(parent, comp, rest, sugg, sizeof sugg))
        return al_fail(err, 2, "%s: unknown key '%s' (did you mean '%s'?)", src, path, sugg);
    cfg_list_children(parent, list, sizeof list);
    return al_fail(err, 2, "%s: unknown key '%s' (%s)", src, path, list);
}

int cfg_visit(int i, const cJSON *v, const cJSON **seen, const char *src, AlError *err) {
    const CfgKey *k = &cfg_keys[i];
    if (seen[i])
        return al_fail(err, 2, "%s: duplicate key '%s' (a JSON object must not repeat a key)", src, k->path);
    seen[i] = v;
    if (k->type != CFG_OBJECT) return 0;
    if (!cJSON_IsObject(v)) return cfg_type_error(k, v, src, err);
    return cfg_walk(v, k->path, seen, src, err);
}

/* `{"model": {"d_model": ...}}` */
static void cfg_nested_form(const char *path, char *buf, size_t n) {
    size_t len = 0, depth = 0;
    for (const char *p = path; len < n;) {
        const char *dot = strchr(p, '.');
        size_t m = dot ? (size_t)(dot - p) : strlen(p);
        len += (size_t)snprintf(buf + len, n - len, "{\"%.*s\": ", (int)m, p);
        depth++;
        if (!dot) break;
        p = dot + 1;
    }
    if (len < n) len += (size_t)snprintf(buf + len, n - len, "...");
    while (depth-- && len < n) len += (size_t)snprintf(buf + len, n - len, "}");
}

int cfg_walk(const cJSON *obj, const char *prefix, const cJSON **seen, const char *src, AlError *err) {
    for (const cJSON *it = obj->child; it; it = it->next) {
        char path[CFG_KEY_MAX], nested[CFG_KEY_MAX + 64];
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", it->string);
        int i = cfg_find(path);
        if (i < 0 && !strcmp(path, CFG_SWEEP_SECTION))   /* not cut out by cfg_load_sweep */
            return al_fail(err, 2, "%s: the '%s' section describes a grid of runs: run it with "
                           "./train sweep %s (a single run takes the config without it)", src, path, src);
        if (i < 0 && !strcmp(path, CFG_PROVENANCE)) {
            if (!cJSON_IsObject(it))
                return al_fail(err, 2, "%s: '%s' is written by attnlab (the version and commit of the build "
                               "that wrote the file) and must be an object", src, path);
            if (cJSON_GetObjectItemCaseSensitive(obj, CFG_PROVENANCE) != it)
                return al_fail(err, 2, "%s: duplicate key '%s' (a JSON object must not repeat a key)", src, path);
            continue;
        }
        if (i >= 0 && strchr(it->string, '.')) {
            /* Dotted keys are for --set; in a file the key must be nested. */
            cfg_nested_form(path, nested, sizeof nested);
            return al_fail(err, 2, "%s: key '%s' must be nested in a file: %s", src, path, nested);
        }
        if (i < 0) return cfg_unknown(path, src, err);
        if (cfg_visit(i, it, seen, src, err)) return err->code;
    }
    return 0;
}
