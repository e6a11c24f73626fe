/* p002_config.c — see p002_config.h.
 *
 * Why not src/config: its schema table is private to the run config (a Config
 * struct with offsets into it), and this file has a dozen keys.  The messages
 * follow the same form, "SOURCE: KEY.PATH: what", with the shared pieces of
 * io/json_diag.h. */
#include "attnlab/exp/p002_config.h"
#include "attnlab/io/json_diag.h"
#include "attnlab/util/fsutil.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MC_FILE_MAX (1 << 20)

const char *const mc_param_names[MCP_COUNT + 1] = {
    [MCP_N] = "n", [MCP_D] = "d", [MCP_M] = "m", [MCP_DELTA] = "delta", [MCP_A0] = "a0", [MCP_A1] = "a1",
    [MCP_B] = "b", [MCP_C] = "c", [MCP_TAU] = "tau", [MCP_COUNT] = NULL };

static const char *const TOP_KEYS[] = { "setting", "title", "defaults", "sweep", "repetitions", "seed", "out", NULL };
static const char *const SWEEP_KEYS[] = { "param", "values", NULL };

static int is_int_param(McParam q) { return q == MCP_N || q == MCP_D || q == MCP_M; }

/* Which parameters a setting uses (bit = McParam). */
static unsigned used_params(McSetting s) {
    unsigned all = (1u << MCP_COUNT) - 1;
    switch (s) {
    case MC_TOY: return 1u << MCP_N | 1u << MCP_M | 1u << MCP_DELTA | 1u << MCP_TAU;
    case MC_CROSS: return all & ~(1u << MCP_B | 1u << MCP_C);
    default: return all;
    }
}

/* Numbers in full (17 digits), as this reader has always shown them. */
static const char *number_17g(double v, char *buf, size_t n) {
    snprintf(buf, n, "%.17g", v);
    return buf;
}

/* What the user wrote, for "got ...": strings cut at 40 bytes as they are. */
static const char *describe(const cJSON *v, char *buf, size_t n) {
    return json_diag_describe(v, JSON_TEXT_RAW, number_17g, buf, n);
}

static int fail_type(AlError *err, const char *src, const char *key, const char *want, const cJSON *v) {
    char got[96];
    return al_fail(err, 2, "%s: %s: expected %s, got %s", src, key, want, describe(v, got, sizeof got));
}

/* Unknown or repeated members of an object. */
static int check_members(const cJSON *obj, const char *const *keys, const char *prefix, const char *src,
                         AlError *err) {
    for (const cJSON *it = obj->child; it; it = it->next) {
        char list[256];
        if (json_diag_name_index(keys, it->string) < 0)
            return al_fail(err, 2, "%s: unknown key '%s%s' (valid keys%s%s: %s)", src, prefix, it->string,
                           *prefix ? " under " : "", *prefix ? prefix : "", json_diag_choices(keys, list, sizeof list));
        for (const cJSON *o = obj->child; o != it; o = o->next)
            if (!strcmp(o->string, it->string))
                return al_fail(err, 2, "%s: duplicate key '%s%s' (a JSON object must not repeat a key)", src,
                               prefix, it->string);
    }
    return 0;
}

/* A number within [lo, hi]; integral when `integer`. */
static int read_number(const cJSON *v, const char *src, const char *key, int integer, double lo, double hi,
                       double *out, AlError *err) {
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || (integer && v->valuedouble != floor(v->valuedouble)))
        return fail_type(err, src, key, integer ? "an integer" : "a number", v);
    if (v->valuedouble < lo || v->valuedouble > hi)
        return al_fail(err, 2, "%s: %s: must be in [%.17g, %.17g], got %.17g", src, key, lo, hi, v->valuedouble);
    *out = v->valuedouble;
    return 0;
}

