/* grad_softmax.c — gradient checks of softmax, cross_entropy and bce_multilabel.
 *
 * eps 1e-2 for both: these ops are curved, so a central difference has truncation
 * error ~eps²/6·f‴ (~1e-5 relative), and float32 rounding of the outputs adds
 * ~1e-7/eps.  Measured, 1e-2 is the best trade-off: the worst softmax error is
 * 4e-6 at eps 1e-2 but 1e-5 at 3e-3 and 5e-5 at 1e-3.
 *
 * softmax: atol 2e-5, rtol 1e-3.  Worst absolute error seen 4.4e-6 (outputs ~0.2,
 * a whole row of them moves per perturbed element): ~5x margin.
 *
 * cross_entropy: atol 1e-6, rtol 1e-3.  The loss is a scalar, which the harness
 * weighs by its first random weight w0 ≈ −0.033, so the gradients are only ~1e-3
 * and the rounding bound is ~2·6e-8·|loss|·|w0|/(2·eps) ≈ 2e-7 — the worst error
 * seen.  A looser atol (1e-4, say) would hide most of the planted 5 % fault.
 *
 * Cases with logits around 100 use eps = 2⁻⁶ instead: floats in [64, 128) are
 * multiples of 2⁻¹⁷, so x ± 2⁻⁶ is exact, whereas x ± 1e-2 would round by up to
 * 4e-6 — a 4e-4 relative error in the step itself. */
#include "grad_cases.h"

#include <math.h>
#include <stdio.h>

static const GcTol SOFTMAX_TOL = { 1e-2f, 2e-5f, 1e-3f, 2 };
static const GcTol CE_TOL = { 1e-2f, 1e-6f, 1e-3f, 2 };

/* The case's tolerance, with the exact power-of-two step for logits around 100. */
static GcTol tol_for(GcTol tol, float lo) {
    if (lo >= 64.0f) tol.eps = 0x1p-6f;
    return tol;
}

/* ------------------------------------------------------------------------------ */

typedef struct SoftmaxCase {
    const char *what;
    int ndim, shape[4];
    const Tensor *mask;
    float lo, hi;
    uint64_t seed;
} SoftmaxCase;

static Tensor *build_softmax(Tape *t, Tensor **x, void *ctx) {
    return ad_softmax(t, gc_in(t, x[0]), ((const SoftmaxCase *)ctx)->mask);
}

static int softmax_cases(int *n_cases) {
    /* Causal (4, 4): −inf above the diagonal, broadcast over the batch. */
    static float causal_data[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) causal_data[i * 4 + j] = j <= i ? 0.0f : -INFINITY;
    Tensor causal;
    tensor_init(&causal, causal_data, NULL, 2, (const int[]){ 4, 4 });
    /* (3, 5): finite additive values, one −inf entry, and row 2 masked out entirely
     * (its output is all zeros and so is its gradient). */
    static float mixed_data[15] = {
        0.5f, -1.0f, 0.0f, 2.0f, -INFINITY,
        -0.3f, 0.0f, 1.5f, -2.0f, 0.25f,
        -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
    };
    Tensor mixed;
    tensor_init(&mixed, mixed_data, NULL, 2, (const int[]){ 3, 5 });

    const SoftmaxCase cases[] = {
        { "",             2, {3, 5},       NULL,    -2.0f, 2.0f, 61 },
        { "",             3, {2, 3, 4},    NULL,    -2.0f, 2.0f, 62 },
        { "causal mask",  3, {2, 4, 4},    &causal, -2.0f, 2.0f, 63 },
        { "causal mask",  4, {2, 2, 4, 4}, &causal, -2.0f, 2.0f, 64 },
        { "mixed mask",   3, {2, 3, 5},    &mixed,  -2.0f, 2.0f, 65 },
        { "mixed mask",   2, {3, 5},       &mixed,  -1.0f, 1.0f, 66 },
        /* exp(100) overflows float: only the max subtraction keeps this finite */
        { "x ~ 100",      2, {3, 6},       NULL,    100.0f, 104.0f, 67 },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const SoftmaxCase *c = &cases[i];
        Tensor *x = gc_leaf(c->ndim, c->shape, c->seed, c->lo, c->hi);
        char label[96], sx[32];
        snprintf(label, sizeof label, "softmax x%s %s", tensor_shape_str(x, sx, sizeof sx), c->what);
        failed += grad_case_both(label, OP_SOFTMAX, build_softmax, (void *)c, &x, 1,
                            tol_for(SOFTMAX_TOL, c->lo), 1);
        (*n_cases)++;
        gc_leaf_free(x);
    }
    return failed;
}

/* ------------------------------------------------------------------------------ */

