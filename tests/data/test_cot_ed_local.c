/* test_cot_ed_local.c — ED_Local (task.local: every chain-of-thought cell restates
 * the two letters it compares, "s_i t_j m[i][j]"; docs/design.md decision 14)
 * against an independent checker.
 *
 * The checker shares no code with the generator, nor with test_cot_ed.c's.  Its
 * table is the cost defined top-down — the cheapest way to turn the first i letters
 * of s into the first j of t, by memoised recursion on the last edit — with the
 * public costs of the edit-distance data of paper 004 ("Do Efficient Transformers
 * Really Save Computation?"): row and column 0 hold i + j, an interior insert or
 * delete costs 2, a replace 3, a match 0 (uniform: 1, 1, 0/1).  Fixed
 * tables pin the checker itself.  Examples are parsed from the layout alone:
 * "s | t <sep>", then rows of (letter, letter, number) triples each closed by ",",
 * then "<sep> answer <eos>"; the parser takes a and b from the prompt and the rows
 * and cells from the commas and the token kinds, never from the Example's offsets.
 * Every label is re-derived: both restated letters and the value of every cell,
 * the answer, every target (the restated letters are scored like every other
 * chain-of-thought token), prompt_len and the answer span.  The strings follow the
 * plain ED law, so its statistics (test_cot_ed.c's, from a separate re-implementation
 * of the public generator) apply unchanged. */
#include "attnlab/config/config.h"
#include "attnlab/data/cot_ed.h"
#include "attnlab/data/dataset.h"
#include "attnlab/data/task.h"
#include "check.h"
#include "ed_law.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SEED 20240614u
enum { MAXL = 24, CAP = 3 * MAXL * MAXL + 9 * MAXL + 7, UNSET = -1 };
/* The public token ids, written out (test_cot_ed.c pins the generator's to them). */
enum { T_SEP = 1, T_EOS = 2, T_BAR = 3, T_COMMA = 4, T_A = 5, T_Z = 30, T_NUM0 = 31 };

/* ---- the independent checker ------------------------------------------- */

typedef struct Costs {
    const int *s, *t;
    int uniform;
    int memo[MAXL + 1][MAXL + 3];
} Costs;

/* The cheapest edit of s[0..i) into t[0..j). */
static int cost(Costs *c, int i, int j) {
    if (i == 0 || j == 0) return i + j;   /* the public table starts as i + j */
    int *m = &c->memo[i][j];
    if (*m == UNSET) {
        int indel = c->uniform ? 1 : 2, rep = c->uniform ? 1 : 3;
        int keep = cost(c, i - 1, j - 1) + (c->s[i - 1] == c->t[j - 1] ? 0 : rep);
        int del = cost(c, i - 1, j) + indel, ins = cost(c, i, j - 1) + indel;
        *m = keep < del ? keep : del;
        if (ins < *m) *m = ins;
    }
    return *m;
}

static void costs_init(Costs *c, const int *s, const int *t, int uniform) {
    c->s = s, c->t = t, c->uniform = uniform;
    memset(c->memo, 0xff, sizeof c->memo);   /* every entry UNSET (−1) */
}

static int is_letter(int tok) { return tok >= T_A && tok <= T_Z; }
static int is_number(int tok) { return tok >= T_NUM0; }

/* One example, read from its tokens only. */
typedef struct Parsed {
    int s[2 * MAXL], t[2 * MAXL], a, b, prompt_len;
    int rows, cells[MAXL + 1];                  /* chain rows, triples per row */
    int tri[MAXL][MAXL + 2][3];                 /* (letter, letter, value) */
    int answer, len;                            /* len: through <eos> */
} Parsed;

static int read_letters(const int *x, int len, int *pos, int *out, int cap) {
    int n = 0;
    while (*pos < len && is_letter(x[*pos]) && n < cap) out[n++] = x[(*pos)++] - T_A;
    return n;
}

