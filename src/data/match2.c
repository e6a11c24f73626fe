/* match2.c — see match2.h.
 *
 * Cost: with N = 32, M = 37 about 58% of positions are ones, so bin [0,25%) is
 * rare (~0.4% of draws) and D = 10 000 takes ~600k draws.  Each draw is labelled
 * in O(N) with a presence table; the set lookups happen only for draws that land
 * in a bin with room, which are few. */
#include "attnlab/data/match2.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* present[] is all zero on entry and on return: clearing only the entries this
 * sequence set keeps the call O(n) instead of O(modulus). */
static int label_with_table(const int *x, int n, int modulus, uint8_t *present, int *y) {
    int ones = 0;
    for (int i = 0; i < n; i++) {
        AL_ASSERT(x[i] >= 0 && x[i] < modulus);
        present[x[i]] = 1;
    }
    for (int i = 0; i < n; i++) {
        int partner = x[i] ? modulus - x[i] : 0;  /* −x mod M, without a division */
        y[i] = present[partner];
        ones += y[i];
    }
    for (int i = 0; i < n; i++) present[x[i]] = 0;
    return ones;
}

void match2_labels(const int *x, int n, int modulus, int *y) {
    AL_ASSERT(modulus >= 1);
    uint8_t *present = al_calloc((size_t)modulus, 1);
    label_with_table(x, n, modulus, present, y);
    free(present);
}

int match2_bin(int n_ones, int seq_len) {
    /* Integer arithmetic, so a fraction of exactly 25% lands in bin 1, not by rounding. */
    int b = (int)((4LL * n_ones) / seq_len);
    return b < MATCH2_N_BINS - 1 ? b : MATCH2_N_BINS - 1;
}

/* Working state of one generation.  Bin b owns dataset rows
 * [start[b], start[b] + quota[b]); count[b] of them are filled. */
typedef struct Gen {
    int n, modulus;
    Rng *rng;
    const SeqSet *exclude;
    Dataset *out;
    Match2Stats *st;
    SeqSet seen;          /* every row placed so far */
    uint8_t *present;     /* modulus entries, zero between calls */
    int *x, *y;           /* the current candidate */
    int start[MATCH2_N_BINS], count[MATCH2_N_BINS];
} Gen;

static void gen_place(Gen *g, int b) {
    int row = g->start[b] + g->count[b]++;
    size_t bytes = (size_t)g->n * sizeof(int);
    memcpy(dataset_tokens(g->out, row), g->x, bytes);
    memcpy(dataset_targets(g->out, row), g->y, bytes);
}

/* One draw: accepted if its bin has room, it is not excluded and not yet seen. */
static void gen_draw(Gen *g, int *filled) {
    for (int i = 0; i < g->n; i++) g->x[i] = 1 + (int)rng_below(g->rng, (uint32_t)(g->modulus - 1));
    int b = match2_bin(label_with_table(g->x, g->n, g->modulus, g->present, g->y), g->n);
    if (g->count[b] == g->st->bin_quota[b]) return;
    if (g->exclude && seqset_contains(g->exclude, g->x)) { g->st->rejected_excluded++; return; }
    if (!seqset_add(&g->seen, g->x)) { g->st->rejected_duplicate++; return; }
    gen_place(g, b);
    (*filled)++;
}

static void gen_sample(Gen *g, int n_examples) {
    int filled = 0;
    while (filled < n_examples && g->st->draws < g->st->draw_budget) {
        g->st->draws++;
        gen_draw(g, &filled);
    }
    for (int b = 0; b < MATCH2_N_BINS; b++) g->st->bin_sampled[b] = g->count[b];
}

/* Sets the candidate to a random permutation of a random sampled member of bin b
 * (tokens and targets permuted together; Match2 labels are permutation-equivariant,
 * so the copy is labelled correctly). */
static void gen_permuted_member(Gen *g, int b, int *perm) {
    int row = g->start[b] + (int)rng_below(g->rng, (uint32_t)g->st->bin_sampled[b]);
    const int *xs = dataset_tokens(g->out, row), *ys = dataset_targets(g->out, row);
    for (int i = 0; i < g->n; i++) perm[i] = i;
    rng_shuffle_int(g->rng, perm, g->n);
    for (int i = 0; i < g->n; i++) {
        g->x[i] = xs[perm[i]];
        g->y[i] = ys[perm[i]];
    }
}

