/* lsh.c — drawing the angular hash functions and hashing (definitions in lsh.h).
 *
 * Hyperplane: all the arithmetic is the projection X·proj (one GEMM), then a sign
 * test per function: O(n·d·ℓ·z).
 * Cross-polytope: per row and function, the row zero-padded to p coordinates,
 * three rounds of (multiply by the ±1 diagonal, in-place Walsh–Hadamard
 * transform), then the argmax of |y_c| over the function's m coordinates with its
 * sign: O(n·ℓ·z·p log p), on blocks of rows at once (crosspolytope_block). */
#include "attnlab/anna/lsh.h"

#include "attnlab/util/gemm.h"
#include "attnlab/util/rng.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *lsh_family_name(LshFamily family) {
    return family == LSH_HYPERPLANE ? "hyperplane" : "crosspolytope";
}

int lsh_padded_dim(int dim) {
    int p = 1;
    while (p < dim && p < (1 << 30)) p <<= 1;
    return p;
}

static int log2_exact(int p) {
    int b = 0;
    while ((1 << b) < p) b++;
    return b;
}

/* Why errors and not asserts: ℓ, z and d come from configs and experiment sweeps. */
static int lsh_check(LshFamily family, int dim, int n_tables, int n_funcs, int last_dim, AlError *err) {
    if (family != LSH_HYPERPLANE && family != LSH_CROSSPOLYTOPE)
        return al_fail(err, 2, "lsh: unknown family %d (expected hyperplane or crosspolytope)",
                       (int)family);
    if (dim < 1) return al_fail(err, 2, "lsh: dimension must be >= 1, got %d", dim);
    if (dim > (1 << 24)) return al_fail(err, 2, "lsh: dimension %d is too large (limit 2^24)", dim);
    if (n_tables < 1) return al_fail(err, 2, "lsh: number of tables must be >= 1, got %d", n_tables);
    if (n_funcs < 1)
        return al_fail(err, 2, "lsh: hash functions per table must be >= 1, got %d", n_funcs);
    if (family == LSH_HYPERPLANE && n_funcs > 64)
        return al_fail(err, 2, "lsh: hyperplane tables hold at most 64 functions (one bit each "
                       "in a 64-bit code), got %d", n_funcs);
    if (family == LSH_HYPERPLANE && last_dim != 0)
        return al_fail(err, 2, "lsh: a last cross-polytope dimension (%d) means nothing for hyperplanes", last_dim);
    int p = lsh_padded_dim(dim), b = log2_exact(p) + 1;
    if (family == LSH_CROSSPOLYTOPE && (long)n_funcs * b > 64)
        return al_fail(err, 2, "lsh: crosspolytope tables at dimension %d hold at most %d "
                       "functions (%d bits each for %ld buckets in a 64-bit code), got %d",
                       dim, 64 / b, b, 2L * p, n_funcs);
    if (family == LSH_CROSSPOLYTOPE && (last_dim < 0 || last_dim > p))
        return al_fail(err, 2, "lsh: the last cross-polytope dimension must be in [1, %d] (the padded dimension "
                       "of d = %d), or 0 for %d; got %d", p, dim, p, last_dim);
    long per = family == LSH_HYPERPLANE ? dim : (long)LSH_ROTATIONS * p;
    double entries = (double)n_tables * n_funcs * per;
    if (entries > INT_MAX)
        return al_fail(err, 2, "lsh: %d tables x %d functions x %ld parameters at dimension %d "
                       "is too large (limit 2^31 entries)", n_tables, n_funcs, per, dim);
    return 0;
}

/* Table t's functions come from their own stream, in order, so tables and the
 * functions inside a table nest across (ℓ, z) (see lsh.h). */
static void lsh_draw(Lsh *lsh) {
    const int z = lsh->n_funcs;
    for (int t = 0; t < lsh->n_tables; t++) {
        Rng r = rng_stream(lsh->seed, (uint64_t)t);
        for (int f = 0; f < z; f++) {
            long fn = (long)t * z + f;
            if (lsh->family == LSH_HYPERPLANE) {
                for (int row = 0; row < lsh->dim; row++)
                    lsh->proj[row * (long)lsh->n_proj + fn] = (float)rng_normal(&r);
            } else {
                float *s = lsh->signs + fn * LSH_ROTATIONS * lsh->rot_dim;
                for (long c = 0; c < (long)LSH_ROTATIONS * lsh->rot_dim; c++)
                    s[c] = (rng_u64(&r) >> 63) ? 1.0f : -1.0f;
            }
        }
    }
}

