/* ckpt_check.c — does a run folder hold a checkpoint that loads?  (tests/cli/faults.sh)
 *
 *   ckpt_check RUN_DIR   prints "step N" and exits 0 when RUN_DIR/train_state.safetensors
 *                        resumes and RUN_DIR/model.safetensors (when there is one yet:
 *                        the first checkpoint's state is renamed before its model)
 *                        loads into the model of RUN_DIR/config.json, with every
 *                        parameter finite and every tensor of both files carrying a
 *                        checksum that matches its data; else prints why and exits 1.
 * It goes through the same calls as `--resume` and `./train distill`, which verify
 * checksums where a file has them; st_verify adds that files written by this
 * attnlab have them all. */
#include "attnlab/config/config.h"
#include "attnlab/data/task.h"
#include "attnlab/io/safetensors.h"
#include "attnlab/train/checkpoint.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static int all_finite(const float *x, long n) {
    for (long i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* Every tensor of the file at dir/name has a checksum, and it matches. */
static int verified(const char *dir, const char *name) {
    char path[1024];
    AlError err = {0};
    snprintf(path, sizeof path, "%s/%s", dir, name);
    StFile *f = st_open(path, &err);
    int rc = f ? st_verify(f, &err) : err.code;
    if (rc) fprintf(stderr, "ckpt_check: %s\n", err.msg);
    st_close(f);
    return rc == 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: ckpt_check RUN_DIR\n");
        return 2;
    }
    char path[1024];
    Config cfg;
    TaskData td;
    TaskSpec spec;
    AlError err = {0};
    snprintf(path, sizeof path, "%s/config.json", argv[1]);
    if (cfg_load(&cfg, path, NULL, 0, &err) || task_build(cfg_task_spec(&cfg, &spec), &td, &err)) {
        fprintf(stderr, "ckpt_check: %s\n", err.msg);
        return 1;
    }
    Model *m = model_create(&cfg.model, td.vocab_size, td.n_classes, td.seq_len, cfg.seed);
    char *json = cfg_to_json(&cfg);
    TrainState st = {0};
    /* The first checkpoint's state is renamed before its model: a kill in between
     * leaves no model yet, and --resume (which reads only the state) writes it. */
    struct stat sb;
    snprintf(path, sizeof path, "%s/model.safetensors", argv[1]);
    int no_model = stat(path, &sb) != 0;
    int rc = !verified(argv[1], "train_state.safetensors") || (!no_model && !verified(argv[1], "model.safetensors"));
    if (!rc) rc = checkpoint_resume(argv[1], m, &st, json, &err);
    if (rc && err.code) fprintf(stderr, "ckpt_check: %s\n", err.msg);
    else if (!rc && !all_finite(m->params.data, m->params.total))
        rc = fprintf(stderr, "ckpt_check: %s/train_state.safetensors has non-finite parameters\n", argv[1]) > 0;
    long step = st.step;
    if (!rc && !no_model && (rc = checkpoint_load_model(path, m, &err)) != 0) fprintf(stderr, "ckpt_check: %s\n", err.msg);
    if (!rc && !no_model && !all_finite(m->params.data, m->params.total))
        rc = fprintf(stderr, "ckpt_check: %s has non-finite parameters\n", path) > 0;
    if (!rc) printf("step %ld\n", step);
    free(json);
    model_free(m);
    task_free(&td);
    return rc ? 1 : 0;
}
