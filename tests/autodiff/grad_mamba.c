/* grad_mamba.c — gradient checks of the Mamba ops: rmsnorm, columns, causal_conv1d
 * and selective_scan.  Every case runs on leaves and on fresh inputs
 * (grad_case_both), then with a 5 % fault planted in the op's backward, which the
 * check must catch.
 *
 * Tolerances:
 *   rmsnorm   as layernorm (grad_norm.c, LN_TOL: eps 2⁻⁶ balances the rounding of
 *             every output of the row against truncation).
 *   columns, causal_conv1d   linear in each input (the conv is bilinear in x and w),
 *             so the central difference is exact up to rounding: eps 1e-2, atol 1e-4,
 *             rtol 1e-3 as matmul (grad_linalg.c).
 *   selective_scan   curved in every input (exp(Δ·A), softplus, SiLU gate) and over
 *             T steps (Δ of step t scales every later state), so the central
 *             difference has a truncation error |L‴|·eps²/6; against it stands the
 *             rounding of the B·T·E outputs (~1e-7 each, the N-term sums of C·h
 *             the most) divided by 2·eps.  Measured worst element error over the
 *             cases below: 2.3e-5 at eps 2⁻⁷, 7.5e-5 at 2⁻⁸, 1.6e-4 at 2⁻⁹ — rounding
 *             already dominates at 2⁻⁸, so eps 2⁻⁷; atol 1e-4 (4x the worst), rtol
 *             1e-3 as the LSTM (grad_lstm.c).  Inputs
 *             are scaled so that no path saturates: δ in ±2 (Δ ∈ 0.13..2.1), A_log
 *             in [−1, 1) (A ∈ −2.7..−0.37: decays e^{ΔA} from 0.003 to 0.95, so
 *             information survives several steps and every h_{t−1} path carries
 *             gradient), u, B, C, D in ±1, z in ±2. */
#include "grad_cases.h"

#include <stdio.h>
#include <stdlib.h>

static const GcTol RMS_TOL = { 0x1p-6f, 1e-4f, 1e-3f, 2 };
static const GcTol LIN_TOL = { 1e-2f, 1e-4f, 1e-3f, 2 };
static const GcTol SCAN_TOL = { 0x1p-7f, 1e-4f, 1e-3f, 2 };

/* ---- rmsnorm ------------------------------------------------------------------ */

static Tensor *build_rmsnorm(Tape *t, Tensor **x, void *ctx) {
    (void)ctx;
    return ad_rmsnorm(t, gc_in(t, x[0]), gc_in(t, x[1]), 1e-5f);
}

static int rmsnorm_cases(int *n_cases) {
    /* C = 5 and 37 exercise fm_dot's scalar tail, 16 and 64 its lanes. */
    static const struct { int ndim, shape[3]; uint64_t seed; } cases[] = {
        { 2, {4, 8}, 1 }, { 3, {2, 3, 16}, 2 }, { 2, {3, 5}, 3 }, { 2, {2, 37}, 4 }, { 2, {2, 64}, 5 },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int C = cases[i].shape[cases[i].ndim - 1];
        Tensor *x[2] = { gc_leaf(cases[i].ndim, cases[i].shape, cases[i].seed, -2.0f, 2.0f),
                         gc_leaf(1, &C, cases[i].seed + 100, 0.5f, 1.5f) };
        char label[96], sx[32];
        snprintf(label, sizeof label, "rmsnorm x%s seed %llu", tensor_shape_str(x[0], sx, sizeof sx),
                 (unsigned long long)cases[i].seed);
        failed += grad_case_both(label, OP_RMSNORM, build_rmsnorm, NULL, x, 2, RMS_TOL, 1);
        (*n_cases)++;
        for (int l = 0; l < 2; l++) gc_leaf_free(x[l]);
    }
    return failed;
}

/* ---- columns -------------------------------------------------------------------- */