int lsh_init_last(Lsh *lsh, LshFamily family, int dim, int n_tables, int n_funcs, int last_dim,
                  uint64_t seed, AlError *err) {
    memset(lsh, 0, sizeof *lsh);
    int rc = lsh_check(family, dim, n_tables, n_funcs, last_dim, err);
    if (rc) return rc;
    lsh->family = family;
    lsh->dim = dim;
    lsh->n_tables = n_tables;
    lsh->n_funcs = n_funcs;
    lsh->seed = seed;
    if (family == LSH_HYPERPLANE) {
        lsh->bits = 1;
        lsh->n_proj = n_tables * n_funcs;
        lsh->proj = al_malloc((size_t)dim * lsh->n_proj * sizeof(float));
    } else {
        lsh->rot_dim = lsh_padded_dim(dim);
        lsh->last_dim = last_dim ? last_dim : lsh->rot_dim;
        lsh->bits = log2_exact(lsh->rot_dim) + 1;
        lsh->signs = al_malloc((size_t)n_tables * n_funcs * LSH_ROTATIONS * lsh->rot_dim * sizeof(float));
    }
    lsh_draw(lsh);
    return 0;
}

int lsh_init(Lsh *lsh, LshFamily family, int dim, int n_tables, int n_funcs, uint64_t seed, AlError *err) {
    return lsh_init_last(lsh, family, dim, n_tables, n_funcs, 0, seed, err);
}

void lsh_free(Lsh *lsh) {
    free(lsh->proj);
    free(lsh->signs);
    lsh->proj = NULL;
    lsh->signs = NULL;
}

#define LSH_BLOCK 32   /* rows a cross-polytope hash transforms at once (see crosspolytope_block) */

long lsh_proj_floats(const Lsh *lsh, int n) {
    return lsh->family == LSH_HYPERPLANE ? (long)n * lsh->n_proj : 2L * lsh->rot_dim * LSH_BLOCK;
}

/* The transform and the rotation on nb vectors of p coordinates held coordinate-major:
 * coordinate c of vector b at y[c·stride + b].  One vector is stride 1, nb 1; a
 * block of rows (crosspolytope_block) is stride LSH_BLOCK, and then every butterfly
 * and sign multiply is a loop over the rows that the compiler vectorises.
 *
 * Why stages are fused three (or two) at a time: the radix-2 stages h, 2h and 4h
 * only mix the 8 coordinates j + k·h (k = 0..7) of one group, so a pass can load
 * such a group once, apply all three stages' butterflies in registers and store it
 * once — 3 passes over the block at p = 128 instead of 7, which is what bounds the
 * speed (bench: the loads and stores, not the adds).  Every butterfly still sees
 * the same two inputs as in the stage-by-stage order, so the result is the same
 * to the bit, and so is every code whatever the blocking.
 *
 * The ±1 diagonal of a rotation round is applied as the first pass loads its
 * group (s, or NULL for none). */
#define BFLY(a, b) do { float t_ = (a); (a) = t_ + (b); (b) = t_ - (b); } while (0)

/* The three fused stages on one group; restrict parameters (which gcc honours,
 * unlike restrict locals) let the loop over the rows vectorise. */
