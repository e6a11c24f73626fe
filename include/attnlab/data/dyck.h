/* dyck.h — bounded Dyck recognition, Dyck-(2,2) (paper 003, App. H "Bounded Dycks").
 *
 * Dyck-(n,k): well-matched strings over n bracket types in which no prefix has
 * more than k unclosed brackets.  The task is sequence-level binary classification
 * of strings of length exactly N: label 1 = in the language, 0 = not.  The paper
 * runs n = k = 2 (types = depth = 2); other small values work the same way.
 *
 * Token layout (vocab_size = 2·types, no special tokens, exactly N tokens):
 *     type t opens as 2t and closes as 2t + 1, so for Dyck-(2,2)
 *     0 = '('   1 = ')'   2 = '['   3 = ']'
 * (token ^ 1 flips the direction, token ^ 2 swaps the two types.)
 *
 * Readout: the paper reads the class from the last position (GPT-2 backbone, no
 * separator token is mentioned).  So targets[N−1] = label and every other target is
 * DATASET_IGNORE; with causal attention position N−1 is the only one that sees the
 * whole string.  No end/classify token is added: the string is exactly the N
 * brackets the paper's generator emits.
 *
 * Sampler (App. H, "with 0.5 probability ... well-balanced ... with 0.5 probability
 * it does not belong to the language"): a fair coin picks positive or negative.
 *
 * Positive: a random walk over the stack.  At each position, with r positions left
 * and the stack at depth h: if h = 0, one of the `types` open brackets uniformly;
 * if h = depth or h = r (no room left to open), the closer of the top bracket;
 * otherwise uniformly among the `types` open brackets *and* the one closing bracket
 * (the literal reading of "choosing uniformly between open brackets and the closing
 * bracket": 1/3 each for two types).  For depth = 2 this is exactly the paper's
 * "iterate over N−2 steps, then add a depth-1 pair if the stack is empty, else the
 * remaining closing brackets": h ≤ 2 < r until the last two positions.  The
 * positives are therefore *not* uniform over the 2^(N−1) strings of Dyck-(2,2).
 *
 * Negative: a positive corrupted at k distinct positions, k uniform in 1..K with
 * K = ⌊N/10⌋ (K = 1 when N < 10, where the paper's range would be empty).  Each
 * chosen position gets, with probability 1/2, a type swap ('(' ↔ '[', ')' ↔ ']';
 * with more than two types a uniformly chosen other type; with one type there is
 * no other type and the position gets a direction flip), and otherwise a direction
 * flip ('(' ↔ ')', '[' ↔ ']').  If the result is still in the language the
 * corruption is redone on the same positive ("we redo the corruption again").  A
 * single corrupted position always breaks membership, so this ends quickly; after
 * DYCK_MAX_ATTEMPTS failures (never seen) one direction flip is applied instead.
 *
 * Groups (Example.group): 0 = positive; 1 = negative whose depth profile (brackets
 * read as open/close only) is already invalid; 2 = negative whose profile is valid,
 * so only bracket types are wrong — detecting these needs real matching. */
#ifndef ATTNLAB_DATA_DYCK_H
#define ATTNLAB_DATA_DYCK_H

#include "attnlab/data/example.h"
#include "attnlab/util/error.h"
#include "attnlab/util/rng.h"

#define DYCK_MAX_LEN 65536     /* the config's task.seq_len limit */
#define DYCK_MAX_DEPTH 32      /* the stack is a fixed array: no malloc per sample */
#define DYCK_MAX_TYPES 16
#define DYCK_MAX_ATTEMPTS 1000 /* corruption redo budget per negative */

enum { DYCK_GROUP_POSITIVE = 0, DYCK_GROUP_PROFILE = 1, DYCK_GROUP_TYPE_ONLY = 2 };

typedef struct DyckParams {
    int seq_len;   /* N: brackets per string; even, 2..DYCK_MAX_LEN */
    int depth;     /* max unclosed brackets in any prefix (paper: 2), 1..DYCK_MAX_DEPTH */
    int types;     /* bracket types (paper: 2), 1..DYCK_MAX_TYPES */
} DyckParams;

/* What one corruption did (dyck_corrupt). */
typedef struct DyckCorruption {
    int k;           /* positions changed in the returned string, 1..K */
    int n_swaps;     /* of them, type swaps */
    int n_flips;     /* of them, direction flips (n_swaps + n_flips = k) */
    int attempts;    /* corruptions drawn, ≥ 1 (> 1 when one was still valid) */
} DyckCorruption;

/* Returns 0, or 2 with err filled, e.g. "dyck: seq_len 7 must be even ...". */
int  dyck_check(const DyckParams *p, AlError *err);
int  dyck_vocab_size(const DyckParams *p);   /* 2·types */
int  dyck_n_classes(const DyckParams *p);    /* 2: 0 = not in the language, 1 = in it */
int  dyck_max_len(const DyckParams *p);      /* N: every example has exactly N tokens */
int  dyck_max_corruptions(const DyckParams *p); /* K = max(1, ⌊N/10⌋) */

/* Recognisers over tokens of this layout (any length n ≥ 0; ids outside
 * [0, 2·types) make a string invalid).  dyck_profile_valid ignores types: the
 * open/close profile never dips below 0 or above depth and ends at 0. */
int  dyck_is_member(const DyckParams *p, const int *x, int n);
int  dyck_profile_valid(const DyckParams *p, const int *x, int n);
int  dyck_group(const DyckParams *p, const int *x, int n);  /* DYCK_GROUP_* */

/* The pieces of dyck_sample, for tests and analysis.  p must pass dyck_check. */
void dyck_positive(const DyckParams *p, Rng *rng, int *x);            /* N tokens */
/* Writes a corrupted copy of the N-token positive into x (x must not alias it). */
void dyck_corrupt(const DyckParams *p, Rng *rng, const int *positive, int *x,
                  DyckCorruption *info /* may be NULL */);

/* One example: a fair coin, then a positive or a corrupted negative.  ex->tokens and
 * ex->targets need capacity dyck_max_len(p).  Sets len = N, targets (label at N−1,
 * −1 elsewhere), group, prompt_len = 0, answer_start = −1, answer_len = 0. */
void dyck_sample(const DyckParams *p, Rng *rng, Example *ex);

#endif
