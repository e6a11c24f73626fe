/* step.h — one optimizer step on one batch: the part of the training loop that
 * ANNA fine-tuning (src/anna/finetune.c) shares with the trainer.  Everything
 * around it — schedule, evaluation, checkpoints, the run folder — stays with the
 * caller. */
#ifndef ATTNLAB_TRAIN_STEP_H
#define ATTNLAB_TRAIN_STEP_H

#include "attnlab/data/task.h"
#include "attnlab/nn/model.h"

/* The next training batch of td: rows from the epoch sampler s over td->train,
 * or, for a streaming task, fresh examples drawn from *stream (s unused). */
void step_next_batch(const TaskData *td, Sampler *s, Rng *stream, Batch *b);

/* Resets the tape, zeroes the gradients, and runs forward and backward of the
 * mean cross-entropy on b in training mode (dropout active).  Then zeroes the gradients of the parameters k with
 * frozen[k] set (frozen may be NULL), so *grad_norm — the global gradient norm —
 * and clipping see only what is trained.  Returns the loss (not checked: callers
 * decide what a non-finite loss or norm means). */
double step_gradients(Model *m, Tape *t, const Batch *b, const unsigned char *frozen, double *grad_norm);

/* Clips the gradients to cfg->grad_clip (given their norm), then Adam step t
 * (1-based) at lr, leaving the frozen parameters untouched. */
void step_update(Model *m, const CfgTrain *cfg, float lr, long t, double grad_norm, const unsigned char *frozen);

#endif
