/* lsh.c — drawing the angular hash functions and hashing with one GEMM.
 *
 * All the arithmetic is the projection X·proj; what follows per function is a
 * sign test (hyperplane) or an argmax over d values (cross-polytope), O(width)
 * per function.  Hashing n vectors costs O(n·d·ℓ·z·width): O(n·d·ℓ·z) for
 * hyperplanes, O(n·d²·ℓ·z) for cross-polytopes with a dense rotation. */
#include "attnlab/anna/lsh.h"

#include "attnlab/util/rng.h"

#include "attnlab/util/gemm.h"
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *lsh_family_name(LshFamily family) {
    return family == LSH_HYPERPLANE ? "hyperplane" : "crosspolytope";
}

/* ⌈log₂ 2d⌉: the bits that number 2d buckets. */
static int crosspolytope_bits(int dim) {
    int b = 1;
    while (b < 62 && (1L << b) < 2L * dim) b++;
    return b;
}

/* Why errors and not asserts: ℓ, z and d come from configs and experiment sweeps. */
static int lsh_check(LshFamily family, int dim, int n_tables, int n_funcs, AlError *err) {
    if (family != LSH_HYPERPLANE && family != LSH_CROSSPOLYTOPE)
        return al_fail(err, 2, "lsh: unknown family %d (expected hyperplane or crosspolytope)",
                       (int)family);
    if (dim < 1) return al_fail(err, 2, "lsh: dimension must be >= 1, got %d", dim);
    if (n_tables < 1) return al_fail(err, 2, "lsh: number of tables must be >= 1, got %d", n_tables);
    if (n_funcs < 1)
        return al_fail(err, 2, "lsh: hash functions per table must be >= 1, got %d", n_funcs);
    if (family == LSH_HYPERPLANE && n_funcs > 64)
        return al_fail(err, 2, "lsh: hyperplane tables hold at most 64 functions (one bit each "
                       "in a 64-bit code), got %d", n_funcs);
    int b = crosspolytope_bits(dim);
    if (family == LSH_CROSSPOLYTOPE && (long)n_funcs * b > 64)
        return al_fail(err, 2, "lsh: crosspolytope tables at dimension %d hold at most %d "
                       "functions (%d bits each for %ld buckets in a 64-bit code), got %d",
                       dim, 64 / b, b, 2L * dim, n_funcs);
    long width = family == LSH_HYPERPLANE ? 1 : dim;
    long cols = (long)n_tables * n_funcs * width;
    if (cols > INT_MAX || cols * dim > INT_MAX)
        return al_fail(err, 2, "lsh: %d tables x %d functions x %ld projections at dimension %d "
                       "is too large a projection matrix (limit 2^31 entries)",
                       n_tables, n_funcs, width, dim);
    return 0;
}

/* Table t's functions come from their own stream, in order, so tables and the
 * functions inside a table nest across (ℓ, z) (see lsh.h). */
static void lsh_draw(Lsh *lsh) {
    const int z = lsh->n_funcs, w = lsh->width, np = lsh->n_proj;
    for (int t = 0; t < lsh->n_tables; t++) {
        Rng r = rng_stream(lsh->seed, (uint64_t)t);
        for (int f = 0; f < z; f++)
            for (int c = 0; c < w; c++) {
                long col = ((long)t * z + f) * w + c;
                for (int row = 0; row < lsh->dim; row++)
                    lsh->proj[row * (long)np + col] = (float)rng_normal(&r);
            }
    }
}

int lsh_init(Lsh *lsh, LshFamily family, int dim, int n_tables, int n_funcs, uint64_t seed,
             AlError *err) {
    memset(lsh, 0, sizeof *lsh);
    int rc = lsh_check(family, dim, n_tables, n_funcs, err);
    if (rc) return rc;
    lsh->family = family;
    lsh->dim = dim;
    lsh->n_tables = n_tables;
    lsh->n_funcs = n_funcs;
    lsh->width = family == LSH_HYPERPLANE ? 1 : dim;
    lsh->bits = family == LSH_HYPERPLANE ? 1 : crosspolytope_bits(dim);
    lsh->n_proj = n_tables * n_funcs * lsh->width;
    lsh->seed = seed;
    lsh->proj = al_malloc((size_t)dim * lsh->n_proj * sizeof(float));
    lsh_draw(lsh);
    return 0;
}

void lsh_free(Lsh *lsh) {
    free(lsh->proj);
    lsh->proj = NULL;
}

long lsh_proj_floats(const Lsh *lsh, int n) { return (long)n * lsh->n_proj; }

/* One row's ℓ codes from its projections: bit f of table t is the sign of p[t·z + f]. */
static void hyperplane_codes(const Lsh *lsh, const float *p, uint64_t *codes) {
    const int z = lsh->n_funcs;
    for (int t = 0; t < lsh->n_tables; t++, p += z) {
        uint64_t code = 0;
        for (int f = 0; f < z; f++) code |= (uint64_t)(p[f] >= 0.0f) << f;
        codes[t] = code;
    }
}

/* The nearest of ±e_1..±e_d to y: the first c of largest |y_c| (ties go to the lower
 * index, so the result is deterministic), +e_c → c, −e_c → d + c. */
static uint64_t crosspolytope_bucket(const float *y, int d) {
    int best = 0;
    float best_abs = fabsf(y[0]);
    for (int c = 1; c < d; c++) {
        float a = fabsf(y[c]);
        if (a > best_abs) { best_abs = a; best = c; }
    }
    return (uint64_t)(y[best] >= 0.0f ? best : d + best);
}

static void crosspolytope_codes(const Lsh *lsh, const float *p, uint64_t *codes) {
    const int z = lsh->n_funcs, d = lsh->dim, b = lsh->bits;
    for (int t = 0; t < lsh->n_tables; t++) {
        uint64_t code = 0;
        for (int f = 0; f < z; f++, p += d) code |= crosspolytope_bucket(p, d) << (f * b);
        codes[t] = code;
    }
}

void lsh_hash_scratch(const Lsh *lsh, const float *x, int n, uint64_t *codes, float *proj) {
    if (n <= 0) return;
    const int np = lsh->n_proj, l = lsh->n_tables;
    al_sgemm(CblasNoTrans, CblasNoTrans, n, np, lsh->dim, 1.0f, x, lsh->dim,
                lsh->proj, np, 0.0f, proj, np);
    for (int i = 0; i < n; i++) {
        const float *p = proj + (long)i * np;
        if (lsh->family == LSH_HYPERPLANE) hyperplane_codes(lsh, p, codes + (long)i * l);
        else crosspolytope_codes(lsh, p, codes + (long)i * l);
    }
}

void lsh_hash(const Lsh *lsh, const float *x, int n, uint64_t *codes) {
    if (n <= 0) return;
    float *proj = al_malloc((size_t)lsh_proj_floats(lsh, n) * sizeof(float));
    lsh_hash_scratch(lsh, x, n, codes, proj);
    free(proj);
}

uint64_t lsh_head_seed(uint64_t base_seed, int layer, int head) {
    /* Stream ids offset by one so (layer 0, head 0) is not the bare base seed. */
    uint64_t id = ((uint64_t)(uint32_t)layer << 32 | (uint32_t)head) + 1;
    Rng r = rng_stream(base_seed ^ 0xA77A11A5ull, id);
    return rng_u64(&r);
}
