/* runload.c — see runload.h. */
#include "attnlab/train/runload.h"
#include "attnlab/data/jsonl.h"
#include "attnlab/train/checkpoint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The folder exists and holds config.json (and model.safetensors when with_model). */
static int check_folder(const char *dir, int with_model, AlError *err) {
    struct stat st;
    char path[AL_PATH_MAX];
    if (stat(dir, &st) != 0)
        return al_fail(err, 2, "cannot open the run folder '%s': %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return al_fail(err, 2, "'%s' is not a run folder (not a folder)", dir);
    static const char *const NEED[] = { "config.json", "model.safetensors" };
    for (int i = 0; i < 1 + with_model; i++) {
        AL_ASSERT(!al_path_fmt(path, sizeof path, NULL, "%s/%s", dir, NEED[i]));
        if (stat(path, &st) != 0)
            return al_fail(err, 2, "'%s' is not %s: cannot open '%s': %s", dir,
                           with_model ? "a finished run folder" : "a run folder", path, strerror(errno));
    }
    return 0;
}

/* Only eval.* may change: the model and its data are the run's. */
static int check_sets(const char *const *sets, int n_sets, AlError *err) {
    for (int i = 0; i < n_sets; i++)
        if (strncmp(sets[i], "eval.", 5))
            return al_fail(err, 2, "--set %s: only eval.* keys can change here (the task and the model are "
                           "the run's)", sets[i]);
    return 0;
}

/* The run's config and datasets; its model too when with_model. */
static int open_run(LoadedRun *r, const char *dir, const char *const *sets, int n_sets, int with_model,
                    AlError *err) {
    memset(r, 0, sizeof *r);
    char model_path[AL_PATH_MAX];
    if (al_path_check(dir, AL_FOLDER_ROOM, "the run folder", err)) return err->code;
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    for (size_t n = strlen(r->dir); n > 1 && r->dir[n - 1] == '/'; n--) r->dir[n - 1] = '\0';   /* "RUN/" as "RUN" */
    if (check_folder(r->dir, with_model, err) || check_sets(sets, n_sets, err)) return err->code;
    AL_ASSERT(!al_path_fmt(r->config_path, sizeof r->config_path, NULL, "%s/config.json", r->dir));
    AL_ASSERT(!al_path_fmt(model_path, sizeof model_path, NULL, "%s/model.safetensors", r->dir));
    if (cfg_load(&r->cfg, r->config_path, sets, n_sets, err)) return err->code;
    TaskSpec spec;
    if (task_build_from(cfg_task_spec(&r->cfg, &spec), r->config_path, &r->data, err)) return err->code;
    if (!with_model) return 0;
    r->model = model_create(&r->cfg.model, r->data.vocab_size, r->data.n_classes, r->data.seq_len, r->cfg.seed);
    if (checkpoint_load_model(model_path, r->model, err)) {
        runload_close(r);
        return err->code;
    }
    return 0;
}

int runload_open(LoadedRun *r, const char *dir, const char *const *sets, int n_sets, AlError *err) {
    return open_run(r, dir, sets, n_sets, 1, err);
}

int runload_open_data(LoadedRun *r, const char *dir, const char *const *sets, int n_sets, AlError *err) {
    return open_run(r, dir, sets, n_sets, 0, err);
}

/* *td moved to *dst: gen.params points into the task's own params, so it moves too. */
static void task_move(TaskData *dst, TaskData *td) {
    *dst = *td;
    if (td->gen.params) dst->gen.params = &dst->params;
    memset(td, 0, sizeof *td);
}

int runload_retest(LoadedRun *r, int seq_len, const char *const *sets, int n_sets, AlError *err) {
    if (seq_len == r->cfg.task.seq_len) return 0;
    const char *all[RUNLOAD_MAX_SETS + 1];
    char own[64];
    AL_ASSERT(n_sets <= RUNLOAD_MAX_SETS);
    snprintf(own, sizeof own, "task.seq_len=%d", seq_len);
    for (int i = 0; i < n_sets; i++) all[i] = sets[i];
    all[n_sets] = own;
    Config cfg;
    TaskSpec spec;
    TaskData td;
    if (cfg_load(&cfg, r->config_path, all, n_sets + 1, err) ||
        task_build_from(cfg_task_spec(&cfg, &spec), r->config_path, &td, err)) {
        al_error_prefix(err, "--seq-len %d", seq_len);
        return err->code;
    }
    const char *why = td.vocab_size != r->data.vocab_size ? "vocabulary"
                      : td.n_classes != r->data.n_classes ? "set of classes" : NULL;
    int rc = 0;
    if (why)
        rc = al_fail(err, 2, "--seq-len %d: %s: at task.seq_len %d the task's %s differs from the run's model's "
                     "(%d tokens and %d classes, against %d and %d), so the model cannot read its rows", seq_len,
                     r->config_path, seq_len, why, td.vocab_size, td.n_classes, r->data.vocab_size,
                     r->data.n_classes);
    else if (td.seq_len > r->model->max_len)
        rc = al_fail(err, 2, "--seq-len %d: %s: at task.seq_len %d the rows are %d tokens long, longer than the %d "
                     "the run's model was built for (task.seq_len %d)", seq_len, r->config_path, seq_len,
                     td.seq_len, r->model->max_len, r->cfg.task.seq_len);
    if (rc) {
        task_free(&td);
        return rc;
    }
    task_free(&r->data);
    task_move(&r->data, &td);
    r->cfg = cfg;
    return 0;
}

void runload_close(LoadedRun *r) {
    if (r->model) model_free(r->model);
    task_free(&r->data);
    r->model = NULL;
}

/* The token that fills rows past their end: the run's own pad, else 0. */
static int pad_token(const LoadedRun *r) {
    if (r->data.test.pad_id >= 0 && r->data.test.pad_id < r->data.vocab_size) return r->data.test.pad_id;
    if (r->data.gen.sample && r->data.gen.pad_id >= 0) return r->data.gen.pad_id;
    return 0;
}

/* d with seq_len T ≥ its own: rows copied, the rest padded (token pad, target ignored). */
static void widen(const Dataset *d, int T, int pad, Dataset *out) {
    dataset_alloc(out, d->n, T, d->vocab_size, d->n_classes);
    dataset_alloc_info(out);
    out->pad_id = pad;
    for (int r = 0; r < d->n; r++) {
        int *tok = dataset_tokens(out, r), *tgt = dataset_targets(out, r);
        for (int i = 0; i < T; i++) {
            tok[i] = i < d->seq_len ? dataset_tokens(d, r)[i] : pad;
            tgt[i] = i < d->seq_len ? dataset_targets(d, r)[i] : DATASET_IGNORE;
        }
        out->info[r] = d->info ? d->info[r] : (RowInfo){ d->seq_len, 0, -1, 0, 0 };
    }
}

int runload_read_data(const LoadedRun *r, const char *path, Dataset *out, AlError *err) {
    const Model *m = r->model;
    JsonlOptions o = { .vocab_size = m->vocab_size, .n_classes = m->n_classes, .pad_id_set = 1,
                       .pad_id = pad_token(r), .max_len = m->max_len };
    Dataset d;
    if (jsonl_read(path, &o, &d, NULL, err)) {
        /* "PATH:LINE: tokens[3]: … (vocab_size is 12)": say whose vocabulary. */
        if (strstr(err->msg, "vocab_size is") || strstr(err->msg, "n_classes is") || strstr(err->msg, "per row"))
            al_msgf(err->msg + strlen(err->msg), sizeof err->msg - strlen(err->msg),
                    " — the model of %s does not fit this file", r->dir);
        return err->code;
    }
    *out = d;
    return 0;
}

void runload_widen(const LoadedRun *r, const Dataset *d, Dataset *out) {
    widen(d, r->model->max_len, d->pad_id >= 0 ? d->pad_id : pad_token(r), out);
}

int runload_has_answers(const Dataset *d) {
    for (int i = 0; d->info && i < d->n; i++)
        if (d->info[i].prompt_len > 0 || d->info[i].answer_start >= 0) return 1;
    return 0;
}
