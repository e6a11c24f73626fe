/* index_lookup.c — see index_lookup.h. */
#include "attnlab/data/index_lookup.h"

#include "attnlab/data/dataset.h"

#include "param_check.h"

int idx_check(const IdxParams *p, AlError *err) {
    if (param_in_range(err, "index_lookup", "alphabet", p->alphabet, 2, IDX_MAX_ALPHABET,
                       "one symbol leaves nothing to look up") ||
        param_in_range(err, "index_lookup", "max_len", p->max_len, 1, IDX_MAX_N, "symbols before the index token"))
        return 2;
    if (p->min_len < 1 || p->min_len > p->max_len)
        return al_fail(err, 2, "index_lookup: min_len %d must be in [1, max_len = %d]",
                       p->min_len, p->max_len);
    return 0;
}

int idx_vocab_size(const IdxParams *p) { return p->alphabet + p->max_len; }
int idx_n_classes(const IdxParams *p) { return p->alphabet; }
int idx_max_len(const IdxParams *p) { return p->max_len + 1; }

int idx_index_token(const IdxParams *p, int position) {
    AL_ASSERT(position >= 1 && position <= p->max_len);
    return p->alphabet + position - 1;
}

void idx_sample(const IdxParams *p, Rng *rng, int length, Example *ex) {
    int k = length;
    if (k == 0) k = p->min_len + (int)rng_below(rng, (uint32_t)(p->max_len - p->min_len + 1));
    AL_ASSERT(k >= 1 && k <= p->max_len);
    for (int i = 0; i < k; i++) {
        ex->tokens[i] = (int)rng_below(rng, (uint32_t)p->alphabet);
        ex->targets[i] = DATASET_IGNORE;
    }
    int pos = 1 + (int)rng_below(rng, (uint32_t)k);   /* 1-based, as in the paper */
    ex->tokens[k] = idx_index_token(p, pos);
    ex->targets[k] = ex->tokens[pos - 1];
    ex->len = k + 1;
    ex->prompt_len = 0;
    ex->answer_start = -1;
    ex->answer_len = 0;
    ex->group = 0;
}
