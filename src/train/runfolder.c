/* runfolder.c — see runfolder.h. */
#include "attnlab/train/runfolder.h"
#include "attnlab/util/fsutil.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a run and its distillation write into the folder (runfolder_clear removes
 * these, and files starting with "anna_"); train.log of a sweep cell is not ours. */
static const char *const RUN_FILES[] = {
    "config.json", "metrics.jsonl", "summary.json", "model.safetensors", "train_state.safetensors", "curve.svg",
};

void runfolder_path(const RunFolder *f, const char *file, char *out, size_t n) {
    AL_ASSERT(!al_path_fmt(out, n, NULL, "%s/%s", f->dir, file));   /* set_dir left room for it */
}

static int has(const RunFolder *f, const char *file) {
    char path[AL_PATH_MAX];
    struct stat st;
    runfolder_path(f, file, path, sizeof path);
    return lstat(path, &st) == 0;
}

const char *runfolder_resume_difference(const Config *want, const Config *have) {
    Config same = *have;
    memcpy(same.name, want->name, sizeof same.name);
    same.train.steps = want->train.steps;
    same.train.threads = want->train.threads;
    same.train.on_nonfinite = want->train.on_nonfinite;
    same.eval = want->eval;
    return cfg_first_difference(want, &same);
}

long runfolder_finished_step(const RunFolder *f, int *stopped_early) {
    char path[AL_PATH_MAX];
    runfolder_path(f, "summary.json", path, sizeof path);
    char *text = al_read_file(path, NULL);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(j, "steps");
    long step = cJSON_IsNumber(steps) ? (long)steps->valuedouble : -1;
    if (stopped_early) *stopped_early = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "stopped_early"));
    cJSON_Delete(j);
    free(text);
    return step;
}

/* "a finished run of N steps" / "a run with a checkpoint" / …, for the refusal. */
static void describe_run(const RunFolder *f, char *out, size_t n) {
    long steps = runfolder_finished_step(f, NULL);
    if (steps >= 0) snprintf(out, n, "a finished run of %ld steps (summary.json)", steps);
    else if (has(f, "train_state.safetensors")) snprintf(out, n, "a run with a checkpoint (train_state.safetensors)");
    else if (has(f, "model.safetensors")) snprintf(out, n, "a trained model (model.safetensors)");
    else snprintf(out, n, "a run's summary.json");
}

/* The step of the last complete line of dir/metrics.jsonl; 0 when there is none. */
static long last_logged_step(const char *dir) {
    char path[AL_PATH_MAX];
    if (al_path_fmt(path, sizeof path, NULL, "%s/metrics.jsonl", dir)) return 0;
    char *text = al_read_file(path, NULL);
    long last = 0;
    for (char *line = text; line && *line;) {
        char *end = strchr(line, '\n');
        if (!end) break;   /* a line half written when the run was killed */
        *end = 0;
        const char *s = strstr(line, "\"step\":");
        if (s) last = atol(s + 7);
        line = end + 1;
    }
    free(text);
    return last;
}

int runfolder_lost_checkpoint(const char *dir, char *out, size_t n) {
    char path[AL_PATH_MAX];
    struct stat st;
    if (al_path_fmt(path, sizeof path, NULL, "%s/train_state.safetensors", dir) || lstat(path, &st) == 0) return 0;
    long logged = last_logged_step(dir);
    if (logged <= 0) return 0;
    snprintf(out, n, "%s/metrics.jsonl reaches step %ld but no train_state.safetensors is left to continue it: "
             "the run starts again from step 0", dir, logged);
    return 1;
}

/* A new run may start here only when nothing of value would be replaced. */
static int check_new_run(const RunFolder *f, const Config *cfg, AlError *err) {
    char what[128], path[AL_PATH_MAX];
    if (has(f, "summary.json") || has(f, "train_state.safetensors") || has(f, "model.safetensors")) {
        describe_run(f, what, sizeof what);
        return al_fail(err, 2, "%s holds %s; nothing was changed: continue it with --resume, replace it with "
                       "--force, or give this run another --out", f->dir, what);
    }
    if (!has(f, "config.json")) return 0;
    Config old;
    AlError e = {0};
    runfolder_path(f, "config.json", path, sizeof path);
    if (cfg_load(&old, path, NULL, 0, &e))
        return al_fail(err, 2, "%s holds a config.json that is not a valid config (%s); nothing was changed: "
                       "replace it with --force, or give this run another --out", f->dir, e.msg);
    const char *key = runfolder_resume_difference(cfg, &old);
    if (key)
        return al_fail(err, 2, "%s holds the start of a run of another config (%s differs); nothing was changed: "
                       "replace it with --force, or give this run another --out", f->dir, key);
    return 0;   /* the same config, no checkpoint yet: starting it again loses nothing */
}

static int set_dir(RunFolder *f, const Config *cfg, const RunFolderOptions *o, AlError *err) {
    const char *opt = o->out_dir ? "--out" : "name";
    if (o->out_dir && al_path_check(o->out_dir, AL_FOLDER_ROOM, opt, err)) return err->code;
    if (o->out_dir ? al_path_fmt(f->dir, sizeof f->dir, err, "%s", o->out_dir)
                   : al_path_fmt(f->dir, sizeof f->dir, err, "results/%s", cfg->name))   /* a name is short */
        return err->code;
    if (!f->dir[0]) return al_fail(err, 2, "--out: the run folder path is empty");
    struct stat st, root;
    if (stat(f->dir, &st) == 0 && stat("/", &root) == 0 && st.st_dev == root.st_dev && st.st_ino == root.st_ino) return al_fail(err, 2, "%s '%s': refusing to use the root folder '/' as a run folder", opt, f->dir);
    return 0;
}

int runfolder_open(RunFolder *f, const Config *cfg, const RunFolderOptions *o, AlError *err) {
    dirlock_init(&f->lock);
    if (o->resume && o->force)
        return al_fail(err, 2, "--resume and --force do not mix: --resume continues the run in the folder, "
                       "--force replaces it");
    if (set_dir(f, cfg, o, err)) return err->code;
    struct stat st;
    int exists = stat(f->dir, &st) == 0;
    /* --resume of a missing folder: checkpoint_resume names the missing checkpoint. */
    if (!exists && o->resume) return 0;
    if (!exists && al_mkdir_p(f->dir, err)) return err->code;
    if (exists && !S_ISDIR(st.st_mode)) return al_fail(err, 1, "'%s' exists but is not a folder", f->dir);
    if (dirlock_acquire(&f->lock, f->dir, "run", 0, err)) return err->code;
    if (!o->resume && !o->force && check_new_run(f, cfg, err)) return err->code;
    return 0;
}

static int remove_file(const RunFolder *f, const char *file, AlError *err) {
    char path[AL_PATH_MAX];
    if (al_path_fmt(path, sizeof path, err, "%s/%s", f->dir, file)) return err->code;
    if (unlink(path) != 0 && errno != ENOENT)
        return al_fail(err, 1, "--force: cannot remove '%s': %s", path, strerror(errno));
    return 0;
}

int runfolder_clear(const RunFolder *f, AlError *err) {
    for (size_t i = 0; i < sizeof RUN_FILES / sizeof RUN_FILES[0]; i++)
        if (remove_file(f, RUN_FILES[i], err)) return err->code;
    DIR *d = opendir(f->dir);
    if (!d) return 0;
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));)
        if (!strncmp(e->d_name, "anna_", 5)) rc = remove_file(f, e->d_name, err);
    closedir(d);
    return rc;
}

void runfolder_close(RunFolder *f) { dirlock_release(&f->lock); }
