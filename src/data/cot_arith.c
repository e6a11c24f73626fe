/* cot_arith.c — see cot_arith.h.
 *
 * An example is built forwards (x_0, then one expansion at a time) but written
 * backwards: the public output starts with the LAST expression.  So each snapshot
 * is copied to the END of ex->tokens, in front of the previous one, and the whole
 * sequence is moved to the start once its length is known.  That needs no scratch
 * beyond the caller's buffer of arith_max_len tokens and one stack expression. */
#include "attnlab/data/cot_arith.h"

#include "attnlab/data/dataset.h"

#include <string.h>

#define ARITH_MAX_EXPR (4 * ARITH_MAX_OPS - 1)   /* tokens of E_n, see the header */

static int modulus_of(const ArithParams *p) {
    return p->modulus ? p->modulus : ARITH_DEFAULT_MODULUS;
}

static int is_prime(int m) {
    if (m < 2) return 0;
    for (int d = 2; d * d <= m; d++)
        if (m % d == 0) return 0;
    return 1;
}

int arith_check(const ArithParams *p, AlError *err) {
    if (p->n_ops < 1 || p->n_ops > ARITH_MAX_OPS)
        return al_fail(err, 2, "arith: n_ops %d out of range [1, %d]", p->n_ops, ARITH_MAX_OPS);
    /* Division needs every non-zero number invertible: p prime (public README). */
    int m = modulus_of(p);
    if (!is_prime(m) || m > ARITH_MAX_MODULUS)
        return al_fail(err, 2, "arith: modulus %d must be a prime in [2, %d] (0 selects %d)",
                       p->modulus, ARITH_MAX_MODULUS, ARITH_DEFAULT_MODULUS);
    if (p->direct != 0 && p->direct != 1)
        return al_fail(err, 2, "arith: direct %d must be 0 or 1", p->direct);
    if (p->under != 0 && p->under != 1)
        return al_fail(err, 2, "arith: under %d must be 0 or 1", p->under);
    return 0;
}

int arith_vocab_size(const ArithParams *p) { return ARITH_NUM0 + modulus_of(p); }

int arith_max_len(const ArithParams *p) {
    int n = p->n_ops;
    /* CoT: Σ_{k=1..n} (4k − 1) for E_n..E_1, 1 for x_0, n '=', 1 <eos>.
     * Direct: E_n, '=', x_0, <eos>. */
    return p->direct ? 4 * n + 2 : 2 * n * (n + 1) + 2;
}

/* "0".."99" as literals, so names need no buffer: D10("4") = "40".."49". */
#define D10(t) t "0", t "1", t "2", t "3", t "4", t "5", t "6", t "7", t "8", t "9"
static const char *const number_names[100] = {
    D10(""), D10("1"), D10("2"), D10("3"), D10("4"), D10("5"), D10("6"), D10("7"), D10("8"), D10("9")
};
static const char *const symbol_names[ARITH_NUM0] = {
    "<pad>", "<cls>", "<eos>", "+", "-", "*", "/", "(", ")", "="
};

const char *arith_token_name(const ArithParams *p, int id) {
    if (id < 0 || id >= arith_vocab_size(p)) return "?";
    return id < ARITH_NUM0 ? symbol_names[id] : number_names[id - ARITH_NUM0];
}

/* ---- Z_p ------------------------------------------------------------------ */

static int mod_sub(int a, int b, int m) { return (a - b + m) % m; }

/* a^(m−2) = a⁻¹ for prime m and a ≠ 0 (Fermat). */
static int mod_inv(int a, int m) {
    int r = 1, e = m - 2;
    for (long long b = a; e > 0; e >>= 1, b = b * b % m)
        if (e & 1) r = (int)(r * b % m);
    return r;
}

static int mod_div(int a, int b, int m) { return (int)((long long)a * mod_inv(b, m) % m); }

/* ---- one expansion (public get_expr and iter) ----------------------------- */

typedef struct Pair { int a, op, b; } Pair;   /* values and an operator token */

/* A pair "a op b" of value x.  The draw order (a, then op) and every retry
 * follow get_expr, because the retries shape the law of op: with x ≠ 0, '*' and
 * '/' are drawn a tenth less often than '+' and '−'. */
static Pair draw_pair(int x, int m, Rng *rng) {
    for (;;) {
        int a = (int)rng_below(rng, (uint32_t)m);
        int op = ARITH_ADD + (int)rng_below(rng, 4);
        switch (op) {
        case ARITH_ADD: return (Pair){ a, op, mod_sub(x, a, m) };
        case ARITH_SUB: return (Pair){ a, op, mod_sub(a, x, m) };
        case ARITH_MUL:
            if (a == 0) {
                if (x != 0) continue;          /* 0·b is never x ≠ 0 */
                return (Pair){ 0, op, (int)rng_below(rng, (uint32_t)m) };
            }
            return (Pair){ a, op, mod_div(x, a, m) };
        default:                               /* ARITH_DIV: a / b = x, b ≠ 0 */
            if (x == 0 && a == 0) {
                int b = (int)rng_below(rng, (uint32_t)m);
                if (b == 0) continue;
                return (Pair){ 0, op, b };
            }
            if (x == 0 || a == 0) continue;    /* a/b = 0 needs a = 0; 0/b ≠ x */
            return (Pair){ a, op, mod_div(a, x, m) };
        }
    }
}

