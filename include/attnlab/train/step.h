/* step.h — one optimizer step on one batch: the part of the training loop that
 * ANNA fine-tuning (src/anna/finetune.c) shares with the trainer.  Everything
 * around it — schedule, evaluation, checkpoints, the run folder — stays with the
 * caller.
 *
 * Data parallelism (StepPool): a step's batch is split into one shard of
 * consecutive rows per thread (sizes differ by at most one row).  Shard 0 runs on
 * the master model and the caller's tape; shard s ≥ 1 on a replica
 * (model_replica_create: the master's values, its own gradients) with a tape and
 * arena of its own.  The shards run forward and backward at once (the pool's
 * threads, one BLAS thread each), each seeding its loss's gradient with its weight
 *     w_s = (positions counted in shard s) / (positions counted in the batch),
 * so the sum of the shards' gradients is the gradient of the whole batch's mean
 * cross-entropy.  The replicas' gradients are then added into the master's in a
 * fixed order (g₀ + g₁ + … + g_{S−1}), and the norm, clipping and the one Adam
 * update happen on the master as before.  Dropout: every shard's tape starts the
 * step with the master tape's rng and takes the whole batch's mask for its rows
 * (Tape.batch_row0), so the masks, and the rng state a checkpoint saves, are
 * those of a one-thread step.
 *
 * What the thread count changes: nothing but float rounding.  One thread is
 * exactly the one-tape step; S threads give the same loss and gradients up to the
 * order of the sums (batch rows split into S GEMMs and S partial gradients; about
 * 1e-6 relative).  The same config, seed and thread count give bit-identical
 * runs (which thread runs which shard never matters: each shard has its own
 * replica). */
#ifndef ATTNLAB_TRAIN_STEP_H
#define ATTNLAB_TRAIN_STEP_H

#include "attnlab/config/config.h"
#include "attnlab/data/task.h"
#include "attnlab/nn/model.h"

/* The next training batch of td: rows from the epoch sampler s over td->train,
 * or, for a streaming task, fresh examples drawn from *stream (s unused). */
void step_next_batch(const TaskData *td, Sampler *s, Rng *stream, Batch *b);

/* The rng a streaming run of this seed draws its training examples from, from
 * step 1 on (its state is in every checkpoint): `./train overlap` replays it. */
Rng step_data_stream(uint64_t seed);

/* The training loss of logits (B, T, C) against targets (B, T): the mean softmax
 * cross-entropy over scored positions, or for a multi-label task (Batch and
 * Dataset .multilabel, e.g. eq_ncp) the mean per-class binary cross-entropy
 * (ad_bce_multilabel).  Training and evaluation both take it from here. */
Tensor *step_loss(Tape *t, Tensor *logits, const int *targets, int multilabel);

/* Resets the tape, zeroes the gradients, and runs forward and backward of the
 * mean loss (step_loss) on b in training mode (dropout active) — through
 * model_forward_rows over b's scored positions when some are not scored, so the
 * work after the last layer's mixing is done for those only (docs/design.md
 * decision 16).  Then zeroes the gradients of the parameters k with
 * frozen[k] set (frozen may be NULL), so *grad_norm — the global gradient norm —
 * and clipping see only what is trained.  Returns the loss (not checked: callers
 * decide what a non-finite loss or norm means). */
double step_gradients(Model *m, Tape *t, const Batch *b, const unsigned char *frozen, double *grad_norm);

/* Length groups (train.length_groups; docs/design.md decision 17).  A batch of a
 * variable-length task holds right-padded rows, and a causal model's output at a
 * position reads no later one, so a row needs running only up to its last scored
 * position.  The plan: len[r] = row r's last scored position + 1 (0 when none),
 * order = the rows sorted by len (ties in row order), cut into G = min(groups,
 * b->batch) groups of consecutive sorted rows of sizes differing by at most one:
 * group g is order[group_end[g−1] … group_end[g]) (group_end[−1] = 0), run up to
 * group_T[g] = its longest len.  len and order have b->batch entries, group_end
 * and group_T groups.  Returns G. */
int step_length_plan(const Batch *b, int groups, int *len, int *order, int *group_end, int *group_T);

/* Clips the gradients to cfg->grad_clip (given their norm), then Adam step t
 * (1-based) at lr, leaving the frozen parameters untouched. */
void step_update(Model *m, const CfgTrain *cfg, float lr, long t, double grad_norm, const unsigned char *frozen);

/* ---- data-parallel steps and evaluation --------------------------------------------- */

typedef struct StepShard {
    Model *model;     /* shard 0: the master; others: a replica (owned) */
    Tape  *tape;      /* shard 0: the caller's tape; others: &own_tape */
    Arena  arena;     /* shards ≥ 1 */
    Tape   own_tape;
    double loss;      /* the last step's shard loss (mean over its counted positions) */
    long   counted;   /* positions with a target in the last step's shard */
    long   positions; /* grid positions its last step ran: rows × seq_len, less with length groups */
} StepShard;

struct StepWorkers;   /* the persistent worker threads (step.c) */

typedef struct StepPool {
    int        threads;   /* shards per step at most (a smaller batch gets fewer) */
    int        length_groups;  /* each shard's rows in this many length groups (1 = off, as step_pool_init sets it) */
    Model     *master;
    StepShard *shard;     /* threads entries */
    struct StepWorkers *workers;   /* threads − 1 threads; NULL for one thread */
} StepPool;

/* A pool of `threads` ≥ 1 shards over master and its tape (shard 0's); makes
 * threads − 1 replicas with 8 MiB arenas and threads − 1 worker threads, which
 * live as long as the pool (between jobs they spin for some microseconds, then
 * sleep on a condition variable, so they cost nothing while the caller works
 * alone and leave the cores to others on a shared machine).  With threads ≥ 2 it
 * sets OpenBLAS to one thread (the shards are the parallelism).  Allocates here
 * only: a step allocates nothing after the first (the arenas keep their high
 * water). */
void   step_pool_init(StepPool *p, Model *master, Tape *tape, int threads);
void   step_pool_free(StepPool *p);   /* stops the workers, frees the replicas; not the master or its tape */

/* Runs fn(ctx, i) for i = 0 … n−1 (n ≤ p->threads) at once, i on thread i (0 is
 * the caller), and returns when all are done. */
void   step_pool_run(StepPool *p, int n, void (*fn)(void *ctx, int i), void *ctx);

/* step_gradients over the pool: min(threads, b->batch) shards as described above,
 * gradients reduced into the master's.  One shard is exactly step_gradients on the
 * master and its tape.  Returns the batch's mean loss (Σ w_s·loss_s).  With
 * p->length_groups > 1 each shard runs its rows in length groups (the plan above;
 * its loss Σ_g (counted_g / counted_s)·mean_g), for a causal model without dropout
 * when some group is shorter than the batch: the same loss and gradients to float
 * rounding, with the work of the padding cut. */
double step_gradients_pool(StepPool *p, const Batch *b, const unsigned char *frozen, double *grad_norm);

#endif
