/* test_bad_inputs.c — runs every row of tests/bad_inputs.tsv (the table of every
 * error a bad config, dataset or checkpoint produces; its header says what each
 * column means) through the entry points `./train` uses: train_run for a run or a
 * --resume, distill_main for `./train distill`, jsonl_read for the reader limits,
 * sweep_grid_curve for `./train curve SWEEP_DIR --x AXIS` (a sweep's grid.json),
 * cli_eval / cli_generate / cli_inspect for `./train eval|generate|inspect RUN_DIR`.
 *
 * Each row must fail with its exit code, and the message must name the input (the
 * file, or the --set override), the place in it (key path, line:column, line,
 * tensor or metadata key) and contain the row's fragment.  A config or dataset
 * error must also leave nothing behind: the run folder is not created.
 *
 * Checkpoint rows start from one good run folder (trained here, tiny) and replace
 * train_state.safetensors or model.safetensors by a committed bad file or by a
 * generator's edit of the good one (edit_header, edit_data), so the checks after
 * the format's own (format tag, config, metadata, shapes, checksums, values) are
 * reached too. */
#include "check.h"
#include "testutil.h"
#include "attnlab/anna/distill.h"
#include "attnlab/cli/use.h"
#include "attnlab/data/jsonl.h"
#include "attnlab/io/crc32c.h"
#include "attnlab/sweep/plot.h"
#include "attnlab/train/trainer.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define TABLE "tests/bad_inputs.tsv"
#define OK_CONFIG "tests/bad_inputs/config/ok.json"
#define GOOD_TEST_SET "tests/bad_inputs/dataset/good.jsonl"
#define GOOD_GRID "tests/bad_inputs/grid/ok.json"
#define MAX_SETS 8
#define ROW_SECONDS 60   /* a row still running after this is a hang (e.g. a blocking read) */

static char tmp[256];
static int current_line;   /* the row running, for the alarm's message */

typedef struct Row {
    int line;
    char *kind, *input, *sets, *source, *where, *message;
    int exit;
} Row;

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static int copy_file(const char *from, const char *to) {
    size_t n = 0;
    char *data = tu_read_file(from, &n);
    FILE *f = data ? fopen(to, "wb") : NULL;
    int ok = f && fwrite(data, 1, n, f) == n;
    if (f) ok &= fclose(f) == 0;
    free(data);
    return ok ? 0 : -1;
}

/* Replaces every "{KEY}" in text by value (in place, text has room for cap bytes). */
static void substitute(char *text, size_t cap, const char *key, const char *value) {
    for (char *at = strstr(text, key); at; at = strstr(at + strlen(value), key)) {
        size_t klen = strlen(key), vlen = strlen(value), rest = strlen(at + klen);
        if (at - text + vlen + rest + 1 > cap) return;
        memmove(at + vlen, at + klen, rest + 1);
        memcpy(at, value, vlen);
    }
}

/* Splits "a;b;c" in place into at most MAX_SETS strings; "-" is none. */
static int split_sets(char *s, const char **out) {
    int n = 0;
    if (!strcmp(s, "-")) return 0;
    for (char *p = strtok(s, ";"); p && n < MAX_SETS; p = strtok(NULL, ";")) out[n++] = p;
    return n;
}

/* ---- generators: edits of a good safetensors file's header ------------------------- */

/* Writes a safetensors file: the header h (unpadded, as other writers may) and the
 * data buffer. */
static int write_st(const char *path, const cJSON *h, const unsigned char *data, size_t n) {
    char *json = cJSON_PrintUnformatted(h);
    FILE *f = json ? fopen(path, "wb") : NULL;
    int rc = -1;
    if (f) {
        unsigned char len_le[8];
        for (int i = 0; i < 8; i++) len_le[i] = (unsigned char)((uint64_t)strlen(json) >> (8 * i));
        fwrite(len_le, 1, 8, f);
        fputs(json, f);
        fwrite(data, 1, n, f);
        rc = fclose(f) ? -1 : 0;
    }
    free(json);
    return rc;
}

/* Applies flip:TENSOR:BYTE (flips the lowest bit of byte BYTE of the tensor's data,
 * header untouched: what a damaged disk does) or value:TENSOR:INDEX=X (sets F32
 * element INDEX to X, e.g. nan, and updates the tensor's "crc32c." checksum so the
 * file is consistent and only the value is wrong) to the file at path. */
