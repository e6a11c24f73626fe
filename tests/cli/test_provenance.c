/* test_provenance.c — which build wrote a file (issue 15, item 14), through the
 * library and the real binary ($ATTNLAB_BIN):
 *   - `attnlab --version` prints "attnlab X.Y.Z (commit C)" and exits 0, the same
 *     version and commit as attnlab_version() / attnlab_commit();
 *   - the provenance object, and a config text with it appended, which loads as
 *     the same config (cfg_parse and cfg_load, as a run folder's config.json is
 *     read by ./train distill and by sweeps), while other unknown top-level keys,
 *     a provenance that is no object and a repeated one are still refused; and
 *     ./train distill on a run folder whose config.json has provenance;
 *   - a sweep's grid.json carries the provenance of the binary that wrote it. */
#include "check.h"
#include "testutil.h"
#include "sweep_fixture.h"
#include "attnlab/config/config.h"
#include "attnlab/util/version.h"

#include <cJSON.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *bin;
static char tmp[256];

static void test_version_strings(void) {
    const char *v = attnlab_version(), *c = attnlab_commit();
    int dots = 0;
    for (const char *p = v; *p; p++) dots += *p == '.';
    CHECK(isdigit((unsigned char)v[0]) && dots == 2, "version '%s' is not X.Y.Z", v);
    size_t hex = strspn(c, "0123456789abcdef");
    CHECK(!strcmp(c, "unknown") || (hex == 40 && (!c[40] || !strcmp(c + 40, "-dirty"))),
          "commit '%s' is neither 40 hex digits [-dirty] nor unknown", c);
    CHECK(*attnlab_build_type() && *attnlab_compiler(), "empty build type or compiler");
}

static void test_version_flag(void) {
    char out[300], want[200];
    snprintf(out, sizeof out, "%s/version.txt", tmp);
    int rc = tu_wait(tu_spawn((const char *const[]){ bin, "--version", NULL }, out));
    char *text = tu_read_file(out, NULL);
    snprintf(want, sizeof want, "attnlab %s (commit %s)\n", attnlab_version(), attnlab_commit());
    CHECK(rc == 0, "--version exited %d", rc);
    CHECK(text && !strcmp(text, want), "--version printed '%s', want '%s'", text ? text : "(nothing)", want);
    free(text);
    snprintf(out, sizeof out, "%s/help.txt", tmp);
    tu_wait(tu_spawn((const char *const[]){ bin, "--help", NULL }, out));
    text = tu_read_file(out, NULL);
    CHECK(text && strstr(text, "--version"), "--help does not list --version");
    free(text);
}

static void check_provenance(const cJSON *p, const char *where) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, "attnlab_version");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(p, "commit");
    CHECK(cJSON_IsObject(p), "%s: no provenance object", where);
    CHECK(cJSON_IsString(v) && !strcmp(v->valuestring, attnlab_version()), "%s: provenance.attnlab_version", where);
    CHECK(cJSON_IsString(c) && !strcmp(c->valuestring, attnlab_commit()), "%s: provenance.commit", where);
}

static void test_provenance_object(void) {
    cJSON *o = cJSON_CreateObject();
    attnlab_add_provenance(o);
    attnlab_add_provenance(o);   /* replaces, never repeats */
    check_provenance(cJSON_GetObjectItemCaseSensitive(o, "provenance"), "attnlab_add_provenance");
    CHECK(cJSON_GetArraySize(o) == 1, "provenance added twice");
    cJSON_Delete(o);
    char *empty = attnlab_json_with_provenance("{}\n");
    cJSON *e = empty ? cJSON_Parse(empty) : NULL;
    check_provenance(cJSON_GetObjectItemCaseSensitive(e, "provenance"), "provenance added to {}");
    cJSON_Delete(e);
    free(empty);
    CHECK(attnlab_json_with_provenance("[1, 2]") == NULL, "an array got a provenance member");
}

