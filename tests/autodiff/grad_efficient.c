/* grad_efficient.c — gradient checks of linear and sparse attention (paper 004).
 *
 * Linear attention: every feature map, causal and bidirectional, B·H > 1, D ≠ Dv,
 * and eps = 0.25 cases so the eps term is exercised (at 1e-6 a mistake in it would
 * be invisible).
 * Sparse attention: several (block, k_local, c), including c = 0 (window only),
 * c = block (every key a summary: full causal), block not dividing T, T < block,
 * and k_local = 0, where the first queries see nothing (zero output and gradients).
 *
 * Tolerance (both ops): eps 2⁻⁶, atol 5e-5, rtol 1e-3, as for ad_attention (see
 * grad_attention.c for the rounding/truncation balance).  The outputs are weighted
 * means of v rows (softmax weights, or φ(q)·φ(k) ≥ 0 over their sum), so |o| ≤
 * max|v| = 1.5 and rounding contributes ~√(T·Dv)·0.3·ulp(1.5)/(2·eps) ≈ 1e-5.
 * Observed: sparse ≤ 2.6e-5, linear elu+1 ≤ 3.4e-5, relu ≤ 5.4e-5 (passing on
 * rtol: those gradients are O(1)), identity ≤ 3.9e-4 on gradients of ~0.5–3.
 *
 * Linear attention needs its inputs chosen, because o = num/den is only as smooth
 * as den is far from 0 on the scale of the step; the truncation error grows like
 * (eps·|∂den/∂x|/den)² (den_sensitivity below):
 *   - q, k are moved ≥ `MARGIN` away from 0: relu has a kink there and elu+1 a jump
 *     in its second derivative, which a straddling central difference mismeasures;
 *     for relu the margin is 0.5 because a positive φ(q)_a as small as 0.1 gives
 *     |∂den/∂q_a|/den up to 10 — measured: 5.6e-3 errors, falling 4× per halving
 *     of eps, i.e. truncation, not a wrong gradient;
 *   - the identity map's den = q·Σk can cross 0 (it did, −0.4, with q and k in
 *     ±1.5), so k > 0.2 and q ≥ −0.25, the positive-score regime of paper 002;
 *   - every case must have den_sensitivity ≤ MAX_SENS (3; the cases here are
 *     0.5–2.5), checked and reported as a failure of the case otherwise. */
#include "grad_cases.h"

#include <math.h>
#include <stdio.h>

static const GcTol EFF_TOL = { 0x1p-6f, 5e-5f, 1e-3f, 2 };
/* Largest den_sensitivity() a linear-attention case may have (see there). */
static const double MAX_SENS = 3.0;

/* Moves every value of x at least `margin` away from 0, keeping its sign. */
static void away_from_zero(Tensor *x, float margin) {
    for (long i = 0; i < x->n; i++)
        if (fabsf(x->data[i]) < margin) x->data[i] += x->data[i] < 0.0f ? -margin : margin;
}

/* ------------------------------------------------------------------------------ */

static double phi_ref(AdFeature phi, double x) {
    return phi == FEATURE_ELU1 ? (x > 0 ? x + 1 : exp(x)) : phi == FEATURE_RELU ? fmax(x, 0) : x;
}

typedef struct LinCase {
    int B, H, T, D, Dv;
    AdFeature phi;
    int causal;
    float eps;
    uint64_t seed;
} LinCase;

/* How much one step of the finite difference moves a denominator, relatively:
 * max over rows of |∂den_i/∂x|/den_i = max(z_i,a, φ(q_i)_a)/den_i.  The truncation
 * error of the central difference grows with (eps times this)², so the cases keep
 * it small; rows with den = eps exactly (relu: nothing visible) are skipped, their
 * output is 0 and stays 0 under the step. */
static double den_sensitivity(const LinCase *c, Tensor *const *x) {
    double worst = 0;
    for (int bh = 0; bh < c->B * c->H; bh++)
        for (int i = 0; i < c->T; i++) {
            const float *q = x[0]->data + ((long)bh * c->T + i) * c->D;
            double den = c->eps, zmax = 0, fmx = 0;
            for (int a = 0; a < c->D; a++) {
                double z = 0;
                for (int j = 0; j < (c->causal ? i + 1 : c->T); j++)
                    z += phi_ref(c->phi, x[1]->data[((long)bh * c->T + j) * c->D + a]);
                double f = phi_ref(c->phi, q[a]);
                den += f * z;
                if (f != 0) zmax = fmax(zmax, fabs(z));
                fmx = fmax(fmx, fabs(f));
            }
            if (den > 2 * c->eps) worst = fmax(worst, fmax(zmax, fmx) / den);
        }
    return worst;
}

static Tensor *build_linear(Tape *t, Tensor **x, void *ctx) {
    const LinCase *c = ctx;
    return ad_linear_attention(t, x[0], x[1], x[2], c->phi, c->causal, c->eps);
}

