/* khop.c — see khop.h.
 *
 * Labelling without a search per hop: one left-to-right pass records, for every
 * position p, prev(p) = the last earlier position holding the same symbol (a
 * last-seen table of A entries).  A hop is then p → prev(p) + 1, O(1), and a
 * whole label O(hops).  prev() is stored in the output buffer itself, which is
 * then overwritten from the right: the chain of position t only visits positions
 * ≤ t, whose prev() entries are still intact.  So no scratch beyond the table. */
#include "attnlab/data/khop.h"

#include "attnlab/data/dataset.h"

#include "param_check.h"

int khop_check(const KhopParams *p, AlError *err) {
    if (p->alphabet < 2)
        return al_fail(err, 2, "khop: alphabet %d must be >= 2 (consecutive symbols must differ)",
                       p->alphabet);
    if (p->alphabet > KHOP_MAX_ALPHABET)
        return al_fail(err, 2, "khop: alphabet %d must be <= %d", p->alphabet, KHOP_MAX_ALPHABET);
    if (param_in_range(err, "khop", "seq_len", p->seq_len, 2, KHOP_MAX_SEQ_LEN,
                       "the hop-count token and at least one symbol"))
        return 2;
    if (p->min_hops < 0)
        return al_fail(err, 2, "khop: min_hops %d must be >= 0", p->min_hops);
    if (p->max_hops < p->min_hops)
        return al_fail(err, 2, "khop: max_hops %d must be >= min_hops %d", p->max_hops, p->min_hops);
    if (p->max_hops > KHOP_MAX_HOPS)
        return al_fail(err, 2, "khop: max_hops %d must be <= %d", p->max_hops, KHOP_MAX_HOPS);
    return 0;
}

int khop_vocab_size(const KhopParams *p) { return p->alphabet + 2 + p->max_hops; }
int khop_n_classes(const KhopParams *p) { return p->alphabet + 1; }
int khop_max_len(const KhopParams *p) { return p->seq_len; }
int khop_null_class(const KhopParams *p) { return p->alphabet; }

int khop_hop_token(const KhopParams *p, int hops) {
    AL_ASSERT(hops >= 0 && hops <= p->max_hops);
    return p->alphabet + 1 + hops;
}

/* prev[t] = max{ q < t : s[q] = s[t] }, or −1. */
static void previous_occurrences(const int *s, int n, int alphabet, int *prev) {
    int last[KHOP_MAX_ALPHABET];
    for (int a = 0; a < alphabet; a++) last[a] = -1;
    for (int t = 0; t < n; t++) {
        AL_ASSERT(s[t] >= 0 && s[t] < alphabet);
        prev[t] = last[s[t]];
        last[s[t]] = t;
    }
}

void khop_labels(const int *s, int n, int alphabet, int hops, int *out) {
    AL_ASSERT(alphabet >= 1 && alphabet <= KHOP_MAX_ALPHABET && hops >= 0);
    previous_occurrences(s, n, alphabet, out);   /* out[] holds prev() for now */
    for (int t = n - 1; t >= 0; t--) {
        int p = t;
        for (int h = 0; h < hops && p >= 0; h++) {
            int q = out[p];                      /* p ≤ t: not overwritten yet */
            p = q < 0 ? -1 : q + 1;
        }
        out[t] = p < 0 ? alphabet : s[p];
    }
}

/* s_0 uniform; each next symbol uniform over the alphabet minus its predecessor. */
static void draw_string(Rng *rng, int alphabet, int *s, int n) {
    s[0] = (int)rng_below(rng, (uint32_t)alphabet);
    for (int t = 1; t < n; t++) {
        int x = (int)rng_below(rng, (uint32_t)(alphabet - 1));
        s[t] = x + (x >= s[t - 1]);              /* skip the predecessor's id */
    }
}

void khop_sample(const KhopParams *p, Rng *rng, int hops, Example *ex) {
    if (hops == -1) hops = p->min_hops + (int)rng_below(rng, (uint32_t)(p->max_hops - p->min_hops + 1));
    AL_ASSERT(hops >= p->min_hops && hops <= p->max_hops);
    int n = p->seq_len - 1;
    ex->len = p->seq_len;
    ex->tokens[0] = khop_hop_token(p, hops);
    ex->targets[0] = p->score_first ? khop_null_class(p) : DATASET_IGNORE;
    draw_string(rng, p->alphabet, ex->tokens + 1, n);
    khop_labels(ex->tokens + 1, n, p->alphabet, hops, ex->targets + 1);
    ex->prompt_len = 0;
    ex->answer_start = -1;
    ex->answer_len = 0;
    ex->group = hops;
}
