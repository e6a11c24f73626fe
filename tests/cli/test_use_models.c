/* test_use_models.c — `./train eval`, `generate` and `inspect` (issue 19) on runs
 * trained here (tiny: a chain-of-thought arithmetic run, causal; a Match2 run,
 * bidirectional):
 *   - eval of a run's test set repeats the final figures of its summary.json
 *     exactly, and eval --data of that test set written as JSONL gives the same
 *     accuracies;
 *   - every generated token is the argmax of the teacher-forced logits of the row
 *     generated so far (so where the model is right, generation equals teacher
 *     forcing), and --prompt / --data run;
 *   - inspect's maps: rows sum to 1 (softmax), nothing above the diagonal of a causal
 *     model, the capture leaves the logits bit-identical, and the maps equal
 *     python/attnlab_torch.py's to 1e-5 (that part skipped without torch);
 *   - inspect --anna: each distilled layer's collision counts are whole numbers in
 *     [0, ℓ] (nothing above the diagonal of a causal model) and its weights are
 *     the counts over their row total, rows summing to 1 or 0 (anna_weights × V =
 *     ANNA's output is tests/anna/test_anna_map.c's); --anna best reads a grid's
 *     anna_summary.json (--grid); a bad cell is refused with a clear message;
 *   - a bidirectional model refuses to generate;
 *   - eval --seq-len N of an Eq-one run: at the run's own N its summary's figures,
 *     at a shorter N the figures of eval --data on the test set that a config of that
 *     N builds (written as JSONL here), named and stored as eval_nN.json; refused with
 *     a clear message where the rows outgrow the model, the length has no meaning
 *     (arith), the vocabulary changes with it (index lookup) or --data is given;
 *   - eval --by-position (an arithmetic run, single-label, and an Eq-ncp run,
 *     multi-label): each position's figures are evaluate()'s on the test set with
 *     every other position's target masked out, and the rest is summary.json's. */
#include "check.h"
#include "testutil.h"
#include "attnlab/anna/distill.h"
#include "attnlab/cli/use.h"
#include "attnlab/data/jsonl.h"
#include "attnlab/io/safetensors.h"
#include "attnlab/nn/decode.h"
#include "attnlab/train/evaluate.h"
#include "attnlab/train/runload.h"
#include "attnlab/train/trainer.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define PYTHON "/usr/bin/python3"

static char tmp[256];

static const char ARITH[] =
    "{\"name\": \"use\", \"seed\": 3, \"task\": {\"type\": \"arith\", \"n_ops\": 1, \"modulus\": 5, \"train_size\": 40},\n"
    " \"model\": {\"d_model\": 16, \"n_layers\": 2, \"n_heads\": 2, \"positional\": \"learned\",\n"
    "           \"attention\": {\"causal\": true}},\n"
    " \"train\": {\"batch_size\": 8, \"steps\": 60, \"lr\": 0.01, \"threads\": 1}, \"eval\": {\"every\": 30, \"test_size\": 12}}\n";
static const char MATCH2[] =
    "{\"name\": \"m2\", \"task\": {\"type\": \"match2\", \"seq_len\": 8, \"modulus\": 7, \"train_size\": 32},\n"
    " \"model\": {\"d_model\": 8, \"attention\": {\"score\": \"unit_norm\", \"beta\": 2}},\n"
    " \"train\": {\"steps\": 20, \"batch_size\": 4, \"threads\": 1}, \"eval\": {\"every\": 10, \"test_size\": 8}}\n";

static int train(const char *name, const char *text, char *dir) {
    char cfg[300];
    snprintf(cfg, sizeof cfg, "%s/%s.json", tmp, name);
    snprintf(dir, 300, "%s/%s", tmp, name);
    CHECK(tu_write_file(cfg, text) == 0, "cannot write %s", cfg);
    TrainOptions o = { .config_path = cfg, .out_dir = dir, .quiet = 1 };
    AlError err = {0};
    int rc = train_run(&o, &err);
    CHECK(rc == 0, "training %s failed: %s", name, err.msg);
    return rc;
}

static int run(int (*cmd)(int, char **, AlError *), char **argv, int argc, AlError *err) {
    memset(err, 0, sizeof *err);
    fflush(stdout);
    return cmd(argc, argv, err);
}

static cJSON *read_json(const char *path) {
    char *text = tu_read_file(path, NULL);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    CHECK(j != NULL, "cannot read %s", path);
    return j;
}

/* Every metric under summary (its "test_*" keys at the top, all of a nested
 * object such as test_group_token_acc), exactly; how many were compared. */
