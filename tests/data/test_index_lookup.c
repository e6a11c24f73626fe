/* test_index_lookup.c — the Index Lookup generator against an independent checker.
 *
 * The checker knows only the layout documented in index_lookup.h: it finds the
 * index token by scanning for the one id outside the symbol range, decodes its
 * 1-based position, and reads the answer off the symbols.  Distribution checks
 * cover the lengths (uniform over [min_len, N], or exactly as asked), the index
 * (uniform over 1..k), the symbols and the labels (uniform over Σ). */
#include "attnlab/data/dataset.h"
#include "attnlab/data/index_lookup.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

#define SEED 20240613u
#define GUARD 0x5eed5eed   /* written past the buffer: must survive every sample */

/* Counts of k equally likely outcomes: each within 5 sigma of n/k. */
static void check_uniform(const long *count, int k, const char *what) {
    long n = 0;
    for (int i = 0; i < k; i++) n += count[i];
    double e = (double)n / k, sd = sqrt((double)n * (1.0 / k) * (1.0 - 1.0 / k));
    int bad = 0;
    for (int i = 0; i < k; i++) bad += fabs((double)count[i] - e) > 5 * sd + 1e-9;
    CHECK(bad == 0 && n > 0, "%s: %d of %d outcomes off uniform (n = %ld, e = %.1f)", what, bad, k, n, e);
}

/* ---- the independent checker ------------------------------------------- */

typedef struct Tally {
    long *len_count;     /* N + 1 entries: examples per symbol count k */
    long *pos_count;     /* N + 1 entries: examples per 1-based index (fixed-length runs) */
    long *label_count;   /* |Σ| entries */
    long *sym_count;     /* |Σ| entries */
    double pos_sum, pos_sumsq;   /* of 2p − k − 1, which has mean 0 for p ~ U{1..k} */
    long n;
} Tally;

/* Checks one example; returns 1 if anything about it is wrong. */
static int verify_example(const IdxParams *p, const Example *ex, int want_len, Tally *ty) {
    const int A = p->alphabet, N = p->max_len, len = ex->len;
    if (len < 2 || len > N + 1) return 1;
    if (ex->tokens[N + 1] != GUARD || ex->targets[N + 1] != GUARD) return 1;
    if (ex->prompt_len != 0 || ex->answer_start != -1 || ex->answer_len != 0 || ex->group != 0) return 1;
    int where = -1, n_index = 0;
    for (int i = 0; i < len; i++) {
        if (ex->tokens[i] < 0 || ex->tokens[i] >= A + N) return 1;
        if (ex->tokens[i] >= A) { where = i; n_index++; }
    }
    int k = len - 1;
    if (n_index != 1 || where != k) return 1;           /* one index token, last */
    int pos = ex->tokens[k] - A + 1;                     /* 1-based */
    if (pos < 1 || pos > k) return 1;
    for (int i = 0; i < k; i++)
        if (ex->targets[i] != DATASET_IGNORE) return 1;
    if (ex->targets[k] != ex->tokens[pos - 1]) return 1;
    if (want_len > 0 ? k != want_len : (k < p->min_len || k > N)) return 1;
    ty->len_count[k]++;
    ty->pos_count[pos]++;
    ty->label_count[ex->targets[k]]++;
    for (int i = 0; i < k; i++) ty->sym_count[ex->tokens[i]]++;
    double d = 2.0 * pos - k - 1;
    ty->pos_sum += d;
    ty->pos_sumsq += d * d;
    ty->n++;
    return 0;
}

static void run_setting(const IdxParams *p, int want_len, int n_samples, uint64_t stream,
                        const char *what) {
    AlError err = { 0 };
    CHECK(idx_check(p, &err) == 0 && err.code == 0, "%s: rejected: %s", what, err.msg);
    const int A = p->alphabet, N = p->max_len;
    CHECK(idx_max_len(p) == N + 1 && idx_vocab_size(p) == A + N && idx_n_classes(p) == A,
          "%s: sizes %d %d %d", what, idx_max_len(p), idx_vocab_size(p), idx_n_classes(p));
    CHECK(idx_index_token(p, 1) == A && idx_index_token(p, N) == A + N - 1, "%s: index token ids", what);
    int cap = idx_max_len(p);
    int *tok = malloc((size_t)(cap + 1) * sizeof *tok), *tgt = malloc((size_t)(cap + 1) * sizeof *tgt);
    Tally ty = { .len_count = calloc((size_t)N + 1, sizeof(long)),
                 .pos_count = calloc((size_t)N + 1, sizeof(long)),
                 .label_count = calloc((size_t)A, sizeof(long)),
                 .sym_count = calloc((size_t)A, sizeof(long)) };
    Example ex = { .tokens = tok, .targets = tgt };
    Rng rng = rng_stream(SEED, stream);
    int bad = 0;
    for (int i = 0; i < n_samples; i++) {
        tok[cap] = tgt[cap] = GUARD;
        idx_sample(p, &rng, want_len, &ex);
        bad += verify_example(p, &ex, want_len, &ty);
    }
    CHECK(bad == 0, "%s: %d of %d examples wrong (layout, label, length or index range)", what, bad,
          n_samples);

    char msg[160];
    if (want_len == 0) {
        snprintf(msg, sizeof msg, "%s: lengths over [%d, %d]", what, p->min_len, N);
        check_uniform(ty.len_count + p->min_len, N - p->min_len + 1, msg);
    } else {
        snprintf(msg, sizeof msg, "%s: index over 1..%d", what, want_len);
        check_uniform(ty.pos_count + 1, want_len, msg);
    }
    snprintf(msg, sizeof msg, "%s: labels over the alphabet", what);
    check_uniform(ty.label_count, A, msg);
    snprintf(msg, sizeof msg, "%s: symbols", what);
    check_uniform(ty.sym_count, A, msg);
    /* p ~ U{1..k} for every k: 2p − k − 1 averages 0, within 5 standard errors. */
    double mean = ty.pos_sum / (double)ty.n, var = ty.pos_sumsq / (double)ty.n - mean * mean;
    CHECK(var > 0 ? fabs(mean) < 5 * sqrt(var / (double)ty.n) : mean == 0, "%s: index not centred in 1..k "
          "(mean of 2p-k-1 = %.3f)", what, mean);
    printf("%s: %d examples checked\n", what, n_samples);
    free(ty.len_count); free(ty.pos_count); free(ty.label_count); free(ty.sym_count);
    free(tok);
    free(tgt);
}

