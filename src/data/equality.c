/* equality.c — see equality.h. */
#include "attnlab/data/equality.h"

#include "attnlab/data/dataset.h"

#include "param_check.h"

static const char *const EQ_NAMES[] = { [EQ_RANDOM] = "eq_random", [EQ_ONE] = "eq_one", [EQ_NCP] = "eq_ncp" };

const char *eq_name(EqKind kind) { return EQ_NAMES[kind]; }

int eq_check(const EqParams *p, AlError *err) {
    const char *name = eq_name(p->kind);
    if (param_in_range(err, name, "seq_len", p->seq_len, 2, EQ_MAX_LEN, "symbols of both halves"))
        return 2;
    if (p->seq_len % 2)
        return al_fail(err, 2, "%s: seq_len must be even, got %d (two halves of N/2 symbols around [sep])", name,
                       p->seq_len);
    if (p->kind == EQ_RANDOM && p->symbols != 2)
        return al_fail(err, 2, "eq_random: symbols %d must be 2 (its strings are binary)", p->symbols);
    return param_in_range(err, name, "symbols", p->symbols, 2, EQ_MAX_SYMBOLS,
                          "a negative needs another symbol to change to");
}

int eq_vocab_size(const EqParams *p) { return p->symbols + 1; }
int eq_n_classes(const EqParams *p) { return p->kind == EQ_NCP ? p->symbols : 2; }
int eq_max_len(const EqParams *p) { return p->seq_len + 1; }
int eq_sep(const EqParams *p) { return p->symbols; }
int eq_min_symbols(const EqParams *p) { return 2 * ((p->seq_len + 19) / 20); }
int eq_multilabel(const EqParams *p) { return p->kind == EQ_NCP; }

/* The second half of a classification example: a copy, and for a negative either
 * an independent string (eq_random) or one changed position (eq_one). */
static void second_half(const EqParams *p, Rng *rng, int positive, const int *w, int *w2, int m) {
    for (int i = 0; i < m; i++) w2[i] = w[i];
    if (positive) return;
    if (p->kind == EQ_RANDOM) {
        for (int i = 0; i < m; i++) w2[i] = (int)rng_below(rng, (uint32_t)p->symbols);
        return;
    }
    int j = (int)rng_below(rng, (uint32_t)m);
    w2[j] = (w[j] + 1 + (int)rng_below(rng, (uint32_t)(p->symbols - 1))) % p->symbols;   /* any other symbol */
}

void eq_sample(const EqParams *p, Rng *rng, int k, Example *ex) {
    const int k_min = eq_min_symbols(p);
    if (k == 0) k = k_min + 2 * (int)rng_below(rng, (uint32_t)((p->seq_len - k_min) / 2 + 1));
    AL_ASSERT(k >= 2 && k <= p->seq_len && k % 2 == 0);
    const int m = k / 2;
    int *x = ex->tokens, *y = ex->targets;
    int positive = p->kind == EQ_NCP || rng_below(rng, 2);
    for (int i = 0; i < m; i++) x[i] = (int)rng_below(rng, (uint32_t)p->symbols);
    x[m] = eq_sep(p);
    second_half(p, rng, positive, x, x + m + 1, m);
    int equal = 1;
    for (int i = 0; i < m; i++) equal &= x[i] == x[m + 1 + i];   /* eq_random: w' may equal w by chance */
    for (int i = 0; i <= k; i++) y[i] = DATASET_IGNORE;
    if (p->kind == EQ_NCP) {
        for (int i = 0; i < m; i++) y[i] = p->symbols;            /* every symbol valid (equality.h) */
        for (int i = m; i < k; i++) y[i] = x[i + 1];              /* the copy */
    } else {
        y[k] = equal;
    }
    ex->len = k + 1;
    ex->prompt_len = 0;
    ex->answer_start = -1;
    ex->answer_len = 0;
    ex->group = equal ? EQ_GROUP_EQUAL : EQ_GROUP_UNEQUAL;
}