static int compare_metrics(const cJSON *summary, const cJSON *eval, const char *what, int top) {
    int n = 0;
    for (const cJSON *s = summary->child; s; s = s->next) {
        if (top && (strncmp(s->string, "test_", 5) || !strcmp(s->string, "test_sequences"))) continue;
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(eval, s->string);
        n++;
        if (cJSON_IsObject(s)) {
            CHECK(cJSON_IsObject(e), "%s: no object %s", what, s->string);
            if (cJSON_IsObject(e)) n += compare_metrics(s, e, what, 0);
            continue;
        }
        CHECK(cJSON_IsNumber(e) && e->valuedouble == s->valuedouble, "%s: %s is %.17g, summary.json has %.17g", what,
              s->string, e ? e->valuedouble : NAN, s->valuedouble);
    }
    return n;
}

static void same_metrics(const cJSON *summary, const cJSON *eval, const char *what) {
    CHECK(compare_metrics(summary, eval, what, 1) >= 1, "%s: no test metrics compared", what);
}

static void test_eval(const char *dir) {
    char out[400], data[400], out2[400], *argv[8];
    AlError err;
    snprintf(out, sizeof out, "%s/eval.json", tmp);
    argv[0] = "eval", argv[1] = (char *)dir, argv[2] = "--out", argv[3] = out;
    CHECK(run(cli_eval, argv, 4, &err) == 0, "eval: %s", err.msg);
    cJSON *summary = read_json(tu_path(dir, "summary.json")), *e = read_json(out);
    CHECK(cJSON_GetObjectItem(e, "test_answer_acc") != NULL, "eval of a chain-of-thought run has no answer_acc");
    same_metrics(summary, e, "eval");
    /* The test set as a file: the same rows, so the same accuracies. */
    LoadedRun r;
    CHECK(runload_open(&r, dir, NULL, 0, &err) == 0, "runload_open: %s", err.msg);
    snprintf(data, sizeof data, "%s/test.jsonl", tmp);
    CHECK(jsonl_write(data, &r.data.test, JSONL_COT, &err) == 0, "jsonl_write: %s", err.msg);
    runload_close(&r);
    snprintf(out2, sizeof out2, "%s/eval_file.json", tmp);
    argv[4] = "--data", argv[5] = data, argv[2] = "--out", argv[3] = out2;
    CHECK(run(cli_eval, argv, 6, &err) == 0, "eval --data: %s", err.msg);
    cJSON *f = read_json(out2);
    static const char *const KEYS[] = { "test_token_acc", "test_seq_acc", "test_answer_acc" };
    for (int i = 0; i < 3; i++)
        CHECK(cJSON_GetObjectItem(f, KEYS[i]) &&
              cJSON_GetObjectItem(f, KEYS[i])->valuedouble == cJSON_GetObjectItem(e, KEYS[i])->valuedouble,
              "eval --data of the test set: %s differs", KEYS[i]);
    cJSON_Delete(summary);
    cJSON_Delete(e);
    cJSON_Delete(f);
}

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Each generated token = argmax of the teacher-forced logits before it. */
static void test_generate_is_argmax(const char *dir) {
    LoadedRun r;
    AlError err = {0};
    CHECK(runload_open(&r, dir, NULL, 0, &err) == 0, "runload_open: %s", err.msg);
    Dataset w;
    runload_widen(&r, &r.data.test, &w);
    Model *m = r.model;
    int T = w.seq_len, C = m->n_classes, checked = 0, right_rows = 0;
    Decoder *dec = decoder_create(m, 1);
    Arena arena;
    Tape tape;
    arena_init(&arena, 1u << 20);
    tape_init(&tape, &arena);
    tape.grad_enabled = 0;
    for (int i = 0; i < w.n; i++) {
        int *row = dataset_tokens(&w, i), prompt = w.info[i].prompt_len, len, gen[4096];
        memcpy(gen, row, (size_t)T * sizeof(int));
        decoder_greedy(dec, 1, gen, &prompt, r.data.gen.eos_id, &len);
        tape_reset(&tape);
        const Tensor *lg = model_forward(m, &tape, gen, 1, len);
        for (int p = prompt; p < len; p++, checked++)
            CHECK(gen[p] == argmax(lg->data + (size_t)(p - 1) * C, C), "row %d position %d: generated %d, "
                  "teacher-forced argmax %d", i, p, gen[p], argmax(lg->data + (size_t)(p - 1) * C, C));
        right_rows += len == w.info[i].len && !memcmp(gen, row, (size_t)len * sizeof(int));
    }
    printf("generate: %d tokens checked against teacher forcing; %d of %d rows generated exactly\n", checked,
           right_rows, w.n);
    CHECK(checked > 0, "nothing generated");
    tape_free(&tape);
    arena_free(&arena);
    decoder_free(dec);
    dataset_free(&w);
    runload_close(&r);
}

