/* run.c — see run.h. */
#include "attnlab/cli/run.h"
#include "attnlab/anna/distill.h"

static int distill_if_enabled(const TrainedRun *run, AlError *err) {
    if (!run->cfg->distill.enabled) return 0;
    /* A training resumed after its grid was stopped continues the grid. */
    return distill_run(run->cfg, run->model, run->data, run->dir, "model.safetensors", run->quiet, JOURNAL_AUTO, err);
}

int cli_train_run(const TrainOptions *opt, AlError *err) {
    TrainOptions o = *opt;
    o.then = distill_if_enabled;
    return train_run(&o, err);
}