/* Rows of triples closed by ","; returns 0 when a row or a triple is malformed. */
static int read_chain(const int *x, int len, int *pos, Parsed *p) {
    for (p->rows = 0; *pos < len && x[*pos] != T_SEP; p->rows++) {
        if (p->rows == MAXL) return 0;
        int *n = &p->cells[p->rows];
        for (*n = 0; *pos < len && x[*pos] != T_COMMA; (*n)++) {
            if (*n == MAXL + 2 || *pos + 3 > len) return 0;
            const int *c = x + *pos;
            if (!is_letter(c[0]) || !is_letter(c[1]) || !is_number(c[2])) return 0;
            int *tr = p->tri[p->rows][*n];
            tr[0] = c[0] - T_A, tr[1] = c[1] - T_A, tr[2] = c[2] - T_NUM0;
            *pos += 3;
        }
        if (*pos == len) return 0;
        (*pos)++;                                                             /* , */
    }
    return 1;
}

static int parse(const int *x, int len, Parsed *p) {
    int pos = 0;
    p->a = read_letters(x, len, &pos, p->s, 2 * MAXL);
    if (pos >= len || x[pos++] != T_BAR) return 0;
    p->b = read_letters(x, len, &pos, p->t, 2 * MAXL);
    if (pos >= len || x[pos++] != T_SEP) return 0;
    p->prompt_len = pos;
    if (p->a > MAXL || p->b > MAXL + 2 || !read_chain(x, len, &pos, p)) return 0;
    if (pos + 3 > len || x[pos] != T_SEP || !is_number(x[pos + 1]) || x[pos + 2] != T_EOS) return 0;
    p->answer = x[pos + 1] - T_NUM0;
    p->len = pos + 3;
    return 1;
}

typedef struct Tally {
    long long bad_parse, bad_lengths, bad_same, bad_alphabet, bad_shape, bad_letters, bad_values, bad_answer;
    long long bad_len, bad_targets, bad_scored, bad_meta, bad_extract;
    int count, max_len_seen, max_value;
    double sum_ans, n_shorter, n_equal, sum_letters;
} Tally;

/* The chain against the checker's table: shape, restated letters, values. */
static void check_chain(const Parsed *p, Costs *c, Tally *t) {
    int shape_ok = p->rows == p->a;
    for (int i = 0; shape_ok && i < p->a; i++) shape_ok = p->cells[i] == p->b;
    if (!shape_ok) { t->bad_shape++; return; }
    for (int i = 1; i <= p->a; i++)
        for (int j = 1; j <= p->b; j++) {
            const int *tr = p->tri[i - 1][j - 1];
            int v = cost(c, i, j);
            t->bad_letters += tr[0] != p->s[i - 1] || tr[1] != p->t[j - 1];
            t->bad_values += tr[2] != v;
            if (v > t->max_value) t->max_value = v;
        }
}

/* Targets: the next token from the prompt's <sep> to the token before <eos>; and
 * every restated letter (2ab of them) is among the scored ones. */
static void check_targets(const Example *ex, const Parsed *p, Tally *t) {
    int scored = 0, letters = 0;
    for (int i = 0; i < ex->len; i++) {
        int want = i >= p->prompt_len - 1 && i <= ex->len - 2 ? ex->tokens[i + 1] : DATASET_IGNORE;
        t->bad_targets += ex->targets[i] != want;
        scored += ex->targets[i] != DATASET_IGNORE;
        letters += ex->targets[i] != DATASET_IGNORE && is_letter(ex->targets[i]);
    }
    t->bad_scored += scored != ex->len - p->prompt_len || letters != 2 * p->a * p->b;
}

