/* test_anna.c — LSH hashing, ANNA and EMA against their definitions.
 *
 * 1. ANNA against a brute-force reference that enumerates buckets explicitly: a
 *    separately written slow hash (normalisation and projections in double with
 *    explicit dot products — the cross-polytope rotation as explicit Hadamard
 *    matrix products — an explicit sign / argmax per function, buckets kept per
 *    function rather than packed), then for every query, table and key a
 *    comparison of all z buckets, y_i = Σ colliding v_j / #collisions (0 if none).
 *    Both families, causal and not, several (n, d, dv, ℓ, z), with empty unions.
 *    lsh_hash's packed codes are also unpacked and compared with the slow buckets.
 *    Float against double can only disagree on a bucket when a projection sits
 *    within rounding (~1e-7 here) of a decision boundary, so inputs with any
 *    margin below AMBIGUOUS are redrawn (the number of redraws is printed).
 * 2. ANNA with keys = queries (distinct random vectors plus exact duplicates) and
 *    large ℓ, z equals EMA: only identical vectors still collide.
 * 3. EMA against the O(N²) definition (−0 = +0, NaN rows match nothing).
 * 4. Hash properties: hyperplane collisions at angle θ ≈ (1 − θ/π)^z over many
 *    tables and seeds (5σ binomial tolerance); the fast Walsh–Hadamard transform
 *    against the Hadamard matrix product; the pseudo-rotation is p^{3/2} times an
 *    orthogonal map; cross-polytope collisions against the angle match an exact
 *    Haar rotation (Householder QR of a Gaussian matrix) within Monte-Carlo error;
 *    buckets uniform, also for a last function of smaller dimension; θ = 0 and
 *    θ = π; determinism by seed, different seeds differ, (ℓ, z) nesting, init errors.
 * 5. anna_attention_heads equals per-head calls, and anna_codes_heads the per-item
 *    codes, for both families, also with rows repeated within and across items.
 * 6. A timing table (printed, not asserted): N = 256 … 16384, d = 64, ℓ = 8, z = 2.
 *
 * Tolerance OUT_TOL 1e-5 absolute: outputs are means of values in [−1, 1]; the
 * fast path sums in float (bucket sums, then ℓ tables), the reference in double,
 * so the error is a few ulp times the number of terms' magnitudes (≲ 1e-6 here). */
#include "attnlab/anna/anna.h"
#include "attnlab/anna/lsh.h"
#include "attnlab/util/error.h"
#include "attnlab/util/rng.h"
#include "check.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OUT_TOL 1e-5
#define AMBIGUOUS 1e-5

static double max_abs_diff(const float *a, const float *b, long n) {
    double m = 0;
    for (long i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - (double)b[i]));
    return m;
}

static void fill_normal(Rng *r, float *x, long n) {
    for (long i = 0; i < n; i++) x[i] = (float)rng_normal(r);
}

static void fill_uniform(Rng *r, float *x, long n) {
    for (long i = 0; i < n; i++) x[i] = (float)(2 * rng_uniform(r) - 1);
}

static void must_init(Lsh *lsh, LshFamily fam, int d, int l, int z, uint64_t seed) {
    AlError err = { 0 };
    int rc = lsh_init(lsh, fam, d, l, z, seed, &err);
    CHECK(rc == 0, "lsh_init(%s, d=%d, l=%d, z=%d): %s", lsh_family_name(fam), d, l, z, err.msg);
    if (rc) exit(1);
}

/* ============================================================================== */
/* The slow hash: buckets[(i·ℓ + t)·z + f] for each of n rows.  Returns how many
 * (row, function) decisions had a margin below AMBIGUOUS. */

/* (−1)^popcount(i & j): entry (i, j) of the unnormalised Hadamard matrix. */
static double hadamard(int i, int j) { return __builtin_popcount((unsigned)(i & j)) & 1 ? -1.0 : 1.0; }

/* Cross-polytope rotation by definition, in double: y = H·D₃·H·D₂·H·D₁·[x; 0] with
 * H as an explicit matrix product (not a fast transform), scaled by p^{-3/2} so the
 * map is orthogonal and margins are on the unit scale. */
static void slow_rotate(const Lsh *lsh, int t, int f, const double *xhat, double *y) {
    const int p = lsh->rot_dim, d = lsh->dim;
    const float *s = lsh->signs + ((long)t * lsh->n_funcs + f) * LSH_ROTATIONS * p;
    double u[1024], w[1024];
    for (int c = 0; c < p; c++) u[c] = c < d ? xhat[c] : 0.0;
    for (int r = 0; r < LSH_ROTATIONS; r++) {
        for (int c = 0; c < p; c++) w[c] = u[c] * s[r * p + c];
        for (int i = 0; i < p; i++) {
            u[i] = 0;
            for (int j = 0; j < p; j++) u[i] += hadamard(i, j) * w[j];
            u[i] /= sqrt((double)p);
        }
    }
    memcpy(y, u, (size_t)p * sizeof(double));
}

static int slow_bucket(const Lsh *lsh, const double *xhat, int t, int f, double *margin) {
    const int d = lsh->dim;
    double y[1024];
    if (lsh->family == LSH_HYPERPLANE) {
        y[0] = 0;
        for (int r = 0; r < d; r++) y[0] += xhat[r] * (double)lsh->proj[(long)r * lsh->n_proj + (long)t * lsh->n_funcs + f];
        *margin = fabs(y[0]);
        return y[0] >= 0;
    }
    slow_rotate(lsh, t, f, xhat, y);
    const int m = f == lsh->n_funcs - 1 ? lsh->last_dim : lsh->rot_dim;
    int best = 0;
    for (int c = 1; c < m; c++)
        if (fabs(y[c]) > fabs(y[best])) best = c;
    double second = 0;
    for (int c = 0; c < m; c++)
        if (c != best) second = fmax(second, fabs(y[c]));
    *margin = fmin(fabs(y[best]) - second, fabs(y[best]));
    return y[best] >= 0 ? best : m + best;
}

