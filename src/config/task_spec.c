/* task_spec.c — what data/task.h reads of a run's config, taken out of a Config.
 *
 * The data layer sits below the config schema, so it gets the task section and
 * the few other settings that size or seed its splits as a TaskSpec; this is the
 * one place that knows which config keys those are. */
#include "attnlab/config/config.h"

const TaskSpec *cfg_task_spec(const Config *c, TaskSpec *spec) {
    *spec = (TaskSpec){ .task = c->task, .seed = c->seed, .test_size = c->eval.test_size,
                        .valid_size = c->distill.valid_size, .distilling = c->distill.enabled };
    return spec;
}