/* Parses and checks one example of nominal length l (using = 8). */
static void verify(const Example *ex, int l, int uniform, int num_range, Tally *t) {
    static Parsed p;   /* ~7 KB: off the stack */
    t->count++;
    if (!parse(ex->tokens, ex->len, &p) || p.len != ex->len) { t->bad_parse++; return; }
    int a = p.a, b = p.b;
    /* (a, b) = (l, l..l+2) or (l-3..l-1, l): the shorter string first. */
    t->bad_lengths += !((a == l && b >= l && b <= l + 2) || (b == l && a >= l - 3 && a < l));
    t->bad_same += a == b && memcmp(p.s, p.t, (size_t)a * sizeof *p.s) == 0;
    int seen[26] = { 0 }, letters = 0;
    for (int i = 0; i < a; i++) seen[p.s[i]] = 1;
    for (int j = 0; j < b; j++) seen[p.t[j]] = 1;
    for (int k = 0; k < 26; k++) letters += seen[k];
    t->bad_alphabet += letters > 8 + 2;
    static Costs c;
    costs_init(&c, p.s, p.t, uniform);
    check_chain(&p, &c, t);
    int ans = cost(&c, a, b);
    t->bad_answer += p.answer != ans || ans >= num_range;
    t->bad_len += ex->len != (a + b + 2) + a * (3 * b + 1) + 3;
    check_targets(ex, &p, t);
    t->bad_meta += ex->prompt_len != p.prompt_len || ex->answer_start != ex->len - 2 ||
                   ex->answer_len != 1 || ex->group != 0;
    EdParams ep = { l, 8, num_range, 0, uniform, 1 };
    int st = -1, al = -1;
    t->bad_extract += !ed_extract_answer(&ep, ex->tokens, ex->len, &st, &al) || st != ex->len - 2 || al != 1;
    if (ex->len > t->max_len_seen) t->max_len_seen = ex->len;
    t->sum_ans += ans;
    t->n_shorter += a < l;
    t->n_equal += a == b;
    t->sum_letters += letters;
}

static void check_tally(const Tally *t, const char *what) {
    CHECK(t->count > 0, "%s: nothing verified", what);
    CHECK(t->bad_parse == 0, "%s: %lld examples do not parse as 's | t <sep> (l l n)… , … <sep> n <eos>'", what,
          t->bad_parse);
    CHECK(t->bad_lengths == 0, "%s: %lld string-length pairs outside the law", what, t->bad_lengths);
    CHECK(t->bad_same == 0, "%s: %lld pairs of equal strings", what, t->bad_same);
    CHECK(t->bad_alphabet == 0, "%s: %lld pairs use more than using+2 letters", what, t->bad_alphabet);
    CHECK(t->bad_shape == 0, "%s: %lld chains are not a rows of b cells", what, t->bad_shape);
    CHECK(t->bad_letters == 0, "%s: %lld cells restate the wrong letters", what, t->bad_letters);
    CHECK(t->bad_values == 0, "%s: %lld cell values differ from the recursive table", what, t->bad_values);
    CHECK(t->bad_answer == 0, "%s: %lld wrong answers (or outside num_range)", what, t->bad_answer);
    CHECK(t->bad_len == 0, "%s: %lld lengths differ from (a+b+2) + a(3b+1) + 3", what, t->bad_len);
    CHECK(t->bad_targets == 0, "%s: %lld targets differ from next-token-after-first-<sep>", what, t->bad_targets);
    CHECK(t->bad_scored == 0, "%s: %lld examples whose scored positions are not the chain, letters included", what,
          t->bad_scored);
    CHECK(t->bad_meta == 0, "%s: %lld wrong prompt_len / answer span / group", what, t->bad_meta);
    CHECK(t->bad_extract == 0, "%s: %lld gold sequences where extraction missed the answer", what, t->bad_extract);
}

static int max_len_formula(int l, int local) { return local ? 3 * l * l + 9 * l + 7 : l * l + 5 * l + 7; }

/* ---- the checker itself ------------------------------------------------- */

static void to_ints(const char *str, int *x) {
    for (int i = 0; str[i]; i++) x[i] = str[i] - 'a';
}

/* The worked example of cot_ed.h (public costs, border quirk: m[1][5] = 7) and two
 * textbook distances pin the recursion before it judges the generator. */
static void test_checker(void) {
    static const int want[6][6] = {
        { 0, 2, 4, 6, 7, 8 }, { 2, 0, 2, 4, 6, 7 }, { 4, 2, 3, 5, 7, 9 },
        { 6, 4, 5, 3, 5, 7 }, { 7, 6, 7, 5, 3, 5 }, { 8, 7, 9, 7, 5, 3 },
    };
    int s[7], t[7], bad = 0;
    static Costs c;
    to_ints("ygjggg", s);
    to_ints("ygaggg", t);
    costs_init(&c, s, t, 0);
    for (int i = 1; i <= 6; i++)
        for (int j = 1; j <= 6; j++) bad += cost(&c, i, j) != want[i - 1][j - 1];
    CHECK(bad == 0, "checker: %d cells of the worked example differ", bad);
    costs_init(&c, s, t, 1);
    CHECK(cost(&c, 6, 6) == 1, "checker: one replace at unit cost, got %d", cost(&c, 6, 6));
    to_ints("kitten", s);
    to_ints("sitting", t);
    costs_init(&c, s, t, 1);
    CHECK(cost(&c, 6, 7) == 3, "checker: Levenshtein(kitten, sitting) = %d", cost(&c, 6, 7));
    costs_init(&c, s, t, 0);
    CHECK(cost(&c, 6, 7) == 8, "checker: public costs (kitten, sitting) = %d, want 3+3+2", cost(&c, 6, 7));
}

