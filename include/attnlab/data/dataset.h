/* dataset.h — fixed-size token datasets, batches and a resumable epoch sampler.
 *
 * Every task is a set of n rows of seq_len tokens with one target per position
 * (−1 = position not scored), so the model, loss and evaluation code never need
 * to know which task they run.  Generators (match2.c, ...) fill a Dataset once;
 * training draws batches from it with a Sampler.
 *
 * The Sampler hands out rows in a fresh random order each epoch, so every row is
 * seen exactly once per epoch.  Batches are a stream over epochs: a batch that
 * runs past the end of an epoch continues with the next one.  Its whole state is
 * (epoch, pos, epoch_rng): a checkpoint stores those and resuming from them gives
 * the same batches, bit for bit, as never having stopped. */
#ifndef ATTNLAB_DATA_DATASET_H
#define ATTNLAB_DATA_DATASET_H

#include "attnlab/util/error.h"
#include "attnlab/util/rng.h"

#include <stddef.h>
#include <stdint.h>

#define DATASET_IGNORE (-1)   /* target value of a position the loss skips */
/* Multi-label datasets (Dataset.multilabel, e.g. eq_ncp): a target t in
 * [0, n_classes) means "t is the one valid class", t == n_classes means "every
 * class is valid"; the loss is per-class binary cross-entropy (ad_bce_multilabel)
 * and a position is right when σ(logit) > 0.5 exactly on its valid classes. */

/* Per-row facts of variable-length and chain-of-thought tasks (see example.h). */
typedef struct RowInfo {
    int len;                      /* real tokens; the rest of the row is pad_id */
    int prompt_len;               /* chain of thought: generation starts here */
    int answer_start, answer_len; /* chain of thought: the final answer's tokens */
    int group;                    /* per-group metrics (k-hop hops, Dyck kind) */
} RowInfo;

typedef struct Dataset {
    int n, seq_len;
    int *tokens;      /* n × seq_len, row-major; ids in [0, vocab_size) */
    int *targets;     /* n × seq_len; class in [0, n_classes) or DATASET_IGNORE */
    int vocab_size;
    int n_classes;
    RowInfo *info;    /* n rows, or NULL: every row is seq_len real tokens, group 0 */
    int pad_id;       /* token filling rows past info[r].len */
    int multilabel;   /* targets are k-hot codes (above), not single classes */
} Dataset;

/* Caller-owned buffers of batch × seq_len, allocated once and refilled each step. */
typedef struct Batch {
    int batch, seq_len;
    int *tokens;
    int *targets;
    int multilabel;   /* as Dataset.multilabel; set by whatever fills the batch */
} Batch;

/* Allocates zeroed rows; frees with dataset_free. */
void dataset_alloc(Dataset *d, int n, int seq_len, int vocab_size, int n_classes);
/* Gives d a zeroed RowInfo per row (for generated, variable-length tasks). */
void dataset_alloc_info(Dataset *d);
void dataset_free(Dataset *d);          /* leaves *d zeroed; safe on a zeroed Dataset */
static inline int *dataset_tokens(const Dataset *d, int row) {
    return d->tokens + (size_t)row * d->seq_len;
}
static inline int *dataset_targets(const Dataset *d, int row) {
    return d->targets + (size_t)row * d->seq_len;
}
/* Number of distinct token rows (targets not compared). */
int  dataset_count_distinct(const Dataset *d);
/* Permutes the rows (tokens, targets and info together) uniformly at random. */
void dataset_shuffle_rows(Dataset *d, Rng *rng);
void batch_alloc(Batch *b, int batch, int seq_len);
void batch_free(Batch *b);

typedef struct Sampler {
    int n;            /* rows in the dataset */
    int *order;       /* this epoch's permutation of 0..n−1 (derived from epoch_rng) */
    /* The state: everything else is derived from these three. */
    int64_t epoch;    /* 0 during the first epoch */
    int pos;          /* rows of this epoch already handed out, 0..n */
    Rng epoch_rng;    /* generator state this epoch's order was drawn from */
    Rng rng;          /* generator state after drawing it: draws the next epoch */
} Sampler;

/* What a checkpoint stores.  n is kept only to reject a state from another dataset. */
typedef struct SamplerState {
    int n;
    int pos;
    int64_t epoch;
    Rng epoch_rng;
} SamplerState;

/* Starts epoch 0; the sampler draws all its randomness from rng (taken by value). */
void sampler_init(Sampler *s, int n, Rng rng);
void sampler_free(Sampler *s);
/* The next k row indices of the stream (crossing into new epochs as needed). */
void sampler_next_indices(Sampler *s, int *idx, int k);
/* Copies the next b->batch rows of d into b (no malloc).  d->n must equal the
 * sampler's n and b->seq_len must equal d->seq_len. */
void sampler_next_batch(Sampler *s, const Dataset *d, Batch *b);
SamplerState sampler_get_state(const Sampler *s);
/* Restores a state from sampler_get_state.  Returns 0, or 2 (err filled) when the
 * state does not fit this sampler (other dataset size, position out of range). */
int  sampler_set_state(Sampler *s, const SamplerState *st, AlError *err);

#endif