static int read_string(const cJSON *v, const char *src, const char *key, char *out, size_t n, AlError *err) {
    if (!cJSON_IsString(v)) return fail_type(err, src, key, "a string", v);
    if (strlen(v->valuestring) >= n || !v->valuestring[0])
        return al_fail(err, 2, "%s: %s: must be 1-%zu characters, got %zu", src, key, n - 1,
                       strlen(v->valuestring));
    snprintf(out, n, "%s", v->valuestring);
    return 0;
}

/* The paper's defaults of one setting (paper 002). */
static void set_defaults(McConfig *c, McSetting s) {
    McParams *p = &c->base;
    *p = (McParams){ .setting = s, .n = 200, .d = 22, .a0 = 0.01, .a1 = 1.2, .b = 0.2, .c = 0.8 };
    if (s == MC_TOY) p->n = 1000;
    if (s == MC_CROSS) p->d = 11, p->a1 = 3.0;
    c->delta = 0.01;
    c->m_auto = c->tau_auto = 1;
    c->reps = 100;
    c->seed = 1;
}

static void store(McConfig *c, McParam q, double v) {
    McParams *p = &c->base;
    switch (q) {
    case MCP_N: p->n = (int)v; break;
    case MCP_D: p->d = (int)v; break;
    case MCP_M: p->m = (int)v; c->m_auto = 0; break;
    case MCP_DELTA: c->delta = v; break;
    case MCP_A0: p->a0 = v; break;
    case MCP_A1: p->a1 = v; break;
    case MCP_B: p->b = v; break;
    case MCP_C: p->c = v; break;
    case MCP_TAU: p->tau = v; c->tau_auto = 0; break;
    case MCP_COUNT: break;
    }
}

/* Only the storage types are checked here: the ranges that depend on the setting
 * are mc_check's, run on every point.  delta must be in (0, 1) for ln(n/δ). */
static int read_param(McConfig *c, McParam q, const cJSON *v, const char *src, const char *key, AlError *err) {
    double x = 0;
    if ((q == MCP_M || q == MCP_TAU) && cJSON_IsString(v)) {
        if (strcmp(v->valuestring, "auto"))
            return al_fail(err, 2, "%s: %s: expected %s or \"auto\", got \"%.40s\"", src, key,
                           q == MCP_M ? "an integer" : "a number", v->valuestring);
        if (q == MCP_M) c->m_auto = 1; else c->tau_auto = 1;
        return 0;
    }
    if (q == MCP_DELTA) {
        if (read_number(v, src, key, 0, -INFINITY, INFINITY, &x, err)) return err->code;
        if (!(x > 0 && x < 1)) return al_fail(err, 2, "%s: %s: must be in (0, 1), got %.17g", src, key, x);
    } else if (read_number(v, src, key, is_int_param(q), is_int_param(q) ? -2147483648.0 : -INFINITY,
                           is_int_param(q) ? 2147483647.0 : INFINITY, &x, err)) {
        return err->code;
    }
    store(c, q, x);
    return 0;
}

static int not_used(McSetting s, const char *src, const char *key, AlError *err) {
    char only[128] = "";
    size_t len = 0;
    for (int q = 0; q < MCP_COUNT; q++)
        if (used_params(s) >> q & 1u)
            len += (size_t)snprintf(only + len, sizeof only - len, "%s%s", len ? ", " : "", mc_param_names[q]);
    return al_fail(err, 2, "%s: %s: not used by setting \"%s\" (it uses %s)", src, key, mc_setting_names[s], only);
}

static int read_defaults(McConfig *c, const cJSON *obj, const char *src, AlError *err) {
    if (!cJSON_IsObject(obj)) return fail_type(err, src, "defaults", "an object", obj);
    if (check_members(obj, mc_param_names, "defaults.", src, err)) return err->code;
    for (const cJSON *it = obj->child; it; it = it->next) {
        char key[64];
        snprintf(key, sizeof key, "defaults.%s", it->string);
        McParam q = (McParam)json_diag_name_index(mc_param_names, it->string);
        if (!(used_params(c->base.setting) >> q & 1u)) return not_used(c->base.setting, src, key, err);
        if (read_param(c, q, it, src, key, err)) return err->code;
    }
    return 0;
}