static int edit_data(const char *path, const char *gen) {
    size_t size = 0;
    unsigned char *bytes = (unsigned char *)tu_read_file(path, &size);
    uint64_t hlen = 0;
    for (int i = 7; bytes && size >= 8 && i >= 0; i--) hlen = hlen << 8 | bytes[i];
    cJSON *h = bytes && size >= 8 ? cJSON_ParseWithLength((const char *)bytes + 8, (size_t)hlen) : NULL;
    char arg[512];
    snprintf(arg, sizeof arg, "%s", strchr(gen, ':') + 1);
    char *eq = strchr(arg, '='), *colon;
    if (eq) *eq = 0;
    colon = strrchr(arg, ':');
    if (colon) *colon = 0;
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(h, arg), "data_offsets");
    long at = colon ? atol(colon + 1) : -1;
    if (cJSON_GetArraySize(off) != 2) off = NULL;
    uint64_t begin = off ? (uint64_t)cJSON_GetArrayItem(off, 0)->valuedouble : 0;
    uint64_t end = off ? (uint64_t)cJSON_GetArrayItem(off, 1)->valuedouble : 0;
    unsigned char *data = bytes ? bytes + 8 + hlen : NULL;
    int rc = -1;
    if (!strncmp(gen, "flip:", 5) && off && at >= 0 && begin + (uint64_t)at < end) {
        data[begin + (uint64_t)at] ^= 1;
        rc = write_st(path, h, data, size - 8 - (size_t)hlen);
    } else if (!strncmp(gen, "value:", 6) && off && eq && at >= 0 && begin + 4 * (uint64_t)at + 4 <= end) {
        float x = strtof(eq + 1, NULL);
        memcpy(data + begin + 4 * (uint64_t)at, &x, 4);
        char key[600], crc[9];
        snprintf(key, sizeof key, "crc32c.%s", arg);
        snprintf(crc, sizeof crc, "%08x", crc32c(0, data + begin, (size_t)(end - begin)));
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(h, "__metadata__");
        if (cJSON_GetObjectItemCaseSensitive(meta, key)) cJSON_ReplaceItemInObjectCaseSensitive(meta, key, cJSON_CreateString(crc));
        rc = write_st(path, h, data, size - 8 - (size_t)hlen);
    }
    cJSON_Delete(h);
    free(bytes);
    return rc;
}

/* Applies gen:meta:KEY[=VALUE], tensor:NAME:FIELD=JSON, rename:OLD=NEW or
 * reshape:NAME to the header of the file at path; *n gets the reshaped tensor's
 * element count.  Returns 0, or -1 when the generator is unknown or fails. */
static int edit_header(const char *path, const char *gen, long *n) {
    size_t size = 0;
    unsigned char *bytes = (unsigned char *)tu_read_file(path, &size);
    if (!bytes || size < 8) return -1;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | bytes[i];
    cJSON *h = cJSON_ParseWithLength((const char *)bytes + 8, (size_t)hlen);
    char arg[512];
    snprintf(arg, sizeof arg, "%s", strchr(gen, ':') + 1);
    char *eq = strchr(arg, '=');
    int rc = h ? 0 : -1;
    if (!rc && !strncmp(gen, "meta:", 5)) {
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(h, "__metadata__");
        if (eq) *eq = 0;
        cJSON_DeleteItemFromObjectCaseSensitive(meta, arg);
        if (eq) cJSON_AddStringToObject(meta, arg, eq + 1);
    } else if (!rc && !strncmp(gen, "tensor:", 7) && eq) {
        *eq = 0;
        char *field = strrchr(arg, ':');
        cJSON *t = field ? cJSON_GetObjectItemCaseSensitive(h, (*field = 0, arg)) : NULL;
        cJSON *v = cJSON_Parse(eq + 1);
        rc = t && v ? 0 : -1;
        if (!rc) cJSON_ReplaceItemInObjectCaseSensitive(t, field + 1, v);
        else cJSON_Delete(v);
    } else if (!rc && !strncmp(gen, "rename:", 7) && eq) {
        *eq = 0;
        cJSON *t = cJSON_DetachItemFromObjectCaseSensitive(h, arg);
        rc = t ? 0 : -1;
        if (t) cJSON_AddItemToObject(h, eq + 1, t);
    } else if (!rc && !strncmp(gen, "reshape:", 8)) {
        cJSON *t = cJSON_GetObjectItemCaseSensitive(h, arg), *shape = cJSON_GetObjectItemCaseSensitive(t, "shape");
        *n = 1;
        for (cJSON *d = shape ? shape->child : NULL; d; d = d->next) *n *= (long)d->valuedouble;
        char text[64];
        snprintf(text, sizeof text, "[1,%ld]", *n);
        rc = shape ? 0 : -1;
        if (!rc) cJSON_ReplaceItemInObjectCaseSensitive(t, "shape", cJSON_Parse(text));
    } else {
        rc = -1;
    }
    if (!rc) rc = write_st(path, h, bytes + 8 + hlen, size - 8 - (size_t)hlen);
    cJSON_Delete(h);
    free(bytes);
    return rc;
}

