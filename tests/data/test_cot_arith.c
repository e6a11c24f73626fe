/* test_cot_arith.c — the arithmetic chain-of-thought generator against an
 * independent checker.
 *
 * The checker shares no code with the generator.  It reads tokens through its
 * own copy of the public dictionary (arithmetic/dataloader.py), evaluates every
 * expression of a chain with a recursive-descent parser over Z_p (inverses by
 * search, not Fermat), and accepts a step E → E' only if E' is E with one
 * "a op b" (bracketed exactly when the public rule asks) replaced by its value —
 * the public generator's expansion, undone.  The checker is itself shown to
 * reject broken chains, and a second, literal implementation of the public
 * generator (position drawn with retries, forwards history) is compared with
 * the real one in law. */
#include "attnlab/data/cot_arith.h"
#include "attnlab/data/dataset.h"
#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SEED 20240613u
#define GUARD 64          /* sentinel ints after each buffer: catches overruns */
#define SENTINEL 0x5eed

/* ---- the public dictionary, restated ------------------------------------- */

static const char *const dict_symbols[10] = { "<pad>", "<cls>", "<eos>", "+", "-", "*", "/", "(", ")", "=" };
enum { PAD, CLS, EOS, ADD, SUB, MUL, DIV, LP, RP, EQ, NUM };

static int is_num(int t, int p) { return t >= NUM && t < NUM + p; }
static int is_op(int t) { return t == ADD || t == SUB || t == MUL || t == DIV; }

/* ---- Z_p by brute force --------------------------------------------------- */

static int zp(long v, int p) { return (int)(((v % p) + p) % p); }

/* c with b·c ≡ a, or −1 when b = 0 (search, so it shares nothing with Fermat). */
static int zp_div(int a, int b, int p) {
    for (int c = 0; c < p; c++)
        if (zp((long)b * c, p) == a && b != 0) return c;
    return -1;
}

static int apply_op(int a, int op, int b, int p) {
    switch (op) {
    case ADD: return zp(a + b, p);
    case SUB: return zp(a - b, p);
    case MUL: return zp((long)a * b, p);
    default:  return zp_div(a, b, p);
    }
}

/* ---- recursive-descent evaluation ----------------------------------------- */

typedef struct Parser { const int *t; int n, i, p, bad; } Parser;

static int parse_sum(Parser *ps);

static int parse_atom(Parser *ps) {
    if (ps->i < ps->n && is_num(ps->t[ps->i], ps->p)) return ps->t[ps->i++] - NUM;
    if (ps->i < ps->n && ps->t[ps->i] == LP) {
        ps->i++;
        int v = parse_sum(ps);
        if (ps->i < ps->n && ps->t[ps->i] == RP) ps->i++;
        else ps->bad = 1;
        return v;
    }
    ps->bad = 1;
    return 0;
}

static int parse_product(Parser *ps) {
    int v = parse_atom(ps);
    while (!ps->bad && ps->i < ps->n && (ps->t[ps->i] == MUL || ps->t[ps->i] == DIV)) {
        int op = ps->t[ps->i++], w = parse_atom(ps);
        v = apply_op(v, op, w, ps->p);
        if (v < 0) { ps->bad = 1; v = 0; }   /* division by zero */
    }
    return v;
}

static int parse_sum(Parser *ps) {
    int v = parse_product(ps);
    while (!ps->bad && ps->i < ps->n && (ps->t[ps->i] == ADD || ps->t[ps->i] == SUB)) {
        int op = ps->t[ps->i++];
        v = apply_op(v, op, parse_product(ps), ps->p);
    }
    return v;
}

/* Value of the whole expression t[0..n), or −1 if it is not one. */
static int eval_expr(const int *t, int n, int p) {
    Parser ps = { t, n, 0, p, 0 };
    int v = parse_sum(&ps);
    return ps.bad || ps.i != n ? -1 : v;
}

static int brackets_balanced(const int *t, int n) {
    int depth = 0;
    for (int i = 0; i < n; i++) {
        depth += (t[i] == LP) - (t[i] == RP);
        if (depth < 0) return 0;
    }
    return depth == 0;
}

static int count_ops(const int *t, int n) {
    int c = 0;
    for (int i = 0; i < n; i++) c += is_op(t[i]);
    return c;
}

/* ---- one CoT step, by the public expansion rule ---------------------------- */

/* The bracket rule of arithmetic/data.py iter(), flattened: a '/' on the left
 * always brackets; otherwise a + or − pair is bracketed next to '*' (either
 * side), before '/', or after '−'. */
static int rule_brackets(int left, int right, int op) {
    if (left == DIV) return 1;
    int additive = op == ADD || op == SUB;
    return additive && (left == MUL || left == SUB || right == MUL || right == DIV);
}

/* Is `lo` the expansion of number k of `sh`?  (See the file comment.) */
static int expands_at(const int *lo, int nl, const int *sh, int ns, int k, int p) {
    if (memcmp(lo, sh, (size_t)k * sizeof *lo) != 0 || k >= nl) return 0;
    int br = lo[k] == LP, w = br ? 5 : 3;
    if (nl != ns - 1 + w) return 0;
    const int *x = lo + k + br;
    if (br && lo[k + 4] != RP) return 0;
    if (!is_num(x[0], p) || !is_op(x[1]) || !is_num(x[2], p)) return 0;
    if (memcmp(lo + k + w, sh + k + 1, (size_t)(ns - k - 1) * sizeof *lo) != 0) return 0;
    if (apply_op(x[0] - NUM, x[1], x[2] - NUM, p) != sh[k] - NUM) return 0;   /* −1: b = 0 */
    int left = k > 0 ? sh[k - 1] : -1, right = k < ns - 1 ? sh[k + 1] : -1;
    return br == rule_brackets(left, right, x[1]);
}

