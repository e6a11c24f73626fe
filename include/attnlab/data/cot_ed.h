/* cot_ed.h — edit distance with a chain of thought (paper 004, Yang et al. 2024,
 * data of Feng et al. 2023: public generator guyuntian/CoT_benchmark ED/data.py,
 * tokens and loss from ED/dataloader.py), and its ED_Local variant (below).
 *
 * The task.  Given strings s (length a) and t (length b), a ≤ b, output the cost of
 * turning one into the other.  The chain of thought is the dp table, row by row:
 *
 *     m[i][0] = i,  m[0][j] = j                                  (borders)
 *     m[i][j] = min(m[i−1][j] + 2, m[i][j−1] + 2, m[i−1][j−1] + (s_i = t_j ? 0 : 3))
 *
 * THE BORDER QUIRK (docs/design.md, decision 4): the public table starts as m[i][j] = i + j,
 * so an insert or delete costs 1 along row/column 0 but 2 inside; replace costs 3.
 * This is reproduced exactly.  uniform_costs = 1 instead makes every edit cost 1
 * (interior 1/1, borders unchanged): the textbook Levenshtein distance.
 *
 * One example (length 6; token names as ed_token_name prints them):
 *
 *     y g j g g g | y g a g g g <sep>                          prompt: s | t <sep>
 *     0 2 4 6 7 8 , 2 0 2 4 6 7 , 4 2 3 5 7 9 ,                CoT: for i = 1..a,
 *     6 4 5 3 5 7 , 7 6 7 5 3 5 , 8 7 9 7 5 3 ,                 m[i][1..b] then ","
 *     <sep> 3 <eos>                                            answer m[a][b]
 *
 * (note m[1][5] = 7, not 8: the border row is cheap).  Direct variant (p->direct):
 * "y g j g g g | y g a g g g <sep> 3 <eos>".
 *
 * ED_Local (p->local; paper 004, "Do Efficient Transformers Really Save
 * Computation?", names an ED "modified to have a higher locality" but does not
 * define it — this definition is ours, docs/design.md decision 14).  The same
 * strings, table and answer; each cell restates the two letters it compares before
 * its value, "s_i t_j m[i][j]":
 *
 *     y g j g g g | y g a g g g <sep>
 *     y y 0 y g 2 y a 4 y g 6 y g 7 y g 8 , g y 2 g g 0 g a 2 … , … <sep> 3 <eos>
 *
 * A row is 3b + 1 tokens, so from the position that predicts m[i][j] (the one
 * holding t_j) its inputs lie 0 (t_j), 1 (s_i), 2 (m[i][j−1]), 3b (m[i−1][j]) and
 * 3b + 3 (m[i−1][j−1]) tokens back: a window of 3(b + 1), where the plain chain
 * must reach back into the prompt for the letters.  The letters themselves repeat
 * the cell 3 tokens back (s_i, j ≥ 2) or the row above (t_j, i ≥ 2); only the first
 * row's t_j and each row's first s_i are copied from the prompt.  Every token of the
 * chain, letters included, is a target, as in the plain task.
 *
 * Tokens (vocab_size = num_range + 31; 91 with the public num_range 60):
 *     0 <pad>  1 <sep>  2 <eos>  3 |  4 ,  5..30 the letters a..z  31 + v the integer v
 *
 * The input law (public get_seq; ℓ = length, u = using):
 *     diff ∈ {1..ℓ} is drawn once; then, until accepted:
 *       k ∈ {3..u+2} distinct letters from a..z;  s = ℓ letters uniform over them;
 *       with probability 0.4: t = uniform letters, |t| ∈ {ℓ−3..ℓ+2};
 *       else t = s edited diff times, each edit uniform over {delete (only when
 *         |t| > 2; otherwise it becomes an insert), replace (a uniform letter of the
 *         k, possibly the same), insert (uniform letter at one of |t|+1 places)};
 *       reject when t = s or |t| ∉ [ℓ−3, ℓ+2];
 *     the shorter string goes first (s first when equally long).
 * So (a, b) is (ℓ, ℓ..ℓ+2) or (ℓ−3..ℓ−1, ℓ).
 *
 * num_range: the public dataloader has 60 integer tokens.  Dp values reach at most
 * a + b + min(a, b) ≤ 3ℓ + 2 (all letters different; uniform costs: ℓ + 2), which
 * exceeds 59 only at ℓ = 20, one of paper 004's sizes: the public code would fail
 * to tokenise such a sample (it has never been seen in practice; observed maxima
 * are ~52).  num_range = 0 means max(60, largest possible value + 1): the public
 * vocabulary for every ℓ ≤ 19, three more never-drawn-in-practice tokens at ℓ = 20.
 *
 * Lengths (tokens, <eos> included), at most: CoT ℓ² + 5ℓ + 7 (a = ℓ, b = ℓ + 2:
 * a + b + 2 prompt, a(b + 1) CoT, 3 for "<sep> answer <eos>"), direct 2ℓ + 6.
 * Scaled sizes ℓ = 4/5/6/7: 43/57/73/91; paper sizes 6/12/16/20: 73/211/343/507
 * (its quoted 72/210/342/506 do not count <eos>).  ED_Local: 3ℓ² + 9ℓ + 7
 * (a(3b + 1) CoT), ℓ = 4/5/6/7: 91/127/169/217.  Lengths vary per example.
 *
 * Targets, prompt_len, answer span, the evaluation protocol (token before the first
 * generated <eos>) and deduplication are those of cot_lis.h: target[i] =
 * tokens[i + 1] from the first <sep> through the token before <eos>; prompt_len =
 * a + b + 2; the answer is the single token before <eos>.  The public repository
 * has no ED/eval.py; paper 004 scores ED by the final answer like the other tasks.
 * Prompts vary in length, so the dedup key is the prompt right-padded with <pad> to
 * 2ℓ + 4 tokens (ed_prompt_key).  Both orders of two equally long strings are
 * different prompts, as they are different sequences in the public sets.
 *
 * Randomness: the draws depend on none of `direct`, `uniform_costs` and `local`, so
 * one Rng state gives the same pair of strings in every variant. */
