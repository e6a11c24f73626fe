/* test_equality.c — the String Equality generators (eq_random, eq_one, eq_ncp)
 * against an independent checker, their distributions, and the multi-label loss
 * and accuracy rule eq_ncp trains and is scored with.
 *
 * The checker knows only the layout documented in equality.h: it finds the one
 * token outside the symbol range ([sep]), checks that it splits the example into
 * two halves of equal length, and derives every target from the tokens —
 * classification: 1 iff the halves are equal, read at the last token; next
 * character: before [sep] every symbol may follow, after it the symbol of the
 * FIRST half at the same offset (so a wrong copy in the second half is caught
 * too), and nothing after the last token. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/data/dataset.h"
#include "attnlab/data/equality.h"
#include "attnlab/data/task.h"
#include "attnlab/train/evaluate.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

#define SEED 20240918u
#define MAXN 800

/* |count − n·p| within 5 standard deviations of a binomial(n, p). */
static int binomial_ok(long count, long n, double p) {
    return fabs((double)count - (double)n * p) <= 5.0 * sqrt((double)n * p * (1.0 - p)) + 1e-9;
}

/* ---- the independent checker -------------------------------------------- */

/* Checks one example of |Σ| = S symbols; returns the halves' equality (0/1), or −1
 * when the layout or a target is wrong.  *differ gets the positions where they differ. */
static int ref_check(EqKind kind, int S, const int *x, const int *y, int len, int *differ) {
    int sep_at = -1, seps = 0;
    for (int i = 0; i < len; i++) {
        if (x[i] < 0 || x[i] > S) return -1;
        if (x[i] == S) { seps++; sep_at = i; }
    }
    int m = sep_at;
    if (seps != 1 || len != 2 * m + 1 || m < 1) return -1;
    *differ = 0;
    for (int j = 0; j < m; j++) *differ += x[j] != x[m + 1 + j];
    int equal = *differ == 0;
    for (int i = 0; i < len; i++) {
        int want;
        if (kind != EQ_NCP) want = i == len - 1 ? equal : DATASET_IGNORE;
        else if (i == len - 1) want = DATASET_IGNORE;     /* the string has ended */
        else if (i < m) want = S;                         /* [sep] not seen yet: every symbol */
        else want = x[i - m];                             /* the first half, offset i − m */
        if (y[i] != want) return -1;
    }
    return equal;
}

typedef struct Tally {
    long n, equal, bad, one_diff, sym_change[8], pos_change[MAXN];
    long len_count[MAXN + 2];
} Tally;

static void draw(const EqParams *p, uint64_t seed, int k, long n, Tally *t) {
    memset(t, 0, sizeof *t);
    int x[MAXN + 1], y[MAXN + 1];
    Rng rng = rng_stream(seed, 7);
    for (long r = 0; r < n; r++) {
        Example ex = { .tokens = x, .targets = y };
        eq_sample(p, &rng, k, &ex);
        int differ, eq = ref_check(p->kind, p->symbols, x, y, ex.len, &differ);
        t->n++;
        t->len_count[ex.len - 1]++;
        if (eq < 0 || ex.group != (eq ? EQ_GROUP_EQUAL : EQ_GROUP_UNEQUAL)) { t->bad++; continue; }
        t->equal += eq;
        if (differ == 1) {
            int m = (ex.len - 1) / 2;
            t->one_diff++;
            for (int j = 0; j < m; j++)
                if (x[j] != x[m + 1 + j]) {
                    if (p->symbols <= 8) t->sym_change[(x[m + 1 + j] - x[j] + p->symbols) % p->symbols]++;
                    t->pos_change[j]++;
                }
        }
    }
}

/* ---- labels, balance and lengths ------------------------------------------ */