static int is_reduction(const int *lo, int nl, const int *sh, int ns, int p) {
    for (int k = 0; k < ns; k++)
        if (is_num(sh[k], p) && expands_at(lo, nl, sh, ns, k, p)) return 1;
    return 0;
}

/* ---- a whole example ------------------------------------------------------ */

typedef struct Item { int start, len; } Item;

/* Splits t[0..n) at '='; returns the number of items. */
static int split_items(const int *t, int n, Item *it, int max_items) {
    int c = 0, s = 0;
    for (int i = 0; i <= n; i++)
        if (i == n || t[i] == EQ) {
            if (c == max_items) return -1;
            it[c++] = (Item){ s, i - s };
            s = i + 1;
        }
    return c;
}

/* Checks the sequence part of ex (tokens, layout, chain); returns NULL or why not. */
static const char *verify_sequence(const int *t, int len, int n_ops, int p, int direct,
                                   int max_len) {
    if (len < 4 || len > max_len) return "length out of range";
    for (int i = 0; i < len; i++)
        if (t[i] < ADD || t[i] >= NUM + p) {
            if (!(t[i] == EOS && i == len - 1)) return "token out of range, <pad>/<cls>, or early <eos>";
        }
    if (t[len - 1] != EOS) return "no <eos> at the end";
    Item it[256];
    int ni = split_items(t, len - 1, it, 256);
    if (ni != (direct ? 2 : n_ops + 1)) return "wrong number of '='-separated items";
    const int *last = t + it[ni - 1].start;
    if (it[ni - 1].len != 1 || !is_num(last[0], p)) return "last item is not one number";
    for (int j = 0; j < ni; j++) {
        const int *e = t + it[j].start;
        int want_ops = direct ? (j == 0 ? n_ops : 0) : n_ops - j;
        if (it[j].len < 1) return "empty item";
        if (count_ops(e, it[j].len) != want_ops) return "item has the wrong operator count";
        if (!brackets_balanced(e, it[j].len)) return "unbalanced brackets";
        int v = eval_expr(e, it[j].len, p);
        if (v < 0) return "item does not parse (or divides by zero)";
        if (v != last[0] - NUM) return "item value differs from the final answer";
    }
    if (!direct)
        for (int j = 0; j + 1 < ni; j++)
            if (!is_reduction(t + it[j].start, it[j].len, t + it[j + 1].start, it[j + 1].len, p))
                return "a step is not one expansion undone";
    return NULL;
}

/* The Example fields around the sequence: prompt, answer span, targets. */
static const char *verify_fields(const Example *ex, int direct) {
    const int *t = ex->tokens;
    int eq = 0;
    while (t[eq] != EQ) eq++;
    if (ex->prompt_len != eq + 1) return "prompt_len is not through the first '='";
    if (ex->answer_start != ex->len - 2 || ex->answer_len != 1) return "answer span";
    if (ex->group != 0) return "group";
    for (int i = 0; i < ex->len; i++) {
        int want = DATASET_IGNORE;
        if (direct ? i == eq : (i >= eq && i <= ex->len - 2)) want = t[i + 1];
        if (ex->targets[i] != want) return "targets";
    }
    return NULL;
}

/* ---- buffers with a guard ------------------------------------------------- */

typedef struct Buf { Example ex; int cap; } Buf;

static void buf_init(Buf *b, int cap) {
    b->cap = cap;
    memset(&b->ex, 0, sizeof b->ex);
    b->ex.tokens = malloc((size_t)(cap + GUARD) * sizeof(int));
    b->ex.targets = malloc((size_t)(cap + GUARD) * sizeof(int));
    for (int i = 0; i < cap + GUARD; i++) b->ex.tokens[i] = b->ex.targets[i] = SENTINEL;
}

static int buf_guard_ok(const Buf *b) {
    for (int i = b->cap; i < b->cap + GUARD; i++)
        if (b->ex.tokens[i] != SENTINEL || b->ex.targets[i] != SENTINEL) return 0;
    return 1;
}

static void buf_free(Buf *b) {
    free(b->ex.tokens);
    free(b->ex.targets);
}

