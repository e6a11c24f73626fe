/* test_train.c — the trainer end to end on a small Match2 run.
 *
 *   - a short run's loss falls and the run folder holds every promised file;
 *   - N steps + --resume + N steps equals 2N steps bit for bit (parameters, Adam
 *     moments, every logged figure), with dropout on so the RNG state matters;
 *   - model.safetensors loads back into a fresh model identical to the trained one;
 *   - a bad config exits 2 and writes nothing; bad resumes are refused clearly;
 *   - a checkpoint written before a config key existed still resumes when the key
 *     is at its default (and is refused when it is not);
 *   - eval.stop_metric picks the error eval.stop_at_error bounds. */
#include "check.h"
#include "testutil.h"
#include "attnlab/config/config.h"
#include "attnlab/io/safetensors.h"
#include "attnlab/train/checkpoint.h"
#include "attnlab/train/trainer.h"
#include "attnlab/report/curve.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[256];

static const char *CONFIG =
    "{ \"name\": \"t\", \"seed\": 3,\n"
    "  \"task\": {\"type\": \"match2\", \"seq_len\": 12, \"modulus\": 13, \"train_size\": 400},\n"
    "  \"model\": {\"d_model\": 16, \"n_heads\": 2, \"dropout\": 0.1,\n"
    "            \"attention\": {\"score\": \"unit_norm\", \"beta\": 2}},\n"
    "  \"train\": {\"lr\": 0.01, \"batch_size\": 16, \"steps\": 120, \"schedule\": \"warmup_cosine\",\n"
    "            \"warmup_steps\": 10, \"grad_clip\": 1.0},\n"
    "  \"eval\": {\"every\": 20, \"test_size\": 64} }\n";

static void write_file(const char *path, const char *text) { CHECK(tu_write_file(path, text) == 0, "cannot write %s", path); }

static char *read_file(const char *path) { return tu_read_file(path, NULL); }

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static int run(const char *out, const char *const *sets, int n_sets, int resume, AlError *err) {
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s/config.json", tmp);
    TrainOptions o = { .config_path = cfg, .overrides = sets, .n_overrides = n_sets, .out_dir = out,
                       .resume = resume, .quiet = 1 };
    memset(err, 0, sizeof *err);
    return train_run(&o, err);
}

/* metrics.jsonl without the wall-clock field, for exact comparison. */
static char *metrics_without_time(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    char *s = read_file(path);
    if (!s) return NULL;
    for (char *p = strstr(s, ", \"elapsed_s\""); p; p = strstr(p, ", \"elapsed_s\"")) {
        char *end = strchr(p, '}');
        memmove(p, end, strlen(end) + 1);
    }
    return s;
}

static int same_tensor(const char *dir_a, const char *dir_b, const char *name) {
    char pa[512], pb[512];
    snprintf(pa, sizeof pa, "%s/train_state.safetensors", dir_a);
    snprintf(pb, sizeof pb, "%s/train_state.safetensors", dir_b);
    AlError err = {0};
    StFile *a = st_open(pa, &err), *b = st_open(pb, &err);
    int same = 0;
    if (a && b) {
        const StInfo *ia = st_info(a, st_find(a, name)), *ib = st_info(b, st_find(b, name));
        long n = (long)ia->shape[0];
        float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
        same = ia->shape[0] == ib->shape[0] && !st_read_f32(a, name, 1, ia->shape, x, &err) &&
               !st_read_f32(b, name, 1, ib->shape, y, &err) && !memcmp(x, y, (size_t)n * 4);
        free(x);
        free(y);
    }
    st_close(a);
    st_close(b);
    return same;
}

