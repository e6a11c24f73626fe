/* grad_linalg.c — gradient checks of matmul and linear (with and without the
 * fused residual).
 *
 * Tolerance (both ops): eps 1e-2, atol 1e-4, rtol 1e-3.  Both ops are affine in
 * each input, so central differences have no truncation error at all; what is
 * left is float32 rounding of the outputs (~6e-8·|out|, a few outputs change per
 * perturbed element) divided by 2·eps, i.e. ~1e-5 absolute on gradients of
 * size ~1.  atol/rtol leave ~10x margin over that and stay far below the 5 %
 * error the fault-injection check plants. */
#include "grad_cases.h"

#include <stdio.h>

static const GcTol LINALG_TOL = { 1e-2f, 1e-4f, 1e-3f, 2 };

/* ------------------------------------------------------------------------------ */

typedef struct MatmulCase {
    int ta, tb;
    int n_batch, batch[2];  /* leading dims of a (and of b unless shared) */
    int m, n, k;
    int shared;             /* b is 2-D, shared by every batch item */
    uint64_t seed;
    int same;               /* b is a itself (a·aᵀ): both gradients land in one grad */
} MatmulCase;

static Tensor *build_matmul(Tape *t, Tensor **x, void *ctx) {
    const MatmulCase *c = ctx;
    Tensor *a = gc_in(t, x[0]);
    return ad_matmul(t, a, c->same ? a : gc_in(t, x[1]), c->ta, c->tb);
}

/* A leaf of shape (batch…, rows, cols) — rows and cols swapped when trans. */
static Tensor *matrix_leaf(int n_batch, const int *batch, int rows, int cols, int trans,
                           uint64_t seed) {
    int shape[AD_MAX_DIMS], nd = 0;
    for (int i = 0; i < n_batch; i++) shape[nd++] = batch[i];
    shape[nd++] = trans ? cols : rows;
    shape[nd++] = trans ? rows : cols;
    return gc_leaf(nd, shape, seed, -1.0f, 1.0f);
}

static int matmul_cases(int *n_cases) {
    static const MatmulCase cases[] = {
        /* every transpose combination, 2-D, non-square */
        { 0, 0, 0, {0},    3, 5, 4, 1, 1, 0 },
        { 0, 1, 0, {0},    3, 5, 4, 1, 2, 0 },
        { 1, 0, 0, {0},    3, 5, 4, 1, 3, 0 },
        { 1, 1, 0, {0},    3, 5, 4, 1, 4, 0 },
        /* batched, b per batch item, every combination */
        { 0, 0, 1, {2},    3, 2, 5, 0, 5, 0 },
        { 0, 1, 1, {2},    4, 3, 2, 0, 6, 0 },
        { 1, 0, 1, {3},    2, 4, 3, 0, 7, 0 },
        { 1, 1, 1, {2},    5, 3, 4, 0, 8, 0 },
        { 0, 1, 2, {2, 3}, 3, 3, 2, 0, 9, 0 },   /* (B, H, T, D)-style, as in attention */
        /* shared 2-D b: the flattened single-GEMM path (ta = 0) ... */
        { 0, 0, 1, {3},    2, 4, 3, 1, 10, 0 },
        { 0, 1, 2, {2, 2}, 3, 2, 4, 1, 11, 0 },
        /* ... and the per-item path with dB summed over the batch (ta = 1) */
        { 1, 0, 1, {3},    2, 4, 3, 1, 12, 0 },
        { 1, 1, 2, {2, 2}, 3, 2, 4, 1, 13, 0 },
        /* a·aᵀ, 2-D and batched: dA and dB are one grad */
        { 0, 1, 0, {0},    3, 3, 4, 1, 14, 1 },
        { 0, 1, 1, {2},    3, 3, 4, 0, 15, 1 },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const MatmulCase *c = &cases[i];
        Tensor *x[2];
        x[0] = matrix_leaf(c->n_batch, c->batch, c->m, c->k, c->ta, c->seed);
        x[1] = matrix_leaf(c->shared ? 0 : c->n_batch, c->batch, c->k, c->n, c->tb, c->seed + 100);
        char label[96], sa[32], sb[32];
        snprintf(label, sizeof label, "matmul ta=%d tb=%d a%s b%s", c->ta, c->tb,
                 tensor_shape_str(x[0], sa, sizeof sa), c->same ? " = a" : tensor_shape_str(x[1], sb, sizeof sb));
        failed += grad_case_both(label, OP_MATMUL, build_matmul, (void *)c, x, c->same ? 1 : 2, LINALG_TOL, 1);
        (*n_cases)++;
        gc_leaf_free(x[0]);
        gc_leaf_free(x[1]);
    }
    return failed;
}