/* ---- samples at the scaled sizes ----------------------------------------- */

/* The strings are the plain task's, so their law is ed_law.h's. */
static void test_samples(const EdLaw *ref, int draws) {
    int l = ref->l;
    EdParams p = { l, 8, 0, 0, 0, 1 }, pu = { l, 8, 0, 0, 1, 1 };
    AlError err = { 0 };
    CHECK(ed_check(&p, &err) == 0 && ed_check(&pu, &err) == 0, "l = %d: %s", l, err.msg);
    CHECK(ed_vocab_size(&p) == 91, "l = %d: the plain task's vocabulary, got %d", l, ed_vocab_size(&p));
    CHECK(ed_max_len(&p) == max_len_formula(l, 1), "l = %d: max_len %d", l, ed_max_len(&p));
    int tok[CAP], tgt[CAP];
    Example ex = { .tokens = tok, .targets = tgt };
    Tally t, tu;
    memset(&t, 0, sizeof t);
    memset(&tu, 0, sizeof tu);
    Rng rng = rng_stream(SEED, 100 + (uint64_t)l), rng_u = rng;
    for (int k = 0; k < draws; k++) {
        ed_sample(&p, &rng, &ex);
        verify(&ex, l, 0, 60, &t);
        ed_sample(&pu, &rng_u, &ex);
        verify(&ex, l, 1, 60, &tu);
    }
    char what[64];
    snprintf(what, sizeof what, "local l = %d", l);
    check_tally(&t, what);
    snprintf(what, sizeof what, "local l = %d uniform", l);
    check_tally(&tu, what);
    CHECK(t.max_len_seen == max_len_formula(l, 1), "l = %d: longest example %d, formula %d", l, t.max_len_seen,
          max_len_formula(l, 1));
    CHECK(t.max_value <= 3 * l + 2 && tu.max_value <= l + 2, "l = %d: values %d, %d", l, t.max_value,
          tu.max_value);
    ed_law_check(ref, t.sum_ans, tu.sum_ans, t.n_shorter, t.n_equal, t.sum_letters, draws);
    printf("ED_Local l=%d: %d samples x 2 cost modes, mean answer %.3f (public law %.3f), unit costs %.3f "
           "(%.3f), max value %d, longest %d tokens\n", l, draws, t.sum_ans / draws, ref->mean,
           tu.sum_ans / draws, ref->mean_uniform, t.max_value, t.max_len_seen);
}

/* The other scaled sizes and the paper's: format and labels only. */
static void test_other_sizes(void) {
    static const int sizes[] = { 5, 6, 12, 16, 20 };
    int tok[CAP], tgt[CAP];
    Example ex = { .tokens = tok, .targets = tgt };
    for (int z = 0; z < 5; z++) {
        int l = sizes[z];
        EdParams p = { l, 8, 0, 0, 0, 1 };
        AlError err = { 0 };
        CHECK(ed_check(&p, &err) == 0, "l = %d: %s", l, err.msg);
        Tally t;
        memset(&t, 0, sizeof t);
        Rng rng = rng_stream(SEED, 200 + (uint64_t)l);
        int draws = l <= 7 ? 3000 : 300;
        for (int k = 0; k < draws; k++) {
            ed_sample(&p, &rng, &ex);
            verify(&ex, l, 0, ed_num_range(&p), &t);
        }
        char what[64];
        snprintf(what, sizeof what, "local l = %d", l);
        check_tally(&t, what);
        CHECK(t.max_len_seen <= ed_max_len(&p), "l = %d: %d > max_len", l, t.max_len_seen);
    }
}