static void test_short_run(void) {
    char out[512], path[600];
    snprintf(out, sizeof out, "%s/full", tmp);
    AlError err;
    int rc = run(out, NULL, 0, 0, &err);
    CHECK(rc == 0, "training failed: %s", err.msg);
    const char *files[] = {"config.json", "metrics.jsonl", "summary.json", "model.safetensors", "train_state.safetensors",
                           "curve.svg"};
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof path, "%s/%s", out, files[i]);
        CHECK(file_exists(path), "run folder lacks %s", files[i]);
    }
    char *m = metrics_without_time(out);
    CHECK(m != NULL, "no metrics");
    if (!m) return;
    double first = atof(strstr(m, "\"train_loss\": ") + 14);
    const char *last_line = strrchr(m, '{');
    double last = atof(strstr(last_line, "\"train_loss\": ") + 14);
    CHECK(last < 0.8 * first, "train loss did not fall: %.4f -> %.4f", first, last);
    CHECK(strstr(last_line, "\"step\": 120,") != NULL, "last metrics line is not step 120: %s", last_line);
    free(m);
    snprintf(path, sizeof path, "%s/curve.svg", out);
    char *svg = read_file(path);
    /* One marker per evaluation (steps 20..120) for each of the two losses. */
    int markers = 0;
    for (const char *q = svg; q && (q = strstr(q, "<circle")); q++) markers++;
    CHECK(svg && strstr(svg, "test loss") && strstr(svg, "train loss"), "curve.svg lacks the two series");
    CHECK(markers >= 6, "curve.svg has %d circle markers, want >= 6", markers);
    free(svg);
    snprintf(path, sizeof path, "%s/no_such_run", tmp);
    AlError e2 = {0};
    CHECK(report_curve(path, &e2) == 1 && strstr(e2.msg, "no_such_run/metrics.jsonl") && strstr(e2.msg, "cannot read"),
          "curve of a missing run: '%s'", e2.msg);
    /* Runs compared: one series per folder, named after it, on a [0, 1] accuracy axis. */
    char cmp[600];
    snprintf(cmp, sizeof cmp, "%s/compare.svg", tmp);
    const char *two[2] = { out, out };
    CHECK(report_compare(two, 2, "token_acc", cmp, &e2) == 0, "compare: %s", e2.msg);
    svg = read_file(cmp);
    int legends = 0;
    markers = 0;
    for (const char *q = svg; q && (q = strstr(q, "<circle")); q++) markers++;   /* series 0's marker shape */
    for (const char *q = svg; q && (q = strstr(q, ">full<")); q++) legends++;
    CHECK(svg && legends == 2 && strstr(svg, "test token_acc vs step"), "compare.svg: %d legend entries, or no title",
          legends);
    CHECK(markers >= 6, "compare.svg has %d circle markers, want >= 6 (one per evaluation)", markers);
    free(svg);
    /* A sweep cell (SWEEP/cells/CELL) is named "SWEEP: CELL". */
    char cells[600], cell[700], cmd[2048];
    snprintf(cells, sizeof cells, "%s/mysweep/cells", tmp);
    snprintf(cell, sizeof cell, "%s/c1/", cells);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && ln -s '%s' '%s/c1'", cells, out, cells);
    CHECK(system(cmd) == 0, "%s", cmd);
    const char *one_cell[1] = { cell };
    CHECK(report_compare(one_cell, 1, "seq_acc", cmp, &e2) == 0, "compare a cell: %s", e2.msg);
    svg = read_file(cmp);
    CHECK(svg && strstr(svg, ">mysweep: c1<"), "a sweep cell's series is not named 'mysweep: c1'");
    free(svg);
    CHECK(report_compare(two, 1, "accuracy", cmp, &e2) == 2 && strstr(e2.msg, "--metric must be token_acc"),
          "unknown metric: '%s'", e2.msg);
    CHECK(report_compare(two, 1, "answer_acc", cmp, &e2) == 2 && strstr(e2.msg, "full/metrics.jsonl: no 'answer_acc'"),
          "metric the run lacks: '%s'", e2.msg);
    const char *missing[2] = { out, path };
    CHECK(report_compare(missing, 2, "seq_acc", cmp, &e2) == 1 && strstr(e2.msg, "no_such_run/metrics.jsonl"),
          "compare with a missing run: '%s'", e2.msg);
}

/* model.dropout acts during training (it once silently did not): the same run
 * without it has another loss curve, and with it the curve is reproducible. */
static void test_dropout_trains(void) {
    char a[512], b[512], c[512];
    snprintf(a, sizeof a, "%s/full", tmp);   /* test_short_run's run, dropout 0.1 */
    snprintf(b, sizeof b, "%s/nodrop", tmp);
    snprintf(c, sizeof c, "%s/drop_again", tmp);
    const char *no[] = {"model.dropout=0"};
    AlError err;
    CHECK(run(b, no, 1, 0, &err) == 0, "run without dropout failed: %s", err.msg);
    CHECK(run(c, NULL, 0, 0, &err) == 0, "second dropout run failed: %s", err.msg);
    char *ma = metrics_without_time(a), *mb = metrics_without_time(b), *mc = metrics_without_time(c);
    CHECK(ma && mb && mc, "metrics missing");
    if (ma && mb && mc) {
        double la = atof(strstr(ma, "\"train_loss\": ") + 14), lb = atof(strstr(mb, "\"train_loss\": ") + 14);
        CHECK(la != lb, "dropout 0.1 and 0 give the same first train loss %.6f: dropout is not active", la);
        CHECK(!strcmp(ma, mc), "two dropout runs differ:\n%s\n%s", ma, mc);
    }
    free(ma);
    free(mb);
    free(mc);
}

