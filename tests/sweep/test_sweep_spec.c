/* test_sweep_spec.c — the sweep section: expansion, names, and every message.
 *
 *   - cells enumerate the axes like nested loops (last axis fastest, seeds
 *     innermost), with the overrides and folder names documented in spec.h;
 *   - the layout defaults (rows = a task.* axis, cols = model.d_model) and the
 *     normalised sweep.json read back to the same spec;
 *   - every sweep error of docs/errors.md, each checked to name the config file and
 *     the sweep key (and the value); a plain ./train on a sweep config is refused,
 *     naming ./train sweep; cfg_set_all checks cross-key rules once, after all. */
#include "check.h"
#include "testutil.h"
#include "attnlab/sweep/spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[256];

static const char *BASE =
    "{ \"name\": \"s\", \"seed\": 5,\n"
    "  \"task\": {\"type\": \"index_lookup\", \"seq_len\": 6, \"alphabet\": 4, \"min_len\": 2, \"train_size\": 100},\n"
    "  \"model\": {\"d_model\": 8, \"n_heads\": 2, \"positional\": \"learned\", \"attention\": {\"causal\": true}},\n"
    "  \"train\": {\"steps\": 10}, \"eval\": {\"every\": 5, \"test_size\": 16}";

/* Writes BASE + `, "sweep": SWEEP }` (or no sweep for NULL) and loads it. */
static int load(const char *sweep, Config *base, SweepSpec *s, AlError *err) {
    char text[4096];
    snprintf(text, sizeof text, "%s%s%s }\n", BASE, sweep ? ",\n  \"sweep\": " : "", sweep ? sweep : "");
    return tu_load_sweep(path, text, base, s, err);
}

static void expect_fail(int line, const char *sweep, const char *const *parts) {
    Config base;
    SweepSpec s;
    AlError err;
    int rc = load(sweep, &base, &s, &err);
    CHECK(rc == 2, "line %d: expected code 2, got %d (%s)", line, rc, err.msg);
    CHECK(!strncmp(err.msg, path, strlen(path)), "line %d: message does not start with the file: %s", line, err.msg);
    for (int i = 0; parts[i]; i++)
        CHECK(strstr(err.msg, parts[i]) != NULL, "line %d: message lacks '%s':\n  %s", line, parts[i], err.msg);
    sweep_spec_free(&s);
}
#define EXPECT_FAIL(sweep, ...) expect_fail(__LINE__, sweep, (const char *const[]){ __VA_ARGS__, NULL })

