/* cot_ed.c — see cot_ed.h.
 *
 * Strings are letter indices 0..25 while drawn and become tokens only when
 * written.  The edited string can grow to ℓ + diff ≤ 2ℓ letters before the length
 * test rejects it, hence the 2·ED_MAX_LENGTH buffers. */
#include "attnlab/data/cot_ed.h"

#include "cot_common.h"
#include "param_check.h"

#include <string.h>

enum { N_LETTERS = 26 };

int ed_max_value(const EdParams *p) {
    /* a ≤ ℓ ≤ b ≤ ℓ + 2; all letters different: m[a][b] = a + b + min(a, b) with the
     * public costs, max(a, b) with unit costs.  Matches only lower the table. */
    return p->uniform_costs ? p->length + 2 : 3 * p->length + 2;
}

int ed_num_range(const EdParams *p) {
    if (p->num_range) return p->num_range;
    int need = ed_max_value(p) + 1;
    return need > ED_PUBLIC_NUM_RANGE ? need : ED_PUBLIC_NUM_RANGE;
}

int ed_check(const EdParams *p, AlError *err) {
    if (param_in_range(err, "ed", "length", p->length, 4, ED_MAX_LENGTH,
                       "the other string is drawn with length >= length-3 >= 1") ||
        param_in_range(err, "ed", "using", p->using, 1, ED_MAX_USING,
                       "examples use 3..using+2 of the 26 letters"))
        return 2;
    if (p->direct != 0 && p->direct != 1)
        return al_fail(err, 2, "ed: direct %d must be 0 or 1", p->direct);
    if (p->uniform_costs != 0 && p->uniform_costs != 1)
        return al_fail(err, 2, "ed: uniform_costs %d must be 0 or 1", p->uniform_costs);
    if (p->local != 0 && p->local != 1)
        return al_fail(err, 2, "ed: local %d must be 0 or 1", p->local);
    if (p->local && p->direct)
        return al_fail(err, 2, "ed: local restates the letters in the chain of thought, which direct leaves out");
    int r = ed_num_range(p);
    if (r <= ed_max_value(p) || r > ED_MAX_NUM_RANGE)
        return al_fail(err, 2, "ed: num_range %d must be in [%d, %d] (dp values reach %d at "
                       "length %d), or 0 for max(60, that + 1)", r, ed_max_value(p) + 1,
                       ED_MAX_NUM_RANGE, ed_max_value(p), p->length);
    return 0;
}

int ed_vocab_size(const EdParams *p) { return ed_num_range(p) + ED_NUM0; }

int ed_max_len(const EdParams *p) {
    /* The longest pair is a = ℓ, b = ℓ + 2: a + b + 2 prompt tokens, a rows of b cells
     * (1 token each, ED_Local 3) and ",", then "<sep> answer <eos>". */
    int l = p->length, b = l + 2, cell = p->local ? 3 : 1;
    return p->direct ? 2 * l + 6 : (l + b + 2) + l * (cell * b + 1) + 3;
}

const char *ed_token_name(const EdParams *p, int id) {
    static const char *const special[ED_LETTER0] = { "<pad>", "<sep>", "<eos>", "|", "," };
    static const char letters[N_LETTERS][2] = {
        "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m",
        "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "x", "y", "z"
    };
    if (id >= 0 && id < ED_LETTER0) return special[id];
    if (id >= ED_LETTER0 && id < ED_NUM0) return letters[id - ED_LETTER0];
    if (id >= ED_NUM0 && id < ed_vocab_size(p)) return cot_number_name(id - ED_NUM0);
    return "?";
}

static int min3(int x, int y, int z) {
    int m = x < y ? x : y;
    return m < z ? m : z;
}

void ed_table(const int *s, int a, const int *t, int b, int uniform_costs, int *m) {
    int indel = uniform_costs ? 1 : 2, replace = uniform_costs ? 1 : 3, w = b + 1;
    /* The public initialisation m[i][j] = i + j survives only on the borders. */
    for (int j = 0; j <= b; j++) m[j] = j;
    for (int i = 1; i <= a; i++) {
        int *row = m + i * w, *up = row - w;
        row[0] = i;
        for (int j = 1; j <= b; j++)
            row[j] = min3(up[j] + indel, row[j - 1] + indel,
                          up[j - 1] + (s[i - 1] == t[j - 1] ? 0 : replace));
    }
}

/* One draw of the pair, before the shorter-first swap. */
typedef struct Pair {
    int s[2 * ED_MAX_LENGTH + 1], t[2 * ED_MAX_LENGTH + 1];
    int a, b;
} Pair;

