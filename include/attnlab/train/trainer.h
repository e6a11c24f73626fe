/* trainer.h — `./train CONFIG.json …`: one training run from config to run folder. */
#ifndef ATTNLAB_TRAIN_TRAINER_H
#define ATTNLAB_TRAIN_TRAINER_H

#include "attnlab/data/task.h"
#include "attnlab/nn/model.h"
#include "attnlab/config/config.h"
#include "attnlab/util/error.h"

/* A run that has just finished training, as TrainOptions.then sees it: the model
 * still in memory, the run folder still locked, its files all written. */
typedef struct TrainedRun {
    const Config *cfg;
    Model *model;
    const TaskData *data;
    const char *dir;        /* the run folder */
    int quiet;
} TrainedRun;

typedef struct TrainOptions {
    const char *config_path;
    const char *const *overrides;   /* "key.path=value" from --set */
    int n_overrides;
    const char *out_dir;            /* NULL: results/<name> */
    int resume, quiet;
    int force;                      /* replace the run in out_dir (train/runfolder.h) */
    long pause_at;                  /* > 0: stop at this step with a checkpoint, as SIGTERM
                                     * would, and exit 0 (--pause-at); 0: run to the end */
    /* Work that follows a completed training in the same sitting (NULL: none); its
     * return is train_run's.  Modules above train hook in here without train
     * knowing them: `./train CONFIG` distils this way (cli/run.h). */
    int (*then)(const TrainedRun *run, AlError *err);
} TrainOptions;

/* Returns the process exit code: 0 done (or paused at opt->pause_at, then without
 * opt->then), 2 bad config, 1 other errors (err filled),
 * 130/143 interrupted by SIGINT/SIGTERM after saving a checkpoint; after a completed
 * training, opt->then's code when it is set.  --resume of a finished run (its
 * summary.json at the checkpoint's step, and train.steps and the early-stop rule
 * would end it there again) trains nothing and rewrites no file: 0, or opt->then's. */
int train_run(const TrainOptions *opt, AlError *err);

/* `./train data CONFIG.json`: generates the config's train and test sets and writes
 * them as JSONL to out_dir (default data/<task.type>).  Same exit codes. */
int train_write_data(const TrainOptions *opt, AlError *err);

/* The data-parallel threads of a run (train/step.h): cfg value if > 0, else
 * $ATTNLAB_THREADS, else the number of online cores (at most 64).  Sets OpenBLAS to
 * one thread: each shard runs its own GEMMs.  Returns the count. */
int train_set_threads(int cfg_threads);

#endif