/* gen:longrow:N — a JSONL file of one row of N tokens, every one scored. */
static int long_row(const char *path, int n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    const char *keys[3] = { "tokens", "labels", "mask" };
    for (int k = 0; k < 3; k++) {
        fprintf(f, "%s\"%s\": [", k ? "], " : "{", keys[k]);
        for (int i = 0; i < n; i++) fputs(i ? ", 1" : "1", f);
    }
    fputs("]}\n", f);
    return fclose(f) ? -1 : 0;
}

/* Puts the row's bad file at `target` (a copy of the good one already there). */
static int make_input(const Row *r, const char *target, long *n) {
    const char *gen = !strncmp(r->input, "gen:", 4) ? r->input + 4 : NULL;
    if (!gen) return copy_file(r->input, target);
    if (!strcmp(gen, "none")) return 0;
    if (!strcmp(gen, "missing")) return unlink(target);
    if (!strcmp(gen, "directory")) return unlink(target) || mkdir(target, 0755);
    if (!strcmp(gen, "fifo")) return (unlink(target) && errno != ENOENT) || mkfifo(target, 0644);
    if (!strncmp(gen, "longrow:", 8)) return long_row(target, atoi(gen + 8));
    if (!strncmp(gen, "flip:", 5) || !strncmp(gen, "value:", 6)) return edit_data(target, gen);
    return edit_header(target, gen, n);
}

/* Config and dataset inputs: a committed file, or one a generator makes in tmp. */
static void input_path(const Row *r, const char *name, char *file) {
    if (strncmp(r->input, "gen:", 4) || !strcmp(r->input, "gen:big")) {
        snprintf(file, 512, "%s", r->input);
        return;
    }
    snprintf(file, 512, "%s/line%d-%s", tmp, r->line, name);
    long n = 0;
    CHECK(make_input(r, file, &n) == 0, "line %d: cannot make the input '%s'", r->line, r->input);
}

/* ---- the memory a row may use -------------------------------------------------------- */

/* "memory_limit=4G" among a row's sets: the run gets that much address space above
 * what this process has mapped already (RLIMIT_AS), so the memory check's verdict
 * does not depend on the machine.  Relative, because a sanitizer build maps
 * terabytes of shadow memory up front.  Returns the sets left. */
static struct rlimit saved_as;
static int memory_limited;

static int take_memory_limit(const char **sets, int n) {
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (strncmp(sets[i], "memory_limit=", 13)) {
            sets[kept++] = sets[i];
            continue;
        }
        FILE *f = fopen("/proc/self/statm", "r");
        long pages = 0;
        if (!f || fscanf(f, "%ld", &pages) != 1) pages = 0;
        if (f) fclose(f);
        double room = atof(sets[i] + 13) * (strchr(sets[i], 'G') ? 1 << 30 : strchr(sets[i], 'M') ? 1 << 20 : 1);
        getrlimit(RLIMIT_AS, &saved_as);
        struct rlimit rl = saved_as;
        rl.rlim_cur = (rlim_t)((double)pages * (double)sysconf(_SC_PAGESIZE) + room);
        if (saved_as.rlim_max != RLIM_INFINITY && rl.rlim_cur > saved_as.rlim_max) rl.rlim_cur = saved_as.rlim_max;
        memory_limited = setrlimit(RLIMIT_AS, &rl) == 0;
        CHECK(memory_limited, "cannot set RLIMIT_AS for '%s'", sets[i]);
    }
    return kept;
}

static void restore_memory_limit(void) {
    if (memory_limited) setrlimit(RLIMIT_AS, &saved_as);
    memory_limited = 0;
}