/* t := s with `diff` random edits (public get_seq, the 60% branch). */
static void edit_copy(Rng *rng, const int *letters, int k, int diff, Pair *q) {
    memcpy(q->t, q->s, (size_t)q->a * sizeof *q->t);
    q->b = q->a;
    for (int e = 0; e < diff; e++) {
        int op = (int)rng_below(rng, 3);
        if (op == 0 && q->b > 2) {                          /* delete */
            int at = (int)rng_below(rng, (uint32_t)q->b);
            memmove(q->t + at, q->t + at + 1, (size_t)(q->b - at - 1) * sizeof *q->t);
            q->b--;
        } else if (op == 1) {                               /* replace, maybe by itself */
            int at = (int)rng_below(rng, (uint32_t)q->b);
            q->t[at] = letters[rng_below(rng, (uint32_t)k)];
        } else {                                            /* insert (also a refused delete) */
            int at = (int)rng_below(rng, (uint32_t)(q->b + 1));
            memmove(q->t + at + 1, q->t + at, (size_t)(q->b - at) * sizeof *q->t);
            q->t[at] = letters[rng_below(rng, (uint32_t)k)];
            q->b++;
        }
    }
}

/* One attempt; returns 1 when the public generator would accept it. */
static int draw_attempt(const EdParams *p, Rng *rng, int diff, Pair *q) {
    int l = p->length, letters[N_LETTERS];
    int k = 3 + (int)rng_below(rng, (uint32_t)p->using);
    for (int c = 0; c < N_LETTERS; c++) letters[c] = c;
    for (int c = 0; c < k; c++) {                           /* k distinct letters */
        int r = c + (int)rng_below(rng, (uint32_t)(N_LETTERS - c));
        int tmp = letters[c]; letters[c] = letters[r]; letters[r] = tmp;
    }
    q->a = l;
    for (int i = 0; i < l; i++) q->s[i] = letters[rng_below(rng, (uint32_t)k)];
    if (rng_below(rng, 5) < 2) {                            /* probability 0.4 exactly */
        q->b = l - 3 + (int)rng_below(rng, 6);
        for (int j = 0; j < q->b; j++) q->t[j] = letters[rng_below(rng, (uint32_t)k)];
    } else {
        edit_copy(rng, letters, k, diff, q);
    }
    int same = q->a == q->b && memcmp(q->s, q->t, (size_t)q->a * sizeof *q->s) == 0;
    return !same && q->b >= l - 3 && q->b <= l + 2;
}

static void put_string(Example *ex, const int *x, int n) {
    for (int i = 0; i < n; i++) cot_put(ex, ED_LETTER0 + x[i]);
}

/* Cell (i, j) of the chain of thought: m[i][j], or with p->local the letters it
 * compares first, "s_i t_j m[i][j]" (ED_Local, docs/design.md decision 14). */
static void put_cell(const EdParams *p, Example *ex, int s_i, int t_j, int value) {
    if (p->local) {
        cot_put(ex, ED_LETTER0 + s_i);
        cot_put(ex, ED_LETTER0 + t_j);
    }
    cot_put(ex, ED_NUM0 + value);
}

void ed_sample(const EdParams *p, Rng *rng, Example *ex) {
    Pair q;
    int diff = 1 + (int)rng_below(rng, (uint32_t)p->length);  /* kept across retries */
    while (!draw_attempt(p, rng, diff, &q)) {}
    int swap = q.a > q.b;
    const int *s = swap ? q.t : q.s, *t = swap ? q.s : q.t;
    int a = swap ? q.b : q.a, b = swap ? q.a : q.b;

    ex->len = 0;
    put_string(ex, s, a);
    cot_put(ex, ED_BAR);
    put_string(ex, t, b);
    cot_end_prompt(ex, ED_SEP);
    int m[(ED_MAX_LENGTH + 1) * (ED_MAX_LENGTH + 3)];
    ed_table(s, a, t, b, p->uniform_costs, m);
    if (!p->direct)
        for (int i = 1; i <= a; i++) {
            for (int j = 1; j <= b; j++) put_cell(p, ex, s[i - 1], t[j - 1], m[i * (b + 1) + j]);
            cot_put(ex, ED_COMMA);
        }
    cot_finish(ex, p->direct, ED_SEP, ED_NUM0 + m[a * (b + 1) + b], ED_EOS);
    AL_ASSERT(ex->len <= ed_max_len(p));
}

int ed_extract_answer(const EdParams *p, const int *tokens, int len, int *start, int *alen) {
    return cot_extract_final(tokens, len, ED_SEP, ED_EOS, ED_NUM0, ed_num_range(p), start, alen);
}

int ed_prompt_key_len(const EdParams *p) { return 2 * p->length + 4; }

void ed_prompt_key(const EdParams *p, const Example *ex, int *key) {
    cot_prompt_key(ex, ed_prompt_key_len(p), ED_PAD, key);
}
