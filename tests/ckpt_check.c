/* ckpt_check.c — does a run folder hold a checkpoint that loads?  (tests/faults.sh)
 *
 *   ckpt_check RUN_DIR   prints "step N" and exits 0 when RUN_DIR/train_state.safetensors
 *                        resumes and RUN_DIR/model.safetensors (when there is one yet)
 *                        loads into the model of RUN_DIR/config.json, with every
 *                        parameter finite; else
 *                        prints why and exits 1.
 * It goes through the same calls as `--resume` and `./train distill`. */
#include "attnlab/data/task.h"
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

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: ckpt_check RUN_DIR\n");
        return 2;
    }
    char path[1024];
    Config cfg;
    TaskData td;
    AlError err = {0};
    snprintf(path, sizeof path, "%s/config.json", argv[1]);
    if (cfg_load(&cfg, path, NULL, 0, &err) || task_build(&cfg, &td, &err)) {
        fprintf(stderr, "ckpt_check: %s\n", err.msg);
        return 1;
    }
    Model *m = model_create(&cfg.model, td.vocab_size, td.n_classes, td.seq_len, cfg.seed);
    char *json = cfg_to_json(&cfg);
    TrainState st = {0};
    int rc = checkpoint_resume(argv[1], m, &st, json, &err);
    if (!rc && !all_finite(m->params.data, m->params.total))
        rc = fprintf(stderr, "ckpt_check: %s/train_state.safetensors has non-finite parameters\n", argv[1]) > 0;
    else if (rc)
        fprintf(stderr, "ckpt_check: %s\n", err.msg);
    long step = st.step;
    snprintf(path, sizeof path, "%s/model.safetensors", argv[1]);
    /* The first checkpoint's state is renamed before its model: a kill in between
     * leaves no model yet, and --resume (which reads only the state) writes it. */
    struct stat sb;
    int no_model = stat(path, &sb) != 0 && st.step > 0;
    if (!rc && !no_model && (rc = checkpoint_load_model(path, m, &err)) != 0) fprintf(stderr, "ckpt_check: %s\n", err.msg);
    if (!rc && !no_model && !all_finite(m->params.data, m->params.total))
        rc = fprintf(stderr, "ckpt_check: %s has non-finite parameters\n", path) > 0;
    if (!rc) printf("step %ld\n", step);
    free(json);
    model_free(m);
    task_free(&td);
    return rc ? 1 : 0;
}
