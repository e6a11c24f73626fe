/* test_cot_ed.c — the edit-distance chain-of-thought generator against an
 * independent checker.
 *
 * The checker shares no code with the generator.  Its tables are shortest paths
 * on the edit grid found by Bellman–Ford relaxation (every edge relaxed until
 * nothing changes, cells visited in reverse order), not the row-major recurrence,
 * with the costs read off the public ED/data.py as edge weights: a step into row 0
 * or column 0 costs 1 (the i + j initialisation), a step right or down into an
 * interior cell costs 2, a diagonal step 0 on equal letters and 3 otherwise
 * (uniform mode: 1, 1, 0/1).  The worked example of the reference notes pins the
 * quirk.  Examples are parsed from the task definition ("s | t <sep>", a rows of b
 * numbers and ",", "<sep> answer <eos>"), never from the Example's own offsets.
 * The input law is compared with statistics of a separate re-implementation of
 * the public generator (Python, 200 000 draws per size). */
#include "attnlab/data/cot_ed.h"
#include "attnlab/data/dataset.h"
#include "check.h"
#include "ed_law.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SEED 20240613u
enum { MAXL = 24, CAP = MAXL * MAXL + 5 * MAXL + 7, BIG = 1 << 28 };

/* ---- the independent checker ------------------------------------------- */

static void relax(int *cell, int from, int cost, int *changed) {
    if (from < BIG && from + cost < *cell) {
        *cell = from + cost;
        *changed = 1;
    }
}

/* d[(a+1)(b+1)]: shortest-path costs from (0,0). */
static void brute_table(const int *s, int a, const int *t, int b, int uniform, int *d) {
    int indel = uniform ? 1 : 2, rep = uniform ? 1 : 3, w = b + 1, changed = 1;
    for (int k = 0; k < (a + 1) * w; k++) d[k] = BIG;
    d[0] = 0;
    while (changed) {
        changed = 0;
        for (int i = a; i >= 0; i--)
            for (int j = b; j >= 0; j--) {
                int *c = &d[i * w + j], border = i == 0 || j == 0;
                if (i > 0) relax(c, d[(i - 1) * w + j], border ? 1 : indel, &changed);
                if (j > 0) relax(c, d[i * w + j - 1], border ? 1 : indel, &changed);
                if (i > 0 && j > 0)
                    relax(c, d[(i - 1) * w + j - 1], s[i - 1] == t[j - 1] ? 0 : rep, &changed);
            }
    }
}

typedef struct Tally {
    long long bad_parse, bad_lengths, bad_same, bad_letters, bad_cot, bad_answer, bad_eos;
    long long bad_targets, bad_meta, bad_extract, bad_value_range;
    int count, max_len_seen, max_value;
    double sum_ans, n_shorter, n_equal, sum_letters;
} Tally;

/* Parses and checks one example of nominal length l (using = 8). */
static void verify(const Example *ex, int l, int uniform, int direct, int num_range, Tally *t) {
    const int *x = ex->tokens;
    int s[2 * MAXL], u[2 * MAXL], a = 0, b = 0, pos = 0, d[(MAXL + 1) * (MAXL + 3)];
    t->count++;
    while (pos < ex->len && x[pos] >= 5 && x[pos] <= 30 && a < 2 * MAXL) s[a++] = x[pos++] - 5;
    if (pos >= ex->len || x[pos++] != 3) { t->bad_parse++; return; }              /* | */
    while (pos < ex->len && x[pos] >= 5 && x[pos] <= 30 && b < 2 * MAXL) u[b++] = x[pos++] - 5;
    if (pos >= ex->len || x[pos++] != 1) { t->bad_parse++; return; }              /* <sep> */
    int prompt_len = pos;
    /* (a, b) = (l, l..l+2) or (l-3..l-1, l): the shorter string first. */
    t->bad_lengths += !((a == l && b >= l && b <= l + 2) || (b == l && a >= l - 3 && a < l));
    if (a > MAXL || b > MAXL + 2) { t->bad_parse++; return; }
    t->bad_same += a == b && memcmp(s, u, (size_t)a * sizeof *s) == 0;
    int seen[26] = { 0 }, letters = 0;
    for (int i = 0; i < a; i++) seen[s[i]] = 1;
    for (int j = 0; j < b; j++) seen[u[j]] = 1;
    for (int c = 0; c < 26; c++) letters += seen[c];
    t->bad_letters += letters > 8 + 2;
    brute_table(s, a, u, b, uniform, d);
    int w = b + 1, ans = d[a * w + b];
    int len = direct ? prompt_len + 2 : prompt_len + a * (b + 1) + 3;
    if (ex->len != len) { t->bad_parse++; return; }
    if (!direct) {
        for (int i = 1; i <= a; i++) {
            for (int j = 1; j <= b; j++) {
                int v = d[i * w + j];
                t->bad_cot += x[pos++] != 31 + v;
                t->bad_value_range += v >= num_range;
                if (v > t->max_value) t->max_value = v;
            }
            t->bad_cot += x[pos++] != 4;                                          /* , */
        }
        t->bad_cot += x[pos++] != 1;                                              /* <sep> */
    }
    t->bad_answer += x[pos++] != 31 + ans;
    t->bad_eos += x[pos] != 2;
    for (int i = 0; i < len; i++) {
        int want = i >= prompt_len - 1 && i <= len - 2 ? x[i + 1] : -1;
        t->bad_targets += ex->targets[i] != want;
    }
    t->bad_meta += ex->prompt_len != prompt_len || ex->answer_start != len - 2 ||
                   ex->answer_len != 1 || ex->group != 0;
    EdParams p = { l, 8, num_range, direct, uniform, 0 };
    int st = -1, al = -1;
    t->bad_extract += !ed_extract_answer(&p, x, len, &st, &al) || st != len - 2 || al != 1;
    if (len > t->max_len_seen) t->max_len_seen = len;
    t->sum_ans += ans;
    t->n_shorter += a < l;
    t->n_equal += a == b;
    t->sum_letters += letters;
}