static int slow_hash(const Lsh *lsh, const float *x, int n, int *buckets) {
    const int d = lsh->dim, l = lsh->n_tables, z = lsh->n_funcs;
    double xhat[1024];
    int ambiguous = 0;
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int r = 0; r < d; r++) s += (double)x[(long)i * d + r] * x[(long)i * d + r];
        double nrm = fmax(sqrt(s), 1e-12);
        for (int r = 0; r < d; r++) xhat[r] = x[(long)i * d + r] / nrm;
        for (int t = 0; t < l; t++)
            for (int f = 0; f < z; f++) {
                double m;
                buckets[((long)i * l + t) * z + f] = slow_bucket(lsh, xhat, t, f, &m);
                ambiguous += m < AMBIGUOUS;
            }
    }
    return ambiguous;
}

static int same_bucket(const int *a, const int *b, int z) {
    for (int f = 0; f < z; f++)
        if (a[f] != b[f]) return 0;
    return 1;
}

/* y_i = Σ_t Σ_{j∈B_t(i)} v_j / Σ_t |B_t(i)| by enumeration; cnt[i] = the denominator. */
static void brute_anna(const Lsh *lsh, const int *bq, const int *bk, const float *v, int n, int dv,
                       int causal, double *out, long *cnt) {
    const int l = lsh->n_tables, z = lsh->n_funcs;
    for (int i = 0; i < n; i++) {
        double *o = out + (long)i * dv;
        memset(o, 0, (size_t)dv * sizeof(double));
        cnt[i] = 0;
        for (int t = 0; t < l; t++)
            for (int j = 0; j < n; j++) {
                if (causal && j > i) continue;
                if (!same_bucket(bq + ((long)i * l + t) * z, bk + ((long)j * l + t) * z, z)) continue;
                for (int c = 0; c < dv; c++) o[c] += v[(long)j * dv + c];
                cnt[i]++;
            }
        for (int c = 0; c < dv && cnt[i]; c++) o[c] /= (double)cnt[i];
    }
}

/* ============================================================================== */
/* 1. ANNA against the brute-force reference. */

typedef struct RefCase { LshFamily fam; int n, d, dv, l, z, last; } RefCase;   /* last: lsh_init_last's */

/* Queries of varied norms; half the keys are noisy or exactly scaled copies of
 * queries (real collisions), the rest random; values uniform in [−1, 1]. */
static void draw_inputs(Rng *r, int n, int d, int dv, float *q, float *k, float *v) {
    fill_normal(r, q, (long)n * d);
    fill_normal(r, k, (long)n * d);
    fill_uniform(r, v, (long)n * dv);
    for (int i = 0; i < n; i++) {
        float s = (float)(0.25 + 4 * rng_uniform(r));
        for (int c = 0; c < d; c++) q[(long)i * d + c] *= s;
    }
    for (int j = 0; j < n / 2; j++) {
        int src = (int)rng_below(r, (uint32_t)n), exact = rng_below(r, 3) == 0;
        for (int c = 0; c < d; c++)
            k[(long)j * d + c] = exact ? 2.5f * q[(long)src * d + c]
                                       : q[(long)src * d + c] + 0.15f * k[(long)j * d + c];
    }
}

static void unpack_check(const Lsh *lsh, const float *x, int n, const int *buckets) {
    const int l = lsh->n_tables, z = lsh->n_funcs, b = lsh->bits;
    uint64_t *codes = malloc((size_t)n * l * sizeof *codes);
    float *xn = malloc((size_t)n * lsh->dim * sizeof *xn);
    for (int i = 0; i < n; i++) {   /* lsh_hash wants unit rows: normalise in double */
        double s = 0;
        for (int c = 0; c < lsh->dim; c++) s += (double)x[(long)i * lsh->dim + c] * x[(long)i * lsh->dim + c];
        for (int c = 0; c < lsh->dim; c++)
            xn[(long)i * lsh->dim + c] = (float)(x[(long)i * lsh->dim + c] / fmax(sqrt(s), 1e-12));
    }
    lsh_hash(lsh, xn, n, codes);
    long bad = 0;
    for (long e = 0; e < (long)n * l; e++)
        for (int f = 0; f < z; f++)
            bad += (int)((codes[e] >> (f * b)) & ((1ull << b) - 1)) != buckets[e * z + f];
    CHECK(bad == 0, "lsh_hash codes unpack to the slow buckets: %ld mismatches", bad);
    free(codes);
    free(xn);
}

static long total_empty, total_nonempty;