static double now_sec(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void print_example(const ArithParams *ap, const Example *ex, const char *what) {
    printf("%s (len %d, prompt_len %d, answer at %d):\n  ", what, ex->len, ex->prompt_len, ex->answer_start);
    for (int i = 0; i < ex->len; i++) {
        if (i == ex->prompt_len) printf("| ");
        printf("%s ", arith_token_name(ap, ex->tokens[i]));
    }
    printf("\n");
}

/* ---- many samples at one size --------------------------------------------- */

static void test_size(int n_ops, int p, int n_samples, int print) {
    ArithParams ap = { n_ops, p, 0, 0 };
    AlError err = { 0 };
    CHECK(arith_check(&ap, &err) == 0, "n_ops %d p %d: %s", n_ops, p, err.msg);
    int max_len = arith_max_len(&ap);
    Buf b;
    buf_init(&b, max_len);
    Rng rng = rng_stream(SEED, (uint64_t)(1000 * n_ops + p));
    int bad = 0, bad_fields = 0, bad_extract = 0, longest = 0, longest_prompt = 0, hist[ARITH_MAX_MODULUS] = { 0 };
    long total = 0;
    const char *why = NULL;
    double t0 = now_sec();
    for (int s = 0; s < n_samples; s++) {
        arith_sample(&ap, &rng, &b.ex);
        const char *w = verify_sequence(b.ex.tokens, b.ex.len, n_ops, p, 0, max_len);
        if (w) { bad++; why = w; }
        else hist[b.ex.tokens[b.ex.answer_start] - NUM]++;   /* a number: the checker passed */
        if ((w = verify_fields(&b.ex, 0))) { bad_fields++; why = w; }
        int st, al;
        bad_extract += !arith_extract_answer(&ap, b.ex.tokens, b.ex.len, &st, &al) ||
                       st != b.ex.answer_start || al != 1;
        if (b.ex.len > longest) longest = b.ex.len;
        if (b.ex.prompt_len > longest_prompt) longest_prompt = b.ex.prompt_len;
        total += b.ex.len;
    }
    double sec = now_sec() - t0;
    CHECK(bad == 0, "n_ops %d p %d: %d of %d sequences fail the checker (last: %s)", n_ops, p, bad,
          n_samples, why ? why : "");
    CHECK(bad_fields == 0, "n_ops %d p %d: %d examples with wrong fields (last: %s)", n_ops, p,
          bad_fields, why ? why : "");
    CHECK(bad_extract == 0, "n_ops %d p %d: extract_answer missed %d gold answers", n_ops, p, bad_extract);
    CHECK(buf_guard_ok(&b), "n_ops %d p %d: wrote past arith_max_len", n_ops, p);
    CHECK(longest <= max_len && longest_prompt <= 4 * n_ops, "n_ops %d: longest %d > %d or prompt %d",
          n_ops, longest, max_len, longest_prompt);
    /* Every answer value occurs (x_0 is uniform): a stuck generator shows here. */
    int seen_all = 1;
    for (int v = 0; v < p; v++) seen_all &= hist[v] > 0;
    CHECK(seen_all || n_samples < 50 * p, "n_ops %d p %d: some answer values never drawn", n_ops, p);
    printf("n_ops %2d p %2d: %6d samples, max_len %3d, longest %3d, mean %.1f, longest prompt %2d, %.3f s\n",
           n_ops, p, n_samples, max_len, longest, (double)total / n_samples, longest_prompt, sec);
    if (print) print_example(&ap, &b.ex, "  example");
    buf_free(&b);
}

/* The direct variant, and its agreement with CoT drawn from the same stream. */
static void test_direct(int n_ops, int n_samples) {
    ArithParams cot = { n_ops, 0, 0, 0 }, dir = { n_ops, 0, 1, 0 };
    int max_len = arith_max_len(&dir);
    CHECK(max_len == 4 * n_ops + 2, "direct max_len %d", max_len);
    Buf b, c;
    buf_init(&b, max_len);
    buf_init(&c, arith_max_len(&cot));
    int bad = 0, bad_fields = 0, differ = 0, bad_extract = 0;
    const char *why = NULL;
    for (int s = 0; s < n_samples; s++) {
        Rng r1 = rng_stream(SEED + (uint64_t)s, 7), r2 = r1;
        arith_sample(&dir, &r1, &b.ex);
        arith_sample(&cot, &r2, &c.ex);
        const char *w = verify_sequence(b.ex.tokens, b.ex.len, n_ops, 11, 1, max_len);
        if (w) { bad++; why = w; }
        if ((w = verify_fields(&b.ex, 1))) { bad_fields++; why = w; }
        differ += b.ex.prompt_len != c.ex.prompt_len ||
                  memcmp(b.ex.tokens, c.ex.tokens, (size_t)b.ex.prompt_len * sizeof(int)) != 0 ||
                  b.ex.tokens[b.ex.answer_start] != c.ex.tokens[c.ex.answer_start];
        int st, al;
        bad_extract += !arith_extract_answer(&dir, b.ex.tokens, b.ex.len, &st, &al) ||
                       st != b.ex.answer_start || al != 1;
    }
    CHECK(bad == 0 && bad_fields == 0, "direct n_ops %d: %d bad sequences, %d bad fields (last: %s)",
          n_ops, bad, bad_fields, why ? why : "");
    CHECK(differ == 0, "direct n_ops %d: %d prompts/answers differ from CoT on the same stream", n_ops, differ);
    CHECK(bad_extract == 0, "direct n_ops %d: extract_answer missed %d", n_ops, bad_extract);
    CHECK(buf_guard_ok(&b) && buf_guard_ok(&c), "direct: wrote past arith_max_len");
    print_example(&dir, &b.ex, "direct example");
    buf_free(&b);
    buf_free(&c);
}

/* ---- the checker rejects what it should ------------------------------------ */

/* Builds the sequence of the expression list es[0..n] (es[n] the longest). */
static int compose(int es[][64], const int *lens, int n, int *out) {
    int len = 0;
    for (int k = n; k >= 0; k--) {
        memcpy(out + len, es[k], (size_t)lens[k] * sizeof(int));
        len += lens[k];
        out[len++] = k ? EQ : EOS;
    }
    return len;
}

/* The longest legal chain: x − (y − (z − …)), every expansion after the first
 * bracketed (left neighbour '−', additive pair).  It must pass the checker and
 * be exactly arith_max_len long; the direct form exactly 4n + 2. */
static void test_longest_chain(void) {
    for (int n = 1; n <= 12; n++) {
        int es[13][64], lens[13], p = 11, x = 3;
        es[0][0] = NUM + x;
        lens[0] = 1;
        for (int k = 1; k <= n; k++) {
            int len = lens[k - 1], at = len - 1;   /* last number (before any ')') */
            while (!is_num(es[k - 1][at], p)) at--;
            int v = es[k - 1][at] - NUM, a = (k * 5) % p, b = zp(a - v, p);
            int w[5] = { LP, NUM + a, SUB, NUM + b, RP }, wn = 5, off = 0;
            if (k == 1) { off = 1; wn = 3; }
            memcpy(es[k], es[k - 1], (size_t)at * sizeof(int));
            memcpy(es[k] + at, w + off, (size_t)wn * sizeof(int));
            memcpy(es[k] + at + wn, es[k - 1] + at + 1, (size_t)(len - at - 1) * sizeof(int));
            lens[k] = len + wn - 1;
        }
        int seq[1024], len = compose(es, lens, n, seq);
        ArithParams ap = { n, 11, 0, 0 }, dp = { n, 11, 1, 0 };
        CHECK(len == arith_max_len(&ap), "n %d: longest chain %d tokens, arith_max_len %d", n, len, arith_max_len(&ap));
        const char *w = verify_sequence(seq, len, n, p, 0, len);
        CHECK(w == NULL, "n %d: longest chain rejected: %s", n, w);
        CHECK(lens[n] + 3 == arith_max_len(&dp), "n %d: direct bound", n);
    }
}

static void test_checker_rejects(void) {
    ArithParams ap = { 6, 11, 0, 0 };
    Buf b;
    buf_init(&b, arith_max_len(&ap));
    Rng rng = rng_stream(SEED, 50);
    int caught_answer = 0, caught_value = 0, caught_bracket = 0, caught_skip = 0, tried_bracket = 0, n = 300;
    int t[1024];
    for (int s = 0; s < n; s++) {
        arith_sample(&ap, &rng, &b.ex);
        int len = b.ex.len, ml = arith_max_len(&ap);
        /* 1. another final answer */
        memcpy(t, b.ex.tokens, (size_t)len * sizeof *t);
        t[len - 2] = NUM + (t[len - 2] - NUM + 1) % 11;
        caught_answer += verify_sequence(t, len, 6, 11, 0, ml) != NULL;
        /* 2. a wrong number in the middle of the chain (first number after the first '=') */
        memcpy(t, b.ex.tokens, (size_t)len * sizeof *t);
        int i = b.ex.prompt_len;
        while (!is_num(t[i], 11)) i++;
        t[i] = NUM + (t[i] - NUM + 1 + s % 10) % 11;
        caught_value += verify_sequence(t, len, 6, 11, 0, ml) != NULL;
        /* 3. the brackets of the first bracketed pair of the prompt dropped */
        memcpy(t, b.ex.tokens, (size_t)len * sizeof *t);
        int lp = -1;
        for (int j = 0; j + 4 < b.ex.prompt_len; j++)
            if (t[j] == LP && is_num(t[j + 1], 11) && t[j + 4] == RP) { lp = j; break; }
        if (lp >= 0) {
            tried_bracket++;
            int u[1024], m = 0;
            for (int j = 0; j < len; j++)
                if (j != lp && j != lp + 4) u[m++] = t[j];
            caught_bracket += verify_sequence(u, m, 6, 11, 0, ml) != NULL;
        }
        /* 4. a step skipped: E_n followed by E_{n−2} (two operators reduced at once);
         *    the step test itself must say no, not only the item count. */
        Item it[16];
        split_items(t, len - 1, it, 16);
        caught_skip += !is_reduction(t + it[0].start, it[0].len, t + it[2].start, it[2].len, 11);
    }
    CHECK(caught_answer == n, "a changed answer passed the checker %d times", n - caught_answer);
    CHECK(caught_value == n, "a changed CoT number passed the checker %d times", n - caught_value);
    CHECK(caught_skip == n, "a skipped step passed the checker %d times", n - caught_skip);
    /* A drop can leave another legal chain: 8 - ( 0 - 0 ) - X = 8 - 0 - X becomes
     * 8 - 0 - 0 - X = 8 - 0 - X, the 8 expanded into 8 - 0 (accepted below).  Such
     * coincidences are rare; anything more than a few would be a blind checker. */
    CHECK(tried_bracket > 50, "too few bracketed prompts (%d) to test", tried_bracket);
    CHECK(caught_bracket >= tried_bracket - tried_bracket / 50, "dropped brackets passed the checker %d of %d times",
          tried_bracket - caught_bracket, tried_bracket);
    printf("checker: %d/%d changed answers, %d/%d changed CoT numbers, %d/%d skipped steps, "
           "%d/%d dropped bracket pairs rejected\n", caught_answer, n, caught_value, n, caught_skip, n,
           caught_bracket, tried_bracket);
    static const int coincide[] = { NUM + 8, SUB, NUM + 0, SUB, NUM + 0, SUB, NUM + 4, EQ,
                                    NUM + 8, SUB, NUM + 0, SUB, NUM + 4, EQ, NUM + 8, SUB, NUM + 4, EQ, NUM + 4, EOS };
    CHECK(verify_sequence(coincide, 20, 3, 11, 0, 42) == NULL, "8 - 0 - 0 - 4 = 8 - 0 - 4 = … rejected");

    /* Hand-made steps: leftmost-handle order is fine when it is a legal undo... */
    static const int ok[] = { NUM + 2, ADD, NUM + 3, MUL, NUM + 4, EQ, NUM + 2, ADD, NUM + 1, EQ, NUM + 3, EOS };
    CHECK(verify_sequence(ok, 12, 2, 11, 0, 26) == NULL, "2 + 3 * 4 = 2 + 1 = 3 rejected");
    /* ...but reducing "2 + 3" first in 2 + 3 * 4 is not an undo of an expansion. */
    static const int bad1[] = { NUM + 2, ADD, NUM + 3, MUL, NUM + 4, EQ, NUM + 5, MUL, NUM + 4, EQ, NUM + 9, EOS };
    CHECK(verify_sequence(bad1, 12, 2, 11, 0, 26) != NULL, "precedence violation accepted");
    /* a / (b * c) needs its brackets even though * binds tighter than +/−. */
    static const int br[] = { NUM + 6, DIV, LP, NUM + 1, MUL, NUM + 3, RP, EQ, NUM + 6, DIV, NUM + 3, EQ, NUM + 2, EOS };
    CHECK(verify_sequence(br, 14, 2, 11, 0, 26) == NULL, "6 / ( 1 * 3 ) = 6 / 3 = 2 rejected");
    static const int nobr[] = { NUM + 6, DIV, NUM + 1, MUL, NUM + 3, EQ, NUM + 6, DIV, NUM + 3, EQ, NUM + 2, EOS };
    CHECK(verify_sequence(nobr, 12, 2, 11, 0, 26) != NULL, "6 / 1 * 3 = 6 / 3 accepted");
    /* Rule violations that keep every value: only the step rule can catch them.
     * Brackets the generator never writes: a * (b * c), (a + b) + c, a + (b − c). */
    static const int mulmul[] = { NUM + 2, MUL, LP, NUM + 3, MUL, NUM + 4, RP, EQ, NUM + 2, MUL, NUM + 1, EQ, NUM + 2, EOS };
    CHECK(verify_sequence(mulmul, 14, 2, 11, 0, 26) != NULL, "2 * ( 3 * 4 ) = 2 * 1 accepted");
    static const int addsub[] = { NUM + 2, ADD, LP, NUM + 3, SUB, NUM + 4, RP, EQ, NUM + 2, ADD, NUM + 10, EQ, NUM + 1, EOS };
    CHECK(verify_sequence(addsub, 14, 2, 11, 0, 26) != NULL, "2 + ( 3 - 4 ) = 2 + 10 accepted");
    static const int extra[] = { LP, NUM + 2, ADD, NUM + 3, RP, ADD, NUM + 4, EQ, NUM + 5, ADD, NUM + 4, EQ, NUM + 9, EOS };
    CHECK(verify_sequence(extra, 14, 2, 11, 0, 26) != NULL, "superfluous brackets accepted");
    buf_free(&b);
}

/* ---- the law: a literal second implementation of the public generator ----- */

/* Transliteration of data.py get()/iter()/get_expr(): a list of tokens, a random
 * position retried until it holds a number, the history kept forwards and
 * printed reversed.  first_only = 1 always expands the first number instead: a
 * deliberately wrong law the comparison below must be able to see.  Returns the
 * sequence length (with <eos>). */
static int literal_sample(int n_ops, int p, Rng *r, int first_only, int *out) {
    int hist[16][64], hl[16], cur[64], n = 1;
    cur[0] = NUM + (int)rng_below(r, (uint32_t)p);
    memcpy(hist[0], cur, sizeof(int));
    hl[0] = 1;
    for (int s = 1; s <= n_ops; s++) {
        int item = 0;
        if (first_only) while (!is_num(cur[item], p)) item++;
        else do item = (int)rng_below(r, (uint32_t)n); while (!is_num(cur[item], p));
        int x = cur[item] - NUM, n1, sign, n2;
        for (;;) {
            n1 = (int)rng_below(r, (uint32_t)p);
            sign = ADD + (int)rng_below(r, 4);
            if (sign == ADD) { n2 = zp(x - n1, p); break; }
            if (sign == SUB) { n2 = zp(n1 - x, p); break; }
            if (sign == MUL) {
                if (n1 == 0 && x != 0) continue;
                n2 = n1 == 0 ? (int)rng_below(r, (uint32_t)p) : zp_div(x, n1, p);
                break;
            }
            if (x == 0 && n1 == 0) {
                n2 = (int)rng_below(r, (uint32_t)p);
                if (n2 == 0) continue;
                break;
            }
            if (x == 0 || n1 == 0) continue;
            n2 = zp_div(n1, x, p);
            break;
        }
        int need = 0;
        if (item > 0 && cur[item - 1] == DIV) need = 1;
        else if ((item > 0 && cur[item - 1] == MUL) || (item < n - 1 && (cur[item + 1] == MUL || cur[item + 1] == DIV)))
            need = sign == ADD || sign == SUB;
        else if (item > 0 && cur[item - 1] == SUB)
            need = sign == ADD || sign == SUB;
        int e[5] = { LP, NUM + n1, sign, NUM + n2, RP }, en = need ? 5 : 3, *ep = need ? e : e + 1;
        int next[64], m = 0;
        for (int i = 0; i < item; i++) next[m++] = cur[i];
        for (int i = 0; i < en; i++) next[m++] = ep[i];
        for (int i = item + 1; i < n; i++) next[m++] = cur[i];
        memcpy(cur, next, (size_t)m * sizeof(int));
        n = m;
        memcpy(hist[s], cur, (size_t)n * sizeof(int));
        hl[s] = n;
    }
    return compose(hist, hl, n_ops, out);
}

/* Sequence → counts of both generators (open addressing on a 64-bit hash of the
 * tokens; with a few thousand keys a collision is out of the question). */
typedef struct Table { int cap, used; uint64_t *key; int *count[2]; } Table;

static uint64_t hash_seq(const int *t, int n) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) h = (h ^ (uint64_t)(t[i] + 1)) * 1099511628211ull;
    return h | 1;   /* 0 marks an empty slot */
}