static void on_alarm(int sig) {
    (void)sig;
    char text[160];
    int n = snprintf(text, sizeof text, "%s:%d: still running after %d s (a hang: a blocking read, or a draw loop "
                     "that cannot finish?)\n", TABLE, current_line, ROW_SECONDS);
    if (write(2, text, (size_t)n) < 0) _exit(1);
    _exit(1);
}

/* ---- running one row ------------------------------------------------------------- */

static int run_config(const Row *r, const char *out, const char **sets, int n_sets, char *file, AlError *err) {
    input_path(r, "config.json", file);
    if (!strcmp(r->input, "gen:big")) {   /* a data file given as a config */
        snprintf(file, 512, "%s/big.json", tmp);
        FILE *f = fopen(file, "wb");
        for (int i = 0; f && i < 17 << 10; i++) fprintf(f, "%1023s\n", "");
        if (f) fclose(f);
    }
    TrainOptions o = { .config_path = file, .overrides = sets, .n_overrides = n_sets, .out_dir = out, .quiet = 1 };
    return train_run(&o, err);
}

static int set_option(JsonlOptions *o, const char *kv) {
    long long v = atoll(strchr(kv, '=') ? strchr(kv, '=') + 1 : "0");
    if (!strncmp(kv, "vocab_size=", 11)) o->vocab_size = (int)v;
    else if (!strncmp(kv, "max_len=", 8)) o->max_len = (int)v;
    else if (!strncmp(kv, "max_line_bytes=", 15)) o->max_line_bytes = (size_t)v;
    else if (!strncmp(kv, "max_cells=", 10)) o->max_cells = v;
    else return -1;
    return 0;
}

static int run_dataset(const Row *r, const char *out, const char **sets, int n_sets, char *file, AlError *err) {
    input_path(r, "data.jsonl", file);
    if (n_sets) {   /* the reader's limits, straight through the library */
        JsonlOptions o = {0};
        for (int i = 0; i < n_sets; i++) CHECK(set_option(&o, sets[i]) == 0, "line %d: bad option '%s'", r->line, sets[i]);
        Dataset d;
        int rc = jsonl_read(file, &o, &d, NULL, err);
        dataset_free(&d);
        return rc;
    }
    char cfg[600], text[2048];
    snprintf(cfg, sizeof cfg, "%s/file_task.json", tmp);
    snprintf(text, sizeof text, "{\"name\": \"bad\", \"task\": {\"type\": \"file\", \"train_path\": \"%s\", "
             "\"test_path\": \"%s\"},\n \"model\": {\"d_model\": 8, \"attention\": {\"causal\": true}},\n"
             " \"train\": {\"steps\": 2, \"batch_size\": 2}, \"eval\": {\"every\": 1}}\n", file, GOOD_TEST_SET);
    CHECK(tu_write_file(cfg, text) == 0, "cannot write %s", cfg);
    TrainOptions o = { .config_path = cfg, .out_dir = out, .quiet = 1 };
    return train_run(&o, err);
}

/* Data rows: `./train data INPUT --set … --out DIR`, which writes a task's datasets. */
static int run_data(const Row *r, const char *out, const char **sets, int n_sets, char *file, AlError *err) {
    input_path(r, "config.json", file);
    TrainOptions o = { .config_path = file, .overrides = sets, .n_overrides = n_sets, .out_dir = out, .quiet = 1 };
    return train_write_data(&o, err);
}

/* Checkpoint and model rows: a copy of the good run folder with one file replaced. */
static int run_checkpoint(const Row *r, const char *out, const char **sets, int n_sets, char *file, long *n,
                          AlError *err) {
    static const char *const FILES[] = { "config.json", "metrics.jsonl", "summary.json", "model.safetensors",
                                         "train_state.safetensors" };
    char from[600], to[600];
    mkdir(out, 0755);
    for (int i = 0; i < 5; i++) {
        snprintf(from, sizeof from, "%s/base/%s", tmp, FILES[i]);
        snprintf(to, sizeof to, "%s/%s", out, FILES[i]);
        CHECK(copy_file(from, to) == 0, "line %d: cannot copy %s", r->line, from);
    }
    int model = !strcmp(r->kind, "model");
    snprintf(file, 512, "%s/%s", out, model ? "model.safetensors" : "train_state.safetensors");
    CHECK(make_input(r, file, n) == 0, "line %d: cannot make the input '%s'", r->line, r->input);
    if (model) {
        const char *grid[] = { "distill.runs=1", "distill.tables=1", "distill.funcs=1" };
        return distill_main(out, NULL, grid, 3, 1, 0, err);
    }
    TrainOptions o = { .config_path = OK_CONFIG, .overrides = sets, .n_overrides = n_sets, .out_dir = out,
                       .resume = 1, .quiet = 1 };
    return train_run(&o, err);
}

