/* gradcheck.h — central-difference gradient checks (ggml test-grad0 style).
 *
 * A case builds a graph from leaf inputs; the scalar it checks is
 * L = Σ w_i·out_i with fixed random weights w (so every output element matters and
 * errors cannot cancel).  Analytic dL/dx comes from tape_backward_from(out, w);
 * numeric dL/dx from (L(x+eps) − L(x−eps)) / 2eps with L summed in double, or with
 * `order` 4 from the five-point stencil
 *   (8·(L(x+eps) − L(x−eps)) − (L(x+2eps) − L(x−2eps))) / 12eps,
 * whose truncation error is eps⁴·f⁽⁵⁾/30 instead of eps²·f‴/6: for graphs curved
 * enough (x/‖x‖ on short rows) that no eps keeps both the central difference's
 * truncation and the float forward's rounding below atol.
 * An element passes when |analytic − numeric| ≤ atol + rtol·max(|a|, |n|). */
#ifndef ATTNLAB_TESTS_GRADCHECK_H
#define ATTNLAB_TESTS_GRADCHECK_H

#include "attnlab/autodiff/ops.h"

#include <stdint.h>

typedef struct GcTol {
    float eps, atol, rtol;
    int order;    /* the finite difference's order of accuracy: 2 (also when 0) or 4 */
} GcTol;

/* Builds the graph on `t` from the leaves; returns its output.  Must be a pure
 * function of the leaves' data and ctx (the tape's rng is re-seeded before each call). */
typedef Tensor *(*GcBuildFn)(Tape *t, Tensor **leaves, void *ctx);

typedef struct GcResult {
    double max_abs_err, max_rel_err;
    double max_used;   /* the largest |a − n| / (atol + rtol·max(|a|, |n|)): > 1 fails */
    long   n_checked, n_bad;
} GcResult;

/* A leaf with a gradient, heap-allocated, filled uniform in [lo, hi). */
Tensor *gc_leaf(int ndim, const int *shape, uint64_t seed, float lo, float hi);
void    gc_leaf_free(Tensor *x);

/* Runs one check; returns 1 when every element of every leaf passes.  Prints a line
 * with the label and the worst error. */
int gradcheck(const char *label, GcBuildFn build, void *ctx, Tensor **leaves, int n_leaves,
              GcTol tol, GcResult *res);

/* The check that the check works: runs `build` with the backward of `op` fed a
 * gradient scaled by 1.05 and returns 1 when gradcheck reports the error. */
int gradcheck_catches_fault(const char *label, OpKind op, GcBuildFn build, void *ctx,
                            Tensor **leaves, int n_leaves, GcTol tol);

#endif