static void reference_case(const RefCase *rc, int causal, uint64_t seed, int *redraws) {
    const int n = rc->n, d = rc->d, dv = rc->dv, l = rc->l, z = rc->z;
    Lsh lsh;
    AlError e = { 0 };
    CHECK(lsh_init_last(&lsh, rc->fam, d, l, z, rc->last, seed, &e) == 0, "lsh_init_last: %s", e.msg);
    float *q = malloc((size_t)n * d * sizeof(float)), *k = malloc((size_t)n * d * sizeof(float));
    float *v = malloc((size_t)n * dv * sizeof(float)), *out = malloc((size_t)n * dv * sizeof(float));
    float *out2 = malloc((size_t)n * dv * sizeof(float));
    int *bq = malloc((size_t)n * l * z * sizeof(int)), *bk = malloc((size_t)n * l * z * sizeof(int));
    double *ref = malloc((size_t)n * dv * sizeof(double));
    long *cnt = malloc((size_t)n * sizeof(long));
    Rng r = rng_stream(seed, 77);
    for (int tries = 0;; tries++) {
        draw_inputs(&r, n, d, dv, q, k, v);
        if (slow_hash(&lsh, q, n, bq) + slow_hash(&lsh, k, n, bk) == 0) break;
        CHECK(tries < 50, "inputs keep landing on decision boundaries");
        if (tries >= 50) break;
        (*redraws)++;
    }
    unpack_check(&lsh, q, n, bq);
    unpack_check(&lsh, k, n, bk);
    brute_anna(&lsh, bq, bk, v, n, dv, causal, ref, cnt);

    AnnaStats st;
    anna_attention(&lsh, q, k, v, n, d, dv, causal, out, NULL, &st);
    double err = 0, mean = 0;
    long empty = 0, mx = 0;
    for (long e = 0; e < (long)n * dv; e++) err = fmax(err, fabs(out[e] - ref[e]));
    for (int i = 0; i < n; i++) {
        mean += (double)cnt[i] / n;
        empty += cnt[i] == 0;
        mx = cnt[i] > mx ? cnt[i] : mx;
    }
    CHECK(err <= OUT_TOL, "%s n=%d d=%d dv=%d l=%d z=%d last=%d causal=%d: max |anna - ref| = %.3g",
          lsh_family_name(rc->fam), n, d, dv, l, z, rc->last, causal, err);
    CHECK(st.queries == n && fabs(st.mean_collisions - mean) < 1e-9 && st.max_collisions == mx &&
          fabs(st.empty_fraction - (double)empty / n) < 1e-12,
          "stats: mean %.6g vs %.6g, max %ld vs %ld, empty %.4g vs %.4g", st.mean_collisions, mean,
          st.max_collisions, mx, st.empty_fraction, (double)empty / n);
    total_empty += empty;
    total_nonempty += n - empty;

    /* The caller's scratch gives the same bits as the internal allocation. */
    void *scratch = malloc(anna_scratch_bytes(&lsh, n, dv));
    anna_attention(&lsh, q, k, v, n, d, dv, causal, out2, scratch, NULL);
    CHECK(memcmp(out, out2, (size_t)n * dv * sizeof(float)) == 0, "scratch changes the output");
    free(scratch);

    free(q); free(k); free(v); free(out); free(out2); free(bq); free(bk); free(ref); free(cnt);
    lsh_free(&lsh);
}

static void test_reference(void) {
    static const RefCase cases[] = {
        { LSH_HYPERPLANE, 1, 4, 3, 1, 1, 0 },     { LSH_HYPERPLANE, 37, 8, 5, 3, 2, 0 },
        { LSH_HYPERPLANE, 100, 16, 16, 4, 3, 0 }, { LSH_HYPERPLANE, 200, 32, 7, 8, 2, 0 },
        { LSH_HYPERPLANE, 64, 5, 4, 2, 8, 0 },    { LSH_HYPERPLANE, 150, 64, 64, 6, 1, 0 },
        { LSH_CROSSPOLYTOPE, 1, 4, 3, 1, 1, 0 },  { LSH_CROSSPOLYTOPE, 37, 8, 5, 3, 2, 0 },
        { LSH_CROSSPOLYTOPE, 100, 16, 16, 4, 3, 0 }, { LSH_CROSSPOLYTOPE, 200, 32, 7, 8, 2, 0 },
        { LSH_CROSSPOLYTOPE, 64, 20, 4, 2, 8, 0 }, { LSH_CROSSPOLYTOPE, 150, 64, 64, 2, 1, 0 },
        { LSH_CROSSPOLYTOPE, 80, 2, 3, 5, 3, 0 },
        /* FALCONN's last dimension: the last function of a table uses m < p coordinates.
         * (Cross-polytope cases avoid d ≤ 8 with padding, e.g. d = 5 → p = 8: there the
         * three ±1 rounds leave exact ties between |y_c| whatever the input, which
         * float rounding decides and a double reference cannot reproduce.) */
        { LSH_CROSSPOLYTOPE, 120, 16, 8, 6, 2, 4 }, { LSH_CROSSPOLYTOPE, 90, 12, 5, 4, 1, 3 },
        { LSH_CROSSPOLYTOPE, 60, 33, 7, 3, 3, 1 },
    };
    int redraws = 0, n_cases = (int)(sizeof cases / sizeof cases[0]);
    for (int c = 0; c < n_cases; c++)
        for (int causal = 0; causal <= 1; causal++)
            reference_case(&cases[c], causal, 1000 + 10 * (uint64_t)c + causal, &redraws);
    CHECK(total_empty > 0 && total_nonempty > 0, "cases cover empty (%ld) and non-empty (%ld) unions",
          total_empty, total_nonempty);
    printf("reference: %d cases x {bidirectional, causal}; %ld empty / %ld non-empty unions; "
           "%d input redraws for near-boundary projections\n",
           n_cases, total_empty, total_nonempty, redraws);
}

/* ============================================================================== */
/* 2. Keys = queries, large ℓ and z: ANNA reduces to EMA. */

static void test_anna_is_ema(LshFamily fam, int l, int z) {
    const int n_distinct = 200, n = 300, d = 16, dv = 8;
    Rng r = rng_stream(5, (uint64_t)fam);
    float *x = malloc((size_t)n * d * sizeof(float)), *v = malloc((size_t)n * dv * sizeof(float));
    float *ya = malloc((size_t)n * dv * sizeof(float)), *ye = malloc((size_t)n * dv * sizeof(float));
    fill_normal(&r, x, (long)n_distinct * d);
    for (int i = n_distinct; i < n; i++)   /* exact duplicates of earlier rows */
        memcpy(x + (long)i * d, x + (long)rng_below(&r, n_distinct) * d, (size_t)d * sizeof(float));
    int perm[300];
    for (int i = 0; i < n; i++) perm[i] = i;
    rng_shuffle_int(&r, perm, n);
    float *xs = malloc((size_t)n * d * sizeof(float));
    for (int i = 0; i < n; i++) memcpy(xs + (long)i * d, x + (long)perm[i] * d, (size_t)d * sizeof(float));
    fill_uniform(&r, v, (long)n * dv);
    Lsh lsh;
    must_init(&lsh, fam, d, l, z, 99);
    for (int causal = 0; causal <= 1; causal++) {
        AnnaStats st;
        anna_attention(&lsh, xs, xs, v, n, d, dv, causal, ya, NULL, &st);
        ema_attention(xs, xs, v, n, d, dv, causal, ye);
        double err = max_abs_diff(ya, ye, (long)n * dv);
        CHECK(err <= OUT_TOL, "%s l=%d z=%d causal=%d: |anna - ema| = %.3g", lsh_family_name(fam), l,
              z, causal, err);
        CHECK(st.empty_fraction == 0, "every query meets itself: empty %.3g", st.empty_fraction);
        /* Each query collides only with its copies, once per table. */
        CHECK(st.mean_collisions >= l && st.mean_collisions < 3.0 * l, "collisions %.3g per query",
              st.mean_collisions);
    }
    lsh_free(&lsh);
    free(x); free(xs); free(v); free(ya); free(ye);
}

