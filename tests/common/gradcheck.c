/* gradcheck.c — see gradcheck.h. */
#include "gradcheck.h"
#include "attnlab/util/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Tensor *gc_leaf(int ndim, const int *shape, uint64_t seed, float lo, float hi) {
    Tensor *x = al_calloc(1, sizeof *x);
    long n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    tensor_init(x, al_malloc((size_t)n * sizeof(float)), al_calloc((size_t)n, sizeof(float)),
                ndim, shape);
    Rng r = rng_stream(seed, 0x6c656166);
    for (long i = 0; i < n; i++) x->data[i] = lo + (hi - lo) * (float)rng_uniform(&r);
    return x;
}

void gc_leaf_free(Tensor *x) {
    if (!x) return;
    free(x->data);
    free(x->grad);
    free(x);
}

typedef struct GcCtx {
    GcBuildFn build;
    void *ctx;
    Tensor **leaves;
    int n_leaves;
    Arena arena;
    Tape tape;
    float *w;      /* output weights, allocated on first forward */
    long n_out;
} GcCtx;

/* One forward from scratch; returns the output (valid until the next call). */
static Tensor *forward(GcCtx *g) {
    tape_reset(&g->tape);
    rng_seed(&g->tape.rng, 1234);
    Tensor *out = g->build(&g->tape, g->leaves, g->ctx);
    if (!g->w) {
        g->n_out = out->n;
        g->w = al_malloc((size_t)out->n * sizeof(float));
        Rng r = rng_stream(99, 0x77);
        for (long i = 0; i < out->n; i++) g->w[i] = (float)(2.0 * rng_uniform(&r) - 1.0);
    }
    AL_ASSERT(out->n == g->n_out);
    return out;
}

static double weighted_sum(GcCtx *g, const Tensor *out) {
    double s = 0;
    for (long i = 0; i < out->n; i++) s += (double)g->w[i] * (double)out->data[i];
    return s;
}

/* L(x with element i moved by h) − L(x with it moved by −h). */
static double difference(GcCtx *g, Tensor *x, long i, float h) {
    float keep = x->data[i];
    x->data[i] = keep + h;
    double lp = weighted_sum(g, forward(g));
    x->data[i] = keep - h;
    double lm = weighted_sum(g, forward(g));
    x->data[i] = keep;
    return lp - lm;
}

/* dL/dx_i by the central difference, or by the five-point stencil (gradcheck.h). */
static double numeric_grad(GcCtx *g, Tensor *x, long i, GcTol tol) {
    double h = (double)tol.eps;
    if (tol.order != 4) return difference(g, x, i, tol.eps) / (2.0 * h);
    return (8.0 * difference(g, x, i, tol.eps) - difference(g, x, i, 2.0f * tol.eps)) / (12.0 * h);
}

static int run(const char *label, GcBuildFn build, void *ctx, Tensor **leaves, int n_leaves,
               GcTol tol, GcResult *res, int fault_op, int verbose) {
    GcCtx g = { .build = build, .ctx = ctx, .leaves = leaves, .n_leaves = n_leaves };
    arena_init(&g.arena, 1 << 20);
    tape_init(&g.tape, &g.arena);
    g.tape.training = 1;

    /* Analytic. */
    for (int l = 0; l < n_leaves; l++) memset(leaves[l]->grad, 0, (size_t)leaves[l]->n * sizeof(float));
    if (fault_op >= 0) { g.tape.fault_op = fault_op; g.tape.fault_scale = 1.05f; }
    Tensor *out = forward(&g);
    AL_ASSERT(out->grad != NULL);
    tape_backward_from(&g.tape, out, g.w);
    g.tape.fault_op = -1;

    GcResult r = {0};
    for (int l = 0; l < n_leaves; l++) {
        Tensor *x = leaves[l];
        for (long i = 0; i < x->n; i++) {
            double num = numeric_grad(&g, x, i, tol);
            double ana = x->grad[i];
            double abs_err = fabs(ana - num);
            double scale = fmax(fabs(ana), fabs(num));
            double rel_err = scale > 0 ? abs_err / scale : 0;
            r.n_checked++;
            if (abs_err > r.max_abs_err) r.max_abs_err = abs_err;
            if (abs_err > 1e-6 && rel_err > r.max_rel_err) r.max_rel_err = rel_err;
            double allowed = tol.atol + tol.rtol * scale;
            if (abs_err / allowed > r.max_used) r.max_used = abs_err / allowed;
            if (abs_err > allowed) {
                if (verbose && r.n_bad < 5)
                    fprintf(stderr, "  %s: leaf %d elem %ld: analytic %.7g numeric %.7g\n",
                            label, l, i, ana, num);
                r.n_bad++;
            }
        }
    }
    if (res) *res = r;
    free(g.w);
    tape_free(&g.tape);
    arena_free(&g.arena);
    return r.n_bad == 0;
}

int gradcheck(const char *label, GcBuildFn build, void *ctx, Tensor **leaves, int n_leaves,
              GcTol tol, GcResult *res) {
    GcResult r;
    int ok = run(label, build, ctx, leaves, n_leaves, tol, &r, -1, 1);
    printf("  %-40s %s  checked %ld, max abs err %.2e, max rel err %.2e, %.0f%% of the tolerance "
           "(eps %g atol %g rtol %g%s)\n",
           label, ok ? "ok  " : "FAIL", r.n_checked, r.max_abs_err, r.max_rel_err, 100.0 * r.max_used,
           (double)tol.eps, (double)tol.atol, (double)tol.rtol, tol.order == 4 ? ", order 4" : "");
    if (res) *res = r;
    return ok;
}

int gradcheck_catches_fault(const char *label, OpKind op, GcBuildFn build, void *ctx,
                            Tensor **leaves, int n_leaves, GcTol tol) {
    GcResult r;
    int passed = run(label, build, ctx, leaves, n_leaves, tol, &r, (int)op, 0);
    printf("  %-40s fault in %s backward %s (%ld of %ld elements flagged)\n", label, op_name(op),
           passed ? "NOT caught" : "caught", r.n_bad, r.n_checked);
    return !passed;
}
