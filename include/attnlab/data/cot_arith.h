/* cot_arith.h — arithmetic expressions in Z_p with a chain of thought (paper 004,
 * Sec. 6 "Arithmetic"; Feng et al. 2023, public generator guyuntian/CoT_benchmark,
 * arithmetic/{data,dataloader,eval}.py, followed exactly).
 *
 * The task.  Evaluate an expression over the field Z_p (p = 11: numbers 0..10,
 * each ONE token) with + − * / and brackets, writing one reduced expression per
 * step, steps joined by '=':
 *
 *     prompt                          chain of thought                    answer
 *     0 + 9 * ( 3 - 10 ) / 4 =        0 + 9 * 4 / 4 = 0 + 3 / 4 = 0 + 9 = 9 <eos>
 *
 * How an example is made (the public get / iter / get_expr, in reverse):
 *   start from one uniform number x_0 (this is the answer); n_ops times, pick a
 *   number token uniformly among those of the current expression and replace it
 *   with "a op b" whose value is that number: a uniform in Z_p, op uniform in
 *   {+,−,*,/}, b solved for (a draw that leaves b undefined — a·b = x ≠ 0 with
 *   a = 0, a/b with b = 0, 0/b = x ≠ 0 — is redrawn, a and op together; a = 0
 *   with x = 0 takes b uniform for '*', uniform non-zero for '/').  The new pair
 *   is bracketed iff the public rule says so, from its neighbours in the
 *   expression BEFORE the replacement:
 *       left neighbour '/'                                  → always
 *       else left '*' or right neighbour '*' or '/'         → iff op is + or −
 *       else left '−'                                       → iff op is + or −
 *       else                                                → never
 *   The output is the list of expressions from the last (n_ops operators) back to
 *   x_0.  So each CoT step undoes exactly one expansion: one "a op b" (with its
 *   brackets, if any) becomes its value.  The handle reduced is the one expanded
 *   last, which is random — NOT always the leftmost, whatever paper 004 App. C
 *   says — so one prompt has several valid chains: the CoT tokens are not a
 *   function of the prompt, only the final answer is.
 *
 * Token ids (the public dataloader's dictionary; vocab_size = 10 + p, 21 at p = 11):
 *     0 <pad>  1 <cls>  2 <eos>  3 +  4 −  5 *  6 /  7 (  8 )  9 =  10+v  number v
 * <pad> and <cls> exist in the vocabulary but are never written (no BOS token).
 *
 * Layout of an example (len tokens, positions 0..len−1):
 *     CoT:     E_n = E_{n−1} = … = E_1 = x_0 <eos>      E_k has k operators
 *     direct:  E_n = x_0 <eos>
 *   prompt_len   = |E_n| + 1: the expression and the first '=' (≤ 4·n_ops);
 *   answer_start = len − 2, answer_len = 1: the number before <eos>;
 *   group        = 0.
 *
 * Targets (next-token; the public loss, CrossEntropyLoss(ignore_index = pad)):
 *   CoT:     target[i] = tokens[i+1] for prompt_len−1 ≤ i ≤ len−2, i.e. from the
 *            first '=' (predicting the first CoT token) through the answer
 *            (predicting <eos>): len − prompt_len scored positions.  Nothing
 *            before the first '=' is scored (not even the position predicting '='),
 *            and the <eos> position (no next token) is not.
 *   direct:  ONLY target[prompt_len−1] = the answer (the public direct loader keeps
 *            the target at '=' alone; <eos> is written but never scored).
 *   All other targets are DATASET_IGNORE.
 *
 * Final-answer accuracy (paper 004: greedy decoding to <eos>, "accuracy of the
 * final answer"; public arithmetic/eval.py): the model continues the prompt
 * greedily until it emits <eos> or reaches the length cap.  The sequence is
 * correct iff it contains an <eos> and the token just before the FIRST <eos>
 * equals the gold answer.  Nothing else is checked: an invalid chain, or even
 * "… = 3 + 5 <eos>" with gold 5, counts as correct.  arith_extract_answer
 * implements that reading.  Direct models are scored as the public test.py does:
 * the token predicted at the '=' position (the first generated token) must be the
 * answer; no <eos> is needed.
 *
 * Sizes.  Paper 004: n_ops ∈ {6, 10, 13, 16}; scaled (notes §6.2): {3, 4, 5, 6}.
 * E_k has at most 4k − 1 tokens (the first expansion of a lone number is never
 * bracketed), so arith_max_len is 2n(n+1) + 2 with CoT and 4n + 2 direct, both
 * reached by legal outputs (e.g. a − (b − (c − d))).
 *
 * Where this departs from the public code (distributions are identical; the
 * random streams are not, so no sample is byte-identical):
 *  - The number to expand is drawn uniformly among the number tokens; the public
 *    code draws a uniform position and retries until it holds a number — the same
 *    law.
 *  - Dedup is the caller's business (see the report); the public code keeps a set
 *    of whole sequences (prompt AND chain) and rejects test sequences found in it.
 *  - The public --under option (part of the training set with fewer operators):
 *    arith_sample_train draws the operator count per example (see there). */