static void table_add(Table *tb, const int *t, int n, int side) {
    uint64_t h = hash_seq(t, n);
    size_t i = (size_t)(h & (uint64_t)(tb->cap - 1));
    while (tb->key[i] && tb->key[i] != h) i = (i + 1) & (size_t)(tb->cap - 1);
    if (!tb->key[i]) { tb->key[i] = h; tb->used++; }
    tb->count[side][i]++;
}

/* Total-variation distance between the empirical sequence laws of arith_sample
 * and of the literal generator, n draws each. */
static double law_distance(int n_ops, int p, int n, int first_only, int *distinct) {
    enum { CAP = 1 << 16 };
    Table tb = { CAP, 0, calloc(CAP, sizeof(uint64_t)), { calloc(CAP, sizeof(int)), calloc(CAP, sizeof(int)) } };
    ArithParams ap = { n_ops, p, 0, 0 };
    Buf b;
    buf_init(&b, arith_max_len(&ap));
    Rng ra = rng_stream(SEED, 60), rb = rng_stream(SEED, 61);
    int t[256];
    for (int s = 0; s < n; s++) {
        arith_sample(&ap, &ra, &b.ex);
        table_add(&tb, b.ex.tokens, b.ex.len, 0);
        table_add(&tb, t, literal_sample(n_ops, p, &rb, first_only, t), 1);
    }
    long diff = 0;
    for (int i = 0; i < tb.cap; i++) diff += labs((long)tb.count[0][i] - tb.count[1][i]);
    *distinct = tb.used;
    buf_free(&b);
    free(tb.key);
    free(tb.count[0]);
    free(tb.count[1]);
    return (double)diff / (2.0 * n);
}

