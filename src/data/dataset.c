/* dataset.c — see dataset.h. */
#include "attnlab/data/dataset.h"
#include "attnlab/data/seqset.h"

#include <stdlib.h>
#include <string.h>

void dataset_alloc(Dataset *d, int n, int seq_len, int vocab_size, int n_classes) {
    AL_ASSERT(n >= 0 && seq_len >= 1);
    size_t cells = (size_t)n * (size_t)seq_len;
    memset(d, 0, sizeof *d);
    d->n = n;
    d->seq_len = seq_len;
    d->vocab_size = vocab_size;
    d->n_classes = n_classes;
    d->tokens = al_calloc(cells, sizeof(int));
    d->targets = al_calloc(cells, sizeof(int));
}

void dataset_alloc_info(Dataset *d) {
    AL_ASSERT(!d->info);
    d->info = al_calloc((size_t)(d->n ? d->n : 1), sizeof *d->info);
}

void dataset_free(Dataset *d) {
    free(d->tokens);
    free(d->targets);
    free(d->info);
    memset(d, 0, sizeof *d);
}

int dataset_count_distinct(const Dataset *d) {
    SeqSet set;
    seqset_init(&set, d->seq_len, d->n);
    int distinct = seqset_add_rows(&set, d->tokens, d->n);
    seqset_free(&set);
    return distinct;
}

static void swap_ints(int *a, int *b, int *tmp, size_t bytes) {
    memcpy(tmp, a, bytes);
    memcpy(a, b, bytes);
    memcpy(b, tmp, bytes);
}

void dataset_shuffle_rows(Dataset *d, Rng *rng) {
    /* Fisher–Yates on whole rows, in place: the same draws as rng_shuffle_int. */
    size_t bytes = (size_t)d->seq_len * sizeof(int);
    int *tmp = al_malloc(bytes);
    for (int i = d->n - 1; i > 0; i--) {
        int j = (int)rng_below(rng, (uint32_t)(i + 1));
        if (j == i) continue;
        swap_ints(dataset_tokens(d, i), dataset_tokens(d, j), tmp, bytes);
        swap_ints(dataset_targets(d, i), dataset_targets(d, j), tmp, bytes);
        if (d->info) {
            RowInfo t = d->info[i];
            d->info[i] = d->info[j];
            d->info[j] = t;
        }
    }
    free(tmp);
}

void batch_alloc(Batch *b, int batch, int seq_len) {
    AL_ASSERT(batch >= 1 && seq_len >= 1);
    b->batch = batch;
    b->seq_len = seq_len;
    b->multilabel = 0;
    b->tokens = al_calloc((size_t)batch * seq_len, sizeof(int));
    b->targets = al_calloc((size_t)batch * seq_len, sizeof(int));
}

void batch_free(Batch *b) {
    free(b->tokens);
    free(b->targets);
    memset(b, 0, sizeof *b);
}

/* ---- Sampler ------------------------------------------------------------ */

/* The order is drawn from the identity, not from the previous order, so it is a
 * function of epoch_rng alone: that is what makes (epoch, pos, epoch_rng) a
 * complete state. */
static void draw_order(Sampler *s) {
    s->rng = s->epoch_rng;
    for (int i = 0; i < s->n; i++) s->order[i] = i;
    rng_shuffle_int(&s->rng, s->order, s->n);
}

void sampler_init(Sampler *s, int n, Rng rng) {
    AL_ASSERT(n >= 1);
    memset(s, 0, sizeof *s);
    s->n = n;
    s->order = al_malloc((size_t)n * sizeof *s->order);
    s->epoch_rng = rng;
    draw_order(s);
}

void sampler_free(Sampler *s) {
    free(s->order);
    memset(s, 0, sizeof *s);
}

static int next_index(Sampler *s) {
    if (s->pos == s->n) {
        s->epoch++;
        s->pos = 0;
        s->epoch_rng = s->rng;
        draw_order(s);
    }
    return s->order[s->pos++];
}

void sampler_next_indices(Sampler *s, int *idx, int k) {
    for (int i = 0; i < k; i++) idx[i] = next_index(s);
}

void sampler_next_batch(Sampler *s, const Dataset *d, Batch *b) {
    AL_ASSERT(d->n == s->n && b->seq_len == d->seq_len);
    size_t bytes = (size_t)d->seq_len * sizeof(int);
    b->multilabel = d->multilabel;
    for (int r = 0; r < b->batch; r++) {
        int row = next_index(s);
        memcpy(b->tokens + (size_t)r * b->seq_len, dataset_tokens(d, row), bytes);
        memcpy(b->targets + (size_t)r * b->seq_len, dataset_targets(d, row), bytes);
    }
}

SamplerState sampler_get_state(const Sampler *s) {
    SamplerState st = { .n = s->n, .pos = s->pos, .epoch = s->epoch, .epoch_rng = s->epoch_rng };
    return st;
}

int sampler_set_state(Sampler *s, const SamplerState *st, AlError *err) {
    if (st->n != s->n)
        return al_fail(err, 2, "sampler state is for a dataset of %d rows, this one has %d",
                       st->n, s->n);
    if (st->pos < 0 || st->pos > s->n || st->epoch < 0)
        return al_fail(err, 2, "sampler state out of range (epoch %lld, position %d of %d)",
                       (long long)st->epoch, st->pos, s->n);
    s->epoch = st->epoch;
    s->pos = st->pos;
    s->epoch_rng = st->epoch_rng;
    draw_order(s);
    return 0;
}