/* ============================================================================== */
/* 3. EMA against its definition. */

static void brute_ema(const float *q, const float *k, const float *v, int n, int d, int dv, int causal,
                      double *out) {
    for (int i = 0; i < n; i++) {
        long cnt = 0;
        double *o = out + (long)i * dv;
        memset(o, 0, (size_t)dv * sizeof(double));
        for (int j = 0; j < n; j++) {
            if (causal && j > i) continue;
            int eq = 1;
            for (int c = 0; c < d; c++) eq &= q[(long)i * d + c] == k[(long)j * d + c];
            if (!eq) continue;
            cnt++;
            for (int c = 0; c < dv; c++) o[c] += v[(long)j * dv + c];
        }
        for (int c = 0; c < dv && cnt; c++) o[c] /= (double)cnt;
    }
}

/* Coordinates from {−1, 0, 1} (0 drawn as +0 or −0) so exact matches are common;
 * a few rows hold a NaN. */
static void draw_ternary(Rng *r, float *x, int n, int d) {
    for (long e = 0; e < (long)n * d; e++) {
        int s = (int)rng_below(r, 3) - 1;
        x[e] = s ? (float)s : (rng_below(r, 2) ? 0.0f : -0.0f);
    }
    for (int i = 0; i < n; i += 17) x[(long)i * d] = NAN;
}

static void test_ema(void) {
    const int shapes[][3] = { { 1, 1, 1 }, { 50, 1, 3 }, { 200, 3, 5 }, { 300, 4, 2 }, { 120, 6, 9 } };
    Rng r = rng_stream(11, 3);
    for (int s = 0; s < 5; s++) {
        int n = shapes[s][0], d = shapes[s][1], dv = shapes[s][2];
        float *q = malloc((size_t)n * d * sizeof(float)), *k = malloc((size_t)n * d * sizeof(float));
        float *v = malloc((size_t)n * dv * sizeof(float)), *out = malloc((size_t)n * dv * sizeof(float));
        double *ref = malloc((size_t)n * dv * sizeof(double));
        draw_ternary(&r, q, n, d);
        draw_ternary(&r, k, n, d);
        fill_uniform(&r, v, (long)n * dv);
        for (int causal = 0; causal <= 1; causal++) {
            ema_attention(q, k, v, n, d, dv, causal, out);
            brute_ema(q, k, v, n, d, dv, causal, ref);
            double err = 0;
            for (long e = 0; e < (long)n * dv; e++) err = fmax(err, fabs(out[e] - ref[e]));
            CHECK(err <= OUT_TOL, "ema n=%d d=%d causal=%d: max err %.3g", n, d, causal, err);
        }
        free(q); free(k); free(v); free(out); free(ref);
    }
    /* By hand: −0 matches +0, a NaN query matches nothing, no match gives 0. */
    const float q[3][2] = { { -0.0f, 1 }, { NAN, 1 }, { 5, 5 } }, k[3][2] = { { 0, 1 }, { NAN, 1 }, { 0, 1 } };
    const float v[3] = { 2, 100, 4 };
    float out[3];
    ema_attention(&q[0][0], &k[0][0], v, 3, 2, 1, 0, out);
    CHECK(out[0] == 3 && out[1] == 0 && out[2] == 0, "hand case: %g %g %g (want 3 0 0)", out[0], out[1],
          out[2]);
    ema_attention(&q[0][0], &k[0][0], v, 3, 2, 1, 1, out);
    CHECK(out[0] == 2 && out[1] == 0 && out[2] == 0, "hand case causal: %g %g %g (want 2 0 0)", out[0],
          out[1], out[2]);
}

/* ============================================================================== */
/* 4. Hash properties. */

/* Two unit vectors in R^d at angle theta, in a random plane. */
static void pair_at_angle(Rng *r, int d, double theta, float *x, float *y) {
    double a[256], b[256], na = 0, nb = 0, ab = 0;
    for (int c = 0; c < d; c++) { a[c] = rng_normal(r); b[c] = rng_normal(r); }
    for (int c = 0; c < d; c++) na += a[c] * a[c];
    for (int c = 0; c < d; c++) a[c] /= sqrt(na);
    for (int c = 0; c < d; c++) ab += a[c] * b[c];
    for (int c = 0; c < d; c++) b[c] -= ab * a[c];
    for (int c = 0; c < d; c++) nb += b[c] * b[c];
    for (int c = 0; c < d; c++) {
        x[c] = (float)a[c];
        y[c] = (float)(cos(theta) * a[c] + sin(theta) * b[c] / sqrt(nb));
    }
}

/* Fraction of (seed, table) pairs where x and y share the table's code. */
static double collision_rate(LshFamily fam, int d, int l, int z, int n_seeds, const float *x,
                             const float *y) {
    float xy[512];
    memcpy(xy, x, (size_t)d * sizeof(float));
    memcpy(xy + d, y, (size_t)d * sizeof(float));
    uint64_t *codes = malloc(2 * (size_t)l * sizeof *codes);
    long hits = 0;
    for (int s = 0; s < n_seeds; s++) {
        Lsh lsh;
        must_init(&lsh, fam, d, l, z, 7000 + (uint64_t)s);
        lsh_hash(&lsh, xy, 2, codes);
        for (int t = 0; t < l; t++) hits += codes[t] == codes[l + t];
        lsh_free(&lsh);
    }
    free(codes);
    return (double)hits / ((double)l * n_seeds);
}