/* Three slices of one x, as Mamba splits x_proj's output into dt, B and C (the
 * middle one also twice, so two entries add into the same columns), each weighted
 * differently through a scale so their gradients do not coincide. */
static Tensor *build_columns(Tape *t, Tensor **x, void *ctx) {
    const int *w = ctx;   /* widths of the three slices */
    Tensor *in = gc_in(t, x[0]);
    Tensor *a = ad_columns(t, in, 0, w[0]), *b = ad_columns(t, in, w[0], w[1]);
    Tensor *c = ad_columns(t, in, w[0] + w[1], w[2]), *b2 = ad_columns(t, in, w[0], w[1]);
    Tensor *ab = ad_add(t, ad_mul(t, a, ad_scale(t, b, 2.0f)), ad_scale(t, b2, -0.5f));
    return ad_mul(t, ab, c);
}

static int columns_cases(int *n_cases) {
    static const struct { int ndim, shape[3], w[3]; uint64_t seed; } cases[] = {
        { 2, {4, 9}, {3, 3, 3}, 21 },
        { 3, {2, 3, 12}, {4, 4, 4}, 22 },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Tensor *x = gc_leaf(cases[i].ndim, cases[i].shape, cases[i].seed, -1.0f, 1.0f);
        char label[96], sx[32];
        snprintf(label, sizeof label, "columns x%s in thirds seed %llu", tensor_shape_str(x, sx, sizeof sx),
                 (unsigned long long)cases[i].seed);
        failed += grad_case_both(label, OP_COLUMNS, build_columns, (void *)cases[i].w, &x, 1, LIN_TOL, 1);
        (*n_cases)++;
        gc_leaf_free(x);
    }
    return failed;
}

/* ---- causal_conv1d ---------------------------------------------------------------- */

typedef struct ConvCase { int B, T, E, K, x_grad; uint64_t seed; } ConvCase;

typedef struct ConvCtx { const ConvCase *c; Tensor *x; } ConvCtx;

static Tensor *build_conv(Tape *t, Tensor **l, void *ctx) {
    const ConvCtx *c = ctx;
    if (c->c->x_grad) return ad_causal_conv1d(t, gc_in(t, l[0]), gc_in(t, l[1]), gc_in(t, l[2]));
    return ad_causal_conv1d(t, c->x, gc_in(t, l[0]), gc_in(t, l[1]));
}

static int conv_cases(int *n_cases) {
    static const ConvCase cases[] = {
        { 2, 7, 5, 4, 1, 31 },    /* the reference's d_conv = 4 */
        { 3, 2, 9, 4, 1, 32 },    /* T < K: the taps before the sequence are zeros */
        { 2, 5, 17, 1, 1, 33 },   /* K = 1: a per-channel scale */
        { 1, 6, 8, 3, 0, 34 },    /* x without grad */
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const ConvCase *c = &cases[i];
        Tensor *x = gc_leaf(3, (const int[]){ c->B, c->T, c->E }, c->seed, -1.0f, 1.0f);
        Tensor *w = gc_leaf(3, (const int[]){ c->E, 1, c->K }, c->seed + 100, -0.6f, 0.6f);
        Tensor *b = gc_leaf(1, &c->E, c->seed + 200, -0.5f, 0.5f);
        Tensor *leaves[3] = { x, w, b };
        ConvCtx ctx = { c, x };
        if (!c->x_grad) {
            free(x->grad);
            x->grad = NULL;
        }
        char label[96];
        snprintf(label, sizeof label, "causal_conv1d B%d T%d E%d K%d%s", c->B, c->T, c->E, c->K,
                 c->x_grad ? "" : " (x no grad)");
        failed += grad_case_both(label, OP_CAUSAL_CONV1D, build_conv, &ctx, c->x_grad ? leaves : leaves + 1,
                                 c->x_grad ? 3 : 2, LIN_TOL, 1);
        (*n_cases)++;
        for (int l = 0; l < 3; l++) gc_leaf_free(leaves[l]);
    }
    return failed;
}

