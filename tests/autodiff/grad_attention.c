/* grad_attention.c — gradient checks of the fused attention ops: ad_attention on
 * split heads with a mask, and ad_attention_heads on heads read in place (causal or
 * not; dot scores, or unit-norm scores through ad_l2norm on (…, D) rows).
 *
 * Tolerance: eps 2⁻⁶, atol 5e-5, rtol 1e-3.  |o| ≤ max|v| = 1.5, so ulp(o) ≤
 * 1.2e-7; perturbing one q element moves Dv outputs, one k or v element up to
 * Tq·Dv of them, each off by ≤ ½ulp, weighted by |w| ≤ 1 and divided by 2·eps:
 * with random signs ~√(Tq·Dv)·0.3·ulp/(2·eps) ≈ 6e-6 for the largest case here
 * (5·5).  Truncation: |f‴|·eps²/6 = 4e-5·|f‴|, and f‴ is O(scale³·|k|³·|v|) < 1
 * for these inputs.  eps 2⁻⁶ is where the two balance (observed max 1.9e-5;
 * 2⁻⁹ gives 1e-4, 2⁻⁵ 7.6e-5). */
#include "grad_cases.h"

#include <math.h>
#include <stdio.h>

static const GcTol ATTN_TOL = { 0x1p-6f, 5e-5f, 1e-3f, 2 };

typedef enum MaskKind { MASK_NONE, MASK_CAUSAL, MASK_CUSTOM } MaskKind;

typedef struct AttnCase {
    int B, H, Tq, Tk, D, Dv;
    MaskKind mask;
    uint64_t seed;
} AttnCase;

typedef struct AttnCtx {
    const AttnCase *c;
    Tensor mask;      /* data NULL when c->mask is MASK_NONE */
} AttnCtx;

static Tensor *build_attention(Tape *t, Tensor **x, void *ctx) {
    const AttnCtx *a = ctx;
    return ad_attention(t, x[0], x[1], x[2], a->mask.data ? &a->mask : NULL,
                        1.0f / sqrtf((float)a->c->D));
}

/* A finite additive bias everywhere, −inf on a few entries, and row 1 entirely −inf:
 * that query attends to nothing, so its output and every gradient through it are 0. */
static void custom_mask(float *m, int Tq, int Tk) {
    for (int i = 0; i < Tq; i++)
        for (int j = 0; j < Tk; j++)
            m[i * Tk + j] = i == 1 || (i + 2 * j) % 5 == 3 ? -INFINITY : 0.1f * (float)((i + j) % 4) - 0.2f;
}

static int attention_cases(int *n_cases) {
    static const AttnCase cases[] = {
        { 1, 1, 4, 4, 3, 3, MASK_NONE,   1 },
        { 1, 1, 4, 4, 3, 3, MASK_CAUSAL, 2 },
        { 2, 2, 5, 5, 4, 4, MASK_CAUSAL, 3 },   /* B > 1, H > 1 */
        { 2, 2, 5, 5, 4, 4, MASK_NONE,   4 },
        { 1, 3, 3, 6, 4, 4, MASK_NONE,   5 },   /* Tq < Tk */
        { 1, 3, 3, 6, 4, 4, MASK_CAUSAL, 6 },
        { 2, 1, 6, 4, 2, 2, MASK_CAUSAL, 7 },   /* Tq > Tk */
        { 1, 2, 4, 5, 3, 3, MASK_CUSTOM, 8 },   /* a fully masked row */
        { 2, 2, 3, 4, 3, 5, MASK_CAUSAL, 9 },   /* Dv ≠ D */
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const AttnCase *c = &cases[i];
        Tensor *x[3] = {
            gc_leaf(4, (const int[]){ c->B, c->H, c->Tq, c->D }, c->seed, -1.5f, 1.5f),
            gc_leaf(4, (const int[]){ c->B, c->H, c->Tk, c->D }, c->seed + 100, -1.5f, 1.5f),
            gc_leaf(4, (const int[]){ c->B, c->H, c->Tk, c->Dv }, c->seed + 200, -1.5f, 1.5f),
        };
        float mask_data[6 * 6];
        AttnCtx ctx = { .c = c };
        if (c->mask != MASK_NONE) {
            tensor_init(&ctx.mask, mask_data, NULL, 2, (const int[]){ c->Tq, c->Tk });
            if (c->mask == MASK_CAUSAL) ad_causal_mask(&ctx.mask);
            else custom_mask(mask_data, c->Tq, c->Tk);
        }
        static const char *const MASK_NAME[] = { "no mask", "causal", "custom mask" };
        char label[96];
        snprintf(label, sizeof label, "attention B%d H%d Tq%d Tk%d D%d Dv%d %s", c->B, c->H,
                 c->Tq, c->Tk, c->D, c->Dv, MASK_NAME[c->mask]);
        failed += grad_case(label, OP_ATTENTION, build_attention, &ctx, x, 3, ATTN_TOL, 1);
        (*n_cases)++;
        for (int l = 0; l < 3; l++) gc_leaf_free(x[l]);
    }
    return failed;
}