static inline void bfly8(float *restrict u0, float *restrict u1, float *restrict u2, float *restrict u3,
                         float *restrict u4, float *restrict u5, float *restrict u6, float *restrict u7,
                         const float *sg, int nb) {
    const float s0 = sg[0], s1 = sg[1], s2 = sg[2], s3 = sg[3], s4 = sg[4], s5 = sg[5], s6 = sg[6], s7 = sg[7];
    for (int b = 0; b < nb; b++) {
        float a0 = u0[b] * s0, a1 = u1[b] * s1, a2 = u2[b] * s2, a3 = u3[b] * s3;
        float a4 = u4[b] * s4, a5 = u5[b] * s5, a6 = u6[b] * s6, a7 = u7[b] * s7;
        BFLY(a0, a1); BFLY(a2, a3); BFLY(a4, a5); BFLY(a6, a7);     /* stage h */
        BFLY(a0, a2); BFLY(a1, a3); BFLY(a4, a6); BFLY(a5, a7);     /* stage 2h */
        BFLY(a0, a4); BFLY(a1, a5); BFLY(a2, a6); BFLY(a3, a7);     /* stage 4h */
        u0[b] = a0, u1[b] = a1, u2[b] = a2, u3[b] = a3;
        u4[b] = a4, u5[b] = a5, u6[b] = a6, u7[b] = a7;
    }
}

static inline void bfly4(float *restrict u0, float *restrict u1, float *restrict u2, float *restrict u3,
                         const float *sg, int nb) {
    const float s0 = sg[0], s1 = sg[1], s2 = sg[2], s3 = sg[3];
    for (int b = 0; b < nb; b++) {
        float a0 = u0[b] * s0, a1 = u1[b] * s1, a2 = u2[b] * s2, a3 = u3[b] * s3;
        BFLY(a0, a1); BFLY(a2, a3);                                 /* stage h */
        BFLY(a0, a2); BFLY(a1, a3);                                 /* stage 2h */
        u0[b] = a0, u1[b] = a1, u2[b] = a2, u3[b] = a3;
    }
}

static inline void bfly2(float *restrict u0, float *restrict u1, const float *sg, int nb) {
    const float s0 = sg[0], s1 = sg[1];
    for (int b = 0; b < nb; b++) {
        float a0 = u0[b] * s0, a1 = u1[b] * s1;
        BFLY(a0, a1);
        u0[b] = a0, u1[b] = a1;
    }
}

/* One pass of `radix` (2, 4 or 8) fused stages starting at stage h. */
static inline void fwht_pass(float *y, int p, int h, int radix, long stride, int nb, const float *s) {
    for (int i = 0; i < p; i += h * radix)
        for (int j = i; j < i + h; j++) {
            float *u[8], sg[8];
            for (int k = 0; k < radix; k++) u[k] = y + (j + k * h) * stride, sg[k] = s ? s[j + k * h] : 1.0f;
            if (radix == 8) bfly8(u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], sg, nb);
            else if (radix == 4) bfly4(u[0], u[1], u[2], u[3], sg, nb);
            else bfly2(u[0], u[1], sg, nb);
        }
}
#undef BFLY

/* y ← H·diag(s)·y (s NULL: H·y), H the unnormalised p × p Walsh–Hadamard matrix.
 * p = 1 has no stage; then only the diagonal applies. */
static inline void fwht_cols(float *y, int p, long stride, int nb, const float *s) {
    int h = 1;
    if (p == 1 && s)
        for (int b = 0; b < nb; b++) y[b] *= s[0];
    for (; h << 3 <= p; h <<= 3, s = NULL) fwht_pass(y, p, h, 8, stride, nb, s);
    if (h << 2 <= p) fwht_pass(y, p, h, 4, stride, nb, s), h <<= 2, s = NULL;
    if (h << 1 <= p) fwht_pass(y, p, h, 2, stride, nb, s);
}

/* LSH_ROTATIONS rounds of (the ±1 diagonal s, then the transform). */
static inline void rotate_cols(const float *s, float *y, int p, long stride, int nb) {
    for (int r = 0; r < LSH_ROTATIONS; r++, s += p) fwht_cols(y, p, stride, nb, s);
}

void lsh_fwht(float *v, int log_n) { fwht_cols(v, 1 << log_n, 1, 1, NULL); }

void lsh_rotate(const Lsh *lsh, int table, int func, const float *x, float *y) {
    const int p = lsh->rot_dim;
    memcpy(y, x, (size_t)lsh->dim * sizeof(float));
    memset(y + lsh->dim, 0, (size_t)(p - lsh->dim) * sizeof(float));
    rotate_cols(lsh->signs + ((long)table * lsh->n_funcs + func) * LSH_ROTATIONS * p, y, p, 1, 1);
}