static void test_generate_commands(const char *dir, const char *m2) {
    char data[400], *argv[6];
    AlError err;
    snprintf(data, sizeof data, "%s/test.jsonl", tmp);
    argv[0] = "generate", argv[1] = (char *)dir, argv[2] = "--prompt", argv[3] = "1 + 2 =";
    CHECK(run(cli_generate, argv, 4, &err) == 0, "generate --prompt: %s", err.msg);
    argv[2] = "--data", argv[3] = data;
    CHECK(run(cli_generate, argv, 4, &err) == 0, "generate --data: %s", err.msg);
    argv[1] = (char *)m2;
    CHECK(run(cli_generate, argv, 2, &err) == 2 && strstr(err.msg, "cannot generate"),
          "generate on a bidirectional model: %s", err.msg);
}

/* Rows of every map sum to 1; causal: zero above the diagonal. */
static void check_maps(const char *path, const char *ex, int L, int causal) {
    AlError err = {0};
    StFile *f = st_open(path, &err);
    CHECK(f != NULL, "%s", err.msg);
    if (!f) return;
    char name[64];
    snprintf(name, sizeof name, "%s.tokens", ex);
    int k = st_find(f, name);
    CHECK(k >= 0, "%s: no %s", path, name);
    int T = k >= 0 ? (int)st_info(f, k)->shape[0] : 0;
    for (int l = 0; l < L && T; l++) {
        snprintf(name, sizeof name, "%s.layer%d", ex, l);
        int i = st_find(f, name);
        CHECK(i >= 0 && st_info(f, i)->ndim == 3, "%s: no %s (H, T, T)", path, name);
        if (i < 0) continue;
        const int64_t *sh = st_info(f, i)->shape;
        float *w = malloc((size_t)(sh[0] * sh[1] * sh[2]) * sizeof(float));
        CHECK(st_read_f32(f, name, 3, sh, w, &err) == 0, "%s", err.msg);
        for (int64_t row = 0; row < sh[0] * sh[1]; row++) {
            double sum = 0;
            for (int64_t j = 0; j < sh[2]; j++) {
                sum += w[row * sh[2] + j];
                if (causal && j > row % sh[1]) CHECK(w[row * sh[2] + j] == 0, "%s: key %ld after query %ld", name, (long)j, (long)(row % sh[1]));
            }
            CHECK(fabs(sum - 1) < 1e-5, "%s: row %ld sums to %.8f", name, (long)row, sum);
        }
        free(w);
    }
    st_close(f);
}

static int have_torch(void) { return system(PYTHON " -c 'import torch' >/dev/null 2>&1") == 0; }

static void torch_maps(const char *dir, const char *maps) {
    char cmd[1200], out[400];
    snprintf(out, sizeof out, "%s/maps.txt", tmp);
    snprintf(cmd, sizeof cmd, PYTHON " python/attnlab_torch.py maps '%s' '%s' > '%s' 2>&1", dir, maps, out);
    int status = system(cmd);
    char *text = tu_read_file(out, NULL);
    printf("%s", text ? text : "");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0 && text && strstr(text, "maps ok"),
          "python/attnlab_torch.py maps %s: %s", dir, text ? text : "(no output)");
    free(text);
}

/* The capture reads q and k beside the ops: logits bit for bit as without it. */
static void on_map(void *ctx, int layer, int b, int head, int T, const double *w) {
    (void)layer, (void)b, (void)head, (void)T, (void)w;
    ++*(int *)ctx;
}

static void test_capture_is_free(const char *dir) {
    LoadedRun r;
    AlError err = {0};
    CHECK(runload_open(&r, dir, NULL, 0, &err) == 0, "runload_open: %s", err.msg);
    Arena arena;
    Tape tape;
    arena_init(&arena, 1u << 20);
    tape_init(&tape, &arena);
    tape.grad_enabled = 0;
    int B = r.data.test.n, T = r.data.test.seq_len, calls = 0;
    size_t n = (size_t)B * T * r.model->n_classes;
    float *plain = malloc(n * sizeof(float));
    memcpy(plain, model_forward(r.model, &tape, r.data.test.tokens, B, T)->data, n * sizeof(float));
    ModelCapture cap = { on_map, &calls };
    r.model->capture = &cap;
    tape_reset(&tape);
    const Tensor *seen = model_forward(r.model, &tape, r.data.test.tokens, B, T);
    CHECK(!memcmp(plain, seen->data, n * sizeof(float)), "the capture changed the logits");
    CHECK(calls == B * r.model->cfg.n_layers * r.model->cfg.n_heads, "%d maps captured, expected %d", calls,
          B * r.model->cfg.n_layers * r.model->cfg.n_heads);
    r.model->capture = NULL;
    free(plain);
    tape_free(&tape);
    arena_free(&arena);
    runload_close(&r);
}

