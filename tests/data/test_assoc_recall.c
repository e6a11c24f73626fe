/* test_assoc_recall.c — the associative-recall generator against an independent
 * checker.
 *
 * The checker knows only the layout documented in assoc_recall.h: it decodes every
 * pair token into (key, value), finds the query token, searches the context for the
 * query's key and re-derives the label from that pair.  Distribution checks: labels
 * balanced, query position uniform over 1..n, keys uniform over the alphabet, and
 * the first position's key uniform too (the order is random, not sorted). */
#include "attnlab/config/config.h"
#include "attnlab/data/assoc_recall.h"
#include "attnlab/data/dataset.h"
#include "attnlab/data/task.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

#define SEED 20231018u
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

typedef struct Tally { long *label, *qpos, *key, *first_key; } Tally;

/* Checks one example by brute force; returns 1 if anything about it is wrong. */
static int verify(int n, int K, const Example *ex, unsigned char *seen, Tally *t) {
    if (ex->len != n + 1 || ex->tokens[n + 1] != GUARD || ex->targets[n + 1] != GUARD) return 1;
    if (ex->prompt_len != 0 || ex->answer_start != -1 || ex->answer_len != 0 || ex->group != 0) return 1;
    memset(seen, 0, (size_t)K);
    for (int i = 0; i < n; i++) {
        int tok = ex->tokens[i];
        if (tok < 0 || tok >= 2 * K || ex->targets[i] != DATASET_IGNORE) return 1;
        if (seen[tok / 2]++) return 1;                        /* keys distinct */
        t->key[tok / 2]++;
    }
    int q = ex->tokens[n];
    if (q < 2 * K || q >= 3 * K) return 1;
    int qkey = q - 2 * K, where = -1;
    for (int i = 0; i < n; i++)
        if (ex->tokens[i] / 2 == qkey) where = i;
    if (where < 0 || ex->targets[n] != ex->tokens[where] % 2) return 1;
    t->label[ex->targets[n]]++;
    t->qpos[where]++;
    t->first_key[ex->tokens[0] / 2]++;
    return 0;
}

static void run_setting(ArParams p, int samples, uint64_t stream) {
    AlError err = { 0 };
    CHECK(ar_check(&p, &err) == 0, "n=%d keys=%d rejected: %s", p.n, p.keys, err.msg);
    const int n = p.n, K = ar_keys(&p);
    CHECK(K == (p.keys ? p.keys : n), "K = %d", K);
    CHECK(ar_vocab_size(&p) == 3 * K && ar_n_classes(&p) == 2 && ar_max_len(&p) == n + 1, "sizes");
    CHECK(ar_pair_token(&p, K - 1, 1) == 2 * K - 1 && ar_query_token(&p, 0) == 2 * K, "token ids");
    int *tok = malloc((size_t)(n + 2) * sizeof *tok), *tgt = malloc((size_t)(n + 2) * sizeof *tgt);
    unsigned char *seen = malloc((size_t)K);
    Tally t = { calloc(2, sizeof(long)), calloc((size_t)n, sizeof(long)), calloc((size_t)K, sizeof(long)),
                calloc((size_t)K, sizeof(long)) };
    Example ex = { .tokens = tok, .targets = tgt };
    Rng rng = rng_stream(SEED, stream);
    int bad = 0;
    for (int s = 0; s < samples; s++) {
        tok[n + 1] = tgt[n + 1] = GUARD;
        ar_sample(&p, &rng, &ex);
        bad += verify(n, K, &ex, seen, &t);
    }
    char what[96];
    CHECK(bad == 0, "n=%d K=%d: %d of %d examples wrong (layout, distinct keys or label)", n, K, bad, samples);
    snprintf(what, sizeof what, "n=%d K=%d labels", n, K);
    check_uniform(t.label, 2, what);
    snprintf(what, sizeof what, "n=%d K=%d query position", n, K);
    check_uniform(t.qpos, n, what);
    snprintf(what, sizeof what, "n=%d K=%d keys", n, K);
    check_uniform(t.key, K, what);
    snprintf(what, sizeof what, "n=%d K=%d key at position 0", n, K);
    check_uniform(t.first_key, K, what);
    printf("n=%d K=%d: %d examples checked\n", n, K, samples);
    free(t.label); free(t.qpos); free(t.key); free(t.first_key);
    free(seen); free(tok); free(tgt);
}