static int linear_cases(int *n_cases) {
    static const LinCase cases[] = {
        { 1, 1, 5, 3, 3, FEATURE_ELU1,     1, 1e-6f, 11 },
        { 2, 2, 6, 3, 4, FEATURE_ELU1,     1, 1e-6f, 12 },   /* B·H > 1, D ≠ Dv */
        { 2, 2, 5, 4, 2, FEATURE_ELU1,     0, 1e-6f, 13 },   /* bidirectional */
        { 1, 2, 6, 3, 2, FEATURE_ELU1,     1, 0.25f, 14 },   /* eps that matters */
        { 1, 2, 6, 3, 2, FEATURE_ELU1,     0, 0.25f, 15 },
        { 2, 1, 6, 4, 3, FEATURE_IDENTITY, 1, 1e-6f, 16 },
        { 2, 1, 6, 4, 3, FEATURE_IDENTITY, 0, 1e-6f, 41 },
        { 2, 2, 6, 4, 3, FEATURE_RELU,     1, 1e-6f, 18 },
        { 1, 2, 7, 3, 5, FEATURE_RELU,     0, 1e-6f, 19 },
        { 1, 1, 70, 2, 2, FEATURE_ELU1,    1, 1e-6f, 20 },   /* three chunks, the last partial */
    };
    static const char *const PHI[] = { "elu+1", "identity", "relu" };
    /* q and k ranges per feature map (see the top of the file). */
    static const float RANGE[3][4] = {
        { -1.5f, 1.5f, -1.5f, 1.5f }, { -0.25f, 1.5f, 0.2f, 1.5f }, { -1.5f, 1.5f, -1.5f, 1.5f },
    };
    static const float MARGIN[3] = { 0.1f, 0.1f, 0.5f };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const LinCase *c = &cases[i];
        const float *r = RANGE[c->phi];
        Tensor *x[3] = {
            gc_leaf(4, (const int[]){ c->B, c->H, c->T, c->D }, c->seed, r[0], r[1]),
            gc_leaf(4, (const int[]){ c->B, c->H, c->T, c->D }, c->seed + 100, r[2], r[3]),
            gc_leaf(4, (const int[]){ c->B, c->H, c->T, c->Dv }, c->seed + 200, -1.5f, 1.5f),
        };
        away_from_zero(x[0], MARGIN[c->phi]);
        away_from_zero(x[1], MARGIN[c->phi]);
        const double sens = den_sensitivity(c, x);
        char label[128];
        snprintf(label, sizeof label, "linear_attention %s %s B%d H%d T%d D%d Dv%d eps %g sens %.2f",
                 PHI[c->phi], c->causal ? "causal" : "bidir", c->B, c->H, c->T, c->D, c->Dv,
                 (double)c->eps, sens);
        if (sens > MAX_SENS) {
            fprintf(stderr, "  %s: denominator sensitivity %.2f > %.1f, the inputs make the "
                            "finite difference meaningless: fix the case\n", label, sens, MAX_SENS);
            failed++;
        }
        failed += grad_case(label, OP_LINEAR_ATTENTION, build_linear, (void *)c, x, 3, EFF_TOL, 1);
        (*n_cases)++;
        for (int l = 0; l < 3; l++) gc_leaf_free(x[l]);
    }
    return failed;
}

/* ------------------------------------------------------------------------------ */

typedef struct SparseCase {
    int B, H, T, D, Dv, block, k_local, c;
    uint64_t seed;
} SparseCase;

static Tensor *build_sparse(Tape *t, Tensor **x, void *ctx) {
    const SparseCase *c = ctx;
    return ad_sparse_attention(t, x[0], x[1], x[2], c->block, c->k_local, c->c,
                               1.0f / sqrtf((float)c->D));
}

static int sparse_cases(int *n_cases) {
    static const SparseCase cases[] = {
        { 1, 1,  8, 3, 3, 4, 1, 1, 21 },   /* the defaults' shape: window B, one summary */
        { 2, 2,  9, 4, 4, 4, 1, 1, 22 },   /* block does not divide T, B·H > 1 */
        { 1, 2,  7, 3, 3, 2, 1, 0, 23 },   /* c = 0: window only */
        { 2, 1, 10, 3, 2, 3, 2, 2, 24 },   /* k_local 2, c 2, Dv ≠ D */
        { 1, 2,  3, 4, 4, 4, 1, 1, 25 },   /* T < block: plain causal */
        { 1, 1,  8, 3, 3, 4, 0, 1, 26 },   /* k_local 0: queries 0–2 see nothing */
        { 1, 1,  6, 3, 3, 2, 1, 2, 27 },   /* c = block: every key visible */
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const SparseCase *c = &cases[i];
        Tensor *x[3] = {
            gc_leaf(4, (const int[]){ c->B, c->H, c->T, c->D }, c->seed, -1.5f, 1.5f),
            gc_leaf(4, (const int[]){ c->B, c->H, c->T, c->D }, c->seed + 100, -1.5f, 1.5f),
            gc_leaf(4, (const int[]){ c->B, c->H, c->T, c->Dv }, c->seed + 200, -1.5f, 1.5f),
        };
        char label[96];
        snprintf(label, sizeof label, "sparse_attention B%d H%d T%d D%d Dv%d blk%d k%d c%d",
                 c->B, c->H, c->T, c->D, c->Dv, c->block, c->k_local, c->c);
        failed += grad_case(label, OP_SPARSE_ATTENTION, build_sparse, (void *)c, x, 3, EFF_TOL, 1);
        (*n_cases)++;
        for (int l = 0; l < 3; l++) gc_leaf_free(x[l]);
    }
    return failed;
}

int grad_cases_efficient(OpKind op, int *n_cases) {
    if (op == OP_LINEAR_ATTENTION) return linear_cases(n_cases);
    if (op == OP_SPARSE_ATTENTION) return sparse_cases(n_cases);
    return 0;
}