/* ---- ad_attention_heads ----------------------------------------------------------- */

typedef struct HeadsCase {
    int B, H, Tq, Tk, D, Dv;
    int causal, unit_norm;
    uint64_t seed;
} HeadsCase;

/* x (B, T, H·D) with each head's D-slice of each row scaled to unit norm. */
static Tensor *unit_norm_heads(Tape *t, Tensor *x, int D) {
    Tensor *rows = ad_reshape(t, x, 2, (const int[]){ (int)(x->n / D), D });
    return ad_reshape(t, ad_l2norm(t, rows, 1e-12f), 3, x->shape);
}

/* Unit-norm cases: atol 1e-4, rtol 1e-3 as l2norm's own (grad_norm.c), with the
 * fourth-order difference at eps 2⁻⁷.  x/‖x‖ curves like 1/‖x‖³ and β = 2.5 scales
 * the scores, so the central difference had no eps that fits: truncation on rows of
 * small norm (D = 3 in ±1.5) reached 2.7e-3 at 2⁻⁸ and 4e-2 at 2⁻⁶, while float
 * rounding, ~√(Tq·Dv)·0.3·ulp/(2·eps) for the 37-row case, is 1e-4 at 2⁻⁹ (1.5e-4
 * measured on one CPU's BLAS, 0.6e-4 on another's).  The fourth-order stencil cuts
 * truncation to eps⁴·f⁽⁵⁾/30, so eps can grow 4× and rounding shrinks as much: the
 * worst case measured uses 27% of the tolerance (45–49% at 2⁻⁸, 73% at 2⁻⁶). */
static const GcTol UNIT_TOL = { 0x1p-7f, 1e-4f, 1e-3f, 4 };

static Tensor *build_heads(Tape *t, Tensor **x, void *ctx) {
    const HeadsCase *c = ctx;
    if (!c->unit_norm) return ad_attention_heads(t, x[0], x[1], x[2], c->H, c->causal, 1.0f / sqrtf((float)c->D));
    return ad_attention_heads(t, unit_norm_heads(t, x[0], c->D), unit_norm_heads(t, x[1], c->D), x[2], c->H,
                              c->causal, 2.5f);
}

static int heads_cases(int *n_cases) {
    static const HeadsCase cases[] = {
        { 1, 1, 4, 4, 3, 3, 0, 0, 21 },
        { 1, 1, 4, 4, 3, 3, 1, 0, 22 },
        { 2, 2, 5, 5, 3, 2, 1, 0, 23 },    /* B > 1, H > 1, Dv ≠ D, D not a power of two */
        { 2, 2, 5, 5, 3, 3, 0, 1, 24 },    /* unit-norm scores */
        { 2, 2, 5, 5, 3, 3, 1, 1, 25 },
        { 1, 3, 3, 6, 4, 4, 0, 0, 26 },    /* Tq < Tk */
        { 1, 3, 3, 6, 4, 4, 1, 1, 27 },
        { 2, 1, 6, 4, 2, 2, 1, 0, 28 },    /* Tq > Tk: rows past Tk see every key */
        { 1, 2, 37, 37, 3, 2, 1, 0, 29 },  /* two row blocks, the last one partial */
        { 1, 2, 37, 37, 3, 3, 0, 1, 30 },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const HeadsCase *c = &cases[i];
        Tensor *x[3] = {
            gc_leaf(3, (const int[]){ c->B, c->Tq, c->H * c->D }, c->seed, -1.5f, 1.5f),
            gc_leaf(3, (const int[]){ c->B, c->Tk, c->H * c->D }, c->seed + 100, -1.5f, 1.5f),
            gc_leaf(3, (const int[]){ c->B, c->Tk, c->H * c->Dv }, c->seed + 200, -1.5f, 1.5f),
        };
        char label[96];
        snprintf(label, sizeof label, "attention_heads B%d H%d Tq%d Tk%d D%d Dv%d %s %s", c->B, c->H, c->Tq,
                 c->Tk, c->D, c->Dv, c->causal ? "causal" : "bidir", c->unit_norm ? "unit-norm" : "dot");
        failed += grad_case(label, OP_ATTENTION_HEADS, build_heads, (void *)c, x, 3,
                            c->unit_norm ? UNIT_TOL : ATTN_TOL, 1);
        (*n_cases)++;
        for (int l = 0; l < 3; l++) gc_leaf_free(x[l]);
    }
    return failed;
}

int grad_cases_attention(OpKind op, int *n_cases) {
    if (op == OP_ATTENTION) return attention_cases(n_cases);
    return op == OP_ATTENTION_HEADS ? heads_cases(n_cases) : 0;
}
