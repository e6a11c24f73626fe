/* load.c — reading a config document: the file (size-limited, regular files
 * only), its JSON (syntax errors with line, column and a caret, io/json_diag.h),
 * passes 1 and 2 over the tree (values.c), then the file's --set overrides and the
 * cross-key rules (override.c, rules.c).  cfg_load_sweep cuts out the "sweep"
 * section first and hands it back as text for src/sweep. */
#include "schema.h"
#include "attnlab/io/json_diag.h"
#include "attnlab/util/fsutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------
 * Reading a document
 * ---------------------------------------------------------------------------- */

/* Parses `text` (len bytes, NUL-terminated) and applies it over *c, without the
 * cross-key rules (the caller runs them after any overrides).  With sweep_json, a
 * top-level "sweep" member is cut out first and returned as JSON text (malloc'ed;
 * NULL when there is none). */
static int cfg_read_text(Config *c, const char *text, size_t len, const char *src, char **sweep_json,
                         AlError *err) {
    const char *end = text + len, *nul = memchr(text, 0, len);
    if (nul) return json_diag_fail_at(err, src, text, end, nul, "contains a NUL byte (is this a text file?)");
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) text += 3;   /* UTF-8 byte-order mark */
    if (json_diag_skip_ws(text, end) == end)
        return al_fail(err, 2, "%s: file is empty (write {} to use every default)", src);

    const char *parse_end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &parse_end, 0);
    if (!root) return json_diag_syntax_error(text, end, parse_end, src, err);
    int rc = 0;
    const char *extra = parse_end ? json_diag_skip_ws(parse_end, end) : end;
    if (extra < end) {
        char what[128], found[64];
        snprintf(what, sizeof what, "unexpected %s after the end of the top-level %s%s",
                 json_diag_found(extra, end, found, sizeof found), cJSON_IsObject(root) ? "object" : "value",
                 (*extra == '}' || *extra == ']') ? " (one too many?)" : "");
        rc = json_diag_fail_at(err, src, text, end, extra, what);
    } else if (!cJSON_IsObject(root)) {
        char got[96];
        rc = al_fail(err, 2, "%s: the top level must be a JSON object {...}, got %s", src,
                     json_diag_describe(root, JSON_TEXT_NO_CONTROL, NULL, got, sizeof got));
    } else {
        const cJSON *seen[CFG_KEYS_MAX] = { 0 };
        cJSON *sweep = sweep_json ? cJSON_DetachItemFromObjectCaseSensitive(root, CFG_SWEEP_SECTION) : NULL;
        if (sweep && cJSON_GetObjectItemCaseSensitive(root, CFG_SWEEP_SECTION))
            rc = al_fail(err, 2, "%s: duplicate key '%s' (a JSON object must not repeat a key)", src, CFG_SWEEP_SECTION);
        if (sweep && !rc) *sweep_json = cJSON_PrintUnformatted(sweep);
        cJSON_Delete(sweep);
        if (!rc) rc = cfg_walk(root, "", seen, src, err);
        if (!rc) rc = cfg_apply_seen(c, seen, src, err);
    }
    cJSON_Delete(root);
    return rc;
}

static char *cfg_slurp(const char *path, size_t *len, AlError *err) {
    enum { LIMIT = 16 << 20 };
    FILE *f = al_open_regular(path, 2, err);   /* a FIFO or device is refused unread */
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = al_malloc(cap);
    for (;;) {
        if (n + 1 >= cap) buf = al_realloc(buf, cap *= 2);
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0 || n > LIMIT) break;
    }
    int failed = ferror(f), saved = errno;
    fclose(f);
    if (failed || n > LIMIT) {
        if (failed) al_fail(err, 2, "cannot read '%s': %s", path, strerror(saved));
        else al_fail(err, 2, "%s: larger than %d MiB; this is not a config file", path, LIMIT >> 20);
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* ------------------------------------------------------------------------------
 * Public entry points
 * ---------------------------------------------------------------------------- */

static int cfg_load_file(Config *c, const char *path, const char *const *overrides, int n_overrides,
                         char **sweep_json, AlError *err) {
    size_t len = 0;
    char *text = cfg_slurp(path, &len, err);
    if (!text) return err->code;
    Config tmp;
    cfg_defaults(&tmp);
    int rc = cfg_read_text(&tmp, text, len, path, sweep_json, err);
    free(text);
    if (!rc) rc = cfg_set_all(&tmp, overrides, n_overrides, path, err);
    if (!rc) *c = tmp;
    return rc;
}

int cfg_load(Config *c, const char *path, const char *const *overrides, int n_overrides, AlError *err) {
    return cfg_load_file(c, path, overrides, n_overrides, NULL, err);
}

int cfg_load_sweep(Config *c, const char *path, const char *const *overrides, int n_overrides,
                   char **sweep_json, AlError *err) {
    *sweep_json = NULL;
    int rc = cfg_load_file(c, path, overrides, n_overrides, sweep_json, err);
    if (rc) {
        free(*sweep_json);
        *sweep_json = NULL;
    }
    return rc;
}

int cfg_parse(Config *c, const char *json, const char *source, AlError *err) {
    Config tmp;
    cfg_defaults(&tmp);
    if (cfg_read_text(&tmp, json, strlen(json), source, NULL, err)) return err->code;
    CfgProblem p;
    if (cfg_consistency(&tmp, &p)) return al_fail(err, 2, "%s: %s", source, p.msg);
    *c = tmp;
    return 0;
}
