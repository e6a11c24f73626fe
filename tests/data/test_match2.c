/* test_match2.c — the Match2 generator against an independent brute-force checker,
 * and the epoch sampler.
 *
 * The checker shares no code with the generator: labels come from an O(N²) loop
 * over all pairs, bins from the fraction of ones written as a percentage, and
 * distinctness / disjointness from sorting rows (not from the SeqSet). */
#include "attnlab/data/dataset.h"
#include "attnlab/data/match2.h"
#include "attnlab/data/seqset.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SEED 20240611u

/* ---- the independent checker ------------------------------------------- */

static void brute_labels(const int *x, int n, int m, int *y) {
    for (int i = 0; i < n; i++) {
        y[i] = 0;
        for (int j = 0; j < n; j++)
            if ((x[i] + x[j]) % m == 0) y[i] = 1;
    }
}

/* Bins by percentage of ones: [0,25) [25,50) [50,75) [75,100]. */
static int brute_bin(int ones, int n) {
    int pct100 = 100 * ones;  /* percentage times n, to stay in integers */
    if (pct100 < 25 * n) return 0;
    if (pct100 < 50 * n) return 1;
    if (pct100 < 75 * n) return 2;
    return 3;
}

static int quota_of(int d, int b) { return d / 4 + (b < d % 4); }

static int g_len;  /* row length for qsort's comparator */
static int cmp_rows(const void *a, const void *b) {
    return memcmp(*(const int *const *)a, *(const int *const *)b, (size_t)g_len * sizeof(int));
}

/* Row pointers of d sorted by content (caller frees). */
static const int **sorted_rows(const Dataset *d) {
    const int **p = malloc((size_t)d->n * sizeof *p);
    for (int i = 0; i < d->n; i++) p[i] = dataset_tokens(d, i);
    g_len = d->seq_len;
    qsort(p, (size_t)d->n, sizeof *p, cmp_rows);
    return p;
}

static int brute_distinct(const Dataset *d, int only_bin) {
    const int **p = sorted_rows(d);
    int *y = malloc((size_t)d->seq_len * sizeof *y), distinct = 0;
    for (int i = 0; i < d->n; i++) {
        if (i > 0 && cmp_rows(&p[i], &p[i - 1]) == 0) continue;
        int ones = 0;
        brute_labels(p[i], d->seq_len, d->vocab_size, y);
        for (int k = 0; k < d->seq_len; k++) ones += y[k];
        if (only_bin < 0 || brute_bin(ones, d->seq_len) == only_bin) distinct++;
    }
    free(y);
    free(p);
    return distinct;
}

static int rows_in_common(const Dataset *a, const Dataset *b) {
    const int **p = sorted_rows(a);
    int common = 0;
    g_len = a->seq_len;
    for (int i = 0; i < b->n; i++) {
        const int *key = dataset_tokens(b, i);
        common += bsearch(&key, p, (size_t)a->n, sizeof *p, cmp_rows) != NULL;
    }
    free(p);
    return common;
}

/* Every label, token and bin of d re-derived; returns per-bin row counts in bins. */
static void verify_rows(const Dataset *d, int n, int m, int bins[4], const char *what) {
    CHECK(d->seq_len == n && d->vocab_size == m && d->n_classes == 2, "%s: shape", what);
    int *y = malloc((size_t)n * sizeof *y), bad_tok = 0, bad_lab = 0;
    memset(bins, 0, 4 * sizeof *bins);
    for (int r = 0; r < d->n; r++) {
        const int *x = dataset_tokens(d, r), *t = dataset_targets(d, r);
        for (int i = 0; i < n; i++) bad_tok += x[i] < 1 || x[i] > m - 1;
        brute_labels(x, n, m, y);
        int ones = 0;
        for (int i = 0; i < n; i++) {
            bad_lab += t[i] != y[i];
            ones += y[i];
        }
        bins[brute_bin(ones, n)]++;
    }
    CHECK(bad_tok == 0, "%s: %d tokens outside 1..%d", what, bad_tok, m - 1);
    CHECK(bad_lab == 0, "%s: %d labels differ from the brute-force check", what, bad_lab);
    free(y);
}

