/* test_khop.c — the k-hop induction-head generator against an independent checker.
 *
 * The checker shares no code with the generator: it decodes examples from the
 * token layout documented in khop.h, and re-derives every label by the public
 * definition read literally — from position p, search leftwards for the last
 * earlier occurrence of the current symbol (Python's s[:p].rfind(c)), then step
 * one right — with no previous-occurrence table and no in-place tricks.
 * Hand-worked strings pin the definition itself (their labels were also checked
 * against the public Python loop). */
#include "attnlab/data/dataset.h"
#include "attnlab/data/khop.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

#define SEED 20240612u
#define GUARD 0x5eed5eed   /* written past the buffer: must survive every sample */

/* ---- the independent checker ------------------------------------------- */

enum { NO_POS = -1 };

/* Index of the last c in s[0..p), or NO_POS. */
static int rfind_before(const int *s, int p, int c) {
    for (int q = p - 1; q >= 0; q--)
        if (s[q] == c) return q;
    return NO_POS;
}

/* The k-hop label of position t of s: a symbol, or null_id. */
static int brute_label(const int *s, int t, int hops, int null_id) {
    int p = t;
    for (int h = 0; h < hops; h++) {
        int q = rfind_before(s, p, s[p]);
        if (q == NO_POS) return null_id;
        p = q + 1;
    }
    return s[p];
}

/* Sum and sum of squares of a per-sample statistic with expectation 0. */
typedef struct ZStat { double sum, sumsq; long n; } ZStat;

static void z_add(ZStat *z, double d) { z->sum += d; z->sumsq += d * d; z->n++; }

/* |mean| / standard error; 0 for a statistic that never varied. */
static double z_score(const ZStat *z) {
    double mean = z->sum / (double)z->n, var = z->sumsq / (double)z->n - mean * mean;
    if (var <= 0) return mean == 0 ? 0 : 1e9;
    return fabs(mean) / sqrt(var / (double)z->n);
}

/* Counts of k equally likely outcomes over n draws: each within 5 sigma. */
static void check_uniform(const long *count, int k, const char *what) {
    long n = 0;
    for (int i = 0; i < k; i++) n += count[i];
    double e = (double)n / k, sd = sqrt((double)n * (1.0 / k) * (1.0 - 1.0 / k));
    int bad = 0;
    for (int i = 0; i < k; i++) bad += fabs((double)count[i] - e) > 5 * sd + 1e-9;
    CHECK(bad == 0 && n > 0, "%s: %d of %d outcomes off uniform (n = %ld, e = %.1f)", what, bad, k, n, e);
}

/* ---- hand-worked strings ------------------------------------------------ */

static void check_hand(const int *s, int n, int alphabet, int hops, const int *want, const char *what) {
    int out[16];
    khop_labels(s, n, alphabet, hops, out);
    CHECK(memcmp(out, want, (size_t)n * sizeof *out) == 0, "%s, %d hops", what, hops);
}

static void test_hand(void) {
    enum { a, b, c, NUL };   /* alphabet 3: the null class is 3 */
    static const int s[8] = { a, b, c, a, b, a, c, b };        /* "abcabacb" */
    static const int h0[8] = { a, b, c, a, b, a, c, b };
    static const int h1[8] = { NUL, NUL, NUL, b, c, b, a, a };  /* "~~~bcbaa" */
    static const int h2[8] = { NUL, NUL, NUL, NUL, NUL, c, b, b };
    static const int h3[8] = { NUL, NUL, NUL, NUL, NUL, NUL, NUL, c };
    check_hand(s, 8, 3, 0, h0, "abcabacb");
    check_hand(s, 8, 3, 1, h1, "abcabacb");
    check_hand(s, 8, 3, 2, h2, "abcabacb");
    check_hand(s, 8, 3, 3, h3, "abcabacb");
    for (int h = 4; h < 10; h++) {
        static const int none[8] = { NUL, NUL, NUL, NUL, NUL, NUL, NUL, NUL };
        check_hand(s, 8, 3, h, none, "abcabacb, past the longest chain");
    }
    /* Equal neighbours (never sampled, but khop_labels takes any string): the hop
     * from 1 finds a at 0 and lands on 1 again, as Python's rfind does. */
    static const int aa[2] = { a, a }, aa_want[2] = { NUL, a };
    for (int h = 1; h < 5; h++) check_hand(aa, 2, 3, h, aa_want, "aa");
    static const int one[1] = { b }, one0[1] = { b }, one1[1] = { NUL };
    check_hand(one, 1, 3, 0, one0, "b");
    check_hand(one, 1, 3, 1, one1, "b");
}

