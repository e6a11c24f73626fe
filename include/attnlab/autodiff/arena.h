/* arena.h — bump allocator for everything a training step creates.
 *
 * Activations, gradients of activations and saved data for backward live here.
 * A step allocates by bumping a pointer; arena_reset() makes all of it free again.
 * The first steps may outgrow the block (then extra chunks are malloc'ed); reset
 * replaces them by one block of the high-water size, so from the second step on
 * the training loop does no malloc at all.  `n_mallocs` lets tests assert that. */
#ifndef ATTNLAB_AUTODIFF_ARENA_H
#define ATTNLAB_AUTODIFF_ARENA_H

#include <stddef.h>
#include <stdint.h>

#define ARENA_ALIGN 64  /* cache line; also enough for any SIMD load */
/* Larger requests are out of memory at once (no machine has half the address
 * space), which also keeps the arena's size arithmetic from wrapping.  Out of
 * memory exits (code 1) naming the size asked for. */
#define ARENA_MAX_REQUEST (SIZE_MAX / 4)

typedef struct ArenaChunk ArenaChunk;

typedef struct Arena {
    char  *base;        /* main block */
    size_t cap;         /* bytes in main block */
    size_t used;        /* bytes used in main block */
    ArenaChunk *extra;  /* overflow chunks since the last reset (NULL in steady state) */
    size_t extra_used;  /* bytes handed out from overflow chunks */
    size_t high_water;  /* max of (used + extra_used) since arena_init */
    long   n_mallocs;   /* calls to malloc made by this arena, ever */
} Arena;

void   arena_init(Arena *a, size_t initial_bytes);
void  *arena_alloc(Arena *a, size_t bytes);        /* ARENA_ALIGN-aligned, uninitialised
                                                     * (0xff bytes in sanitizer builds) */
void  *arena_calloc(Arena *a, size_t bytes);       /* zeroed */
void   arena_reset(Arena *a);                      /* frees everything allocated since last reset */
size_t arena_in_use(const Arena *a);
void   arena_free(Arena *a);

#endif