static int within_binomial(double p_hat, double p, double trials, double sigmas) {
    return fabs(p_hat - p) <= sigmas * sqrt(fmax(p * (1 - p), 1e-4) / trials) + 1e-12;
}

static void test_hyperplane_probability(void) {
    const int d = 16, l = 500, seeds = 20;
    Rng r = rng_stream(21, 0);
    float x[16], y[16];
    const double pi = 3.14159265358979323846;
    for (int a = 1; a <= 5; a++) {
        double theta = a * pi / 6;
        pair_at_angle(&r, d, theta, x, y);
        for (int z = 1; z <= 4; z *= 2) {
            double p = pow(1 - theta / pi, z), got = collision_rate(LSH_HYPERPLANE, d, l, z, seeds, x, y);
            CHECK(within_binomial(got, p, (double)l * seeds, 5),
                  "hyperplane theta=%d*pi/6 z=%d: rate %.4f vs (1-theta/pi)^z = %.4f", a, z, got, p);
        }
    }
    pair_at_angle(&r, d, 0, x, y);
    CHECK(collision_rate(LSH_HYPERPLANE, d, 50, 8, 2, x, x) == 1, "theta = 0 always collides");
    for (int c = 0; c < d; c++) y[c] = -x[c];
    CHECK(collision_rate(LSH_HYPERPLANE, d, 50, 1, 2, x, y) == 0, "theta = pi never collides");
    CHECK(collision_rate(LSH_CROSSPOLYTOPE, d, 50, 1, 2, x, y) == 0, "theta = pi never collides (cp)");
}

/* The fast Walsh–Hadamard transform against the matrix product H_n·v with
 * H_n[i][j] = (−1)^popcount(i & j), n = 1 … 256.  Inputs are small integers, so
 * every sum is exact in float and the two must agree bit for bit. */
static void test_fwht(void) {
    Rng r = rng_stream(24, 0);
    float v[256], ref[256];
    long bad = 0;
    for (int lg = 0; lg <= 8; lg++) {
        const int n = 1 << lg;
        for (int rep = 0; rep < 3; rep++) {
            for (int i = 0; i < n; i++) v[i] = (float)((int)rng_below(&r, 21) - 10);
            for (int i = 0; i < n; i++) {
                double acc = 0;
                for (int j = 0; j < n; j++) acc += hadamard(i, j) * v[j];
                ref[i] = (float)acc;
            }
            lsh_fwht(v, lg);
            for (int i = 0; i < n; i++) bad += v[i] != ref[i];
        }
    }
    CHECK(bad == 0, "fwht differs from the Hadamard matrix product in %ld entries", bad);
}

/* H·D₃·H·D₂·H·D₁ is p^{3/2} times an orthogonal map: norms scale by exactly that,
 * and inner products too (so angles are kept).  Float tolerance 1e-5 relative. */
static void test_rotation_orthogonal(void) {
    static const int dims[] = { 1, 5, 8, 33, 64, 100 };
    Rng r = rng_stream(25, 0);
    double worst = 0;
    for (int k = 0; k < 6; k++) {
        const int d = dims[k];
        Lsh lsh;
        must_init(&lsh, LSH_CROSSPOLYTOPE, d, 3, 2, 90 + (uint64_t)k);
        const int p = lsh.rot_dim;
        CHECK(p >= d && p < 2 * d + (d == 1) && (p & (p - 1)) == 0, "d = %d padded to %d", d, p);
        float x[100], y[100], rx[128], ry[128];
        for (int rep = 0; rep < 5; rep++) {
            fill_normal(&r, x, d);
            fill_normal(&r, y, d);
            double xx = 0, xy = 0, scale = pow(p, 1.5);
            for (int c = 0; c < d; c++) xx += (double)x[c] * x[c], xy += (double)x[c] * y[c];
            for (int t = 0; t < 3; t++)
                for (int f = 0; f < 2; f++) {
                    lsh_rotate(&lsh, t, f, x, rx);
                    lsh_rotate(&lsh, t, f, y, ry);
                    double rr = 0, rxy = 0;
                    for (int c = 0; c < p; c++) rr += (double)rx[c] * rx[c], rxy += (double)rx[c] * ry[c];
                    worst = fmax(worst, fabs(sqrt(rr) / scale - sqrt(xx)) / sqrt(xx));
                    worst = fmax(worst, fabs(rxy / (scale * scale) - xy) / xx);
                }
        }
        lsh_free(&lsh);
    }
    CHECK(worst <= 1e-5, "rotation is not p^(3/2) x orthogonal: worst relative error %.3g", worst);
}

/* Haar-random orthogonal p × p matrix Q (row-major, double): Householder QR of a
 * Gaussian matrix, with the signs of R's diagonal moved into Q (Mezzadri 2007),
 * which makes Q exactly Haar-distributed. */
static void haar_rotation(Rng *r, int p, double *Q) {
    double A[64 * 64], v[64];
    for (int e = 0; e < p * p; e++) A[e] = rng_normal(r);
    for (int e = 0; e < p * p; e++) Q[e] = 0;
    for (int i = 0; i < p; i++) Q[i * p + i] = 1;
    /* A = H_1 … H_p R: apply each reflector to A (below the diagonal) and accumulate
     * Q = H_1 H_2 … by applying them to the identity from the right. */
    double sgn[64];
    for (int k = 0; k < p; k++) {
        double norm = 0;
        for (int i = k; i < p; i++) norm += A[i * p + k] * A[i * p + k];
        norm = sqrt(norm);
        double alpha = A[k * p + k] >= 0 ? -norm : norm;
        for (int i = 0; i < p; i++) v[i] = i < k ? 0 : A[i * p + k];
        v[k] -= alpha;
        double vv = 0;
        for (int i = k; i < p; i++) vv += v[i] * v[i];
        if (vv > 0)
            for (int j = 0; j < p; j++) {     /* A ← (I − 2vvᵀ/vᵀv) A */
                double dot = 0;
                for (int i = k; i < p; i++) dot += v[i] * A[i * p + j];
                for (int i = k; i < p; i++) A[i * p + j] -= 2 * dot / vv * v[i];
            }
        if (vv > 0)
            for (int i = 0; i < p; i++) {     /* Q ← Q (I − 2vvᵀ/vᵀv) */
                double dot = 0;
                for (int j = k; j < p; j++) dot += Q[i * p + j] * v[j];
                for (int j = k; j < p; j++) Q[i * p + j] -= 2 * dot / vv * v[j];
            }
        sgn[k] = A[k * p + k] >= 0 ? 1 : -1;
    }
    for (int i = 0; i < p; i++)
        for (int j = 0; j < p; j++) Q[i * p + j] *= sgn[j];
}

