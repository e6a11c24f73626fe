/* evaluate.c — see evaluate.h. */
#include "attnlab/train/evaluate.h"
#include "attnlab/nn/decode.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

/* Is the prediction at one position right?  Single-label: the argmax is the
 * target.  Multi-label (dataset.h): σ(z_c) > 0.5, i.e. z_c > 0, exactly for the
 * valid classes — every class when the target is C. */
static int position_right(const float *row, int C, int y, int multilabel) {
    if (multilabel) {
        int right = 1;
        for (int c = 0; c < C; c++) right &= (row[c] > 0.0f) == (y == C || c == y);
        return right;
    }
    int best = 0;
    for (int c = 1; c < C; c++)
        if (row[c] > row[best]) best = c;
    return best == y;
}

void eval_count_correct(const Tensor *logits, const int *targets, int multilabel, const int *groups,
                        long *correct_tokens, long *scored_tokens, long *correct_seqs,
                        long *group_correct, long *group_scored) {
    int B = logits->shape[0], T = logits->shape[1], C = logits->shape[2];
    for (int b = 0; b < B; b++) {
        int all_right = 1;
        for (int i = 0; i < T; i++) {
            int y = targets[b * T + i];
            if (y < 0) continue;
            int right = position_right(logits->data + ((long)b * T + i) * C, C, y, multilabel);
            *scored_tokens += 1;
            *correct_tokens += right;
            all_right &= right;
            if (groups) {
                group_scored[groups[b]] += 1;
                group_correct[groups[b]] += right;
            }
        }
        *correct_seqs += all_right;
    }
}

/* What one batch or a shard's batches add up; pos_right / pos_scored (one count per
 * row position, or NULL) for evaluate_by_position. */
typedef struct EvalCounts {
    long correct, scored, correct_seqs, seqs;
    long group_correct[EVAL_MAX_GROUPS], group_scored[EVAL_MAX_GROUPS];
    long *pos_right, *pos_scored;
} EvalCounts;

/* Adds each scored position i of the batch to pos_scored[i], and to pos_right[i]
 * when it is right (position_right, as eval_count_correct judges it). */
static void count_positions(const Tensor *logits, const int *targets, int multilabel, long *pos_right,
                            long *pos_scored) {
    int B = logits->shape[0], T = logits->shape[1], C = logits->shape[2];
    for (int b = 0; b < B; b++)
        for (int i = 0; i < T; i++) {
            int y = targets[b * T + i];
            if (y < 0) continue;
            pos_scored[i] += 1;
            pos_right[i] += position_right(logits->data + ((long)b * T + i) * C, C, y, multilabel);
        }
}

/* Rows [start, start + B) of d on the tape t (grad and dropout off): adds to *c and
 * returns the batch's summed cross-entropy (its mean × its scored positions, as a
 * double: the caller adds these up in batch order). */
static double eval_batch(Model *m, Tape *t, const Dataset *d, int start, int B, int use_groups, EvalCounts *c) {
    int groups[1024];
    const int *targets = dataset_targets(d, start);
    for (int b = 0; use_groups && b < B; b++) groups[b] = d->info[start + b].group;
    tape_reset(t);
    Tensor *logits = model_forward(m, t, dataset_tokens(d, start), B, d->seq_len);
    long scored_before = c->scored;
    eval_count_correct(logits, targets, d->multilabel, use_groups ? groups : NULL, &c->correct, &c->scored, &c->correct_seqs,
                       c->group_correct, c->group_scored);
    if (c->pos_right) count_positions(logits, targets, d->multilabel, c->pos_right, c->pos_scored);
    c->seqs += B;
    /* The loss is a mean over this batch's scored positions: weight it back. */
    return step_loss(t, logits, targets, d->multilabel)->data[0] * (double)(c->scored - scored_before);
}

void eval_result_add_json(cJSON *j, const EvalResult *e, const char *const *group_names) {
    cJSON_AddNumberToObject(j, "test_loss", e->loss);
    cJSON_AddNumberToObject(j, "test_token_acc", e->token_acc);
    cJSON_AddNumberToObject(j, "test_token_error", 1 - e->token_acc);
    cJSON_AddNumberToObject(j, "test_seq_acc", e->seq_acc);
    if (e->answer_acc >= 0) cJSON_AddNumberToObject(j, "test_answer_acc", e->answer_acc);
    cJSON *groups = NULL;
    for (int g = 0; g < e->n_groups; g++) {
        if (!e->group_tokens[g]) continue;   /* e.g. hop counts the test set never draws */
        if (!groups) groups = cJSON_AddObjectToObject(j, "test_group_token_acc");
        cJSON_AddNumberToObject(groups, group_names[g], e->group_acc[g]);
    }
}

