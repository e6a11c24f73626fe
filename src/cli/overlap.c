/* overlap.c — `./train overlap RUN_DIR [--steps N] [--set eval.*=…] [--json]` (cli/use.h):
 * how many of the run's test examples its training also contains (data/overlap.h).
 * A streaming run's training rows are replayed from its seed (train/step.h,
 * step_data_stream): steps × train.batch_size rows, the steps from summary.json. */
#include "attnlab/cli/use.h"
#include "attnlab/data/overlap.h"
#include "attnlab/train/step.h"
#include "attnlab/util/version.h"
#include "use_common.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>

/* The steps the run took: RUN_DIR/summary.json "steps", which counts every batch
 * drawn (updates skipped for a non-finite loss too). */
static int run_steps(const char *dir, long *steps, AlError *err) {
    char path[AL_PATH_MAX];
    if (al_path_fmt(path, sizeof path, err, "%s/summary.json", dir)) return err->code;
    char *text = al_read_file(path, NULL);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "steps");
    int ok = cJSON_IsNumber(s) && s->valuedouble >= 0 && s->valuedouble <= 1e12;
    if (ok) *steps = (long)s->valuedouble;
    const char *why = text ? "has no number \"steps\"" : "cannot be read";
    cJSON_Delete(j);
    free(text);
    if (ok) return 0;
    return al_fail(err, 2, "overlap: %s %s, so the number of batches the run drew is unknown (has it finished?); "
                   "give it with --steps N", path, why);
}

static cJSON *overlap_json(const LoadedRun *r, long steps, const Overlap *o) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "run", r->dir);
    cJSON_AddStringToObject(j, "training", o->streaming ? "streamed" : "fixed set");
    cJSON_AddStringToObject(j, "key", o->by_prompt ? "prompt" : "row");
    if (o->streaming) cJSON_AddNumberToObject(j, "steps", (double)steps);
    cJSON_AddNumberToObject(j, "train_rows", (double)o->train_rows);
    cJSON_AddNumberToObject(j, "train_rows_in_test", (double)o->train_rows_in_test);
    cJSON_AddNumberToObject(j, "test_rows", o->test_rows);
    cJSON_AddNumberToObject(j, "test_rows_in_train", o->test_rows_in_train);
    if (o->n_groups) {
        cJSON *groups = cJSON_AddObjectToObject(j, "groups");
        for (int k = 0; k < o->n_groups; k++) {
            cJSON *e = cJSON_AddObjectToObject(groups, r->data.gen.group_names[k]);
            cJSON_AddNumberToObject(e, "test_rows", o->group_rows[k]);
            cJSON_AddNumberToObject(e, "test_rows_in_train", o->group_in_train[k]);
        }
    }
    attnlab_add_provenance(j);
    return j;
}

static void print_text(const LoadedRun *r, long steps, long batch, const Overlap *o) {
    const char *key = o->by_prompt ? "prompt" : "whole row";
    printf("%s: %d of %d test examples (%.4f%%) are also training examples (same %s)\n", r->dir,
           o->test_rows_in_train, o->test_rows, o->test_rows ? 100.0 * o->test_rows_in_train / o->test_rows : 0.0,
           key);
    for (int k = 0; k < o->n_groups; k++)
        if (o->group_rows[k])
            printf("  group %-12s %d of %d\n", r->data.gen.group_names[k], o->group_in_train[k], o->group_rows[k]);
    if (o->streaming)
        printf("  training streamed: %ld steps x %ld rows = %ld rows drawn, %ld of them test examples\n", steps,
               batch, o->train_rows, o->train_rows_in_test);
    else
        printf("  training set: %ld rows, %ld of them test examples\n", o->train_rows, o->train_rows_in_test);
}

int cli_overlap(int argc, char **argv, AlError *err) {
    UseRun u = {0};
    if (use_parse(argc, argv, "--steps --set --json", &u.a, err) ||
        runload_open_data(&u.r, u.a.dir, u.a.sets, u.a.n_sets, err)) {
        use_end(&u);
        return err->code;
    }
    long steps = u.a.steps, batch = u.r.cfg.train.batch_size;
    if (steps >= 0 && !u.r.data.streaming)
        al_fail(err, 2, "overlap: --steps is for streaming runs; %s trains on a fixed set of %d rows", u.r.config_path,
                u.r.data.train.n);
    else if (steps < 0 && u.r.data.streaming) run_steps(u.r.dir, &steps, err);
    if (err->code) {
        use_end(&u);
        return err->code;
    }
    Rng stream = step_data_stream(u.r.cfg.seed);
    Overlap o;
    overlap_measure(&u.r.data, &stream, u.r.data.streaming ? steps * batch : 0, &o);
    if (u.a.json) {
        cJSON *j = overlap_json(&u.r, steps, &o);
        char *text = cJSON_Print(j);
        printf("%s\n", text);
        free(text);
        cJSON_Delete(j);
    } else {
        print_text(&u.r, steps, batch, &o);
    }
    use_end(&u);
    return 0;
}