/* argmax of |y_c| over c < p, with sign: the cross-polytope bucket of y. */
static int cp_bucket_of(const double *y, int p) {
    int best = 0;
    for (int c = 1; c < p; c++)
        if (fabs(y[c]) > fabs(y[best])) best = c;
    return y[best] >= 0 ? best : p + best;
}

/* A uniformly random pair of unit vectors in R^d at angle theta. */
static void random_pair(Rng *r, int d, double theta, float *x, float *y) {
    double a[64], b[64], na = 0, ab = 0, nb = 0;
    for (int c = 0; c < d; c++) a[c] = rng_normal(r), b[c] = rng_normal(r);
    for (int c = 0; c < d; c++) na += a[c] * a[c];
    for (int c = 0; c < d; c++) a[c] /= sqrt(na);
    for (int c = 0; c < d; c++) ab += a[c] * b[c];
    for (int c = 0; c < d; c++) b[c] -= ab * a[c];
    for (int c = 0; c < d; c++) nb += b[c] * b[c];
    for (int c = 0; c < d; c++) {
        x[c] = (float)a[c];
        y[c] = (float)(cos(theta) * a[c] + sin(theta) * b[c] / sqrt(nb));
    }
}

/* Collision probability of one cross-polytope function against the angle: the
 * pseudo-rotation (a fresh Lsh per trial) vs an exact Haar rotation (a fresh QR
 * per trial), each on TRIALS fresh random pairs at 30°, 60°, 90°, 120°, for d = 16
 * (p = 16) and d = 12 (padded to 16; the exact rotation acts on the padded vector).
 * The two estimates are independent binomials: they must agree within 4.5σ of
 * their difference, σ = sqrt(p̂(1 − p̂)·2/TRIALS) (p̂ the pooled estimate); with 8
 * comparisons a false alarm has probability < 1e-4.  At 30° p ≈ 0.48, so σ ≈ 0.005
 * and the bound ≈ 0.023. */
#define CP_TRIALS 20000
static void test_crosspolytope_probability(void) {
    static const int dims[] = { 16, 12 };
    static const int degrees[] = { 30, 60, 90, 120 };
    const double pi = 3.14159265358979323846;
    Rng pairs = rng_stream(22, 0), haar = rng_stream(23, 0);
    double Q[64 * 64];
    for (int k = 0; k < 2; k++) {
        const int d = dims[k], p = lsh_padded_dim(d);
        double prev = 1.0;
        for (int a = 0; a < 4; a++) {
            const double theta = degrees[a] * pi / 180;
            float x[16], y[16];
            long fast = 0, exact = 0;
            uint64_t codes[2];
            for (int s = 0; s < CP_TRIALS; s++) {
                Lsh lsh;
                float xy[32];
                random_pair(&pairs, d, theta, x, y);
                memcpy(xy, x, (size_t)d * sizeof(float));
                memcpy(xy + d, y, (size_t)d * sizeof(float));
                must_init(&lsh, LSH_CROSSPOLYTOPE, d, 1, 1, 100000 * (uint64_t)(k * 4 + a) + (uint64_t)s);
                lsh_hash(&lsh, xy, 2, codes);
                fast += codes[0] == codes[1];
                lsh_free(&lsh);
            }
            for (int s = 0; s < CP_TRIALS; s++) {
                double qx[16] = { 0 }, qy[16] = { 0 };
                random_pair(&pairs, d, theta, x, y);
                haar_rotation(&haar, p, Q);
                for (int i = 0; i < p; i++) {
                    qx[i] = qy[i] = 0;
                    for (int j = 0; j < d; j++) qx[i] += Q[i * p + j] * x[j], qy[i] += Q[i * p + j] * y[j];
                }
                exact += cp_bucket_of(qx, p) == cp_bucket_of(qy, p);
            }
            double pf = (double)fast / CP_TRIALS, pe = (double)exact / CP_TRIALS, pool = (pf + pe) / 2;
            double tol = 4.5 * sqrt(fmax(pool * (1 - pool), 1e-4) * 2.0 / CP_TRIALS);
            printf("crosspolytope d=%d (p=%d) theta=%3d deg: pseudo-rotation %.4f, Haar rotation %.4f (tol %.4f)\n",
                   d, p, degrees[a], pf, pe, tol);
            CHECK(fabs(pf - pe) <= tol, "crosspolytope d=%d theta=%d deg: %.4f vs exact rotation %.4f (tol %.4f)", d,
                  degrees[a], pf, pe, tol);
            CHECK(pf < prev, "collision rate falls with the angle: %.4f after %.4f", pf, prev);
            prev = pf;
        }
    }
    /* A fixed direction lands in each of the 2p buckets equally often. */
    const int d = 8;
    float x[8], y[8];
    pair_at_angle(&pairs, d, 0.5, x, y);
    Lsh lsh;
    must_init(&lsh, LSH_CROSSPOLYTOPE, d, 16000, 1, 31);
    uint64_t *codes = malloc(16000 * sizeof *codes);
    lsh_hash(&lsh, x, 1, codes);
    long hist[16] = { 0 };
    for (int t = 0; t < 16000; t++) hist[codes[t] < 16 ? codes[t] : 0]++;
    int uniform = 1;
    for (int b = 0; b < 2 * d; b++) uniform &= within_binomial(hist[b] / 16000.0, 1.0 / 16, 16000, 5);
    CHECK(uniform, "crosspolytope buckets uniform: first counts %ld %ld %ld %ld (want ~1000)", hist[0],
          hist[1], hist[8], hist[15]);
    lsh_free(&lsh);
    /* FALCONN's last dimension m = 3 at z = 2: the first function still spreads over
     * 16 buckets, the last over 2m = 6, uniformly. */
    AlError e = { 0 };
    CHECK(lsh_init_last(&lsh, LSH_CROSSPOLYTOPE, d, 16000, 2, 3, 32, &e) == 0, "lsh_init_last: %s", e.msg);
    lsh_hash(&lsh, x, 1, codes);
    long first[16] = { 0 }, last[16] = { 0 };
    for (int t = 0; t < 16000; t++) first[codes[t] & 15]++, last[codes[t] >> lsh.bits]++;
    uniform = 1;
    for (int b = 0; b < 16; b++) {
        uniform &= within_binomial(first[b] / 16000.0, 1.0 / 16, 16000, 5);
        uniform &= b < 6 ? within_binomial(last[b] / 16000.0, 1.0 / 6, 16000, 5) : last[b] == 0;
    }
    CHECK(lsh.bits == 4 && uniform, "last dimension 3: last-function counts %ld %ld %ld %ld %ld %ld | %ld (want ~2667, "
          "then 0)", last[0], last[1], last[2], last[3], last[4], last[5], last[6]);
    free(codes);
    lsh_free(&lsh);
}

