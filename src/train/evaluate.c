/* evaluate.c — see evaluate.h. */
#include "attnlab/train/evaluate.h"

void eval_count_correct(const Tensor *logits, const int *targets, long *correct_tokens,
                        long *scored_tokens, long *correct_seqs) {
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
            *scored_tokens += 1;
            if (best == y) *correct_tokens += 1;
            else all_right = 0;
        }
        *correct_seqs += all_right;
    }
}

EvalResult evaluate(Model *m, Tape *t, const Dataset *d, int batch_size) {
    int saved_grad = t->grad_enabled, saved_training = t->training;
    t->grad_enabled = 0;
    t->training = 0;
    EvalResult r = {0};
    long correct = 0, correct_seqs = 0;
    double loss_sum = 0;
    for (int start = 0; start < d->n; start += batch_size) {
        int B = d->n - start < batch_size ? d->n - start : batch_size;
        const int *targets = dataset_targets(d, start);
        tape_reset(t);
        Tensor *logits = model_forward(m, t, dataset_tokens(d, start), B, d->seq_len);
        long scored_before = r.n_tokens;
        eval_count_correct(logits, targets, &correct, &r.n_tokens, &correct_seqs);
        /* cross_entropy is a mean over this batch's scored positions: weight it back. */
        loss_sum += ad_cross_entropy(t, logits, targets)->data[0] * (double)(r.n_tokens - scored_before);
        r.n_seqs += B;
    }
    tape_reset(t);
    r.loss = r.n_tokens ? loss_sum / r.n_tokens : 0;
    r.token_acc = r.n_tokens ? (double)correct / r.n_tokens : 0;
    r.seq_acc = r.n_seqs ? (double)correct_seqs / r.n_seqs : 0;
    t->grad_enabled = saved_grad;
    t->training = saved_training;
    return r;
}