/* A run folder's config.json with provenance loads as the config it was made from. */
static void test_config_accepts_provenance(void) {
    Config c, back;
    AlError err = {0};
    CHECK(cfg_parse(&c, "{\"name\": \"p\", \"train\": {\"lr\": 0.003}}", "inline", &err) == 0, "%s", err.msg);
    char *json = cfg_to_json(&c), *with = attnlab_json_with_provenance(json);
    CHECK(with && !strncmp(with, json, strlen(json) - 3), "the config text was changed, not appended to:\n%s",
          with ? with : "(null)");
    CHECK(with && cfg_parse(&back, with, "config.json", &err) == 0, "config.json with provenance refused: %s", err.msg);
    CHECK(with && !cfg_first_difference(&c, &back), "the config changed through provenance");
    char path[300];
    snprintf(path, sizeof path, "%s/config.json", tmp);
    CHECK(with && tu_write_file(path, with) == 0, "cannot write %s", path);
    CHECK(cfg_load(&back, path, NULL, 0, &err) == 0, "cfg_load refused a config.json with provenance: %s", err.msg);
    free(json);
    free(with);

    static const struct { const char *json, *want; } BAD[] = {
        { "{\"provenance\": {}, \"provenanc\": {}}", "unknown key 'provenanc'" },
        { "{\"prov\": {\"commit\": \"x\"}}", "unknown key 'prov'" },
        { "{\"provenance\": \"318bc36\"}", "'provenance' is written by attnlab" },
        { "{\"provenance\": {}, \"provenance\": {}}", "duplicate key 'provenance'" },
        { "{\"model\": {\"provenance\": {}}}", "unknown key 'model.provenance'" },
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        AlError e = {0};
        int rc = cfg_parse(&back, BAD[i].json, "x.json", &e);
        CHECK(rc == 2 && strstr(e.msg, BAD[i].want), "%s: rc %d, '%s' (want '%s')", BAD[i].json, rc, e.msg, BAD[i].want);
    }
    const char *sets[] = { "provenance.commit=abc" };
    AlError e = {0};
    CHECK(cfg_load(&back, path, sets, 1, &e) == 2 && strstr(e.msg, "unknown key"), "--set provenance.*: %s", e.msg);
}

/* ./train distill reads a run folder's config.json: with provenance, as the trainer
 * writes it, it must load. */
static void test_distill_reads_provenance(void) {
    char cfg[300], run[300], log[300];
    snprintf(cfg, sizeof cfg, "%s/m.json", tmp);
    snprintf(run, sizeof run, "%s/run", tmp);
    snprintf(log, sizeof log, "%s/run.txt", tmp);
    CHECK(tu_write_file(cfg, "{\"task\": {\"type\": \"match2\", \"seq_len\": 8, \"modulus\": 7, \"train_size\": 100},"
                             " \"model\": {\"d_model\": 8, \"attention\": {\"score\": \"unit_norm\"}}, \"train\": {\"steps\": 4},"
                             " \"eval\": {\"every\": 4, \"test_size\": 16}}") == 0, "cannot write %s", cfg);
    int rc = tu_wait(tu_spawn((const char *const[]){ bin, cfg, "--out", run, "--quiet", NULL }, log));
    CHECK(rc == 0, "training failed (exit %d, log %s)", rc, log);
    const char *path = tu_path(run, "config.json");
    char *json = tu_read_file(path, NULL);
    cJSON *parsed = json ? cJSON_Parse(json) : NULL;
    if (parsed && !cJSON_GetObjectItemCaseSensitive(parsed, "provenance")) {   /* not written by the trainer (yet) */
        char *with = attnlab_json_with_provenance(json);
        CHECK(with && tu_write_file(path, with) == 0, "cannot rewrite %s", path);
        free(with);
    }
    cJSON_Delete(parsed);
    free(json);
    rc = tu_wait(tu_spawn((const char *const[]){ bin, "distill", run, "--set", "distill.tables=1..2", "--set",
                                                 "distill.funcs=1", "--set", "distill.runs=1", "--quiet", NULL }, log));
    char *out = tu_read_file(log, NULL);
    CHECK(rc == 0, "./train distill on a config.json with provenance: exit %d:\n%s", rc, out ? out : "");
    free(out);
}

static void test_grid_json(void) {
    char cfg[300], out[300], log[300];
    snprintf(cfg, sizeof cfg, "%s/sweep.json", tmp);
    snprintf(out, sizeof out, "%s/sweep", tmp);
    snprintf(log, sizeof log, "%s/sweep.txt", tmp);
    CHECK(tu_write_file(cfg, CONFIG) == 0, "cannot write %s", cfg);
    int rc = tu_wait(tu_spawn((const char *const[]){ bin, "sweep", cfg, "--out", out, "--set", "train.steps=4",
                                                     "--set", "eval.every=2", "--quiet", NULL }, log));
    CHECK(rc == 0, "sweep failed (exit %d, log %s)", rc, log);
    char *text = tu_read_file(tu_path(out, "grid.json"), NULL);
    cJSON *grid = text ? cJSON_Parse(text) : NULL;
    check_provenance(cJSON_GetObjectItemCaseSensitive(grid, "provenance"), "grid.json");
    cJSON_Delete(grid);
    free(text);
}

int main(void) {
    bin = getenv("ATTNLAB_BIN");
    if (!bin) {
        fprintf(stderr, "test_provenance: set ATTNLAB_BIN to the attnlab binary (ctest does)\n");
        return 1;
    }
    snprintf(tmp, sizeof tmp, "/tmp/attnlab_provenance_XXXXXX");
    if (!mkdtemp(tmp)) return 1;
    test_version_strings();
    test_version_flag();
    test_provenance_object();
    test_config_accepts_provenance();
    test_distill_reads_provenance();
    test_grid_json();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmp);
    return check_exit("test_provenance");
}