/* Same law as the public generator: n = 2, p = 3 and n = 3, p = 2 have a few
 * hundred to a few thousand possible sequences, every bracket case among them,
 * so the whole joint law (positions, pairs, brackets) is compared, not a summary.
 * With K sequences and n draws each, two samples of one law are about
 * 0.4·√(2K/n) apart in TV; the bar is three times that. */
static void test_law(void) {
    static const int sizes[2][2] = { { 2, 3 }, { 3, 2 } };
    for (int c = 0; c < 2; c++) {
        int distinct, ignored, n = 200000;
        double tv = law_distance(sizes[c][0], sizes[c][1], n, 0, &distinct);
        double tvb = law_distance(sizes[c][0], sizes[c][1], n, 1, &ignored);
        double bar = 3 * 0.4 * sqrt(2.0 * distinct / n);
        CHECK(tv < bar, "n_ops %d p %d: law differs from the literal generator: TV %.4f (bar %.4f)",
              sizes[c][0], sizes[c][1], tv, bar);
        CHECK(tvb > bar, "n_ops %d p %d: a first-number-only generator went unnoticed: TV %.4f",
              sizes[c][0], sizes[c][1], tvb);
        printf("law n_ops %d p %d: %d distinct sequences, TV %.4f to the literal generator "
               "(bar %.4f), %.4f to a first-number-only one\n", sizes[c][0], sizes[c][1], distinct,
               tv, bar, tvb);
    }
}

