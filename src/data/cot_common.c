/* cot_common.c — see cot_common.h. */
#include "cot_common.h"

#include "attnlab/data/dataset.h"
#include "attnlab/util/error.h"

/* Decimal names built by the preprocessor, so token_name functions return constant
 * strings without a buffer (safe to call twice in one printf, and from threads).
 * Each macro level appends one digit; the leading digit is never 0. */
#define N10(p) p "0", p "1", p "2", p "3", p "4", p "5", p "6", p "7", p "8", p "9"
#define N100(p) N10(p "0"), N10(p "1"), N10(p "2"), N10(p "3"), N10(p "4"), \
                N10(p "5"), N10(p "6"), N10(p "7"), N10(p "8"), N10(p "9")
#define N1000(p) N100(p "0"), N100(p "1"), N100(p "2"), N100(p "3"), N100(p "4"), \
                 N100(p "5"), N100(p "6"), N100(p "7"), N100(p "8"), N100(p "9")
#define LEAD(M) M("1"), M("2"), M("3"), M("4"), M("5"), M("6"), M("7"), M("8"), M("9")

static const char NUMBER_NAMES[COT_MAX_NUMBER][5] = {
    N10(""), LEAD(N10), LEAD(N100), LEAD(N1000)
};

const char *cot_number_name(int v) {
    AL_ASSERT(v >= 0 && v < COT_MAX_NUMBER);
    return NUMBER_NAMES[v];
}

void cot_end_prompt(Example *ex, int sep) {
    cot_put(ex, sep);
    ex->prompt_len = ex->len;
}

/* Targets of the public dataloaders: Y = X shifted left by one, zeroed up to the
 * first <sep> and after <eos>.  Here: position i predicts tokens[i+1] for i in
 * [prompt_len − 1, len − 2]; everything else is ignored. */
static void set_lm_targets(Example *ex) {
    for (int i = 0; i < ex->len; i++)
        ex->targets[i] = i >= ex->prompt_len - 1 && i + 1 < ex->len ? ex->tokens[i + 1]
                                                                     : DATASET_IGNORE;
}

void cot_finish(Example *ex, int direct, int sep, int answer_tok, int eos) {
    AL_ASSERT(ex->prompt_len >= 1 && ex->tokens[ex->prompt_len - 1] == sep);
    if (!direct) cot_put(ex, sep);
    ex->answer_start = ex->len;
    ex->answer_len = 1;
    cot_put(ex, answer_tok);
    cot_put(ex, eos);
    ex->group = 0;
    set_lm_targets(ex);
}

static int first_index(const int *tokens, int len, int tok) {
    for (int i = 0; i < len; i++)
        if (tokens[i] == tok) return i;
    return -1;
}

/* The public arithmetic/eval.py (what paper 004 describes: "the final answer,
 * which is the last output") takes the first <eos> of the whole sequence and
 * compares the token before it with the gold answer.  The number check only
 * separates "malformed" from "wrong": a non-number never equals a gold answer,
 * so accuracy is the same either way. */
int cot_extract_final(const int *tokens, int len, int sep, int eos, int num0, int n_numbers,
                      int *start, int *alen) {
    int s = first_index(tokens, len, sep), e = first_index(tokens, len, eos);
    if (s < 0 || e < s + 2) return 0;   /* no prompt, no <eos>, or nothing generated */
    int tok = tokens[e - 1];
    if (tok < num0 || tok >= num0 + n_numbers) return 0;
    *start = e - 1;
    *alen = 1;
    return 1;
}

void cot_prompt_key(const Example *ex, int key_len, int pad, int *key) {
    AL_ASSERT(ex->prompt_len >= 1 && ex->prompt_len <= key_len);
    for (int i = 0; i < key_len; i++) key[i] = i < ex->prompt_len ? ex->tokens[i] : pad;
}