/* Both runs use a constant schedule (a decaying one depends on train.steps, which
 * the first sitting sets to 60), so only the state carried over can differ. */
static long summary_steps(const char *dir, int *early) {
    char path[600];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    char *s = read_file(path);
    cJSON *j = s ? cJSON_Parse(s) : NULL;
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(j, "steps");
    long n = cJSON_IsNumber(steps) ? (long)steps->valuedouble : -1;
    *early = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "stopped_early"));
    cJSON_Delete(j);
    free(s);
    return n;
}

/* The files of a finished run, read whole (model.safetensors is binary: compared
 * by length and bytes). */
static const char *const RUN_FILES[4] = {"summary.json", "metrics.jsonl", "config.json", "model.safetensors"};
typedef struct { char *bytes[4]; size_t len[4]; } RunFiles;

static void run_files_read(const char *dir, RunFiles *f) {
    for (int i = 0; i < 4; i++) f->bytes[i] = tu_read_file(tu_path(dir, RUN_FILES[i]), &f->len[i]);
}

/* Names the first file that differs (checked), frees both. */
static void run_files_same(RunFiles *a, RunFiles *b, const char *what) {
    for (int i = 0; i < 4; i++) {
        CHECK(a->bytes[i] && b->bytes[i] && a->len[i] == b->len[i] && !memcmp(a->bytes[i], b->bytes[i], a->len[i]),
              "%s rewrote its %s", what, RUN_FILES[i]);
        free(a->bytes[i]);
        free(b->bytes[i]);
    }
}

static void test_resume_is_exact(void) {
    char half[512], full[512];
    snprintf(half, sizeof half, "%s/half", tmp);
    snprintf(full, sizeof full, "%s/const", tmp);
    AlError err;
    const char *whole[] = {"train.schedule=constant", "train.warmup_steps=0"};
    CHECK(run(full, whole, 2, 0, &err) == 0, "uninterrupted run failed: %s", err.msg);
    const char *first[] = {"train.schedule=constant", "train.warmup_steps=0", "train.steps=60"};
    CHECK(run(half, first, 3, 0, &err) == 0, "first sitting failed: %s", err.msg);
    const char *second[] = {"train.schedule=constant", "train.warmup_steps=0", "train.steps=120"};
    CHECK(run(half, second, 3, 1, &err) == 0, "resumed sitting failed: %s", err.msg);
    CHECK(same_tensor(half, full, "params"), "parameters differ after resume");
    CHECK(same_tensor(half, full, "adam.m"), "Adam first moments differ after resume");
    CHECK(same_tensor(half, full, "adam.v"), "Adam second moments differ after resume");
    char *a = metrics_without_time(half), *b = metrics_without_time(full);
    CHECK(a && b && !strcmp(a, b), "metrics differ after resume:\n%s\nvs\n%s", a ? a : "", b ? b : "");
    free(a);
    free(b);
    /* Resuming a finished run changes no file: not its summary (this sitting's zero
     * steps would make its ms/step 0), metrics, config or model. */
    RunFiles before, after;
    run_files_read(half, &before);
    CHECK(run(half, second, 3, 1, &err) == 0, "resuming a finished run failed: %s", err.msg);
    run_files_read(half, &after);
    run_files_same(&before, &after, "resuming a finished run");
    /* A kill after the last checkpoint, before the summary: resuming only evaluates
     * again and writes it; metrics.jsonl gets no second line for that step. */
    char path[600];
    snprintf(path, sizeof path, "%s/summary.json", half);
    CHECK(remove(path) == 0, "cannot remove %s", path);
    CHECK(run(half, second, 3, 1, &err) == 0, "resuming a run killed before its summary failed: %s", err.msg);
    int early;
    CHECK(summary_steps(half, &early) == 120 && !early, "the resumed run's summary is not of 120 steps");
    a = metrics_without_time(half);
    b = metrics_without_time(full);
    CHECK(a && b && !strcmp(a, b), "resuming at the last step changed the metrics:\n%s", a ? a : "");
    free(a);
    free(b);
    /* Resuming a finished run with more steps continues it (the metrics keep
     * everything up to the checkpoint and nothing after). */
    const char *more[] = {"train.schedule=constant", "train.warmup_steps=0", "train.steps=140"};
    CHECK(run(half, more, 3, 1, &err) == 0, "extending a finished run failed: %s", err.msg);
    a = metrics_without_time(half);
    CHECK(a && strstr(a, "\"step\": 140,") && strstr(a, "\"step\": 120,"), "extended metrics wrong: %s", a ? a : "");
    free(a);
}