static void test_inspect(const char *dir, const char *m2, int torch) {
    char out[400], out2[400], maps[500], *argv[6];
    AlError err;
    snprintf(out, sizeof out, "%s/inspect_arith", tmp);
    argv[0] = "inspect", argv[1] = (char *)dir, argv[2] = "--example", argv[3] = "2", argv[4] = "--out", argv[5] = out;
    CHECK(run(cli_inspect, argv, 6, &err) == 0, "inspect: %s", err.msg);
    snprintf(maps, sizeof maps, "%s/attention.safetensors", out);
    check_maps(maps, "ex2", 2, 1);
    struct stat st;
    CHECK(stat(tu_path(out, "ex2_layer1_head1.svg"), &st) == 0, "no ex2_layer1_head1.svg");
    char *tsv = tu_read_file(tu_path(out, "predictions.tsv"), NULL);
    CHECK(tsv && !strncmp(tsv, "example\tposition\ttoken", 22), "predictions.tsv has no header");
    free(tsv);
    if (torch) torch_maps(dir, maps);
    snprintf(out2, sizeof out2, "%s/inspect_m2", tmp);
    argv[1] = (char *)m2, argv[2] = "--out", argv[3] = out2;
    CHECK(run(cli_inspect, argv, 4, &err) == 0, "inspect match2: %s", err.msg);
    snprintf(maps, sizeof maps, "%s/attention.safetensors", out2);
    check_maps(maps, "ex0", 1, 0);
    if (torch) torch_maps(m2, maps);
}

/* ex.layerL.anna_counts and .anna_weights of the file: counts whole in [0, tables],
 * weights = counts / row total (or 0). */
static void check_anna_maps(const char *path, const char *ex, int layer, int tables, int causal) {
    AlError err = {0};
    StFile *f = st_open(path, &err);
    CHECK(f != NULL, "%s", err.msg);
    if (!f) return;
    char cn[64], wn[64];
    snprintf(cn, sizeof cn, "%s.layer%d.anna_counts", ex, layer);
    snprintf(wn, sizeof wn, "%s.layer%d.anna_weights", ex, layer);
    int ci = st_find(f, cn), wi = st_find(f, wn);
    CHECK(ci >= 0 && wi >= 0 && st_info(f, ci)->ndim == 3, "%s: no %s / %s (H, T, T)", path, cn, wn);
    if (ci < 0 || wi < 0) return st_close(f);
    const int64_t *sh = st_info(f, ci)->shape;
    int64_t rows = sh[0] * sh[1], T = sh[2];
    float *c = malloc((size_t)(rows * T) * sizeof(float)), *w = malloc((size_t)(rows * T) * sizeof(float));
    CHECK(st_read_f32(f, cn, 3, sh, c, &err) == 0 && st_read_f32(f, wn, 3, sh, w, &err) == 0, "%s", err.msg);
    int bad = 0, hits = 0;
    for (int64_t row = 0; row < rows; row++) {
        double total = 0, sum = 0;
        for (int64_t j = 0; j < T; j++) {
            float x = c[row * T + j];
            bad += x != floorf(x) || x < 0 || x > tables || (causal && j > row % T && x != 0);
            total += x;
        }
        for (int64_t j = 0; j < T; j++) {
            sum += w[row * T + j];
            if (fabs(w[row * T + j] - (total ? c[row * T + j] / total : 0)) > 1e-6) bad++;
        }
        hits += total > 0;
        CHECK(fabs(sum - (total ? 1 : 0)) < 1e-5, "%s: row %ld sums to %.8f", wn, (long)row, sum);
    }
    CHECK(!bad, "%s: %d counts not whole in [0, %d], or weights not counts / row total", cn, bad, tables);
    CHECK(hits > 0, "%s: no query collided with anything", cn);
    free(c);
    free(w);
    st_close(f);
}

/* ex0.layer0.anna_counts of DIR/attention.safetensors (malloc'ed; *n its length). */
static float *anna_counts(const char *dir, long *n) {
    AlError err = {0};
    StFile *f = st_open(tu_path(dir, "attention.safetensors"), &err);
    int i = f ? st_find(f, "ex0.layer0.anna_counts") : -1;
    float *x = NULL;
    *n = 0;
    if (i >= 0) {
        const StInfo *info = st_info(f, i);
        *n = 1;
        for (int d = 0; d < info->ndim; d++) *n *= (long)info->shape[d];
        x = malloc((size_t)*n * sizeof *x);
        if (st_read_f32(f, "ex0.layer0.anna_counts", info->ndim, info->shape, x, &err)) *n = 0;
    }
    st_close(f);
    CHECK(*n > 0, "no ex0.layer0.anna_counts in %s: %s", dir, err.msg);
    return x;
}

