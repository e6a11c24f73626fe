/* test_cot_lis.c — the LIS chain-of-thought generator against an independent checker.
 *
 * The checker shares no code with the generator: dp values come from the public
 * O(n²) double loop (the generator uses patience sorting) and, at n = 10, also
 * from enumerating all 2^n subsequences; the format is checked position by
 * position from the task definition (fixed offsets n, 2n + 1, …), never from the
 * Example's own prompt_len / answer_start.  The input law is compared with
 * statistics of a separate re-implementation of the public LIS/data.py (Python,
 * 200 000 draws at n = 10 and 50 000 at n = 40). */
#include "attnlab/data/cot_lis.h"
#include "attnlab/data/dataset.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SEED 20240612u
enum { MAXN = 256, CAP = 2 * MAXN + 4 };

/* ---- the independent checker ------------------------------------------- */

/* The public solve(): dp[l] = max(dp[i] + 1) over i < l with v[i] < v[l], else 1. */
static int brute_dp(const int *v, int n, int *dp) {
    int best = 0;
    for (int l = 0; l < n; l++) {
        dp[l] = 1;
        for (int i = 0; i < l; i++)
            if (v[l] > v[i] && dp[i] + 1 > dp[l]) dp[l] = dp[i] + 1;
        if (dp[l] > best) best = dp[l];
    }
    return best;
}

/* Every subset of positions, as a bit mask: the longest strictly increasing one
 * ending at each position.  n ≤ 16. */
static void subset_dp(const int *v, int n, int *dp) {
    for (int i = 0; i < n; i++) dp[i] = 0;
    for (unsigned mask = 1; mask < (1u << n); mask++) {
        int last = -1, count = 0, ok = 1;
        for (int i = 0; i < n && ok; i++) {
            if (!(mask >> i & 1)) continue;
            ok = last < 0 || v[last] < v[i];
            last = i;
            count++;
        }
        if (ok && count > dp[last]) dp[last] = count;
    }
}

static int expected_range(int n) { return n + 150 > 2 * n + 1 ? n + 150 : 2 * n + 1; }

typedef struct Tally {
    long long bad_len, bad_input, bad_sep, bad_dp, bad_subset, bad_answer, bad_eos;
    long long bad_targets, bad_meta, bad_extract;
    int min_input, max_input;     /* values, not tokens */
    double sum_ans, sum_ans2;
    int n_ge_half, count;
} Tally;

/* Checks one example of length n, number range r, in either variant. */
static void verify(const Example *ex, int n, int r, int direct, Tally *t) {
    int len = direct ? n + 3 : 2 * n + 4, v[MAXN], dp[MAXN], sdp[MAXN];
    t->count++;
    if (ex->len != len) { t->bad_len++; return; }
    for (int i = 0; i < n; i++) {
        v[i] = ex->tokens[i] - 3;
        t->bad_input += v[i] < n + 1 || v[i] >= r;
        if (v[i] < t->min_input) t->min_input = v[i];
        if (v[i] > t->max_input) t->max_input = v[i];
    }
    int ans = brute_dp(v, n, dp);
    t->bad_sep += ex->tokens[n] != 1;
    if (!direct) {
        for (int i = 0; i < n; i++) t->bad_dp += ex->tokens[n + 1 + i] != 3 + dp[i];
        t->bad_sep += ex->tokens[2 * n + 1] != 1;
        if (n <= 16) {
            subset_dp(v, n, sdp);
            for (int i = 0; i < n; i++) t->bad_subset += sdp[i] != dp[i];
        }
    }
    t->bad_answer += ex->tokens[len - 2] != 3 + ans;
    t->bad_eos += ex->tokens[len - 1] != 2;
    for (int i = 0; i < len; i++) {
        int want = i >= n && i <= len - 2 ? ex->tokens[i + 1] : -1;
        t->bad_targets += ex->targets[i] != want;
    }
    t->bad_meta += ex->prompt_len != n + 1 || ex->answer_start != len - 2 || ex->answer_len != 1 ||
                   ex->group != 0;
    int s = -1, a = -1;
    LisParams p = { n, r, direct };
    t->bad_extract += !lis_extract_answer(&p, ex->tokens, ex->len, &s, &a) || s != len - 2 || a != 1;
    t->sum_ans += ans;
    t->sum_ans2 += (double)ans * ans;
    t->n_ge_half += ans >= n / 2;
}

