/* assoc_recall.c — see assoc_recall.h. */
#include "attnlab/data/assoc_recall.h"

#include "attnlab/data/dataset.h"

#include "param_check.h"

int ar_keys(const ArParams *p) { return p->keys ? p->keys : p->n; }

int ar_check(const ArParams *p, AlError *err) {
    if (param_in_range(err, "assoc_recall", "seq_len", p->n, 1, AR_MAX_N, "context pairs before the query"))
        return 2;
    int k = ar_keys(p);
    if (k < p->n || k > AR_MAX_KEYS)
        return al_fail(err, 2, "assoc_recall: keys %d must be in [seq_len = %d, %d] (the %d context keys are "
                       "distinct; 0 = seq_len)", k, p->n, AR_MAX_KEYS, p->n);
    return 0;
}

int ar_vocab_size(const ArParams *p) { return 3 * ar_keys(p); }
int ar_n_classes(const ArParams *p) { (void)p; return 2; }
int ar_max_len(const ArParams *p) { return p->n + 1; }

int ar_pair_token(const ArParams *p, int key, int value) {
    AL_ASSERT(key >= 0 && key < ar_keys(p) && (value == 0 || value == 1));
    return 2 * key + value;
}

int ar_query_token(const ArParams *p, int key) {
    AL_ASSERT(key >= 0 && key < ar_keys(p));
    return 2 * ar_keys(p) + key;
}

static int contains(const int *a, int n, int x) {
    for (int i = 0; i < n; i++)
        if (a[i] == x) return 1;
    return 0;
}

void ar_sample(const ArParams *p, Rng *rng, Example *ex) {
    const int n = p->n, K = ar_keys(p);
    int *key = ex->tokens;
    /* Floyd's algorithm: a uniform n-subset of [0, K) in n draws; the shuffle then
     * makes every ordering of it equally likely. */
    for (int j = K - n, i = 0; j < K; j++, i++) {
        int t = (int)rng_below(rng, (uint32_t)j + 1);
        key[i] = contains(key, i, t) ? j : t;
    }
    rng_shuffle_int(rng, key, n);
    int q = (int)rng_below(rng, (uint32_t)n), answer = 0;
    for (int i = 0; i < n; i++) {
        int v = (int)(rng_u64(rng) >> 63);
        if (i == q) answer = v;
        ex->targets[i] = DATASET_IGNORE;
        ex->tokens[i] = ar_pair_token(p, key[i], v);
    }
    ex->tokens[n] = ar_query_token(p, ex->tokens[q] / 2);
    ex->targets[n] = answer;
    ex->len = n + 1;
    ex->prompt_len = 0;
    ex->answer_start = -1;
    ex->answer_len = 0;
    ex->group = 0;
}