static void test_expansion(void) {
    Config base;
    SweepSpec s;
    AlError err;
    int rc = load("{\"axes\": {\"model.attention.type\": [\"softmax\", \"linear\"], \"task.seq_len\": [5, 6],"
                  " \"model.d_model\": [8, 16]}, \"seeds\": [1, 2]}", &base, &s, &err);
    CHECK(rc == 0, "valid sweep refused: %s", err.msg);
    CHECK(s.n_axes == 3 && s.n_points == 8 && s.n_cells == 16, "sizes %d %ld %ld", s.n_axes, s.n_points, s.n_cells);
    CHECK(s.rows == 1 && s.cols == 2, "default layout rows %d cols %d", s.rows, s.cols);
    CHECK(s.metric == METRIC_SEQ_ACC && s.threshold == 0.9, "defaults: metric %d threshold %g", s.metric, s.threshold);
    char name[SWEEP_NAME_MAX], *sets[SWEEP_MAX_AXES + 1];
    /* cell 11 = point 5 (linear, 5, 16), seed index 1 */
    sweep_cell_name(&s, 11, name, sizeof name);
    CHECK(!strcmp(name, "attention.type=linear,task.seq_len=5,d_model=16,seed=2"), "name %s", name);
    int n = sweep_cell_sets(&s, 11, sets);
    CHECK(n == 4 && !strcmp(sets[0], "model.attention.type=\"linear\"") && !strcmp(sets[1], "task.seq_len=5") &&
          !strcmp(sets[2], "model.d_model=16") && !strcmp(sets[3], "seed=2"), "sets %s %s %s %s", sets[0], sets[1],
          sets[2], sets[3]);
    sweep_free_sets(sets, n);
    Config c;
    CHECK(sweep_cell_config(&s, &base, 11, &c, &err) == 0, "cell config: %s", err.msg);
    CHECK(c.model.attention.type == ATTN_LINEAR && c.task.seq_len == 5 && c.model.d_model == 16 && c.seed == 2 &&
          c.task.alphabet == 4, "cell config values");

    /* sweep.json reads back to the same spec. */
    char *json = sweep_spec_to_json(&s);
    SweepSpec t;
    CHECK(sweep_spec_parse(&t, json, &base, "sweep.json", &err) == 0, "sweep.json refused: %s", err.msg);
    char *again = sweep_spec_to_json(&t);
    CHECK(!strcmp(json, again), "sweep.json round trip:\n%s\nvs\n%s", json, again);
    CHECK(t.rows == s.rows && t.cols == s.cols && t.n_cells == s.n_cells, "round trip layout");
    free(json);
    free(again);
    sweep_spec_free(&t);
    sweep_spec_free(&s);

    /* No seeds: the config's own; an explicit layout; values that need '_' in names. */
    rc = load("{\"axes\": {\"model.d_model\": [8, 16], \"name\": [\"a+b\", \"c\"]}, \"rows\": \"model.d_model\","
              " \"cols\": \"name\", \"metric\": \"token_acc\", \"threshold\": 0.5}", &base, &s, &err);
    CHECK(rc == 0, "valid sweep refused: %s", err.msg);
    CHECK(s.n_seeds == 1 && s.seeds[0] == 5 && s.rows == 0 && s.cols == 1 && s.metric == METRIC_TOKEN_ACC &&
          s.threshold == 0.5, "explicit layout");
    sweep_cell_name(&s, 0, name, sizeof name);
    CHECK(!strcmp(name, "d_model=8,name=a+b,seed=5"), "name %s", name);
    sweep_spec_free(&s);

    /* Axis values valid only together: cross-key rules are checked once per cell. */
    rc = load("{\"axes\": {\"task.seq_len\": [3], \"task.min_len\": [3]}}", &base, &s, &err);
    CHECK(rc == 0, "seq_len 3 with min_len 3 refused: %s", err.msg);
    sweep_spec_free(&s);
}