/* --grid DIR describes the draws of any cell inspected against it: a grid drawn
 * with another family and seed than the run's config gives, for its best cell
 * named explicitly, the same collision maps as --anna best (before, an explicit
 * cell was hashed as the config says); and a --draw past the grid's draws is
 * refused. */
static void test_inspect_grid_hashing(const char *m2, char **argv) {
    char grid[400], best[400], named[400], cell[64];
    AlError err;
    snprintf(grid, sizeof grid, "%s/m2_grid_cp", tmp);
    const char *sets[] = { "distill.tables=1..3", "distill.funcs=1..2", "distill.runs=2",
                           "distill.family=crosspolytope", "distill.seed=5" };
    CHECK(distill_main(m2, grid, sets, 5, 1, 0, &err) == 0, "distill (cross-polytope): %s", err.msg);
    cJSON *summary = read_json(tu_path(grid, "anna_summary.json"));
    const cJSON *b = cJSON_GetArrayItem(cJSON_GetObjectItem(summary, "best_cell"), 0);
    snprintf(cell, sizeof cell, "%d,%d", cJSON_GetObjectItem(b, "tables")->valueint,
             cJSON_GetObjectItem(b, "funcs")->valueint);
    CHECK(cJSON_GetObjectItem(summary, "seed") && cJSON_GetObjectItem(summary, "seed")->valueint == 5,
          "anna_summary.json does not record distill.seed");
    cJSON_Delete(summary);
    snprintf(best, sizeof best, "%s/inspect_cp_best", tmp);
    snprintf(named, sizeof named, "%s/inspect_cp_named", tmp);
    argv[0] = "inspect", argv[1] = (char *)m2, argv[2] = "--anna", argv[3] = "best", argv[4] = "--grid", argv[5] = grid;
    argv[6] = "--draw", argv[7] = "1", argv[8] = "--out", argv[9] = best;
    CHECK(run(cli_inspect, argv, 10, &err) == 0, "inspect --anna best (cross-polytope grid): %s", err.msg);
    argv[3] = cell, argv[9] = named;
    CHECK(run(cli_inspect, argv, 10, &err) == 0, "inspect --anna %s (cross-polytope grid): %s", cell, err.msg);
    long na, nb;
    float *a = anna_counts(best, &na), *c = anna_counts(named, &nb);
    CHECK(na == nb && a && c && !memcmp(a, c, (size_t)na * sizeof *a),
          "--anna %s --grid (its best cell) gives other collision maps than --anna best", cell);
    free(a);
    free(c);
    argv[7] = "2";
    CHECK(run(cli_inspect, argv, 10, &err) == 2 && strstr(err.msg, "--draw 2, but the grid draws 2 hash sets per cell") &&
          strstr(err.msg, "anna_summary.json"), "--draw past the grid's draws: %s", err.msg);
}

static void test_inspect_anna(const char *arith, const char *m2) {
    char out[400], grid[400], maps[500], *argv[10];
    AlError err;
    struct stat st;
    snprintf(out, sizeof out, "%s/inspect_anna", tmp);
    argv[0] = "inspect", argv[1] = (char *)arith, argv[2] = "--anna", argv[3] = "3,2;2,1", argv[4] = "--out", argv[5] = out;
    CHECK(run(cli_inspect, argv, 6, &err) == 0, "inspect --anna: %s", err.msg);
    snprintf(maps, sizeof maps, "%s/attention.safetensors", out);
    check_maps(maps, "ex0", 2, 1);
    check_anna_maps(maps, "ex0", 0, 3, 1);
    check_anna_maps(maps, "ex0", 1, 2, 1);
    CHECK(stat(tu_path(out, "ex0_layer1_head1_anna.svg"), &st) == 0, "no ex0_layer1_head1_anna.svg");
    /* a cell for one layer of two, and a cell out of range */
    argv[3] = "3,2";
    CHECK(run(cli_inspect, argv, 6, &err) == 2 && strstr(err.msg, "one \"L,Z\"") && strstr(err.msg, "it distils 2 layers"),
          "--anna 3,2 on two layers: %s", err.msg);
    argv[3] = "3,0;2,1";
    CHECK(run(cli_inspect, argv, 6, &err) == 2 && strstr(err.msg, "Z in 1..64"), "--anna 3,0;2,1: %s", err.msg);
    argv[3] = "best";
    CHECK(run(cli_inspect, argv, 6, &err) == 2 && strstr(err.msg, "anna_summary.json"), "--anna best, no grid: %s",
          err.msg);
    /* best of a small grid, its draw 1 */
    snprintf(grid, sizeof grid, "%s/m2_grid", tmp);
    const char *sets[] = { "distill.tables=1..3", "distill.funcs=1..2", "distill.runs=2" };
    CHECK(distill_main(m2, grid, sets, 3, 1, 0, &err) == 0, "distill: %s", err.msg);
    snprintf(out, sizeof out, "%s/inspect_anna_m2", tmp);
    argv[1] = (char *)m2, argv[2] = "--anna", argv[3] = "best", argv[4] = "--grid", argv[5] = grid;
    argv[6] = "--draw", argv[7] = "1", argv[8] = "--out", argv[9] = out;
    CHECK(run(cli_inspect, argv, 10, &err) == 0, "inspect --anna best: %s", err.msg);
    snprintf(maps, sizeof maps, "%s/attention.safetensors", out);
    check_anna_maps(maps, "ex0", 0, 3, 0);
    test_inspect_grid_hashing(m2, argv);
}