/* A run that stopped early is finished: --resume under the same stop rule trains
 * nothing and rewrites no file (it used to train on past the stop and replace the
 * model); with the rule lifted (eval.stop_at_error -1) it continues to train.steps. */
static void test_resume_after_early_stop(void) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/early", tmp);
    AlError err;
    const char *stop[] = {"eval.stop_at_error=0.99"};
    CHECK(run(dir, stop, 1, 0, &err) == 0, "early-stopping run failed: %s", err.msg);
    int early;
    long at = summary_steps(dir, &early);
    CHECK(at == 20 && early, "the run did not stop at its first evaluation: %ld steps (early %d)", at, early);
    RunFiles before, after;
    run_files_read(dir, &before);
    CHECK(run(dir, stop, 1, 1, &err) == 0, "resuming an early-stopped run failed: %s", err.msg);
    run_files_read(dir, &after);
    run_files_same(&before, &after, "resuming an early-stopped run");
    const char *looser[] = {"eval.stop_at_error=1"};   /* a looser rule would stop it here too */
    CHECK(run(dir, looser, 1, 1, &err) == 0 && summary_steps(dir, &early) == 20, "a looser stop rule retrained the run");
    const char *none[] = {"eval.stop_at_error=-1"};
    CHECK(run(dir, none, 1, 1, &err) == 0, "resuming without the stop rule failed: %s", err.msg);
    CHECK(summary_steps(dir, &early) == 120 && !early, "without the stop rule the run did not go on to 120 steps");
}

/* A decayed schedule extended on resume: a 60-step cosine run resumed with
 * train.steps 120 and train.decay_steps 60 (min_lr held after its decay) equals
 * the 120-step run with that decay_steps from the start, bit for bit. */
static void test_resume_extends_decay(void) {
    char half[512], full[512];
    snprintf(half, sizeof half, "%s/decay_half", tmp);
    snprintf(full, sizeof full, "%s/decay_full", tmp);
    AlError err;
    const char *whole[] = {"train.schedule=warmup_cosine", "train.warmup_steps=10", "train.min_lr=0.0001",
                           "train.steps=120", "train.decay_steps=60"};
    CHECK(run(full, whole, 5, 0, &err) == 0, "uninterrupted run failed: %s", err.msg);
    const char *first[] = {"train.schedule=warmup_cosine", "train.warmup_steps=10", "train.min_lr=0.0001",
                           "train.steps=60"};
    CHECK(run(half, first, 4, 0, &err) == 0, "first sitting failed: %s", err.msg);
    CHECK(run(half, whole, 5, 1, &err) == 0, "extending sitting failed: %s", err.msg);
    CHECK(same_tensor(half, full, "params"), "parameters differ after an extended decay");
    CHECK(same_tensor(half, full, "adam.v"), "Adam second moments differ after an extended decay");
    char *a = metrics_without_time(half), *b = metrics_without_time(full);
    CHECK(a && b && !strcmp(a, b), "metrics differ after an extended decay:\n%s\nvs\n%s", a ? a : "", b ? b : "");
    CHECK(a && strstr(a, "\"lr\": 0.0001,"), "no step at min_lr after the decay: %s", a ? a : "");
    free(a);
    free(b);
}

static void test_model_round_trip(void) {
    char path[512], cfgpath[512];
    snprintf(path, sizeof path, "%s/full/model.safetensors", tmp);
    snprintf(cfgpath, sizeof cfgpath, "%s/config.json", tmp);
    Config c;
    AlError err = {0};
    CHECK(cfg_load(&c, cfgpath, NULL, 0, &err) == 0, "%s", err.msg);
    Model *m = model_create(&c.model, 13, 2, 12, 999);   /* other seed: other weights */
    CHECK(checkpoint_load_model(path, m, &err) == 0, "load failed: %s", err.msg);
    char state[512];
    snprintf(state, sizeof state, "%s/full/train_state.safetensors", tmp);
    StFile *f = st_open(state, &err);
    float *want = malloc((size_t)m->params.total * 4);
    int64_t shape[1] = {m->params.total};
    CHECK(f && !st_read_f32(f, "params", 1, shape, want, &err), "%s", err.msg);
    CHECK(!memcmp(want, m->params.data, (size_t)m->params.total * 4), "loaded model differs from the trained one");
    st_close(f);
    free(want);
    /* A model of another shape is refused with the tensor named. */
    c.model.d_model = 32;
    Model *other = model_create(&c.model, 13, 2, 12, 1);
    CHECK(checkpoint_load_model(path, other, &err) != 0 && strstr(err.msg, "tok_emb.weight") &&
          strstr(err.msg, "model.safetensors"), "shape mismatch not reported clearly: %s", err.msg);
    model_free(other);
    model_free(m);
}