static EvalResult eval_result(const EvalCounts *c, double loss_sum, int n_groups) {
    EvalResult r = {0};
    r.n_tokens = c->scored;
    r.n_seqs = c->seqs;
    r.loss = r.n_tokens ? loss_sum / r.n_tokens : 0;
    r.token_acc = r.n_tokens ? (double)c->correct / r.n_tokens : 0;
    r.seq_acc = r.n_seqs ? (double)c->correct_seqs / r.n_seqs : 0;
    r.answer_acc = -1;
    r.n_groups = n_groups;
    for (int g = 0; g < r.n_groups; g++) {
        r.group_tokens[g] = c->group_scored[g];
        r.group_acc[g] = r.group_tokens[g] ? (double)c->group_correct[g] / r.group_tokens[g] : 0;
    }
    return r;
}

/* Grad and dropout off for an evaluation, restored after. */
typedef struct TapeMode { int grad_enabled, training; } TapeMode;
static TapeMode eval_mode(Tape *t) {
    TapeMode saved = { t->grad_enabled, t->training };
    t->grad_enabled = 0;
    t->training = 0;
    return saved;
}
static void restore_mode(Tape *t, TapeMode saved) {
    tape_reset(t);
    t->grad_enabled = saved.grad_enabled;
    t->training = saved.training;
}

EvalResult evaluate_by_position(Model *m, Tape *t, const Dataset *d, int batch_size, int n_groups, long *pos_right,
                                long *pos_scored) {
    TapeMode saved = eval_mode(t);
    EvalCounts c = {0};
    c.pos_right = pos_right;
    c.pos_scored = pos_scored;
    int use_groups = n_groups > 0 && d->info;
    if (batch_size > 1024) batch_size = 1024;
    double loss_sum = 0;
    for (int start = 0; start < d->n; start += batch_size) {
        int B = d->n - start < batch_size ? d->n - start : batch_size;
        loss_sum += eval_batch(m, t, d, start, B, use_groups, &c);
    }
    restore_mode(t, saved);
    return eval_result(&c, loss_sum, use_groups ? n_groups : 0);
}

EvalResult evaluate(Model *m, Tape *t, const Dataset *d, int batch_size, int n_groups) {
    return evaluate_by_position(m, t, d, batch_size, n_groups, NULL, NULL);
}

/* The pool's threads take whole batches (batch k on thread k mod S, its own tape
 * and model), so every batch is computed exactly as evaluate() computes it; the
 * counts are integers and the batches' losses are added up in batch order after,
 * so the result is evaluate()'s, bit for bit, whatever the thread count. */
typedef struct EvalJob {
    StepPool *p;
    const Dataset *d;
    int batch_size, n_batches, S, use_groups;
    double *batch_loss;     /* per batch */
    EvalCounts *counts;     /* per thread */
} EvalJob;

static void eval_thread(void *ctx, int s) {
    const EvalJob *job = ctx;
    StepShard *sh = &job->p->shard[s];
    if (s > 0) sh->model->anna = job->p->master->anna;
    TapeMode saved = eval_mode(sh->tape);
    const Dataset *d = job->d;
    for (int k = s; k < job->n_batches; k += job->S) {
        int start = k * job->batch_size, B = d->n - start < job->batch_size ? d->n - start : job->batch_size;
        job->batch_loss[k] = eval_batch(sh->model, sh->tape, d, start, B, job->use_groups, &job->counts[s]);
    }
    restore_mode(sh->tape, saved);
}

EvalResult evaluate_pool(StepPool *p, const Dataset *d, int batch_size, int n_groups) {
    if (batch_size > 1024) batch_size = 1024;
    const int n_batches = (d->n + batch_size - 1) / batch_size;
    const int S = n_batches < p->threads ? n_batches : p->threads;
    if (S <= 1) return evaluate(p->master, p->shard[0].tape, d, batch_size, n_groups);
    int use_groups = n_groups > 0 && d->info;
    double *batch_loss = al_malloc((size_t)n_batches * sizeof(double));
    EvalCounts *counts = al_calloc((size_t)S, sizeof *counts);
    EvalJob job = { p, d, batch_size, n_batches, S, use_groups, batch_loss, counts };
    step_pool_run(p, S, eval_thread, &job);
    EvalCounts c = {0};
    double loss_sum = 0;
    for (int k = 0; k < n_batches; k++) loss_sum += batch_loss[k];
    for (int s = 0; s < S; s++) {
        c.correct += counts[s].correct;
        c.scored += counts[s].scored;
        c.correct_seqs += counts[s].correct_seqs;
        c.seqs += counts[s].seqs;
        for (int g = 0; g < EVAL_MAX_GROUPS; g++) {
            c.group_correct[g] += counts[s].group_correct[g];
            c.group_scored[g] += counts[s].group_scored[g];
        }
    }
    free(batch_loss);
    free(counts);
    return eval_result(&c, loss_sum, use_groups ? n_groups : 0);
}

