/* overlap.c — see overlap.h. */
#include "attnlab/data/overlap.h"

#include <stdlib.h>

/* Rows of d whose key is in set; with hit, their keys are added there; with o, the
 * rows and those found are counted per group. */
static long count_in(const TaskGen *g, const Dataset *d, const SeqSet *set, SeqSet *hit, Overlap *o, int *key) {
    long n = 0;
    for (int r = 0; r < d->n; r++) {
        taskgen_dataset_row_key(g, d, r, set->seq_len, key);
        int in = seqset_contains(set, key), group = d->info ? d->info[r].group : 0;
        if (o && group >= 0 && group < o->n_groups) {
            o->group_rows[group]++;
            o->group_in_train[group] += in;
        }
        if (!in) continue;
        n++;
        if (hit) seqset_add(hit, key);
    }
    return n;
}

void overlap_measure(const TaskData *td, Rng *stream, long stream_rows, Overlap *o) {
    const TaskGen *g = &td->gen;
    int key_len = td->test.seq_len > td->train.seq_len ? td->test.seq_len : td->train.seq_len;
    if (td->streaming && g->max_len > key_len) key_len = g->max_len;
    int *key = al_malloc((size_t)key_len * sizeof(int));
    SeqSet test, hit;
    seqset_init(&test, key_len, td->test.n);
    seqset_init(&hit, key_len, 0);
    taskgen_add_keys(g, &td->test, &test);
    *o = (Overlap){ .streaming = td->streaming, .by_prompt = g->key_is_prompt, .test_rows = td->test.n,
                    .n_groups = g->n_groups };
    if (td->streaming) {
        o->train_rows = stream_rows;
        o->train_rows_in_test = taskgen_count_drawn(g, SPLIT_TRAIN, stream, stream_rows, &test, &hit);
    } else {
        o->train_rows = td->train.n;
        o->train_rows_in_test = count_in(g, &td->train, &test, &hit, NULL, key);
    }
    o->test_rows_in_train = (int)count_in(g, &td->test, &hit, NULL, o, key);
    seqset_free(&hit);
    seqset_free(&test);
    free(key);
}
