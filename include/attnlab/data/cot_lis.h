/* cot_lis.h — longest increasing subsequence with a chain of thought (paper 004,
 * Yang et al. 2024, which takes its data from Feng et al. 2023, public generator
 * guyuntian/CoT_benchmark LIS/data.py, tokens and loss from LIS/dataloader.py).
 *
 * The task.  Given a_1 … a_n, output the length of the longest strictly increasing
 * subsequence.  The chain of thought is the O(n²) dynamic programme
 *
 *     dp_l = 1 + max{ dp_i : i < l, a_i < a_l }   (1 when no such i)
 *
 * i.e. dp_l = length of the longest increasing subsequence ending at l, written
 * for every l; the answer is max_l dp_l.
 *
 * One example (n = 10, number_range 160; token names as lis_token_name prints them):
 *
 *     18 130 115 146 24 74 51 39 51 124 <sep> 1 2 2 3 2 3 3 3 4 5 <sep> 5 <eos>
 *     |------------- prompt (n + 1) ------||------ CoT (n) ------|      ^answer
 *
 * and the direct variant (p->direct) is "18 130 … 124 <sep> 5 <eos>".
 *
 * Tokens (vocab_size = number_range + 3):
 *     0 <pad>   1 <sep>   2 <eos>   3 + v  the integer v, 0 ≤ v < number_range
 * Inputs and dp values share the integer tokens: inputs lie in [n + 1, number_range)
 * and dp values in [1, n], so they never collide.  <pad> is never generated.
 *
 * The input law (public get_seq): k ∈ {1, 2, 3} increasing runs with `total`
 * ∈ {3..n} planted numbers in all, split as
 *     k = 1: [total];   k = 2: t ∈ {1..⌊total/2⌋+1}, [t, total − t];
 *     k = 3: t1 ∈ {1..⌊total/3⌋+1}, t2 ∈ {1..⌊(total−t1)/2⌋+1}, [t1, t2, total−t1−t2]
 * (the third run may be empty); each run is a sorted sample without replacement
 * from [n + 1, number_range); the runs, concatenated, are written in order at a
 * sorted random set of `total` positions; every other position is uniform on
 * [n + 1, number_range).  All choices uniform.
 *
 * number_range: the public note says "length + 150", which cannot draw a run of n
 * distinct values once n > 149 (paper 004's n = 175, 250).  docs/design.md, decision 6:
 * number_range = max(n + 150, 2n + 1) — that is LisParams.number_range = 0.
 *
 * Lengths (tokens, <eos> included): CoT 2n + 4, direct n + 3 — every example has
 * exactly this length.  Scaled sizes n = 10/20/30/40 give 24/44/64/84; the paper's
 * n = 40/110/175/250 give 84/224/354/504 (its quoted "CoT lengths" 83/223/353/503
 * do not count <eos>).
 *
 * Targets (the public loss, "every token after the first separator including
 * <eos>"): target[i] = tokens[i + 1] for n ≤ i ≤ len − 2 (the first <sep> is at
 * position n and predicts the first dp value), DATASET_IGNORE elsewhere.  Direct
 * examples score two positions: <sep> → answer and answer → <eos>.
 * prompt_len = n + 1 (generation starts after the first <sep>); the answer is one
 * token at answer_start = len − 2, answer_len = 1.
 *
 * Evaluation.  Paper 004: greedy decoding of the whole chain until <eos> (or a
 * length cap), then "the accuracy of the final answer, which is the last output".
 * The public code that does this for arithmetic (arithmetic/eval.py after
 * model.generate) scores a sequence correct iff it contains an <eos> and the token
 * just before the first <eos> equals the gold answer; intermediate dp tokens are
 * NOT checked, and a sequence with no <eos> within the cap is wrong.
 * lis_extract_answer implements that reading.  The public equation/eval.py is
 * stricter: its answer must also be preceded by <sep>; a caller wanting that
 * checks tokens[start − 1] == LIS_SEP (in the direct variant that is the
 * prompt's own <sep>).  Not followed: the public LIS/eval.py, which is
 * teacher-forced and correct iff every scored token is the argmax (Feng's metric,
 * not paper 004's); and a leak in the public generate, which stops a whole batch
 * once one row hits the cap, leaving rows still running with the gold tail in
 * their buffer — extraction here only ever sees model-generated tokens.
 *
 * Deduplication.  The public generator keeps sets of whole sequences (train, and a
 * test set that skips anything in train).  The chain and the answer are functions
 * of the prompt, so deduplicating by prompt tokens (lis_prompt_key) is the same.
 *
 * Randomness: the draws do not depend on `direct`, so one Rng state gives the same
 * problem in both variants. */
#ifndef ATTNLAB_DATA_COT_LIS_H
#define ATTNLAB_DATA_COT_LIS_H

#include "attnlab/data/example.h"
#include "attnlab/util/error.h"
#include "attnlab/util/rng.h"

/* Keeps scratch on the stack (three arrays of LIS_MAX_LENGTH ints). */
#define LIS_MAX_LENGTH       2048
#define LIS_MAX_NUMBER_RANGE 10000   /* token names exist up to here */

enum { LIS_PAD = 0, LIS_SEP = 1, LIS_EOS = 2, LIS_NUM0 = 3 };

typedef struct LisParams {
    int length;        /* n, the public --length: input numbers, 3 ≤ n ≤ LIS_MAX_LENGTH */
    int number_range;  /* public --number_range: values in [0, number_range);
                          0 = max(n + 150, 2n + 1) (decision 6); else ≥ 2n + 1 */
    int direct;        /* 1: answer only (the public "decoder" files), no chain of thought */
} LisParams;

/* Returns 0, or 2 with err naming the bad parameter. */
int  lis_check(const LisParams *p, AlError *err);
int  lis_number_range(const LisParams *p);   /* the effective number_range (0 resolved) */
int  lis_vocab_size(const LisParams *p);     /* number_range + 3 */
int  lis_max_len(const LisParams *p);        /* 2n + 4, direct n + 3 (every example) */
/* "<pad>", "<sep>", "<eos>", or the decimal value ("17"); "?" outside the vocabulary. */
const char *lis_token_name(const LisParams *p, int id);

/* dp[i] = length of the longest strictly increasing subsequence of a[0..n) that
 * ends at i; returns max dp (0 when n = 0).  O(n log n); n ≤ LIS_MAX_LENGTH. */
int  lis_dp(const int *a, int n, int *dp);

/* Writes one example into ex (tokens and targets need lis_max_len entries).
 * p must have passed lis_check.  No allocation. */
void lis_sample(const LisParams *p, Rng *rng, Example *ex);

/* Locates the final answer in a model-generated sequence (prompt + generated
 * tokens, len of them): the token before the first <eos>.  Returns 1 with
 * *start, *alen (= 1) set; 0 when malformed (no <sep>, no <eos>, <eos> right after
 * the prompt, or a non-number token before <eos>).  Correct iff it returns 1 and
 * tokens[*start] equals the gold answer token. */
int  lis_extract_answer(const LisParams *p, const int *tokens, int len, int *start, int *alen);

/* The deduplication key: the prompt (n + 1 tokens, fixed length). */
int  lis_prompt_key_len(const LisParams *p);
void lis_prompt_key(const LisParams *p, const Example *ex, int *key);

#endif
