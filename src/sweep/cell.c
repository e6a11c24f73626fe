/* cell.c — see cell.h. */
#include "attnlab/sweep/cell.h"
#include "attnlab/io/atomic_file.h"
#include "attnlab/train/runfolder.h"
#include "attnlab/util/fsutil.h"
#include "files.h"

#include <cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cJSON *read_json(const char *dir, const char *file) {
    char path[AL_PATH_MAX];
    AL_ASSERT(!al_path_fmt(path, sizeof path, NULL, "%s/%s", dir, file));   /* cell folders were checked */
    char *text = al_read_file(path, NULL);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    return j;
}

static double number_or_nan(const cJSON *j, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

CellState cell_inspect(const char *dir, const Config *expect, char *why, size_t why_len) {
    char path[AL_PATH_MAX];
    AL_ASSERT(!al_path_fmt(path, sizeof path, NULL, "%s/config.json", dir));
    if (!sweep_exists(path)) return CELL_NEW;
    Config got;
    AlError e = {0};
    if (cfg_load(&got, path, NULL, 0, &e)) {
        snprintf(why, why_len, "has a config.json that is not a valid config (%s)", e.msg);
        return CELL_CONFLICT;
    }
    /* The keys the trainer lets a resumed run change (checkpoint.c, RESUMABLE_KEYS). */
    const char *key = runfolder_resume_difference(expect, &got);
    if (key) {
        snprintf(why, why_len, "holds a run of another config (%s differs)", key);
        return CELL_CONFLICT;
    }
    cJSON *summary = read_json(dir, "summary.json");
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(summary, "steps");
    int early = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(summary, "stopped_early"));
    long done = cJSON_IsNumber(steps) ? (long)steps->valuedouble : -1;
    cJSON_Delete(summary);
    if (done > expect->train.steps) {
        snprintf(why, why_len, "holds a run of %ld steps, more than train.steps (%d)", done, expect->train.steps);
        return CELL_CONFLICT;
    }
    /* train.threads says how a run was computed, not what it is: a sweep continued with
     * another thread count keeps the cells it finished. */
    Config same = got;
    same.train.threads = expect->train.threads;
    if (done >= 0 && !cfg_first_difference(expect, &same) && done == expect->train.steps) return CELL_DONE;
    /* A run that met its stop criterion is finished whatever train.steps says now:
     * raising the steps of a sweep must not retrain the cells that converged. */
    Config longer = same;
    longer.train.steps = expect->train.steps;
    if (done >= 0 && early && !cfg_first_difference(expect, &longer)) return CELL_DONE;
    AL_ASSERT(!al_path_fmt(path, sizeof path, NULL, "%s/train_state.safetensors", dir));
    if (sweep_exists(path)) return CELL_RESUME;
    /* Finished before, with no checkpoint to continue from (training states are not
     * kept in git): the trainer would refuse to start over it, so say it here, before
     * the sweep starts anything. */
    if (done >= 0) {
        snprintf(why, why_len, "holds a finished run of %ld steps and no train_state.safetensors to continue it to "
                 "train.steps (%d)", done, expect->train.steps);
        return CELL_CONFLICT;
    }
    /* A start whose checkpoint is gone: the trainer starts it again (and says so). */
    runfolder_lost_checkpoint(dir, why, why_len);
    return CELL_NEW;
}

int cell_read_result(const char *dir, CellResult *r) {
    cJSON *j = read_json(dir, "summary.json");
    if (!j) return 1;
    for (int m = 0; m < METRIC_COUNT; m++) r->metric[m] = number_or_nan(j, sweep_metric_summary_keys[m]);
    r->n_params = number_or_nan(j, "n_params");
    r->flops_per_seq = number_or_nan(j, "flops_per_seq");
    double steps = number_or_nan(j, "steps");
    r->steps = isfinite(steps) ? (long)steps : -1;
    r->n_groups = 0;
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(j, "test_group_token_acc")) {
        if (r->n_groups == CELL_MAX_GROUPS || !cJSON_IsNumber(g) || !g->string || strlen(g->string) >= CELL_GROUP_NAME)
            continue;
        snprintf(r->group_name[r->n_groups], CELL_GROUP_NAME, "%s", g->string);
        r->group_acc[r->n_groups++] = g->valuedouble;
    }
    cJSON_Delete(j);
    return 0;
}

int cell_last_exit(const char *dir) {
    cJSON *j = read_json(dir, CELL_STATUS);
    double code = number_or_nan(j, "exit_code");
    cJSON_Delete(j);
    return isfinite(code) ? (int)code : -1;
}

int cell_record_exit(const char *dir, int exit_code, AlError *err) {
    char path[AL_PATH_MAX], text[128];
    if (al_path_fmt(path, sizeof path, err, "%s/%s", dir, CELL_STATUS)) return 2;
    snprintf(text, sizeof text, "{\"exit_code\": %d, \"log\": \"%s\"}\n", exit_code, CELL_LOG);
    return write_text_atomic(path, text, err);
}