static void test_bad_input(void) {
    char out[512], cfg[512];
    snprintf(out, sizeof out, "%s/never", tmp);
    AlError err;
    const char *bad[] = {"model.d_model=15"};   /* not divisible by 2 heads */
    CHECK(run(out, bad, 1, 0, &err) == 2, "inconsistent config must exit 2");
    CHECK(strstr(err.msg, "model.d_model") != NULL, "message lacks the key: %s", err.msg);
    CHECK(!file_exists(out), "a bad config must write nothing, but %s exists", out);

    snprintf(out, sizeof out, "%s/empty", tmp);
    CHECK(run(out, NULL, 0, 1, &err) == 1 && strstr(err.msg, "cannot resume"),
          "--resume without a checkpoint: %s", err.msg);

    snprintf(out, sizeof out, "%s/full", tmp);
    const char *other_model[] = {"model.d_model=32"};
    CHECK(run(out, other_model, 1, 1, &err) == 2 && strstr(err.msg, "model.d_model"),
          "resume with another model must name the key: %s", err.msg);

    snprintf(cfg, sizeof cfg, "%s/file", tmp);
    write_file(cfg, "x");
    snprintf(out, sizeof out, "%s/file/sub", tmp);
    CHECK(run(out, NULL, 0, 0, &err) == 1 && strstr(err.msg, "file"), "unusable run folder: %s", err.msg);
}

/* Streaming (fresh batches every step): the generator's stream is part of the
 * checkpoint, so resume is still exact; per-hop metrics are logged. */
static void test_streaming_resume(void) {
    char half[512], full[512], cfg[512];
    snprintf(cfg, sizeof cfg, "%s/khop.json", tmp);
    write_file(cfg, "{ \"name\": \"k\", \"task\": {\"type\": \"khop\", \"seq_len\": 12, \"max_hops\": 2, "
                    "\"train_size\": 0},\n  \"model\": {\"d_model\": 16, \"n_layers\": 2, \"positional\": \"learned\", "
                    "\"attention\": {\"causal\": true}},\n  \"train\": {\"lr\": 0.01, \"batch_size\": 8, \"steps\": 40},\n"
                    "  \"eval\": {\"every\": 10, \"test_size\": 32} }\n");
    snprintf(half, sizeof half, "%s/khalf", tmp);
    snprintf(full, sizeof full, "%s/kfull", tmp);
    AlError err;
    TrainOptions o = { .config_path = cfg, .out_dir = full, .quiet = 1 };
    CHECK(train_run(&o, &err) == 0, "streaming run failed: %s", err.msg);
    const char *first[] = {"train.steps=20"}, *second[] = {"train.steps=40"};
    TrainOptions a = { .config_path = cfg, .out_dir = half, .quiet = 1, .overrides = first, .n_overrides = 1 };
    CHECK(train_run(&a, &err) == 0, "first sitting failed: %s", err.msg);
    TrainOptions b = { .config_path = cfg, .out_dir = half, .quiet = 1, .overrides = second, .n_overrides = 1, .resume = 1 };
    CHECK(train_run(&b, &err) == 0, "resumed sitting failed: %s", err.msg);
    CHECK(same_tensor(half, full, "params") && same_tensor(half, full, "adam.v"), "streaming resume is not exact");
    char *m = metrics_without_time(full);
    CHECK(m && strstr(m, "\"group_token_acc\": {\"hops_0\": ") && strstr(m, "\"hops_2\": "), "no per-hop metrics: %s", m ? m : "");
    free(m);
}