static void check_tally(const Tally *t, const char *what) {
    CHECK(t->bad_len == 0, "%s: %lld examples of the wrong length", what, t->bad_len);
    CHECK(t->bad_input == 0, "%s: %lld input values outside [n+1, number_range)", what, t->bad_input);
    CHECK(t->bad_sep == 0, "%s: %lld misplaced <sep>", what, t->bad_sep);
    CHECK(t->bad_dp == 0, "%s: %lld dp tokens differ from the O(n^2) dp", what, t->bad_dp);
    CHECK(t->bad_subset == 0, "%s: %lld dp values differ from subset enumeration", what, t->bad_subset);
    CHECK(t->bad_answer == 0, "%s: %lld wrong answers", what, t->bad_answer);
    CHECK(t->bad_eos == 0, "%s: %lld missing <eos>", what, t->bad_eos);
    CHECK(t->bad_targets == 0, "%s: %lld targets differ from next-token-after-first-<sep>", what,
          t->bad_targets);
    CHECK(t->bad_meta == 0, "%s: %lld wrong prompt_len / answer span / group", what, t->bad_meta);
    CHECK(t->bad_extract == 0, "%s: %lld gold sequences where extraction missed the answer", what,
          t->bad_extract);
}

static Tally tally_new(void) {
    Tally t;
    memset(&t, 0, sizeof t);
    t.min_input = 1 << 30;
    t.max_input = -1;
    return t;
}

static double now_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- dp ------------------------------------------------------------------ */

static void test_dp(void) {
    /* The worked example of the reference notes (n = 10, number_range 160). */
    static const int v[10] = { 18, 130, 115, 146, 24, 74, 51, 39, 51, 124 };
    static const int want[10] = { 1, 2, 2, 3, 2, 3, 3, 3, 4, 5 };
    int dp[MAXN], bdp[MAXN], a[64];
    CHECK(lis_dp(v, 10, dp) == 5 && memcmp(dp, want, sizeof want) == 0, "worked example");
    /* Many repeats (values 0..7) make strictness matter. */
    Rng rng = rng_stream(SEED, 1);
    int bad = 0;
    for (int k = 0; k < 20000; k++) {
        int n = (int)rng_below(&rng, 65), range = 1 + (int)rng_below(&rng, 8);
        for (int i = 0; i < n; i++) a[i] = (int)rng_below(&rng, (uint32_t)range);
        int best = lis_dp(a, n, dp);
        bad += best != brute_dp(a, n, bdp) || memcmp(dp, bdp, (size_t)n * sizeof *dp) != 0;
    }
    CHECK(bad == 0, "%d random arrays: lis_dp differs from the O(n^2) dp", bad);
    CHECK(lis_dp(a, 0, dp) == 0, "empty input");
}

/* ---- samples at the scaled sizes ----------------------------------------- */

/* Mean answer and P(answer ≥ n/2) of the public law (Python re-implementation). */
typedef struct Ref { int n; double mean, sd, p_half; long long ref_draws; } Ref;

static void test_samples(const Ref *ref, int draws) {
    int n = ref->n, r = expected_range(n);
    LisParams p = { n, 0, 0 };
    AlError err = { 0 };
    CHECK(lis_check(&p, &err) == 0, "n = %d: %s", n, err.msg);
    CHECK(lis_number_range(&p) == r && lis_vocab_size(&p) == r + 3, "n = %d: range %d", n,
          lis_number_range(&p));
    CHECK(lis_max_len(&p) == 2 * n + 4, "n = %d: max_len %d", n, lis_max_len(&p));
    int tok[CAP], tgt[CAP];
    Example ex = { .tokens = tok, .targets = tgt };
    Tally t = tally_new();
    Rng rng = rng_stream(SEED, 100 + (uint64_t)n);
    double t0 = now_sec();
    for (int k = 0; k < draws; k++) {
        lis_sample(&p, &rng, &ex);
        verify(&ex, n, r, 0, &t);
    }
    double sec = now_sec() - t0;
    char what[64];
    snprintf(what, sizeof what, "n = %d", n);
    check_tally(&t, what);
    /* The whole value range is used, and nothing outside it (checked above). */
    CHECK(t.min_input == n + 1 && t.max_input == r - 1, "n = %d: inputs span [%d, %d], want [%d, %d]",
          n, t.min_input, t.max_input, n + 1, r - 1);
    double mean = t.sum_ans / draws, p_half = (double)t.n_ge_half / draws;
    /* 5 standard errors of the difference of two sample means / proportions. */
    double se = ref->sd * sqrt(1.0 / draws + 1.0 / (double)ref->ref_draws);
    double se_p = sqrt(ref->p_half * (1 - ref->p_half) * (1.0 / draws + 1.0 / (double)ref->ref_draws));
    CHECK(fabs(mean - ref->mean) < 5 * se, "n = %d: mean answer %.4f, public law %.4f (se %.4f)", n,
          mean, ref->mean, se);
    CHECK(fabs(p_half - ref->p_half) < 5 * se_p, "n = %d: P(answer >= n/2) %.4f, public law %.4f", n,
          p_half, ref->p_half);
    printf("LIS n=%d: %d samples in %.3f s (checker included), mean answer %.3f (public law %.3f), "
           "P(ans>=n/2) %.4f (%.4f)\n", n, draws, sec, mean, ref->mean, p_half, ref->p_half);
}

