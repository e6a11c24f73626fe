/* khop.h — k-hop induction heads (Sanford, Hsu, Telgarsky 2024; public generator
 * chsanford/hop-induction-heads, src/tasks.py, InductionHopsFullSequenceTask).
 *
 * The task.  A string s_0..s_{n−1} over an alphabet of A symbols in which no two
 * consecutive symbols are equal.  From position p, one hop goes to the position
 * just after the last earlier occurrence of s_p:
 *
 *     hop(p) = q + 1,  q = max{ q < p : s_q = s_p },  and "does not exist" when
 *              there is no such q (then every further hop does not exist either).
 *
 * The k-hop label of position t is s at hop^k(t), or the null class when the
 * chain breaks.  hop^0(t) = t (the label is the symbol itself); 1 hop is the
 * standard induction head.  A hop only moves left (q + 1 ≤ p), so a label depends
 * on s_0..s_t alone and a causal model can compute it.
 *
 * An example (what the public get_strings returns):
 *
 *     position   0     1    2    …   n
 *     token      <k>   s_0  s_1  …   s_{n−1}        n = seq_len − 1 symbols
 *     target     −1    y_0  y_1  …   y_{n−1}        y_t = k-hop label of s_t
 *
 * i.e. the leading token says how many hops to take, and the target at position
 * t + 1 is the answer for the symbol at that same position.  The hop count k is
 * uniform over [min_hops, max_hops] unless the caller fixes it; Example.group = k.
 *
 * Token ids (vocab_size = A + 2 + max_hops; n_classes = A + 1):
 *
 *     0 .. A−1            the alphabet symbols (input tokens and target classes)
 *     A  (KHOP null)      "does not exist" (the public '~'): a target class only
 *     A + 1 + h           the hop-count token for h hops, h = 0 .. max_hops
 *
 * Symbols share their ids with their classes, so a target is also a token id.
 * Hop tokens are numbered by the absolute hop count (ids for h < min_hops exist
 * but are never drawn), so "1 hop" has the same id whether the parameters say
 * [0, 1] (ANNA training) or [1, 1]: a test set cannot silently mean another hop
 * count than the training set.  The public code numbers them h − min_hops and puts
 * them first; ids are arbitrary labels of an embedding table, so this changes
 * nothing a model can learn.
 *
 * Where this follows the public code, and where it does not:
 *  - Same string law: s_0 uniform over the alphabet, each next symbol uniform over
 *    the A − 1 others; same hop rule (Python's s[:p].rfind(c)); same alignment.
 *  - Lengths: the public code draws seq_len symbols and drops the last two, so
 *    its input has seq_len − 1 tokens.  Here seq_len is the TOTAL input length,
 *    hop token included: the public seq_len S is KhopParams.seq_len = S − 1
 *    (dropping trailing symbols changes no earlier label, so the laws agree).
 *    The ANNA paper (000, App. G.2) writes X = (k, X'), X' ∈ Σ^{N−1}, N = 100:
 *    that is seq_len = 100 here.
 *  - Position 0: the public target is a blank '_' that its loss and error DO
 *    score (a constant, learnt at once).  Here it is DATASET_IGNORE by default: the
 *    errors reported are over the n symbol positions only (null labels included,
 *    as in the public error).  With score_first (config task.score_first) it is
 *    the null class instead — a constant target as the public blank (there is no
 *    separate blank class), so training and errors cover all seq_len positions,
 *    the ANNA paper's "error on all the tokens".
 *  - Decision 5 (docs/design.md): a proper output head with n_classes = A + 1,
 *    not the public hidden-state-as-logits; that is model code, not this file.
 *
 * ANNA induction-head setting: { alphabet 4, seq_len 100, min_hops 0, max_hops 1 },
 * training with hops = −1 (k ∈ {0, 1}), testing with hops = 1.
 * The runs of Sanford et al. (public seq_len 100, 4 letters, hops 0..16) are
 * { 4, 99, 0, 16 }. */
#ifndef ATTNLAB_DATA_KHOP_H
#define ATTNLAB_DATA_KHOP_H

#include "attnlab/data/example.h"
#include "attnlab/util/error.h"
#include "attnlab/util/rng.h"

/* Limits that keep scratch on the stack and ids far from int overflow. */
#define KHOP_MAX_ALPHABET 1024
#define KHOP_MAX_HOPS     4096
#define KHOP_MAX_SEQ_LEN  (1 << 24)

typedef struct KhopParams {
    int alphabet;   /* A ≥ 2 symbols (the "no equal neighbours" law needs two) */
    int seq_len;    /* total tokens per example, the hop-count token included; ≥ 2 */
    int min_hops;   /* hop count range drawn from, 0 ≤ min_hops ≤ max_hops */
    int max_hops;
    int score_first;/* 1: position 0's target is the null class (scored), as the public code's
                       constant blank there; 0: DATASET_IGNORE (the default) */
} KhopParams;

/* Returns 0, or 2 with err naming the bad parameter. */
int  khop_check(const KhopParams *p, AlError *err);
int  khop_vocab_size(const KhopParams *p);     /* A + 2 + max_hops */
int  khop_n_classes(const KhopParams *p);      /* A + 1: the symbols and null */
int  khop_max_len(const KhopParams *p);        /* seq_len: every example is this long */
int  khop_null_class(const KhopParams *p);     /* A */
int  khop_hop_token(const KhopParams *p, int hops);   /* A + 1 + hops, 0 ≤ hops ≤ max_hops */

/* Labels of s[0..n) after `hops` hops: out[t] is a symbol in [0, alphabet) or
 * `alphabet` (null).  Works for any string over [0, alphabet), equal neighbours
 * included (a hop then lands on p itself, as in the public code).  out must not
 * overlap s.  O(n·hops) time, no allocation; alphabet ≤ KHOP_MAX_ALPHABET. */
void khop_labels(const int *s, int n, int alphabet, int hops, int *out);

/* Fills ex (tokens and targets need khop_max_len entries) with one example.
 * hops = −1 draws the hop count uniformly from [min_hops, max_hops]; otherwise
 * it must lie in that range.  p must have passed khop_check. */
void khop_sample(const KhopParams *p, Rng *rng, int hops, Example *ex);

#endif