/* A run of each recurrent model type: eval gives summary.json's figures, generate
 * decodes through the recurrent state, inspect refuses (no attention maps).  A new
 * recurrent type: one more name here. */
static void test_recurrent_runs(void) {
    static const char *const TYPES[] = { "lstm", "dss", "retnet", "mamba" };
    for (size_t i = 0; i < sizeof TYPES / sizeof *TYPES; i++) {
        char name[64], text[1024], dir[300], out[400], *argv[6];
        AlError err;
        snprintf(name, sizeof name, "arith_%s", TYPES[i]);
        snprintf(text, sizeof text,
                 "{\"name\": \"%s\", \"seed\": 3, \"task\": {\"type\": \"arith\", \"n_ops\": 1, \"modulus\": 5, "
                 "\"train_size\": 40},\n \"model\": {\"type\": \"%s\", \"d_model\": 16, \"n_layers\": 1},\n"
                 " \"train\": {\"batch_size\": 8, \"steps\": 20, \"lr\": 0.01, \"threads\": 1}, "
                 "\"eval\": {\"every\": 20, \"test_size\": 12}}\n", name, TYPES[i]);
        if (train(name, text, dir)) continue;
        snprintf(out, sizeof out, "%s/%s_eval.json", tmp, name);
        argv[0] = "eval", argv[1] = dir, argv[2] = "--out", argv[3] = out;
        CHECK(run(cli_eval, argv, 4, &err) == 0, "eval of %s: %s", name, err.msg);
        cJSON *summary = read_json(tu_path(dir, "summary.json")), *e = read_json(out);
        same_metrics(summary, e, name);
        cJSON_Delete(summary);
        cJSON_Delete(e);
        argv[0] = "generate", argv[2] = "--prompt", argv[3] = "1 + 2 =";
        CHECK(run(cli_generate, argv, 4, &err) == 0, "generate on %s: %s", name, err.msg);
        argv[0] = "inspect";
        CHECK(run(cli_inspect, argv, 2, &err) == 2 && strstr(err.msg, " model: it has no attention to show") &&
              strstr(err.msg, TYPES[i]), "inspect of %s: %s", name, err.msg);
    }
}

static const char EQ_ONE_RUN[] =
    "{\"name\": \"eq\", \"seed\": 5, \"task\": {\"type\": \"eq_one\", \"seq_len\": %d, \"symbols\": 6, "
    "\"train_size\": 0},\n \"model\": {\"d_model\": 16, \"n_layers\": 1, \"n_heads\": 2, "
    "\"positional\": \"learned\", \"attention\": {\"causal\": true}},\n"
    " \"train\": {\"batch_size\": 8, \"steps\": %d, \"lr\": 0.01, \"threads\": 1}, "
    "\"eval\": {\"every\": 30, \"test_size\": 40}}\n";

/* eval [a1 [a2]] of dir into out (a1, a2 may be NULL); the exit code, err set. */
static int eval_to(const char *dir, const char *out, const char *a1, const char *a2, AlError *err) {
    char *argv[8] = { "eval", (char *)dir, "--out", (char *)out, (char *)a1, (char *)a2 };
    return run(cli_eval, argv, 4 + !!a1 + !!a2, err);
}

