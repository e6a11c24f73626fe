/* run.h — what `./train CONFIG.json` runs: the training, then, when the config
 * says distill.enabled, the distillation of the trained model into ANNA
 * (anna/distill.h) in the same sitting, on the model still in memory and with the
 * run folder still locked.
 *
 * Why this lives in the command layer: distillation uses the trainer's checkpoints,
 * evaluation and progress line (anna sits above train), so the trainer cannot call
 * it; "train, then distil" is the command's sequence, handed to the trainer as its
 * TrainOptions.then.  Sweeps need no copy of it: every cell is a `./train` worker
 * process (sweep/runner.c), so a cell with distill.enabled distils through here. */
#ifndef ATTNLAB_CLI_RUN_H
#define ATTNLAB_CLI_RUN_H

#include "attnlab/train/trainer.h"

/* train_run(opt) with distill_run after a completed training when cfg's
 * distill.enabled (opt->then is replaced).  Same exit codes: a distillation error
 * is the run's. */
int cli_train_run(const TrainOptions *opt, AlError *err);

#endif
