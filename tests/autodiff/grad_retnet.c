/* grad_retnet.c — gradient checks of RetNet's retention (ops_retnet.c).
 *
 * Cases: B > 1, H ∈ {1, 2, 3} (three decays), T ∈ {1, 2, 6, 9}, Dk ≠ Dv both ways,
 * Dk = 2 (one rotation pair, θ = 1) and Dk = 6; each with q, k, v all leaves, and
 * the first-writer variant (grad_case_both).  The score normalisation
 * max(|s_n|, 1) has two regimes: inputs in ±0.5 keep every |s_n| < 1 (the plain
 * D̃-weighted sum), inputs in ±2.5 put most rows above 1 (division by |s_n|, whose
 * gradient term g_n is then live).
 *
 * The normalisation has a kink at |s_n| = 1, where a central difference straddling
 * it measures neither side: every case checks first that no row's |s_n| lies
 * within KINK_MARGIN of 1 (s computed here in double from the definition), and
 * fails as a case otherwise.
 *
 * Tolerance: eps 2⁻⁶, atol 5e-5, rtol 1e-3, as for the attention ops
 * (grad_attention.c): the output is a bilinear form of q, k divided by a row sum,
 * smooth away from the kink, and rounding of the loss (~√(T·Dv)·ulp/(2·eps)) stays
 * near 1e-5.  Measured: ≤ 2.2e-6 with |s| < 1; with |s| > 1 up to 2.5e-4 on
 * gradients of order 1 (passing on rtol), 1.5e-4 at eps 2⁻⁹, where the rounding
 * of the larger scores (|q̃·k̃| up to ~15 at ±2.5) starts to dominate.  The ±2.5 cases' seeds keep every row ≥ 0.05 from
 * the kink (seeds 2 and 5 did not: 0.013 and 0.014). */
#include "grad_cases.h"

#include <math.h>
#include <stdio.h>

static const GcTol RET_TOL = { 0x1p-6f, 5e-5f, 1e-3f, 2 };
static const double KINK_MARGIN = 0.05;

typedef struct RetCase { int B, T, H, Dk, Dv; float range; uint64_t seed; } RetCase;

static Tensor *build_retention(Tape *t, Tensor **leaves, void *ctx) {
    const RetCase *c = ctx;
    return ad_retention(t, gc_in(t, leaves[0]), gc_in(t, leaves[1]), gc_in(t, leaves[2]), c->H);
}

/* min over rows of ||s_n| − 1|, s_n = Σ_{m≤n} q̃_n·k̃_m γ^(n−m) c_n, in double. */
static double kink_distance(const RetCase *c, const Tensor *q, const Tensor *k) {
    double worst = INFINITY;
    int ld = c->H * c->Dk;
    float qr[16], kr[16];
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->H; h++) {
            double g = ad_retention_decay(h);
            for (int n = 0; n < c->T; n++) {
                double s = 0;
                ad_retention_rotate(q->data + ((size_t)b * c->T + n) * ld + h * c->Dk, qr, c->Dk, n, 1.0f);
                for (int m = 0; m <= n; m++) {
                    ad_retention_rotate(k->data + ((size_t)b * c->T + m) * ld + h * c->Dk, kr, c->Dk, m,
                                        1.0f / sqrtf((float)c->Dk));
                    double dot = 0;
                    for (int a = 0; a < c->Dk; a++) dot += (double)qr[a] * kr[a];
                    s += dot * pow(g, n - m) * ad_retention_row_scale(g, n);
                }
                worst = fmin(worst, fabs(fabs(s) - 1.0));
            }
        }
    return worst;
}

static int retention_cases(int *n_cases) {
    static const RetCase cases[] = {
        { 2, 1, 2, 2, 3, 0.5f, 1 },    /* one position: only the diagonal, c_0 = 1 */
        { 2, 6, 2, 4, 4, 0.5f, 2 },    /* |s| < 1 everywhere */
        { 2, 6, 2, 4, 4, 2.5f, 12 },    /* |s| > 1: the division by |s| and its gradient */
        { 1, 9, 3, 6, 2, 2.5f, 4 },    /* three decays, Dk > Dv */
        { 3, 2, 1, 2, 5, 2.5f, 12 },    /* Dk < Dv, one head */
        { 2, 9, 3, 2, 4, 0.5f, 6 },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const RetCase *c = &cases[i];
        float r = c->range;
        Tensor *leaves[3] = {
            gc_leaf(3, (const int[]){ c->B, c->T, c->H * c->Dk }, c->seed, -r, r),
            gc_leaf(3, (const int[]){ c->B, c->T, c->H * c->Dk }, c->seed + 100, -r, r),
            gc_leaf(3, (const int[]){ c->B, c->T, c->H * c->Dv }, c->seed + 200, -1.5f, 1.5f),
        };
        char label[96];
        snprintf(label, sizeof label, "retention B%d T%d H%d Dk%d Dv%d ±%.1f", c->B, c->T, c->H, c->Dk, c->Dv,
                 (double)r);
        double dist = kink_distance(c, leaves[0], leaves[1]);
        if (dist < KINK_MARGIN) {
            printf("  FAIL %s: a row sum is %.3f from |s| = 1 (the kink); choose another seed\n", label, dist);
            failed++;
        } else {
            failed += grad_case_both(label, OP_RETENTION, build_retention, (void *)c, leaves, 3, RET_TOL, 1);
        }
        (*n_cases) += 2;
        for (int l = 0; l < 3; l++) gc_leaf_free(leaves[l]);
    }
    return failed;
}

int grad_cases_retnet(OpKind op, int *n_cases) {
    return op == OP_RETENTION ? retention_cases(n_cases) : 0;
}