static void test_settings(void) {
    /* Paper 003: |Σ| = 64, k ~ U[10, N] for training, k = N for evaluation. */
    static const int paper_n[] = { 20, 50, 100, 200, 400 };
    for (int i = 0; i < 5; i++) {
        IdxParams p = { .alphabet = IDX_DEFAULT_ALPHABET, .max_len = paper_n[i],
                        .min_len = IDX_DEFAULT_MIN_LEN };
        char what[64];
        snprintf(what, sizeof what, "paper N=%d train", paper_n[i]);
        run_setting(&p, 0, 20000, 1 + (uint64_t)i, what);
        snprintf(what, sizeof what, "paper N=%d test (k = N)", paper_n[i]);
        run_setting(&p, paper_n[i], 20000, 11 + (uint64_t)i, what);
    }
    IdxParams tiny = { .alphabet = 2, .max_len = 1, .min_len = 1 };
    run_setting(&tiny, 0, 5000, 21, "N=1, |S|=2");
    IdxParams fixed = { .alphabet = 3, .max_len = 7, .min_len = 7 };
    run_setting(&fixed, 0, 5000, 22, "min_len = N = 7");
    IdxParams shorter = { .alphabet = 16, .max_len = 64, .min_len = 10 };
    run_setting(&shorter, 5, 5000, 23, "k = 5 < min_len");
}

/* A hand-built case: the layout as the header draws it. */
static void test_layout(void) {
    IdxParams p = { 64, 20, 10 };
    int tok[21], tgt[21];
    Example ex = { .tokens = tok, .targets = tgt };
    Rng rng = rng_stream(SEED, 30);
    int seen_first = 0, seen_last = 0, wrong = 0;
    for (int i = 0; i < 5000; i++) {
        idx_sample(&p, &rng, 20, &ex);
        if (tok[20] == 64) {                /* IDX_1, the first id after the symbols */
            seen_first = 1;
            wrong += tgt[20] != tok[0];
        }
        if (tok[20] == 64 + 19) {           /* IDX_N, the last id of the vocabulary */
            seen_last = 1;
            wrong += tgt[20] != tok[19];
        }
    }
    CHECK(seen_first && seen_last && wrong == 0, "IDX_1 seen %d, IDX_N seen %d, %d answers not "
          "s_1 / s_N", seen_first, seen_last, wrong);
}

static void test_determinism(void) {
    enum { N = 50, M = 2000 };
    IdxParams p = { 64, N, 10 };
    size_t bytes = sizeof(int) * M * (N + 1);
    int *t[3], *y[3], len[3][M];
    for (int r = 0; r < 3; r++) {
        t[r] = calloc(1, bytes);
        y[r] = calloc(1, bytes);
        Rng rng = rng_stream(r < 2 ? SEED : SEED + 1, 31);
        for (int i = 0; i < M; i++) {
            Example ex = { .tokens = t[r] + (size_t)i * (N + 1), .targets = y[r] + (size_t)i * (N + 1) };
            idx_sample(&p, &rng, 0, &ex);
            len[r][i] = ex.len;
        }
    }
    CHECK(memcmp(t[0], t[1], bytes) == 0 && memcmp(y[0], y[1], bytes) == 0 &&
          memcmp(len[0], len[1], sizeof len[0]) == 0, "same seed, different bytes");
    CHECK(memcmp(t[0], t[2], bytes) != 0, "other seed, same bytes");
    for (int r = 0; r < 3; r++) { free(t[r]); free(y[r]); }
}

static void expect_bad(IdxParams p, const char *word, const char *what) {
    AlError err = { 0 };
    int rc = idx_check(&p, &err);
    CHECK(rc == 2 && err.code == 2, "%s: rc %d", what, rc);
    CHECK(strstr(err.msg, word) != NULL && strncmp(err.msg, "index_lookup: ", 14) == 0,
          "%s: message does not name '%s': %s", what, word, err.msg);
}

static void test_errors(void) {
    expect_bad((IdxParams){ 1, 20, 10 }, "alphabet", "alphabet 1");
    expect_bad((IdxParams){ IDX_MAX_ALPHABET + 1, 20, 10 }, "alphabet", "alphabet too big");
    expect_bad((IdxParams){ 64, 0, 1 }, "max_len", "max_len 0");
    expect_bad((IdxParams){ 64, IDX_MAX_N + 1, 10 }, "max_len", "max_len too big");
    expect_bad((IdxParams){ 64, 20, 0 }, "min_len", "min_len 0");
    expect_bad((IdxParams){ 64, 20, 21 }, "min_len", "min_len > max_len");
    AlError ok = { 0 };
    CHECK(idx_check(&(IdxParams){ 2, 1, 1 }, &ok) == 0 && ok.code == 0, "smallest legal setting: %s", ok.msg);
}

int main(void) {
    test_settings();
    test_layout();
    test_determinism();
    test_errors();
    return check_exit("test_index_lookup");
}
