/* lsh.h — angular locality-sensitive hashing for ANNA ("Fast attention mechanisms:
 * a tale of parallelism", Algorithm 1).
 *
 * An Lsh holds ℓ hash tables; table t's hash g_t(x) concatenates z functions
 * h_{t,1..z}(x), so two vectors share table t's bucket only if all z agree (AND),
 * and ANNA unions the ℓ tables (OR).  Two families:
 *
 *   LSH_HYPERPLANE     SimHash (Charikar 2002): h(x) = [r·x ≥ 0], r ~ N(0, I_d).
 *                      One bit; Pr[h(x) = h(y)] = 1 − θ/π, so a table collides with
 *                      probability (1 − θ/π)^z.
 *   LSH_CROSSPOLYTOPE  Andoni, Indyk, Laarhoven, Razenshteyn, Schmidt 2015,
 *                      "Practical and Optimal LSH for Angular Distance", as their
 *                      FALCONN library implements it: x is zero-padded to
 *                      p = 2^⌈log₂ d⌉ coordinates and rotated by the pseudo-random
 *                      rotation H·D₃·H·D₂·H·D₁ (D_r a random ±1 diagonal, H the
 *                      unnormalised Walsh–Hadamard transform, so the map is p^{3/2}
 *                      times an orthogonal one), O(p log p) per function; h(x) is
 *                      the closest of ±e_1..±e_m to the rotated y, i.e. the
 *                      coordinate c < m of largest |y_c| with its sign: bucket c for
 *                      +e_c, m + c for −e_c (ties go to the lower c).  m = p for
 *                      the first z − 1 functions of a table; the last one uses only
 *                      the first m = last_dim ≤ p coordinates of its rotated vector
 *                      (FALCONN's "last cross-polytope dimension"), so a table has
 *                      (2p)^{z−1}·2·last_dim buckets — a finer choice of bucket
 *                      count than powers of 2p.  last_dim = p: every function has 2p.
 *
 * Codes.  Function f of a table writes its bucket into bits [f·b, (f+1)·b) of the
 * table's 64-bit code, b = 1 (hyperplane) or log₂ 2p (cross-polytope; the last
 * function's buckets < 2·last_dim fit the same b bits).  Hence z·b ≤ 64.
 *
 * Randomness.  Table t draws its z functions, in order, from rng_stream(seed, t):
 * a hyperplane function is d normals, a cross-polytope one the 3p signs of D₁, D₂,
 * D₃.  Same seed, same functions on every machine.  Within one seed, tables and
 * functions nest: the first ℓ' tables of an ℓ-table Lsh are the ℓ'-table Lsh, and
 * (with last_dim = p) a table's code with z' < z functions is the low z'·b bits of
 * its code with z.  Distillation grids do not rely on this: every cell draws from
 * its own seed (distill.h).
 *
 * Layout.  Hyperplane: proj is one (d × ℓ·z) row-major matrix, column t·z + f the
 * normal of function f of table t, and hashing n vectors is one GEMM followed by a
 * sign test.  Cross-polytope: signs holds ℓ·z·3·p floats ±1, function (t, f)'s
 * D₁, D₂, D₃ at offset ((t·z + f)·3 + r)·p; no GEMM. */
#ifndef ATTNLAB_ANNA_LSH_H
#define ATTNLAB_ANNA_LSH_H

#include "attnlab/util/error.h"

#include <stdint.h>

typedef enum LshFamily { LSH_HYPERPLANE, LSH_CROSSPOLYTOPE } LshFamily;

#define LSH_ROTATIONS 3   /* rounds of (random signs, Hadamard) in a cross-polytope rotation */

typedef struct Lsh {
    LshFamily family;
    int      dim;        /* input dimension d */
    int      n_tables;   /* ℓ */
    int      n_funcs;    /* z: functions concatenated per table */
    int      rot_dim;    /* cross-polytope: p = d padded to a power of two; hyperplane: 0 */
    int      last_dim;   /* cross-polytope: coordinates the last function of a table uses (≤ p) */
    int      bits;       /* code bits per function: 1 or log₂ 2p */
    int      n_proj;     /* hyperplane: ℓ·z, the GEMM's output columns; cross-polytope: 0 */
    uint64_t seed;
    float   *proj;       /* hyperplane: d × n_proj; NULL for cross-polytope */
    float   *signs;      /* cross-polytope: ℓ·z·3·p values ±1; NULL for hyperplane */
} Lsh;

/* Draws the hash functions (cross-polytope: last_dim = p, every function 2p buckets).
 * Fails (code 2, message in err, *lsh zeroed so lsh_free is safe) unless dim, ℓ,
 * z ≥ 1 and a table's code fits 64 bits (hyperplane z ≤ 64; cross-polytope
 * z·log₂ 2p ≤ 64) and the parameters have fewer than 2³¹ entries. */
int  lsh_init(Lsh *lsh, LshFamily family, int dim, int n_tables, int n_funcs, uint64_t seed,
              AlError *err);
/* lsh_init with the cross-polytope's last dimension: 0 = p (the default), else in
 * [1, p]; must be 0 for hyperplanes. */
int  lsh_init_last(Lsh *lsh, LshFamily family, int dim, int n_tables, int n_funcs, int last_dim,
                   uint64_t seed, AlError *err);
void lsh_free(Lsh *lsh);

/* "hyperplane" / "crosspolytope". */
const char *lsh_family_name(LshFamily family);
/* p: the smallest power of two ≥ dim (dim ≥ 1). */
int  lsh_padded_dim(int dim);

/* codes[i·ℓ + t] = g_t(x_i) for the n rows of x (n × dim, expected unit-norm: the
 * hash only sees directions, but callers normalise so equal directions give equal
 * bits).  Allocates its lsh_proj_floats(lsh, n) scratch. */
void lsh_hash(const Lsh *lsh, const float *x, int n, uint64_t *codes);
/* The same with the caller's buffer of lsh_proj_floats(lsh, n) floats. */
void lsh_hash_scratch(const Lsh *lsh, const float *x, int n, uint64_t *codes, float *proj);
/* Hyperplane: n·ℓ·z (the projections); cross-polytope: p (one rotated vector). */
long lsh_proj_floats(const Lsh *lsh, int n);

/* Cross-polytope: y (p floats) = H·D₃·H·D₂·H·D₁·[x; 0] for function f of table t
 * (x has dim floats).  Exposed for tests. */
void lsh_rotate(const Lsh *lsh, int table, int func, const float *x, float *y);
/* In-place unnormalised fast Walsh–Hadamard transform of v (n = 2^log_n floats):
 * v ← H_n·v with H_n[i][j] = (−1)^popcount(i & j).  O(n log n). */
void lsh_fwht(float *v, int log_n);

/* The seed of layer `layer`, head `head`'s Lsh, derived from one base seed so a
 * model's hash functions are reproducible and unrelated across heads. */
uint64_t lsh_head_seed(uint64_t base_seed, int layer, int head);

#endif
