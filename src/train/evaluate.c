/* evaluate.c — see evaluate.h. */
#include "attnlab/train/evaluate.h"
#include "attnlab/nn/decode.h"

#include <stdlib.h>
#include <string.h>

void eval_count_correct(const Tensor *logits, const int *targets, const int *groups,
                        long *correct_tokens, long *scored_tokens, long *correct_seqs,
                        long *group_correct, long *group_scored) {
    int B = logits->shape[0], T = logits->shape[1], C = logits->shape[2];
    for (int b = 0; b < B; b++) {
        int all_right = 1;
        for (int i = 0; i < T; i++) {
            int y = targets[b * T + i];
            if (y < 0) continue;
            const float *row = logits->data + ((long)b * T + i) * C;
            int best = 0;
            for (int c = 1; c < C; c++)
                if (row[c] > row[best]) best = c;
            int right = best == y;
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

EvalResult evaluate(Model *m, Tape *t, const Dataset *d, int batch_size, int n_groups) {
    int saved_grad = t->grad_enabled, saved_training = t->training;
    t->grad_enabled = 0;
    t->training = 0;
    EvalResult r = {0};
    long correct = 0, correct_seqs = 0, group_correct[EVAL_MAX_GROUPS] = {0};
    int use_groups = n_groups > 0 && d->info;
    int groups[1024];
    if (batch_size > 1024) batch_size = 1024;
    double loss_sum = 0;
    for (int start = 0; start < d->n; start += batch_size) {
        int B = d->n - start < batch_size ? d->n - start : batch_size;
        const int *targets = dataset_targets(d, start);
        for (int b = 0; use_groups && b < B; b++) groups[b] = d->info[start + b].group;
        tape_reset(t);
        Tensor *logits = model_forward(m, t, dataset_tokens(d, start), B, d->seq_len);
        long scored_before = r.n_tokens;
        eval_count_correct(logits, targets, use_groups ? groups : NULL, &correct, &r.n_tokens,
                           &correct_seqs, group_correct, r.group_tokens);
        /* cross_entropy is a mean over this batch's scored positions: weight it back. */
        loss_sum += ad_cross_entropy(t, logits, targets)->data[0] * (double)(r.n_tokens - scored_before);
        r.n_seqs += B;
    }
    tape_reset(t);
    r.loss = r.n_tokens ? loss_sum / r.n_tokens : 0;
    r.token_acc = r.n_tokens ? (double)correct / r.n_tokens : 0;
    r.seq_acc = r.n_seqs ? (double)correct_seqs / r.n_seqs : 0;
    r.answer_acc = -1;
    r.n_groups = use_groups ? n_groups : 0;
    for (int g = 0; g < r.n_groups; g++)
        r.group_acc[g] = r.group_tokens[g] ? (double)group_correct[g] / r.group_tokens[g] : 0;
    t->grad_enabled = saved_grad;
    t->training = saved_training;
    return r;
}

/* Is the generated row's final answer the reference's? */
static int answer_right(const TaskGen *g, const int *out, int len, const int *ref, const RowInfo *info) {
    int start, alen;
    if (!g->extract_answer(g, out, len, &start, &alen) || alen != info->answer_len) return 0;
    return !memcmp(out + start, ref + info->answer_start, (size_t)alen * sizeof(int));
}

double evaluate_answers(Model *m, const Dataset *d, const TaskGen *g, int batch_size) {
    int T = d->seq_len, right = 0;
    Decoder *dec = decoder_create(m, batch_size);
    int *rows = al_malloc((size_t)batch_size * T * sizeof(int)), *prompt = al_malloc((size_t)batch_size * sizeof(int)),
        *len = al_malloc((size_t)batch_size * sizeof(int));
    for (int start = 0; start < d->n; start += batch_size) {
        int B = d->n - start < batch_size ? d->n - start : batch_size;
        memcpy(rows, dataset_tokens(d, start), (size_t)B * T * sizeof(int));
        for (int b = 0; b < B; b++) prompt[b] = d->info[start + b].prompt_len;
        decoder_greedy(dec, B, rows, prompt, g->eos_id, len);
        for (int b = 0; b < B; b++)
            right += answer_right(g, rows + (size_t)b * T, len[b], dataset_tokens(d, start + b), &d->info[start + b]);
    }
    free(rows);
    free(prompt);
    free(len);
    decoder_free(dec);
    return d->n ? (double)right / d->n : 0;
}