/* The other scaled sizes and the paper's sizes: format and labels only. */
static void test_other_sizes(void) {
    static const int sizes[] = { 20, 30, 110, 175, 250 };
    int tok[CAP], tgt[CAP];
    Example ex = { .tokens = tok, .targets = tgt };
    for (int s = 0; s < 5; s++) {
        int n = sizes[s], r = expected_range(n);
        LisParams p = { n, 0, 0 };
        AlError err = { 0 };
        CHECK(lis_check(&p, &err) == 0, "n = %d: %s", n, err.msg);
        Tally t = tally_new();
        Rng rng = rng_stream(SEED, 200 + (uint64_t)n);
        int draws = n <= 40 ? 3000 : 300;
        for (int k = 0; k < draws; k++) {
            lis_sample(&p, &rng, &ex);
            verify(&ex, n, r, 0, &t);
        }
        char what[64];
        snprintf(what, sizeof what, "n = %d", n);
        check_tally(&t, what);
    }
}

/* ---- the direct variant ---------------------------------------------------- */

static void test_direct(void) {
    static const int sizes[] = { 10, 40 };
    int tok[CAP], tgt[CAP], dtok[CAP], dtgt[CAP];
    Example ex = { .tokens = tok, .targets = tgt }, dx = { .tokens = dtok, .targets = dtgt };
    for (int s = 0; s < 2; s++) {
        int n = sizes[s], r = expected_range(n), same = 0;
        LisParams p = { n, 0, 0 }, pd = { n, 0, 1 };
        CHECK(lis_max_len(&pd) == n + 3, "direct max_len %d", lis_max_len(&pd));
        Rng a = rng_stream(SEED, 300 + (uint64_t)n), b = a;
        Tally t = tally_new();
        for (int k = 0; k < 2000; k++) {
            lis_sample(&p, &a, &ex);
            lis_sample(&pd, &b, &dx);
            verify(&dx, n, r, 1, &t);
            /* Same stream, same problem: prompt and answer agree with the CoT variant. */
            same += memcmp(tok, dtok, (size_t)(n + 1) * sizeof *tok) == 0 &&
                    dtok[n + 1] == tok[2 * n + 2];
        }
        char what[64];
        snprintf(what, sizeof what, "direct n = %d", n);
        check_tally(&t, what);
        CHECK(same == 2000, "direct n = %d: %d of 2000 problems equal to the CoT variant's", n, same);
        /* Exactly two scored positions: <sep> -> answer, answer -> <eos>. */
        int scored = 0;
        for (int i = 0; i < dx.len; i++) scored += dtgt[i] != DATASET_IGNORE;
        CHECK(scored == 2 && dtgt[n] == dtok[n + 1] && dtgt[n + 1] == 2, "direct targets");
    }
}

/* ---- answer extraction on generated sequences ------------------------------ */