static void check_tally(const Tally *t, const char *what) {
    CHECK(t->bad_parse == 0, "%s: %lld examples do not parse as 's | t <sep> …'", what, t->bad_parse);
    CHECK(t->bad_lengths == 0, "%s: %lld string-length pairs outside the law", what, t->bad_lengths);
    CHECK(t->bad_same == 0, "%s: %lld pairs of equal strings", what, t->bad_same);
    CHECK(t->bad_letters == 0, "%s: %lld pairs use more than using+2 letters", what, t->bad_letters);
    CHECK(t->bad_cot == 0, "%s: %lld chain tokens differ from the shortest-path table", what, t->bad_cot);
    CHECK(t->bad_value_range == 0, "%s: %lld values outside num_range", what, t->bad_value_range);
    CHECK(t->bad_answer == 0, "%s: %lld wrong answers", what, t->bad_answer);
    CHECK(t->bad_eos == 0, "%s: %lld missing <eos>", what, t->bad_eos);
    CHECK(t->bad_targets == 0, "%s: %lld targets differ from next-token-after-first-<sep>", what,
          t->bad_targets);
    CHECK(t->bad_meta == 0, "%s: %lld wrong prompt_len / answer span / group", what, t->bad_meta);
    CHECK(t->bad_extract == 0, "%s: %lld gold sequences where extraction missed the answer", what,
          t->bad_extract);
}

static double now_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- tables ---------------------------------------------------------------- */

static void to_ints(const char *str, int *x) {
    for (int i = 0; str[i]; i++) x[i] = str[i] - 'a';
}

/* The worked example of the reference notes (length 6). */
static void test_table_golden(void) {
    static const int want[6][6] = {
        { 0, 2, 4, 6, 7, 8 }, { 2, 0, 2, 4, 6, 7 }, { 4, 2, 3, 5, 7, 9 },
        { 6, 4, 5, 3, 5, 7 }, { 7, 6, 7, 5, 3, 5 }, { 8, 7, 9, 7, 5, 3 },
    };
    int s[6], t[6], m[7 * 8], bad = 0;
    to_ints("ygjggg", s);
    to_ints("ygaggg", t);
    ed_table(s, 6, t, 6, 0, m);
    for (int i = 1; i <= 6; i++)
        for (int j = 1; j <= 6; j++) bad += m[i * 7 + j] != want[i - 1][j - 1];
    CHECK(bad == 0, "worked example: %d cells differ", bad);
    ed_table(s, 6, t, 6, 1, m);
    CHECK(m[48] == 1, "uniform: one replace, got %d", m[48]);
    int k[6], g[7];
    to_ints("kitten", k);
    to_ints("sitting", g);
    ed_table(k, 6, g, 7, 1, m);
    CHECK(m[6 * 8 + 7] == 3, "Levenshtein(kitten, sitting) = %d", m[6 * 8 + 7]);
    ed_table(k, 6, g, 7, 0, m);
    CHECK(m[6 * 8 + 7] == 8, "public costs (kitten, sitting) = %d, want 3+3+2", m[6 * 8 + 7]);
}