static void test_errors(void) {
    EXPECT_FAIL(NULL, "no 'sweep' section");
    EXPECT_FAIL("[1]", "sweep: expected an object");
    EXPECT_FAIL("{\"axes\": {\"model.d_model\": [8]}, \"axis\": 1}", "sweep: unknown key 'axis'", "valid keys: axes");
    EXPECT_FAIL("{\"axes\": {\"model.d_model\": [8]}, \"seeds\": [1], \"seeds\": [2]}", "sweep: duplicate key 'seeds'");
    EXPECT_FAIL("{\"seeds\": [1]}", "sweep: missing 'axes'");
    EXPECT_FAIL("{\"axes\": {}}", "sweep.axes: expected an object of key paths and value lists");
    EXPECT_FAIL("{\"axes\": [\"model.d_model\"]}", "sweep.axes: expected an object");
    EXPECT_FAIL("{\"axes\": {\"model.d_model\": 8}}", "sweep.axes[\"model.d_model\"]: expected a non-empty list", "got 8");
    EXPECT_FAIL("{\"axes\": {\"model.d_model\": []}}", "sweep.axes[\"model.d_model\"]: expected a non-empty list");
    EXPECT_FAIL("{\"axes\": {\"model.d_model\": [8, {\"a\": 1}]}}",
                "sweep.axes[\"model.d_model\"]: values must be numbers, strings or true/false, got {\"a\":1}");
    EXPECT_FAIL("{\"axes\": {\"model.d_model\": [8, 16, 8]}}", "sweep.axes[\"model.d_model\"]: value 8 is listed twice");
    EXPECT_FAIL("{\"axes\": {\"model.d_model\": [8], \"model.d_model\": [16]}}", "sweep.axes: duplicate key 'model.d_model'");
    EXPECT_FAIL("{\"axes\": {\"seed\": [1, 2]}}", "sweep.axes: 'seed' is not an axis", "sweep.seeds");
    EXPECT_FAIL("{\"axes\": {\"model.dmodel\": [8]}}", "sweep.axes: unknown key 'model.dmodel'",
                "did you mean 'model.d_model'?");
    EXPECT_FAIL("{\"axes\": {\"model.d_model\": [8, 0]}}", "sweep.axes[\"model.d_model\"] = 0",
                "(cell d_model=0,seed=5)", "model.d_model: must be in [1, 65536], got 0");
    EXPECT_FAIL("{\"axes\": {\"model.attention.type\": [\"softmax\", \"lin\"]}}",
                "sweep.axes[\"model.attention.type\"] = \"lin\"", "expected one of \"softmax\", \"linear\", \"sparse\"");
    EXPECT_FAIL("{\"axes\": {\"model.d_model\": [\"8\"]}}", "sweep.axes[\"model.d_model\"] = \"8\"",
                "expected an integer, got a string (\"8\")");
    EXPECT_FAIL("{\"axes\": {\"model.d_model\": [8, 12], \"model.n_heads\": [2, 8]}}",
                "sweep.axes[\"model.n_heads\"] = 8", "(cell d_model=12,n_heads=8,seed=5)",
                "model.d_model (12) must be divisible by model.n_heads (8)");
    EXPECT_FAIL("{\"axes\": {\"model\": [8]}}", "sweep.axes[\"model\"] = 8", "model: expected an object, got 8");
    EXPECT_FAIL("{\"axes\": {\"model.d_model\": [8]}, \"seeds\": 3}", "sweep.seeds: expected a list of 1 to 64 seeds");
    EXPECT_FAIL("{\"axes\": {\"model.d_model\": [8]}, \"seeds\": [1, -2]}", "sweep.seeds: expected integers", "got -2");
    EXPECT_FAIL("{\"axes\": {\"model.d_model\": [8]}, \"seeds\": [1, 1]}", "sweep.seeds: seed 1 is listed twice");
    EXPECT_FAIL("{\"axes\": {\"model.d_model\": [8]}, \"metric\": \"acc\"}",
                "sweep.metric: expected one of \"token_acc\", \"seq_acc\", \"answer_acc\"; got \"acc\"");
    EXPECT_FAIL("{\"axes\": {\"model.d_model\": [8]}, \"metric\": \"answer_acc\"}",
                "sweep.metric \"answer_acc\" is only reported for chain-of-thought tasks", "cell d_model=8,seed=5");
    EXPECT_FAIL("{\"axes\": {\"model.d_model\": [8]}, \"rows\": \"task.seq_len\"}",
                "sweep.rows: expected the key path of one of the sweep.axes, got \"task.seq_len\"");
    EXPECT_FAIL("{\"axes\": {\"model.d_model\": [8]}, \"cols\": 3}", "sweep.cols: expected the key path");
    EXPECT_FAIL("{\"axes\": {\"model.d_model\": [8], \"task.seq_len\": [5]}, \"rows\": \"model.d_model\","
                " \"cols\": \"model.d_model\"}", "sweep.rows and sweep.cols are the same axis ('model.d_model')");
    EXPECT_FAIL("{\"axes\": {\"model.d_model\": [8]}, \"threshold\": 90}", "sweep.threshold: expected a number in (0, 1], got 90");
    EXPECT_FAIL("{\"axes\": {\"task.type\": [\"file\"], \"task.train_path\": [\"a/b.jsonl\", \"a_b.jsonl\"]}}",
                "sweep: two cells would share the folder 'task.type=file,task.train_path=a_b.jsonl,seed=5'");

    EXPECT_FAIL("{\"axes\": {\"model.d_model\": [8], \"model.n_layers\": [1], \"model.mlp_ratio\": [1],"
                " \"train.lr\": [0.1], \"train.steps\": [9], \"train.batch_size\": [4], \"eval.every\": [3],"
                " \"eval.test_size\": [8], \"train.eps\": [0.1]}}", "sweep.axes: at most 8 axes");
    char path_axis[1024], long_path[400];
    memset(long_path, 'p', 300);
    long_path[300] = 0;
    snprintf(path_axis, sizeof path_axis, "{\"axes\": {\"task.type\": [\"file\"], \"task.train_path\": [\"%s\"]}}", long_path);
    EXPECT_FAIL(path_axis, "sweep: cell folder name 'task.type=file,task.train_path=ppp", "is longer than 255 characters");

    /* More than SWEEP_MAX_VALUES values, and more than SWEEP_MAX_CELLS cells. */
    char big[4096];
    size_t len = (size_t)snprintf(big, sizeof big, "{\"axes\": {\"model.d_model\": [");
    for (int i = 1; i <= SWEEP_MAX_VALUES + 1; i++) len += (size_t)snprintf(big + len, sizeof big - len, "%s%d", i > 1 ? "," : "", i);
    snprintf(big + len, sizeof big - len, "]}}");
    EXPECT_FAIL(big, "sweep.axes[\"model.d_model\"]: at most 64 values, got 65");
    len = (size_t)snprintf(big, sizeof big, "{\"axes\": {");
    const char *keys[] = { "model.d_model", "model.mlp_ratio", "train.batch_size", "train.steps" };
    for (int k = 0; k < 4; k++) {
        len += (size_t)snprintf(big + len, sizeof big - len, "%s\"%s\": [", k ? "," : "", keys[k]);
        for (int i = 1; i <= 20; i++) len += (size_t)snprintf(big + len, sizeof big - len, "%s%d", i > 1 ? "," : "", 2 * i);
        len += (size_t)snprintf(big + len, sizeof big - len, "]");
    }
    snprintf(big + len, sizeof big - len, "}}");
    EXPECT_FAIL(big, "sweep: more than 100000 cells (axes x seeds); split the grid");
}