/* ---- khop_labels on arbitrary strings ----------------------------------- */

static void test_labels_random(void) {
    Rng rng = rng_stream(SEED, 1);
    enum { NMAX = 64 };
    int s[NMAX], out[NMAX], bad = 0, cases = 0;
    for (int trial = 0; trial < 20000; trial++) {
        int alphabet = 1 + (int)rng_below(&rng, 12), n = 1 + (int)rng_below(&rng, NMAX);
        int hops = (int)rng_below(&rng, 20);
        for (int t = 0; t < n; t++) s[t] = (int)rng_below(&rng, (uint32_t)alphabet);
        khop_labels(s, n, alphabet, hops, out);
        for (int t = 0; t < n; t++) bad += out[t] != brute_label(s, t, hops, alphabet);
        cases++;
    }
    CHECK(bad == 0, "%d labels of %d random strings (equal neighbours allowed) differ", bad, cases);

    /* The largest alphabet: the last-seen table's top entry is used. */
    int big[6] = { KHOP_MAX_ALPHABET - 1, 0, KHOP_MAX_ALPHABET - 1, 5, 0, KHOP_MAX_ALPHABET - 1 };
    khop_labels(big, 6, KHOP_MAX_ALPHABET, 1, out);
    int ok = 1;
    for (int t = 0; t < 6; t++) ok &= out[t] == brute_label(big, t, 1, KHOP_MAX_ALPHABET);
    CHECK(ok && out[2] == 0 && out[5] == 5, "alphabet %d: labels wrong", KHOP_MAX_ALPHABET);
}

/* ---- sampled examples --------------------------------------------------- */

typedef struct Tally {
    long hops[KHOP_MAX_HOPS + 1];    /* examples per hop count */
    long first[64];                  /* s_0 per symbol */
    long trans[64][64];              /* (s_{t−1}, s_t) pairs */
    ZStat label_share[64];           /* per symbol: its labels minus non-null/A, per example */
    long nulls, labels;
} Tally;

/* Re-derives one example from its tokens; returns the number of wrong labels. */
static int verify_example(const KhopParams *p, const Example *ex, int want_hops, Tally *ty,
                          int *bad_shape) {
    const int A = p->alphabet, n = p->seq_len - 1, null_id = A;
    const int *s = ex->tokens + 1;
    int hops = ex->tokens[0] - (A + 1);   /* decoded from the documented layout */
    *bad_shape += ex->len != p->seq_len || ex->prompt_len != 0 || ex->answer_start != -1 ||
                  ex->answer_len != 0 || ex->group != hops || ex->targets[0] != DATASET_IGNORE ||
                  hops < p->min_hops || hops > p->max_hops ||
                  (want_hops >= 0 && hops != want_hops) ||
                  ex->tokens[p->seq_len] != GUARD || ex->targets[p->seq_len] != GUARD;
    if (hops < 0 || hops > p->max_hops) return n;
    ty->hops[hops]++;
    int wrong = 0, count[64] = { 0 }, non_null = 0;
    for (int t = 0; t < n; t++) {
        if (s[t] < 0 || s[t] >= A || (t > 0 && s[t] == s[t - 1])) { (*bad_shape)++; return n; }
        int y = ex->targets[1 + t];
        wrong += y != brute_label(s, t, hops, null_id);
        ty->labels++;
        if (y == null_id) ty->nulls++;
        else if (y >= 0 && y < A) { count[y]++; non_null++; }
        if (A <= 64) {
            if (t == 0) ty->first[s[0]]++;
            else ty->trans[s[t - 1]][s[t]]++;
        }
    }
    if (A <= 64)
        for (int a = 0; a < A; a++) z_add(&ty->label_share[a], count[a] - (double)non_null / A);
    return wrong;
}