static void test_seeds_and_nesting(void) {
    const int d = 12, n = 100;
    Rng r = rng_stream(41, 0);
    float x[1200];
    fill_normal(&r, x, (long)n * d);
    for (int fam = 0; fam <= 1; fam++) {
        Lsh a, b, c, small;
        must_init(&a, (LshFamily)fam, d, 6, 3, 123);
        must_init(&b, (LshFamily)fam, d, 6, 3, 123);
        must_init(&c, (LshFamily)fam, d, 6, 3, 124);
        must_init(&small, (LshFamily)fam, d, 4, 2, 123);
        uint64_t ca[600], cb[600], cc[600], cs[400];
        lsh_hash(&a, x, n, ca);
        lsh_hash(&b, x, n, cb);
        lsh_hash(&c, x, n, cc);
        lsh_hash(&small, x, n, cs);
        long differ = 0, nest_bad = 0;
        for (int e = 0; e < n * 6; e++) differ += ca[e] != cc[e];
        const uint64_t mask = (1ull << (2 * a.bits)) - 1;
        for (int i = 0; i < n; i++)
            for (int t = 0; t < 4; t++) nest_bad += cs[i * 4 + t] != (ca[i * 6 + t] & mask);
        CHECK(memcmp(ca, cb, sizeof ca) == 0, "%s: same seed, same codes", lsh_family_name(fam));
        CHECK(differ > n * 6 / 2, "%s: another seed changes most codes (%ld of %d)", lsh_family_name(fam),
              differ, n * 6);
        CHECK(nest_bad == 0, "%s: (l=4, z=2) codes are a prefix of (l=6, z=3)'s: %ld differ",
              lsh_family_name(fam), nest_bad);
        lsh_free(&a); lsh_free(&b); lsh_free(&c); lsh_free(&small);
    }
    CHECK(lsh_head_seed(1, 0, 0) == lsh_head_seed(1, 0, 0) && lsh_head_seed(1, 0, 0) != lsh_head_seed(1, 0, 1) &&
          lsh_head_seed(1, 0, 1) != lsh_head_seed(1, 1, 0) && lsh_head_seed(1, 0, 0) != lsh_head_seed(2, 0, 0),
          "head seeds are deterministic and distinct");
}

static void expect_init_error(LshFamily fam, int d, int l, int z, const char *needle) {
    Lsh lsh;
    AlError err = { 0 };
    int rc = lsh_init(&lsh, fam, d, l, z, 1, &err);
    CHECK(rc == 2 && strstr(err.msg, needle) && lsh.proj == NULL && lsh.signs == NULL,
          "lsh_init(%s, d=%d, l=%d, z=%d) should fail mentioning '%s': rc %d, '%s'", lsh_family_name(fam), d,
          l, z, needle, rc, err.msg);
    lsh_free(&lsh);
}

static void test_init_errors(void) {
    expect_init_error(LSH_HYPERPLANE, 0, 1, 1, "dimension");
    expect_init_error(LSH_HYPERPLANE, 4, 0, 1, "tables");
    expect_init_error(LSH_CROSSPOLYTOPE, 4, 1, 0, "functions");
    expect_init_error(LSH_HYPERPLANE, 4, 1, 65, "at most 64");
    expect_init_error(LSH_CROSSPOLYTOPE, 64, 1, 10, "at most 9");
    expect_init_error(LSH_HYPERPLANE, 1 << 20, 4096, 64, "too large");
    AlError err = { 0 };
    Lsh bad;
    CHECK(lsh_init_last(&bad, LSH_CROSSPOLYTOPE, 12, 1, 1, 17, 1, &err) == 2 && strstr(err.msg, "[1, 16]"),
          "last dimension 17 > p = 16: %s", err.msg);
    CHECK(lsh_init_last(&bad, LSH_HYPERPLANE, 12, 1, 1, 4, 1, &err) == 2 && strstr(err.msg, "hyperplanes"),
          "last dimension with hyperplanes: %s", err.msg);
    Lsh ok;
    must_init(&ok, LSH_HYPERPLANE, 4, 1, 64, 1);
    lsh_free(&ok);
    must_init(&ok, LSH_CROSSPOLYTOPE, 64, 1, 9, 1);
    lsh_free(&ok);
}

/* ============================================================================== */
/* 5. Heads: each (b, h) slice equals a single call with that head's Lsh. */

/* pooled: every query and key row is one of 12 rows, so rows repeat within and
 * across items, as a first layer's do (anna_codes_heads hashes each once). */