static void test_extract(void) {
    int n = 10, tok[CAP], tgt[CAP], g[CAP + 8], s, a;
    LisParams p = { n, 0, 0 };
    Example ex = { .tokens = tok, .targets = tgt };
    Rng rng = rng_stream(SEED, 400);
    lis_sample(&p, &rng, &ex);
    int len = ex.len;   /* 24: answer at 22, <eos> at 23 */
    CHECK(lis_extract_answer(&p, tok, len, &s, &a) == 1 && s == 22 && a == 1, "gold: %d %d", s, a);

    memcpy(g, tok, sizeof(int) * (size_t)len);
    g[len] = 7; g[len + 1] = 2; g[len + 2] = 9;    /* junk after <eos> is ignored */
    CHECK(lis_extract_answer(&p, g, len + 3, &s, &a) == 1 && s == 22, "junk after <eos>");
    CHECK(lis_extract_answer(&p, g, len - 1, &s, &a) == 0, "no <eos> (capped) is malformed");
    g[22] = tok[22] == 3 + 1 ? 3 + 2 : 3 + 1;         /* a wrong but well-formed answer */
    CHECK(lis_extract_answer(&p, g, len, &s, &a) == 1 && s == 22 && g[s] != tok[22], "wrong answer");
    g[22] = 1;                                       /* "… <sep> <sep> <eos>": not a number */
    CHECK(lis_extract_answer(&p, g, len, &s, &a) == 0, "<sep> before <eos>");
    g[22] = 0;
    CHECK(lis_extract_answer(&p, g, len, &s, &a) == 0, "<pad> before <eos>");
    /* Shorter and longer chains: the answer is wherever <eos> is. */
    memcpy(g, tok, sizeof(int) * (size_t)(n + 1));
    g[n + 1] = 3 + 4; g[n + 2] = 2;
    CHECK(lis_extract_answer(&p, g, n + 3, &s, &a) == 1 && s == n + 1, "answer right after the prompt");
    memcpy(g, tok, sizeof(int) * (size_t)len);
    for (int i = len - 2; i < len + 5; i++) g[i] = 3 + 2;
    g[len + 5] = 2;
    CHECK(lis_extract_answer(&p, g, len + 6, &s, &a) == 1 && s == len + 4, "longer chain");
    /* <eos> right after the prompt: nothing generated. */
    g[n + 1] = 2;
    CHECK(lis_extract_answer(&p, g, len, &s, &a) == 0, "<eos> right after the prompt");
    /* An <eos> before the prompt's <sep> (only in garbage): not an answer. */
    memcpy(g, tok, sizeof(int) * (size_t)len);
    g[5] = 2;
    CHECK(lis_extract_answer(&p, g, len, &s, &a) == 0, "<eos> inside the prompt");
    /* No <sep> at all. */
    for (int i = 0; i < len; i++) g[i] = i == len - 1 ? 2 : 3 + 20;
    CHECK(lis_extract_answer(&p, g, len, &s, &a) == 0, "no <sep>");
    CHECK(lis_extract_answer(&p, g, 0, &s, &a) == 0, "empty sequence");
    /* Direct variant. */
    LisParams pd = { n, 0, 1 };
    lis_sample(&pd, &rng, &ex);
    CHECK(lis_extract_answer(&pd, tok, ex.len, &s, &a) == 1 && s == n + 1 && s == ex.answer_start,
          "direct gold");
}

/* ---- determinism, parameters, names, keys --------------------------------- */

static void test_determinism(void) {
    LisParams p = { 40, 0, 0 };
    int t1[CAP], g1[CAP], t2[CAP], g2[CAP];
    Example x = { .tokens = t1, .targets = g1 }, y = { .tokens = t2, .targets = g2 };
    Rng a = rng_stream(SEED, 500), b = rng_stream(SEED, 500), c = rng_stream(SEED + 1, 500);
    int same = 1, differ = 0;
    for (int k = 0; k < 200; k++) {
        lis_sample(&p, &a, &x);
        lis_sample(&p, &b, &y);
        size_t bytes = (size_t)x.len * sizeof(int);
        same &= x.len == y.len && memcmp(t1, t2, bytes) == 0 && memcmp(g1, g2, bytes) == 0;
        lis_sample(&p, &c, &y);
        differ += memcmp(t1, t2, sizeof(int) * 41) != 0;
    }
    CHECK(same, "same stream, different examples");
    CHECK(differ == 200, "another seed repeated %d prompts", 200 - differ);
    CHECK(memcmp(&a, &b, sizeof a) == 0, "same stream consumed differently");
}

static void expect_error(LisParams p, const char *name) {
    AlError err = { 0 };
    int rc = lis_check(&p, &err);
    CHECK(rc == 2 && err.code == 2 && strstr(err.msg, name) != NULL,
          "{%d, %d, %d}: rc %d, message '%s' should name %s", p.length, p.number_range, p.direct, rc,
          err.msg, name);
}

