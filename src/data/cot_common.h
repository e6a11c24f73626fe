/* cot_common.h — what the LIS and ED chain-of-thought generators share (private to
 * src/data; the public API is cot_lis.h and cot_ed.h).
 *
 * Both tasks follow one sequence convention, the one of the public CoT_benchmark
 * dataloaders (LIS/dataloader.py, ED/dataloader.py):
 *
 *     prompt … <sep> | chain of thought … <sep> answer <eos>     (CoT)
 *     prompt … <sep> | answer <eos>                              (direct)
 *
 * and one next-token loss: position i predicts tokens[i+1] for every i from the
 * first <sep> (the prompt's last token) through the token before <eos>, so <eos>
 * itself is a target and no prompt token is.  Numbers are one token each (value v
 * is token num0 + v), so an answer is exactly one token. */
#ifndef ATTNLAB_SRC_DATA_COT_COMMON_H
#define ATTNLAB_SRC_DATA_COT_COMMON_H

#include "attnlab/data/example.h"

/* Token names exist for values 0 .. COT_MAX_NUMBER − 1 (a constant table). */
#define COT_MAX_NUMBER 10000

/* "0" … "9999": a pointer into a constant table (thread-safe, never freed). */
const char *cot_number_name(int v);

/* Appends one token; ex->len is the write cursor. */
static inline void cot_put(Example *ex, int tok) { ex->tokens[ex->len++] = tok; }

/* Appends the prompt's closing <sep>; the prompt ends there (generation starts
 * after it). */
void cot_end_prompt(Example *ex, int sep);

/* Appends "<sep> answer <eos>" (or "answer <eos>" when direct), records the answer
 * span and writes every target.  Call after cot_end_prompt and the chain of thought. */
void cot_finish(Example *ex, int direct, int sep, int answer_tok, int eos);

/* The final answer of a generated sequence under paper 004's protocol (see
 * cot_lis.h): the token just before the first <eos>.  Returns 1 with *start, *alen
 * set, or 0 when malformed: no <sep>, no <eos>, nothing generated before <eos>, or
 * the token before <eos> is not a number token (num0 .. num0 + n_numbers − 1). */
int cot_extract_final(const int *tokens, int len, int sep, int eos, int num0, int n_numbers,
                      int *start, int *alen);

/* key[0 .. key_len) = the prompt tokens of ex, right-padded with `pad`.  The pad id
 * never occurs in a prompt, so distinct prompts give distinct keys. */
void cot_prompt_key(const Example *ex, int key_len, int pad, int *key);

#endif
