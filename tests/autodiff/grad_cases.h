/* grad_cases.h — gradient-check cases, one group per ops_*.c file.
 *
 * Each group function runs every case it has for `op` (and returns 0 cases for ops
 * it does not own).  A case is: a normal gradcheck that must pass, then for ops
 * that record a tape entry, gradcheck_catches_fault() that must report the
 * deliberately scaled backward.  Each group adds the cases it ran to *n_cases and
 * returns the number that failed. */
#ifndef ATTNLAB_TESTS_GRAD_CASES_H
#define ATTNLAB_TESTS_GRAD_CASES_H

#include "gradcheck.h"

#include <stdio.h>

int grad_cases_linalg(OpKind op, int *n_cases);     /* matmul, linear */
int grad_cases_pointwise(OpKind op, int *n_cases);  /* add sub mul scale sum mean gelu elu relu silu glu dropout */
int grad_cases_gather(OpKind op, int *n_cases);     /* embedding reshape split_heads merge_heads */
int grad_cases_norm(OpKind op, int *n_cases);       /* layernorm l2norm */
int grad_cases_softmax(OpKind op, int *n_cases);    /* softmax cross_entropy bce_multilabel */
int grad_cases_attention(OpKind op, int *n_cases);  /* attention attention_heads */
int grad_cases_efficient(OpKind op, int *n_cases);  /* linear_attention sparse_attention */
int grad_cases_lstm(OpKind op, int *n_cases);       /* lstm */
int grad_cases_anna(OpKind op, int *n_cases);       /* anna_attention */
int grad_cases_mlp(OpKind op, int *n_cases);        /* mlp */
int grad_cases_dss(OpKind op, int *n_cases);        /* dss_kernel causal_conv */
int grad_cases_retnet(OpKind op, int *n_cases);     /* retention */
int grad_cases_mamba(OpKind op, int *n_cases);      /* rmsnorm columns causal_conv1d selective_scan */

/* Helper for groups: runs the normal check and (if check_fault) the fault check;
 * returns the number of failures (0, 1 or 2). */
int grad_case(const char *label, OpKind op, GcBuildFn build, void *ctx, Tensor **leaves,
              int n_leaves, GcTol tol, int check_fault);

/* First writer assigns (tape.h).  A leaf's grad is not fresh, so an op fed leaves
 * only ever adds into its inputs' grads.  Build functions that pass each leaf
 * through gc_in() are run by grad_case_both() twice: on the leaves, and with every
 * leaf first copied by an exact scale by 1 into a tape tensor, whose grad is fresh
 * (arena memory; 0xff bytes in sanitizer builds), so that the op under test is its
 * inputs' first writer and must store. */
static inline int *gc_fresh_inputs(void) {
    static int on;
    return &on;
}

static inline Tensor *gc_in(Tape *t, Tensor *x) {
    return x && *gc_fresh_inputs() ? ad_scale(t, x, 1.0f) : x;
}

static inline int grad_case_both(const char *label, OpKind op, GcBuildFn build, void *ctx, Tensor **leaves,
                                 int n_leaves, GcTol tol, int check_fault) {
    int failed = grad_case(label, op, build, ctx, leaves, n_leaves, tol, check_fault);
    char fresh[192];
    snprintf(fresh, sizeof fresh, "%s, fresh inputs", label);
    *gc_fresh_inputs() = 1;
    failed += grad_case(fresh, op, build, ctx, leaves, n_leaves, tol, check_fault);
    *gc_fresh_inputs() = 0;
    return failed;
}

#endif