/* ./train data writes a generated split; task type "file" trains from it. */
static void test_data_then_file(void) {
    char cfg[512], dir[512], file_cfg[1024], out[512];
    snprintf(cfg, sizeof cfg, "%s/lis.json", tmp);
    write_file(cfg, "{ \"task\": {\"type\": \"lis\", \"length\": 5, \"train_size\": 64},\n"
                    "  \"model\": {\"d_model\": 16, \"attention\": {\"causal\": true}, \"positional\": \"learned\"},\n"
                    "  \"eval\": {\"test_size\": 16} }\n");
    snprintf(dir, sizeof dir, "%s/lisdata", tmp);
    AlError err;
    TrainOptions d = { .config_path = cfg, .out_dir = dir, .quiet = 1 };
    CHECK(train_write_data(&d, &err) == 0, "data command failed: %s", err.msg);
    snprintf(file_cfg, sizeof file_cfg, "%s/file.json", tmp);
    char text[2048];
    snprintf(text, sizeof text, "{ \"task\": {\"type\": \"file\", \"train_path\": \"%s/train.jsonl\", "
             "\"test_path\": \"%s/test.jsonl\"},\n  \"model\": {\"d_model\": 16, \"attention\": {\"causal\": true}},\n"
             "  \"train\": {\"steps\": 10, \"batch_size\": 8}, \"eval\": {\"every\": 5} }\n", dir, dir);
    write_file(file_cfg, text);
    snprintf(out, sizeof out, "%s/fromfile", tmp);
    TrainOptions f = { .config_path = file_cfg, .out_dir = out, .quiet = 1 };
    CHECK(train_run(&f, &err) == 0, "training from the written files failed: %s", err.msg);
    /* A streaming task has no training set to write. */
    const char *stream[] = {"task.train_size=0"};
    TrainOptions s = { .config_path = cfg, .out_dir = dir, .quiet = 1, .overrides = stream, .n_overrides = 1 };
    CHECK(train_write_data(&s, &err) == 2 && strstr(err.msg, "task.train_size is 0"), "streaming export: %s", err.msg);
}

/* A diverging run stops at the first non-finite step, names it, and keeps the last
 * good checkpoint (no NaN is ever saved). */
static void test_nonfinite_stops(void) {
    char out[512], path[600];
    snprintf(out, sizeof out, "%s/diverge", tmp);
    const char *sets[] = {"train.lr=1e30", "train.schedule=constant", "train.warmup_steps=0", "eval.every=1"};
    AlError err;
    int rc = run(out, sets, 4, 0, &err);
    CHECK(rc == 1 && strstr(err.msg, "is not finite") && strstr(err.msg, "step "), "diverging run: rc %d, %s", rc, err.msg);
    snprintf(path, sizeof path, "%s/train_state.safetensors", out);
    AlError e2 = {0};
    StFile *f = st_open(path, &e2);
    CHECK(f != NULL, "no checkpoint kept: %s", e2.msg);
    if (f) {
        const StInfo *in = st_info(f, st_find(f, "params"));
        float *p = malloc((size_t)in->shape[0] * sizeof(float));
        CHECK(!st_read_f32(f, "params", 1, in->shape, p, &e2), "%s", e2.msg);
        long bad = 0;
        for (long i = 0; i < in->shape[0]; i++) bad += !isfinite(p[i]);
        CHECK(bad == 0, "the kept checkpoint has %ld non-finite parameters", bad);
        free(p);
        st_close(f);
    }
}

/* The step of the training state in dir, or -1; *finite = all parameters finite. */
static long checkpoint_step(const char *dir, int *finite) {
    char path[600];
    snprintf(path, sizeof path, "%s/train_state.safetensors", dir);
    AlError e = {0};
    StFile *f = st_open(path, &e);
    if (!f) return -1;
    long step = atol(st_meta(f, "step") ? st_meta(f, "step") : "-1");
    const StInfo *in = st_info(f, st_find(f, "params"));
    float *p = malloc((size_t)in->shape[0] * sizeof(float));
    *finite = !st_read_f32(f, "params", 1, in->shape, p, &e);
    for (long i = 0; i < in->shape[0]; i++) *finite &= isfinite(p[i]) != 0;
    free(p);
    st_close(f);
    return step;
}

/* An injected NaN loss (ATTNLAB_TEST_NAN_STEPS, util/testhook.h) in both modes of
 * train.on_nonfinite: "stop" names the step and keeps the checkpoint before it;
 * "skip" drops exactly those updates, logs them, resumes bit for bit across them,
 * and still stops when more than 10 steps in a row fail. */
