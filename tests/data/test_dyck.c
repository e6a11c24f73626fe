/* test_dyck.c — the Dyck-(2,2) generator against an independent checker.
 *
 * The checker shares no code with dyck.c: tokens are turned into bracket
 * characters and run through a character stack machine (membership) and a height
 * counter (depth profile).  It is itself checked by exhaustive enumeration against
 * the paper's count of 2^(N−1) strings in Dyck-(2,2) of each even length N.  The
 * share of type-only negatives is compared with an independent re-implementation
 * of the paper's corruption scheme, written from the text of App. H. */
#include "attnlab/data/dataset.h"
#include "attnlab/data/dyck.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SEED 20240917u
#define MAXN 400

static const char OPEN[] = "([{<", CLOSE[] = ")]}>";

/* ---- the independent checker -------------------------------------------- */

/* Token ids to bracket characters (the documented layout: 2t opens, 2t+1 closes). */
static void to_chars(const int *x, int n, char *s) {
    for (int i = 0; i < n; i++) s[i] = (x[i] % 2 ? CLOSE : OPEN)[x[i] / 2];
    s[n] = 0;
}

static int ref_member(const char *s, int depth) {
    char stack[64];
    int h = 0;
    for (; *s; s++) {
        const char *o = strchr(OPEN, *s), *c = strchr(CLOSE, *s);
        if (o) {
            if (h == depth) return 0;
            stack[h++] = *s;
        } else {
            if (!c || h == 0 || stack[h - 1] != OPEN[c - CLOSE]) return 0;
            h--;
        }
    }
    return h == 0;
}

/* The open/close height profile: never below 0 or above depth, ends at 0. */
static int ref_profile(const char *s, int depth) {
    int h = 0;
    for (; *s; s++) {
        h += strchr(OPEN, *s) ? 1 : -1;
        if (h < 0 || h > depth) return 0;
    }
    return h == 0;
}

static int ref_group(const char *s, int depth) {
    if (ref_member(s, depth)) return 0;
    return ref_profile(s, depth) ? 2 : 1;
}

