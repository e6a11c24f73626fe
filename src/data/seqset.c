/* seqset.c — see seqset.h.  Linear probing; growth doubles the table and reuses
 * the stored hashes, so keys are hashed once. */
#include "attnlab/data/seqset.h"
#include "attnlab/util/error.h"

#include <stdlib.h>
#include <string.h>

static size_t key_bytes(const SeqSet *s) { return (size_t)s->seq_len * sizeof(int); }

static const int *key_at(const SeqSet *s, int k) { return s->keys + (size_t)k * s->seq_len; }

static void alloc_slots(SeqSet *s, int n_slots) {
    s->n_slots = n_slots;
    s->slot_key = al_malloc((size_t)n_slots * sizeof *s->slot_key);
    s->slot_hash = al_malloc((size_t)n_slots * sizeof *s->slot_hash);
    for (int i = 0; i < n_slots; i++) s->slot_key[i] = -1;
}

void seqset_init(SeqSet *s, int seq_len, int expected) {
    AL_ASSERT(seq_len >= 1 && expected >= 0);
    memset(s, 0, sizeof *s);
    s->seq_len = seq_len;
    int n_slots = 16;
    while (n_slots < 2LL * expected && n_slots < (1 << 30)) n_slots *= 2;
    alloc_slots(s, n_slots);
    s->keys_cap = expected > 0 ? expected : 8;
    s->keys = al_malloc((size_t)s->keys_cap * key_bytes(s));
}

void seqset_free(SeqSet *s) {
    free(s->slot_key);
    free(s->slot_hash);
    free(s->keys);
    memset(s, 0, sizeof *s);
}

static inline uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t seqset_hash(const int *seq, int seq_len) {
    /* Each step is a bijection of h for a fixed element, and the multiply spreads
     * every element over the whole word; the final mix fixes the low bits, which
     * pick the slot. */
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)(uint32_t)seq_len;
    for (int i = 0; i < seq_len; i++) {
        h ^= (uint64_t)(uint32_t)seq[i];
        h *= 0xD6E8FEB86659FD93ull;
        h ^= h >> 32;
    }
    return mix64(h);
}

/* The slot holding seq, or the empty slot where it would go. */
static int find_slot(const SeqSet *s, const int *seq, uint64_t h) {
    unsigned mask = (unsigned)s->n_slots - 1;
    for (unsigned i = (unsigned)h & mask;; i = (i + 1) & mask) {
        int k = s->slot_key[i];
        if (k < 0) return (int)i;
        if (s->slot_hash[i] == h && memcmp(key_at(s, k), seq, key_bytes(s)) == 0) return (int)i;
    }
}

int seqset_contains(const SeqSet *s, const int *seq) {
    return s->slot_key[find_slot(s, seq, seqset_hash(seq, s->seq_len))] >= 0;
}

static void grow_slots(SeqSet *s) {
    int old_n = s->n_slots, *old_key = s->slot_key;
    uint64_t *old_hash = s->slot_hash;
    AL_ASSERT(old_n <= (1 << 29));
    alloc_slots(s, old_n * 2);
    unsigned mask = (unsigned)s->n_slots - 1;
    for (int i = 0; i < old_n; i++) {
        if (old_key[i] < 0) continue;
        unsigned j = (unsigned)old_hash[i] & mask;
        while (s->slot_key[j] >= 0) j = (j + 1) & mask;
        s->slot_key[j] = old_key[i];
        s->slot_hash[j] = old_hash[i];
    }
    free(old_key);
    free(old_hash);
}

static void grow_keys(SeqSet *s) {
    AL_ASSERT(s->keys_cap <= (1 << 29));
    s->keys_cap *= 2;
    s->keys = al_realloc(s->keys, (size_t)s->keys_cap * key_bytes(s));
}

int seqset_add(SeqSet *s, const int *seq) {
    uint64_t h = seqset_hash(seq, s->seq_len);
    int slot = find_slot(s, seq, h);
    if (s->slot_key[slot] >= 0) return 0;
    if (2 * (s->count + 1) > s->n_slots) {
        grow_slots(s);
        slot = find_slot(s, seq, h);
    }
    if (s->count == s->keys_cap) grow_keys(s);
    memcpy(s->keys + (size_t)s->count * s->seq_len, seq, key_bytes(s));
    s->slot_key[slot] = s->count++;
    s->slot_hash[slot] = h;
    return 1;
}

int seqset_add_rows(SeqSet *s, const int *rows, int n) {
    int added = 0;
    for (int i = 0; i < n; i++) added += seqset_add(s, rows + (size_t)i * s->seq_len);
    return added;
}