/* Grid rows: sweep_grid_curve of a sweep folder whose grid.json is INPUT (or made by
 * a generator from the good one); sets: x=AXIS and metric=M.  A rejected grid leaves
 * no figure. */
static int run_grid(const Row *r, const char *out, const char **sets, int n_sets, char *file, long *n,
                    AlError *err) {
    const char *x = NULL, *metric = NULL;
    for (int i = 0; i < n_sets; i++) {
        if (!strncmp(sets[i], "x=", 2)) x = sets[i] + 2;
        else if (!strncmp(sets[i], "metric=", 7)) metric = sets[i] + 7;
        else CHECK(0, "line %d: bad option '%s' (x=AXIS or metric=M)", r->line, sets[i]);
    }
    char svg[600];
    mkdir(out, 0755);
    snprintf(file, 512, "%s/grid.json", out);
    snprintf(svg, sizeof svg, "%s/figure.svg", out);
    CHECK(copy_file(GOOD_GRID, file) == 0 && make_input(r, file, n) == 0, "line %d: cannot make the input '%s'",
          r->line, r->input);
    int rc = sweep_grid_curve(&out, 1, x ? x : "task.seq_len", metric, svg, err);
    CHECK(!exists(svg), "%s:%d: a rejected grid left %s behind", TABLE, r->line, svg);
    return rc;
}

/* Use rows: `./train COMMAND RUN_DIR ARGS…` (sets: COMMAND;ARGS…, {FILE} = the input)
 * on a finished run folder: the good one (eval, inspect) or its causal twin
 * (generate).  The input: a file (given as {FILE}), gen:missing (a run folder that
 * does not exist: it is the file) or gen:none ({FILE} = the run's config.json). */
static int run_use(const Row *r, const char **sets, int n_sets, char *file, AlError *err) {
    char dir[400], *argv[MAX_SETS + 2];
    int generate = n_sets && !strcmp(sets[0], "generate");
    snprintf(dir, sizeof dir, "%s/%s", tmp, generate ? "base_causal" : "base");
    if (!strcmp(r->input, "gen:missing")) snprintf(dir, sizeof dir, "%s/no_such_run", tmp);
    if (!strcmp(r->input, "gen:missing")) snprintf(file, 512, "%s", dir);
    else if (!strcmp(r->input, "gen:none")) snprintf(file, 512, "%s/config.json", dir);
    else snprintf(file, 512, "%s", r->input);
    int argc = 0;
    argv[argc++] = (char *)(n_sets ? sets[0] : "eval");
    argv[argc++] = dir;
    for (int i = 1; i < n_sets; i++) argv[argc++] = !strcmp(sets[i], "{FILE}") ? file : (char *)sets[i];
    if (!strcmp(argv[0], "eval")) return cli_eval(argc, argv, err);
    return generate ? cli_generate(argc, argv, err) : cli_inspect(argc, argv, err);
}

/* The row's entry point; -1 for an unknown kind. */
static int run_kind(const Row *r, const char *out, const char **sets, int n_sets, char *file, long *n, AlError *err) {
    if (!strcmp(r->kind, "config")) return run_config(r, out, sets, n_sets, file, err);
    if (!strcmp(r->kind, "dataset")) return run_dataset(r, out, sets, n_sets, file, err);
    if (!strcmp(r->kind, "data")) return run_data(r, out, sets, n_sets, file, err);
    if (!strcmp(r->kind, "checkpoint") || !strcmp(r->kind, "model"))
        return run_checkpoint(r, out, sets, n_sets, file, n, err);
    if (!strcmp(r->kind, "grid")) return run_grid(r, out, sets, n_sets, file, n, err);
    if (!strcmp(r->kind, "use")) return run_use(r, sets, n_sets, file, err);
    return -1;
}