/* The public bracket rule, from the neighbours of position k before it is
 * replaced.  Why each case: a / (b·c) ≠ a / b·c, so after '/' every pair is
 * wrapped; a·(b + c) and (b + c)·a need them for + and −; a − (b ± c) too; after
 * '+' or '(' or before '+', '−', ')' or nothing, left-to-right evaluation already
 * gives the pair's value. */
static int needs_brackets(const int *e, int len, int k, int op) {
    int left = k > 0 ? e[k - 1] : -1, right = k < len - 1 ? e[k + 1] : -1;
    int additive = op == ARITH_ADD || op == ARITH_SUB;
    if (left == ARITH_DIV) return 1;
    if (left == ARITH_MUL || right == ARITH_MUL || right == ARITH_DIV) return additive;
    if (left == ARITH_SUB) return additive;
    return 0;
}

/* Replaces a uniformly chosen number of e (numbers = its operators + 1) with a
 * pair of the same value.  Returns the new length. */
static int expand(int *e, int len, int n_numbers, int m, Rng *rng) {
    int r = (int)rng_below(rng, (uint32_t)n_numbers), k = 0;
    for (;; k++)
        if (e[k] >= ARITH_NUM0 && r-- == 0) break;
    Pair pr = draw_pair(e[k] - ARITH_NUM0, m, rng);
    int w[5], wn = 0, br = needs_brackets(e, len, k, pr.op);
    if (br) w[wn++] = ARITH_LPAREN;
    w[wn++] = ARITH_NUM0 + pr.a;
    w[wn++] = pr.op;
    w[wn++] = ARITH_NUM0 + pr.b;
    if (br) w[wn++] = ARITH_RPAREN;
    memmove(e + k + wn, e + k + 1, (size_t)(len - k - 1) * sizeof *e);
    memcpy(e + k, w, (size_t)wn * sizeof *e);
    return len + wn - 1;
}

/* ---- the example ---------------------------------------------------------- */

/* Writes t[0..n) just in front of position *pos (filling backwards). */
static void put_before(int *out, int *pos, const int *t, int n) {
    *pos -= n;
    memcpy(out + *pos, t, (size_t)n * sizeof *out);
}

static void set_targets(const ArithParams *p, Example *ex) {
    for (int i = 0; i < ex->len; i++) ex->targets[i] = DATASET_IGNORE;
    if (p->direct) {
        ex->targets[ex->prompt_len - 1] = ex->tokens[ex->prompt_len];
        return;
    }
    for (int i = ex->prompt_len - 1; i <= ex->len - 2; i++) ex->targets[i] = ex->tokens[i + 1];
}

void arith_sample(const ArithParams *p, Rng *rng, Example *ex) {
    AL_ASSERT(arith_check(p, NULL) == 0);
    int m = modulus_of(p), cap = arith_max_len(p), pos = cap;
    int e[ARITH_MAX_EXPR], len = 1;
    const int eq = ARITH_EQ, eos = ARITH_EOS;
    e[0] = ARITH_NUM0 + (int)rng_below(rng, (uint32_t)m);
    const int answer = e[0];
    if (!p->direct) {
        put_before(ex->tokens, &pos, &eos, 1);
        put_before(ex->tokens, &pos, e, 1);
    }
    for (int k = 1; k <= p->n_ops; k++) {
        len = expand(e, len, k, m, rng);
        if (!p->direct) {
            put_before(ex->tokens, &pos, &eq, 1);
            put_before(ex->tokens, &pos, e, len);
        }
    }
    if (p->direct) {
        int tail[3] = { ARITH_EQ, answer, ARITH_EOS };
        put_before(ex->tokens, &pos, tail, 3);
        put_before(ex->tokens, &pos, e, len);
    }
    AL_ASSERT(pos >= 0);
    ex->len = cap - pos;
    memmove(ex->tokens, ex->tokens + pos, (size_t)ex->len * sizeof *ex->tokens);
    ex->prompt_len = len + 1;
    ex->answer_start = ex->len - 2;
    ex->answer_len = 1;
    ex->group = 0;
    set_targets(p, ex);
}

/* ---- reading a generated sequence ----------------------------------------- */

static int find_first(const int *t, int len, int id) {
    for (int i = 0; i < len; i++)
        if (t[i] == id) return i;
    return -1;
}

int arith_extract_answer(const ArithParams *p, const int *tokens, int len, int *start, int *alen) {
    *start = -1;
    *alen = 0;
    int at;
    if (p->direct) {
        int e = find_first(tokens, len, ARITH_EQ);
        at = e < 0 ? -1 : e + 1;
    } else {
        /* The first <eos> of the whole sequence, as eval.py's argmax: an <eos> at
         * position 0 has no answer before it. */
        int e = find_first(tokens, len, ARITH_EOS);
        at = e < 0 ? -1 : e - 1;
    }
    if (at < 0 || at >= len) return 0;
    if (tokens[at] < ARITH_NUM0 || tokens[at] >= arith_vocab_size(p)) return 0;
    *start = at;
    *alen = 1;
    return 1;
}

/* i ∈ 1..n with P(i) ∝ i: walk the triangle 1 + 2 + … + n. */
static int under_ops(int n, Rng *rng) {
    uint32_t r = rng_below(rng, (uint32_t)(n * (n + 1) / 2));
    int i = 1;
    while (r >= (uint32_t)i) r -= (uint32_t)i++;
    return i;
}

void arith_sample_train(const ArithParams *p, Rng *rng, Example *ex) {
    if (!p->under) {
        arith_sample(p, rng, ex);
        return;
    }
    ArithParams q = *p;
    q.under = 0;
    q.n_ops = under_ops(p->n_ops, rng);
    arith_sample(&q, rng, ex);
}