/* Disjoint strings give a + b + min(a, b) (public costs) and max(a, b) (unit):
 * the values ed_max_value relies on. */
static void test_table_extremes(void) {
    int s[30], t[30], m[31 * 31], bad = 0;
    for (int i = 0; i < 30; i++) { s[i] = 0; t[i] = 1; }
    for (int a = 0; a <= 30; a++)
        for (int b = 0; b <= 30; b++) {
            ed_table(s, a, t, b, 0, m);
            bad += m[a * (b + 1) + b] != a + b + (a < b ? a : b);
            ed_table(s, a, t, b, 1, m);
            bad += m[a * (b + 1) + b] != (a > b ? a : b);
        }
    CHECK(bad == 0, "%d disjoint-string tables off the closed form", bad);
}

static void test_table_random(void) {
    Rng rng = rng_stream(SEED, 1);
    int s[12], t[12], m[13 * 13], d[13 * 13], bad = 0;
    for (int k = 0; k < 20000; k++) {
        int a = (int)rng_below(&rng, 13), b = (int)rng_below(&rng, 13), sigma = 1 + (int)rng_below(&rng, 4);
        int uniform = k & 1;
        for (int i = 0; i < a; i++) s[i] = (int)rng_below(&rng, (uint32_t)sigma);
        for (int j = 0; j < b; j++) t[j] = (int)rng_below(&rng, (uint32_t)sigma);
        ed_table(s, a, t, b, uniform, m);
        brute_table(s, a, t, b, uniform, d);
        bad += memcmp(m, d, sizeof(int) * (size_t)((a + 1) * (b + 1))) != 0;
    }
    CHECK(bad == 0, "%d random tables differ from shortest paths", bad);
}

/* ---- samples at the scaled sizes ----------------------------------------- */

static void test_samples(const EdLaw *ref, int draws) {
    int l = ref->l;
    EdParams p = { l, 8, 0, 0, 0, 0 }, pu = { l, 8, 0, 0, 1, 0 };
    AlError err = { 0 };
    CHECK(ed_check(&p, &err) == 0 && ed_check(&pu, &err) == 0, "l = %d: %s", l, err.msg);
    CHECK(ed_num_range(&p) == 60 && ed_vocab_size(&p) == 91, "l = %d: public vocabulary", l);
    CHECK(ed_max_len(&p) == l * l + 5 * l + 7, "l = %d: max_len %d", l, ed_max_len(&p));
    int tok[CAP], tgt[CAP], utok[CAP], utgt[CAP];
    Example ex = { .tokens = tok, .targets = tgt }, ux = { .tokens = utok, .targets = utgt };
    Tally t, tu;
    memset(&t, 0, sizeof t);
    memset(&tu, 0, sizeof tu);
    Rng rng = rng_stream(SEED, 100 + (uint64_t)l), rng_u = rng;
    int same_prompt = 0;
    double t0 = now_sec();
    for (int k = 0; k < draws; k++) {
        ed_sample(&p, &rng, &ex);
        verify(&ex, l, 0, 0, 60, &t);
        /* Same stream with unit costs: the same strings, another table. */
        ed_sample(&pu, &rng_u, &ux);
        verify(&ux, l, 1, 0, 60, &tu);
        same_prompt += ex.prompt_len == ux.prompt_len &&
                       memcmp(tok, utok, (size_t)ex.prompt_len * sizeof *tok) == 0;
    }
    double sec = now_sec() - t0;
    char what[64];
    snprintf(what, sizeof what, "l = %d", l);
    check_tally(&t, what);
    snprintf(what, sizeof what, "l = %d uniform", l);
    check_tally(&tu, what);
    CHECK(same_prompt == draws, "l = %d: %d of %d uniform-cost prompts equal", l, same_prompt, draws);
    CHECK(t.max_len_seen == ed_max_len(&p), "l = %d: longest example %d, max_len %d", l,
          t.max_len_seen, ed_max_len(&p));
    CHECK(t.max_value <= ed_max_value(&p) && tu.max_value <= ed_max_value(&pu), "l = %d: values", l);
    ed_law_check(ref, t.sum_ans, tu.sum_ans, t.n_shorter, t.n_equal, t.sum_letters, draws);
    printf("ED l=%d: %d samples x 2 cost modes in %.3f s (checker included), mean answer %.3f "
           "(public law %.3f), unit costs %.3f (%.3f), max value %d, longest %d tokens\n", l, draws, sec,
           t.sum_ans / draws, ref->mean, tu.sum_ans / draws, ref->mean_uniform, t.max_value,
           t.max_len_seen);
}