/* ---- the same problems as the plain task ------------------------------------ */

/* From one Rng state the plain and the local generator draw the same strings and
 * leave the stream in the same state; the local chain's values, read every third
 * token, are the plain chain. */
static void test_same_problems(void) {
    int pt[CAP], pg[CAP], lt[CAP], lg[CAP];
    Example px = { .tokens = pt, .targets = pg }, lx = { .tokens = lt, .targets = lg };
    for (int uniform = 0; uniform <= 1; uniform++) {
        EdParams plain = { 7, 8, 0, 0, uniform, 0 }, local = { 7, 8, 0, 0, uniform, 1 };
        Rng a = rng_stream(SEED, 300 + (uint64_t)uniform), b = a;
        int same = 0, n = 2000;
        for (int k = 0; k < n; k++) {
            ed_sample(&plain, &a, &px);
            ed_sample(&local, &b, &lx);
            int ok = px.prompt_len == lx.prompt_len &&
                     memcmp(pt, lt, (size_t)px.prompt_len * sizeof *pt) == 0 && pt[px.len - 2] == lt[lx.len - 2];
            int q = lx.prompt_len;
            for (int i = px.prompt_len; ok && i < px.len; i++, q++) {
                if (is_number(pt[i]) && i < px.len - 2) q += 2;    /* a cell: skip the two letters */
                ok = lt[q] == pt[i];
            }
            same += ok && q == lx.len && rng_below(&a, 1u << 30) == rng_below(&b, 1u << 30);
        }
        CHECK(same == n, "uniform %d: %d of %d local examples are the plain problem with letters added", uniform,
              same, n);
    }
}

/* ---- lengths, parameters, the config ------------------------------------ */

static void test_max_len(void) {
    int bad = 0;
    for (int l = 4; l <= ED_MAX_LENGTH; l++) {
        bad += ed_max_len(&(EdParams){ l, 8, 0, 0, 0, 1 }) != max_len_formula(l, 1);
        bad += ed_max_len(&(EdParams){ l, 8, 0, 0, 0, 0 }) != max_len_formula(l, 0);
        bad += ed_max_len(&(EdParams){ l, 8, 0, 1, 0, 0 }) != 2 * l + 6;
    }
    CHECK(bad == 0, "%d max_len values off 3l^2+9l+7 (local), l^2+5l+7, 2l+6", bad);
    printf("max CoT length (tokens, <eos> included), l = 4..7:");
    for (int l = 4; l <= 7; l++)
        printf(" %d: ED_Local %d / ED %d;", l, ed_max_len(&(EdParams){ l, 8, 0, 0, 0, 1 }),
               ed_max_len(&(EdParams){ l, 8, 0, 0, 0, 0 }));
    printf("\n");
    static const int want[4] = { 91, 127, 169, 217 };
    for (int l = 4; l <= 7; l++)
        CHECK(ed_max_len(&(EdParams){ l, 8, 0, 0, 0, 1 }) == want[l - 4], "l = %d", l);
}

static void expect_error(EdParams p, const char *want) {
    AlError err = { 0 };
    int rc = ed_check(&p, &err);
    CHECK(rc == 2 && err.code == 2 && strstr(err.msg, want) != NULL,
          "{%d, %d, %d, %d, %d, %d}: rc %d, message '%s' should contain '%s'", p.length, p.using, p.num_range,
          p.direct, p.uniform_costs, p.local, rc, err.msg, want);
}

static void test_params(void) {
    expect_error((EdParams){ 4, 8, 0, 0, 0, 2 }, "ed: local 2 must be 0 or 1");
    expect_error((EdParams){ 4, 8, 0, 0, 0, -1 }, "ed: local -1 must be 0 or 1");
    expect_error((EdParams){ 4, 8, 0, 1, 0, 1 }, "ed: local restates the letters in the chain of thought");
    expect_error((EdParams){ 3, 8, 0, 0, 0, 1 }, "length");
    expect_error((EdParams){ 4, 8, 14, 0, 0, 1 }, "num_range");   /* values reach 3*4+2 = 14 */
    AlError err = { 0 };
    CHECK(ed_check(&(EdParams){ 4, 8, 15, 0, 0, 1 }, &err) == 0, "num_range 15: %s", err.msg);
    CHECK(ed_check(&(EdParams){ 4, 8, 7, 0, 1, 1 }, &err) == 0, "unit costs: %s", err.msg);
}