static void test_nonfinite_modes(void) {
    char out[512], half[512], path[600];
    AlError err;
    int finite = 0;
    const char *stop[] = {"train.schedule=constant", "train.warmup_steps=0", "train.steps=20", "eval.checkpoint_every=5"};
    snprintf(out, sizeof out, "%s/nan_stop", tmp);
    setenv("ATTNLAB_TEST_NAN_STEPS", "7", 1);
    int rc = run(out, stop, 4, 0, &err);
    CHECK(rc == 1 && strstr(err.msg, "step 7: the loss (nan)") && strstr(err.msg, out) &&
          strstr(err.msg, "last good checkpoint (step 5)"), "stop mode: rc %d, %s", rc, err.msg);
    CHECK(checkpoint_step(out, &finite) == 5 && finite, "stop mode must keep the step-5 checkpoint");

    const char *skip[] = {"train.schedule=constant", "train.warmup_steps=0", "train.steps=20",
                          "eval.checkpoint_every=5", "train.on_nonfinite=skip", "eval.every=5"};
    snprintf(out, sizeof out, "%s/nan_skip", tmp);
    setenv("ATTNLAB_TEST_NAN_STEPS", "3,4,12", 1);
    CHECK(run(out, skip, 6, 0, &err) == 0, "skip mode failed: %s", err.msg);
    snprintf(path, sizeof path, "%s/summary.json", out);
    char *summary = read_file(path), *metrics = metrics_without_time(out);
    CHECK(summary && strstr(summary, "\"skipped_steps\":\t3"), "summary lacks skipped_steps 3: %s", summary ? summary : "");
    CHECK(metrics && strstr(metrics, "\"skipped_steps\": 3}"), "metrics lack skipped_steps: %s", metrics ? metrics : "");
    free(summary);
    free(metrics);
    /* 10 steps (an evaluation step, as in the uninterrupted run), then resume to 20:
     * skipped steps (3, 4, 12) on both sides of the break. */
    snprintf(half, sizeof half, "%s/nan_skip_half", tmp);
    skip[2] = "train.steps=10";
    CHECK(run(half, skip, 6, 0, &err) == 0, "skip mode, first sitting: %s", err.msg);
    skip[2] = "train.steps=20";
    CHECK(run(half, skip, 6, 1, &err) == 0, "skip mode, resumed: %s", err.msg);
    CHECK(same_tensor(half, out, "params") && same_tensor(half, out, "adam.v"), "resume across skipped steps is not exact");
    char *a = metrics_without_time(half), *b = metrics_without_time(out);
    CHECK(a && b && !strcmp(a, b), "metrics differ after resume across skipped steps");
    free(a);
    free(b);

    snprintf(out, sizeof out, "%s/nan_skip_many", tmp);
    setenv("ATTNLAB_TEST_NAN_STEPS", "6,7,8,9,10,11,12,13,14,15,16,17", 1);
    rc = run(out, skip, 6, 0, &err);
    CHECK(rc == 1 && strstr(err.msg, "step 16: ") && strstr(err.msg, "for 11 steps in a row") &&
          strstr(err.msg, "last good checkpoint (step 15)"), "too many skipped steps: rc %d, %s", rc, err.msg);
    CHECK(checkpoint_step(out, &finite) == 15 && finite, "skip mode must keep a finite step-15 checkpoint");
    unsetenv("ATTNLAB_TEST_NAN_STEPS");
}

/* The checkpoint of an older version has no entry for keys added since; it must
 * resume when those keys are at their defaults (the behaviour it was trained
 * with), be refused naming the key when they are not, and a key this version does
 * not know must be named instead of compared. */
static void save_with_config(const char *dir, const Config *c, const char *drop_section, const char *drop_key,
                             const char *add_key) {
    char *json = cfg_to_json(c);
    cJSON *root = cJSON_Parse(json);
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, drop_section), drop_key);
    if (add_key) cJSON_AddNumberToObject(cJSON_GetObjectItemCaseSensitive(root, "model"), add_key, 1);
    char *older = cJSON_Print(root);
    Model *m = model_create(&c->model, 13, 2, 12, 5);
    TrainState st = { .target_step = -1 };
    AlError err = {0};
    mkdir(dir, 0755);
    CHECK(checkpoint_save(dir, m, &st, older, &err) == 0, "saving failed: %s", err.msg);
    model_free(m);
    free(older);
    cJSON_Delete(root);
    free(json);
}