/* ------------------------------------------------------------------------------ */

typedef struct LinearCase {
    int ndim, xshape[3];    /* x (…, in) */
    int out;
    int bias;
    uint64_t seed;
    int res;                /* residual: 0 none, 1 a leaf like y, 2 x itself (in = out) */
} LinearCase;

/* Leaves: x, w, then the bias and the residual leaf when the case has them. */
static Tensor *build_linear(Tape *t, Tensor **x, void *ctx) {
    const LinearCase *c = ctx;
    Tensor *in = gc_in(t, x[0]);
    Tensor *res = c->res == 2 ? in : c->res == 1 ? gc_in(t, x[2 + c->bias]) : NULL;
    return ad_linear_residual(t, in, gc_in(t, x[1]), c->bias ? gc_in(t, x[2]) : NULL, res);
}

static int linear_cases(int *n_cases) {
    static const LinearCase cases[] = {
        { 2, {5, 7},    3, 1, 21, 0 },
        { 2, {5, 7},    3, 0, 22, 0 },
        { 3, {2, 3, 4}, 6, 1, 23, 0 },
        { 3, {2, 3, 4}, 6, 0, 24, 0 },
        { 2, {1, 9},    1, 1, 25, 0 },   /* a single row and a single output */
        /* y = x·Wᵀ + b + res: the residual fused into the GEMM */
        { 2, {5, 7},    3, 1, 26, 1 },
        { 3, {2, 3, 4}, 6, 0, 27, 1 },
        { 2, {1, 9},    1, 1, 28, 1 },
        { 3, {2, 3, 5}, 5, 1, 29, 2 },  /* res = x: x's grad gets both paths */
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const LinearCase *c = &cases[i];
        int in = c->xshape[c->ndim - 1];
        Tensor *x[4] = { NULL };
        int n = 0, yshape[3];
        for (int d = 0; d < c->ndim; d++) yshape[d] = d == c->ndim - 1 ? c->out : c->xshape[d];
        x[n++] = gc_leaf(c->ndim, c->xshape, c->seed, -1.0f, 1.0f);
        x[n++] = gc_leaf(2, (const int[]){ c->out, in }, c->seed + 100, -1.0f, 1.0f);
        if (c->bias) x[n++] = gc_leaf(1, &c->out, c->seed + 200, -1.0f, 1.0f);
        if (c->res == 1) x[n++] = gc_leaf(c->ndim, yshape, c->seed + 300, -1.0f, 1.0f);
        char label[96], sx[32];
        snprintf(label, sizeof label, "linear x%s -> %d %s%s", tensor_shape_str(x[0], sx, sizeof sx),
                 c->out, c->bias ? "bias" : "no bias",
                 c->res == 2 ? " + x" : c->res ? " + residual" : "");
        failed += grad_case_both(label, OP_LINEAR, build_linear, (void *)c, x, n, LINALG_TOL, 1);
        (*n_cases)++;
        for (int l = 0; l < n; l++) gc_leaf_free(x[l]);
    }
    return failed;
}

int grad_cases_linalg(OpKind op, int *n_cases) {
    if (op == OP_MATMUL) return matmul_cases(n_cases);
    if (op == OP_LINEAR) return linear_cases(n_cases);
    return 0;
}