static void test_settings(void) {
    run_setting((ArParams){ 8, 0 }, 20000, 1);      /* the sweep's sizes, K = n */
    run_setting((ArParams){ 32, 0 }, 20000, 2);
    run_setting((ArParams){ 128, 0 }, 5000, 3);
    run_setting((ArParams){ 16, 64 }, 20000, 4);    /* K = 4n: most keys absent from an example */
    run_setting((ArParams){ 1, 2 }, 5000, 5);       /* the smallest legal setting */
}

static void test_determinism(void) {
    enum { N = 16, M = 500 };
    ArParams p = { N, 0 };
    int *t[3];
    for (int r = 0; r < 3; r++) {
        t[r] = calloc((size_t)M * 2 * (N + 1), sizeof(int));
        Rng rng = rng_stream(r < 2 ? SEED : SEED + 1, 9);
        for (int i = 0; i < M; i++) {
            Example ex = { .tokens = t[r] + (size_t)i * 2 * (N + 1), .targets = t[r] + (size_t)i * 2 * (N + 1) + N + 1 };
            ar_sample(&p, &rng, &ex);
        }
    }
    size_t bytes = (size_t)M * 2 * (N + 1) * sizeof(int);
    CHECK(!memcmp(t[0], t[1], bytes), "same seed, different examples");
    CHECK(memcmp(t[0], t[2], bytes) != 0, "other seed, same examples");
    for (int r = 0; r < 3; r++) free(t[r]);
}

static void expect_bad(ArParams p, const char *fragment) {
    AlError err = { 0 };
    int rc = ar_check(&p, &err);
    CHECK(rc == 2 && err.code == 2 && !strncmp(err.msg, "assoc_recall: ", 14) && strstr(err.msg, fragment),
          "n=%d keys=%d: rc %d, message '%s' lacks '%s'", p.n, p.keys, rc, err.msg, fragment);
}

static void test_errors(void) {
    expect_bad((ArParams){ 0, 0 }, "seq_len 0 must be in [1, 4096]");
    expect_bad((ArParams){ AR_MAX_N + 1, 0 }, "seq_len 4097 must be in [1, 4096]");
    expect_bad((ArParams){ 8, 5 }, "keys 5 must be in [seq_len = 8, 1048576]");
    expect_bad((ArParams){ 8, AR_MAX_KEYS + 1 }, "keys 1048577 must be in");
}

/* Through the config and task_build, as a run does: sizes, streaming, and the
 * generator's error prefixed with the config key. */
static void test_task(void) {
    Config c;
    cfg_defaults(&c);
    AlError err = { 0 };
    int rc = cfg_parse(&c, "{\"task\": {\"type\": \"assoc_recall\", \"seq_len\": 8, \"train_size\": 0}, "
                           "\"eval\": {\"test_size\": 300}}", "ar.json", &err);
    CHECK(rc == 0, "config refused: %s", err.msg);
    TaskData td;
    TaskSpec spec;
    rc = task_build_from(cfg_task_spec(&c, &spec), "ar.json", &td, &err);
    CHECK(rc == 0 && td.streaming && td.vocab_size == 24 && td.n_classes == 2 && td.seq_len == 9 &&
          td.test.n == 300, "task_build: rc %d streaming %d vocab %d classes %d len %d test %d (%s)", rc,
          td.streaming, td.vocab_size, td.n_classes, td.seq_len, td.test.n, err.msg);
    if (!rc) task_free(&td);
    rc = cfg_parse(&c, "{\"task\": {\"type\": \"assoc_recall\", \"seq_len\": 8, \"keys\": 5}}", "ar.json", &err);
    CHECK(rc == 0, "config with keys 5 refused by the loader (the generator checks it): %s", err.msg);
    rc = task_build_from(cfg_task_spec(&c, &spec), "ar.json", &td, &err);
    CHECK(rc == 2 && !strncmp(err.msg, "ar.json: task.keys: assoc_recall: keys 5 must be in [seq_len = 8", 63),
          "keys < seq_len: rc %d, %s", rc, err.msg);
    rc = cfg_parse(&c, "{\"task\": {\"type\": \"index_lookup\", \"keys\": 5}}", "x.json", &err);
    CHECK(rc == 2 && strstr(err.msg, "task.keys: not valid for task.type \"index_lookup\" (only for \"assoc_recall\")"),
          "task.keys on another task: %s", err.msg);
}

int main(void) {
    test_settings();
    test_determinism();
    test_errors();
    test_task();
    return check_exit("test_assoc_recall");
}