static double now_sec(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* |count − n·p| within 5 standard deviations of a binomial(n, p). */
static int binomial_ok(long count, long n, double p) {
    return fabs((double)count - (double)n * p) <= 5.0 * sqrt((double)n * p * (1.0 - p)) + 1e-9;
}

/* ---- the checker and the library recognisers, exhaustively -------------- */

static void test_checker_exhaustive(void) {
    DyckParams p = { 2, 2, 2 };
    int x[12];
    char s[13];
    for (int n = 1; n <= 10; n++) {
        long members = 0, lib_diff = 0, total = 1L << (2 * n);
        for (long code = 0; code < total; code++) {
            for (int i = 0; i < n; i++) x[i] = (int)((code >> (2 * i)) & 3);
            to_chars(x, n, s);
            int m = ref_member(s, 2);
            members += m;
            if (n <= 8) {
                lib_diff += dyck_is_member(&p, x, n) != m;
                lib_diff += dyck_profile_valid(&p, x, n) != ref_profile(s, 2);
                lib_diff += dyck_group(&p, x, n) != ref_group(s, 2);
            }
        }
        long want = n % 2 ? 0 : 1L << (n - 1);  /* paper 003, App. E: 2^(N−1) */
        CHECK(members == want, "length %d: %ld strings in Dyck-(2,2), the paper says %ld", n, members, want);
        CHECK(lib_diff == 0, "length %d: library recognisers differ from the checker %ld times", n, lib_diff);
    }
    /* The paper's examples: '( [ ] ) [ ]' has depth 2, '( [ [ ] ] )' depth 3. */
    CHECK(ref_member("([])[]", 2) && !ref_member("([[]])", 2) && ref_member("([[]])", 3), "paper examples");
    int bad[2] = { 0, 4 };
    CHECK(!dyck_is_member(&p, bad, 2) && !dyck_profile_valid(&p, bad, 2), "token 4 accepted with 2 types");
}

/* Random strings with 3 types and depth 3, against the generic checker. */
static void test_recognisers_random(void) {
    DyckParams p = { 12, 3, 3 };
    Rng rng = rng_stream(SEED, 1);
    int x[12], diff = 0, members = 0;
    char s[13];
    for (int t = 0; t < 200000; t++) {
        /* Mostly-balanced strings, so that members occur: a positive, then noise. */
        dyck_positive(&p, &rng, x);
        if (rng_below(&rng, 2)) x[rng_below(&rng, 12)] = (int)rng_below(&rng, 6);
        to_chars(x, 12, s);
        members += ref_member(s, 3);
        diff += dyck_is_member(&p, x, 12) != ref_member(s, 3);
        diff += dyck_profile_valid(&p, x, 12) != ref_profile(s, 3);
    }
    CHECK(diff == 0, "Dyck-(3,3): %d disagreements with the checker", diff);
    CHECK(members > 100000 && members < 200000, "Dyck-(3,3): %d members of 200000 (test is vacuous)", members);
}

/* ---- samples ------------------------------------------------------------ */

typedef struct Tally {
    long n, positives, groups[3], bad;
} Tally;

/* Draws `count` examples and checks each one against the checker. */
static Tally draw_and_verify(const DyckParams *p, Rng *rng, long count) {
    int n = p->seq_len, tok[MAXN], tgt[MAXN];
    char s[MAXN + 1];
    Example ex = { .tokens = tok, .targets = tgt };
    Tally t = { 0 };
    for (long e = 0; e < count; e++) {
        memset(&ex.len, 0x55, sizeof ex.len);
        ex.group = ex.prompt_len = ex.answer_start = ex.answer_len = 12345;
        dyck_sample(p, rng, &ex);
        int ok = ex.len == n && ex.prompt_len == 0 && ex.answer_start == -1 && ex.answer_len == 0;
        for (int i = 0; i < n; i++) ok &= tok[i] >= 0 && tok[i] < 2 * p->types;
        for (int i = 0; i < n - 1; i++) ok &= tgt[i] == DATASET_IGNORE;
        if (ok) {
            to_chars(tok, n, s);
            int member = ref_member(s, p->depth), g = ref_group(s, p->depth);
            ok &= tgt[n - 1] == member && ex.group == g;
            t.positives += member;
            t.groups[g]++;
        }
        t.bad += !ok;
        t.n++;
    }
    return t;
}

static void test_samples(void) {
    static const int lengths[] = { 2, 4, 8, 10, 20, 50, 100, 200, 400 };
    for (int l = 0; l < 9; l++) {
        DyckParams p = { lengths[l], 2, 2 };
        AlError err = { 0 };
        CHECK(dyck_check(&p, &err) == 0, "N = %d: %s", p.seq_len, err.msg);
        CHECK(dyck_vocab_size(&p) == 4 && dyck_n_classes(&p) == 2 && dyck_max_len(&p) == p.seq_len,
              "N = %d: shapes", p.seq_len);
        Rng rng = rng_stream(SEED, 100 + (uint64_t)l);
        long count = p.seq_len <= 100 ? 20000 : 8000;
        Tally t = draw_and_verify(&p, &rng, count);
        CHECK(t.bad == 0, "N = %d: %ld of %ld examples wrong (length, tokens, targets, label or group)",
              p.seq_len, t.bad, t.n);
        CHECK(binomial_ok(t.positives, t.n, 0.5), "N = %d: %ld positives of %ld is not 50/50",
              p.seq_len, t.positives, t.n);
        CHECK(t.groups[0] == t.positives, "N = %d: group 0 is not the positives", p.seq_len);
        long neg = t.n - t.positives;
        printf("N = %3d: %ld examples, %.1f%% positive, negatives: %.1f%% invalid profile, "
               "%.1f%% type-only\n", p.seq_len, t.n, 100.0 * t.positives / t.n,
               100.0 * t.groups[1] / neg, 100.0 * t.groups[2] / neg);
    }
    /* Other sizes of the language run through the same code. */
    DyckParams q[] = { { 24, 3, 3 }, { 16, 1, 2 }, { 16, 4, 1 } };
    for (int i = 0; i < 3; i++) {
        Rng rng = rng_stream(SEED, 200 + (uint64_t)i);
        Tally t = draw_and_verify(&q[i], &rng, 5000);
        CHECK(t.bad == 0 && binomial_ok(t.positives, t.n, 0.5), "Dyck-(%d,%d) N = %d: %ld bad",
              q[i].types, q[i].depth, q[i].seq_len, t.bad);
        if (q[i].types == 1) CHECK(t.groups[2] == 0, "one type: a type-only negative cannot exist");
    }
}

/* ---- the positive sampler's branch probabilities ------------------------ */

/* N = 4 pins the literal reading down exactly: the first bracket is '(' or '['
 * (1/2 each); at depth 1 with three positions left, '(' '[' and the closer are
 * 1/3 each.  So each of the 4 nested strings "(())"-like has probability 1/6 and
 * each of the 4 "()()"-like strings 1/12. */
static void test_positive_distribution(void) {
    DyckParams p = { 4, 2, 2 };
    Rng rng = rng_stream(SEED, 300);
    enum { DRAWS = 60000 };
    long counts[256] = { 0 };
    int x[4], invalid = 0;
    char s[5];
    for (int t = 0; t < DRAWS; t++) {
        dyck_positive(&p, &rng, x);
        to_chars(x, 4, s);
        invalid += !ref_member(s, 2);
        counts[x[0] | x[1] << 2 | x[2] << 4 | x[3] << 6]++;
    }
    CHECK(invalid == 0, "%d invalid positives", invalid);
    int seen = 0;
    for (int c = 0; c < 256; c++) {
        if (!counts[c]) continue;
        seen++;
        int nested = (c >> 2 & 1) == 0;  /* second bracket opens */
        double want = nested ? 1.0 / 6 : 1.0 / 12;
        CHECK(binomial_ok(counts[c], DRAWS, want), "N = 4: string %d drawn %ld times of %d, want p = %.4f",
              c, counts[c], DRAWS, want);
    }
    CHECK(seen == 8, "N = 4: %d distinct positives, Dyck-(2,2) has 8", seen);

    /* Every string of the language is reachable: all 2^9 = 512 at N = 10. */
    DyckParams p10 = { 10, 2, 2 };
    static unsigned char hit[1 << 20];
    int distinct = 0;
    for (int t = 0; t < 200000; t++) {
        int y[10], code = 0;
        dyck_positive(&p10, &rng, y);
        for (int i = 0; i < 10; i++) code |= y[i] << (2 * i);
        distinct += !hit[code];
        hit[code] = 1;
    }
    CHECK(distinct == 512, "N = 10: %d distinct positives of the 512 in Dyck-(2,2)", distinct);

    /* At depth 1 in the middle of a long string, the closer has probability 1/3. */
    DyckParams p100 = { 100, 2, 2 };
    long at_depth1 = 0, closes = 0;
    for (int t = 0; t < 2000; t++) {
        int y[100], h = 0;
        dyck_positive(&p100, &rng, y);
        for (int i = 0; i < 97; i++) {
            if (h == 1) at_depth1++, closes += y[i] & 1;
            h += y[i] & 1 ? -1 : 1;
        }
    }
    CHECK(binomial_ok(closes, at_depth1, 1.0 / 3), "depth 1: %ld closes of %ld steps, want 1/3",
          closes, at_depth1);
}

/* ---- corruption --------------------------------------------------------- */

static void test_corruption(void) {
    static const int lengths[] = { 2, 8, 20, 100, 400 };
    for (int l = 0; l < 5; l++) {
        DyckParams p = { lengths[l], 2, 2 };
        int n = p.seq_len, K = n >= 10 ? n / 10 : 1, pos[MAXN], x[MAXN];
        char s[MAXN + 1];
        Rng rng = rng_stream(SEED, 400 + (uint64_t)l);
        enum { T = 20000 };
        long k_count[41] = { 0 }, swaps = 0, changed = 0, attempts = 0, bad = 0, noflip_not_g2 = 0;
        for (int t = 0; t < T; t++) {
            DyckCorruption c;
            dyck_positive(&p, &rng, pos);
            dyck_corrupt(&p, &rng, pos, x, &c);
            int diff = 0, sw = 0, fl = 0;
            for (int i = 0; i < n; i++) {
                if (x[i] == pos[i]) continue;
                diff++;
                int same_dir = (x[i] & 1) == (pos[i] & 1), same_type = x[i] / 2 == pos[i] / 2;
                sw += same_dir && !same_type;
                fl += same_type && !same_dir;
                bad += same_dir == same_type;  /* both changed, or token out of range */
            }
            to_chars(x, n, s);
            bad += diff != c.k || c.k < 1 || c.k > K || sw != c.n_swaps || fl != c.n_flips ||
                   c.attempts < 1 || ref_member(s, 2);
            if (c.k >= 1 && c.k <= K) k_count[c.k]++;
            if (c.n_flips == 0 && ref_group(s, 2) != 2) noflip_not_g2++;
            swaps += sw;
            changed += diff;
            attempts += c.attempts;
        }
        CHECK(bad == 0, "N = %d: %ld corruptions break the rules", n, bad);
        CHECK(noflip_not_g2 == 0, "N = %d: %ld swap-only negatives with an invalid profile", n, noflip_not_g2);
        for (int k = 1; k <= K; k++)
            CHECK(binomial_ok(k_count[k], T, 1.0 / K), "N = %d: k = %d drawn %ld times of %d, want 1/%d",
                  n, k, k_count[k], T, K);
        /* Accepted corruptions are biased a little by the redo (swapping both ends of
         * one pair keeps a string valid), so allow for it: within 2% of 1/2. */
        CHECK(fabs((double)swaps / changed - 0.5) < 0.02, "N = %d: %.3f of changes are type swaps",
              n, (double)swaps / changed);
        printf("N = %3d: corruption k uniform in 1..%d, %.3f swaps, %.4f attempts per negative\n",
               n, K, (double)swaps / changed, (double)attempts / T);
    }
}

/* ---- the share of type-only negatives ----------------------------------- */

/* The paper's scheme re-implemented from its text, on characters. */
static void paper_positive(int n, Rng *rng, char *s) {
    char st[2];
    int h = 0;
    for (int i = 0; i < n - 2; i++) {
        int r = h == 2 ? 2 : h == 0 ? (int)rng_below(rng, 2) : (int)rng_below(rng, 3);
        if (r == 2) s[i] = CLOSE[strchr(OPEN, st[--h]) - OPEN];
        else s[i] = st[h++] = OPEN[r];
    }
    if (h == 0) {
        int o = (int)rng_below(rng, 2);
        s[n - 2] = OPEN[o];
        s[n - 1] = CLOSE[o];
    } else {
        s[n - 2] = CLOSE[strchr(OPEN, st[1]) - OPEN];
        s[n - 1] = CLOSE[strchr(OPEN, st[0]) - OPEN];
    }
    s[n] = 0;
}

static int paper_negative_group(int n, Rng *rng) {
    char pos[MAXN + 1], s[MAXN + 1];
    static const char swap_of[128] = { ['('] = '[', ['['] = '(', [')'] = ']', [']'] = ')' };
    static const char flip_of[128] = { ['('] = ')', [')'] = '(', ['['] = ']', [']'] = '[' };
    paper_positive(n, rng, pos);
    do {
        memcpy(s, pos, (size_t)n + 1);
        int K = n / 10 > 0 ? n / 10 : 1, k = 1 + (int)rng_below(rng, (uint32_t)K), idx[MAXN];
        for (int i = 0; i < n; i++) idx[i] = i;
        for (int i = 0; i < k; i++) {  /* partial Fisher–Yates: k distinct positions */
            int j = i + (int)rng_below(rng, (uint32_t)(n - i)), tmp = idx[i];
            idx[i] = idx[j];
            idx[j] = tmp;
            char c = s[idx[i]];
            s[idx[i]] = rng_below(rng, 2) ? flip_of[(int)c] : swap_of[(int)c];
        }
    } while (ref_member(s, 2));
    return ref_group(s, 2);
}

static void test_type_only_share(void) {
    static const int lengths[] = { 20, 100, 400 };
    for (int l = 0; l < 3; l++) {
        int n = lengths[l], K = n / 10;
        DyckParams p = { n, 2, 2 };
        Rng rng = rng_stream(SEED, 500 + (uint64_t)l), ref_rng = rng_stream(SEED, 600 + (uint64_t)l);
        long T = n <= 100 ? 40000 : 16000;
        Tally t = draw_and_verify(&p, &rng, T);
        long neg = t.n - t.positives, ref_g2 = 0;
        for (long i = 0; i < T; i++) ref_g2 += paper_negative_group(n, &ref_rng) == 2;
        double share = (double)t.groups[2] / neg, ref = (double)ref_g2 / T;
        double sd = sqrt(ref * (1 - ref) * (1.0 / neg + 1.0 / T));
        /* No direction flip among the k changes (probability 2^−k) leaves the profile
         * valid, so E[2^−k] = (1 − 2^−K)/K is the scheme's leading term. */
        double leading = (1.0 - pow(0.5, K)) / K;
        printf("N = %3d: type-only negatives %.2f%% (%ld of %ld); independent re-implementation "
               "%.2f%%; E[2^-k] = %.2f%%\n", n, 100 * share, t.groups[2], neg, 100 * ref, 100 * leading);
        CHECK(fabs(share - ref) <= 5 * sd, "N = %d: type-only share %.4f vs re-implementation %.4f (sd %.4f)",
              n, share, ref, sd);
        CHECK(fabs(share - leading) < 0.03, "N = %d: type-only share %.4f far from E[2^-k] = %.4f",
              n, share, leading);
    }
}

/* ---- determinism and parameters ----------------------------------------- */

static void test_determinism(void) {
    DyckParams p = { 50, 2, 2 };
    enum { E = 500 };
    int a[E][50], ta[E][50], ga[E], b[50], tb[50];
    Rng r1 = rng_stream(SEED, 700);
    for (int e = 0; e < E; e++) {
        Example ex = { .tokens = a[e], .targets = ta[e] };
        dyck_sample(&p, &r1, &ex);
        ga[e] = ex.group;
    }
    Rng r2 = rng_stream(SEED, 700), r3 = rng_stream(SEED, 701);
    int same = 1, differ = 0;
    for (int e = 0; e < E; e++) {
        Example ex = { .tokens = b, .targets = tb };
        dyck_sample(&p, &r2, &ex);
        same &= !memcmp(a[e], b, sizeof b) && !memcmp(ta[e], tb, sizeof tb) && ga[e] == ex.group;
        dyck_sample(&p, &r3, &ex);
        differ += memcmp(a[e], b, sizeof b) != 0;
    }
    CHECK(same, "the same stream gives different examples");
    CHECK(differ > E - 5, "another stream repeats %d of %d examples", E - differ, E);
}

static void test_bad_params(void) {
    struct { DyckParams p; const char *want; } cases[] = {
        { { 7, 2, 2 }, "seq_len must be even, got 7" },
        { { 0, 2, 2 }, "seq_len must be in [2, 65536], got 0" },
        { { 65538, 2, 2 }, "seq_len must be in [2, 65536], got 65538" },
        { { 20, 0, 2 }, "depth must be in [1, 32], got 0" },
        { { 20, 33, 2 }, "depth must be in [1, 32], got 33" },
        { { 20, 2, 0 }, "types must be in [1, 16], got 0" },
        { { 20, 2, 17 }, "types must be in [1, 16], got 17" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        AlError err = { 0 };
        int rc = dyck_check(&cases[i].p, &err);
        CHECK(rc == 2 && err.code == 2 && strstr(err.msg, cases[i].want) && strncmp(err.msg, "dyck: ", 6) == 0,
              "case %zu: rc %d, message '%s', want '%s'", i, rc, err.msg, cases[i].want);
    }
    AlError err = { 0 };
    DyckParams ok = { 2, 1, 1 };
    CHECK(dyck_check(&ok, &err) == 0 && err.code == 0, "N = 2, depth 1, one type rejected: %s", err.msg);
    dyck_check(&cases[0].p, &err);
    CHECK(strstr(err.msg, "paper 003 uses even N only") != NULL, "odd N: the message says why: %s", err.msg);
}

int main(void) {
    double t0 = now_sec();
    test_checker_exhaustive();
    test_recognisers_random();
    test_samples();
    test_positive_distribution();
    test_corruption();
    test_type_only_share();
    test_determinism();
    test_bad_params();
    printf("test_dyck: %.2f s\n", now_sec() - t0);
    return check_exit("test_dyck");
}