static void test_labels_and_balance(void) {
    enum { N = 20, M = 40000 };
    Tally t;
    /* eq_random: heads a copy, tails an independent string that is equal with
     * probability 2^−m, m = k/2 uniform over 1..10: P(equal) = ½ + ½·E[2^−m]. */
    EqParams pr = { EQ_RANDOM, N, 2 };
    draw(&pr, SEED, 0, M, &t);
    double e = 0;
    for (int m = 1; m <= N / 2; m++) e += pow(2.0, -m) / (N / 2);
    CHECK(t.bad == 0, "eq_random: %ld of %ld examples fail the checker", t.bad, t.n);
    CHECK(binomial_ok(t.equal, t.n, 0.5 + 0.5 * e), "eq_random: %ld equal of %ld, expected %.4f", t.equal, t.n,
          0.5 + 0.5 * e);
    /* At length exactly N a chance-equal tail is 2^−10 rare: the rate is ½ + ½·2^−10. */
    draw(&pr, SEED + 1, N, M, &t);
    CHECK(t.bad == 0 && t.len_count[N] == M, "eq_random at k = N: %ld bad, %ld of length N", t.bad, t.len_count[N]);
    CHECK(binomial_ok(t.equal, t.n, 0.5 + 0.5 / 1024), "eq_random at N: %ld equal of %ld", t.equal, t.n);

    /* eq_one: exactly half equal; every negative differs in exactly one place, at
     * a uniform position, by a uniform other symbol (|Σ| = 5 to see it). */
    EqParams po = { EQ_ONE, N, 5 };
    draw(&po, SEED + 2, N, M, &t);
    CHECK(t.bad == 0, "eq_one: %ld of %ld examples fail the checker", t.bad, t.n);
    CHECK(binomial_ok(t.equal, t.n, 0.5), "eq_one: %ld equal of %ld", t.equal, t.n);
    CHECK(t.one_diff == t.n - t.equal, "eq_one: %ld negatives, %ld differ in exactly one position", t.n - t.equal,
          t.one_diff);
    CHECK(t.sym_change[0] == 0, "eq_one: %ld changes to the same symbol", t.sym_change[0]);
    for (int d = 1; d < 5; d++)
        CHECK(binomial_ok(t.sym_change[d], t.one_diff, 0.25), "eq_one: symbol shift %d seen %ld of %ld", d,
              t.sym_change[d], t.one_diff);
    for (int j = 0; j < N / 2; j++)
        CHECK(binomial_ok(t.pos_change[j], t.one_diff, 1.0 / (N / 2)), "eq_one: position %d changed %ld of %ld", j,
              t.pos_change[j], t.one_diff);
    EqParams pw = { EQ_ONE, N, 1024 };   /* the paper's alphabet, all lengths */
    draw(&pw, SEED + 3, 0, M, &t);
    CHECK(t.bad == 0 && t.one_diff == t.n - t.equal && binomial_ok(t.equal, t.n, 0.5),
          "eq_one |Σ| = 1024: %ld bad, %ld equal, %ld one-off of %ld", t.bad, t.equal, t.one_diff, t.n);

    /* eq_ncp: always a copy; every target follows from the tokens. */
    EqParams pn = { EQ_NCP, N, 1024 };
    draw(&pn, SEED + 4, 0, M / 4, &t);
    CHECK(t.bad == 0 && t.equal == t.n, "eq_ncp: %ld bad, %ld of %ld equal", t.bad, t.equal, t.n);
}