/* Rows of a built dataset as Examples. */
static void verify_rows(const Dataset *d, int l, Tally *t) {
    for (int r = 0; r < d->n; r++) {
        const RowInfo *in = &d->info[r];
        Example ex = { .len = in->len, .tokens = dataset_tokens(d, r), .targets = dataset_targets(d, r),
                       .prompt_len = in->prompt_len, .answer_start = in->answer_start,
                       .answer_len = in->answer_len, .group = in->group };
        verify(&ex, l, 0, 60, t);
    }
}

/* Through the config and task_build, as a run does: the key, its scope, the rule
 * against task.direct, the sizes and the rows. */
static void test_config(void) {
    Config c;
    cfg_defaults(&c);
    AlError err = { 0 };
    int rc = cfg_parse(&c, "{\"task\": {\"type\": \"ed\", \"length\": 4, \"local\": true, \"train_size\": 300}, "
                           "\"model\": {\"attention\": {\"causal\": true}}, \"eval\": {\"test_size\": 100}}",
                       "edl.json", &err);
    CHECK(rc == 0 && c.task.local == 1, "config refused: %s", err.msg);
    TaskData td;
    TaskSpec spec;
    rc = task_build_from(cfg_task_spec(&c, &spec), "edl.json", &td, &err);
    CHECK(rc == 0, "task_build: %s", err.msg);
    if (!rc) {
        CHECK(!strcmp(td.gen.name, "ed_local") && td.gen.max_len == 91 && td.vocab_size == 91 &&
              td.n_classes == 91 && td.seq_len <= 91, "name %s, max_len %d, vocab %d, classes %d, seq_len %d",
              td.gen.name, td.gen.max_len, td.vocab_size, td.n_classes, td.seq_len);
        Tally t;
        memset(&t, 0, sizeof t);
        verify_rows(&td.train, 4, &t);
        verify_rows(&td.test, 4, &t);
        check_tally(&t, "task_build rows");
        CHECK(t.count == 400, "%d rows verified", t.count);
        task_free(&td);
    }
    cfg_defaults(&c);
    rc = cfg_parse(&c, "{\"task\": {\"type\": \"ed\"}, \"model\": {\"attention\": {\"causal\": true}}}", "ed.json",
                   &err);
    CHECK(rc == 0 && c.task.local == 0, "default: plain ED (%s)", err.msg);
    rc = cfg_parse(&c, "{\"task\": {\"type\": \"lis\", \"local\": true}}", "x.json", &err);
    CHECK(rc == 2 && strstr(err.msg, "task.local: not valid for task.type \"lis\" (only for \"ed\")"),
          "task.local on lis: %s", err.msg);
    rc = cfg_parse(&c, "{\"task\": {\"type\": \"ed\", \"local\": true, \"direct\": true}, "
                       "\"model\": {\"attention\": {\"causal\": true}}}", "x.json", &err);
    CHECK(rc == 2 && strstr(err.msg, "x.json: task.local restates the compared letters") &&
          strstr(err.msg, "task.direct leaves out"), "local with direct: %s", err.msg);
}

static void print_example(void) {
    EdParams p = { 4, 8, 0, 0, 0, 1 };
    int tok[CAP], tgt[CAP];
    Example ex = { .tokens = tok, .targets = tgt };
    Rng rng = rng_stream(SEED, 600);
    ed_sample(&p, &rng, &ex);
    printf("ED_Local l=4:");
    for (int i = 0; i < ex.len; i++) printf(" %s", ed_token_name(&p, tok[i]));
    printf("\n");
}

int main(void) {
    test_checker();
    test_samples(&ED_LAW_SMALL, 20000);
    test_samples(&ED_LAW_LARGE, 20000);
    test_other_sizes();
    test_same_problems();
    test_max_len();
    test_params();
    test_config();
    print_example();
    return check_exit("test_cot_ed_local");
}