static int gen_top_up(Gen *g, int b, int *perm, AlError *err) {
    int missing = g->st->bin_quota[b] - g->count[b];
    if (missing == 0) return 0;
    if (g->count[b] == 0)
        return al_fail(err, 2, "match2: bin %d of %d is empty after %lld draws (N = %d, M = %d): "
                       "no sequence has that fraction of ones, or all are excluded",
                       b, MATCH2_N_BINS, g->st->draws, g->n, g->modulus);
    /* A copy that lands in `exclude` is redrawn, within the same per-row budget. */
    long long tries = (long long)MATCH2_DRAWS_PER_EXAMPLE * missing;
    while (g->count[b] < g->st->bin_quota[b]) {
        if (tries-- == 0)
            return al_fail(err, 2, "match2: cannot top up bin %d: its permuted members are "
                           "all in the excluded set", b);
        gen_permuted_member(g, b, perm);
        if (g->exclude && seqset_contains(g->exclude, g->x)) { g->st->rejected_excluded++; continue; }
        seqset_add(&g->seen, g->x);
        gen_place(g, b);
        g->st->bin_topped_up[b]++;
        g->st->n_topped_up++;
    }
    return 0;
}

static int check_args(int n_examples, int seq_len, int modulus, const SeqSet *exclude, AlError *err) {
    if (n_examples < 1 || n_examples > MATCH2_MAX_EXAMPLES)
        return al_fail(err, 2, "match2: dataset size %d must be in [1, %d]", n_examples, MATCH2_MAX_EXAMPLES);
    if (seq_len < 1) return al_fail(err, 2, "match2: sequence length %d must be >= 1", seq_len);
    if (modulus < 2) return al_fail(err, 2, "match2: modulus %d must be >= 2", modulus);
    if (exclude && exclude->seq_len != seq_len)
        return al_fail(err, 2, "match2: excluded set has sequence length %d, not %d",
                       exclude->seq_len, seq_len);
    return 0;
}

static void gen_init(Gen *g, Dataset *out, int n_examples, int seq_len, int modulus, Rng *rng,
                     const SeqSet *exclude, Match2Stats *st) {
    memset(g, 0, sizeof *g);
    g->n = seq_len;
    g->modulus = modulus;
    g->rng = rng;
    g->exclude = exclude;
    g->out = out;
    g->st = st;
    memset(st, 0, sizeof *st);
    st->n_examples = n_examples;
    st->draw_budget = (long long)MATCH2_DRAWS_PER_EXAMPLE * n_examples;
    for (int b = 0, row = 0; b < MATCH2_N_BINS; b++) {
        st->bin_quota[b] = n_examples / MATCH2_N_BINS + (b < n_examples % MATCH2_N_BINS);
        g->start[b] = row;
        row += st->bin_quota[b];
    }
    dataset_alloc(out, n_examples, seq_len, modulus, 2);
    seqset_init(&g->seen, seq_len, n_examples);
    g->present = al_calloc((size_t)modulus, 1);
    g->x = al_malloc((size_t)seq_len * sizeof(int));
    g->y = al_malloc((size_t)seq_len * sizeof(int));
}

static void gen_free(Gen *g) {
    seqset_free(&g->seen);
    free(g->present);
    free(g->x);
    free(g->y);
}

/* ---- how long a generation would draw ------------------------------------------ */

/* Bin hits of a pilot of `draws` sequences from a fixed stream (not the caller's,
 * so checking changes no dataset).  The last (N, M) pairs are remembered: a sweep
 * checks every cell, and most cells share them.  (Not thread-safe: checks run on
 * one thread; sweep workers are processes.) */