static int read_sweep(McConfig *c, const cJSON *obj, const char *src, AlError *err) {
    char list[128];
    if (!obj) return al_fail(err, 2, "%s: sweep: missing (an object {\"param\": ..., \"values\": [...]})", src);
    if (!cJSON_IsObject(obj)) return fail_type(err, src, "sweep", "an object", obj);
    if (check_members(obj, SWEEP_KEYS, "sweep.", src, err)) return err->code;
    const cJSON *param = cJSON_GetObjectItemCaseSensitive(obj, "param");
    const cJSON *values = cJSON_GetObjectItemCaseSensitive(obj, "values");
    if (!param) return al_fail(err, 2, "%s: sweep.param: missing (one of %s)", src,
                               json_diag_choices(mc_param_names, list, sizeof list));
    if (!cJSON_IsString(param) || json_diag_name_index(mc_param_names, param->valuestring) < 0) {
        char got[96];
        return al_fail(err, 2, "%s: sweep.param: expected one of %s; got %s", src,
                       json_diag_choices(mc_param_names, list, sizeof list), describe(param, got, sizeof got));
    }
    c->param = (McParam)json_diag_name_index(mc_param_names, param->valuestring);
    if (!(used_params(c->base.setting) >> c->param & 1u)) return not_used(c->base.setting, src, "sweep.param", err);
    if (!values) return al_fail(err, 2, "%s: sweep.values: missing (a list of numbers)", src);
    if (!cJSON_IsArray(values)) return fail_type(err, src, "sweep.values", "an array of numbers", values);
    int n = cJSON_GetArraySize(values);
    if (n < 1 || n > MC_MAX_VALUES)
        return al_fail(err, 2, "%s: sweep.values: must hold 1-%d values, got %d", src, MC_MAX_VALUES, n);
    c->n_values = 0;
    McConfig probe = *c;   /* read_param stores into a config: use a scratch copy */
    for (const cJSON *it = values->child; it; it = it->next) {
        char key[64];
        snprintf(key, sizeof key, "sweep.values[%d]", c->n_values);
        if (cJSON_IsString(it)) return fail_type(err, src, key, is_int_param(c->param) ? "an integer" : "a number", it);
        if (read_param(&probe, c->param, it, src, key, err)) return err->code;
        c->values[c->n_values++] = it->valuedouble;
    }
    return 0;
}

void mc_config_point(const McConfig *c, int i, McParams *p) {
    AL_ASSERT(i >= 0 && i < c->n_values);
    McConfig tmp = *c;
    store(&tmp, c->param, c->values[i]);
    *p = tmp.base;
    if (tmp.m_auto) p->m = mc_auto_m(p->setting, p->n, tmp.delta);
    if (tmp.tau_auto) p->tau = mc_auto_tau(p->setting, p->n, p->c);
}

/* mc_check of every point.  Its message starts with the parameter ("d: must be
 * ..."); the user needs the key that set it: sweep.values[i] or defaults.KEY. */
static int check_points(const McConfig *c, const char *src, AlError *err) {
    for (int i = 0; i < c->n_values; i++) {
        McParams p;
        mc_config_point(c, i, &p);
        if (!mc_check(&p, err)) continue;
        char name[AL_ERR_MAX], *sep = strstr(err->msg, ": ");
        AL_ASSERT(sep);
        *sep = 0;
        snprintf(name, sizeof name, "%s", err->msg);
        memmove(err->msg, sep + 2, strlen(sep + 2) + 1);
        if (!strcmp(name, mc_param_names[c->param])) al_error_prefix(err, "%s: sweep.values[%d]", src, i);
        else al_error_prefix(err, "%s: defaults.%s", src, name);
        return err->code;
    }
    return 0;
}