/* The law of the operator with n_ops = 1, exactly: get_expr's retries make '*'
 * and '/' rarer.  x ≠ 0 (prob. (p−1)/p): weights 1, 1, (p−1)/p, (p−1)/p.
 * x = 0: '*' always succeeds, '/' only with a = 0 and b ≠ 0: 1, 1, 1, (p−1)/p². */
static void test_operator_law(void) {
    enum { N = 200000, P = 11 };
    ArithParams ap = { 1, P, 0, 0 };
    Buf b;
    buf_init(&b, arith_max_len(&ap));
    Rng rng = rng_stream(SEED, 70);
    long count[4] = { 0 }, answers[P] = { 0 };
    for (int s = 0; s < N; s++) {
        arith_sample(&ap, &rng, &b.ex);
        count[b.ex.tokens[1] - ADD]++;
        answers[b.ex.tokens[b.ex.answer_start] - NUM]++;
    }
    double q = (P - 1.0) / P, w_nz[4] = { 1, 1, q, q }, w_z[4] = { 1, 1, 1, (P - 1.0) / (P * P) };
    double s_nz = 0, s_z = 0;
    for (int k = 0; k < 4; k++) { s_nz += w_nz[k]; s_z += w_z[k]; }
    for (int k = 0; k < 4; k++) {
        double want = q * w_nz[k] / s_nz + (1.0 / P) * w_z[k] / s_z, got = (double)count[k] / N;
        CHECK_NEAR(got, want, 0.005, dict_symbols[ADD + k]);
    }
    for (int v = 0; v < P; v++) CHECK_NEAR((double)answers[v] / N, 1.0 / P, 0.005, "answer frequency");
    printf("operator law (n_ops 1): + %.4f  - %.4f  * %.4f  / %.4f\n", (double)count[0] / N,
           (double)count[1] / N, (double)count[2] / N, (double)count[3] / N);
    buf_free(&b);
}

/* ---- the API around the sample --------------------------------------------- */

