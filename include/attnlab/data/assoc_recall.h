/* assoc_recall.h — single-query associative recall with a binary label (paper 002's
 * trained demonstration, designed for this project; not in the paper).
 *
 * The task.  n context tokens, each a (key, value) pair: the n keys are DISTINCT,
 * drawn uniformly from an alphabet of K keys (in uniformly random order), the values
 * are uniform bits.  Then one query token naming the key of a uniformly random
 * context position; the answer is that pair's value.  Nothing else predicts it: the
 * labels are balanced, and without attention from the query to the matching pair
 * a model can only guess.  Softmax attention can put weight ≈ 1 on the one matching
 * pair; a normalised linear kernel with a head of dimension d_head cannot separate
 * one key from n − 1 others once n ≫ d_head (results/paper002/README.md, E2).
 *
 *     position   0            1            …   n−1            n
 *     token      2·k_1+v_1    2·k_2+v_2    …   2·k_n+v_n      2K + k_q
 *     target     −1           −1           …   −1             v_q      (class 0 or 1)
 *
 * Token ids (vocab_size = 3K; n_classes = 2):
 *
 *     2·k + v        a pair token, key k ∈ [0, K), value v ∈ {0, 1}
 *     2K + k         the query token for key k
 *
 * Why K = n by default (task.keys = 0): the keys must be distinct, so K ≥ n.
 * With K = n every example holds every key in a fresh random order, so every key
 * and query embedding is trained in every example.  With K = 4n (MQAR-style, most
 * keys absent from any one example) a 1-layer softmax model stayed at chance for
 * 10 000 steps at n = 128 (results/paper002/README.md): the rarely-seen learned
 * key embeddings, not the attention, were the bottleneck.  task.keys selects any
 * K ≥ n.
 *
 * The query position q is uniform over 1..n (Example.group = 0). */
#ifndef ATTNLAB_DATA_ASSOC_RECALL_H
#define ATTNLAB_DATA_ASSOC_RECALL_H

#include "attnlab/data/example.h"
#include "attnlab/util/error.h"
#include "attnlab/util/rng.h"

#define AR_MAX_N    4096            /* distinct keys are drawn in O(n^2) (no scratch memory) */
#define AR_MAX_KEYS (1 << 20)

typedef struct ArParams {
    int n;      /* context pairs (task.seq_len); an example has n + 1 tokens */
    int keys;   /* K, the key alphabet, n ≤ K; 0 = n */
} ArParams;

/* K after the default is applied. */
int  ar_keys(const ArParams *p);
/* Returns 0, or 2 with err naming the bad parameter ("assoc_recall: seq_len ...",
 * "assoc_recall: keys ..."). */
int  ar_check(const ArParams *p, AlError *err);
int  ar_vocab_size(const ArParams *p);      /* 3K */
int  ar_n_classes(const ArParams *p);       /* 2 */
int  ar_max_len(const ArParams *p);         /* n + 1 */
int  ar_pair_token(const ArParams *p, int key, int value);   /* 2·key + value */
int  ar_query_token(const ArParams *p, int key);             /* 2K + key */

/* Fills ex (tokens and targets need ar_max_len entries) with one example.
 * p must have passed ar_check. */
void ar_sample(const ArParams *p, Rng *rng, Example *ex);

#endif