#ifndef ATTNLAB_DATA_COT_ARITH_H
#define ATTNLAB_DATA_COT_ARITH_H

#include "attnlab/data/example.h"
#include "attnlab/util/error.h"
#include "attnlab/util/rng.h"

#define ARITH_DEFAULT_MODULUS 11
#define ARITH_MAX_MODULUS     97   /* numbers print as ≤ 2 digits (static names) */
#define ARITH_MAX_OPS         100  /* keeps the working expression on the stack */

enum {
    ARITH_PAD = 0, ARITH_CLS = 1, ARITH_EOS = 2,
    ARITH_ADD = 3, ARITH_SUB = 4, ARITH_MUL = 5, ARITH_DIV = 6,
    ARITH_LPAREN = 7, ARITH_RPAREN = 8, ARITH_EQ = 9,
    ARITH_NUM0 = 10            /* number v is ARITH_NUM0 + v, 0 ≤ v < p */
};

typedef struct ArithParams {
    int n_ops;     /* the paper's "number of operators" (public --length), 1..ARITH_MAX_OPS */
    int modulus;   /* p, a prime ≤ ARITH_MAX_MODULUS (public --number_range); 0 = 11 */
    int direct;    /* 1 = answer only (the public "decoder" data), 0 = chain of thought */
    int under;     /* training examples only: operator count i ∈ 1..n_ops drawn with
                      probability ∝ i (the public --under, used in its DATA.md) */
} ArithParams;

/* Returns 0, or 2 with err naming the bad parameter. */
int  arith_check(const ArithParams *p, AlError *err);
int  arith_vocab_size(const ArithParams *p);   /* 10 + p */
int  arith_max_len(const ArithParams *p);      /* longest example incl. <eos> */
/* "<eos>", "+", "7", …; "?" for an id outside the vocabulary. */
const char *arith_token_name(const ArithParams *p, int id);

/* Fills ex with one example (tokens and targets need arith_max_len entries).
 * p must have passed arith_check.  No allocation. */
void arith_sample(const ArithParams *p, Rng *rng, Example *ex);

/* A training example: arith_sample, except that with p->under the operator count
 * is first drawn from 1..n_ops with P(i) = i / (n(n+1)/2) — the public --under
 * proportions.  (The public code draws those counts exactly, collapses duplicates,
 * then tops up with full-length expressions; drawing per example instead keeps the
 * same mixture for streaming and fixed sets, and dedup collapses the few distinct
 * short expressions the same way.)  Without under it is arith_sample, same stream. */
void arith_sample_train(const ArithParams *p, Rng *rng, Example *ex);

/* The final answer of a model-generated sequence tokens[0..len) (prompt included),
 * by the rule above: CoT — the token before the first <eos>; direct — the token
 * after the first '='.  Returns 1 with *start, *alen (= 1) set, or 0 (*start = −1,
 * *alen = 0) when there is none: no <eos> (CoT), no '=' or nothing after it
 * (direct), or the token found is not a number.  A correct prediction is
 * alen == answer_len and tokens[start] == the gold tokens[answer_start]. */
int  arith_extract_answer(const ArithParams *p, const int *tokens, int len, int *start, int *alen);

#endif