static void test_params(void) {
    expect_error((LisParams){ 2, 0, 0 }, "length");
    expect_error((LisParams){ -5, 0, 0 }, "length");
    expect_error((LisParams){ LIS_MAX_LENGTH + 1, 0, 0 }, "length");
    expect_error((LisParams){ 10, 20, 0 }, "number_range");     /* < 2n + 1 = 21 */
    expect_error((LisParams){ 10, -1, 0 }, "number_range");
    expect_error((LisParams){ 10, 10001, 0 }, "number_range");
    expect_error((LisParams){ 10, 0, 2 }, "direct");
    AlError err = { 0 };
    CHECK(lis_check(&(LisParams){ 10, 21, 0 }, &err) == 0, "number_range 2n+1 accepted: %s", err.msg);
    CHECK(lis_check(&(LisParams){ 3, 0, 1 }, &err) == 0, "n = 3 accepted: %s", err.msg);
    /* docs/design.md decision 6, and Feng's vocabularies (LIS50/80/100: 203/233/253). */
    static const int n[] = { 10, 40, 50, 100, 149, 150, 175, 250 };
    static const int range[] = { 160, 190, 200, 250, 299, 301, 351, 501 };
    for (int i = 0; i < 8; i++) {
        LisParams p = { n[i], 0, 0 };
        CHECK(lis_number_range(&p) == range[i] && lis_vocab_size(&p) == range[i] + 3,
              "n = %d: number_range %d, want %d", n[i], lis_number_range(&p), range[i]);
    }
    /* Paper 004's CoT lengths 83/223/353/503 (without <eos>). */
    static const int paper_n[] = { 40, 110, 175, 250 }, paper_L[] = { 83, 223, 353, 503 };
    for (int i = 0; i < 4; i++)
        CHECK(lis_max_len(&(LisParams){ paper_n[i], 0, 0 }) == paper_L[i] + 1, "paper n = %d", paper_n[i]);
}

static void test_names_and_key(void) {
    LisParams p = { 10, 0, 0 };
    CHECK(strcmp(lis_token_name(&p, 0), "<pad>") == 0 && strcmp(lis_token_name(&p, 1), "<sep>") == 0 &&
          strcmp(lis_token_name(&p, 2), "<eos>") == 0, "special names");
    CHECK(strcmp(lis_token_name(&p, 3), "0") == 0 && strcmp(lis_token_name(&p, 3 + 7), "7") == 0 &&
          strcmp(lis_token_name(&p, 3 + 42), "42") == 0 && strcmp(lis_token_name(&p, 3 + 159), "159") == 0,
          "number names");
    CHECK(strcmp(lis_token_name(&p, 163), "?") == 0 && strcmp(lis_token_name(&p, -1), "?") == 0,
          "outside the vocabulary");
    LisParams big = { 2000, 9999, 0 };
    char buf[16];
    int bad = 0;
    for (int v = 0; v < 9999; v++) {
        snprintf(buf, sizeof buf, "%d", v);
        bad += strcmp(lis_token_name(&big, 3 + v), buf) != 0;
    }
    CHECK(bad == 0, "%d number names differ from printf", bad);

    int tok[CAP], tgt[CAP], key[CAP];
    Example ex = { .tokens = tok, .targets = tgt };
    Rng rng = rng_stream(SEED, 600);
    lis_sample(&p, &rng, &ex);
    CHECK(lis_prompt_key_len(&p) == 11, "key length %d", lis_prompt_key_len(&p));
    lis_prompt_key(&p, &ex, key);
    CHECK(memcmp(key, tok, sizeof(int) * 11) == 0 && key[10] == 1, "key = prompt");

    /* A printed example for the record. */
    printf("LIS n=10:");
    for (int i = 0; i < ex.len; i++) printf(" %s", lis_token_name(&p, tok[i]));
    printf("\n");
}

int main(void) {
    CHECK(LIS_PAD == 0 && LIS_SEP == 1 && LIS_EOS == 2 && LIS_NUM0 == 3, "public token ids");
    test_dp();
    static const Ref small = { 10, 5.9977, 1.7305, 0.8023, 200000 };
    static const Ref large = { 40, 18.9398, 8.1622, 0.4027, 50000 };
    test_samples(&small, 20000);
    test_samples(&large, 20000);
    test_other_sizes();
    test_direct();
    test_extract();
    test_determinism();
    test_params();
    test_names_and_key();
    return check_exit("test_cot_lis");
}
