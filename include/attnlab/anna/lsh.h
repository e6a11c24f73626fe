/* lsh.h — angular locality-sensitive hashing for ANNA (paper 000, Algorithm 1).
 *
 * An Lsh holds ℓ hash tables; table t's hash g_t(x) concatenates z functions
 * h_{t,1..z}(x), so two vectors share table t's bucket only if all z agree (AND),
 * and ANNA unions the ℓ tables (OR).  Two families, both functions of the angle
 * between x and y only:
 *
 *   LSH_HYPERPLANE     SimHash (Charikar 2002): h(x) = [r·x ≥ 0], r ~ N(0, I_d).
 *                      One bit; Pr[h(x) = h(y)] = 1 − θ/π, so a table collides with
 *                      probability (1 − θ/π)^z.
 *   LSH_CROSSPOLYTOPE  Andoni et al. 2015: y = A·x, h(x) = the closest of ±e_1..±e_d
 *                      to y, i.e. argmax over c of |y_c| with its sign — 2d buckets.
 *                      A is a d×d matrix of independent N(0, 1) entries, as in the
 *                      paper's analysis, not an exact orthogonal rotation: each row
 *                      gives (a·x, a·y) jointly Gaussian with correlation cos θ, so
 *                      collisions still depend on θ alone.  (The paper's practical
 *                      pseudo-rotations HD₃HD₂HD₁ only buy speed at large d.)
 *
 * Codes.  Function f of a table writes its bucket into bits [f·b, (f+1)·b) of the
 * table's 64-bit code, b = 1 (hyperplane) or ⌈log₂ 2d⌉ (cross-polytope; bucket c
 * for +e_c, d + c for −e_c, c 0-based).  Hence z·b ≤ 64.
 *
 * Randomness.  Table t draws its z functions, in order, from rng_stream(seed, t).
 * So the same seed gives the same functions on every machine, and hashes nest:
 * the first ℓ' tables of an ℓ-table Lsh are the ℓ'-table Lsh, and a table's code
 * with z' < z functions is the low z'·b bits of its code with z — sweeping (ℓ, z)
 * refines one family of hashes rather than drawing unrelated ones.
 *
 * Layout.  proj is one (dim × n_proj) row-major matrix, n_proj = ℓ·z·width, width
 * = 1 (hyperplane) or dim (cross-polytope); column (t·z + f)·width + c is
 * coordinate c of function f of table t.  Hashing n vectors is then one GEMM
 * X (n × dim) · proj → (n × n_proj), followed by a sign or an argmax per function. */
#ifndef ATTNLAB_ANNA_LSH_H
#define ATTNLAB_ANNA_LSH_H

#include "attnlab/util/error.h"

#include <stdint.h>

typedef enum LshFamily { LSH_HYPERPLANE, LSH_CROSSPOLYTOPE } LshFamily;

typedef struct Lsh {
    LshFamily family;
    int      dim;        /* input dimension d */
    int      n_tables;   /* ℓ */
    int      n_funcs;    /* z: functions concatenated per table */
    int      width;      /* projections per function: 1 or dim */
    int      bits;       /* code bits per function: 1 or ⌈log₂ 2d⌉ */
    int      n_proj;     /* ℓ·z·width, the GEMM's output columns */
    uint64_t seed;
    float   *proj;       /* dim × n_proj, the only allocation */
} Lsh;

/* Draws the hash functions.  Fails (code 2, message in err, *lsh zeroed so
 * lsh_free is safe) unless dim, ℓ, z ≥ 1 and a table's code fits 64 bits
 * (hyperplane z ≤ 64; cross-polytope z·⌈log₂ 2d⌉ ≤ 64) and the projection
 * matrix has fewer than 2³¹ columns and entries. */
int  lsh_init(Lsh *lsh, LshFamily family, int dim, int n_tables, int n_funcs, uint64_t seed,
              AlError *err);
void lsh_free(Lsh *lsh);

/* "hyperplane" / "crosspolytope". */
const char *lsh_family_name(LshFamily family);

/* codes[i·ℓ + t] = g_t(x_i) for the n rows of x (n × dim, expected unit-norm: the
 * hash only sees directions, but callers normalise so equal directions give equal
 * bits).  One cblas_sgemm for all projections; allocates its n × n_proj buffer. */
void lsh_hash(const Lsh *lsh, const float *x, int n, uint64_t *codes);
/* The same with the caller's buffer of lsh_proj_floats(lsh, n) floats. */
void lsh_hash_scratch(const Lsh *lsh, const float *x, int n, uint64_t *codes, float *proj);
long lsh_proj_floats(const Lsh *lsh, int n);

/* The seed of layer `layer`, head `head`'s Lsh, derived from one base seed so a
 * model's hash functions are reproducible and unrelated across heads. */
uint64_t lsh_head_seed(uint64_t base_seed, int layer, int head);

#endif