static void test_vocab_and_lengths(void) {
    ArithParams ap = { 6, 0, 0, 0 };
    CHECK(arith_vocab_size(&ap) == 21, "vocab %d", arith_vocab_size(&ap));
    for (int id = 0; id < 10; id++)
        CHECK(strcmp(arith_token_name(&ap, id), dict_symbols[id]) == 0, "name of %d: %s", id, arith_token_name(&ap, id));
    char want[8];
    for (int v = 0; v < 11; v++) {
        snprintf(want, sizeof want, "%d", v);
        CHECK(strcmp(arith_token_name(&ap, NUM + v), want) == 0, "name of number %d", v);
    }
    CHECK(strcmp(arith_token_name(&ap, 21), "?") == 0 && strcmp(arith_token_name(&ap, -1), "?") == 0,
          "out-of-range names");
    ArithParams big = { 3, 97, 0, 0 };
    CHECK(arith_vocab_size(&big) == 107 && strcmp(arith_token_name(&big, 106), "96") == 0, "p = 97 names");
    /* 2n(n+1) + 2 with CoT: the scaled sizes and the paper's. */
    static const int ns[] = { 1, 2, 3, 4, 5, 6, 10, 13, 16 }, cot[] = { 6, 14, 26, 42, 62, 86, 222, 366, 546 };
    for (int i = 0; i < 9; i++) {
        ArithParams q = { ns[i], 11, 0, 0 }, d = { ns[i], 11, 1, 0 };
        CHECK(arith_max_len(&q) == cot[i], "max_len(%d) = %d", ns[i], arith_max_len(&q));
        CHECK(arith_max_len(&d) == 4 * ns[i] + 2, "direct max_len(%d)", ns[i]);
    }
}

static void test_extract(void) {
    ArithParams ap = { 2, 11, 0, 0 }, dp = { 2, 11, 1, 0 };
    int st, al;
    /* 2 + 3 * 4 = 2 + 1 = 3 <eos> */
    int good[] = { NUM + 2, ADD, NUM + 3, MUL, NUM + 4, EQ, NUM + 2, ADD, NUM + 1, EQ, NUM + 3, EOS, PAD, PAD };
    CHECK(arith_extract_answer(&ap, good, 14, &st, &al) == 1 && st == 10 && al == 1, "gold: %d %d", st, al);
    CHECK(arith_extract_answer(&ap, good, 11, &st, &al) == 0 && st == -1 && al == 0, "no <eos> accepted");
    /* The FIRST <eos> decides, whatever follows it. */
    int twice[] = { NUM + 2, ADD, NUM + 3, MUL, NUM + 4, EQ, NUM + 7, EOS, NUM + 3, EOS };
    CHECK(arith_extract_answer(&ap, twice, 10, &st, &al) == 1 && st == 6, "first <eos>: %d", st);
    /* The public rule is lenient: "… = 2 + 1 <eos>" answers 1. */
    int lenient[] = { NUM + 2, ADD, NUM + 3, MUL, NUM + 4, EQ, NUM + 2, ADD, NUM + 1, EOS };
    CHECK(arith_extract_answer(&ap, lenient, 10, &st, &al) == 1 && st == 8, "lenient: %d", st);
    /* Not a number before <eos>. */
    int eq_eos[] = { NUM + 2, ADD, NUM + 3, MUL, NUM + 4, EQ, EOS };
    CHECK(arith_extract_answer(&ap, eq_eos, 7, &st, &al) == 0, "<eos> right after '=' accepted");
    int paren[] = { NUM + 2, EQ, LP, NUM + 2, RP, EOS };
    CHECK(arith_extract_answer(&ap, paren, 6, &st, &al) == 0, "')' as answer accepted");
    int first[] = { EOS, NUM + 1 };
    CHECK(arith_extract_answer(&ap, first, 2, &st, &al) == 0, "<eos> at 0 accepted");
    int outside[] = { NUM + 2, EQ, NUM + 11, EOS };   /* id 21: outside the vocabulary */
    CHECK(arith_extract_answer(&ap, outside, 4, &st, &al) == 0, "out-of-vocabulary answer accepted");
    CHECK(arith_extract_answer(&ap, good, 0, &st, &al) == 0, "empty sequence");
    /* Direct: the token after the first '=', <eos> or not. */
    int d1[] = { NUM + 2, ADD, NUM + 3, MUL, NUM + 4, EQ, NUM + 3, EOS };
    CHECK(arith_extract_answer(&dp, d1, 8, &st, &al) == 1 && st == 6 && al == 1, "direct gold");
    CHECK(arith_extract_answer(&dp, d1, 7, &st, &al) == 1 && st == 6, "direct without <eos>");
    CHECK(arith_extract_answer(&dp, d1, 6, &st, &al) == 0, "direct: nothing after '='");
    int d2[] = { NUM + 2, ADD, NUM + 3, EQ, SUB, EOS };
    CHECK(arith_extract_answer(&dp, d2, 6, &st, &al) == 0, "direct: operator as answer");
    CHECK(arith_extract_answer(&dp, d1, 5, &st, &al) == 0, "direct: no '='");
}