/* "SRC:LINE:COL: invalid JSON" for what cJSON refuses. */
static int syntax_error(const char *json, const char *at, const char *src, AlError *err) {
    int line = 1, col = 1;
    for (const char *p = json; at && p < at && *p; p++) {
        if (*p == '\n') line++, col = 1;
        else if (((unsigned char)*p & 0xC0) != 0x80) col++;
    }
    return al_fail(err, 2, "%s:%d:%d: invalid JSON (a missing comma or quote, a trailing comma, or a comment?)",
                   src, line, col);
}

/* Everything below the top-level object, in a fixed order (setting first: the
 * other keys depend on it). */
static int read_config(McConfig *c, const cJSON *root, const char *src, AlError *err) {
    char names[128], got[96];
    double x;
    const cJSON *v;
    if (!cJSON_IsObject(root)) return al_fail(err, 2, "%s: the top level must be a JSON object {...}", src);
    if (check_members(root, TOP_KEYS, "", src, err)) return err->code;
    const cJSON *setting = cJSON_GetObjectItemCaseSensitive(root, "setting");
    if (!setting)
        return al_fail(err, 2, "%s: setting: missing (one of %s)", src,
                       json_diag_choices(mc_setting_names, names, sizeof names));
    if (!cJSON_IsString(setting) || json_diag_name_index(mc_setting_names, setting->valuestring) < 0)
        return al_fail(err, 2, "%s: setting: expected one of %s; got %s", src,
                       json_diag_choices(mc_setting_names, names, sizeof names), describe(setting, got, sizeof got));
    set_defaults(c, (McSetting)json_diag_name_index(mc_setting_names, setting->valuestring));
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "defaults")) && read_defaults(c, v, src, err)) return 2;
    if (read_sweep(c, cJSON_GetObjectItemCaseSensitive(root, "sweep"), src, err)) return 2;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "repetitions"))) {
        if (read_number(v, src, "repetitions", 1, 1, MC_MAX_REPS, &x, err)) return 2;
        c->reps = (int)x;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "seed"))) {
        if (read_number(v, src, "seed", 1, 0, 9007199254740992.0, &x, err)) return 2;
        c->seed = (uint64_t)x;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "title")) && read_string(v, src, "title", c->title, sizeof c->title, err))
        return 2;
    if (!(v = cJSON_GetObjectItemCaseSensitive(root, "out")))
        return al_fail(err, 2, "%s: out: missing (the output folder, e.g. \"results/paper002/x\")", src);
    if (read_string(v, src, "out", c->out, sizeof c->out, err)) return 2;
    return check_points(c, src, err);
}

int mc_config_parse(McConfig *c, const char *json, const char *source, AlError *err) {
    const char *end = NULL;
    memset(c, 0, sizeof *c);
    cJSON *root = cJSON_ParseWithOpts(json, &end, 1);
    if (!root) return syntax_error(json, end ? end : cJSON_GetErrorPtr(), source, err);
    int rc = read_config(c, root, source, err);
    cJSON_Delete(root);
    return rc;
}

int mc_config_load(McConfig *c, const char *path, AlError *err) {
    FILE *f = al_open_regular(path, 1, err);   /* a FIFO would block the read forever */
    if (!f) return err->code;
    char *text = al_malloc(MC_FILE_MAX + 1);
    size_t n = fread(text, 1, MC_FILE_MAX + 1, f);
    int bad_read = ferror(f);
    fclose(f);
    int rc;
    if (bad_read) rc = al_fail(err, 1, "cannot read '%s': %s", path, strerror(errno ? errno : EIO));
    else if (n > MC_FILE_MAX) rc = al_fail(err, 2, "%s: larger than 1 MiB; this is not an mc config", path);
    else if (memchr(text, 0, n)) rc = al_fail(err, 2, "%s: contains a NUL byte (is this a text file?)", path);
    else {
        text[n] = 0;
        rc = mc_config_parse(c, text, path, err);
    }
    free(text);
    return rc;
}