/* A single run refuses a sweep config and names the command that runs it. */
static void test_plain_run_refuses(void) {
    char text[4096];
    snprintf(text, sizeof text, "%s,\n  \"sweep\": {\"axes\": {\"model.d_model\": [8]}} }\n", BASE);
    CHECK(tu_write_file(path, text) == 0, "write");
    Config c;
    AlError err = {0};
    CHECK(cfg_load(&c, path, NULL, 0, &err) == 2, "cfg_load accepted a sweep section");
    CHECK(strstr(err.msg, path) && strstr(err.msg, "the 'sweep' section describes a grid of runs: run it with "
                                                     "./train sweep"), "message: %s", err.msg);
    /* Two sweep sections are a duplicate key, as any other. */
    snprintf(text, sizeof text, "%s,\n  \"sweep\": {\"axes\": {}}, \"sweep\": {} }\n", BASE);
    CHECK(tu_write_file(path, text) == 0, "write");
    char *json = NULL;
    memset(&err, 0, sizeof err);
    CHECK(cfg_load_sweep(&c, path, NULL, 0, &json, &err) == 2 && !json, "two sweep sections accepted");
    CHECK(strstr(err.msg, path) && strstr(err.msg, "duplicate key 'sweep'"), "message: %s", err.msg);
}

