/* dyck.c — see dyck.h.
 *
 * Cost: O(N) per positive; a negative adds O(N) per corruption attempt for the
 * membership check, and attempts beyond the first are rare (~1% at N = 20).  No
 * malloc: the stack is a fixed array and dyck_sample builds the positive in the
 * caller's targets buffer before writing the real targets. */
#include "attnlab/data/dyck.h"
#include "attnlab/data/dataset.h"

#include <string.h>

static int is_close(int tok) { return tok & 1; }
static int type_of(int tok) { return tok >> 1; }

int dyck_check(const DyckParams *p, AlError *err) {
    if (p->seq_len < 2 || p->seq_len > DYCK_MAX_LEN)
        return al_fail(err, 2, "dyck: seq_len must be in [2, %d], got %d", DYCK_MAX_LEN, p->seq_len);
    if (p->seq_len % 2)
        return al_fail(err, 2, "dyck: seq_len must be even, got %d (a balanced string has even "
                       "length, so no positive of odd length exists; paper 003 uses even N only)",
                       p->seq_len);
    if (p->depth < 1 || p->depth > DYCK_MAX_DEPTH)
        return al_fail(err, 2, "dyck: depth must be in [1, %d], got %d", DYCK_MAX_DEPTH, p->depth);
    if (p->types < 1 || p->types > DYCK_MAX_TYPES)
        return al_fail(err, 2, "dyck: types must be in [1, %d], got %d", DYCK_MAX_TYPES, p->types);
    return 0;
}

int dyck_vocab_size(const DyckParams *p) { return 2 * p->types; }
int dyck_n_classes(const DyckParams *p) { (void)p; return 2; }
int dyck_max_len(const DyckParams *p) { return p->seq_len; }
int dyck_max_corruptions(const DyckParams *p) { return p->seq_len >= 10 ? p->seq_len / 10 : 1; }

/* ---- recognisers -------------------------------------------------------- */

int dyck_is_member(const DyckParams *p, const int *x, int n) {
    int stack[DYCK_MAX_DEPTH], h = 0;
    for (int i = 0; i < n; i++) {
        if (x[i] < 0 || x[i] >= 2 * p->types) return 0;
        if (!is_close(x[i])) {
            if (h == p->depth) return 0;
            stack[h++] = type_of(x[i]);
        } else if (h == 0 || stack[--h] != type_of(x[i])) {
            return 0;
        }
    }
    return h == 0;
}

int dyck_profile_valid(const DyckParams *p, const int *x, int n) {
    int h = 0;
    for (int i = 0; i < n; i++) {
        if (x[i] < 0 || x[i] >= 2 * p->types) return 0;
        h += is_close(x[i]) ? -1 : 1;
        if (h < 0 || h > p->depth) return 0;
    }
    return h == 0;
}

int dyck_group(const DyckParams *p, const int *x, int n) {
    if (dyck_is_member(p, x, n)) return DYCK_GROUP_POSITIVE;
    return dyck_profile_valid(p, x, n) ? DYCK_GROUP_TYPE_ONLY : DYCK_GROUP_PROFILE;
}

/* ---- positives ---------------------------------------------------------- */

void dyck_positive(const DyckParams *p, Rng *rng, int *x) {
    int n = p->seq_len, types = p->types, stack[DYCK_MAX_DEPTH], h = 0;
    for (int i = 0; i < n; i++) {
        int left = n - i;  /* h ≡ left (mod 2) since N is even, so h < left leaves room */
        int choice;        /* 0..types−1 = open that type, types = close the top */
        if (h == 0) choice = (int)rng_below(rng, (uint32_t)types);
        else if (h == p->depth || h >= left) choice = types;
        else choice = (int)rng_below(rng, (uint32_t)types + 1);
        if (choice < types) {
            stack[h++] = choice;
            x[i] = 2 * choice;
        } else {
            x[i] = 2 * stack[--h] + 1;
        }
    }
    AL_ASSERT(h == 0);
}

/* ---- negatives ---------------------------------------------------------- */

/* A type swap keeps the direction and picks a uniformly chosen other type; with
 * one type there is none, so it becomes a direction flip (reported as such). */
static int corrupt_one(const DyckParams *p, Rng *rng, int tok, int *flipped) {
    *flipped = p->types == 1 || rng_below(rng, 2) == 1;
    if (*flipped) return tok ^ 1;
    int t = type_of(tok), other = t;
    if (p->types == 2) other = 1 - t;
    else other = (t + 1 + (int)rng_below(rng, (uint32_t)p->types - 1)) % p->types;
    return 2 * other + is_close(tok);
}

/* One attempt: k distinct positions chosen by rejection (a changed token marks a
 * chosen position, since both corruptions always change the token).  Drawing
 * distinct uniform positions in sequence gives a uniform k-subset. */
static void corrupt_attempt(const DyckParams *p, Rng *rng, const int *pos, int *x, DyckCorruption *c) {
    int n = p->seq_len;
    memcpy(x, pos, (size_t)n * sizeof *x);
    c->k = 1 + (int)rng_below(rng, (uint32_t)dyck_max_corruptions(p));
    c->n_swaps = c->n_flips = 0;
    for (int done = 0; done < c->k;) {
        int i = (int)rng_below(rng, (uint32_t)n), flipped;
        if (x[i] != pos[i]) continue;
        x[i] = corrupt_one(p, rng, pos[i], &flipped);
        c->n_flips += flipped;
        c->n_swaps += !flipped;
        done++;
    }
}

void dyck_corrupt(const DyckParams *p, Rng *rng, const int *positive, int *x, DyckCorruption *info) {
    DyckCorruption c = { 0 };
    for (;;) {
        c.attempts++;
        corrupt_attempt(p, rng, positive, x, &c);
        if (!dyck_is_member(p, x, p->seq_len)) break;
        if (c.attempts == DYCK_MAX_ATTEMPTS) {
            /* Unreachable in practice; a single flip unbalances the string for sure. */
            memcpy(x, positive, (size_t)p->seq_len * sizeof *x);
            x[rng_below(rng, (uint32_t)p->seq_len)] ^= 1;
            c.k = c.n_flips = 1;
            c.n_swaps = 0;
            break;
        }
    }
    if (info) *info = c;
}

/* ---- examples ----------------------------------------------------------- */

void dyck_sample(const DyckParams *p, Rng *rng, Example *ex) {
    int n = p->seq_len, label = (int)rng_below(rng, 2);
    if (label) {
        dyck_positive(p, rng, ex->tokens);
        ex->group = DYCK_GROUP_POSITIVE;
    } else {
        dyck_positive(p, rng, ex->targets);  /* scratch: the targets are written below */
        dyck_corrupt(p, rng, ex->targets, ex->tokens, NULL);
        ex->group = dyck_profile_valid(p, ex->tokens, n) ? DYCK_GROUP_TYPE_ONLY : DYCK_GROUP_PROFILE;
    }
    for (int i = 0; i < n - 1; i++) ex->targets[i] = DATASET_IGNORE;
    ex->targets[n - 1] = label;
    ex->len = n;
    ex->prompt_len = 0;
    ex->answer_start = -1;
    ex->answer_len = 0;
}