static double num(const cJSON *j, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The test set a config of task.seq_len n builds, written as JSONL to path. */
static void write_test_set(int n, const char *path) {
    char text[1024], cfg_path[300];
    snprintf(text, sizeof text, EQ_ONE_RUN, n, 60);
    snprintf(cfg_path, sizeof cfg_path, "%s/eq_n%d.json", tmp, n);
    CHECK(tu_write_file(cfg_path, text) == 0, "cannot write %s", cfg_path);
    Config c;
    TaskSpec spec;
    TaskData td;
    AlError err = {0};
    CHECK(cfg_load(&c, cfg_path, NULL, 0, &err) == 0, "%s: %s", cfg_path, err.msg);
    CHECK(task_build_from(cfg_task_spec(&c, &spec), cfg_path, &td, &err) == 0, "%s: %s", cfg_path, err.msg);
    CHECK(jsonl_write(path, &td.test, JSONL_GROUP, &err) == 0, "jsonl_write: %s", err.msg);
    task_free(&td);
}

static void test_eval_seq_len(const char *arith) {
    char text[1024], dir[300], lookup[300], out[400], out2[400], data[400], name[400];
    AlError err;
    snprintf(text, sizeof text, EQ_ONE_RUN, 8, 60);
    if (train("eq", text, dir)) return;
    /* Its own length: the run's test set, so summary.json's figures. */
    snprintf(out, sizeof out, "%s/eq_eval8.json", tmp);
    CHECK(eval_to(dir, out, "--seq-len", "8", &err) == 0, "eval --seq-len 8: %s", err.msg);
    cJSON *summary = read_json(tu_path(dir, "summary.json")), *e = read_json(out);
    same_metrics(summary, e, "eval --seq-len 8");
    cJSON_Delete(e);
    /* A shorter length: what eval --data gives on the test set of a config of that length. */
    snprintf(data, sizeof data, "%s/eq_test4.jsonl", tmp);
    write_test_set(4, data);
    snprintf(out2, sizeof out2, "%s/eq_file4.json", tmp);
    CHECK(eval_to(dir, out2, "--data", data, &err) == 0, "eval --data: %s", err.msg);
    char *argv[4] = { "eval", dir, "--seq-len", "4" };
    CHECK(run(cli_eval, argv, 4, &err) == 0, "eval --seq-len 4: %s", err.msg);
    e = read_json(tu_path(dir, "eval_n4.json"));
    cJSON *f = read_json(out2);
    static const char *const KEYS[] = { "test_loss", "test_token_acc", "test_seq_acc", "test_sequences",
                                        "test_tokens" };
    for (int i = 0; i < 5; i++)
        CHECK(num(e, KEYS[i]) == num(f, KEYS[i]), "eval --seq-len 4: %s is %.17g, eval --data of the N = 4 test "
              "set has %.17g", KEYS[i], num(e, KEYS[i]), num(f, KEYS[i]));
    CHECK(num(e, "test_sequences") == 40, "eval --seq-len 4: %g sequences, not eval.test_size 40",
          num(e, "test_sequences"));
    const cJSON *what = cJSON_GetObjectItem(e, "data");
    CHECK(cJSON_IsString(what) && !strcmp(what->valuestring, "test set at task.seq_len 4"),
          "eval --seq-len 4 names its data '%s'", cJSON_IsString(what) ? what->valuestring : "?");
    cJSON_Delete(summary);
    cJSON_Delete(e);
    cJSON_Delete(f);
    /* Refused, each with its reason. */
    snprintf(text, sizeof text,
             "{\"name\": \"il\", \"task\": {\"type\": \"index_lookup\", \"seq_len\": 8, \"min_len\": 2, \"alphabet\": 4, \"train_size\": 0},"
             " \"model\": {\"d_model\": 8, \"attention\": {\"causal\": true}},"
             " \"train\": {\"batch_size\": 4, \"steps\": 2, \"threads\": 1}, \"eval\": {\"test_size\": 8}}\n");
    if (train("il", text, lookup)) return;
    static const struct { const char *dir, *a1, *a2, *msg[2]; } BAD[] = {
        { NULL, "--seq-len", "10", { "--seq-len 10: ", "the rows are 11 tokens long, longer than the 9 the run's "
                                     "model was built for (task.seq_len 8)" } },
        { NULL, "--seq-len", "5", { "--seq-len 5: ", "seq_len must be even" } },
        { NULL, "--seq-len", "x", { "--seq-len needs a whole number >= 0, got 'x'", "" } },
        { "arith", "--seq-len", "4", { "--seq-len 4: ", "task.seq_len: not valid for task.type \"arith\"" } },
        { "lookup", "--seq-len", "4", { "--seq-len 4: ", "the task's vocabulary differs from the run's model's" } },
    };
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        const char *d = !BAD[i].dir ? dir : !strcmp(BAD[i].dir, "arith") ? arith : lookup;
        snprintf(name, sizeof name, "%s/bad%zu.json", tmp, i);
        int rc = eval_to(d, name, BAD[i].a1, BAD[i].a2, &err);
        CHECK(rc == 2 && strstr(err.msg, BAD[i].msg[0]) && strstr(err.msg, BAD[i].msg[1]),
              "eval %s %s: exit %d, '%s'", BAD[i].a1, BAD[i].a2, rc, err.msg);
        struct stat st;
        CHECK(stat(name, &st) != 0, "eval %s %s wrote %s", BAD[i].a1, BAD[i].a2, name);
    }
    char *both[6] = { "eval", dir, "--seq-len", "4", "--data", data };
    CHECK(run(cli_eval, both, 6, &err) == 2 && strstr(err.msg, "--data and --seq-len exclude each other"),
          "eval --seq-len --data: '%s'", err.msg);
}

