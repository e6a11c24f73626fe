/* test_jsonl.c — the JSONL dataset format: round trips, every documented error
 * (message, file name and line number), the chunked file reader against the
 * in-memory parser, and random mutations of a valid file that must load or fail
 * cleanly (run it under ATTNLAB_SANITIZE for the memory checks). */
#include "attnlab/data/dyck.h"
#include "attnlab/data/jsonl.h"
#include "check.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SEED 77031u

static char g_dir[256];

static void path_in_dir(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", g_dir, name); }

static int write_file(const char *path, const char *text, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return 1;
    size_t put = fwrite(text, 1, n, f);
    return fclose(f) != 0 || put != n;
}

static char *slurp(const char *path, size_t *n) { return tu_read_file(path, n); }

static double now_sec(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Every invariant a successful read promises. */
static int data_consistent(const Dataset *d, const JsonlStats *st) {
    if (d->n < 1 || d->seq_len < 1 || !d->info || d->vocab_size < 1 || d->n_classes < 1) return 0;
    long long scored = 0;
    int min_len = d->seq_len, max_len = 0;
    for (int r = 0; r < d->n; r++) {
        const RowInfo *x = &d->info[r];
        int len = x->len;
        if (len < 1 || len > d->seq_len) return 0;
        min_len = len < min_len ? len : min_len;
        max_len = len > max_len ? len : max_len;
        for (int i = 0; i < d->seq_len; i++) {
            int t = dataset_tokens(d, r)[i], y = dataset_targets(d, r)[i];
            if (t < 0 || t >= d->vocab_size || y < -1 || y >= d->n_classes) return 0;
            if (i >= len && (t != d->pad_id || y != -1)) return 0;
            scored += y >= 0;
        }
        if (x->prompt_len < 0 || x->prompt_len > len || x->answer_start < -1 || x->answer_start >= len ||
            x->answer_len < 0 || x->group < 0 || (x->answer_start >= 0 && x->answer_start + x->answer_len > len) ||
            (x->answer_start < 0 && x->answer_len != 0)) return 0;
    }
    return scored == st->n_scored && scored > 0 && min_len == st->min_len && max_len == d->seq_len &&
           (min_len == max_len || (d->pad_id >= 0 && d->pad_id < d->vocab_size));
}

/* ---- round trips ---------------------------------------------------------- */

static void test_exact_text(void) {
    Dataset d;
    dataset_alloc(&d, 2, 3, 10, 2);
    int tok[6] = { 1, 2, 3, 4, 5, 6 }, tgt[6] = { -1, 1, 0, -1, -1, 1 };
    memcpy(d.tokens, tok, sizeof tok);
    memcpy(d.targets, tgt, sizeof tgt);
    dataset_alloc_info(&d);
    d.info[0] = (RowInfo){ .len = 3, .group = 0 };
    d.info[1] = (RowInfo){ .len = 2, .group = 7 };
    char path[512];
    path_in_dir(path, sizeof path, "exact.jsonl");
    AlError err = { 0 };
    CHECK(jsonl_write(path, &d, JSONL_GROUP, &err) == 0, "write: %s", err.msg);
    size_t n;
    char *text = slurp(path, &n);
    const char *want = "{\"tokens\":[1,2,3],\"labels\":[-1,1,0],\"mask\":[0,1,1],\"group\":0}\n"
                       "{\"tokens\":[4,5],\"labels\":[-1,-1],\"mask\":[0,0],\"group\":7}\n";
    CHECK(text && strcmp(text, want) == 0, "written text:\n%s\nwant:\n%s", text ? text : "(none)", want);
    free(text);
    dataset_free(&d);
}

/* Random rows of varying length with groups and chain-of-thought fields. */
static void test_round_trip(void) {
    enum { N = 60, L = 17 };
    Rng rng = rng_stream(SEED, 1);
    Dataset d;
    dataset_alloc(&d, N, L, 50, 9);
    dataset_alloc_info(&d);
    int max_tok = 0, max_tgt = 0;
    for (int r = 0; r < N; r++) {
        RowInfo *x = &d.info[r];
        x->len = r == 5 ? L : 1 + (int)rng_below(&rng, L);  /* the longest row sets seq_len */
        x->group = (int)rng_below(&rng, 3);
        x->prompt_len = (int)rng_below(&rng, (uint32_t)x->len + 1);
        x->answer_start = r % 4 == 0 ? -1 : (int)rng_below(&rng, (uint32_t)x->len);
        x->answer_len = x->answer_start < 0 ? 0 : (int)rng_below(&rng, (uint32_t)(x->len - x->answer_start + 1));
        for (int i = 0; i < L; i++) {
            int t = (int)rng_below(&rng, 40), y = rng_below(&rng, 3) ? (int)rng_below(&rng, 7) : -1;
            dataset_tokens(&d, r)[i] = t;
            dataset_targets(&d, r)[i] = y;
            if (i < x->len) {
                max_tok = t > max_tok ? t : max_tok;
                max_tgt = y > max_tgt ? y : max_tgt;
            }
        }
    }
    char path[512];
    path_in_dir(path, sizeof path, "round.jsonl");
    AlError err = { 0 };
    CHECK(jsonl_write(path, &d, JSONL_GROUP | JSONL_COT, &err) == 0, "write: %s", err.msg);
    Dataset back;
    JsonlStats st;
    int rc = jsonl_read(path, NULL, &back, &st, &err);
    CHECK(rc == 0, "read back: %s", err.msg);
    if (rc) return;
    CHECK(data_consistent(&back, &st), "read-back invariants");
    CHECK(st.fields == (JSONL_GROUP | JSONL_COT), "fields %d", st.fields);
    CHECK(back.n == N && back.seq_len == L, "shape %d x %d", back.n, back.seq_len);
    CHECK(back.pad_id == max_tok + 1 && back.vocab_size == max_tok + 2,
          "pad %d vocab %d, want a fresh pad id %d", back.pad_id, back.vocab_size, max_tok + 1);
    CHECK(back.n_classes == max_tgt + 1, "n_classes %d, want %d", back.n_classes, max_tgt + 1);
    int same = 1;
    for (int r = 0; r < N; r++) {
        const RowInfo *a = &d.info[r], *b = &back.info[r];
        same &= a->len == b->len && a->group == b->group && a->prompt_len == b->prompt_len &&
                a->answer_start == b->answer_start && a->answer_len == b->answer_len;
        same &= !memcmp(dataset_tokens(&back, r), dataset_tokens(&d, r), sizeof(int) * (size_t)a->len);
        same &= !memcmp(dataset_targets(&back, r), dataset_targets(&d, r), sizeof(int) * (size_t)a->len);
    }
    CHECK(same, "rows or row info differ after the round trip");

    /* Writing what was read gives the same bytes. */
    char path2[512];
    path_in_dir(path2, sizeof path2, "round2.jsonl");
    CHECK(jsonl_write(path2, &back, st.fields, &err) == 0, "rewrite: %s", err.msg);
    size_t n1, n2;
    char *a = slurp(path, &n1), *b = slurp(path2, &n2);
    CHECK(a && b && n1 == n2 && !memcmp(a, b, n1), "rewritten file differs");
    free(a);
    free(b);
    dataset_free(&back);

    /* Without the optional keys, the reader's info holds the defaults. */
    CHECK(jsonl_write(path, &d, 0, &err) == 0, "write without fields: %s", err.msg);
    rc = jsonl_read(path, NULL, &back, &st, &err);
    CHECK(rc == 0 && st.fields == 0 && back.info[7].group == 0 && back.info[7].prompt_len == 0 &&
          back.info[7].answer_start == -1 && back.info[7].answer_len == 0 && back.info[7].len == d.info[7].len,
          "defaults without optional keys: %s", err.msg);
    dataset_free(&back);

    /* Fixed-length rows (no info): bytes identical, no padding, vocab = max token + 1. */
    free(d.info);
    d.info = NULL;
    CHECK(jsonl_write(path, &d, 0, &err) == 0, "write fixed: %s", err.msg);
    rc = jsonl_read(path, NULL, &back, &st, &err);
    CHECK(rc == 0 && back.pad_id == -1 && back.seq_len == L && st.min_len == L &&
          !memcmp(back.tokens, d.tokens, sizeof(int) * N * L) &&
          !memcmp(back.targets, d.targets, sizeof(int) * N * L), "fixed-length round trip: %s", err.msg);
    dataset_free(&back);
    dataset_free(&d);
}

/* Dyck examples through the file format: labels, groups, vocabulary. */
static void test_dyck_file(void) {
    enum { N = 500, L = 40 };
    DyckParams p = { L, 2, 2 };
    Rng rng = rng_stream(SEED, 2);
    Dataset d;
    dataset_alloc(&d, N, L, dyck_vocab_size(&p), 2);
    dataset_alloc_info(&d);
    for (int r = 0; r < N; r++) {
        Example ex = { .tokens = dataset_tokens(&d, r), .targets = dataset_targets(&d, r) };
        dyck_sample(&p, &rng, &ex);
        d.info[r] = (RowInfo){ ex.len, ex.prompt_len, ex.answer_start, ex.answer_len, ex.group };
    }
    char path[512];
    path_in_dir(path, sizeof path, "dyck.jsonl");
    AlError err = { 0 };
    Dataset back;
    JsonlStats st;
    int rc = jsonl_write(path, &d, JSONL_GROUP, &err) || jsonl_read(path, NULL, &back, &st, &err);
    CHECK(rc == 0, "dyck file: %s", err.msg);
    if (rc) return;
    CHECK(back.vocab_size == 4 && back.n_classes == 2 && st.n_scored == N && back.pad_id == -1,
          "dyck file: vocab %d classes %d scored %lld", back.vocab_size, back.n_classes, st.n_scored);
    int same = !memcmp(back.tokens, d.tokens, sizeof(int) * N * L) && !memcmp(back.targets, d.targets, sizeof(int) * N * L);
    for (int r = 0; r < N; r++) same &= back.info[r].group == d.info[r].group;
    CHECK(same, "dyck file: rows or groups differ");
    dataset_free(&back);
    dataset_free(&d);
}

static void test_pair_and_options(void) {
    char tr[512], te[512];
    path_in_dir(tr, sizeof tr, "pair_train.jsonl");
    path_in_dir(te, sizeof te, "pair_test.jsonl");
    const char *train = "{\"tokens\":[1,2,3],\"labels\":[0,0,1],\"mask\":[0,0,1]}\n"
                        "{\"tokens\":[3,2,1],\"labels\":[0,0,0],\"mask\":[0,0,1]}\n";
    const char *test = "{\"tokens\":[1,2,3,7,1],\"labels\":[0,0,0,0,4],\"mask\":[0,0,0,0,1]}\n"
                       "{\"tokens\":[2],\"labels\":[1],\"mask\":[1]}";  /* no final newline */
    write_file(tr, train, strlen(train));
    write_file(te, test, strlen(test));
    Dataset a, b;
    JsonlStats st[2];
    AlError err = { 0 };
    int rc = jsonl_read_pair(tr, te, NULL, &a, &b, st, &err);
    CHECK(rc == 0, "pair: %s", err.msg);
    if (rc == 0) {
        /* One vocabulary (max token 7, plus a fresh pad id 8) and one class count (0..4). */
        CHECK(a.vocab_size == 9 && b.vocab_size == 9 && a.n_classes == 5 && b.n_classes == 5,
              "pair: vocab %d/%d classes %d/%d", a.vocab_size, b.vocab_size, a.n_classes, b.n_classes);
        CHECK(a.pad_id == 8 && b.pad_id == 8 && a.seq_len == 3 && b.seq_len == 5 && st[0].min_len == 3 &&
              st[1].min_len == 1, "pair: pad %d/%d seq_len %d/%d", a.pad_id, b.pad_id, a.seq_len, b.seq_len);
        CHECK(dataset_tokens(&b, 1)[1] == 8 && dataset_targets(&b, 1)[1] == -1 && dataset_targets(&b, 1)[0] == 1,
              "pair: padding of the short test row");
        CHECK(data_consistent(&a, &st[0]) && data_consistent(&b, &st[1]), "pair: invariants");
    }
    dataset_free(&a);
    dataset_free(&b);

    /* Given sizes and a given pad id. */
    JsonlOptions o = { .vocab_size = 20, .n_classes = 6, .pad_id_set = 1, .pad_id = 0 };
    rc = jsonl_read_pair(tr, te, &o, &a, &b, NULL, &err);
    CHECK(rc == 0 && a.vocab_size == 20 && b.n_classes == 6 && b.pad_id == 0 &&
          dataset_tokens(&b, 1)[4] == 0, "pair with options: %s", err.msg);
    dataset_free(&a);
    dataset_free(&b);
    /* A pad id beyond the inferred vocabulary widens it. */
    JsonlOptions o2 = { .pad_id_set = 1, .pad_id = 30 };
    rc = jsonl_read(te, &o2, &a, NULL, &err);
    CHECK(rc == 0 && a.vocab_size == 31 && a.pad_id == 30, "pad 30: vocab %d", a.vocab_size);
    dataset_free(&a);
    /* The second file's errors name the second file; both outputs are left empty. */
    rc = jsonl_read_pair(tr, "/nonexistent/test.jsonl", NULL, &a, &b, NULL, &err);
    CHECK(rc == 2 && strstr(err.msg, "cannot open '/nonexistent/test.jsonl'") && a.tokens == NULL && b.tokens == NULL,
          "pair, missing test file: %s", err.msg);
    rc = jsonl_read_pair(te, tr, NULL, &a, &b, NULL, &err);  /* swapped: fine too */
    CHECK(rc == 0, "pair swapped: %s", err.msg);
    dataset_free(&a);
    dataset_free(&b);
}

/* ---- errors ------------------------------------------------------------------- */

#define OK_ROW "{\"tokens\":[1,2],\"labels\":[0,1],\"mask\":[1,1]}\n"

typedef struct BadCase {
    const char *text;      /* file content */
    int line;              /* line named in the message, 0 = whole-file message */
    const char *want;      /* substring of the message */
    JsonlOptions opt;
} BadCase;

static const BadCase BAD[] = {
    { OK_ROW "{\"tokens\":[1,2],\"labels\":[0,1] \"mask\":[1,1]}\n", 2, "column 32: not valid JSON (at '\"')", { 0 } },
    { OK_ROW OK_ROW "{\"tokens\":[1,2\n", 3, "not valid JSON: the line ends inside a value", { 0 } },
    { OK_ROW "{\"tokens\":[1],\"labels\":[0],\"mask\":[1]} x\n", 2, "column 40: not valid JSON (at 'x')", { 0 } },
    { OK_ROW "[1,2,3]\n", 2, "expected a JSON object {\"tokens\": [...], ...}, got an array", { 0 } },
    { "42\n", 1, "expected a JSON object {\"tokens\": [...], ...}, got a number", { 0 } },
    { OK_ROW "{\"tokens\":[1],\"labels\":[0]}\n", 2, "missing key \"mask\" (every line needs \"tokens\", \"labels\" and \"mask\")", { 0 } },
    { "{\"labels\":[0],\"mask\":[1]}\n", 1, "missing key \"tokens\"", { 0 } },
    { OK_ROW "{\"tokens\":[1],\"lables\":[0],\"mask\":[1]}\n", 2, "unknown key \"lables\" (did you mean \"labels\"?)", { 0 } },
    { OK_ROW "{\"tokens\":[1],\"labels\":[0],\"mask\":[1],\"weight\":2}\n", 2, "unknown key \"weight\" (valid keys: tokens, labels", { 0 } },
    { OK_ROW "{\"tokens\":[1],\"tokens\":[1],\"labels\":[0],\"mask\":[1]}\n", 2, "duplicate key \"tokens\"", { 0 } },
    { OK_ROW "{\"tokens\":\"abc\",\"labels\":[0],\"mask\":[1]}\n", 2, "tokens: expected an array of integers, got a string (\"abc\")", { 0 } },
    { OK_ROW "{\"tokens\":[1],\"labels\":{},\"mask\":[1]}\n", 2, "labels: expected an array of integers, got an object", { 0 } },
    { OK_ROW "{\"tokens\":[1,1.5],\"labels\":[0,0],\"mask\":[1,1]}\n", 2, "tokens[1]: expected an integer, got 1.5", { 0 } },
    { OK_ROW "{\"tokens\":[\"1\"],\"labels\":[0],\"mask\":[1]}\n", 2, "tokens[0]: expected an integer, got a string (\"1\")", { 0 } },
    { OK_ROW "{\"tokens\":[null],\"labels\":[0],\"mask\":[1]}\n", 2, "tokens[0]: expected an integer, got null", { 0 } },
    { OK_ROW "{\"tokens\":[1e999],\"labels\":[0],\"mask\":[1]}\n", 2, "tokens[0]: expected an integer, got a number too large for a double", { 0 } },
    { OK_ROW "{\"tokens\":[-3],\"labels\":[0],\"mask\":[1]}\n", 2, "tokens[0]: must be >= 0, got -3", { 0 } },
    { OK_ROW "{\"tokens\":[99999999],\"labels\":[0],\"mask\":[1]}\n", 2, "tokens[0]: must be <= 16777215, got 99999999", { 0 } },
    { OK_ROW "{\"tokens\":[1,2,10],\"labels\":[0,0,0],\"mask\":[1,1,1]}\n", 2, "tokens[2]: must be <= 9 (vocab_size is 10), got 10", { .vocab_size = 10 } },
    { OK_ROW "{\"tokens\":[1,2,3],\"labels\":[0,1],\"mask\":[1,1,1]}\n", 2, "labels has 2 entries but tokens has 3 (one per token)", { 0 } },
    { OK_ROW "{\"tokens\":[1,2,3],\"labels\":[0,1,1],\"mask\":[1,1,1,1]}\n", 2, "mask has 4 entries but tokens has 3", { 0 } },
    { OK_ROW "{\"tokens\":[1,2],\"labels\":[0,1],\"mask\":[1,2]}\n", 2, "mask[1]: must be 0 or 1, got 2", { 0 } },
    { OK_ROW "{\"tokens\":[1,2],\"labels\":[0,1],\"mask\":[true,1]}\n", 2, "mask[0]: must be 0 or 1, got true", { 0 } },
    { OK_ROW "{\"tokens\":[1,2],\"labels\":[-1,1],\"mask\":[1,1]}\n", 2, "labels[0] (scored: mask[0] is 1): must be >= 0, got -1", { 0 } },
    { OK_ROW "{\"tokens\":[1,2],\"labels\":[-2,1],\"mask\":[0,1]}\n", 2, "labels[0]: must be >= -1, got -2", { 0 } },
    { OK_ROW "{\"tokens\":[1,2],\"labels\":[0,2],\"mask\":[1,1]}\n", 2, "labels[1] (scored: mask[1] is 1): must be <= 1 (n_classes is 2), got 2", { .n_classes = 2 } },
    { OK_ROW "{\"tokens\":[],\"labels\":[],\"mask\":[]}\n", 2, "tokens: empty (a row needs at least one token)", { 0 } },
    { OK_ROW "{\"tokens\":[1,2,3,4,5],\"labels\":[0,0,0,0,0],\"mask\":[1,1,1,1,1]}\n", 2, "tokens: 5 entries, more than the limit of 4 per row", { .max_len = 4 } },
    { OK_ROW "{\"tokens\":[1,2,3,4,5,6,7,8,9,10],\"labels\":[0,0,0,0,0,0,0,0,0,0],\"mask\":[1,1,1,1,1,1,1,1,1,1]}\n",
      2, "line longer than 64 bytes (the limit; is this a JSONL file?)", { .max_line_bytes = 64 } },
    { OK_ROW "\n" OK_ROW, 2, "empty line (one JSON object per line; remove blank lines)", { 0 } },
    { OK_ROW OK_ROW " \t\n", 3, "empty line", { 0 } },
    { OK_ROW "{\"tokens\":[1],\"labels\":[0],\0\"mask\":[1]}\n", 2, "contains a NUL byte at column 28 (is this a text file?)", { 0 } },
    { OK_ROW "{\"tokens\":[[[[[[[[1]]]]]]]],\"labels\":[0],\"mask\":[1]}\n", 2, "column 14: nested deeper than 4 levels", { 0 } },
    { OK_ROW "{\"tokens\":[[1]],\"labels\":[0],\"mask\":[1]}\n", 2, "tokens[0]: expected an integer, got an array", { 0 } },
    { OK_ROW "{\"tokens\":[1],\"labels\":[0],\"mask\":[1],\"group\":1}\n", 2, "has \"group\" but the first line has none (give it on every line or on none)", { 0 } },
    { "{\"tokens\":[1],\"labels\":[0],\"mask\":[1],\"group\":1}\n" OK_ROW, 2, "has no \"group\" but the first line has one", { 0 } },
    { "{\"tokens\":[1],\"labels\":[0],\"mask\":[1],\"group\":-1}\n", 1, "group: must be >= 0, got -1", { 0 } },
    { "{\"tokens\":[1],\"labels\":[0],\"mask\":[1],\"group\":\"a\"}\n", 1, "group: expected an integer, got a string (\"a\")", { 0 } },
    { "{\"tokens\":[1],\"labels\":[0],\"mask\":[1],\"prompt_len\":0,\"answer_start\":-1}\n", 1,
      "missing key \"answer_len\" (prompt_len, answer_start and answer_len go together: all three or none)", { 0 } },
    { "{\"tokens\":[1,2,3],\"labels\":[0,0,0],\"mask\":[1,1,1],\"prompt_len\":5,\"answer_start\":-1,\"answer_len\":0}\n", 1,
      "prompt_len: must be <= 3 (the row length), got 5", { 0 } },
    { "{\"tokens\":[1,2,3],\"labels\":[0,0,0],\"mask\":[1,1,1],\"prompt_len\":1,\"answer_start\":-1,\"answer_len\":2}\n", 1,
      "answer_len must be 0 when answer_start is -1", { 0 } },
    { "{\"tokens\":[1,2,3],\"labels\":[0,0,0],\"mask\":[1,1,1],\"prompt_len\":1,\"answer_start\":2,\"answer_len\":2}\n", 1,
      "answer_len must be in [0, row length - answer_start]", { 0 } },
    { OK_ROW "{\"tokens\":[1],\"labels\":[0],\"mask\":[1],\"prompt_len\":0,\"answer_start\":-1,\"answer_len\":0}\n", 2,
      "has prompt_len/answer_start/answer_len but the first line has none", { 0 } },
    { "", 0, "no rows (the file is empty)", { 0 } },
    { "{\"tokens\":[1,2],\"labels\":[0,1],\"mask\":[0,0]}\n", 0, "no position is scored (every mask entry is 0)", { 0 } },
    { OK_ROW OK_ROW OK_ROW OK_ROW "{\"tokens\":[1,2],\"labels\":[0,1],\"mask\":[1,1]}\n", 5, "more than 9 tokens in the file (the limit)", { .max_cells = 9 } },
    { "{\"tokens\":[1,2,3,4,5,6],\"labels\":[0,0,0,0,0,0],\"mask\":[1,1,1,1,1,1]}\n" OK_ROW OK_ROW, 0,
      "3 rows padded to the longest row (6 tokens) make 18 cells, more than the limit of 12", { .max_cells = 12 } },
};

/* The length of a case's text: up to the final '\n' (one case embeds a NUL). */
static size_t case_len(const BadCase *c) {
    size_t n = strlen(c->text);
    if (strstr(c->want, "NUL")) n += 1 + strlen(c->text + n + 1);
    return n;
}

static int check_message(const char *msg, const char *name, int line, const char *want) {
    char prefix[600];
    if (line) snprintf(prefix, sizeof prefix, "%s:%d: ", name, line);
    else snprintf(prefix, sizeof prefix, "%s: ", name);
    return strncmp(msg, prefix, strlen(prefix)) == 0 && strstr(msg, want) != NULL;
}

static void test_errors(void) {
    char path[512];
    path_in_dir(path, sizeof path, "bad.jsonl");
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        const BadCase *c = &BAD[i];
        size_t n = case_len(c);
        Dataset jd;
        AlError err = { 0 };
        int rc = jsonl_parse("mem.jsonl", c->text, n, &c->opt, &jd, NULL, &err);
        CHECK(rc == 2 && err.code == 2 && check_message(err.msg, "mem.jsonl", c->line, c->want),
              "case %zu (in memory): rc %d, got '%s', want 'mem.jsonl:%d: ...%s'", i, rc, err.msg, c->line, c->want);
        CHECK(jd.tokens == NULL && jd.info == NULL, "case %zu: output not left empty", i);
        /* The same through the file reader. */
        write_file(path, c->text, n);
        AlError ferr = { 0 };
        rc = jsonl_read(path, &c->opt, &jd, NULL, &ferr);
        CHECK(rc == 2 && check_message(ferr.msg, path, c->line, c->want),
              "case %zu (file): rc %d, got '%s', want '%s:%d: ...%s'", i, rc, ferr.msg, path, c->line, c->want);
    }
    printf("%zu error cases, each in memory and from a file\n", sizeof BAD / sizeof *BAD);

    Dataset jd;
    AlError err = { 0 };
    CHECK(jsonl_read("/nonexistent/x.jsonl", NULL, &jd, NULL, &err) == 2 &&
          strcmp(err.msg, "cannot open '/nonexistent/x.jsonl': No such file or directory") == 0, "missing file: %s", err.msg);
    char want_dir[600];
    snprintf(want_dir, sizeof want_dir, "cannot read '%s': Is a directory", g_dir);
    CHECK(jsonl_read(g_dir, NULL, &jd, NULL, &err) == 2 && strcmp(err.msg, want_dir) == 0, "a directory: %s", err.msg);
    JsonlOptions bad_pad = { .vocab_size = 5, .pad_id_set = 1, .pad_id = 5 };
    CHECK(jsonl_parse("m", OK_ROW, strlen(OK_ROW), &bad_pad, &jd, NULL, &err) == 2 &&
          strstr(err.msg, "pad_id 5 must be >= 0 and < vocab_size 5"), "bad pad option: %s", err.msg);

    /* Accepted variations: CRLF, a byte-order mark, no final newline, spaces. */
    const char *ok = "\xEF\xBB\xBF{\"tokens\":[1,2],\"labels\":[0,1],\"mask\":[1,1]}\r\n"
                     "  { \"mask\" : [ 0 , 1 ] , \"labels\" : [ -1 , 1.0 ] , \"tokens\" : [ 3 , 1e0 ] }  ";
    int rc = jsonl_parse("ok", ok, strlen(ok), NULL, &jd, NULL, &err);
    CHECK(rc == 0 && jd.n == 2 && dataset_tokens(&jd, 1)[0] == 3 && dataset_tokens(&jd, 1)[1] == 1 &&
          dataset_targets(&jd, 1)[0] == -1 && dataset_targets(&jd, 1)[1] == 1, "variations: %s", err.msg);
    dataset_free(&jd);

    /* Writer refusals. */
    Dataset d;
    dataset_alloc(&d, 1, 2, 5, 2);
    char wpath[512];
    path_in_dir(wpath, sizeof wpath, "w.jsonl");
    d.targets[0] = d.targets[1] = -1;
    CHECK(jsonl_write(wpath, &d, 0, &err) == 2 && strstr(err.msg, "no position is scored"), "write unscored: %s", err.msg);
    d.targets[1] = 1;
    d.tokens[0] = -4;
    CHECK(jsonl_write(wpath, &d, 0, &err) == 2 && strstr(err.msg, "row 0: token -4 at position 0"), "write negative: %s", err.msg);
    d.tokens[0] = 1;
    CHECK(jsonl_write(wpath, &d, JSONL_GROUP, &err) == 2 && strstr(err.msg, "need the dataset's row info"),
          "write groups without info: %s", err.msg);
    dataset_alloc_info(&d);
    d.info[0] = (RowInfo){ .len = 3 };
    CHECK(jsonl_write(wpath, &d, 0, &err) == 2 && strstr(err.msg, "row 0: length 3 not in [1, 2]"), "write length: %s", err.msg);
    d.info[0] = (RowInfo){ .len = 2, .prompt_len = 1, .answer_start = -1, .answer_len = 1 };
    CHECK(jsonl_write(wpath, &d, JSONL_COT, &err) == 2 && strstr(err.msg, "row 0: answer_len must be 0"),
          "write bad chain-of-thought fields: %s", err.msg);
    CHECK(access(wpath, F_OK) != 0, "a refused write left a file");
    char nodir[600];
    snprintf(nodir, sizeof nodir, "%s/no/such/dir.jsonl", g_dir);
    CHECK(jsonl_write(nodir, &d, 0, &err) == 1 && strstr(err.msg, "does not exist"), "write to a missing dir: %s", err.msg);
    dataset_free(&d);
}

/* ---- the chunked file reader ---------------------------------------------------- */

/* A file of ~1 MB with lines of very different lengths (a few up to ~200 KB, longer
 * than a 64 KiB read chunk; a thousand short ones, some crossing a chunk boundary)
 * reads exactly like the same text in memory. */
static void test_chunked_reader(void) {
    Rng rng = rng_stream(SEED, 3);
    size_t cap = 4 << 20, n = 0;
    char *text = malloc(cap);
    int rows = 0;
    while (n < (1 << 20)) {
        int len = rng_below(&rng, 100) == 0 ? 5000 + (int)rng_below(&rng, 20000) : 1 + (int)rng_below(&rng, 30);
        n += (size_t)snprintf(text + n, cap - n, "{\"tokens\":[");
        for (int i = 0; i < len; i++) n += (size_t)snprintf(text + n, cap - n, "%s%u", i ? "," : "", rng_below(&rng, 1000));
        n += (size_t)snprintf(text + n, cap - n, "],\"labels\":[");
        for (int i = 0; i < len; i++) n += (size_t)snprintf(text + n, cap - n, "%s%u", i ? "," : "", rng_below(&rng, 3));
        n += (size_t)snprintf(text + n, cap - n, "],\"mask\":[");
        for (int i = 0; i < len; i++) n += (size_t)snprintf(text + n, cap - n, "%s1", i ? "," : "");
        n += (size_t)snprintf(text + n, cap - n, "]}\n");
        rows++;
    }
    char path[512];
    path_in_dir(path, sizeof path, "big.jsonl");
    write_file(path, text, n);
    Dataset a, b;
    AlError err = { 0 };
    int ra = jsonl_parse(path, text, n, NULL, &a, NULL, &err), rb = jsonl_read(path, NULL, &b, NULL, &err);
    CHECK(ra == 0 && rb == 0, "big file: %s", err.msg);
    if (ra == 0 && rb == 0) {
        CHECK(a.n == rows && b.n == rows && a.seq_len == b.seq_len &&
              !memcmp(a.tokens, b.tokens, sizeof(int) * (size_t)a.n * (size_t)a.seq_len) &&
              !memcmp(a.info, b.info, sizeof(RowInfo) * (size_t)rows), "big file: file and memory differ");
        printf("chunked reader: %d rows, %zu bytes, longest row %d\n", rows, n, b.seq_len);
    }
    dataset_free(&a);
    dataset_free(&b);
    /* With a line limit just below the longest line, both fail on the same line. */
    JsonlOptions o = { .max_line_bytes = 100000 };
    AlError ea = { 0 }, eb = { 0 };
    ra = jsonl_parse(path, text, n, &o, &a, NULL, &ea);
    rb = jsonl_read(path, &o, &b, NULL, &eb);
    CHECK(ra == 2 && rb == 2 && strcmp(ea.msg, eb.msg) == 0 && strstr(ea.msg, "line longer than 100000 bytes") && strstr(ea.msg, path),
          "long line: '%s' vs '%s'", ea.msg, eb.msg);
    free(text);
}

/* ---- random mutations ------------------------------------------------------------ */

static const char ALPHABET[] = "{}[],:\"-.0123456789eE \n\\tokenslabelmaskgroup_";

static size_t mutate(Rng *rng, char *buf, size_t n, size_t cap) {
    int edits = 1 + (int)rng_below(rng, 4);
    for (int e = 0; e < edits; e++) {
        size_t at = n ? rng_below(rng, (uint32_t)n) : 0;
        switch (rng_below(rng, 6)) {
        case 0: if (n) buf[at] = (char)rng_below(rng, 256); break;                         /* any byte */
        case 1: if (n) buf[at] = ALPHABET[rng_below(rng, sizeof ALPHABET - 1)]; break;     /* a JSON-ish byte */
        case 2: if (n + 1 < cap) {                                                         /* insert */
                    memmove(buf + at + 1, buf + at, n - at);
                    buf[at] = ALPHABET[rng_below(rng, sizeof ALPHABET - 1)];
                    n++;
                } break;
        case 3: if (n) {                                                                   /* delete a range */
                    size_t k = 1 + rng_below(rng, 8);
                    if (k > n - at) k = n - at;
                    memmove(buf + at, buf + at + k, n - at - k);
                    n -= k;
                } break;
        case 4: if (n && n * 2 < cap) {                                                    /* duplicate a range */
                    size_t k = 1 + rng_below(rng, (uint32_t)(n - at < 64 ? n - at : 64));
                    memmove(buf + at + k, buf + at, n - at);
                    n += k;
                } break;
        case 5: n = at; break;                                                             /* truncate */
        }
    }
    return n;
}

static void test_mutations(void) {
    const char *valid =
        "{\"tokens\":[1,2,3],\"labels\":[-1,0,1],\"mask\":[0,1,1],\"group\":0,\"prompt_len\":1,\"answer_start\":1,\"answer_len\":2}\n"
        "{\"tokens\":[4,5],\"labels\":[2,-1],\"mask\":[1,0],\"group\":1,\"prompt_len\":0,\"answer_start\":-1,\"answer_len\":0}\n"
        "{\"tokens\":[6],\"labels\":[0],\"mask\":[1],\"group\":2,\"prompt_len\":1,\"answer_start\":0,\"answer_len\":1}\n";
    Rng rng = rng_stream(SEED, 4);
#ifdef __SANITIZE_ADDRESS__
    enum { ITER = 25000, CAP = 4096 };  /* stays under 5 s with the sanitizers */
#else
    enum { ITER = 60000, CAP = 4096 };
#endif
    char buf[CAP];
    long loaded = 0, failed = 0, bad_msg = 0, bad_data = 0;
    double t0 = now_sec();
    JsonlOptions small = { .max_line_bytes = 512, .max_len = 16, .max_cells = 256 };
    for (int it = 0; it < ITER; it++) {
        size_t n = strlen(valid);
        memcpy(buf, valid, n);
        n = mutate(&rng, buf, n, CAP);
        Dataset jd;
        JsonlStats st;
        AlError err = { 0 };
        int rc = jsonl_parse("fuzz.jsonl", buf, n, it % 2 ? &small : NULL, &jd, &st, &err);
        if (rc == 0) {
            loaded++;
            bad_data += !data_consistent(&jd, &st);
            dataset_free(&jd);
        } else {
            failed++;
            bad_msg += rc != 2 || strncmp(err.msg, "fuzz.jsonl:", 11) != 0 || jd.tokens != NULL;
        }
    }
    printf("mutations: %ld loaded, %ld rejected, %.2f s\n", loaded, failed, now_sec() - t0);
    CHECK(bad_data == 0, "%ld mutated files loaded with broken invariants", bad_data);
    CHECK(bad_msg == 0, "%ld mutated files failed without a 'fuzz.jsonl:' message and code 2", bad_msg);
    CHECK(loaded > 50 && failed > ITER / 2, "mutations exercised too little: %ld loaded, %ld rejected", loaded, failed);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/test_jsonl.%ld", (long)getpid());
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", g_dir, g_dir);
    if (system(cmd) != 0) return 1;
    test_exact_text();
    test_round_trip();
    test_dyck_file();
    test_pair_and_options();
    test_errors();
    test_chunked_reader();
    test_mutations();
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    return check_exit("test_jsonl");
}
