/* arena.c — see arena.h.  Overflow chunks exist only until the next reset. */
#include "attnlab/autodiff/arena.h"
#include "attnlab/util/error.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ArenaChunk {
    ArenaChunk *next;
    size_t cap, used;
    char *data;
};

/* Sanitizer builds hand out memory filled with 0xff bytes (a NaN as float): an op
 * that reads arena memory it never wrote — a fresh grad it should have stored into
 * (tape.h, first writer assigns), say — then turns the tests' results into NaN
 * instead of reading whatever zeros a new block happens to hold. */
#ifdef __SANITIZE_ADDRESS__
#define ARENA_POISON 1
#else
#define ARENA_POISON 0
#endif

static size_t round_up(size_t n) { return (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1); }

/* Fatal, like al_malloc's out of memory, but with the size that was asked for: the
 * arena holds one training step's activations, so the size says how far off the run
 * is.  (The trainer's memory check should have refused such a config up front.) */
static void arena_oom(size_t bytes) __attribute__((noreturn));
static void arena_oom(size_t bytes) {
    fprintf(stderr, "attnlab: out of memory: the tape arena could not get %zu bytes (%.3g GiB) for a step's "
                    "activations; lower train.batch_size, the sequence length or the model size\n",
            bytes, (double)bytes / (1u << 30));
    exit(1);
}

static char *aligned_block(Arena *a, size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, ARENA_ALIGN, bytes ? bytes : ARENA_ALIGN) != 0) arena_oom(bytes);
    a->n_mallocs++;
    return p;
}

void arena_init(Arena *a, size_t initial_bytes) {
    memset(a, 0, sizeof *a);
    a->cap = round_up(initial_bytes ? initial_bytes : (1u << 20));
    a->base = aligned_block(a, a->cap);
}

static void note_high_water(Arena *a) {
    size_t now = a->used + a->extra_used;
    if (now > a->high_water) a->high_water = now;
}

static void *arena_take(Arena *a, size_t bytes) {
    if (bytes > ARENA_MAX_REQUEST) arena_oom(bytes);   /* no rounding or sum below can wrap */
    bytes = round_up(bytes ? bytes : 1);
    if (bytes <= a->cap - a->used) {
        void *p = a->base + a->used;
        a->used += bytes;
        note_high_water(a);
        return p;
    }
    ArenaChunk *c = a->extra;
    if (!c || c->used + bytes > c->cap) {
        /* Grow geometrically so a large first step costs few mallocs. */
        size_t cap = a->cap > bytes ? a->cap : bytes;
        c = (ArenaChunk *)al_malloc(sizeof *c);
        a->n_mallocs++;
        c->data = aligned_block(a, cap);
        c->cap = cap;
        c->used = 0;
        c->next = a->extra;
        a->extra = c;
    }
    void *p = c->data + c->used;
    c->used += bytes;
    a->extra_used += bytes;
    note_high_water(a);
    return p;
}

void *arena_alloc(Arena *a, size_t bytes) {
    void *p = arena_take(a, bytes);
    if (ARENA_POISON) memset(p, 0xff, bytes);
    return p;
}

void *arena_calloc(Arena *a, size_t bytes) {
    void *p = arena_alloc(a, bytes);
    memset(p, 0, bytes);
    return p;
}

void arena_reset(Arena *a) {
    if (a->extra) {
        /* The last step needed more than the main block: replace everything with one
         * block big enough for it, so the next step fits without malloc. */
        size_t need = round_up(a->high_water + a->high_water / 8);
        while (a->extra) {
            ArenaChunk *c = a->extra;
            a->extra = c->next;
            free(c->data);
            free(c);
        }
        free(a->base);
        a->cap = need;
        a->base = aligned_block(a, need);
    }
    a->used = 0;
    a->extra_used = 0;
}

size_t arena_in_use(const Arena *a) { return a->used + a->extra_used; }

void arena_free(Arena *a) {
    arena_reset(a);
    free(a->base);
    memset(a, 0, sizeof *a);
}