static void run_row(Row *r, int index) {
    char out[400], file[512] = "", want[1024];
    const char *sets[MAX_SETS];
    int n_sets = split_sets(r->sets, sets);
    long n = 0;
    AlError err = {0};
    snprintf(out, sizeof out, "%s/run%d", tmp, index);
    n_sets = take_memory_limit(sets, n_sets);
    current_line = r->line;
    alarm(ROW_SECONDS);
    int rc = run_kind(r, out, sets, n_sets, file, &n, &err);
    alarm(0);
    restore_memory_limit();
    if (rc < 0) {
        CHECK(0, "%s:%d: unknown kind '%s'", TABLE, r->line, r->kind);
        return;
    }
    char num[32];
    snprintf(num, sizeof num, "%ld", n);
    snprintf(want, sizeof want, "%s", r->message);
    substitute(want, sizeof want, "{FILE}", file);
    substitute(want, sizeof want, "{DIR}", out);
    substitute(want, sizeof want, "{N}", num);
    CHECK(rc == r->exit && err.code == r->exit, "%s:%d (%s): exit %d (code %d), expected %d: %s", TABLE, r->line,
          r->input, rc, err.code, r->exit, err.msg);
    if (!strcmp(r->source, "set"))
        CHECK(!strncmp(err.msg, "--set ", 6), "%s:%d: message does not start with the --set: %s", TABLE, r->line, err.msg);
    else
        CHECK(strstr(err.msg, file) != NULL, "%s:%d: message does not name '%s': %s", TABLE, r->line, file, err.msg);
    CHECK(!strcmp(r->where, "-") || strstr(err.msg, r->where), "%s:%d: message lacks the place '%s': %s", TABLE,
          r->line, r->where, err.msg);
    CHECK(strstr(err.msg, want) != NULL, "%s:%d: message lacks\n    %s\n  got\n    %s", TABLE, r->line, want, err.msg);
    if (!strcmp(r->kind, "config") || !strcmp(r->kind, "dataset") || !strcmp(r->kind, "data"))
        CHECK(!exists(out), "%s:%d: a rejected input left %s behind", TABLE, r->line, out);
}

/* ---- the table ------------------------------------------------------------------- */

static int parse_row(char *line, int number, Row *r) {
    char *f[7];
    int n = 0;
    for (char *p = line; n < 7; n++) {
        f[n] = p;
        p = strchr(p, '\t');
        if (!p) { n++; break; }
        *p++ = 0;
    }
    if (n != 7) return -1;
    char *nl = strchr(f[6], '\n');
    if (nl) *nl = 0;
    *r = (Row){ number, f[0], f[1], f[2], f[4], f[5], f[6], atoi(f[3]) };
    return 0;
}

int main(void) {
    snprintf(tmp, sizeof tmp, "%s/attnlab_bad_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp)) return 1;
    signal(SIGALRM, on_alarm);
    char base[400];
    snprintf(base, sizeof base, "%s/base", tmp);
    TrainOptions o = { .config_path = OK_CONFIG, .out_dir = base, .quiet = 1 };
    AlError err = {0};
    CHECK(train_run(&o, &err) == 0, "the good run failed: %s", err.msg);
    const char *causal[] = { "model.attention.causal=true" };
    snprintf(base, sizeof base, "%s/base_causal", tmp);
    TrainOptions oc = { .config_path = OK_CONFIG, .overrides = causal, .n_overrides = 1, .out_dir = base, .quiet = 1 };
    CHECK(train_run(&oc, &err) == 0, "the good causal run failed: %s", err.msg);
    char *table = tu_read_file(TABLE, NULL);
    CHECK(table != NULL, "cannot read %s (run from the repository root)", TABLE);
    int rows = 0, line_no = 0, per_kind[7] = {0};
    static const char *const KINDS[7] = { "config", "dataset", "data", "checkpoint", "model", "grid", "use" };
    for (char *line = table, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        line_no++;
        if (*line == '#' || !*line) continue;
        Row r = {0};
        int parsed = parse_row(line, line_no, &r) == 0;
        CHECK(parsed, "%s:%d: not 7 tab-separated columns", TABLE, line_no);
        if (!parsed) continue;
        run_row(&r, rows++);
        for (int k = 0; k < 7; k++) per_kind[k] += !strcmp(r.kind, KINDS[k]);
    }
    printf("%d rows: %d config, %d dataset, %d data, %d checkpoint, %d model, %d grid, %d use\n", rows, per_kind[0],
           per_kind[1], per_kind[2], per_kind[3], per_kind[4], per_kind[5], per_kind[6]);
    CHECK(rows > 100, "only %d rows in %s", rows, TABLE);
    free(table);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    return check_exit("test_bad_inputs");
}
