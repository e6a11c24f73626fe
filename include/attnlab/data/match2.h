/* match2.h — the Match2 task (paper 000, App. G.1, Algorithm 2).
 *
 * A sequence x_1..x_N of tokens drawn uniformly from 1..M−1; the target at i is
 * y_i = 1 iff some j (j = i allowed) has x_i + x_j ≡ 0 (mod M).  Token 0 is never
 * drawn; vocab_size = M, n_classes = 2.
 *
 * Balance: the dataset is split into four bins by the fraction of ones in Y,
 * [0,25%) [25,50%) [50,75%) [75,100%], each holding D/4 rows (when 4 ∤ D the
 * first D mod 4 bins get one row more).  Bins are filled by rejection sampling
 * with *distinct* sequences (none of them in `exclude`), for at most
 * MATCH2_DRAWS_PER_EXAMPLE·D draws.  Only a bin still short after that is topped
 * up with random permutations (X and Y permuted together) of its own sampled
 * members; a bin with no member at all is an error.  Finally the rows are shuffled.
 *
 * Why distinct and not Algorithm 2's literal "sample D/40, then permute": with
 * only D/40 distinct sequences the model memorises them (docs/design.md, decision 2). */
#ifndef ATTNLAB_DATA_MATCH2_H
#define ATTNLAB_DATA_MATCH2_H

#include "attnlab/data/dataset.h"
#include "attnlab/data/seqset.h"
#include "attnlab/util/error.h"
#include "attnlab/util/rng.h"

#define MATCH2_N_BINS 4
#define MATCH2_DRAWS_PER_EXAMPLE 1000   /* rejection-sampling budget per dataset row */
#define MATCH2_MAX_EXAMPLES (1 << 28)    /* rows of one dataset */
/* match2_check_size's limits: tokens a generation may draw (~20 s here), and the
 * size of the trial it estimates the bins' rates from. */
#define MATCH2_MAX_DRAW_TOKENS (1LL << 30)   /* its message says 2^30 */
#define MATCH2_PILOT_DRAWS 20000
#define MATCH2_PILOT_TOKENS (1 << 22)

typedef struct Match2Stats {
    int n_examples;
    int bin_quota[MATCH2_N_BINS];     /* rows per bin in the result */
    int bin_sampled[MATCH2_N_BINS];   /* distinct rejection-sampled rows per bin */
    int bin_topped_up[MATCH2_N_BINS]; /* permuted copies added per bin */
    int n_topped_up;                  /* sum of bin_topped_up */
    int n_distinct;                   /* distinct token rows in the result */
    long long draws;                  /* sequences drawn by rejection sampling */
    long long draw_budget;            /* MATCH2_DRAWS_PER_EXAMPLE · n_examples */
    long long rejected_duplicate;     /* draws for a non-full bin already in it */
    long long rejected_excluded;      /* draws (and permuted copies) found in `exclude` */
} Match2Stats;

/* y[i] = 1 iff ∃ j: x[i] + x[j] ≡ 0 (mod modulus).  Tokens must lie in
 * [0, modulus).  O(n + modulus) time: a presence table, not a pair loop. */
void match2_labels(const int *x, int n, int modulus, int *y);
/* The balance bin (0..3) of a row with n_ones ones among seq_len targets. */
int  match2_bin(int n_ones, int seq_len);
/* Refuses, before anything is drawn, a dataset of n_examples rows that generation
 * could not fill in reasonable time: out of [1, MATCH2_MAX_EXAMPLES], or needing
 * more than MATCH2_MAX_DRAW_TOKENS tokens of rejection sampling.  The draws a bin
 * needs are its quota over its rate, estimated by a trial of MATCH2_PILOT_DRAWS
 * sequences (fewer for long ones) from a fixed stream; a bin the trial never hit
 * is assumed to use up the whole budget, as generation then would.  Skipped when
 * the whole budget is within the limit.  Returns 0, or 2 with err ("match2: dataset
 * size D ...", the caller names the key). */
int  match2_check_size(int n_examples, int seq_len, int modulus, AlError *err);
/* Generates n_examples rows into *out (allocated here; dataset_free it).  All
 * randomness comes from rng.  exclude (may be NULL) holds sequences that must not
 * appear, e.g. the training set when generating the test set.  stats may be NULL.
 * Returns 0, or 2 with err filled (bad arguments, or a bin that cannot be filled);
 * on error *out is left empty. */
int  match2_generate(Dataset *out, int n_examples, int seq_len, int modulus, Rng *rng,
                     const SeqSet *exclude, Match2Stats *stats, AlError *err);

#endif
