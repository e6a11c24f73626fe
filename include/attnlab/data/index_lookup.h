/* index_lookup.h — Index Lookup (paper 003, Bhattamishra et al. 2024, §3 and App. H.1;; docs/design.md).
 *
 * The task.  k symbols s_1..s_k drawn independently and uniformly from Σ, then ONE
 * index token p ∈ {1..k} drawn uniformly; the answer is s_p.  The index tokens are
 * a vocabulary of their own (paper: V = Σ ∪ [N]), not symbols.  Training draws
 * k uniformly from [min_len, N] (paper: [10, N], N ∈ {20, 50, 100, 200, 400},
 * |Σ| = 64); evaluation uses k = N exactly.
 *
 * Lengths — read carefully, "length" means the number of SYMBOLS:
 *  - k (the `length` argument of idx_sample, IdxParams.min_len and .max_len = N)
 *    counts the symbols only, as in the paper ("sequences of length exactly N");
 *  - an example has k + 1 tokens (the symbols and the index token): Example.len =
 *    k + 1, and idx_max_len() = N + 1 is the buffer capacity and padded row width.
 *
 * Positions are 1-based as in the paper: the index token for p ∈ {1..N} names the
 * p-th symbol, tokens[p − 1] in C terms.
 *
 *     position   0     1     …   k−1    k
 *     token      s_1   s_2   …   s_k    IDX_p
 *     target     −1    −1    …   −1     s_p        (scored at the last position only)
 *
 * Token ids (vocab_size = |Σ| + N; n_classes = |Σ|):
 *
 *     0 .. |Σ|−1              the symbols; a symbol's class id is its token id
 *     |Σ| + p − 1             the index token IDX_p, p = 1 .. N
 *
 * The read-out at the index token is the paper's unstated but only sensible
 * choice for a causal model (the one position that sees all input).
 * Examples are variable-length: the dataset code right-pads them (example.h). */
#ifndef ATTNLAB_DATA_INDEX_LOOKUP_H
#define ATTNLAB_DATA_INDEX_LOOKUP_H

#include "attnlab/data/example.h"
#include "attnlab/util/error.h"
#include "attnlab/util/rng.h"

#define IDX_DEFAULT_ALPHABET 64     /* paper 003 */
#define IDX_DEFAULT_MIN_LEN  10     /* paper 003: k ~ U[10, N] */
#define IDX_MAX_ALPHABET     (1 << 20)
#define IDX_MAX_N            (1 << 20)

typedef struct IdxParams {
    int alphabet;   /* |Σ| ≥ 2 */
    int max_len;    /* N: the most symbols an example has (tokens: N + 1) */
    int min_len;    /* the fewest symbols a training example has, 1 ≤ min_len ≤ N */
} IdxParams;

/* Returns 0, or 2 with err naming the bad parameter. */
int  idx_check(const IdxParams *p, AlError *err);
int  idx_vocab_size(const IdxParams *p);    /* |Σ| + N */
int  idx_n_classes(const IdxParams *p);     /* |Σ| */
int  idx_max_len(const IdxParams *p);       /* N + 1 TOKENS: N symbols and the index token */
int  idx_index_token(const IdxParams *p, int position);   /* |Σ| + position − 1, 1 ≤ position ≤ N */

/* Fills ex (tokens and targets need idx_max_len entries) with one example of
 * `length` symbols, 1 ≤ length ≤ N; length = 0 draws it uniformly from
 * [min_len, N].  Example.len = length + 1; group = 0.  p must have passed idx_check. */
void idx_sample(const IdxParams *p, Rng *rng, int length, Example *ex);

#endif