/* One row's ℓ codes from its projections: bit f of table t is the sign of p[t·z + f]. */
static void hyperplane_codes(const Lsh *lsh, const float *p, uint64_t *codes) {
    const int z = lsh->n_funcs;
    for (int t = 0; t < lsh->n_tables; t++, p += z) {
        uint64_t code = 0;
        for (int f = 0; f < z; f++) code |= (uint64_t)(p[f] >= 0.0f) << f;
        codes[t] = code;
    }
}

/* Rows x[0..nb) (nb ≤ LSH_BLOCK): their ℓ codes, with 2·p·LSH_BLOCK floats of
 * scratch: xt, the rows transposed once (coordinate-major, zero-padded to p
 * coordinates and LSH_BLOCK rows), and y, where each function's rotation runs.
 * Why every function works on all LSH_BLOCK lanes, even past nb: a constant
 * count lets the compiler unroll each butterfly into whole vectors (no loop over
 * a handful of lanes); the extra lanes are zeros and their codes are not used. */
static void crosspolytope_block(const Lsh *lsh, const float *x, int nb, uint64_t *codes, float *scratch) {
    const int z = lsh->n_funcs, b = lsh->bits, p = lsh->rot_dim, d = lsh->dim, l = lsh->n_tables;
    float *xt = scratch, *y = scratch + (long)p * LSH_BLOCK;
    int best[LSH_BLOCK];
    float best_abs[LSH_BLOCK];
    memset(xt, 0, (size_t)p * LSH_BLOCK * sizeof(float));
    for (int i = 0; i < nb; i++)
        for (int c = 0; c < d; c++) xt[(long)c * LSH_BLOCK + i] = x[(long)i * d + c];
    for (int i = 0; i < nb; i++)
        for (int t = 0; t < l; t++) codes[(long)i * l + t] = 0;
    for (int t = 0; t < l; t++)
        for (int f = 0; f < z; f++) {
            memcpy(y, xt, (size_t)p * LSH_BLOCK * sizeof(float));
            rotate_cols(lsh->signs + ((long)t * z + f) * LSH_ROTATIONS * p, y, p, LSH_BLOCK, LSH_BLOCK);
            /* crosspolytope_bucket per row: the first c < m of largest |y_c|. */
            const int m = f == z - 1 ? lsh->last_dim : p;
            for (int i = 0; i < LSH_BLOCK; i++) best[i] = 0, best_abs[i] = fabsf(y[i]);
            for (int c = 1; c < m; c++) {
                const float *yc = y + (long)c * LSH_BLOCK;
                for (int i = 0; i < LSH_BLOCK; i++) {   /* masks, not branches: it vectorises */
                    float a = fabsf(yc[i]);
                    int gt = -(a > best_abs[i]);          /* all ones where c is the new largest */
                    best[i] = (best[i] & ~gt) | (c & gt);
                    best_abs[i] = a > best_abs[i] ? a : best_abs[i];
                }
            }
            for (int i = 0; i < nb; i++) {
                float v = y[(long)best[i] * LSH_BLOCK + i];
                uint64_t bucket = (uint64_t)(v >= 0.0f ? best[i] : m + best[i]);
                codes[(long)i * l + t] |= bucket << (f * b);
            }
        }
}

void lsh_hash_scratch(const Lsh *lsh, const float *x, int n, uint64_t *codes, float *proj) {
    if (n <= 0) return;
    const int l = lsh->n_tables;
    if (lsh->family == LSH_CROSSPOLYTOPE) {
        for (int i0 = 0; i0 < n; i0 += LSH_BLOCK)
            crosspolytope_block(lsh, x + (long)i0 * lsh->dim, n - i0 < LSH_BLOCK ? n - i0 : LSH_BLOCK,
                                codes + (long)i0 * l, proj);
        return;
    }
    const int np = lsh->n_proj;
    al_sgemm(CblasNoTrans, CblasNoTrans, n, np, lsh->dim, 1.0f, x, lsh->dim, lsh->proj, np, 0.0f, proj, np);
    for (int i = 0; i < n; i++) hyperplane_codes(lsh, proj + (long)i * np, codes + (long)i * l);
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