static void verify_balance(const Dataset *d, int n, int m, const Match2Stats *st, const char *what) {
    int bins[4];
    verify_rows(d, n, m, bins, what);
    for (int b = 0; b < 4; b++) {
        CHECK(bins[b] == quota_of(d->n, b), "%s: bin %d holds %d rows, want %d", what, b, bins[b],
              quota_of(d->n, b));
        CHECK(st->bin_quota[b] == bins[b], "%s: stats quota of bin %d", what, b);
        CHECK(st->bin_sampled[b] + st->bin_topped_up[b] == bins[b], "%s: stats of bin %d", what, b);
    }
    int distinct = brute_distinct(d, -1);
    CHECK(st->n_distinct == distinct, "%s: stats say %d distinct, brute force %d", what,
          st->n_distinct, distinct);
    if (st->n_topped_up == 0) CHECK(distinct == d->n, "%s: %d distinct of %d rows", what, distinct, d->n);
}

static double now_sec(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void print_stats(const char *what, const Match2Stats *st, double sec) {
    printf("%s: %d rows, %d distinct, bins sampled %d/%d/%d/%d, topped up %d/%d/%d/%d, "
           "draws %lld of %lld (dup %lld, excluded %lld), %.3f s\n",
           what, st->n_examples, st->n_distinct, st->bin_sampled[0], st->bin_sampled[1],
           st->bin_sampled[2], st->bin_sampled[3], st->bin_topped_up[0], st->bin_topped_up[1],
           st->bin_topped_up[2], st->bin_topped_up[3], st->draws, st->draw_budget,
           st->rejected_duplicate, st->rejected_excluded, sec);
}

/* ---- labels and bins ---------------------------------------------------- */

static void test_labels(void) {
    Rng rng = rng_stream(SEED, 100);
    int x[64], y[64], want[64], bad = 0;
    for (int t = 0; t < 20000; t++) {
        int m = 1 + (int)rng_below(&rng, 60), n = 1 + (int)rng_below(&rng, 64);
        for (int i = 0; i < n; i++) x[i] = (int)rng_below(&rng, (uint32_t)m);
        match2_labels(x, n, m, y);
        brute_labels(x, n, m, want);
        bad += memcmp(y, want, (size_t)n * sizeof *y) != 0;
    }
    CHECK(bad == 0, "%d random cases (general M, tokens 0..M-1) differ from brute force", bad);
    /* j = i counts: with M even, M/2 pairs with itself; 0 pairs with itself. */
    int a[3] = { 5, 3, 0 }, ya[3];
    match2_labels(a, 3, 10, ya);
    CHECK(ya[0] == 1 && ya[1] == 0 && ya[2] == 1, "x = (5,3,0), M = 10: got (%d,%d,%d)", ya[0], ya[1], ya[2]);
}

static void test_bins(void) {
    static const int ones[] = { 0, 7, 8, 15, 16, 23, 24, 31, 32 };
    static const int want[] = { 0, 0, 1, 1, 2, 2, 3, 3, 3 };
    for (int i = 0; i < 9; i++)
        CHECK(match2_bin(ones[i], 32) == want[i], "%d ones of 32: bin %d", ones[i], match2_bin(ones[i], 32));
    for (int n = 1; n <= 40; n++)
        for (int k = 0; k <= n; k++)
            CHECK(match2_bin(k, n) == brute_bin(k, n), "%d ones of %d", k, n);
}

/* ---- the real task: D = 10 000, N = 32, M = 37, and its 256-row test set ---- */

static void test_paper_setting(void) {
    enum { D = 10000, N = 32, M = 37, T = 256 };
    Dataset train, test, again;
    Match2Stats st, st_test, st_again;
    AlError err = { 0 };

    Rng rng = rng_stream(SEED, 1);
    double t0 = now_sec();
    int rc = match2_generate(&train, D, N, M, &rng, NULL, &st, &err);
    double sec = now_sec() - t0;
    CHECK(rc == 0, "generate train: %s", err.msg);
    if (rc) return;
    /* The time is printed, not asserted: tests must not depend on machine load. */
    print_stats("train D=10000", &st, sec);
    CHECK(train.n == D, "rows %d", train.n);
    CHECK(st.n_topped_up == 0, "the paper setting needs no top-up, got %d", st.n_topped_up);
    CHECK(st.draws < st.draw_budget, "draws %lld hit the budget", st.draws);
    verify_balance(&train, N, M, &st, "train");

    /* Shuffled: the bin-ordered fill must not survive (first 64 rows not one bin). */
    int y[N], first_bins[4] = { 0 };
    for (int r = 0; r < 64; r++) {
        int ones = 0;
        brute_labels(dataset_tokens(&train, r), N, M, y);
        for (int i = 0; i < N; i++) ones += y[i];
        first_bins[brute_bin(ones, N)]++;
    }
    CHECK(first_bins[0] < 64 && first_bins[3] < 64 && first_bins[0] > 0, "rows are not shuffled");

    /* Test set: another stream, the train set excluded. */
    SeqSet seen;
    seqset_init(&seen, N, D);
    seqset_add_rows(&seen, train.tokens, train.n);
    Rng rng_test = rng_stream(SEED, 2);
    t0 = now_sec();
    rc = match2_generate(&test, T, N, M, &rng_test, &seen, &st_test, &err);
    CHECK(rc == 0, "generate test: %s", err.msg);
    if (rc == 0) {
        print_stats("test  D=256  ", &st_test, now_sec() - t0);
        verify_balance(&test, N, M, &st_test, "test");
        CHECK(rows_in_common(&train, &test) == 0, "test rows also in train");
        dataset_free(&test);
    }
    seqset_free(&seen);

    /* Determinism: the same stream gives the same bytes; another seed does not. */
    rng = rng_stream(SEED, 1);
    rc = match2_generate(&again, D, N, M, &rng, NULL, &st_again, &err);
    CHECK(rc == 0 && memcmp(again.tokens, train.tokens, sizeof(int) * D * N) == 0 &&
          memcmp(again.targets, train.targets, sizeof(int) * D * N) == 0, "same seed, different data");
    CHECK(st_again.draws == st.draws, "same seed, different draw count");
    dataset_free(&again);
    rng = rng_stream(SEED + 1, 1);
    rc = match2_generate(&again, D, N, M, &rng, NULL, &st_again, &err);
    CHECK(rc == 0 && memcmp(again.tokens, train.tokens, sizeof(int) * D * N) != 0, "other seed, same data");
    dataset_free(&again);
    dataset_free(&train);
}

/* D not divisible by 4: the first D mod 4 bins get one row more. */
static void test_uneven_size(void) {
    Dataset d;
    Match2Stats st;
    AlError err = { 0 };
    Rng rng = rng_stream(SEED, 3);
    int rc = match2_generate(&d, 1002, 32, 37, &rng, NULL, &st, &err);
    CHECK(rc == 0, "%s", err.msg);
    if (rc) return;
    CHECK(st.bin_quota[0] == 251 && st.bin_quota[1] == 251 && st.bin_quota[2] == 250 &&
          st.bin_quota[3] == 250, "quotas %d %d %d %d", st.bin_quota[0], st.bin_quota[1],
          st.bin_quota[2], st.bin_quota[3]);
    verify_balance(&d, 32, 37, &st, "D=1002");
    dataset_free(&d);
}

/* ---- scarce sequences: the top-up path ---------------------------------- */

/* Distinct sequences per bin over all (M−1)^n sequences, by brute force. */
static void enumerate_bins(int n, int m, int counts[4]) {
    int x[16], y[16];
    memset(counts, 0, 4 * sizeof *counts);
    for (int i = 0; i < n; i++) x[i] = 1;
    for (;;) {
        int ones = 0;
        brute_labels(x, n, m, y);
        for (int i = 0; i < n; i++) ones += y[i];
        counts[brute_bin(ones, n)]++;
        int k = 0;
        while (k < n && x[k] == m - 1) x[k++] = 1;
        if (k == n) return;
        x[k]++;
    }
}

/* N = 6, M = 5: bins 0 and 1 hold only 252 and 120 distinct sequences, fewer than
 * the 500 asked for.  The budget (2M draws) collects every one of them; the rest is
 * permuted copies.  Labels re-derived by brute force for every row show the copies
 * were permuted together with their labels. */
static void test_top_up(void) {
    enum { D = 2000, N = 6, M = 5 };
    int avail[4];
    enumerate_bins(N, M, avail);
    CHECK(avail[0] == 252 && avail[1] == 120, "enumeration: %d %d %d %d", avail[0], avail[1],
          avail[2], avail[3]);
    Dataset d;
    Match2Stats st;
    AlError err = { 0 };
    Rng rng = rng_stream(SEED, 4);
    int rc = match2_generate(&d, D, N, M, &rng, NULL, &st, &err);
    CHECK(rc == 0, "%s", err.msg);
    if (rc) return;
    print_stats("top-up N=6 M=5", &st, 0.0);
    verify_balance(&d, N, M, &st, "top-up");
    CHECK(st.draws == st.draw_budget, "short bins must use the whole budget");
    int topped = 0;
    for (int b = 0; b < 4; b++) {
        int want_distinct = avail[b] < D / 4 ? avail[b] : D / 4;
        int got = brute_distinct(&d, b);
        CHECK(got == want_distinct, "bin %d: %d distinct rows, want %d", b, got, want_distinct);
        CHECK(st.bin_sampled[b] == want_distinct, "bin %d sampled %d", b, st.bin_sampled[b]);
        CHECK(st.bin_topped_up[b] == D / 4 - want_distinct, "bin %d topped up %d", b, st.bin_topped_up[b]);
        topped += st.bin_topped_up[b];
    }
    CHECK(topped == st.n_topped_up && topped > 0, "topped up %d", st.n_topped_up);

    /* Every bin-0 sequence is in train now, so a test set excluding them cannot fill bin 0. */
    SeqSet seen;
    seqset_init(&seen, N, D);
    seqset_add_rows(&seen, d.tokens, d.n);
    Dataset t;
    Rng rng_test = rng_stream(SEED, 5);
    rc = match2_generate(&t, 256, N, M, &rng_test, &seen, &st, &err);
    CHECK(rc == 2 && t.tokens == NULL && strstr(err.msg, "bin 0"), "excluded-empty bin: rc %d, %s", rc, err.msg);
    seqset_free(&seen);
    dataset_free(&d);
}

/* A test set that needs top-up while excluding train: copies must avoid train too. */
static void test_top_up_disjoint(void) {
    enum { N = 8, M = 5 };
    Dataset train, test;
    Match2Stats st;
    AlError err = { 0 };
    Rng rng = rng_stream(SEED, 6);
    int rc = match2_generate(&train, 2000, N, M, &rng, NULL, &st, &err);
    CHECK(rc == 0, "%s", err.msg);
    if (rc) return;
    SeqSet seen;
    seqset_init(&seen, N, train.n);
    seqset_add_rows(&seen, train.tokens, train.n);
    Rng rng_test = rng_stream(SEED, 7);
    rc = match2_generate(&test, 2400, N, M, &rng_test, &seen, &st, &err);
    CHECK(rc == 0, "%s", err.msg);
    if (rc == 0) {
        print_stats("top-up, train excluded", &st, 0.0);
        CHECK(st.bin_topped_up[0] > 0 && st.rejected_excluded > 0, "scenario must top up bin 0 against exclusions");
        verify_balance(&test, N, M, &st, "top-up test");
        CHECK(rows_in_common(&train, &test) == 0, "topped-up test rows found in train");
        dataset_free(&test);
    }
    seqset_free(&seen);
    dataset_free(&train);
}

static void test_errors(void) {
    Dataset d;
    AlError err = { 0 };
    Rng rng = rng_stream(SEED, 8);
    /* N = 2, M = 5: ones is 0 or 2, so bins [25,50) and [50,75) never fill. */
    int rc = match2_generate(&d, 40, 2, 5, &rng, NULL, NULL, &err);
    CHECK(rc == 2 && d.tokens == NULL && d.n == 0, "unfillable bin: rc %d", rc);
    CHECK(strstr(err.msg, "bin 1") != NULL, "message names the bin: %s", err.msg);
    CHECK(match2_generate(&d, 0, 32, 37, &rng, NULL, NULL, &err) == 2, "D = 0 rejected");
    CHECK(match2_generate(&d, 10, 0, 37, &rng, NULL, NULL, &err) == 2, "N = 0 rejected");
    CHECK(match2_generate(&d, 10, 32, 1, &rng, NULL, NULL, &err) == 2, "M = 1 rejected");
    SeqSet wrong;
    seqset_init(&wrong, 31, 0);
    CHECK(match2_generate(&d, 10, 32, 37, &rng, &wrong, NULL, &err) == 2, "exclude of other length rejected");
    seqset_free(&wrong);
}

/* Sizes rejection sampling could not fill in reasonable time are refused before a
 * draw; the paper's sizes pass at once (their whole budget is within the limit). */
static void test_check_size(void) {
    AlError err = { 0 };
    CHECK(match2_check_size(10000, 32, 37, &err) == 0, "paper setting refused: %s", err.msg);
    CHECK(match2_check_size(200000, 32, 37, &err) == 0, "200000 rows (about 50M tokens) refused: %s", err.msg);
    CHECK(match2_check_size(1000000, 32, 37, &err) == 2 && strstr(err.msg, "fill bin 0 of 4"),
          "1000000 rows at N = 32 (bin 0: ~1 in 240): %s", err.msg);
    CHECK(match2_check_size(10000, 65536, 37, &err) == 2 && strstr(err.msg, "none of 64 trial draws"),
          "N = 65536 (only bin 3 occurs): %s", err.msg);
    CHECK(match2_check_size(MATCH2_MAX_EXAMPLES + 1, 32, 37, &err) == 2 && strstr(err.msg, "must be in [1, 268435456]"),
          "too many rows: %s", err.msg);
    CHECK(match2_check_size(40, 2, 5, &err) == 0, "small unfillable sets are left to generation (its own message)");
}

/* ---- sampler ------------------------------------------------------------ */

static void test_sampler_epochs(void) {
    enum { n = 10, EPOCHS = 4 };
    Sampler s;
    sampler_init(&s, n, rng_stream(SEED, 9));
    int idx[n * EPOCHS];
    /* Batches of 3 do not divide 10: they straddle epoch boundaries. */
    for (int k = 0; k + 3 <= n * EPOCHS - 1; k += 3) sampler_next_indices(&s, idx + k, 3);
    sampler_next_indices(&s, idx + 39, 1);
    CHECK(s.epoch == EPOCHS - 1 && s.pos == n, "epoch %lld pos %d", (long long)s.epoch, s.pos);
    for (int e = 0; e < EPOCHS; e++) {
        int seen[n] = { 0 }, ok = 1;
        for (int i = 0; i < n; i++) seen[idx[e * n + i]]++;
        for (int i = 0; i < n; i++) ok &= seen[i] == 1;
        CHECK(ok, "epoch %d is not a permutation", e);
    }
    int differ = 0;
    for (int e = 1; e < EPOCHS; e++) differ += memcmp(idx, idx + e * n, sizeof(int) * n) != 0;
    CHECK(differ == EPOCHS - 1, "epoch orders repeat");
    sampler_free(&s);
}

/* Batches after a restore equal the batches of a sampler that never stopped,
 * including a save exactly at an epoch boundary. */
static void test_sampler_resume(void) {
    enum { n = 13, N = 4, B = 5, STEPS = 40 };
    Dataset d;
    dataset_alloc(&d, n, N, 100, 100);
    for (int r = 0; r < n; r++)
        for (int i = 0; i < N; i++) {
            dataset_tokens(&d, r)[i] = r * N + i;
            dataset_targets(&d, r)[i] = r;
        }
    Batch ba, bb;
    batch_alloc(&ba, B, N);
    batch_alloc(&bb, B, N);
    int save_points[] = { 0, 7, 13 };  /* 13 batches of 5 = 65 rows = 5 whole epochs */
    for (int p = 0; p < 3; p++) {
        Sampler a, b;
        sampler_init(&a, n, rng_stream(SEED, 10));
        for (int k = 0; k < save_points[p]; k++) sampler_next_batch(&a, &d, &ba);
        SamplerState st = sampler_get_state(&a);
        if (save_points[p] == 13) CHECK(st.pos == n, "save at an epoch boundary: pos %d", st.pos);
        sampler_init(&b, n, rng_stream(SEED, 999));  /* a different stream, overwritten */
        AlError err = { 0 };
        CHECK(sampler_set_state(&b, &st, &err) == 0, "%s", err.msg);
        int same = 1, rows_ok = 1;
        for (int k = 0; k < STEPS; k++) {
            sampler_next_batch(&a, &d, &ba);
            sampler_next_batch(&b, &d, &bb);
            same &= memcmp(ba.tokens, bb.tokens, sizeof(int) * B * N) == 0 &&
                    memcmp(ba.targets, bb.targets, sizeof(int) * B * N) == 0;
            for (int r = 0; r < B; r++) rows_ok &= ba.tokens[r * N] == ba.targets[r * N] * N;
        }
        CHECK(same, "restored at batch %d: batches differ", save_points[p]);
        CHECK(rows_ok, "batch rows are not whole dataset rows");
        CHECK(a.epoch == b.epoch && a.pos == b.pos, "states diverged");
        sampler_free(&a);
        sampler_free(&b);
    }
    Sampler s;
    sampler_init(&s, n, rng_stream(SEED, 10));
    AlError err = { 0 };
    SamplerState bad = sampler_get_state(&s);
    bad.n = n + 1;
    CHECK(sampler_set_state(&s, &bad, &err) == 2, "state of another dataset size accepted");
    bad.n = n;
    bad.pos = n + 1;
    CHECK(sampler_set_state(&s, &bad, &err) == 2, "position past the epoch accepted");
    sampler_free(&s);
    batch_free(&ba);
    batch_free(&bb);
    dataset_free(&d);
}

int main(void) {
    test_labels();
    test_bins();
    test_paper_setting();
    test_uneven_size();
    test_top_up();
    test_top_up_disjoint();
    test_errors();
    test_check_size();
    test_sampler_epochs();
    test_sampler_resume();
    return check_exit("test_match2");
}