/* The other scaled sizes and the paper's: format and labels only. */
static void test_other_sizes(void) {
    static const int sizes[] = { 5, 6, 12, 16, 20 };
    int tok[CAP], tgt[CAP];
    Example ex = { .tokens = tok, .targets = tgt };
    for (int z = 0; z < 5; z++) {
        int l = sizes[z];
        EdParams p = { l, 8, 0, 0, 0, 0 };
        AlError err = { 0 };
        CHECK(ed_check(&p, &err) == 0, "l = %d: %s", l, err.msg);
        Tally t;
        memset(&t, 0, sizeof t);
        Rng rng = rng_stream(SEED, 200 + (uint64_t)l);
        int draws = l <= 7 ? 3000 : 300;
        for (int k = 0; k < draws; k++) {
            ed_sample(&p, &rng, &ex);
            verify(&ex, l, 0, 0, ed_num_range(&p), &t);
        }
        char what[64];
        snprintf(what, sizeof what, "l = %d", l);
        check_tally(&t, what);
        CHECK(t.max_len_seen <= ed_max_len(&p), "l = %d: %d > max_len", l, t.max_len_seen);
    }
}

/* ---- the direct variant ---------------------------------------------------- */

static void test_direct(void) {
    static const int sizes[] = { 4, 7 };
    int tok[CAP], tgt[CAP], dtok[CAP], dtgt[CAP];
    Example ex = { .tokens = tok, .targets = tgt }, dx = { .tokens = dtok, .targets = dtgt };
    for (int z = 0; z < 2; z++) {
        int l = sizes[z], same = 0, scored_ok = 0;
        EdParams p = { l, 8, 0, 0, 0, 0 }, pd = { l, 8, 0, 1, 0, 0 };
        CHECK(ed_max_len(&pd) == 2 * l + 6, "direct max_len %d", ed_max_len(&pd));
        Rng a = rng_stream(SEED, 300 + (uint64_t)l), b = a;
        Tally t;
        memset(&t, 0, sizeof t);
        for (int k = 0; k < 2000; k++) {
            ed_sample(&p, &a, &ex);
            ed_sample(&pd, &b, &dx);
            verify(&dx, l, 0, 1, 60, &t);
            same += ex.prompt_len == dx.prompt_len &&
                    memcmp(tok, dtok, (size_t)ex.prompt_len * sizeof *tok) == 0 &&
                    dtok[dx.prompt_len] == tok[ex.len - 2];
            int scored = 0;
            for (int i = 0; i < dx.len; i++) scored += dtgt[i] != DATASET_IGNORE;
            scored_ok += scored == 2;
        }
        char what[64];
        snprintf(what, sizeof what, "direct l = %d", l);
        check_tally(&t, what);
        CHECK(same == 2000, "direct l = %d: %d of 2000 problems equal to the CoT variant's", l, same);
        CHECK(scored_ok == 2000, "direct l = %d: %d examples with exactly 2 scored positions", l, scored_ok);
        CHECK(t.max_len_seen == 2 * l + 6, "direct l = %d: longest %d", l, t.max_len_seen);
    }
}

/* ---- answer extraction on generated sequences ------------------------------ */