/* Draws n_samples examples (hops = want_hops, −1 to draw) and checks all of them. */
static void run_setting(const KhopParams *p, int want_hops, int n_samples, uint64_t stream,
                        const char *what) {
    AlError err = { 0 };
    CHECK(khop_check(p, &err) == 0 && err.code == 0, "%s: rejected: %s", what, err.msg);
    CHECK(khop_max_len(p) == p->seq_len && khop_n_classes(p) == p->alphabet + 1 &&
          khop_vocab_size(p) == p->alphabet + 2 + p->max_hops && khop_null_class(p) == p->alphabet,
          "%s: sizes", what);
    int cap = khop_max_len(p);
    int *tok = malloc((size_t)(cap + 1) * sizeof *tok), *tgt = malloc((size_t)(cap + 1) * sizeof *tgt);
    Tally *ty = calloc(1, sizeof *ty);
    Example ex = { .tokens = tok, .targets = tgt };
    Rng rng = rng_stream(SEED, stream);
    long wrong = 0;
    int bad_shape = 0;
    for (int i = 0; i < n_samples; i++) {
        tok[cap] = tgt[cap] = GUARD;
        khop_sample(p, &rng, want_hops, &ex);
        wrong += verify_example(p, &ex, want_hops, ty, &bad_shape);
    }
    CHECK(wrong == 0, "%s: %ld of %ld labels differ from the brute-force check", what, wrong, ty->labels);
    CHECK(bad_shape == 0, "%s: %d malformed examples (length, fields, hop token, guard, "
          "symbol range or equal neighbours)", what, bad_shape);

    char msg[160];
    if (want_hops < 0) {
        snprintf(msg, sizeof msg, "%s: hop counts", what);
        check_uniform(ty->hops + p->min_hops, p->max_hops - p->min_hops + 1, msg);
    }
    if (p->alphabet <= 64) {
        snprintf(msg, sizeof msg, "%s: first symbol", what);
        check_uniform(ty->first, p->alphabet, msg);
        /* Each successor uniform over the A − 1 other symbols. */
        for (int a = 0; a < p->alphabet && p->alphabet > 2 && p->seq_len > 2; a++) {
            long row[63];
            for (int b = 0, k = 0; b < p->alphabet; b++)
                if (b != a) row[k++] = ty->trans[a][b];
            snprintf(msg, sizeof msg, "%s: successors of symbol %d", what, a);
            check_uniform(row, p->alphabet - 1, msg);
        }
        /* Non-null labels spread evenly over Σ (the law is symmetric in the symbols). */
        double worst = 0;
        for (int a = 0; a < p->alphabet; a++) worst = fmax(worst, z_score(&ty->label_share[a]));
        CHECK(worst < 5, "%s: label shares over the alphabet off by %.1f standard errors", what, worst);
    }
    printf("%s: %d examples, %ld labels, %ld null (%.2f%%)\n", what, n_samples, ty->labels,
           ty->nulls, 100.0 * (double)ty->nulls / (double)ty->labels);
    free(ty);
    free(tok);
    free(tgt);
}

