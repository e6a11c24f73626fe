/* grad_linalg.c — gradient checks of matmul and linear.
 *
 * Tolerance (both ops): eps 1e-2, atol 1e-4, rtol 1e-3.  Both ops are affine in
 * each input, so central differences have no truncation error at all; what is
 * left is float32 rounding of the outputs (~6e-8·|out|, a few outputs change per
 * perturbed element) divided by 2·eps, i.e. ~1e-5 absolute on gradients of
 * size ~1.  atol/rtol leave ~10x margin over that and stay far below the 5 %
 * error the fault-injection check plants. */
#include "grad_cases.h"

#include <stdio.h>

static const GcTol LINALG_TOL = { 1e-2f, 1e-4f, 1e-3f };

/* ------------------------------------------------------------------------------ */

typedef struct MatmulCase {
    int ta, tb;
    int n_batch, batch[2];  /* leading dims of a (and of b unless shared) */
    int m, n, k;
    int shared;             /* b is 2-D, shared by every batch item */
    uint64_t seed;
} MatmulCase;

static Tensor *build_matmul(Tape *t, Tensor **x, void *ctx) {
    const MatmulCase *c = ctx;
    return ad_matmul(t, x[0], x[1], c->ta, c->tb);
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
        { 0, 0, 0, {0},    3, 5, 4, 1, 1 },
        { 0, 1, 0, {0},    3, 5, 4, 1, 2 },
        { 1, 0, 0, {0},    3, 5, 4, 1, 3 },
        { 1, 1, 0, {0},    3, 5, 4, 1, 4 },
        /* batched, b per batch item, every combination */
        { 0, 0, 1, {2},    3, 2, 5, 0, 5 },
        { 0, 1, 1, {2},    4, 3, 2, 0, 6 },
        { 1, 0, 1, {3},    2, 4, 3, 0, 7 },
        { 1, 1, 1, {2},    5, 3, 4, 0, 8 },
        { 0, 1, 2, {2, 3}, 3, 3, 2, 0, 9 },   /* (B, H, T, D)-style, as in attention */
        /* shared 2-D b: the flattened single-GEMM path (ta = 0) ... */
        { 0, 0, 1, {3},    2, 4, 3, 1, 10 },
        { 0, 1, 2, {2, 2}, 3, 2, 4, 1, 11 },
        /* ... and the per-item path with dB summed over the batch (ta = 1) */
        { 1, 0, 1, {3},    2, 4, 3, 1, 12 },
        { 1, 1, 2, {2, 2}, 3, 2, 4, 1, 13 },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const MatmulCase *c = &cases[i];
        Tensor *x[2];
        x[0] = matrix_leaf(c->n_batch, c->batch, c->m, c->k, c->ta, c->seed);
        x[1] = matrix_leaf(c->shared ? 0 : c->n_batch, c->batch, c->k, c->n, c->tb, c->seed + 100);
        char label[96], sa[32], sb[32];
        snprintf(label, sizeof label, "matmul ta=%d tb=%d a%s b%s", c->ta, c->tb,
                 tensor_shape_str(x[0], sa, sizeof sa), tensor_shape_str(x[1], sb, sizeof sb));
        failed += grad_case(label, OP_MATMUL, build_matmul, (void *)c, x, 2, LINALG_TOL, 1);
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
} LinearCase;

static Tensor *build_linear(Tape *t, Tensor **x, void *ctx) {
    const LinearCase *c = ctx;
    return ad_linear(t, x[0], x[1], c->bias ? x[2] : NULL);
}

static int linear_cases(int *n_cases) {
    static const LinearCase cases[] = {
        { 2, {5, 7},    3, 1, 21 },
        { 2, {5, 7},    3, 0, 22 },
        { 3, {2, 3, 4}, 6, 1, 23 },
        { 3, {2, 3, 4}, 6, 0, 24 },
        { 2, {1, 9},    1, 1, 25 },   /* a single row and a single output */
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const LinearCase *c = &cases[i];
        int in = c->xshape[c->ndim - 1];
        Tensor *x[3];
        x[0] = gc_leaf(c->ndim, c->xshape, c->seed, -1.0f, 1.0f);
        x[1] = gc_leaf(2, (const int[]){ c->out, in }, c->seed + 100, -1.0f, 1.0f);
        x[2] = c->bias ? gc_leaf(1, &c->out, c->seed + 200, -1.0f, 1.0f) : NULL;
        char label[96], sx[32];
        snprintf(label, sizeof label, "linear x%s -> %d %s", tensor_shape_str(x[0], sx, sizeof sx),
                 c->out, c->bias ? "bias" : "no bias");
        failed += grad_case(label, OP_LINEAR, build_linear, (void *)c, x, c->bias ? 3 : 2,
                            LINALG_TOL, 1);
        (*n_cases)++;
        for (int l = 0; l < 3; l++) gc_leaf_free(x[l]);
    }
    return failed;
}

int grad_cases_linalg(OpKind op, int *n_cases) {
    if (op == OP_MATMUL) return matmul_cases(n_cases);
    if (op == OP_LINEAR) return linear_cases(n_cases);
    return 0;
}