/* k uniform over the even lengths 2·⌈N/20⌉, +2, …, N and nothing else. */
static void test_lengths(void) {
    static const struct { int N, k_min; } cases[] = {
        { 20, 2 }, { 50, 6 } /* N/10 = 5 is odd: rounded up */, { 30, 4 }, { 60, 6 }, { 70, 8 }, { 400, 40 }, { 800, 80 },
        { 2, 2 }, { 4, 2 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int N = cases[c].N, k_min = cases[c].k_min, n_lens = (N - k_min) / 2 + 1;
        EqParams p = { EQ_ONE, N, 1024 };
        CHECK(eq_min_symbols(&p) == k_min, "N = %d: k_min %d, want %d", N, eq_min_symbols(&p), k_min);
        Tally t;
        long M = 400L * n_lens;
        draw(&p, SEED + 10 + c, 0, M, &t);
        long outside = 0;
        for (int k = 0; k <= N; k++) {
            int allowed = k >= k_min && k % 2 == 0;
            if (!allowed) outside += t.len_count[k];
            else CHECK(binomial_ok(t.len_count[k], M, 1.0 / n_lens), "N = %d: length %d drawn %ld of %ld", N, k,
                       t.len_count[k], M);
        }
        CHECK(outside == 0 && t.bad == 0, "N = %d: %ld examples of a length outside the set, %ld bad", N, outside,
              t.bad);
    }
}

/* The test split through the task builder: length exactly N, the checker's
 * targets, and the multi-label flag only on eq_ncp. */
static void test_splits(void) {
    static const CfgTaskType types[] = { TASK_EQ_RANDOM, TASK_EQ_ONE, TASK_EQ_NCP };
    for (int i = 0; i < 3; i++) {
        TaskSpec s = { .task = { .type = types[i], .seq_len = 30, .symbols = 64, .train_size = 300 },
                       .seed = SEED, .test_size = 200 };
        TaskData td;
        AlError err = { 0 };
        int rc = task_build(&s, &td, &err);
        CHECK(rc == 0, "type %d: %s", (int)types[i], err.msg);
        if (rc) continue;
        EqKind kind = (EqKind)i;
        int S = kind == EQ_RANDOM ? 2 : 64, bad = 0, not_n = 0, differ;
        for (int r = 0; r < td.test.n; r++) {
            not_n += td.test.info[r].len != 31;
            bad += ref_check(kind, S, dataset_tokens(&td.test, r), dataset_targets(&td.test, r), td.test.info[r].len,
                             &differ) < 0;
        }
        long train_lens = 0;
        for (int r = 0; r < td.train.n; r++) train_lens += td.train.info[r].len != 31;
        CHECK(bad == 0 && not_n == 0, "%s test split: %d rows fail the checker, %d not of length N", eq_name(kind), bad,
              not_n);
        CHECK(train_lens > 0, "%s: every training row has length N", eq_name(kind));
        CHECK(td.test.multilabel == (kind == EQ_NCP) && td.train.multilabel == (kind == EQ_NCP) &&
              td.gen.multilabel == (kind == EQ_NCP), "%s: multilabel flag", eq_name(kind));
        CHECK(td.vocab_size == S + 1 && td.n_classes == (kind == EQ_NCP ? S : 2) && td.seq_len == 31,
              "%s: vocab %d, classes %d, seq_len %d", eq_name(kind), td.vocab_size, td.n_classes, td.seq_len);
        Batch b;
        batch_alloc(&b, 8, td.gen.max_len);
        Rng rng = rng_stream(SEED, 3);
        taskgen_batch(&td.gen, SPLIT_TRAIN, &rng, &b);
        CHECK(b.multilabel == (kind == EQ_NCP), "%s: streaming batch multilabel %d", eq_name(kind), b.multilabel);
        batch_free(&b);
        task_free(&td);
    }
}

static void test_determinism(void) {
    enum { N = 40, M = 500 };
    for (int kind = 0; kind < 3; kind++) {
        EqParams p = { (EqKind)kind, N, kind == EQ_RANDOM ? 2 : 1024 };
        size_t bytes = sizeof(int) * M * (N + 1);
        int *t[3], *y[3];
        for (int r = 0; r < 3; r++) {
            t[r] = calloc(1, bytes);
            y[r] = calloc(1, bytes);
            Rng rng = rng_stream(r < 2 ? SEED : SEED + 1, 31);
            for (int i = 0; i < M; i++) {
                Example ex = { .tokens = t[r] + (size_t)i * (N + 1), .targets = y[r] + (size_t)i * (N + 1) };
                eq_sample(&p, &rng, 0, &ex);
            }
        }
        CHECK(memcmp(t[0], t[1], bytes) == 0 && memcmp(y[0], y[1], bytes) == 0, "%s: same seed, different bytes",
              eq_name(p.kind));
        CHECK(memcmp(t[0], t[2], bytes) != 0, "%s: other seed, same bytes", eq_name(p.kind));
        for (int r = 0; r < 3; r++) { free(t[r]); free(y[r]); }
    }
}

static void expect_bad(EqParams p, const char *word) {
    AlError err = { 0 };
    int rc = eq_check(&p, &err);
    CHECK(rc == 2 && err.code == 2 && strstr(err.msg, word) && !strncmp(err.msg, eq_name(p.kind), strlen(eq_name(p.kind))),
          "%s seq_len %d symbols %d: rc %d, message '%s' should name '%s'", eq_name(p.kind), p.seq_len, p.symbols, rc,
          err.msg, word);
}

static void test_errors(void) {
    expect_bad((EqParams){ EQ_ONE, 21, 1024 }, "seq_len must be even, got 21");
    expect_bad((EqParams){ EQ_NCP, 0, 1024 }, "seq_len 0 must be in [2, 65536]");
    expect_bad((EqParams){ EQ_RANDOM, 20, 3 }, "symbols 3 must be 2");
    expect_bad((EqParams){ EQ_NCP, 20, 1 }, "symbols 1 must be in [2, 65536]");
    AlError ok = { 0 };
    CHECK(eq_check(&(EqParams){ EQ_ONE, 2, 2 }, &ok) == 0, "smallest legal setting: %s", ok.msg);
}

/* ---- the multi-label loss and accuracy on eq_ncp rows ------------------------ */

/* ad_bce_multilabel on wide rows (the gradient harness checks narrow rows by
 * finite differences) against a double-precision reference: the loss with
 * log1p, and its gradient (σ(z) − y)/n, on the targets of real eq_ncp examples.
 * S = 1024, the paper's |Σ|, is two whole blocks of the loss's product of logs;
 * S = 533 ends in a partial block whose last 5 classes are not a whole group of
 * its vector lanes. */
static void test_bce_wide(int S) {
    enum { N = 12, B = 3, T = N + 1 };
    EqParams p = { EQ_NCP, N, S };
    int x[B * T], y[B * T];
    Rng rng = rng_stream(SEED, 5);
    for (int b = 0; b < B; b++) {
        Example ex = { .tokens = x + b * T, .targets = y + b * T };
        eq_sample(&p, &rng, b == 0 ? 4 : N, &ex);
        for (int i = ex.len; i < T; i++) y[b * T + i] = DATASET_IGNORE;
    }
    Arena arena;
    Tape tape;
    arena_init(&arena, 1u << 20);
    tape_init(&tape, &arena);
    float *zdata = tape_scratch(&tape, sizeof(float) * B * T * S), *gdata = tape_scratch(&tape, sizeof(float) * B * T * S);
    for (long i = 0; i < (long)B * T * S; i++) zdata[i] = (float)(6.0 * rng_uniform(&rng) - 3.0);
    memset(gdata, 0, sizeof(float) * B * T * S);   /* a caller's grad accumulates (tape.h) */
    Tensor z;
    tensor_init(&z, zdata, gdata, 3, (const int[]){ B, T, S });
    Tensor *loss = ad_bce_multilabel(&tape, &z, y);
    tape_backward(&tape, loss);
    double ref = 0;
    long n = 0, bad = 0;
    for (int r = 0; r < B * T; r++) n += y[r] >= 0;
    double worst = 0;
    for (int r = 0; r < B * T; r++)
        for (int c = 0; c < S; c++) {
            double zz = zdata[(long)r * S + c], yy = y[r] == S || y[r] == c, sig = 1 / (1 + exp(-zz));
            double g = y[r] < 0 ? 0 : (sig - yy) / n;
            if (y[r] >= 0) ref += fmax(zz, 0) - yy * zz + log1p(exp(-fabs(zz)));
            double err = fabs(gdata[(long)r * S + c] - g);
            worst = fmax(worst, err);
            bad += err > 1e-7 + 1e-5 * fabs(g);
        }
    ref /= n;
    CHECK(fabs(loss->data[0] - ref) <= 2e-6 * ref, "bce loss (|Σ| = %d) %.9g vs reference %.9g", S, loss->data[0], ref);
    CHECK(bad == 0, "bce gradient (|Σ| = %d): %ld of %d entries off (worst %.3g)", S, bad, B * T * S, worst);
    tape_free(&tape);
    arena_free(&arena);
}

/* "Correct if the prediction for every prefix is correct": logits +1 on the valid
 * symbols and −1 elsewhere are right everywhere; one flipped class breaks one
 * position and its sequence only. */
static void test_ncp_accuracy(void) {
    enum { N = 10, S = 6, B = 2, T = N + 1 };
    EqParams p = { EQ_NCP, N, S };
    int x[B * T], y[B * T];
    Rng rng = rng_stream(SEED, 9);
    for (int b = 0; b < B; b++) eq_sample(&p, &rng, N, &(Example){ .tokens = x + b * T, .targets = y + b * T });
    float data[B * T * S];
    for (int r = 0; r < B * T; r++)
        for (int c = 0; c < S; c++) data[r * S + c] = y[r] == S || y[r] == c ? 1.0f : -1.0f;
    Tensor z;
    tensor_init(&z, data, NULL, 3, (const int[]){ B, T, S });
    long right = 0, scored = 0, seqs = 0;
    eval_count_correct(&z, y, 1, NULL, &right, &scored, &seqs, NULL, NULL);
    CHECK(scored == B * N && right == scored && seqs == B, "all right: %ld of %ld positions, %ld sequences", right,
          scored, seqs);
    data[(T + 2) * S + 3] = -0.5f;      /* row 1, position 2 (first half: every symbol valid) */
    right = scored = seqs = 0;
    eval_count_correct(&z, y, 1, NULL, &right, &scored, &seqs, NULL, NULL);
    CHECK(right == scored - 1 && seqs == B - 1, "one flipped class: %ld of %ld positions, %ld sequences", right,
          scored, seqs);
    /* Single-label argmax on the same logits would call the first half right too. */
    right = scored = seqs = 0;
    int y1[B * T];
    for (int r = 0; r < B * T; r++) y1[r] = y[r] == S ? DATASET_IGNORE : y[r];
    eval_count_correct(&z, y1, 0, NULL, &right, &scored, &seqs, NULL, NULL);
    CHECK(right == scored && scored == B * N / 2, "argmax on the copy half: %ld of %ld", right, scored);
}

int main(void) {
    test_labels_and_balance();
    test_lengths();
    test_splits();
    test_determinism();
    test_errors();
    test_bce_wide(1024);
    test_bce_wide(533);
    test_ncp_accuracy();
    return check_exit("test_equality");
}