static void test_settings(void) {
    /* ANNA (paper 000 App. G.2): N = 100 tokens, |Σ| = 4, training k ∈ {0, 1}, test k = 1. */
    KhopParams anna = { .alphabet = 4, .seq_len = 100, .min_hops = 0, .max_hops = 1 };
    run_setting(&anna, -1, 6000, 2, "ANNA train (k in {0,1})");
    run_setting(&anna, 1, 3000, 3, "ANNA test (k = 1)");
    /* Sanford et al. runs: public seq_len 100 → 99 tokens, hops 0..16. */
    KhopParams sht = { .alphabet = 4, .seq_len = 99, .min_hops = 0, .max_hops = 16 };
    run_setting(&sht, -1, 6000, 4, "Sanford et al. (hops 0..16)");
    run_setting(&sht, 16, 500, 5, "Sanford et al. (k = 16)");
    KhopParams shifted = { .alphabet = 3, .seq_len = 40, .min_hops = 2, .max_hops = 5 };
    run_setting(&shifted, -1, 4000, 6, "alphabet 3, hops 2..5");
    KhopParams wide = { .alphabet = 26, .seq_len = 300, .min_hops = 1, .max_hops = 4 };
    run_setting(&wide, -1, 1500, 7, "alphabet 26, 300 tokens");
    /* The smallest legal settings: two symbols alternate; one symbol after the hop token. */
    KhopParams binary = { .alphabet = 2, .seq_len = 20, .min_hops = 0, .max_hops = 3 };
    run_setting(&binary, -1, 2000, 8, "alphabet 2");
    KhopParams shortest = { .alphabet = 5, .seq_len = 2, .min_hops = 0, .max_hops = 2 };
    run_setting(&shortest, -1, 2000, 9, "seq_len 2");
}

/* ANNA specifics: the test's hop token is the training's 1-hop token; 0 hops copies
 * the symbol; with 1 hop the nulls are exactly the first occurrences. */
static void test_anna_variant(void) {
    KhopParams train = { 4, 100, 0, 1, 0 }, test_only = { 4, 100, 1, 1, 0 };
    CHECK(khop_hop_token(&train, 1) == khop_hop_token(&test_only, 1),
          "1-hop token depends on the hop range: %d vs %d", khop_hop_token(&train, 1),
          khop_hop_token(&test_only, 1));
    CHECK(khop_vocab_size(&train) == 7 && khop_n_classes(&train) == 5, "ANNA sizes %d %d",
          khop_vocab_size(&train), khop_n_classes(&train));
    int tok[100], tgt[100], bad0 = 0, bad1 = 0;
    Example ex = { .tokens = tok, .targets = tgt };
    Rng rng = rng_stream(SEED, 10);
    for (int i = 0; i < 2000; i++) {
        khop_sample(&train, &rng, 0, &ex);
        for (int t = 1; t < 100; t++) bad0 += tgt[t] != tok[t];
        khop_sample(&test_only, &rng, -1, &ex);
        int seen[4] = { 0 }, firsts = 0, nulls = 0;
        for (int t = 1; t < 100; t++) {
            firsts += !seen[tok[t]];
            seen[tok[t]] = 1;
            nulls += tgt[t] == 4;
        }
        bad1 += nulls != firsts || ex.group != 1 || tok[0] != 6;
    }
    CHECK(bad0 == 0, "0 hops: %d labels are not the symbol itself", bad0);
    CHECK(bad1 == 0, "1 hop: %d examples whose nulls are not the first occurrences", bad1);
}

/* score_first: position 0's target is the null class, and the draw is otherwise
 * the same (same stream, same tokens and other targets) as without it. */
static void test_score_first(void) {
    KhopParams off = { 4, 30, 0, 1, 0 }, on = { 4, 30, 0, 1, 1 };
    int ta[30], ga[30], tb[30], gb[30], bad = 0;
    Rng ra = rng_stream(SEED, 12), rb = rng_stream(SEED, 12);
    for (int i = 0; i < 200; i++) {
        Example a = { .tokens = ta, .targets = ga }, b = { .tokens = tb, .targets = gb };
        khop_sample(&off, &ra, -1, &a);
        khop_sample(&on, &rb, -1, &b);
        bad += ga[0] != DATASET_IGNORE || gb[0] != khop_null_class(&on);
        bad += memcmp(ta, tb, sizeof ta) != 0 || memcmp(ga + 1, gb + 1, sizeof ga - sizeof ga[0]) != 0;
    }
    CHECK(bad == 0, "score_first: %d differences besides position 0's target", bad);
}

