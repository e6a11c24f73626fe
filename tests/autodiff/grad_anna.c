/* grad_anna.c — gradient checks of ANNA (ad_anna_attention) with respect to v.
 *
 * Only v is a leaf: the op gives q and k no gradient by definition (the output
 * depends on them through hash codes, piecewise constant — a finite difference
 * would read 0 or a jump, never a slope), so they are fixed inputs here;
 * test_anna_grad.c checks that their gradients stay exactly 0.  Both LSH
 * families, causal and not, B·H > 1, Dv ≠ D, several tables, and a case with
 * many empty unions (z = 8 hyperplanes: most queries collide with nothing, their
 * output is 0 and nothing flows back through them) — the case asserts that some
 * queries are empty, so it keeps testing what it claims to.
 *
 * Tolerance: eps 2⁻⁶, atol 5e-5, rtol 1e-3, as for ad_attention.  The output is
 * linear in v, so the central difference has no truncation error; what is left is
 * rounding: |o| ≤ max|v| = 1.5, and one v element moves up to T·Dv outputs, giving
 * ~√(T·Dv)·0.3·ulp(1.5)/(2·eps) ≈ 1e-5 at T·Dv = 56. */
#include "attnlab/anna/anna.h"
#include "attnlab/anna/ops_anna.h"
#include "attnlab/util/error.h"
#include "grad_cases.h"

#include <stdio.h>
#include <stdlib.h>

static const GcTol ANNA_TOL = { 0x1p-6f, 5e-5f, 1e-3f, 2 };

typedef struct AnnaCase {
    int B, H, T, D, Dv;
    LshFamily family;
    int tables, funcs, causal;
    int min_empty;        /* the case is about empty unions: at least this many */
    uint64_t seed;
} AnnaCase;

typedef struct AnnaCtx {
    const AnnaCase *c;
    Tensor *q, *k;        /* fixed inputs, no gradient */
    Lsh lsh[4];           /* one per head */
} AnnaCtx;

static Tensor *build_anna(Tape *t, Tensor **x, void *ctx) {
    AnnaCtx *a = ctx;
    return ad_anna_attention(t, a->q, a->k, x[0], a->lsh, a->c->causal);
}

/* Queries whose union of buckets is empty, over the whole batch. */
static long empty_queries(const AnnaCtx *a, const Tensor *v) {
    const AnnaCase *c = a->c;
    float *out = al_malloc((size_t)v->n * sizeof(float));
    AnnaStats st;
    anna_attention_heads(a->lsh, a->q->data, a->k->data, v->data, c->B, c->H, c->T, c->D, c->Dv, c->causal,
                         out, NULL, &st);
    free(out);
    return (long)(st.empty_fraction * (double)st.queries + 0.5);
}

static int anna_cases(int *n_cases) {
    static const AnnaCase cases[] = {
        { 1, 1, 6, 4, 3, LSH_HYPERPLANE,    2, 1, 1, 0, 31 },
        { 1, 1, 6, 4, 3, LSH_HYPERPLANE,    2, 1, 0, 0, 32 },
        { 2, 2, 7, 4, 5, LSH_HYPERPLANE,    3, 2, 1, 0, 33 },   /* B·H > 1, Dv ≠ D */
        { 2, 2, 7, 4, 5, LSH_HYPERPLANE,    3, 2, 0, 0, 34 },
        { 2, 1, 8, 3, 2, LSH_CROSSPOLYTOPE, 2, 1, 1, 0, 35 },
        { 1, 2, 6, 3, 4, LSH_CROSSPOLYTOPE, 3, 1, 0, 0, 36 },
        { 1, 2, 8, 4, 3, LSH_HYPERPLANE,    2, 8, 1, 4, 37 },   /* mostly empty unions */
        { 1, 2, 8, 4, 3, LSH_HYPERPLANE,    2, 8, 0, 4, 38 },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const AnnaCase *c = &cases[i];
        AnnaCtx ctx = { .c = c };
        const int qshape[4] = { c->B, c->H, c->T, c->D };
        ctx.q = gc_leaf(4, qshape, c->seed, -1.5f, 1.5f);
        ctx.k = gc_leaf(4, qshape, c->seed + 100, -1.5f, 1.5f);
        Tensor *x[1] = { gc_leaf(4, (const int[]){ c->B, c->H, c->T, c->Dv }, c->seed + 200, -1.5f, 1.5f) };
        AlError err = { 0 };
        for (int h = 0; h < c->H; h++)
            if (lsh_init(&ctx.lsh[h], c->family, c->D, c->tables, c->funcs, lsh_head_seed(c->seed, 0, h), &err)) {
                fprintf(stderr, "  lsh_init: %s\n", err.msg);
                failed++;
            }
        /* Fixed inputs: their gradient buffers are dropped so only v is a leaf. */
        free(ctx.q->grad);
        free(ctx.k->grad);
        ctx.q->grad = ctx.k->grad = NULL;
        long empty = empty_queries(&ctx, x[0]);
        char label[128];
        snprintf(label, sizeof label, "anna_attention %s l%d z%d %s B%d H%d T%d D%d Dv%d (%ld empty)",
                 lsh_family_name(c->family), c->tables, c->funcs, c->causal ? "causal" : "bidir", c->B, c->H,
                 c->T, c->D, c->Dv, empty);
        if (empty < c->min_empty) {
            fprintf(stderr, "  %s: %ld empty queries, the case needs >= %d: fix the case\n", label, empty,
                    c->min_empty);
            failed++;
        }
        failed += grad_case(label, OP_ANNA_ATTENTION, build_anna, &ctx, x, 1, ANNA_TOL, 1);
        (*n_cases)++;
        for (int h = 0; h < c->H; h++) lsh_free(&ctx.lsh[h]);
        gc_leaf_free(ctx.q);
        gc_leaf_free(ctx.k);
        gc_leaf_free(x[0]);
    }
    return failed;
}

int grad_cases_anna(OpKind op, int *n_cases) {
    return op == OP_ANNA_ATTENTION ? anna_cases(n_cases) : 0;
}
