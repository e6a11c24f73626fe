/* test_seqset.c — the sequence hash set against a dense reference table. */
#include "attnlab/data/seqset.h"
#include "attnlab/util/rng.h"
#include "check.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define ALPHA 50  /* reference universe: all length-3 sequences over 0..49 */

static int dense_index(const int *s) { return (s[0] * ALPHA + s[1]) * ALPHA + s[2]; }

/* Random inserts with many repeats; every answer compared with a dense bitmap. */
static void test_against_reference(void) {
    SeqSet set;
    seqset_init(&set, 3, 0);  /* no size hint: exercises every growth step */
    char *ref = calloc(ALPHA * ALPHA * ALPHA, 1);
    Rng rng;
    rng_seed(&rng, 7);
    int ref_count = 0, bad_add = 0;
    for (int t = 0; t < 200000; t++) {
        int s[3] = { (int)rng_below(&rng, ALPHA), (int)rng_below(&rng, ALPHA), (int)rng_below(&rng, ALPHA) };
        int expect_new = !ref[dense_index(s)];
        ref[dense_index(s)] = 1;
        ref_count += expect_new;
        if (seqset_add(&set, s) != expect_new) bad_add++;
    }
    CHECK(bad_add == 0, "%d adds disagreed with the reference", bad_add);
    CHECK(set.count == ref_count, "count %d vs reference %d", set.count, ref_count);
    CHECK(2 * set.count <= set.n_slots, "load factor above 1/2: %d in %d slots", set.count, set.n_slots);
    int bad_contains = 0;
    for (int a = 0; a < ALPHA; a++)
        for (int b = 0; b < ALPHA; b++)
            for (int c = 0; c < ALPHA; c++) {
                int s[3] = { a, b, c };
                if (seqset_contains(&set, s) != ref[dense_index(s)]) bad_contains++;
            }
    CHECK(bad_contains == 0, "%d membership answers disagreed with the reference", bad_contains);
    free(ref);
    seqset_free(&set);
}

/* Sequences that differ only in order or in one element are different keys. */
static void test_near_duplicates(void) {
    SeqSet set;
    seqset_init(&set, 4, 4);
    int a[4] = { 1, 2, 3, 4 }, b[4] = { 4, 3, 2, 1 }, c[4] = { 1, 2, 3, 5 }, d[4] = { 0, 0, 0, 0 };
    CHECK(seqset_add(&set, a) == 1, "first add is new");
    CHECK(seqset_add(&set, a) == 0, "second add of the same sequence is not new");
    CHECK(!seqset_contains(&set, b), "reversed sequence is a different key");
    CHECK(!seqset_contains(&set, c), "last element differs: a different key");
    CHECK(!seqset_contains(&set, d), "all-zero sequence not added");
    CHECK(seqset_add(&set, d) == 1 && seqset_contains(&set, d), "all-zero sequence is a valid key");
    CHECK(set.count == 2, "count %d", set.count);
    seqset_free(&set);
}

/* The set keeps its own copy: changing the caller's buffer changes nothing. */
static void test_owns_keys(void) {
    SeqSet set;
    seqset_init(&set, 2, 1);
    int buf[2] = { 10, 20 };
    seqset_add(&set, buf);
    buf[1] = 21;
    int orig[2] = { 10, 20 };
    CHECK(seqset_contains(&set, orig), "original key still present after its buffer changed");
    CHECK(!seqset_contains(&set, buf), "the changed buffer is not a key");
    seqset_free(&set);
}

static void test_extreme_values(void) {
    SeqSet set;
    seqset_init(&set, 1, 0);
    int vals[] = { INT_MIN, -1, 0, 1, INT_MAX };
    int n = (int)(sizeof vals / sizeof vals[0]);
    CHECK(seqset_add_rows(&set, vals, n) == n, "all extreme values are new");
    CHECK(seqset_add_rows(&set, vals, n) == 0, "re-adding them adds nothing");
    for (int i = 0; i < n; i++) CHECK(seqset_contains(&set, &vals[i]), "value %d present", vals[i]);
    int two = 2;
    CHECK(!seqset_contains(&set, &two), "2 absent");
    seqset_free(&set);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* No full 64-bit collision among structured keys (a weak hash collides on these),
 * the length is part of the hash, and the low bits (slot index) are well spread. */
static void test_hash(void) {
    enum { K = 1 << 18, LEN = 8 };
    uint64_t *h = malloc(2 * K * sizeof *h);
    int s[LEN];
    for (int i = 0; i < K; i++) {
        memset(s, 0, sizeof s);
        s[0] = i;
        h[i] = seqset_hash(s, LEN);
        s[0] = 0;
        s[LEN - 1] = i;
        h[K + i] = seqset_hash(s, LEN);
    }
    int low_hit[1024] = { 0 }, used = 0;
    for (int i = 0; i < K; i++) low_hit[h[i] & 1023] = 1;
    for (int i = 0; i < 1024; i++) used += low_hit[i];
    CHECK(used == 1024, "sequential keys fill only %d of 1024 low-bit buckets", used);
    /* s[0] = 0 and s[LEN−1] = 0 is the same key in both halves: exactly one repeat. */
    qsort(h, 2 * K, sizeof *h, cmp_u64);
    int repeats = 0;
    for (int i = 1; i < 2 * K; i++) repeats += h[i] == h[i - 1];
    CHECK(repeats == 1, "%d hash repeats among %d keys (expected 1: the all-zero key)", repeats, 2 * K - 1);
    int p[3] = { 1, 2, 0 };
    CHECK(seqset_hash(p, 2) != seqset_hash(p, 3), "length is part of the hash");
    CHECK(seqset_hash(p, 3) == seqset_hash(p, 3), "hash is deterministic");
    free(h);
}

int main(void) {
    test_against_reference();
    test_near_duplicates();
    test_owns_keys();
    test_extreme_values();
    test_hash();
    return check_exit("test_seqset");
}