/* ---- determinism -------------------------------------------------------- */

static void draw_many(const KhopParams *p, uint64_t seed, int n, int hops, int *tok, int *tgt) {
    Rng rng = rng_stream(seed, 11);
    for (int i = 0; i < n; i++) {
        Example ex = { .tokens = tok + (size_t)i * p->seq_len, .targets = tgt + (size_t)i * p->seq_len };
        khop_sample(p, &rng, hops, &ex);
    }
}

static void test_determinism(void) {
    enum { N = 500 };
    KhopParams p = { 4, 64, 0, 8, 0 };
    size_t bytes = sizeof(int) * N * 64;
    int *t1 = malloc(bytes), *y1 = malloc(bytes), *t2 = malloc(bytes), *y2 = malloc(bytes);
    draw_many(&p, SEED, N, -1, t1, y1);
    draw_many(&p, SEED, N, -1, t2, y2);
    CHECK(memcmp(t1, t2, bytes) == 0 && memcmp(y1, y2, bytes) == 0, "same seed, different bytes");
    draw_many(&p, SEED + 1, N, -1, t2, y2);
    CHECK(memcmp(t1, t2, bytes) != 0, "other seed, same bytes");
    /* With the hop count fixed by the caller, too. */
    draw_many(&p, SEED, N, 3, t2, y2);
    draw_many(&p, SEED, N, 3, t1, y1);
    CHECK(memcmp(t1, t2, bytes) == 0 && memcmp(y1, y2, bytes) == 0, "fixed hops: same seed, different bytes");
    free(t1); free(y1); free(t2); free(y2);
}

/* ---- bad parameters ----------------------------------------------------- */

static void expect_bad(KhopParams p, const char *word, const char *what) {
    AlError err = { 0 };
    int rc = khop_check(&p, &err);
    CHECK(rc == 2 && err.code == 2, "%s: rc %d", what, rc);
    CHECK(strstr(err.msg, word) != NULL && strncmp(err.msg, "khop: ", 6) == 0,
          "%s: message does not name '%s': %s", what, word, err.msg);
}

static void test_errors(void) {
    expect_bad((KhopParams){ 1, 100, 0, 1, 0 }, "alphabet", "alphabet 1");
    expect_bad((KhopParams){ 0, 100, 0, 1, 0 }, "alphabet", "alphabet 0");
    expect_bad((KhopParams){ KHOP_MAX_ALPHABET + 1, 100, 0, 1, 0 }, "alphabet", "alphabet too big");
    expect_bad((KhopParams){ 4, 1, 0, 1, 0 }, "seq_len", "seq_len 1");
    expect_bad((KhopParams){ 4, 0, 0, 1, 0 }, "seq_len", "seq_len 0");
    expect_bad((KhopParams){ 4, 100, -1, 1, 0 }, "min_hops", "min_hops -1");
    expect_bad((KhopParams){ 4, 100, 3, 2, 0 }, "max_hops", "max_hops < min_hops");
    expect_bad((KhopParams){ 4, 100, 0, KHOP_MAX_HOPS + 1, 0 }, "max_hops", "max_hops too big");
    /* The alphabet message says why two symbols are needed. */
    AlError err = { 0 };
    khop_check(&(KhopParams){ 1, 9, 0, 0, 0 }, &err);
    CHECK(strstr(err.msg, "differ") != NULL, "alphabet message does not say why: %s", err.msg);
    AlError ok = { 0 };
    KhopParams edge = { 2, 2, 0, KHOP_MAX_HOPS, 0 };
    CHECK(khop_check(&edge, &ok) == 0 && ok.code == 0,
          "smallest alphabet and length, largest max_hops rejected: %s", ok.msg);
}

int main(void) {
    test_hand();
    test_labels_random();
    test_settings();
    test_anna_variant();
    test_score_first();
    test_determinism();
    test_errors();
    return check_exit("test_khop");
}
