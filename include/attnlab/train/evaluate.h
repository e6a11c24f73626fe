/* evaluate.h — loss and accuracy of a model over a whole dataset (no gradients). */
#ifndef ATTNLAB_TRAIN_EVALUATE_H
#define ATTNLAB_TRAIN_EVALUATE_H

#include "attnlab/data/dataset.h"
#include "attnlab/data/taskgen.h"
#include "attnlab/nn/model.h"
#include "attnlab/train/step.h"

#include <cJSON.h>

#define EVAL_MAX_GROUPS 16

typedef struct EvalResult {
    double loss;            /* mean loss over scored positions (cross-entropy, or BCE: step_loss) */
    double token_acc;       /* fraction of scored positions predicted right */
    double seq_acc;         /* fraction of sequences with every scored position right */
    long   n_tokens, n_seqs;
    /* Token accuracy per row group (RowInfo.group), when the dataset has groups. */
    double answer_acc;      /* chain of thought: final answers right after greedy decoding; −1 = n/a */
    int    n_groups;
    double group_acc[EVAL_MAX_GROUPS];
    long   group_tokens[EVAL_MAX_GROUPS];
} EvalResult;

/* Adds e to the JSON object j under summary.json's keys: test_loss, test_token_acc,
 * test_token_error, test_seq_acc, test_answer_acc (when measured) and
 * test_group_token_acc {name: acc} for the groups the data has (group_names[g]). */
void eval_result_add_json(cJSON *j, const EvalResult *e, const char *const *group_names);

/* Accuracy of one batch; logits (B, T, C), targets (B, T).  A position is right
 * when the argmax of its logits is the target, or, with multilabel (dataset.h),
 * when σ(logit) > 0.5 on exactly its valid classes; a sequence when every scored
 * position is (eq_ncp: "correct if the prediction for every prefix is correct",
 * paper 003, App. H.2).  Adds to *correct_tokens, *scored_tokens and
 * *correct_seqs; when groups is not NULL (one group id per row), also to
 * group_correct[g] and group_scored[g]. */
void eval_count_correct(const Tensor *logits, const int *targets, int multilabel, const int *groups,
                        long *correct_tokens, long *scored_tokens, long *correct_seqs,
                        long *group_correct, long *group_scored);

/* Runs the model over d in batches of batch_size (the tape is reset before each
 * batch; grad and dropout are off during the call and restored after).  n_groups > 0
 * (with d->info) also measures the token accuracy of each group. */
EvalResult evaluate(Model *m, Tape *t, const Dataset *d, int batch_size, int n_groups);
/* evaluate(), also counting by row position i (0 … d->seq_len − 1, the position
 * whose output is scored): pos_scored[i] scored targets there over all rows, and
 * pos_right[i] the right ones (judged as eval_count_correct judges them).  Both
 * arrays hold d->seq_len counts and are added to (zero them first). */
EvalResult evaluate_by_position(Model *m, Tape *t, const Dataset *d, int batch_size, int n_groups, long *pos_right,
                                long *pos_scored);

/* Chain of thought (paper 004 protocol): greedy-decodes every test prompt with a KV
 * cache and counts the rows whose final answer, located by g->extract_answer in
 * the generated text, equals the reference answer.  Returns the fraction right.
 * Without an extractor (file rows with prompt_len / answer_start / answer_len), the
 * answer is the generated row's tokens at the reference's answer positions; set
 * g->eos_id to −1 then (no stop token: each row runs to its dataset length). */
double evaluate_answers(Model *m, const Dataset *d, const TaskGen *g, int batch_size);

/* The same two over a data-parallel pool (train/step.h): each thread takes whole
 * batches (batch k on thread k mod S) with its own tape, model and decoder, so every
 * batch is computed exactly as above; counts are integers and the batches' losses
 * are added in batch order, so the results equal evaluate()'s and
 * evaluate_answers()'s bit for bit, for any thread count.  Each thread holds one
 * evaluation batch at a time (S batches at once in all). */
EvalResult evaluate_pool(StepPool *p, const Dataset *d, int batch_size, int n_groups);
double     evaluate_answers_pool(StepPool *p, const Dataset *d, const TaskGen *g, int batch_size);

#endif