/* eval --by-position of a run: each position's count and accuracy equal evaluate()'s
 * on the test set with every other position's target masked out, the counts add up
 * to test_tokens, and the other figures are summary.json's (the flag changes
 * nothing else). */
static void check_by_position(const char *dir, const char *what) {
    char out[400];
    AlError err;
    snprintf(out, sizeof out, "%s/%s_positions.json", tmp, what);
    CHECK(eval_to(dir, out, "--by-position", NULL, &err) == 0, "eval --by-position of %s: %s", what, err.msg);
    cJSON *summary = read_json(tu_path(dir, "summary.json")), *e = read_json(out);
    same_metrics(summary, e, "eval --by-position");
    const cJSON *arr = cJSON_GetObjectItem(e, "test_position_token_acc");
    LoadedRun r;
    CHECK(runload_open(&r, dir, NULL, 0, &err) == 0, "runload_open: %s", err.msg);
    const Dataset *d = &r.data.test;
    Dataset one = *d;
    one.targets = al_malloc((size_t)d->n * d->seq_len * sizeof(int));
    Arena arena;
    Tape tape;
    arena_init(&arena, 8u << 20);
    tape_init(&tape, &arena);
    const cJSON *entry = arr ? arr->child : NULL;
    int positions = 0;
    double tokens = 0;
    for (int i = 0; i < d->seq_len; i++) {
        for (long k = 0; k < (long)d->n * d->seq_len; k++)
            one.targets[k] = k % d->seq_len == i ? d->targets[k] : DATASET_IGNORE;
        EvalResult m = evaluate(r.model, &tape, &one, r.cfg.train.batch_size, 0);
        if (!m.n_tokens) continue;
        positions++;
        CHECK(entry && num(entry, "position") == i + 1 && num(entry, "tokens") == m.n_tokens &&
                  num(entry, "token_acc") == m.token_acc,
              "%s: position %d: eval --by-position has position %g, %g tokens, acc %.17g; evaluate() of that "
              "position alone: %ld tokens, acc %.17g", what, i + 1, entry ? num(entry, "position") : NAN,
              entry ? num(entry, "tokens") : NAN, entry ? num(entry, "token_acc") : NAN, m.n_tokens, m.token_acc);
        tokens += entry ? num(entry, "tokens") : 0;
        entry = entry ? entry->next : NULL;
    }
    CHECK(positions > 1 && !entry, "%s: %d scored positions, eval --by-position lists %d", what, positions,
          cJSON_GetArraySize(arr));
    CHECK(tokens == num(e, "test_tokens"), "%s: the positions' tokens add up to %g, not test_tokens %g", what,
          tokens, num(e, "test_tokens"));
    tape_free(&tape);
    arena_free(&arena);
    free(one.targets);
    runload_close(&r);
    cJSON_Delete(summary);
    cJSON_Delete(e);
}

static void test_eval_by_position(const char *arith) {
    char dir[300];
    check_by_position(arith, "arith");
    if (train("ncp", "{\"name\": \"ncp\", \"seed\": 2, \"task\": {\"type\": \"eq_ncp\", \"seq_len\": 8, "
                     "\"symbols\": 4, \"train_size\": 0},\n \"model\": {\"d_model\": 16, \"n_layers\": 1, "
                     "\"n_heads\": 2, \"positional\": \"learned\", \"attention\": {\"causal\": true}},\n"
                     " \"train\": {\"batch_size\": 8, \"steps\": 60, \"lr\": 0.01, \"threads\": 1}, "
                     "\"eval\": {\"every\": 30, \"test_size\": 40}}\n", dir))
        return;
    check_by_position(dir, "eq_ncp");
}

int main(void) {
    snprintf(tmp, sizeof tmp, "%s/attnlab_use_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp)) return 1;
    char arith[300], m2[300];
    if (train("arith", ARITH, arith) || train("match2", MATCH2, m2)) return check_exit("test_use_models");
    test_eval(arith);
    test_generate_is_argmax(arith);
    test_generate_commands(arith, m2);
    test_capture_is_free(arith);
    int torch = have_torch();
    if (!torch) printf("SKIP (part): python3-torch not installed: maps not compared with PyTorch\n");
    test_inspect(arith, m2, torch);
    test_inspect_anna(arith, m2);
    test_recurrent_runs();
    test_eval_seq_len(arith);
    test_eval_by_position(arith);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    return check_exit("test_use_models");
}
