/* rng.h — seeded pseudo-random numbers (xoshiro256**, seeded by splitmix64).
 *
 * Every random choice in attnlab (initialisation, data, dropout, hash functions)
 * draws from an Rng derived from the config's seed, so a run is reproducible bit
 * for bit.  The state is four words: a checkpoint stores it and resume continues
 * the exact same stream. */
#ifndef ATTNLAB_UTIL_RNG_H
#define ATTNLAB_UTIL_RNG_H

#include <stdint.h>

typedef struct Rng { uint64_t s[4]; } Rng;

void     rng_seed(Rng *r, uint64_t seed);
/* An independent stream for a named purpose ("init", "data", ...): same seed and
 * stream id always give the same generator, different ids give unrelated ones. */
Rng      rng_stream(uint64_t seed, uint64_t stream_id);
uint64_t rng_u64(Rng *r);
double   rng_uniform(Rng *r);                 /* [0, 1), 53 random bits */
uint32_t rng_below(Rng *r, uint32_t n);       /* uniform in [0, n), unbiased; n > 0 */
double   rng_normal(Rng *r);                  /* standard normal (Box–Muller, no cache) */
/* Fisher–Yates shuffle of n ints. */
void     rng_shuffle_int(Rng *r, int *a, int n);

#endif