static void test_heads(LshFamily fam, int pooled) {
    const int B = 3, H = 3, T = 50, D = 8, Dv = 5, L = 3, POOL = 12;
    Rng r = rng_stream(51, 0);
    long nq = (long)B * H * T;
    float *q = malloc((size_t)nq * D * sizeof(float)), *k = malloc((size_t)nq * D * sizeof(float));
    float *v = malloc((size_t)nq * Dv * sizeof(float)), *out = malloc((size_t)nq * Dv * sizeof(float));
    float one[50 * 5], pool[12 * 8];
    fill_normal(&r, q, nq * D);
    fill_normal(&r, k, nq * D);
    fill_normal(&r, pool, POOL * D);
    for (long i = 0; pooled && i < nq; i++) {
        memcpy(q + i * D, pool + rng_below(&r, POOL) * D, D * sizeof(float));
        memcpy(k + i * D, pool + rng_below(&r, POOL) * D, D * sizeof(float));
    }
    fill_uniform(&r, v, nq * Dv);
    Lsh heads[3];
    for (int h = 0; h < H; h++) must_init(&heads[h], fam, D, L, 2, lsh_head_seed(9, 1, h));
    AnnaStats all;
    anna_attention_heads(heads, q, k, v, B, H, T, D, Dv, 1, out, NULL, &all);
    /* Every head's batch codes, in the (b, h) layout the op saves. */
    const long per_item = 2L * H * T * L;
    uint64_t *codes = malloc((size_t)B * per_item * sizeof *codes), one_codes[2 * 50 * 3];
    CHECK(anna_codes_heads(heads, q, k, B, H, T, D, NULL) == per_item, "codes per item");
    anna_codes_heads(heads, q, k, B, H, T, D, codes);
    double err = 0, coll = 0, empty = 0;
    int codes_differ = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            long o = (long)b * H + h;
            AnnaStats st;
            anna_attention_keep(&heads[h], q + o * T * D, k + o * T * D, v + o * T * Dv, T, D, Dv, 1, one, NULL,
                                &st, one_codes, NULL);
            err = fmax(err, max_abs_diff(one, out + o * T * Dv, (long)T * Dv));
            codes_differ += memcmp(one_codes, codes + b * per_item + 2L * h * T * L, sizeof one_codes) != 0;
            coll += st.mean_collisions / (B * H);
            empty += st.empty_fraction / (B * H);
        }
    const char *name = lsh_family_name(fam);
    CHECK(err == 0, "%s%s: heads differ from single calls by %.3g", name, pooled ? ", pooled" : "", err);
    CHECK(codes_differ == 0, "%s%s: anna_codes_heads differs from per-item codes in %d of %d items", name,
          pooled ? ", pooled" : "", codes_differ, B * H);
    CHECK(all.queries == nq && fabs(all.mean_collisions - coll) < 1e-9 && fabs(all.empty_fraction - empty) < 1e-12,
          "head stats: %.6g vs %.6g collisions, %.6g vs %.6g empty", all.mean_collisions, coll,
          all.empty_fraction, empty);
    /* With pooled rows some buckets hold many tokens: the comparison is not vacuous. */
    if (pooled) CHECK(all.mean_collisions > 2 * L, "%s pooled: %.3g collisions per query", name, all.mean_collisions);
    for (int h = 0; h < H; h++) lsh_free(&heads[h]);
    free(codes);
    free(q); free(k); free(v); free(out);
}

/* ============================================================================== */
/* 6. Timing (printed only). */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void timing_table(void) {
    const int d = 64, l = 8, z = 2, nmax = 16384;
    Rng r = rng_stream(61, 0);
    float *q = malloc((size_t)nmax * d * sizeof(float)), *k = malloc((size_t)nmax * d * sizeof(float));
    float *v = malloc((size_t)nmax * d * sizeof(float)), *out = malloc((size_t)nmax * d * sizeof(float));
    fill_normal(&r, q, (long)nmax * d);
    fill_normal(&r, k, (long)nmax * d);
    fill_uniform(&r, v, (long)nmax * d);
    printf("timing (d = dv = 64, l = 8, z = 2, one BLAS thread; best of 2; printed, not asserted)\n");
    printf("  %6s  %-14s %10s %10s %12s %14s\n", "N", "family", "ms", "ms causal", "us/query", "coll/q causal");
    for (int fam = 0; fam <= 1; fam++) {
        Lsh lsh;
        must_init(&lsh, (LshFamily)fam, d, l, z, 3);
        void *scratch = malloc(anna_scratch_bytes(&lsh, nmax, d));
        for (int n = 256; n <= nmax; n *= 4) {
            double best[2] = { 1e30, 1e30 };
            AnnaStats st;
            for (int causal = 0; causal <= 1; causal++)
                for (int rep = 0; rep < 2; rep++) {
                    double t0 = now_ms();
                    anna_attention(&lsh, q, k, v, n, d, d, causal, out, scratch, &st);
                    best[causal] = fmin(best[causal], now_ms() - t0);
                }
            printf("  %6d  %-14s %10.3f %10.3f %12.3f %14.1f\n", n, lsh_family_name(fam), best[0], best[1],
                   1e3 * best[0] / n, st.mean_collisions);
        }
        free(scratch);
        lsh_free(&lsh);
    }
    free(q); free(k); free(v); free(out);
}

int main(void) {
    openblas_set_num_threads(1);
    test_reference();
    test_anna_is_ema(LSH_HYPERPLANE, 64, 64);
    test_anna_is_ema(LSH_CROSSPOLYTOPE, 64, 12);
    test_ema();
    test_hyperplane_probability();
    test_fwht();
    test_rotation_orthogonal();
    test_crosspolytope_probability();
    test_seeds_and_nesting();
    test_init_errors();
    test_heads(LSH_HYPERPLANE, 0);
    test_heads(LSH_HYPERPLANE, 1);
    test_heads(LSH_CROSSPOLYTOPE, 0);
    test_heads(LSH_CROSSPOLYTOPE, 1);
    timing_table();
    return check_exit("test_anna");
}
