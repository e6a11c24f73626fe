/* taskgen.c — see taskgen.h. */
#include "attnlab/data/taskgen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Draws one example into a padded row. */
static void sample_row(const TaskGen *g, TaskSplit split, Rng *rng, int *tokens, int *targets, RowInfo *info) {
    Example ex = { .tokens = tokens, .targets = targets, .answer_start = -1 };
    g->sample(g, rng, split, &ex);
    AL_ASSERT(ex.len >= 1 && ex.len <= g->max_len);
    for (int i = ex.len; i < g->max_len; i++) {
        tokens[i] = g->pad_id;
        targets[i] = DATASET_IGNORE;
    }
    if (info) *info = (RowInfo){ ex.len, ex.prompt_len, ex.answer_start, ex.answer_len, ex.group };
}

void taskgen_row_key(const TaskGen *g, const int *tokens, const RowInfo *info, int key_len, int *key) {
    int n = g->key_is_prompt && info->prompt_len > 0 ? info->prompt_len : info->len;
    AL_ASSERT(n >= 0 && n <= key_len);
    memcpy(key, tokens, (size_t)n * sizeof(int));
    for (int i = n; i < key_len; i++) key[i] = -1;
}

/* A large budget spent on a space too small for n distinct rows would run for
 * minutes before failing.  The share of draws that are new only falls as the set
 * fills, so the average share so far bounds what the rest of the budget can add;
 * with twice that bound still short of n, the end is certain enough to stop. */
#define DOOMED_EVERY 65536
static int cannot_finish(int have, int n, long draws, long budget) {
    return have + 2.0 * have / draws * (double)(budget - draws) < n;
}

int taskgen_dataset(const TaskGen *g, TaskSplit split, int n, Rng *rng, const SeqSet *exclude,
                    SeqSet *keys, Dataset *out, AlError *err) {
    memset(out, 0, sizeof *out);
    dataset_alloc(out, n, g->max_len, g->vocab_size, g->n_classes);
    dataset_alloc_info(out);
    out->pad_id = g->pad_id;
    out->multilabel = g->multilabel;
    SeqSet seen;
    seqset_init(&seen, g->max_len, n);
    int *key = al_malloc((size_t)g->max_len * sizeof(int));
    long budget = 100L * n > 1000 ? 100L * n : 1000, draws = 0;
    int have = 0, doomed = 0;
    while (have < n && draws < budget && !doomed) {
        int *tok = dataset_tokens(out, have), *tgt = dataset_targets(out, have);
        sample_row(g, split, rng, tok, tgt, &out->info[have]);
        draws++;
        doomed = draws % DOOMED_EVERY == 0 && cannot_finish(have, n, draws, budget);
        taskgen_row_key(g, tok, &out->info[have], g->max_len, key);
        if ((exclude && seqset_contains(exclude, key)) || !seqset_add(&seen, key)) continue;
        if (keys) seqset_add(keys, key);
        have++;
    }
    free(key);
    seqset_free(&seen);
    if (have < n) {
        char left[96] = "";
        if (doomed) snprintf(left, sizeof left, " (stopped early: the other %ld draws of the budget could not "
                             "find the rest)", budget - draws);
        dataset_free(out);
        return al_fail(err, 2, "task %s: only %d distinct %s examples found in %ld draws%s, %d wanted "
                       "(the task is too small for this size: lower it, or train by streaming with "
                       "task.train_size 0)", g->name, have, split == SPLIT_TRAIN ? "training" : "test",
                       draws, left, n);
    }
    return 0;
}

void taskgen_dataset_row_key(const TaskGen *g, const Dataset *d, int r, int key_len, int *key) {
    RowInfo whole = { .len = d->seq_len };
    taskgen_row_key(g, dataset_tokens(d, r), d->info ? &d->info[r] : &whole, key_len, key);
}

void taskgen_add_keys(const TaskGen *g, const Dataset *d, SeqSet *keys) {
    int *key = al_malloc((size_t)keys->seq_len * sizeof(int));
    for (int r = 0; r < d->n; r++) {
        taskgen_dataset_row_key(g, d, r, keys->seq_len, key);
        seqset_add(keys, key);
    }
    free(key);
}

void taskgen_batch(const TaskGen *g, TaskSplit split, Rng *rng, Batch *b) {
    AL_ASSERT(b->seq_len == g->max_len);
    b->multilabel = g->multilabel;
    for (int r = 0; r < b->batch; r++)
        sample_row(g, split, rng, b->tokens + (size_t)r * b->seq_len, b->targets + (size_t)r * b->seq_len, NULL);
}

long taskgen_count_drawn(const TaskGen *g, TaskSplit split, Rng *rng, long n, const SeqSet *keys, SeqSet *hit) {
    int *tok = al_malloc((size_t)g->max_len * sizeof(int)), *tgt = al_malloc((size_t)g->max_len * sizeof(int));
    int *key = al_malloc((size_t)keys->seq_len * sizeof(int));
    long found = 0;
    for (long i = 0; i < n; i++) {
        RowInfo info;
        sample_row(g, split, rng, tok, tgt, &info);
        taskgen_row_key(g, tok, &info, keys->seq_len, key);
        if (!seqset_contains(keys, key)) continue;
        found++;
        if (hit) seqset_add(hit, key);
    }
    free(key);
    free(tgt);
    free(tok);
    return found;
}