#ifndef ATTNLAB_DATA_COT_ED_H
#define ATTNLAB_DATA_COT_ED_H

#include "attnlab/data/example.h"
#include "attnlab/util/error.h"
#include "attnlab/util/rng.h"

#define ED_MAX_LENGTH    64      /* keeps the dp table on the stack (~17 KB) */
#define ED_MAX_USING     24      /* u + 2 letters out of 26 */
#define ED_MAX_NUM_RANGE 10000   /* token names exist up to here */
#define ED_PUBLIC_NUM_RANGE 60

enum { ED_PAD = 0, ED_SEP = 1, ED_EOS = 2, ED_BAR = 3, ED_COMMA = 4, ED_LETTER0 = 5,
       ED_NUM0 = 31 };

typedef struct EdParams {
    int length;         /* ℓ, the public --length: the first drawn string's length, 4..ED_MAX_LENGTH
                           (the other is ≥ ℓ − 3 ≥ 1 long) */
    int using;          /* the public --using (default 8): 3..using+2 letters per example, 1..24 */
    int num_range;      /* integer tokens 0..num_range−1; 0 = max(60, largest possible value + 1) */
    int direct;         /* 1: answer only (the public "decoder" files), no chain of thought */
    int uniform_costs;  /* 1: every edit costs 1 (Levenshtein) instead of the public 1|2/2/3 */
    int local;          /* 1: ED_Local, cells "s_i t_j m[i][j]" (needs direct = 0) */
} EdParams;

/* Returns 0, or 2 with err naming the bad parameter. */
int  ed_check(const EdParams *p, AlError *err);
int  ed_max_value(const EdParams *p);       /* largest possible dp value: 3ℓ + 2, uniform ℓ + 2 */
int  ed_num_range(const EdParams *p);       /* the effective num_range (0 resolved) */
int  ed_vocab_size(const EdParams *p);      /* num_range + 31 */
int  ed_max_len(const EdParams *p);         /* ℓ² + 5ℓ + 7, ED_Local 3ℓ² + 9ℓ + 7, direct 2ℓ + 6 */
/* "<pad>" "<sep>" "<eos>" "|" "," "a".."z" or the decimal value; "?" outside the vocabulary. */
const char *ed_token_name(const EdParams *p, int id);

/* The dp table of s[0..a) → t[0..b) (symbols compared by equality), (a+1)·(b+1)
 * entries row-major into m, with the public costs or, if uniform_costs, unit costs. */
void ed_table(const int *s, int a, const int *t, int b, int uniform_costs, int *m);

/* Writes one example into ex (tokens and targets need ed_max_len entries).
 * p must have passed ed_check.  No allocation. */
void ed_sample(const EdParams *p, Rng *rng, Example *ex);

/* As lis_extract_answer (cot_lis.h): the token before the first <eos> of a
 * model-generated sequence; 0 when malformed. */
int  ed_extract_answer(const EdParams *p, const int *tokens, int len, int *start, int *alen);

/* The deduplication key: the prompt right-padded with <pad> to 2ℓ + 4 tokens. */
int  ed_prompt_key_len(const EdParams *p);
void ed_prompt_key(const EdParams *p, const Example *ex, int *key);

#endif
