/* grad_dss.c — gradient checks of the DSS ops (ops_dss.c): the DSS-softmax kernel
 * from (Λ, log Δ, W) and the causal depthwise convolution.
 *
 * Kernel cases: modes with Re Λ < 0 and > 0 (the flipped softmax) in one Λ, several
 * channels, C = 2 and 3 kernels per channel (log Δ's gradient summed over them), T = 1 (only the normalisation carries a gradient), T < L and T = L;
 * Δ in [0.05, 0.6] and |Im Λ| ≤ 4 keep the phases Δ·Im Λ·l within a few radians,
 * so the central difference's truncation error (∝ (Δ·l)³·eps²) stays small.
 * Tolerance: eps 2⁻⁷, atol 1e-4, rtol 1e-3 — the kernel is computed in double and
 * rounded to float once, so L = Σ w·K carries ~√n·6e-8 of rounding, /2eps ≈ 2e-5.
 *
 * Convolution cases: B > 1, T ∈ {1, 5, 9}, with and without D, u without a grad, C = 2
 * and 3 kernels per channel (u's gradient summed over them).
 * It is bilinear in (u, K) and in (u, D): the central difference is exact up to
 * float rounding, so eps 2⁻⁴ and atol 1e-4, rtol 1e-3 as matmul's. */
#include "grad_cases.h"

#include <stdlib.h>

static const GcTol KERNEL_TOL = { 0x1p-7f, 1e-4f, 1e-3f, 2 };
static const GcTol CONV_TOL = { 0x1p-4f, 1e-4f, 1e-3f, 2 };

typedef struct KernelCase { int N, d, T, L; uint64_t seed; int C; } KernelCase;

static Tensor *build_kernel(Tape *t, Tensor **in, void *ctx) {
    const KernelCase *c = ctx;
    return ad_dss_kernel(t, gc_in(t, in[0]), gc_in(t, in[1]), gc_in(t, in[2]), c->T, c->L);
}

static int kernel_cases(int *n_cases) {
    static const KernelCase cases[] = {
        { 3, 2, 5, 8, 1, 1 },    /* T < L */
        { 4, 3, 6, 6, 2, 1 },    /* T = L */
        { 2, 2, 1, 4, 3, 1 },    /* one position */
        { 5, 2, 7, 9, 4, 1 },
        { 10, 2, 6, 8, 6, 1 },   /* modes run in blocks of 8: a whole block and a part */
        { 3, 2, 5, 8, 7, 2 }, /* two kernels per channel */
        { 9, 3, 4, 6, 10, 3 }, /* three, and a block and a part */
    };
    int failed = 0;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const KernelCase *c = &cases[k];
        const int C = c->C;
        Tensor *lambda = gc_leaf(2, (const int[]){ c->N, 2 }, c->seed, -1.5f, 1.5f);
        Tensor *log_dt = gc_leaf(2, (const int[]){ c->d, 2 }, c->seed + 100, -3.0f, -0.5f);
        Tensor *w = gc_leaf(4, (const int[]){ C, c->d, c->N, 2 }, c->seed + 200, -1.0f, 1.0f);
        for (int n = 0; n < c->N; n++) {
            /* Re Λ alternates sign and stays off 0 (where the flip switches);
             * Im Λ spreads over ±4. */
            float re = lambda->data[2 * n];
            lambda->data[2 * n] = (n % 2 ? 1.0f : -1.0f) * (0.2f + (re < 0 ? -re : re));
            lambda->data[2 * n + 1] *= 2.5f;
        }
        Tensor *leaves[3] = { lambda, log_dt, w };
        char label[96];
        snprintf(label, sizeof label, "dss_kernel N%d d%d C%d T%d L%d", c->N, c->d, C, c->T, c->L);
        failed += grad_case_both(label, OP_DSS_KERNEL, build_kernel, (void *)c, leaves, 3, KERNEL_TOL, 1);
        (*n_cases)++;
        for (int i = 0; i < 3; i++) gc_leaf_free(leaves[i]);
    }
    return failed;
}

typedef struct ConvCase {
    int B, T, d;
    int with_d, u_grad;
    uint64_t seed;
    Tensor *u;   /* the data u when !u_grad */
    int C;       /* kernels per channel */
    int extra;   /* kernel rows past T (unread; their gradient must be 0) */
} ConvCase;

static Tensor *build_conv(Tape *t, Tensor **in, void *ctx) {
    const ConvCase *c = ctx;
    Tensor *u = c->u_grad ? gc_in(t, *in++) : c->u;
    Tensor *k = gc_in(t, in[0]);
    return ad_causal_conv(t, u, k, c->with_d ? gc_in(t, in[1]) : NULL);
}

static int conv_cases(int *n_cases) {
    ConvCase cases[] = {
        { 2, 5, 3, 1, 1, 11, NULL, 1, 0 },
        { 3, 9, 4, 1, 1, 12, NULL, 1, 0 },
        { 2, 1, 3, 1, 1, 13, NULL, 1, 0 },   /* one position: only the s = 0 tap */
        { 2, 6, 5, 0, 1, 14, NULL, 1, 0 },   /* no D */
        { 2, 6, 3, 1, 0, 15, NULL, 1, 0 },   /* u without a grad */
        { 2, 5, 3, 1, 1, 16, NULL, 2, 0 },   /* two kernels per channel */
        { 2, 4, 2, 0, 1, 17, NULL, 3, 0 },   /* three, no D */
        { 2, 5, 3, 1, 1, 18, NULL, 2, 3 },   /* a kernel 3 rows longer than the sequence */
        /* The register tiles (8 positions × 16 features, from 16 positions on;
         * ops_dss.c): whole tiles, features past the last whole 16 and positions
         * past the last whole tile, which the plain loops take. */
        { 2, 19, 20, 1, 1, 19, NULL, 2, 0 },
        { 1, 16, 16, 0, 1, 20, NULL, 1, 2 },   /* exactly two tiles, no D, kernel longer */
        { 2, 17, 17, 1, 0, 21, NULL, 1, 0 },   /* u without a grad */
    };
    int failed = 0;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        ConvCase *c = &cases[k];
        const int cols = c->C * c->d;
        Tensor *u = gc_leaf(3, (const int[]){ c->B, c->T, c->d }, c->seed, -1.0f, 1.0f);
        Tensor *kern = gc_leaf(2, (const int[]){ c->T + c->extra, cols }, c->seed + 100, -1.0f, 1.0f);
        Tensor *D = gc_leaf(1, &cols, c->seed + 200, -1.0f, 1.0f);
        Tensor *leaves[3] = { u, kern, D };
        c->u = u;
        if (!c->u_grad) {
            free(u->grad);
            u->grad = NULL;
        }
        char label[96];
        snprintf(label, sizeof label, "causal_conv B%d T%d d%d C%d%s%s%s", c->B, c->T, c->d, cols / c->d,
                 c->with_d ? "" : " (no D)",
                 c->u_grad ? "" : " (u no grad)", c->extra ? " (kernel longer)" : "");
        Tensor **first = c->u_grad ? leaves : leaves + 1;
        int n = (c->u_grad ? 3 : 2) - !c->with_d;
        failed += grad_case_both(label, OP_CAUSAL_CONV, build_conv, c, first, n, CONV_TOL, 1);
        (*n_cases)++;
        for (int i = 0; i < 3; i++) gc_leaf_free(leaves[i]);
    }
    return failed;
}

int grad_cases_dss(OpKind op, int *n_cases) {
    if (op == OP_DSS_KERNEL) return kernel_cases(n_cases);
    if (op == OP_CAUSAL_CONV) return conv_cases(n_cases);
    return 0;
}