/* ---- selective_scan ---------------------------------------------------------------- */

typedef struct ScanCase { int B, T, E, N, gate, u_grad; uint64_t seed; } ScanCase;

typedef struct ScanCtx { const ScanCase *c; Tensor *u; } ScanCtx;

/* leaves: [u,] delta, A_log, B, C, D[, z] */
static Tensor *build_scan(Tape *t, Tensor **l, void *ctx) {
    const ScanCtx *s = ctx;
    Tensor *u = s->c->u_grad ? gc_in(t, *l++) : s->u;
    Tensor *in[6];
    for (int i = 0; i < 5 + s->c->gate; i++) in[i] = gc_in(t, l[i]);
    return ad_selective_scan(t, u, in[0], in[1], in[2], in[3], in[4], s->c->gate ? in[5] : NULL);
}

static int scan_cases(int *n_cases) {
    static const ScanCase cases[] = {
        { 2, 1, 5, 3, 1, 1, 41 },    /* one step: h_{−1} = 0 path only */
        { 2, 6, 5, 3, 1, 1, 42 },    /* reverse scan over 6 steps, gated */
        { 3, 4, 9, 4, 0, 1, 43 },    /* no gate */
        { 1, 5, 17, 2, 1, 1, 44 },   /* E past a vector width, odd */
        { 2, 3, 4, 16, 1, 0, 45 },   /* N = 16 (the default d_state), u without grad */
        /* The backward recomputes the states chunk by chunk (16 steps) from the
         * forward's checkpoints: one whole chunk, one step past it, and two chunks
         * plus a short one. */
        { 1, 16, 4, 2, 0, 1, 46 },
        { 2, 17, 4, 2, 1, 1, 47 },
        { 2, 35, 5, 3, 1, 1, 48 },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const ScanCase *c = &cases[i];
        const int bte[3] = { c->B, c->T, c->E }, btn[3] = { c->B, c->T, c->N }, en[2] = { c->E, c->N };
        Tensor *leaves[7] = {
            gc_leaf(3, bte, c->seed, -1.0f, 1.0f),          /* u */
            gc_leaf(3, bte, c->seed + 100, -2.0f, 2.0f),    /* delta (before softplus) */
            gc_leaf(2, en, c->seed + 200, -1.0f, 1.0f),     /* A_log */
            gc_leaf(3, btn, c->seed + 300, -1.0f, 1.0f),    /* B */
            gc_leaf(3, btn, c->seed + 400, -1.0f, 1.0f),    /* C */
            gc_leaf(1, &c->E, c->seed + 500, -1.0f, 1.0f),  /* D */
            gc_leaf(3, bte, c->seed + 600, -2.0f, 2.0f),    /* z */
        };
        ScanCtx ctx = { c, leaves[0] };
        if (!c->u_grad) {
            free(leaves[0]->grad);
            leaves[0]->grad = NULL;
        }
        char label[96];
        snprintf(label, sizeof label, "selective_scan B%d T%d E%d N%d%s%s", c->B, c->T, c->E, c->N,
                 c->gate ? " gated" : "", c->u_grad ? "" : " (u no grad)");
        int first = c->u_grad ? 0 : 1, n = 6 + c->gate - first;
        failed += grad_case_both(label, OP_SELECTIVE_SCAN, build_scan, &ctx, leaves + first, n, SCAN_TOL, 1);
        (*n_cases)++;
        for (int l = 0; l < 7; l++) gc_leaf_free(leaves[l]);
    }
    return failed;
}

int grad_cases_mamba(OpKind op, int *n_cases) {
    if (op == OP_RMSNORM) return rmsnorm_cases(n_cases);
    if (op == OP_COLUMNS) return columns_cases(n_cases);
    if (op == OP_CAUSAL_CONV1D) return conv_cases(n_cases);
    if (op == OP_SELECTIVE_SCAN) return scan_cases(n_cases);
    return 0;
}