/* Is the generated row's final answer the reference's?  A task without an extractor
 * (task type "file" with the chain-of-thought keys) holds its answer at the row's
 * own place: answer_start … + answer_len of the generated row. */
static int answer_right(const TaskGen *g, const int *out, int len, const int *ref, const RowInfo *info) {
    int start = info->answer_start, alen = info->answer_len;
    if (!g->extract_answer) {
        if (start < 0 || start + alen > len) return 0;
        return !memcmp(out + start, ref + start, (size_t)alen * sizeof(int));
    }
    if (!g->extract_answer(g, out, len, &start, &alen) || alen != info->answer_len) return 0;
    return !memcmp(out + start, ref + info->answer_start, (size_t)alen * sizeof(int));
}

/* Greedy-decodes rows [start, start + B) with dec; returns how many answers are right. */
static int answers_batch(Decoder *dec, const Dataset *d, const TaskGen *g, int start, int B, int *rows, int *prompt,
                         int *len) {
    int T = d->seq_len, right = 0;
    memcpy(rows, dataset_tokens(d, start), (size_t)B * T * sizeof(int));
    for (int b = 0; b < B; b++) prompt[b] = d->info[start + b].prompt_len;
    decoder_greedy(dec, B, rows, prompt, g->eos_id, len);
    for (int b = 0; b < B; b++)
        right += answer_right(g, rows + (size_t)b * T, len[b], dataset_tokens(d, start + b), &d->info[start + b]);
    return right;
}

/* Batches [k0, n_batches) in steps of `stride` on model m; the count of right answers. */
static long answers_range(Model *m, const Dataset *d, const TaskGen *g, int batch_size, int k0, int stride) {
    int T = d->seq_len;
    long right = 0;
    Decoder *dec = decoder_create(m, batch_size);
    int *rows = al_malloc((size_t)batch_size * T * sizeof(int)), *prompt = al_malloc((size_t)batch_size * sizeof(int)),
        *len = al_malloc((size_t)batch_size * sizeof(int));
    for (int start = k0 * batch_size; start < d->n; start += stride * batch_size) {
        int B = d->n - start < batch_size ? d->n - start : batch_size;
        right += answers_batch(dec, d, g, start, B, rows, prompt, len);
    }
    free(rows);
    free(prompt);
    free(len);
    decoder_free(dec);
    return right;
}

double evaluate_answers(Model *m, const Dataset *d, const TaskGen *g, int batch_size) {
    long right = answers_range(m, d, g, batch_size, 0, 1);
    return d->n ? (double)right / d->n : 0;
}

typedef struct AnswersJob {
    StepPool *p;
    const Dataset *d;
    const TaskGen *g;
    int batch_size, S;
    long *right;            /* per thread */
} AnswersJob;

static void answers_thread(void *ctx, int s) {
    const AnswersJob *job = ctx;
    Model *m = job->p->shard[s].model;
    if (s > 0) m->anna = job->p->master->anna;
    job->right[s] = answers_range(m, job->d, job->g, job->batch_size, s, job->S);
}

/* Whole batches per thread, as evaluate_pool: each row is decoded as
 * evaluate_answers decodes it, and the count of right answers is an integer. */
double evaluate_answers_pool(StepPool *p, const Dataset *d, const TaskGen *g, int batch_size) {
    const int n_batches = (d->n + batch_size - 1) / batch_size;
    const int S = n_batches < p->threads ? n_batches : p->threads;
    if (S <= 1) return evaluate_answers(p->master, d, g, batch_size);
    long *right = al_calloc((size_t)S, sizeof *right), total = 0;
    AnswersJob job = { p, d, g, batch_size, S, right };
    step_pool_run(p, S, answers_thread, &job);
    for (int s = 0; s < S; s++) total += right[s];
    free(right);
    return d->n ? (double)total / d->n : 0;
}