static void test_determinism(void) {
    ArithParams ap = { 5, 11, 0, 0 };
    Buf a, b;
    buf_init(&a, arith_max_len(&ap));
    buf_init(&b, arith_max_len(&ap));
    Rng r1 = rng_stream(SEED, 80), r2 = rng_stream(SEED, 80), r3 = rng_stream(SEED + 1, 80);
    int same = 1, differ = 0;
    for (int s = 0; s < 200; s++) {
        arith_sample(&ap, &r1, &a.ex);
        arith_sample(&ap, &r2, &b.ex);
        same &= a.ex.len == b.ex.len && a.ex.prompt_len == b.ex.prompt_len &&
                memcmp(a.ex.tokens, b.ex.tokens, (size_t)a.ex.len * sizeof(int)) == 0 &&
                memcmp(a.ex.targets, b.ex.targets, (size_t)a.ex.len * sizeof(int)) == 0;
        arith_sample(&ap, &r3, &b.ex);
        differ += a.ex.len != b.ex.len || memcmp(a.ex.tokens, b.ex.tokens, (size_t)a.ex.len * sizeof(int)) != 0;
    }
    CHECK(same, "same stream, different examples");
    CHECK(differ > 190, "other seed, same examples (%d of 200 differ)", differ);
    buf_free(&a);
    buf_free(&b);
}

/* task.under: training operator counts follow P(i) = i / (n(n+1)/2), each example
 * still a valid chain for its own count (re-derived by the checker); without under
 * arith_sample_train is arith_sample on the same stream. */
static void test_under(int n_ops, int n_samples) {
    ArithParams ap = { n_ops, 11, 0, 1 }, plain = { n_ops, 11, 0, 0 };
    Buf b, c;
    buf_init(&b, arith_max_len(&ap));
    buf_init(&c, arith_max_len(&ap));
    Rng r = rng_stream(SEED, 90);
    long count[ARITH_MAX_OPS + 1] = { 0 };
    int bad = 0;
    for (int s = 0; s < n_samples; s++) {
        arith_sample_train(&ap, &r, &b.ex);
        int k = count_ops(b.ex.tokens, b.ex.prompt_len - 1);
        if (k < 1 || k > n_ops) { bad++; continue; }
        count[k]++;
        ArithParams own = { k, 11, 0, 0 };
        const char *why = verify_sequence(b.ex.tokens, b.ex.len, k, 11, 0, arith_max_len(&own));
        if (!why) why = verify_fields(&b.ex, 0);
        if (why && bad++ < 3) print_example(&own, &b.ex, why);
    }
    CHECK(bad == 0 && buf_guard_ok(&b), "under: %d invalid examples", bad);
    double total = n_ops * (n_ops + 1) / 2.0;
    for (int k = 1; k <= n_ops; k++) {
        double want = n_samples * k / total, sd = sqrt(want * (1 - k / total));
        CHECK(fabs(count[k] - want) < 5 * sd, "under: %ld examples with %d operators, %.0f expected", count[k], k, want);
    }
    Rng r1 = rng_stream(SEED, 91), r2 = rng_stream(SEED, 91);
    int same = 1;
    for (int s = 0; s < 200; s++) {
        arith_sample_train(&plain, &r1, &b.ex);
        arith_sample(&plain, &r2, &c.ex);
        same &= b.ex.len == c.ex.len && memcmp(b.ex.tokens, c.ex.tokens, (size_t)b.ex.len * sizeof(int)) == 0;
    }
    CHECK(same, "without under, arith_sample_train differs from arith_sample");
    buf_free(&b);
    buf_free(&c);
}

static void test_bad_params(void) {
    static const struct { ArithParams p; const char *word; } bad[] = {
        { { 0, 11, 0, 0 }, "n_ops" },   { { -3, 11, 0, 0 }, "n_ops" }, { { 101, 11, 0, 0 }, "n_ops" },
        { { 3, 1, 0, 0 }, "modulus" },  { { 3, 12, 0, 0 }, "modulus" }, { { 3, 4, 0, 0 }, "modulus" },
        { { 3, 101, 0, 0 }, "modulus" }, { { 3, -11, 0, 0 }, "modulus" }, { { 3, 11, 2, 0 }, "direct" },
        { { 3, 11, -1, 0 }, "direct" },   { { 3, 11, 0, 2 }, "under" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        AlError err = { 0 };
        int rc = arith_check(&bad[i].p, &err);
        CHECK(rc == 2 && err.code == 2 && strstr(err.msg, bad[i].word), "case %zu: rc %d, '%s'", i, rc, err.msg);
    }
    static const ArithParams good[] = { { 1, 0, 0, 0 }, { 100, 11, 1, 0 }, { 3, 2, 0, 0 }, { 3, 97, 0, 0 }, { 16, 11, 0, 0 } };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        AlError err = { 0 };
        CHECK(arith_check(&good[i], &err) == 0, "good case %zu rejected: %s", i, err.msg);
    }
}

int main(void) {
    double t0 = now_sec();
    test_vocab_and_lengths();
    test_bad_params();
    test_extract();
    test_longest_chain();
    test_checker_rejects();
    /* The scaled sizes of results/paper004/README.md: smallest 3, largest 6 in depth; 4, 5 too. */
    test_size(3, 11, 20000, 1);
    test_size(4, 11, 5000, 0);
    test_size(5, 11, 5000, 0);
    test_size(6, 11, 20000, 1);
    /* The paper's sizes, fewer samples; other primes; the degenerate n = 1. */
    test_size(10, 11, 500, 0);
    test_size(13, 11, 300, 0);
    test_size(16, 11, 200, 1);
    test_size(1, 11, 2000, 0);
    test_size(4, 2, 2000, 0);
    test_size(4, 3, 2000, 0);
    test_size(4, 13, 2000, 0);
    test_size(4, 97, 2000, 0);
    test_direct(3, 2000);
    test_direct(6, 2000);
    test_operator_law();
    test_law();
    test_determinism();
    test_under(3, 30000);
    test_under(6, 30000);
    printf("total %.2f s\n", now_sec() - t0);
    return check_exit("test_cot_arith");
}