/* cfg_set_all: one consistency check after every override, blame on the last one. */
static void test_set_all(void) {
    Config c;
    AlError err = {0};
    CHECK(cfg_parse(&c, "{\"task\": {\"type\": \"index_lookup\", \"seq_len\": 20, \"min_len\": 10}, "
                        "\"model\": {\"attention\": {\"causal\": true}}}", "t", &err) == 0, "parse: %s", err.msg);
    const char *ok[] = { "task.seq_len=5", "task.min_len=2" };
    Config d = c;
    CHECK(cfg_set_all(&d, ok, 2, "t", &err) == 0 && d.task.seq_len == 5 && d.task.min_len == 2,
          "set_all refused a valid pair: %s", err.msg);
    CHECK(cfg_set(&c, ok[0], &err) == 2, "cfg_set alone should refuse seq_len 5 < min_len 10");
    const char *bad[] = { "task.min_len=2", "task.seq_len=1" };
    d = c;
    memset(&err, 0, sizeof err);
    CHECK(cfg_set_all(&d, bad, 2, "t", &err) == 2 && d.task.seq_len == 20, "set_all accepted seq_len 1 or changed c");
    CHECK(strstr(err.msg, "--set task.seq_len=1: task.seq_len: must be in [2, 65536], got 1"), "message: %s", err.msg);
    const char *cross[] = { "task.seq_len=4", "model.d_model=8" };
    memset(&err, 0, sizeof err);
    CHECK(cfg_set_all(&d, cross, 2, "t", &err) == 2, "min_len 10 > seq_len 4 accepted");
    CHECK(strstr(err.msg, "--set task.seq_len=4: task.min_len (10) must be <= task.seq_len (4)"), "message: %s", err.msg);
}

/* A cell the loader accepts but its run would refuse: the task generator's own
 * checks, the k-hop test hop count, the memory a run needs.  All before any cell runs. */
static void expect_cell_fail(int line, const char *task, const char *sweep, const char *want) {
    char text[4096];
    snprintf(text, sizeof text, "{\"name\": \"c\", \"seed\": 5, \"task\": %s,\n"
             " \"model\": {\"d_model\": 8, \"attention\": {\"causal\": true}},\n"
             " \"train\": {\"steps\": 2, \"batch_size\": 2}, \"eval\": {\"every\": 1, \"test_size\": 8},\n"
             " \"sweep\": %s}\n", task, sweep);
    Config base;
    SweepSpec s;
    AlError err = {0};
    int rc = tu_load_sweep(path, text, &base, &s, &err);
    CHECK(rc == 2, "line %d: expected code 2, got %d (%s)", line, rc, err.msg);
    CHECK(!strncmp(err.msg, path, strlen(path)), "line %d: message does not start with the file: %s", line, err.msg);
    CHECK(strstr(err.msg, want) != NULL, "line %d: message lacks '%s':\n  %s", line, want, err.msg);
    sweep_spec_free(&s);
}

static void test_cell_checks(void) {
    expect_cell_fail(__LINE__, "{\"type\": \"dyck\", \"seq_len\": 16, \"train_size\": 0}",
                     "{\"axes\": {\"task.seq_len\": [16, 17]}}",
                     "sweep cell task.seq_len=17,seed=5: task.seq_len: dyck: seq_len must be even, got 17");
    expect_cell_fail(__LINE__, "{\"type\": \"khop\", \"seq_len\": 16, \"min_hops\": 0, \"max_hops\": 1, "
                     "\"train_size\": 0}", "{\"axes\": {\"task.test_hops\": [1, 2]}}",
                     "sweep.axes[\"task.test_hops\"] = 2 (cell task.test_hops=2,seed=5): task.test_hops (2) must be -1 "
                     "or in [task.min_hops, task.max_hops] = [0, 1]");
    expect_cell_fail(__LINE__, "{\"type\": \"dyck\", \"seq_len\": 16, \"train_size\": 0}",
                     "{\"axes\": {\"task.seq_len\": [65536], \"train.batch_size\": [4096]}}",   /* ~700 GiB */
                     "sweep cell task.seq_len=65536,train.batch_size=4096,seed=5: train.batch_size=4096, "
                     "task.seq_len=65536, model.d_model=8, model.n_layers=1: the run needs about");
    expect_cell_fail(__LINE__, "{\"type\": \"match2\", \"seq_len\": 32, \"modulus\": 37, \"train_size\": 100}",
                     "{\"axes\": {\"eval.test_size\": [8, 1000000]}}",
                     "sweep cell eval.test_size=1000000,seed=5: eval.test_size: match2: dataset size 1000000 would take");
}

int main(void) {
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(path, sizeof path, "%s/attnlab_sweep_spec_%d.json", dir, (int)getpid());
    test_expansion();
    test_errors();
    test_plain_run_refuses();
    test_set_all();
    test_cell_checks();
    remove(path);
    return check_exit("test_sweep_spec");
}