static void pilot_hits(int seq_len, int modulus, int draws, int *hits) {
    enum { CACHED = 8 };
    static struct { int n, m, draws, hits[MATCH2_N_BINS]; } cache[CACHED];
    static int next;
    for (int c = 0; c < CACHED; c++)
        if (cache[c].n == seq_len && cache[c].m == modulus && cache[c].draws == draws) {
            memcpy(hits, cache[c].hits, sizeof cache[c].hits);
            return;
        }
    Rng rng = rng_stream(0x6d6174636832 /* "match2" */, 0x70696c6f74 /* "pilot" */);
    uint8_t *present = al_calloc((size_t)modulus, 1);
    int *x = al_malloc(2 * (size_t)seq_len * sizeof(int)), *y = x + seq_len;
    memset(hits, 0, MATCH2_N_BINS * sizeof *hits);
    for (int d = 0; d < draws; d++) {
        for (int i = 0; i < seq_len; i++) x[i] = 1 + (int)rng_below(&rng, (uint32_t)(modulus - 1));
        hits[match2_bin(label_with_table(x, seq_len, modulus, present, y), seq_len)]++;
    }
    free(x);
    free(present);
    cache[next].n = seq_len, cache[next].m = modulus, cache[next].draws = draws;
    memcpy(cache[next].hits, hits, sizeof cache[next].hits);
    next = (next + 1) % CACHED;
}

/* "57.5 million", "1.07 billion", "125000". */
static const char *count_text(double v, char *buf, size_t n) {
    if (v >= 1e9) snprintf(buf, n, "%.3g billion", v / 1e9);
    else if (v >= 1e6) snprintf(buf, n, "%.3g million", v / 1e6);
    else snprintf(buf, n, "%.0f", v);
    return buf;
}

static const char *const BIN_TEXT[MATCH2_N_BINS] = { "fewer than 25%", "25-50%", "50-75%", "75% or more" };

int match2_check_size(int n_examples, int seq_len, int modulus, AlError *err) {
    if (check_args(n_examples, seq_len, modulus, NULL, err)) return 2;
    double budget = (double)MATCH2_DRAWS_PER_EXAMPLE * n_examples, limit = MATCH2_MAX_DRAW_TOKENS / seq_len;
    if (budget <= limit) return 0;   /* even the whole budget is cheap enough */
    int draws = MATCH2_PILOT_TOKENS / seq_len < MATCH2_PILOT_DRAWS ? MATCH2_PILOT_TOKENS / seq_len : MATCH2_PILOT_DRAWS;
    if (draws < 1) draws = 1;
    int hits[MATCH2_N_BINS];
    pilot_hits(seq_len, modulus, draws, hits);
    /* The rarest bin sets the pace: quota / rate draws, or the whole budget when
     * the pilot never saw it (then generation draws until the budget runs out). */
    for (int b = 0; b < MATCH2_N_BINS; b++) {
        int quota = n_examples / MATCH2_N_BINS + (b < n_examples % MATCH2_N_BINS);
        double need = hits[b] ? (double)quota * draws / hits[b] : budget;
        if (need > budget) need = budget;
        if (need <= limit) continue;
        char rate[160];
        if (hits[b]) snprintf(rate, sizeof rate, "about 1 draw in %.0f lands there", (double)draws / hits[b]);
        else snprintf(rate, sizeof rate, "none of %d trial draws landed there, so it may take the whole budget of %d "
                      "draws per row", draws, MATCH2_DRAWS_PER_EXAMPLE);
        char need_text[32], limit_text[32];
        return al_fail(err, 2, "match2: dataset size %d would take about %s draws to fill bin %d of %d (%s ones: %s), "
                       "more than the limit of %s draws of N = %d tokens (2^30 tokens in all); lower it, or choose "
                       "task.seq_len and task.modulus so that every bin is common", n_examples,
                       count_text(need, need_text, sizeof need_text), b, MATCH2_N_BINS, BIN_TEXT[b], rate,
                       count_text(limit, limit_text, sizeof limit_text), seq_len);
    }
    return 0;
}

int match2_generate(Dataset *out, int n_examples, int seq_len, int modulus, Rng *rng,
                    const SeqSet *exclude, Match2Stats *stats, AlError *err) {
    memset(out, 0, sizeof *out);
    if (check_args(n_examples, seq_len, modulus, exclude, err)) return 2;
    Match2Stats local;
    Gen g;
    gen_init(&g, out, n_examples, seq_len, modulus, rng, exclude, stats ? stats : &local);
    gen_sample(&g, n_examples);
    int *perm = al_malloc((size_t)seq_len * sizeof(int));
    int rc = 0;
    for (int b = 0; b < MATCH2_N_BINS && rc == 0; b++) rc = gen_top_up(&g, b, perm, err);
    free(perm);
    g.st->n_distinct = g.seen.count;
    gen_free(&g);
    if (rc) {
        dataset_free(out);
        return rc;
    }
    dataset_shuffle_rows(out, rng);
    return 0;
}
