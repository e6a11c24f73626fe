/* evaluate.h — loss and accuracy of a model over a whole dataset (no gradients). */
#ifndef ATTNLAB_TRAIN_EVALUATE_H
#define ATTNLAB_TRAIN_EVALUATE_H

#include "attnlab/data/dataset.h"
#include "attnlab/nn/transformer.h"

typedef struct EvalResult {
    double loss;            /* mean cross-entropy over scored positions */
    double token_acc;       /* fraction of scored positions predicted right */
    double seq_acc;         /* fraction of sequences with every scored position right */
    long   n_tokens, n_seqs;
} EvalResult;

/* Argmax-of-logits accuracy of one batch; logits (B, T, C), targets (B, T).
 * Adds to *correct_tokens, *scored_tokens and *correct_seqs. */
void eval_count_correct(const Tensor *logits, const int *targets, long *correct_tokens,
                        long *scored_tokens, long *correct_seqs);

/* Runs the model over d in batches of batch_size (the tape is reset before each
 * batch; grad and dropout are off during the call and restored after). */
EvalResult evaluate(Model *m, Tape *t, const Dataset *d, int batch_size);

#endif