typedef struct CeCase {
    int ndim, shape[3];
    int targets[8];
    float lo, hi;
    uint64_t seed;
} CeCase;

static Tensor *build_ce(Tape *t, Tensor **x, void *ctx) {
    return ad_cross_entropy(t, gc_in(t, x[0]), ((const CeCase *)ctx)->targets);
}

static int ce_cases(int *n_cases) {
    static const CeCase cases[] = {
        { 2, {4, 3},    {2, 0, 1, 1},            -2.0f, 2.0f, 71 },
        { 2, {6, 5},    {0, 4, -1, 2, -1, 1},    -2.0f, 2.0f, 72 },
        { 3, {2, 3, 7}, {6, 0, 3, -1, 2, 5},     -3.0f, 3.0f, 73 },
        { 2, {5, 6},    {1, -1, 5, 0, 3},        100.0f, 104.0f, 74 },  /* needs log-sum-exp */
        { 2, {3, 4},    {-1, -1, -1},            -2.0f, 2.0f, 75 },     /* nothing counted */
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const CeCase *c = &cases[i];
        Tensor *x = gc_leaf(c->ndim, c->shape, c->seed, c->lo, c->hi);
        long rows = x->n / x->shape[x->ndim - 1];
        int ignored = 0;
        for (long r = 0; r < rows; r++) ignored += c->targets[r] < 0;
        char label[96], sx[32];
        snprintf(label, sizeof label, "cross_entropy x%s %d ignored%s", tensor_shape_str(x, sx, sizeof sx),
                 ignored, c->lo >= 100.0f ? ", x ~ 100" : "");
        /* With every target ignored the loss is constantly 0, so its gradient is 0
         * and a scaled backward still gives 0: the fault is undetectable there by
         * construction, and that case runs the normal check only. */
        failed += grad_case_both(label, OP_CROSS_ENTROPY, build_ce, (void *)c, &x, 1,
                            tol_for(CE_TOL, c->lo), ignored < rows);
        (*n_cases)++;
        gc_leaf_free(x);
    }
    return failed;
}

/* ------------------------------------------------------------------------------ */
/* bce_multilabel: the same case layout as cross_entropy; a target equal to the
 * row's width C means "every class valid" (data/dataset.h).  Its loss sums C
 * binary terms per row (~0.7·C at these logits, ≤ 6 here), so the rounding bound of
 * the cross-entropy header, 2·6e-8·|loss|·|w0|/(2·eps), stays below 1e-6 and
 * CE_TOL applies unchanged.  Wider rows (|Σ| = 1024) are checked against a
 * double-precision reference in tests/data/test_equality.c. */

static Tensor *build_bce(Tape *t, Tensor **x, void *ctx) {
    return ad_bce_multilabel(t, gc_in(t, x[0]), ((const CeCase *)ctx)->targets);
}

static int bce_cases(int *n_cases) {
    static const CeCase cases[] = {
        { 2, {4, 3},    {2, 3, 0, -1},           -2.0f, 2.0f, 81 },
        { 2, {6, 5},    {5, 0, -1, 4, 5, 1},     -2.0f, 2.0f, 82 },
        { 3, {2, 3, 7}, {7, 0, 3, -1, 7, 6},     -3.0f, 3.0f, 83 },
        { 2, {3, 4},    {4, 4, 4},               -6.0f, 6.0f, 84 },     /* every class valid, saturating σ */
        { 2, {3, 4},    {-1, -1, -1},            -2.0f, 2.0f, 85 },     /* nothing counted */
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const CeCase *c = &cases[i];
        Tensor *x = gc_leaf(c->ndim, c->shape, c->seed, c->lo, c->hi);
        int C = x->shape[x->ndim - 1];
        long rows = x->n / C;
        int ignored = 0, all = 0;
        for (long r = 0; r < rows; r++) {
            ignored += c->targets[r] < 0;
            all += c->targets[r] == C;
        }
        char label[96], sx[32];
        snprintf(label, sizeof label, "bce_multilabel x%s %d ignored, %d all-valid", tensor_shape_str(x, sx, sizeof sx),
                 ignored, all);
        /* As for cross_entropy: a loss that counts nothing is constantly 0. */
        failed += grad_case_both(label, OP_BCE_MULTILABEL, build_bce, (void *)c, &x, 1, CE_TOL, ignored < rows);
        (*n_cases)++;
        gc_leaf_free(x);
    }
    return failed;
}

int grad_cases_softmax(OpKind op, int *n_cases) {
    if (op == OP_SOFTMAX) return softmax_cases(n_cases);
    if (op == OP_CROSS_ENTROPY) return ce_cases(n_cases);
    if (op == OP_BCE_MULTILABEL) return bce_cases(n_cases);
    return 0;
}