static void test_resume_older_checkpoint(void) {
    char cfgpath[512], dir[512];
    snprintf(cfgpath, sizeof cfgpath, "%s/config.json", tmp);
    snprintf(dir, sizeof dir, "%s/older", tmp);
    Config c;
    AlError err = {0};
    CHECK(cfg_load(&c, cfgpath, NULL, 0, &err) == 0, "%s", err.msg);
    char *now = cfg_to_json(&c);
    Model *m = model_create(&c.model, 13, 2, 12, 6);
    TrainState st;

    save_with_config(dir, &c, "model", "init", NULL);
    CHECK(checkpoint_resume(dir, m, &st, now, &err) == 0,
          "a checkpoint without model.init (at its default now) was refused: %s", err.msg);

    Config other = c;
    CHECK(cfg_set(&other, "model.init=normal", &err) == 0, "%s", err.msg);
    char *changed = cfg_to_json(&other);
    memset(&err, 0, sizeof err);
    CHECK(checkpoint_resume(dir, m, &st, changed, &err) == 2 && strstr(err.msg, "differs from the checkpoint's at 'model.init'"),
          "a checkpoint without model.init resumed with another model.init: %s", err.msg);
    free(changed);

    save_with_config(dir, &c, "model", "init", "gone_key");
    memset(&err, 0, sizeof err);
    CHECK(checkpoint_resume(dir, m, &st, now, &err) != 0 &&
          strstr(err.msg, "cannot resume: this version of attnlab cannot read the checkpoint's config") &&
          strstr(err.msg, "gone_key"), "a checkpoint config with an unknown key: %s", err.msg);
    model_free(m);
    free(now);
}

/* Reads summary.json's "steps" and "stopped_early" of dir; -1 steps when unreadable. */

/* eval.stop_metric: the same run stops at the first evaluation whose token error
 * ("token") or sequence error ("seq", 1 − seq_acc) is <= eval.stop_at_error.  The
 * expected steps come from test_short_run's metrics (same config and seed, same
 * curve), with the bound halfway between the two errors where they differ most, so
 * the two metrics must stop at different steps. */
static void test_stop_metric(void) {
    char full[512], path[600];
    snprintf(full, sizeof full, "%s/full", tmp);
    snprintf(path, sizeof path, "%s/metrics.jsonl", full);
    char *m = read_file(path);
    CHECK(m != NULL, "no metrics in %s", full);
    if (!m) return;
    long steps[64];
    double tok[64], seq[64];
    int n = 0, widest = -1;
    for (char *line = strtok(m, "\n"); line && n < 64; line = strtok(NULL, "\n")) {
        cJSON *j = cJSON_Parse(line);
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "step"), *t = cJSON_GetObjectItemCaseSensitive(j, "token_error"),
                    *q = cJSON_GetObjectItemCaseSensitive(j, "seq_acc");
        if (cJSON_IsNumber(s) && cJSON_IsNumber(t) && cJSON_IsNumber(q)) {
            steps[n] = (long)s->valuedouble, tok[n] = t->valuedouble, seq[n] = 1 - q->valuedouble;
            if (widest < 0 || seq[n] - tok[n] > seq[widest] - tok[widest]) widest = n;
            n++;
        }
        cJSON_Delete(j);
    }
    free(m);
    CHECK(widest >= 0 && seq[widest] - tok[widest] > 0.01, "no evaluation where the sequence error exceeds the token error");
    if (widest < 0) return;
    double bound = (tok[widest] + seq[widest]) / 2;
    long want_tok = 120, want_seq = 120;
    for (int i = n - 1; i >= 0; i--) {
        if (tok[i] <= bound) want_tok = steps[i];
        if (seq[i] <= bound) want_seq = steps[i];
    }
    CHECK(want_tok < want_seq, "bound %.4f: token error stops at %ld, sequence error at %ld", bound, want_tok, want_seq);
    const char *names[2] = {"token", "seq"};
    const long want[2] = {want_tok, want_seq};
    for (int k = 0; k < 2; k++) {
        char out[512], b[64], metric[64];
        snprintf(out, sizeof out, "%s/stop_%s", tmp, names[k]);
        snprintf(b, sizeof b, "eval.stop_at_error=%.6f", bound);
        snprintf(metric, sizeof metric, "eval.stop_metric=%s", names[k]);
        const char *sets[] = {b, metric};
        AlError err;
        CHECK(run(out, sets, 2, 0, &err) == 0, "stop_metric %s: %s", names[k], err.msg);
        int early = 0;
        long got = summary_steps(out, &early);
        CHECK(got == want[k] && early == (want[k] < 120), "stop_metric %s, bound %.4f: stopped at %ld (early %d), want %ld",
              names[k], bound, got, early, want[k]);
    }
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/attnlab_train_XXXXXX");
    if (!mkdtemp(tmp)) return 1;
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s/config.json", tmp);
    write_file(cfg, CONFIG);
    test_short_run();
    test_stop_metric();
    test_dropout_trains();
    test_resume_is_exact();
    test_resume_extends_decay();
    test_resume_after_early_stop();
    test_model_round_trip();
    test_bad_input();
    test_resume_older_checkpoint();
    test_streaming_resume();
    test_data_then_file();
    test_nonfinite_stops();
    test_nonfinite_modes();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    return check_exit("test_train");
}
