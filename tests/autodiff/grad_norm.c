/* grad_norm.c — gradient checks of layernorm and l2norm.
 *
 * Tolerances are stated, with the reasoning, at LN_TOL and L2_TOL. */
#include "grad_cases.h"

#include <stdio.h>

/* ------------------------------------------------------------------------------ */

typedef struct LnCase {
    int ndim, shape[3];
    uint64_t seed;
} LnCase;

/* layernorm: eps 2⁻⁶, atol 1e-4, rtol 1e-3.  Perturbing one x moves every output
 * of its row (through μ and rstd), so C rounding errors of ≤ ½ulp(y) (|y| ≲ 5 →
 * ulp ≤ 4.8e-7) reach the numeric gradient, each weighted by |w| ≤ 1 and divided
 * by 2·eps: random signs make that ~√C·0.3·ulp·|w|/(2·eps) ≈ 2e-5 for C = 64.  A
 * smaller eps makes this worse (2⁻⁸ reaches 1.6e-4), a larger one lets truncation
 * grow; 2⁻⁶ sits at the minimum (observed max 3.4e-5 over all cases). */
static const GcTol LN_TOL = { 0x1p-6f, 1e-4f, 1e-3f, 2 };

static Tensor *build_layernorm(Tape *t, Tensor **x, void *ctx) {
    (void)ctx;
    return ad_layernorm(t, gc_in(t, x[0]), gc_in(t, x[1]), gc_in(t, x[2]), 1e-5f);
}

static int layernorm_cases(int *n_cases) {
    /* C = 5 and 37 exercise the reductions' scalar tails, 16 and 64 their lanes. */
    static const LnCase cases[] = {
        { 2, {4, 8},     1 },
        { 3, {2, 3, 16}, 2 },
        { 2, {3, 5},     3 },
        { 2, {2, 37},    4 },
        { 2, {2, 64},    5 },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const LnCase *c = &cases[i];
        int C = c->shape[c->ndim - 1];
        Tensor *x[3] = {
            gc_leaf(c->ndim, c->shape, c->seed, -2.0f, 2.0f),
            gc_leaf(1, &C, c->seed + 100, 0.5f, 1.5f),   /* gain around 1 */
            gc_leaf(1, &C, c->seed + 200, -0.5f, 0.5f),  /* bias around 0 */
        };
        char label[96], sx[32];
        snprintf(label, sizeof label, "layernorm x%s seed %llu",
                 tensor_shape_str(x[0], sx, sizeof sx), (unsigned long long)c->seed);
        failed += grad_case_both(label, OP_LAYERNORM, build_layernorm, NULL, x, 3, LN_TOL, 1);
        (*n_cases)++;
        for (int l = 0; l < 3; l++) gc_leaf_free(x[l]);
    }
    return failed;
}

/* ------------------------------------------------------------------------------ */

typedef struct L2Case {
    int ndim, shape[3];
    float eps;
    int small_rows;   /* row 1 scaled by 1e-3 (‖x‖ < eps), row 2 by 0.25 (‖x‖ > eps) */
    uint64_t seed;
} L2Case;

/* l2norm: eps 2⁻⁹, atol 1e-4, rtol 1e-3.  The same rounding argument as for
 * layernorm (|y| ≤ 1, so ulp ≤ 1.2e-7) gives ~√C·0.3·1.2e-7/(2·eps) ≈ 2e-5;
 * truncation grows like 1/‖x‖³, and the 0.25-scaled row (‖x‖ ≈ 0.35, gradients
 * ~3) is where it is largest: ~|f‴|·eps²/6 ≈ 25·4e-6/6 ≈ 2e-5.  Observed max
 * 4.5e-5.  The tiny row is linear (y = x/eps_norm); its norm (~1.5e-3) stays below
 * eps_norm = 0.05 on both sides of every stencil, so it never changes regime. */
static const GcTol L2_TOL = { 0x1p-9f, 1e-4f, 1e-3f, 2 };

static Tensor *build_l2norm(Tape *t, Tensor **x, void *ctx) {
    const L2Case *c = ctx;
    return ad_l2norm(t, gc_in(t, x[0]), c->eps);
}

static int l2norm_cases(int *n_cases) {
    static const L2Case cases[] = {
        { 2, {4, 8},    1e-12f, 0, 11 },
        { 3, {2, 3, 5}, 1e-12f, 0, 12 },
        { 2, {3, 20},   1e-12f, 0, 13 },
        { 2, {4, 6},    0.05f,  1, 14 },   /* both regimes in one tensor */
        { 3, {2, 3, 6}, 0.05f,  1, 15 },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const L2Case *c = &cases[i];
        Tensor *x = gc_leaf(c->ndim, c->shape, c->seed, -1.0f, 1.0f);
        int C = tensor_cols(x);
        if (c->small_rows)
            for (int j = 0; j < C; j++) {
                x->data[1 * C + j] *= 1e-3f;
                x->data[2 * C + j] *= 0.25f;
            }
        char label[96], sx[32];
        snprintf(label, sizeof label, "l2norm x%s eps %g%s seed %llu",
                 tensor_shape_str(x, sx, sizeof sx), (double)c->eps,
                 c->small_rows ? " tiny+small rows" : "", (unsigned long long)c->seed);
        failed += grad_case_both(label, OP_L2NORM, build_l2norm, (void *)c, &x, 1, L2_TOL, 1);
        (*n_cases)++;
        gc_leaf_free(x);
    }
    return failed;
}

int grad_cases_norm(OpKind op, int *n_cases) {
    if (op == OP_LAYERNORM) return layernorm_cases(n_cases);
    if (op == OP_L2NORM) return l2norm_cases(n_cases);
    return 0;
}
