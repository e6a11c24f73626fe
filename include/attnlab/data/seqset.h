/* seqset.h — a set of fixed-length int sequences (open addressing, 64-bit hashes).
 *
 * Why: synthetic datasets must be honest about what the model has seen.  Generators
 * use a SeqSet to keep training sequences distinct and to keep the test set
 * disjoint from the training set (pass the training set as the "exclude" set).
 *
 * The set owns copies of its keys, so it may outlive the buffers it was filled
 * from.  Membership compares whole sequences; the hash only picks the slot and
 * skips most comparisons, so a hash collision costs time, never correctness. */
#ifndef ATTNLAB_DATA_SEQSET_H
#define ATTNLAB_DATA_SEQSET_H

#include <stdint.h>

typedef struct SeqSet {
    int seq_len;          /* every key has exactly this many ints */
    int count;            /* distinct keys stored */
    int n_slots;          /* power of two, kept ≥ 2·count (load ≤ 1/2) */
    int *slot_key;        /* per slot: index of its key in `keys`, −1 = empty */
    uint64_t *slot_hash;  /* per slot: the key's hash (cheap compare; rehash on growth) */
    int *keys;            /* count × seq_len, in insertion order */
    int keys_cap;         /* rows allocated in `keys` */
} SeqSet;

/* expected: a size hint (0 is fine); the set grows as needed.  seq_len ≥ 1. */
void seqset_init(SeqSet *s, int seq_len, int expected);
void seqset_free(SeqSet *s);
uint64_t seqset_hash(const int *seq, int seq_len);
int  seqset_contains(const SeqSet *s, const int *seq);
/* Returns 1 if seq was added, 0 if it was already present. */
int  seqset_add(SeqSet *s, const int *seq);
/* Adds n rows (n × seq_len, row-major); returns how many were new. */
int  seqset_add_rows(SeqSet *s, const int *rows, int n);

#endif
