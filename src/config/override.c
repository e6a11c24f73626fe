/* override.c — `--set key.path=value`: one assignment is parsed as JSON when it
 * is JSON (else taken as a bare string), matched and stored by the same passes as
 * a file's values (values.c), and the cross-key rules (rules.c) run once after all
 * of them, so together they may pass through states one alone would not.  A
 * broken rule is blamed on the last override that set a key it involves. */
#include "schema.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------
 * --set key.path=value
 * ---------------------------------------------------------------------------- */

static void cfg_trim(const char *s, size_t n, char *out, size_t cap) {
    while (n && isspace((unsigned char)*s)) s++, n--;
    while (n && isspace((unsigned char)s[n - 1])) n--;
    snprintf(out, cap, "%.*s", (int)n, s);
}

/* Applies one override without the cross-key rules.  On success *key_out holds the
 * key path it set (for blaming it in a later consistency error). */
static int cfg_assign(Config *c, const char *assignment, char *key, size_t key_cap, AlError *err) {
    char src[CFG_SRC_MAX];
    snprintf(src, sizeof src, "--set %s", assignment);
    const char *eq = strchr(assignment, '=');
    if (!eq)
        return al_fail(err, 2, "%s: missing '=' (write --set key.path=value, e.g. --set train.lr=0.001)", src);
    cfg_trim(assignment, (size_t)(eq - assignment), key, key_cap);
    if (!*key) return al_fail(err, 2, "%s: missing the key path before '='", src);
    int i = cfg_find(key);
    if (i < 0) return cfg_unknown(key, src, err);

    /* The value is JSON when it parses as JSON (8, 1e-3, true, "text", {...}),
     * else a bare string (gelu_erf).  String keys always take the text as written,
     * so --set name=2024 names the run "2024". */
    size_t vlen = strlen(eq + 1);
    char *text = al_malloc(vlen + 1);
    cfg_trim(eq + 1, vlen, text, vlen + 1);
    cJSON *v = cJSON_ParseWithOpts(text, NULL, 1);
    if (!v || (cfg_keys[i].type == CFG_STRING && !cJSON_IsString(v))) {
        cJSON_Delete(v);
        v = cJSON_CreateString(text);
    }
    free(text);
    const cJSON *seen[CFG_KEYS_MAX] = { 0 };
    int rc = cfg_visit(i, v, seen, src, err);
    if (!rc) rc = cfg_apply_seen(c, seen, src, err);
    cJSON_Delete(v);
    return rc;
}

/* Does override key path `set` cover key `key` (equal, or an enclosing object)? */
static int cfg_covers(const char *set, const char *key) {
    size_t n = strlen(set);
    return !strncmp(set, key, n) && (key[n] == 0 || key[n] == '.');
}

int cfg_set_all(Config *c, const char *const *assignments, int n, const char *source, AlError *err) {
    Config tmp = *c;
    int rc = 0;
    char (*keys)[CFG_KEY_MAX] = al_calloc(n > 0 ? (size_t)n : 1, CFG_KEY_MAX);
    for (int i = 0; i < n && !rc; i++)
        rc = cfg_assign(&tmp, assignments[i], keys[i], CFG_KEY_MAX, err);
    CfgProblem p;
    if (!rc && cfg_consistency(&tmp, &p)) {
        /* Blame the last override that set one of the keys involved, else the source. */
        int blame = -1;
        for (int i = n - 1; i >= 0 && blame < 0; i--)
            for (int j = 0; p.keys[j]; j++)
                if (cfg_covers(keys[i], p.keys[j])) { blame = i; break; }
        if (blame >= 0) rc = al_fail(err, 2, "--set %.200s: %s", assignments[blame], p.msg);
        else rc = al_fail(err, 2, "%s: %s", source, p.msg);
    }
    free(keys);
    if (!rc) *c = tmp;
    return rc;
}

int cfg_set(Config *c, const char *assignment, AlError *err) {
    Config tmp = *c;
    char key[CFG_KEY_MAX];
    if (cfg_assign(&tmp, assignment, key, sizeof key, err)) return err->code;
    CfgProblem p;
    if (cfg_consistency(&tmp, &p)) return al_fail(err, 2, "--set %.200s: %s", assignment, p.msg);
    *c = tmp;
    return 0;
}
