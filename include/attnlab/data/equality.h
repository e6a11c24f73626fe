/* equality.h — String Equality: Eq-random, Eq-one and Eq-ncp (paper 003, App. H.2
 * "String Equality"; EQ(x) = 𝕀[x_1..x_{N/2} = x_{N/2+1}..x_N], §4).
 *
 * An example is w [sep] w' with |w| = |w'| = k/2: k counts the SYMBOLS, not the
 * separator, so it has k + 1 tokens (the paper's even lengths are the two halves'
 * total).  Training draws k uniformly from the even lengths
 *     k_min, k_min + 2, …, N    with k_min = 2·⌈N/20⌉,
 * the paper's "N/10, N/10 + 2, …, N" with N/10 rounded UP to an even number when
 * it is odd or fractional (N = 50: 6, 8, …, 50; N = 20: 2, 4, …, 20); the test
 * split has k = N exactly.  N (task.seq_len) must be even.  docs/design.md,
 * decision 9, records these choices.
 *
 *     position   0 … m−1      m       m+1 … 2m      (m = k/2; Example.len = k + 1)
 *     token      w_1 … w_m    [sep]   w'_1 … w'_m
 *
 * Token ids: the symbols are 0 … |Σ|−1 and [sep] is |Σ| (vocab_size = |Σ| + 1).
 *
 * eq_random (|Σ| = 2): a fair coin; heads, w' = w (a positive), tails, w' an
 *   independent uniform string, labelled by actual equality (so positive with
 *   probability 2^(−m) too).  Binary classification read at the LAST token, as
 *   Dyck: targets[k] = label (1 = equal), every other target DATASET_IGNORE.
 * eq_one (|Σ| = task.symbols, paper: 1024): a fair coin; a positive copies w, a
 *   negative copies w and changes ONE position j (uniform) to a different symbol
 *   (uniform over the other |Σ| − 1), so the halves differ in exactly one place.
 *   Labelled and read like eq_random.
 * eq_ncp (|Σ| = task.symbols): next-character prediction on the strings w [sep] w
 *   (all in the language).  The classes are the |Σ| symbols, and the output at
 *   position i is the set of symbols that may follow the prefix x_0 … x_i:
 *     i < m       every symbol (the prefix is inside w, or [sep] comes next:
 *                 a symbol set cannot rule anything out there) — target EQ_ALL
 *     m ≤ i < 2m  exactly one, the copy w_{i−m+1} = tokens[i + 1] — target that id
 *     i = 2m      the string has ended: not scored.
 *   Targets stay one int per position: EQ_ALL(p) = |Σ| = n_classes is the dataset
 *   code "every class is valid" (dataset.h), and the TaskGen is multilabel, so
 *   training uses per-class sigmoids with binary cross-entropy (ad_bce_multilabel)
 *   and a position is right when σ > 0.5 exactly on its valid symbols.
 *
 * Groups (eq_random, eq_one): 0 = the halves are equal, 1 = they differ. */
#ifndef ATTNLAB_DATA_EQUALITY_H
#define ATTNLAB_DATA_EQUALITY_H

#include "attnlab/data/example.h"
#include "attnlab/util/error.h"
#include "attnlab/util/rng.h"

#define EQ_MAX_LEN     65536   /* the config's task.seq_len limit */
#define EQ_MAX_SYMBOLS 65536   /* the config's task.symbols limit */
#define EQ_DEFAULT_SYMBOLS 1024 /* paper 003: eq_one and eq_ncp */

typedef enum { EQ_RANDOM, EQ_ONE, EQ_NCP } EqKind;

enum { EQ_GROUP_EQUAL = 0, EQ_GROUP_UNEQUAL = 1 };

typedef struct EqParams {
    EqKind kind;
    int seq_len;   /* N: symbols of a test example (both halves); even, 2..EQ_MAX_LEN */
    int symbols;   /* |Σ|: 2 for eq_random; 2..EQ_MAX_SYMBOLS for eq_one and eq_ncp */
} EqParams;

const char *eq_name(EqKind kind);          /* "eq_random", "eq_one", "eq_ncp" */
/* Returns 0, or 2 with err filled, e.g. "eq_one: seq_len 21 must be even ...". */
int  eq_check(const EqParams *p, AlError *err);
int  eq_vocab_size(const EqParams *p);     /* |Σ| + 1: the symbols and [sep] */
int  eq_n_classes(const EqParams *p);      /* 2 (not equal / equal), or |Σ| for eq_ncp */
int  eq_max_len(const EqParams *p);        /* N + 1 tokens */
int  eq_sep(const EqParams *p);            /* the [sep] token id, |Σ| */
int  eq_min_symbols(const EqParams *p);    /* k_min = 2·⌈N/20⌉ */
int  eq_multilabel(const EqParams *p);     /* 1 for eq_ncp */

/* Fills ex (tokens and targets need eq_max_len entries) with one example of k
 * symbols, k even in [2, N]; k = 0 draws it uniformly from k_min, k_min + 2, …, N.
 * Example.len = k + 1.  p must have passed eq_check. */
void eq_sample(const EqParams *p, Rng *rng, int k, Example *ex);

#endif
