/* grad_mlp.c — gradient checks of the fused MLP (ad_mlp): both GeLU kinds, 2-D
 * and 3-D input, without a residual, with a residual leaf, and with res = x (x's
 * grad then gets the residual path and the path through the MLP).
 *
 * Tolerance: eps 2⁻⁷, atol 1e-4, rtol 1e-3, as for ad_gelu (grad_pointwise.c).
 * The output is linear in w2, b2 and res and GeLU-curved in x, w1, b1; the
 * weights lie in [−0.5, 0.5) and the hidden widths are small, so the hidden
 * pre-activations stay within |h| ≲ 2 and the curvature reaching the output is
 * that of one GeLU times |w|·(a few terms) ≲ 1: truncation ≤ eps²/6·O(1) ≈ 1e-5,
 * float rounding of the outputs ~1e-5 — a few times below atol, and far below
 * the 5 % error the fault check plants. */
#include "grad_cases.h"

#include <stdio.h>

static const GcTol MLP_TOL = { 0x1p-7f, 1e-4f, 1e-3f, 2 };

typedef struct MlpCase {
    int ndim, xshape[3];    /* x (…, in) */
    int hidden, out;
    AdGelu kind;
    int res;                /* 0 none, 1 a leaf like y, 2 x itself (in = out) */
    uint64_t seed;
} MlpCase;

/* Leaves: x, w1, b1, w2, b2, then the residual leaf when the case has one. */
static Tensor *build_mlp(Tape *t, Tensor **x, void *ctx) {
    const MlpCase *c = ctx;
    Tensor *in = gc_in(t, x[0]);
    Tensor *res = c->res == 2 ? in : c->res == 1 ? gc_in(t, x[5]) : NULL;
    return ad_mlp(t, in, gc_in(t, x[1]), gc_in(t, x[2]), gc_in(t, x[3]), gc_in(t, x[4]), res, c->kind);
}

static const MlpCase CASES[] = {
    { 2, {5, 4},    6, 3, GELU_TANH, 0, 1 },
    { 2, {5, 4},    6, 3, GELU_ERF,  0, 2 },
    { 3, {2, 3, 4}, 7, 5, GELU_TANH, 0, 3 },   /* 3-D input */
    { 3, {2, 3, 4}, 7, 5, GELU_ERF,  0, 4 },
    { 2, {4, 5},    6, 3, GELU_TANH, 1, 5 },   /* + a residual leaf */
    { 3, {2, 3, 4}, 5, 4, GELU_ERF,  1, 6 },
    { 3, {2, 3, 4}, 6, 4, GELU_TANH, 2, 7 },   /* res = x */
    { 2, {5, 3},    7, 3, GELU_ERF,  2, 8 },
    { 2, {1, 5},    1, 1, GELU_TANH, 1, 9 },   /* one row, one hidden unit, one output */
};

int grad_cases_mlp(OpKind op, int *n_cases) {
    if (op != OP_MLP) return 0;
    int failed = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const MlpCase *c = &CASES[i];
        int in = c->xshape[c->ndim - 1], yshape[3];
        for (int d = 0; d < c->ndim; d++) yshape[d] = d == c->ndim - 1 ? c->out : c->xshape[d];
        Tensor *x[6] = { NULL };
        int n = 0;
        x[n++] = gc_leaf(c->ndim, c->xshape, c->seed, -1.0f, 1.0f);
        x[n++] = gc_leaf(2, (const int[]){ c->hidden, in }, c->seed + 100, -0.5f, 0.5f);
        x[n++] = gc_leaf(1, &c->hidden, c->seed + 200, -0.5f, 0.5f);
        x[n++] = gc_leaf(2, (const int[]){ c->out, c->hidden }, c->seed + 300, -0.5f, 0.5f);
        x[n++] = gc_leaf(1, &c->out, c->seed + 400, -0.5f, 0.5f);
        if (c->res == 1) x[n++] = gc_leaf(c->ndim, yshape, c->seed + 500, -1.0f, 1.0f);
        char label[128], sx[32];
        snprintf(label, sizeof label, "mlp %s x%s -> %d -> %d%s", c->kind == GELU_ERF ? "erf" : "tanh",
                 tensor_shape_str(x[0], sx, sizeof sx), c->hidden, c->out,
                 c->res == 2 ? " + x" : c->res ? " + residual" : "");
        failed += grad_case_both(label, OP_MLP, build_mlp, (void *)c, x, n, MLP_TOL, 1);
        (*n_cases)++;
        for (int l = 0; l < n; l++) gc_leaf_free(x[l]);
    }
    return failed;
}