static void test_extract(void) {
    int tok[CAP], tgt[CAP], g[CAP + 8], s, a;
    EdParams p = { 4, 8, 0, 0, 0, 0 };
    Example ex = { .tokens = tok, .targets = tgt };
    Rng rng = rng_stream(SEED, 400);
    ed_sample(&p, &rng, &ex);
    int len = ex.len, pl = ex.prompt_len;
    CHECK(ed_extract_answer(&p, tok, len, &s, &a) == 1 && s == len - 2 && a == 1, "gold");
    memcpy(g, tok, sizeof(int) * (size_t)len);
    g[len] = 2; g[len + 1] = 40;
    CHECK(ed_extract_answer(&p, g, len + 2, &s, &a) == 1 && s == len - 2, "junk after <eos>");
    CHECK(ed_extract_answer(&p, g, len - 1, &s, &a) == 0, "no <eos> (capped)");
    g[len - 2] = 4;                                  /* "… , <eos>": a comma is no answer */
    CHECK(ed_extract_answer(&p, g, len, &s, &a) == 0, "comma before <eos>");
    g[len - 2] = 5 + 3;                              /* the letter d */
    CHECK(ed_extract_answer(&p, g, len, &s, &a) == 0, "letter before <eos>");
    g[len - 2] = 1;
    CHECK(ed_extract_answer(&p, g, len, &s, &a) == 0, "<sep> before <eos>");
    g[len - 2] = 31 + 59;                            /* the largest number token */
    CHECK(ed_extract_answer(&p, g, len, &s, &a) == 1 && s == len - 2, "number 59");
    g[len - 2] = 31 + 60;                            /* outside the vocabulary */
    CHECK(ed_extract_answer(&p, g, len, &s, &a) == 0, "token past the vocabulary");
    g[pl] = 2;
    CHECK(ed_extract_answer(&p, g, len, &s, &a) == 0, "<eos> right after the prompt");
    g[pl] = 31 + 7; g[pl + 1] = 2;                   /* a one-token "chain" */
    CHECK(ed_extract_answer(&p, g, len, &s, &a) == 1 && s == pl, "short generation");
    memcpy(g, tok, sizeof(int) * (size_t)pl);
    g[pl - 1] = 3;                                   /* prompt without <sep> */
    g[pl] = 31 + 7; g[pl + 1] = 2;
    CHECK(ed_extract_answer(&p, g, pl + 2, &s, &a) == 0, "no <sep>");
    EdParams pd = { 4, 8, 0, 1, 0, 0 };
    ed_sample(&pd, &rng, &ex);
    CHECK(ed_extract_answer(&pd, tok, ex.len, &s, &a) == 1 && s == ex.prompt_len && s == ex.answer_start,
          "direct gold");
}

/* ---- determinism, parameters, names, keys --------------------------------- */

static void test_determinism(void) {
    EdParams p = { 7, 8, 0, 0, 0, 0 };
    int t1[CAP], g1[CAP], t2[CAP], g2[CAP];
    Example x = { .tokens = t1, .targets = g1 }, y = { .tokens = t2, .targets = g2 };
    Rng a = rng_stream(SEED, 500), b = rng_stream(SEED, 500), c = rng_stream(SEED + 1, 500);
    int same = 1, differ = 0;
    for (int k = 0; k < 200; k++) {
        ed_sample(&p, &a, &x);
        ed_sample(&p, &b, &y);
        size_t bytes = (size_t)x.len * sizeof(int);
        same &= x.len == y.len && memcmp(t1, t2, bytes) == 0 && memcmp(g1, g2, bytes) == 0;
        ed_sample(&p, &c, &y);
        differ += x.prompt_len != y.prompt_len || memcmp(t1, t2, (size_t)x.prompt_len * sizeof(int)) != 0;
    }
    CHECK(same, "same stream, different examples");
    CHECK(differ == 200, "another seed repeated %d prompts", 200 - differ);
}

static void expect_error(EdParams p, const char *name) {
    AlError err = { 0 };
    int rc = ed_check(&p, &err);
    CHECK(rc == 2 && err.code == 2 && strstr(err.msg, name) != NULL,
          "{%d, %d, %d, %d, %d}: rc %d, message '%s' should name %s", p.length, p.using, p.num_range,
          p.direct, p.uniform_costs, rc, err.msg, name);
}

