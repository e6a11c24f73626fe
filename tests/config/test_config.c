/* test_config.c — the config loader: defaults, round trip, overrides, and one test
 * per documented error (docs/errors.md).  Each error test feeds a bad input and
 * checks the exit code (2), that the message starts with the source (file name or
 * "--set ..."), and that it names the key path or line:column and the hint. */
#include "attnlab/config/config.h"

#include "check.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SRC "configs/x.json"

static int contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }
static int starts_with(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

/* Checks a failed call: code 2, message starts with `source`, contains each needle. */
static void check_msg(int line, int rc, const AlError *e, const char *source, va_list needles) {
    CHECK(rc == 2 && e->code == 2, "line %d: expected code 2, got rc %d code %d", line, rc, e->code);
    CHECK(starts_with(e->msg, source), "line %d: message does not start with '%s':\n%s", line, source, e->msg);
    for (const char *n; (n = va_arg(needles, const char *));)
        CHECK(contains(e->msg, n), "line %d: message lacks '%s':\n%s", line, n, e->msg);
}

/* cfg_parse(json) must fail; the message must contain every needle. */
static void expect_fail_(int line, const char *json, ...) {
    Config c;
    AlError e = { 0 };
    int rc = cfg_parse(&c, json, SRC, &e);
    va_list ap;
    va_start(ap, json);
    check_msg(line, rc, &e, SRC ":", ap);
    va_end(ap);
}
#define EXPECT_FAIL(json, ...) expect_fail_(__LINE__, json, __VA_ARGS__, (const char *)NULL)

/* cfg_set(defaults, assignment) must fail, name the override, and change nothing. */
static void expect_set_fail_(int line, const char *assignment, ...) {
    Config c, before;
    cfg_defaults(&c);
    before = c;
    AlError e = { 0 };
    int rc = cfg_set(&c, assignment, &e);
    char source[300];
    snprintf(source, sizeof source, "--set %s: ", assignment);
    va_list ap;
    va_start(ap, assignment);
    check_msg(line, rc, &e, source, ap);
    va_end(ap);
    CHECK(cfg_first_difference(&c, &before) == NULL, "line %d: failed --set changed the config", line);
}
#define EXPECT_SET_FAIL(a, ...) expect_set_fail_(__LINE__, a, __VA_ARGS__, (const char *)NULL)

static Config parse_ok(const char *json) {
    Config c;
    AlError e = { 0 };
    int rc = cfg_parse(&c, json, SRC, &e);
    CHECK(rc == 0, "parse failed: %s\n  input: %s", e.msg, json);
    return c;
}

/* Writes `len` bytes to a fresh temporary file; path[] receives its name. */
static void write_temp(char *path, size_t cap, const char *data, size_t len) {
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(path, cap, "%s/attnlab_cfg_XXXXXX", dir);
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp(%s) failed", path);
    if (fd < 0) return;
    CHECK(write(fd, data, len) == (ssize_t)len, "short write to %s", path);
    close(fd);
}

/* ------------------------------------------------------------------------------ */

static void test_defaults(void) {
    Config c;
    cfg_defaults(&c);
    CHECK(!strcmp(c.name, "run") && c.seed == 1, "name/seed");
    CHECK(c.task.type == TASK_MATCH2 && c.task.seq_len == 32 && c.task.modulus == 37 &&
          c.task.train_size == 10000, "task defaults");
    const CfgModel *m = &c.model;
    CHECK(m->d_model == 64 && m->n_layers == 1 && m->n_heads == 1 && m->mlp_ratio == 4, "model sizes");
    CHECK(m->activation == ACT_GELU_TANH && m->positional == POS_NONE && !m->embed_layernorm, "model kinds");
    CHECK(m->dropout == 0.0f && m->ln_eps == 1e-5f && m->init == INIT_TORCH && m->init_std == 0.02f, "model floats");
    CHECK(m->type == MODEL_TRANSFORMER && m->attention.type == ATTN_SOFTMAX && m->attention.score == SCORE_DOT &&
          m->attention.beta == 1.0f && !m->attention.causal, "attention defaults");
    CHECK(m->attention.feature == FEATURE_ELU1 && m->attention.eps == 1e-6f && m->attention.block == 0 &&
          m->attention.local_blocks == 1 && m->attention.summary == 1, "efficient-attention defaults");
    const CfgTrain *t = &c.train;
    CHECK(!strcmp(t->optimizer, "adam") && t->lr == 1e-3f && t->beta1 == 0.9f && t->beta2 == 0.999f &&
          t->eps == 1e-8f && t->weight_decay == 0.0f, "optimizer defaults");
    CHECK(t->schedule == SCHED_CONSTANT && t->warmup_steps == 0 && t->min_lr == 0.0f && t->batch_size == 32 &&
          t->steps == 1000 && t->grad_clip == 0.0f && t->threads == 0, "train defaults");
    CHECK(c.eval.every == 100 && c.eval.test_size == 256 && c.eval.stop_at_error == -1.0f &&
          c.eval.stop_metric == STOP_ON_TOKEN && c.eval.checkpoint_every == 0, "eval defaults");

    /* An empty object means "all defaults"; so does a file naming a few of them. */
    Config e = parse_ok("{}");
    CHECK(cfg_first_difference(&c, &e) == NULL, "{} differs from defaults at %s", cfg_first_difference(&c, &e));
    Config f = parse_ok("{\"model\": {\"d_model\": 128, \"n_heads\": 4}}");
    CHECK(f.model.d_model == 128 && f.model.n_heads == 4, "values read");
    CHECK(f.model.n_layers == 1 && f.train.lr == 1e-3f, "unnamed keys keep defaults");
}

static void test_round_trip(void) {
    Config d;
    cfg_defaults(&d);
    char *js = cfg_to_json(&d);
    Config back = parse_ok(js);   /* also proves every default passes its own range */
    CHECK(cfg_first_difference(&d, &back) == NULL, "defaults round trip differs at %s",
          cfg_first_difference(&d, &back));
    free(js);

    /* Every key away from its default, with floats that %g would mangle. */
    const char *custom =
        "{\"name\": \"exp-7.b_2+x\", \"seed\": 9007199254740992,"
        " \"task\": {\"seq_len\": 64, \"modulus\": 101, \"train_size\": 123},"
        " \"model\": {\"d_model\": 96, \"n_layers\": 3, \"n_heads\": 6, \"mlp_ratio\": 2,"
        "   \"activation\": \"gelu_erf\", \"positional\": \"sinusoidal\", \"embed_layernorm\": true,"
        "   \"dropout\": 0.1, \"ln_eps\": 1.2345678e-6, \"init\": \"normal\", \"init_std\": 0.0173,"
        "   \"attention\": {\"score\": \"dot\", \"beta\": 3.3333333, \"causal\": true}},"
        " \"train\": {\"optimizer\": \"adamw\", \"lr\": 3e-4, \"beta1\": 0.85, \"beta2\": 0.98, \"eps\": 1e-7,"
        "   \"weight_decay\": 0.01, \"schedule\": \"warmup_cosine\", \"warmup_steps\": 50, \"min_lr\": 1e-5,"
        "   \"batch_size\": 7, \"steps\": 500, \"grad_clip\": 1.5, \"threads\": 3},"
        " \"eval\": {\"every\": 25, \"test_size\": 99, \"stop_at_error\": 0.001, \"checkpoint_every\": 250}}";
    Config c = parse_ok(custom);
    CHECK(c.seed == 9007199254740992ull && c.train.lr == 3e-4f && c.model.attention.causal == 1, "custom values");
    char *j1 = cfg_to_json(&c);
    Config c2 = parse_ok(j1);
    CHECK(cfg_first_difference(&c, &c2) == NULL, "custom round trip differs at %s", cfg_first_difference(&c, &c2));
    char *j2 = cfg_to_json(&c2);
    CHECK(!strcmp(j1, j2), "printing is not stable:\n%s\nvs\n%s", j1, j2);
    CHECK(contains(j1, "\"lr\": 0.0003,") && contains(j1, "\"ln_eps\": 1.2345678e-06,"),
          "floats printed shortest-exact:\n%s", j1);
    free(j1);
    free(j2);

    /* cfg_first_difference sees a one-ulp change. */
    c2.model.attention.beta = nextafterf(c2.model.attention.beta, 10.0f);
    const char *diff = cfg_first_difference(&c, &c2);
    CHECK(diff && !strcmp(diff, "model.attention.beta"), "difference found at %s", diff ? diff : "(none)");
}

static void test_to_json_format(void) {
    Config d;
    cfg_defaults(&d);
    char *js = cfg_to_json(&d);
    CHECK(starts_with(js, "{\n  \"name\": \"run\",\n  \"seed\": 1,\n  \"task\": {\n    \"type\": \"match2\",\n"),
          "schema order, 2-space indent:\n%s", js);
    CHECK(contains(js, "\n    \"attention\": {\n      \"type\": \"softmax\",\n      \"score\": \"dot\","),
          "nested objects indented:\n%s", js);
    CHECK(contains(js, "\"stop_at_error\": -1,") && contains(js, "\"embed_layernorm\": false,"), "values:\n%s", js);
    CHECK(contains(js, "\"init\": \"torch\",") && !contains(js, "init_std"),
          "a key that does not apply (init_std under init \"torch\") is not printed:\n%s", js);
    CHECK(!contains(js, "{}"), "a section with nothing that applies is not printed:\n%s", js);
    size_t n = strlen(js);
    CHECK(n > 2 && !strcmp(js + n - 3, "\n}\n"), "ends with a newline");
    free(js);

    char *help = cfg_help();
    CHECK(contains(help, "model.attention.beta") && contains(help, "train.threads") &&
          contains(help, "number in [0, 1) (default 0)") && contains(help, "only for task.type \"match2\""),
          "help lists keys, ranges, defaults:\n%s", help);
    free(help);
}

/* --- malformed JSON ---------------------------------------------------------- */

static void test_syntax_errors(void) {
    /* line:column, the excerpt with its line number, the caret under the column. */
    EXPECT_FAIL("{\n  \"model\": {\n    \"d_model\": 64\n    \"n_heads\": 2\n  }\n}",
                SRC ":4:5: expected ',' or '}' after the value of \"d_model\", found '\"' (missing comma?)",
                "\n     4 |     \"n_heads\": 2\n       |     ^");
    EXPECT_FAIL("{\"model\": {\"d_model\": 64,}}", SRC ":1:25: trailing comma before '}'");
    EXPECT_FAIL("{\"train\": {\"lr\": [1, 2,]}}", SRC ":1:23: trailing comma before ']'");
    EXPECT_FAIL("{\n  // comment\n  \"seed\": 2\n}", SRC ":2:3: comments are not allowed in JSON");
    EXPECT_FAIL("{'seed': 2}", SRC ":1:2: expected a key in double quotes, found ''' (keys need double quotes)");
    EXPECT_FAIL("{seed: 2}", SRC ":1:2: expected a key in double quotes, found 'seed'");
    EXPECT_FAIL("{\"seed\" 2}", SRC ":1:9: expected ':' after the key \"seed\", found '2'");
    EXPECT_FAIL("{\"model\": {\"activation\": gelu_erf}}", SRC ":1:26:", "found 'gelu_erf' (strings need double quotes)");
    EXPECT_FAIL("{\"model\": {\"embed_layernorm\": True}}", SRC ":1:31:", "lowercase");
    EXPECT_FAIL("{\"seed\": NaN}", SRC ":1:10: NaN and Infinity are not valid JSON numbers");
    EXPECT_FAIL("{\"seed\": 1.2.3}", SRC ":1:10: invalid number '1.2.3'");
    EXPECT_FAIL("{\"name\": \"a\\qb\"}", SRC ":1:12: invalid escape '\\q'");
    EXPECT_FAIL("{\n  \"name\": \"abc\n}", SRC ":2:11: unterminated string");
    EXPECT_FAIL("{\"model\": {\"d_model\": 64}\n\n", SRC ":1:26: unexpected end of file: the '{' at line 1, column 1 is never closed");
    EXPECT_FAIL("{\"seed\": 2} x", SRC ":1:13: unexpected 'x' after the end of the top-level object");
    EXPECT_FAIL("{\"seed\": 2}}", SRC ":1:12: unexpected '}' after the end of the top-level object (one too many?)");
    EXPECT_FAIL("{\"name\": \"ab\\\n\"}", SRC ":1:10: unterminated string");   /* backslash at line end */
    EXPECT_FAIL("{\"seed\": \xC3\xA9}", SRC ":1:10: expected a value", "found '\xC3\xA9'");  /* a whole UTF-8 char */
    EXPECT_FAIL("{\"seed\": 2,", SRC ":1:12: unexpected end of file: the '{' at line 1, column 1 is never closed");
    EXPECT_FAIL("{\"seed\":", SRC ":1:9: unexpected end of file: expected a value");
    EXPECT_FAIL("[1] x", SRC ":1:5: unexpected 'x' after the end of the top-level value");
    EXPECT_FAIL("", SRC ": file is empty (write {} to use every default)");
    EXPECT_FAIL(" \n\t\n", SRC ": file is empty");
    EXPECT_FAIL("[{\"seed\": 2}]", SRC ": the top level must be a JSON object {...}, got an array");
    EXPECT_FAIL("42", SRC ": the top level must be a JSON object {...}, got 42");

    /* Long lines are cut around the error; the caret still points at it. */
    char json[400];
    snprintf(json, sizeof json, "{\"name\": \"%0200d\" \"seed\": 2}", 0);
    EXPECT_FAIL(json, SRC ":1:213:", "...", "\" \"seed\": 2}\n       |    ");
}

static void test_file_errors(void) {
    Config c;
    AlError e = { 0 };
    int rc = cfg_load(&c, "no/such/dir/x.json", NULL, 0, &e);
    CHECK(rc == 2 && !strcmp(e.msg, "cannot open 'no/such/dir/x.json': No such file or directory"),
          "missing file: %s", e.msg);

    e = (AlError){ 0 };
    rc = cfg_load(&c, "/", NULL, 0, &e);
    CHECK(rc == 2 && starts_with(e.msg, "cannot read '/': "), "directory: %s", e.msg);

    char path[512], want[600];
    write_temp(path, sizeof path, "{\"seed\": 2,\n \"na\0me\": 1}", 25);
    e = (AlError){ 0 };
    rc = cfg_load(&c, path, NULL, 0, &e);
    snprintf(want, sizeof want, "%s:2:5: contains a NUL byte", path);
    CHECK(rc == 2 && starts_with(e.msg, want), "NUL byte: %s", e.msg);
    unlink(path);

    /* A file's syntax, key and consistency errors are named by its path. */
    const char *bad = "{\n  \"model\": {\"d_model\": 60, \"n_heads\": 8}\n}\n";
    write_temp(path, sizeof path, bad, strlen(bad));
    e = (AlError){ 0 };
    rc = cfg_load(&c, path, NULL, 0, &e);
    snprintf(want, sizeof want, "%s: model.d_model (60) must be divisible by model.n_heads (8)", path);
    CHECK(rc == 2 && !strcmp(e.msg, want), "consistency in file: %s", e.msg);
    unlink(path);

    /* A UTF-8 byte-order mark (some editors add one) is fine. */
    const char *bom = "\xEF\xBB\xBF{\"seed\": 5}";
    write_temp(path, sizeof path, bom, strlen(bom));
    e = (AlError){ 0 };
    rc = cfg_load(&c, path, NULL, 0, &e);
    CHECK(rc == 0 && c.seed == 5, "BOM: %s", e.msg);
    unlink(path);
}

/* --- keys -------------------------------------------------------------------- */

static void test_unknown_keys(void) {
    EXPECT_FAIL("{\"model\": {\"attention\": {\"bta\": 2}}}",
                SRC ": unknown key 'model.attention.bta' (did you mean 'model.attention.beta'?)");
    EXPECT_FAIL("{\"model\": {\"nheads\": 2}}", "unknown key 'model.nheads' (did you mean 'model.n_heads'?)");
    EXPECT_FAIL("{\"train\": {\"warmup\": 2}}", "unknown key 'train.warmup' (did you mean 'train.warmup_steps'?)");
    EXPECT_FAIL("{\"lr\": 0.1}", "unknown key 'lr' (did you mean 'train.lr'?)");   /* right name, wrong level */
    EXPECT_FAIL("{\"model\": {\"zzz\": 1}}",
                "unknown key 'model.zzz' (valid keys under 'model': type, d_model, n_layers,", "attention, dss, retnet, mamba)");
    EXPECT_FAIL("{\"xyzzy\": 1}", "unknown key 'xyzzy' (valid top-level keys: name, seed, task, model, train, eval, distill)");
    EXPECT_FAIL("{\"model.d_model\": 8}",
                SRC ": key 'model.d_model' must be nested in a file: {\"model\": {\"d_model\": ...}}");
}

/* Keys that exist only for some values of an earlier enum key (task keys per
 * task.type; model.init_std only for model.init "normal"). */
static void test_conditional_keys(void) {
    EXPECT_FAIL("{\"model\": {\"init_std\": 0.05}}",
                SRC ": model.init_std: not valid for model.init \"torch\" (only for \"normal\")");
    Config c = parse_ok("{\"model\": {\"init_std\": 0.05, \"init\": \"normal\"}}");   /* order-independent */
    CHECK(c.model.init == INIT_NORMAL && c.model.init_std == 0.05f, "init_std read under init normal");
    char *js = cfg_to_json(&c);
    CHECK(contains(js, "\"init\": \"normal\",\n    \"init_std\": 0.05,"), "init_std printed:\n%s", js);
    free(js);
    EXPECT_SET_FAIL("model.init_std=0.1", "--set model.init_std=0.1: model.init_std: not valid for model.init \"torch\"");
    AlError e = { 0 };
    cfg_defaults(&c);
    int rc = cfg_set(&c, "model={\"init\": \"normal\", \"init_std\": 0.1}", &e);
    CHECK(rc == 0 && c.model.init_std == 0.1f, "object override sets both: %s", e.msg);
    /* An empty section of another model type sets nothing and is accepted (older
     * versions wrote "retnet": {} into every config); one with a key is not. */
    c = parse_ok("{\"model\": {\"retnet\": {}, \"mamba\": {}}}");
    CHECK(c.model.type == MODEL_TRANSFORMER, "empty sections changed the model");
    EXPECT_FAIL("{\"model\": {\"mamba\": {\"d_state\": 8}}}",
                SRC ": model.mamba: not valid for model.type \"transformer\" (only for \"mamba\")");
}

static void test_duplicate_keys(void) {
    EXPECT_FAIL("{\"model\": {\"d_model\": 8, \"n_heads\": 2, \"d_model\": 16}}",
                SRC ": duplicate key 'model.d_model' (a JSON object must not repeat a key)");
    EXPECT_FAIL("{\"train\": {}, \"seed\": 3, \"train\": {\"lr\": 0.1}}", SRC ": duplicate key 'train'");
}

static void test_type_errors(void) {
    EXPECT_FAIL("{\"model\": {\"d_model\": \"64\"}}", SRC ": model.d_model: expected an integer, got a string (\"64\")");
    EXPECT_FAIL("{\"model\": {\"d_model\": 64.5}}", SRC ": model.d_model: expected an integer, got 64.5");
    EXPECT_FAIL("{\"model\": {\"d_model\": null}}", SRC ": model.d_model: expected an integer, got null");
    EXPECT_FAIL("{\"model\": {\"d_model\": 1e999}}", "model.d_model: expected an integer, got a number too large");
    EXPECT_FAIL("{\"train\": {\"lr\": \"1e-3\"}}", SRC ": train.lr: expected a number, got a string (\"1e-3\")");
    EXPECT_FAIL("{\"train\": {\"lr\": [0.1]}}", SRC ": train.lr: expected a number, got an array");
    EXPECT_FAIL("{\"model\": {\"embed_layernorm\": 1}}", SRC ": model.embed_layernorm: expected true or false, got 1");
    EXPECT_FAIL("{\"model\": {\"attention\": {\"causal\": \"true\"}}}",
                "model.attention.causal: expected true or false, got a string (\"true\")");
    EXPECT_FAIL("{\"model\": {\"positional\": \"learnt\"}}",
                SRC ": model.positional: expected one of \"none\", \"learned\", \"sinusoidal\"; got \"learnt\" "
                "(did you mean \"learned\"?)");
    EXPECT_FAIL("{\"model\": {\"activation\": 1}}",
                SRC ": model.activation: expected one of \"gelu_tanh\", \"gelu_erf\"; got 1");
    EXPECT_FAIL("{\"train\": {\"optimizer\": \"sgd\"}}",
                SRC ": train.optimizer: expected one of \"adam\", \"adamw\"; got \"sgd\"");
    EXPECT_FAIL("{\"train\": {\"schedule\": \"cosine\"}}", "(did you mean \"warmup_cosine\"?)");
    EXPECT_FAIL("{\"task\": {\"type\": \"copy\"}}", SRC ": task.type: expected one of \"match2\", \"khop\", \"index_lookup\", ");
    EXPECT_FAIL("{\"task\": {\"type\": \"copy\"}}", "\"file\"; got \"copy\"");
    EXPECT_FAIL("{\"task\": {\"type\": \"khop\", \"modulus\": 5}}", SRC ": task.modulus: not valid for task.type \"khop\"");
    EXPECT_FAIL("{\"task\": {\"type\": \"khop\", \"min_hops\": 3, \"max_hops\": 2}}",
                SRC ": task.min_hops (3) must be <= task.max_hops (2)");
    EXPECT_FAIL("{\"task\": {\"type\": \"index_lookup\", \"seq_len\": 8}, \"model\": {\"attention\": {\"causal\": true}}}",
                SRC ": task.min_len (10) must be <= task.seq_len (8)");
    EXPECT_FAIL("{\"task\": {\"train_size\": 0}}", SRC ": task.train_size must be >= 1 for task.type \"match2\"");
    EXPECT_FAIL("{\"distill\": {\"tables\": \"16..1\"}}", SRC ": distill.tables \"16..1\": range 16..1/1 is empty");
    EXPECT_FAIL("{\"distill\": {\"funcs\": \"1..65\"}}", SRC ": distill.funcs \"1..65\": 65 is outside [1, 64]");
    EXPECT_FAIL("{\"distill\": {\"layers\": \"1\"}}", SRC ": distill.layers \"1\": 1 is outside [0, 0] (layers are 0..0, or all)");
    EXPECT_FAIL("{\"model\": {\"n_layers\": 2}, \"distill\": {\"funcs\": \"1;2\", \"same_funcs\": true}}",
                SRC ": distill.same_funcs needs the same z list for every layer, but distill.funcs is \"1;2\"");
    EXPECT_FAIL("{\"model\": {\"n_layers\": 2}, \"distill\": {\"tables\": \"1;2;3\"}}",
                SRC ": distill.tables \"1;2;3\": 3 ';'-separated lists for 2 layers");
    EXPECT_FAIL("{\"distill\": {\"finetune_cells\": \"\"}}", SRC ": distill.finetune_cells \"\": empty list");
    EXPECT_FAIL("{\"distill\": {\"finetune_cells\": \"8\"}}",
                SRC ": distill.finetune_cells \"8\": expected tables x functions such as 8x1 at '8'");
    EXPECT_FAIL("{\"distill\": {\"finetune_cells\": \"8x0\"}}",
                SRC ": distill.finetune_cells \"8x0\": 8x0: tables must be in [1, 4096] and functions in [1, 64]");
    EXPECT_FAIL("{\"distill\": {\"finetune_cells\": \"1x1;2x1\"}}",
                SRC ": distill.finetune_cells \"1x1;2x1\": unexpected ';' (write e.g. 8x1 or 1x1,2x1");
    EXPECT_FAIL("{\"distill\": {\"finetune_cells\": \"1x1+2x1\"}}",
                SRC ": distill.finetune_cells \"1x1+2x1\": cell 1 has 2 '+'-joined layers for 1 distilled layers");
    EXPECT_FAIL("{\"distill\": {\"finetune_cells\": \"1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1,1x1\"}}",
                SRC ": distill.finetune_cells \"1x1,", "more than 16 cells");
    EXPECT_FAIL("{\"distill\": {\"finetune_steps\": -1}}", SRC ": distill.finetune_steps: must be in [0, 10000000], got -1");
    EXPECT_FAIL("{\"distill\": {\"finetune_lr\": 0}}", SRC ": distill.finetune_lr: must be > 0, got 0");
    EXPECT_FAIL("{\"distill\": {\"finetune_params\": \"except_q\"}}",
                SRC ": distill.finetune_params: expected one of \"except_qk\", \"except_attention\"; got \"except_q\"");
    EXPECT_FAIL("{\"distill\": {\"finetune_hashes\": \"fresh\"}}",
                SRC ": distill.finetune_hashes: expected one of \"fixed\", \"redraw\"; got \"fresh\"");
    EXPECT_FAIL("{\"task\": {\"type\": \"lis\"}}", SRC ": task.type \"lis\" needs model.attention.causal true (it is next-token prediction)");
    EXPECT_FAIL("{\"task\": {\"type\": \"index_lookup\"}}", SRC ": task.type \"index_lookup\" needs model.attention.causal true");
    EXPECT_FAIL("{\"name\": 5}", SRC ": name: expected a string, got 5");
    EXPECT_FAIL("{\"model\": 5}", SRC ": model: expected an object, got 5");
    EXPECT_FAIL("{\"model\": {\"attention\": \"softmax\"}}",
                SRC ": model.attention: expected an object, got a string (\"softmax\")");
    EXPECT_FAIL("{\"model\": {\"d_model\": {}}}", SRC ": model.d_model: expected an integer, got an object");
}

static void test_range_errors(void) {
    EXPECT_FAIL("{\"train\": {\"lr\": -0.01}}", SRC ": train.lr: must be > 0, got -0.01");
    EXPECT_FAIL("{\"train\": {\"lr\": 0}}", SRC ": train.lr: must be > 0, got 0");
    EXPECT_FAIL("{\"train\": {\"lr\": 1e-50}}", SRC ": train.lr: must be > 0, got 1e-50");   /* float 0 */
    EXPECT_FAIL("{\"train\": {\"lr\": 1e39}}", SRC ": train.lr: must be within the float range");
    EXPECT_FAIL("{\"model\": {\"dropout\": 1}}", SRC ": model.dropout: must be in [0, 1), got 1");
    EXPECT_FAIL("{\"model\": {\"dropout\": -0.1}}", SRC ": model.dropout: must be in [0, 1), got -0.1");
    EXPECT_FAIL("{\"train\": {\"beta1\": 1}}", SRC ": train.beta1: must be in [0, 1), got 1");
    EXPECT_FAIL("{\"train\": {\"beta2\": 1.5}}", SRC ": train.beta2: must be in [0, 1), got 1.5");
    EXPECT_FAIL("{\"model\": {\"attention\": {\"beta\": 0}}}", SRC ": model.attention.beta: must be > 0, got 0");
    EXPECT_FAIL("{\"task\": {\"seq_len\": 1}}", SRC ": task.seq_len: must be in [2, 65536], got 1");
    EXPECT_FAIL("{\"task\": {\"seq_len\": 65537}}", SRC ": task.seq_len: must be in [2, 65536], got 65537");
    EXPECT_FAIL("{\"model\": {\"n_heads\": 0}}", SRC ": model.n_heads: must be in [1, 65536], got 0");
    EXPECT_FAIL("{\"train\": {\"batch_size\": 0}}", SRC ": train.batch_size: must be in [1, 1048576], got 0");
    EXPECT_FAIL("{\"train\": {\"threads\": 65}}", SRC ": train.threads: must be in [0, 64], got 65");
    EXPECT_FAIL("{\"train\": {\"steps\": 0}}", SRC ": train.steps: must be >= 1, got 0");
    EXPECT_FAIL("{\"train\": {\"steps\": 3e9}}", SRC ": train.steps: must be <= 2147483647 (the int range), got 3000000000");
    EXPECT_FAIL("{\"eval\": {\"every\": 0}}", SRC ": eval.every: must be >= 1, got 0");
    EXPECT_FAIL("{\"eval\": {\"stop_at_error\": 1.5}}", SRC ": eval.stop_at_error: must be <= 1, got 1.5");
    EXPECT_FAIL("{\"eval\": {\"stop_metric\": \"sequence\"}}",
                SRC ": eval.stop_metric: expected one of \"token\", \"seq\"; got \"sequence\"");
    EXPECT_FAIL("{\"seed\": -1}", SRC ": seed: must be in [0, 9007199254740992], got -1");
    EXPECT_FAIL("{\"name\": \"my run\"}", SRC ": name: must be 1-127 characters of A-Z a-z 0-9 . _ - +",
                "got a string (\"my run\")");
    EXPECT_FAIL("{\"name\": \"../x\"}", SRC ": name: must be 1-127 characters");
    EXPECT_FAIL("{\"name\": \"\"}", SRC ": name: must be 1-127 characters");
    EXPECT_FAIL("{\"name\": \"a\\nb\"}", SRC ": name: must be 1-127 characters", "got a string (\"a?b\")");
    char json[300];
    snprintf(json, sizeof json, "{\"name\": \"%0128d\"}", 0);
    EXPECT_FAIL(json, SRC ": name: must be 1-127 characters");
    snprintf(json, sizeof json, "{\"name\": \"%0127d\"}", 0);
    Config c = parse_ok(json);
    CHECK(strlen(c.name) == 127, "127-character name kept");
}

static void test_consistency_errors(void) {
    EXPECT_FAIL("{\"model\": {\"d_model\": 60, \"n_heads\": 8}}",
                SRC ": model.d_model (60) must be divisible by model.n_heads (8)");
    EXPECT_FAIL("{\"train\": {\"schedule\": \"warmup_linear\", \"warmup_steps\": 2000, \"steps\": 1000}}",
                SRC ": train.warmup_steps (2000) must be <= train.steps (1000)");
    EXPECT_FAIL("{\"train\": {\"schedule\": \"warmup_cosine\", \"lr\": 0.001, \"min_lr\": 0.01}}",
                SRC ": train.min_lr (0.01) must be <= train.lr (0.001)");
    EXPECT_FAIL("{\"train\": {\"warmup_steps\": 10}}",
                SRC ": train.warmup_steps (10) has no effect with train.schedule \"constant\"");
    EXPECT_FAIL("{\"train\": {\"min_lr\": 0.0001}}",
                SRC ": train.min_lr (0.0001) has no effect with train.schedule \"constant\"");
    EXPECT_FAIL("{\"task\": {\"modulus\": 2}}", SRC ": task.modulus must be >= 3 for task.type \"match2\", got 2");
    EXPECT_FAIL("{\"train\": {\"length_groups\": 4}, \"model\": {\"dropout\": 0.1, \"attention\": {\"causal\": true}}}",
                SRC ": train.length_groups (4) needs model.dropout 0, got 0.1 (the groups reorder the rows, whose "
                    "places draw the dropout masks)");
    EXPECT_FAIL("{\"train\": {\"length_groups\": 4}}",
                SRC ": train.length_groups (4) needs a causal model (a bidirectional one reads the padding the "
                    "groups cut): set model.attention.causal to true, or train.length_groups to 1");
    EXPECT_FAIL("{\"train\": {\"length_groups\": 0}}", SRC ": train.length_groups");
    EXPECT_FAIL("{\"model\": {\"attention\": {\"type\": \"sparse\"}}}",
                SRC ": model.attention.type \"sparse\" is causal by definition");
    EXPECT_FAIL("{\"model\": {\"attention\": {\"type\": \"sparse\", \"causal\": true, \"block\": 4, \"summary\": 5}}}",
                SRC ": model.attention.summary (5) must be <= model.attention.block (4)");
    /* Keys of another model type or attention type are reported, not ignored. */
    EXPECT_FAIL("{\"model\": {\"type\": \"lstm\", \"n_heads\": 2}}",
                SRC ": model.n_heads: not valid for model.type \"lstm\"");
    EXPECT_FAIL("{\"model\": {\"attention\": {\"feature\": \"relu\"}}}",
                SRC ": model.attention.feature: not valid for model.attention.type \"softmax\"");
    EXPECT_FAIL("{\"model\": {\"type\": \"mamba\", \"n_heads\": 2}}",
                SRC ": model.n_heads: not valid for model.type \"mamba\"");
    EXPECT_FAIL("{\"model\": {\"mamba\": {\"d_state\": 8}}}",
                SRC ": model.mamba: not valid for model.type \"transformer\" (only for \"mamba\")");
    Config mb = parse_ok("{\"model\": {\"type\": \"mamba\", \"d_model\": 60, \"mamba\": {\"d_state\": 8, "
                         "\"expand\": 3, \"d_conv\": 2, \"dt_rank\": 5}}}");
    CHECK(mb.model.type == MODEL_MAMBA && mb.model.mamba.d_state == 8 && mb.model.mamba.expand == 3 &&
          mb.model.mamba.d_conv == 2 && mb.model.mamba.dt_rank == 5, "mamba keys");
    Config md = parse_ok("{\"model\": {\"type\": \"mamba\"}}");
    CHECK(md.model.mamba.d_state == 16 && md.model.mamba.expand == 2 && md.model.mamba.d_conv == 4 &&
          md.model.mamba.dt_rank == 0, "mamba defaults (the reference's)");
    Config l = parse_ok("{\"model\": {\"type\": \"lstm\", \"d_model\": 60}}");
    CHECK(l.model.type == MODEL_LSTM && l.model.d_model == 60, "lstm ignores the head-divisibility rule");
    Config s = parse_ok("{\"model\": {\"attention\": {\"type\": \"linear\", \"feature\": \"identity\"}}}");
    CHECK(s.model.attention.type == ATTN_LINEAR && s.model.attention.feature == FEATURE_IDENTITY, "linear attention keys");
    /* Key order does not matter: n_heads may come before d_model. */
    Config c = parse_ok("{\"model\": {\"n_heads\": 8, \"d_model\": 64}, "
                        "\"train\": {\"steps\": 10, \"warmup_steps\": 10, \"schedule\": \"warmup_linear\"}}");
    CHECK(c.model.n_heads == 8 && c.train.warmup_steps == 10, "order-independent");
    /* Fine-tuning cells: one LxZ for every distilled layer, or one per layer. */
    Config f = parse_ok("{\"model\": {\"n_layers\": 2}, \"distill\": {\"finetune_cells\": \"8x1+4x2,2x1\", "
                        "\"finetune_steps\": 100}}");
    CHECK(!strcmp(f.distill.finetune_cells, "8x1+4x2,2x1") && f.distill.finetune_steps == 100, "finetune cells");
    EXPECT_FAIL("{\"model\": {\"n_layers\": 3}, \"distill\": {\"finetune_cells\": \"8x1+4x2\"}}",
                SRC ": distill.finetune_cells \"8x1+4x2\": cell 1 has 2 '+'-joined layers for 3 distilled layers");
    Config d = parse_ok("{}");
    CHECK(d.distill.finetune_steps == 0 && !strcmp(d.distill.finetune_cells, "auto") &&
          d.distill.finetune_params == FINETUNE_EXCEPT_QK && d.distill.finetune_hashes == FINETUNE_FIXED,
          "fine-tuning is off by default");
}

/* Rules that once failed only after training, or inside a generator: the k-hop test
 * hop count, the distill section against the model, empty paths. */
static void test_run_rules(void) {
    const char *khop = "{\"task\": {\"type\": \"khop\", \"min_hops\": 1, \"max_hops\": 3, \"test_hops\": %d}}";
    char json[256];
    for (int h = -1; h <= 4; h++) {
        snprintf(json, sizeof json, khop, h);
        Config c;
        AlError e = { 0 };
        int ok = h == -1 || (h >= 1 && h <= 3);
        CHECK((cfg_parse(&c, json, SRC, &e) == 0) == ok, "test_hops %d: %s", h, ok ? e.msg : "accepted");
    }
    EXPECT_FAIL("{\"task\": {\"type\": \"khop\", \"min_hops\": 1, \"max_hops\": 3, \"test_hops\": 0}}",
                SRC ": task.test_hops (0) must be -1 or in [task.min_hops, task.max_hops] = [1, 3]");
    EXPECT_FAIL("{\"task\": {\"type\": \"file\", \"test_path\": \"\"}}", SRC ": task.test_path: must not be empty");

    /* Distillation: only checked against the model when it will run. */
    Config deep = parse_ok("{\"model\": {\"n_layers\": 9}}");
    CHECK(deep.model.n_layers == 9, "9 layers without distillation");
    parse_ok("{\"model\": {\"n_layers\": 9, \"attention\": {\"score\": \"unit_norm\"}}, \"distill\": {\"enabled\": true, \"layers\": \"0..7\"}}");
    parse_ok("{\"model\": {\"attention\": {\"type\": \"linear\"}}, \"distill\": {\"funcs\": \"1..10\"}}");
    EXPECT_FAIL("{\"model\": {\"n_layers\": 9, \"attention\": {\"score\": \"unit_norm\"}}, \"distill\": {\"enabled\": true}}",
                SRC ": distill.layers \"all\" selects 9 layers (model.n_layers is 9), more than the 8");
    EXPECT_FAIL("{\"model\": {\"type\": \"lstm\"}, \"distill\": {\"enabled\": true}}",
                SRC ": distill.enabled: ANNA replaces softmax attention, but model.type is \"lstm\"");
    parse_ok("{\"model\": {\"attention\": {\"score\": \"unit_norm\"}}, \"distill\": {\"enabled\": true, \"family\": \"crosspolytope\", \"funcs\": \"1..9\"}}");
    EXPECT_FAIL("{\"model\": {\"attention\": {\"score\": \"unit_norm\"}}, \"distill\": {\"enabled\": true, \"family\": \"crosspolytope\", \"funcs\": \"1..10\"}}",
                SRC ": distill.funcs \"1..10\": z = 10 is more than a crosspolytope table holds at d_head = 64 (at "
                "most 9: 7 bits per function");
    EXPECT_FAIL("{\"model\": {\"attention\": {\"score\": \"unit_norm\"}}, \"distill\": {\"enabled\": true, \"family\": \"crosspolytope\", \"finetune_steps\": 5, "
                "\"finetune_cells\": \"2x12\"}}", SRC ": distill.finetune_cells \"2x12\": z = 12 is more than");
    EXPECT_FAIL("{\"model\": {\"d_model\": 65536}, \"distill\": {\"family\": \"crosspolytope\", "
                "\"tables\": \"4096\", \"funcs\": \"3\"}}",
                SRC ": distill.tables \"4096\": 4096 tables x 3 functions at d_head = 65536 need more than 2^31 hash "
                "parameters (3 sign vectors of d_head padded to a power of two each");
    /* Checked whether or not distillation is enabled (./train distill reads the section too). */
    EXPECT_FAIL("{\"distill\": {\"family\": \"crosspolytope\", \"funcs\": \"1..10\"}}",
                SRC ": distill.funcs \"1..10\": z = 10 is more than a crosspolytope table holds");
    EXPECT_FAIL("{\"distill\": {\"last_dim\": 8}}",
                SRC ": distill.last_dim (8) applies to distill.family \"crosspolytope\" only");
    EXPECT_FAIL("{\"distill\": {\"family\": \"crosspolytope\", \"last_dim\": 65}}",
                SRC ": distill.last_dim (65) must be in [1, 64] (d_head = 64 padded to a power of two)");
    parse_ok("{\"distill\": {\"family\": \"crosspolytope\", \"last_dim\": 64}}");
    parse_ok("{\"model\": {\"d_model\": 48}, \"distill\": {\"family\": \"crosspolytope\", \"last_dim\": 64}}");
    /* ANNA hashes directions: a distilled surrogate must have unit-norm scores. */
    EXPECT_FAIL("{\"distill\": {\"enabled\": true}}",
                SRC ": model.attention.score: distillation into ANNA (distill.enabled) needs \"unit_norm\"", "but it is \"dot\"");
    parse_ok("{\"distill\": {\"enabled\": false}}");
    /* The whole section is checked in one pass, after every --set. */
    Config c;
    cfg_defaults(&c);
    AlError e = { 0 };
    const char *sets[] = { "model.attention.score=unit_norm", "distill.enabled=true", "model.n_layers=9" };
    CHECK(cfg_set_all(&c, sets, 3, SRC, &e) == 2 && starts_with(e.msg, "--set model.n_layers=9: distill.layers"),
          "distill after --set: %s", e.msg);
}

/* --- overrides ------------------------------------------------------------ */

static void test_overrides(void) {
    Config c;
    cfg_defaults(&c);
    AlError e = { 0 };
    int rc = cfg_set(&c, "model.d_model=128", &e)
          || cfg_set(&c, "train.lr=3e-4", &e)
          || cfg_set(&c, "model.attention.causal=true", &e)
          || cfg_set(&c, "model.activation=gelu_erf", &e)          /* bare string */
          || cfg_set(&c, "train.optimizer=\"adamw\"", &e)          /* JSON string */
          || cfg_set(&c, "name=2024", &e)                          /* string keys keep the text */
          || cfg_set(&c, " train.steps = 77 ", &e)                 /* spaces around */
          || cfg_set(&c, "model={\"n_heads\": 4, \"n_layers\": 2}", &e);  /* a whole object */
    CHECK(rc == 0, "overrides failed: %s", e.msg);
    CHECK(c.model.d_model == 128 && c.train.lr == 3e-4f && c.model.attention.causal == 1 &&
          c.model.activation == ACT_GELU_ERF && !strcmp(c.train.optimizer, "adamw") &&
          !strcmp(c.name, "2024") && c.train.steps == 77 && c.model.n_heads == 4 && c.model.n_layers == 2,
          "override values");
    CHECK(c.model.mlp_ratio == 4, "an object override keeps the keys it does not name");

    EXPECT_SET_FAIL("model.d_model", "--set model.d_model: missing '=' (write --set key.path=value");
    EXPECT_SET_FAIL("=3", "--set =3: missing the key path before '='");
    EXPECT_SET_FAIL("model.attention.bta=2", "unknown key 'model.attention.bta' (did you mean 'model.attention.beta'?)");
    EXPECT_SET_FAIL("model.atention.beta=2", "unknown key 'model.atention.beta' (did you mean 'model.attention.beta'?)");
    EXPECT_SET_FAIL("model.causal=true", "unknown key 'model.causal' (did you mean 'model.attention.causal'?)");
    EXPECT_SET_FAIL("model.d_model.x=1", "unknown key 'model.d_model.x' ('model.d_model' has no sub-keys)");
    EXPECT_SET_FAIL("model.d_model=abc", "--set model.d_model=abc: model.d_model: expected an integer, got a string (\"abc\")");
    EXPECT_SET_FAIL("model.d_model=", "model.d_model: expected an integer, got a string (\"\")");
    EXPECT_SET_FAIL("train.lr=-0.01", "--set train.lr=-0.01: train.lr: must be > 0, got -0.01");
    EXPECT_SET_FAIL("model.positional=learnt", "(did you mean \"learned\"?)");
    EXPECT_SET_FAIL("model.attention.causal=yes", "expected true or false, got a string (\"yes\")");
    EXPECT_SET_FAIL("model={\"n_head\": 4}", "unknown key 'model.n_head' (did you mean 'model.n_heads'?)");
    EXPECT_SET_FAIL("model=4", "model: expected an object, got 4");
    EXPECT_SET_FAIL("model.n_heads=7", "--set model.n_heads=7: model.d_model (64) must be divisible by model.n_heads (7)");
}

/* cfg_load: overrides apply after the file; consistency is checked once, at the
 * end, and blamed on the override that set one of the keys involved. */
static void test_load_with_overrides(void) {
    const char *json = "{\"model\": {\"d_model\": 64, \"n_heads\": 8}, \"train\": {\"steps\": 100}}";
    char path[512], want[600];
    write_temp(path, sizeof path, json, strlen(json));
    Config c;
    AlError e = { 0 };

    const char *ok[] = { "train.lr=0.01", "model.n_heads=4", "train.steps=200" };
    int rc = cfg_load(&c, path, ok, 3, &e);
    CHECK(rc == 0 && c.train.lr == 0.01f && c.model.n_heads == 4 && c.train.steps == 200 && c.model.d_model == 64,
          "load + overrides: %s", e.msg);

    const char *breaks[] = { "train.lr=0.01", "model.d_model=60", "train.steps=5" };
    e = (AlError){ 0 };
    rc = cfg_load(&c, path, breaks, 3, &e);
    CHECK(rc == 2 && !strcmp(e.msg, "--set model.d_model=60: model.d_model (60) must be divisible by model.n_heads (8)"),
          "blame the override: %s", e.msg);

    /* Overriding the whole object is also blamed. */
    const char *obj[] = { "model={\"n_heads\": 7}" };
    e = (AlError){ 0 };
    rc = cfg_load(&c, path, obj, 1, &e);
    CHECK(rc == 2 && starts_with(e.msg, "--set model={\"n_heads\": 7}: model.d_model (64) must be divisible"),
          "blame the object override: %s", e.msg);

    /* Two overrides that are inconsistent one at a time but fine together. */
    const char *pair[] = { "model.d_model=60", "model.n_heads=6" };
    e = (AlError){ 0 };
    rc = cfg_load(&c, path, pair, 2, &e);
    CHECK(rc == 0 && c.model.d_model == 60 && c.model.n_heads == 6, "checked at the end: %s", e.msg);

    const char *typo[] = { "train.stpes=10" };
    e = (AlError){ 0 };
    rc = cfg_load(&c, path, typo, 1, &e);
    CHECK(rc == 2 && !strcmp(e.msg, "--set train.stpes=10: unknown key 'train.stpes' (did you mean 'train.steps'?)"),
          "override typo: %s", e.msg);
    unlink(path);

    /* A file that is inconsistent on its own can be fixed from the command line;
     * if the overrides do not touch the keys involved, the file is blamed. */
    const char *bad = "{\"model\": {\"d_model\": 60, \"n_heads\": 8}}";
    write_temp(path, sizeof path, bad, strlen(bad));
    const char *fix[] = { "model.n_heads=4" };
    e = (AlError){ 0 };
    rc = cfg_load(&c, path, fix, 1, &e);
    CHECK(rc == 0 && c.model.n_heads == 4, "override fixes the file: %s", e.msg);
    const char *other[] = { "train.lr=0.01" };
    e = (AlError){ 0 };
    rc = cfg_load(&c, path, other, 1, &e);
    snprintf(want, sizeof want, "%s: model.d_model (60) must be divisible by model.n_heads (8)", path);
    CHECK(rc == 2 && !strcmp(e.msg, want), "blame the file: %s", e.msg);
    unlink(path);
}

int main(void) {
    test_defaults();
    test_round_trip();
    test_to_json_format();
    test_syntax_errors();
    test_file_errors();
    test_unknown_keys();
    test_conditional_keys();
    test_duplicate_keys();
    test_type_errors();
    test_range_errors();
    test_consistency_errors();
    test_run_rules();
    test_overrides();
    test_load_with_overrides();
    return check_exit("test_config");
}