static void test_params(void) {
    expect_error((EdParams){ 3, 8, 0, 0, 0, 0 }, "length");
    expect_error((EdParams){ ED_MAX_LENGTH + 1, 8, 0, 0, 0, 0 }, "length");
    expect_error((EdParams){ 6, 0, 0, 0, 0, 0 }, "using");
    expect_error((EdParams){ 6, 25, 0, 0, 0, 0 }, "using");
    expect_error((EdParams){ 4, 8, 14, 0, 0, 0 }, "num_range");     /* values reach 3*4+2 = 14 */
    expect_error((EdParams){ 4, 8, -3, 0, 0, 0 }, "num_range");
    expect_error((EdParams){ 4, 8, 10001, 0, 0, 0 }, "num_range");
    expect_error((EdParams){ 20, 8, 60, 0, 0, 0 }, "num_range");    /* 62 possible at l = 20 */
    expect_error((EdParams){ 4, 8, 0, 2, 0, 0 }, "direct");
    expect_error((EdParams){ 4, 8, 0, 0, -1, 0 }, "uniform_costs");
    AlError err = { 0 };
    CHECK(ed_check(&(EdParams){ 4, 8, 15, 0, 0, 0 }, &err) == 0, "num_range 15 at l = 4: %s", err.msg);
    CHECK(ed_check(&(EdParams){ 4, 8, 7, 0, 1, 0 }, &err) == 0, "unit costs need only l+3: %s", err.msg);
    CHECK(ed_check(&(EdParams){ 4, 24, 0, 0, 0, 0 }, &err) == 0, "using 24 (26 letters): %s", err.msg);
    /* The public 60 integers (vocabulary 91) for every l ≤ 19; widened at l = 20. */
    CHECK(ed_num_range(&(EdParams){ 19, 8, 0, 0, 0, 0 }) == 60, "l = 19");
    CHECK(ed_num_range(&(EdParams){ 20, 8, 0, 0, 0, 0 }) == 63 && ed_vocab_size(&(EdParams){ 20, 8, 0, 0, 0, 0 }) == 94,
          "l = 20 widened to 63");
    CHECK(ed_num_range(&(EdParams){ 20, 8, 0, 0, 1, 0 }) == 60, "l = 20, unit costs");
    /* Paper 004's maximum CoT lengths 72/210/342/506 (without <eos>). */
    static const int paper_l[] = { 6, 12, 16, 20 }, paper_L[] = { 72, 210, 342, 506 };
    for (int i = 0; i < 4; i++)
        CHECK(ed_max_len(&(EdParams){ paper_l[i], 8, 0, 0, 0, 0 }) == paper_L[i] + 1, "paper l = %d", paper_l[i]);
    /* Feng's direct MAXLEN 31/39/47 for l = 12/16/20 is our max_len + 1 (its loader drops a column). */
    CHECK(ed_max_len(&(EdParams){ 12, 8, 0, 1, 0, 0 }) == 30, "direct l = 12");
}

static void test_names_and_key(void) {
    EdParams p = { 4, 8, 0, 0, 0, 0 };
    static const char *const special[] = { "<pad>", "<sep>", "<eos>", "|", "," };
    int bad = 0;
    for (int i = 0; i < 5; i++) bad += strcmp(ed_token_name(&p, i), special[i]) != 0;
    for (int c = 0; c < 26; c++) {
        char want[2] = { (char)('a' + c), 0 };
        bad += strcmp(ed_token_name(&p, 5 + c), want) != 0;
    }
    char buf[8];
    for (int v = 0; v < 60; v++) {
        snprintf(buf, sizeof buf, "%d", v);
        bad += strcmp(ed_token_name(&p, 31 + v), buf) != 0;
    }
    bad += strcmp(ed_token_name(&p, 91), "?") != 0 || strcmp(ed_token_name(&p, -2), "?") != 0;
    CHECK(bad == 0, "%d token names wrong", bad);

    int tok[CAP], tgt[CAP], key[CAP];
    Example ex = { .tokens = tok, .targets = tgt };
    Rng rng = rng_stream(SEED, 600);
    int short_prompt = 0, ok = 1;
    for (int k = 0; k < 200; k++) {
        ed_sample(&p, &rng, &ex);
        ed_prompt_key(&p, &ex, key);
        ok &= memcmp(key, tok, sizeof(int) * (size_t)ex.prompt_len) == 0;
        for (int i = ex.prompt_len; i < ed_prompt_key_len(&p); i++) ok &= key[i] == 0;
        short_prompt += ex.prompt_len < ed_prompt_key_len(&p);
    }
    CHECK(ed_prompt_key_len(&p) == 12, "key length %d", ed_prompt_key_len(&p));
    CHECK(ok && short_prompt > 0, "key = prompt padded with <pad>");

    printf("ED l=4:");
    for (int i = 0; i < ex.len; i++) printf(" %s", ed_token_name(&p, tok[i]));
    printf("\n");
}

int main(void) {
    CHECK(ED_PAD == 0 && ED_SEP == 1 && ED_EOS == 2 && ED_BAR == 3 && ED_COMMA == 4 &&
          ED_LETTER0 == 5 && ED_NUM0 == 31, "public token ids");
    test_table_golden();
    test_table_extremes();
    test_table_random();
    test_samples(&ED_LAW_SMALL, 20000);
    test_samples(&ED_LAW_LARGE, 20000);
    test_other_sizes();
    test_direct();
    test_extract();
    test_determinism();
    test_params();
    test_names_and_key();
    return check_exit("test_cot_ed");
}
