/* grad_gather.c — gradient checks of embedding, reshape, split_heads, merge_heads.
 *
 * Tolerance (all four): eps 1e-2, atol 1e-5, rtol 1e-4.  These ops only copy or
 * add values, so each output is exactly linear in the inputs: no truncation error,
 * and the perturbed output equals the perturbed input bit for bit.  What remains
 * is rounding of keep ± eps and of the double sum L, ~1e-6 on gradients of size
 * ~1; the margin over that is still ~10x and far below the planted 5 % fault. */
#include "grad_cases.h"

#include <stdio.h>

static const GcTol GATHER_TOL = { 1e-2f, 1e-5f, 1e-4f, 2 };

/* The reshape → matmul case takes matmul's tolerance (see grad_linalg.c): there
 * the float32 GEMM's rounding, not the view, sets the error. */
static const GcTol RESHAPE_MATMUL_TOL = { 1e-2f, 1e-4f, 1e-3f, 2 };

/* ------------------------------------------------------------------------------ */

typedef struct EmbeddingCase {
    int V, D;
    int ids_ndim, ids_shape[3];
    int ids[12];
    uint64_t seed;
} EmbeddingCase;

static Tensor *build_embedding(Tape *t, Tensor **x, void *ctx) {
    const EmbeddingCase *c = ctx;
    return ad_embedding(t, x[0], c->ids, c->ids_ndim, c->ids_shape);
}

static int embedding_cases(int *n_cases) {
    /* Repeated ids check the scatter-add; ids that never occur (rows 1, 5 in the
     * first case) check that their rows get exactly zero. */
    static const EmbeddingCase cases[] = {
        { 7, 5, 1, {9},       {3, 0, 3, 6, 2, 3, 4, 0, 6}, 31 },
        { 4, 3, 2, {2, 4},    {1, 1, 0, 3, 2, 1, 3, 3}, 32 },
        { 5, 2, 3, {2, 2, 3}, {4, 0, 0, 1, 4, 4, 2, 3, 0, 1, 2, 4}, 33 },
        { 3, 1, 1, {2},       {2, 2}, 34 },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const EmbeddingCase *c = &cases[i];
        Tensor *table = gc_leaf(2, (const int[]){ c->V, c->D }, c->seed, -1.0f, 1.0f);
        char label[96];
        snprintf(label, sizeof label, "embedding table(%d,%d) ids %dd", c->V, c->D, c->ids_ndim);
        failed += grad_case(label, OP_EMBEDDING, build_embedding, (void *)c, &table, 1, GATHER_TOL, 1);
        (*n_cases)++;
        gc_leaf_free(table);
    }
    return failed;
}

/* ------------------------------------------------------------------------------ */
/* reshape records no tape entry (the view shares x's grad), so there is no reshape
 * backward to plant a fault in: these cases run the normal check only.  Each feeds
 * the view into another op, so a wrong view (shape, data or grad pointer) shows up
 * as a wrong gradient of x. */

static Tensor *build_reshape_merge(Tape *t, Tensor **x, void *ctx) {
    (void)ctx; /* x (2, 12) viewed as (1, 2, 3, 4): merge_heads permutes the view's rows */
    return ad_merge_heads(t, ad_reshape(t, x[0], 4, (const int[]){ 1, 2, 3, 4 }));
}

static Tensor *build_reshape_twice(Tape *t, Tensor **x, void *ctx) {
    (void)ctx; /* x (3, 4): view of a view, then split_heads on the (2, 3, 2) shape */
    Tensor *v = ad_reshape(t, x[0], 1, (const int[]){ 12 });
    return ad_split_heads(t, ad_reshape(t, v, 3, (const int[]){ 2, 3, 2 }), 2);
}

static Tensor *build_reshape_shared(Tape *t, Tensor **x, void *ctx) {
    (void)ctx; /* x (3, 4) and its (4, 3) view both feed one matmul: the two paths'
                * gradients must add up in x's grad */
    return ad_matmul(t, x[0], ad_reshape(t, x[0], 2, (const int[]){ 4, 3 }), 0, 0);
}

static int reshape_cases(int *n_cases) {
    int failed = 0;
    Tensor *x = gc_leaf(2, (const int[]){ 2, 12 }, 41, -1.0f, 1.0f);
    failed += grad_case("reshape (2,12)->(1,2,3,4) -> merge_heads", OP_RESHAPE,
                        build_reshape_merge, NULL, &x, 1, GATHER_TOL, 0);
    gc_leaf_free(x);
    x = gc_leaf(2, (const int[]){ 3, 4 }, 42, -1.0f, 1.0f);
    failed += grad_case("reshape (3,4)->(12)->(2,3,2) -> split", OP_RESHAPE,
                        build_reshape_twice, NULL, &x, 1, GATHER_TOL, 0);
    gc_leaf_free(x);
    x = gc_leaf(2, (const int[]){ 3, 4 }, 43, -1.0f, 1.0f);
    failed += grad_case("reshape x(3,4) · view(4,3) -> matmul", OP_RESHAPE,
                        build_reshape_shared, NULL, &x, 1, RESHAPE_MATMUL_TOL, 0);
    gc_leaf_free(x);
    *n_cases += 3;
    return failed;
}

/* ------------------------------------------------------------------------------ */

typedef struct HeadsCase {
    int ndim, shape[4];
    int n_heads;            /* split only */
    uint64_t seed;
} HeadsCase;

static Tensor *build_split(Tape *t, Tensor **x, void *ctx) {
    return ad_split_heads(t, x[0], ((const HeadsCase *)ctx)->n_heads);
}

static Tensor *build_merge(Tape *t, Tensor **x, void *ctx) {
    (void)ctx;
    return ad_merge_heads(t, x[0]);
}

static int heads_cases(OpKind op, int *n_cases) {
    static const HeadsCase split[] = {
        { 3, {2, 3, 8}, 2, 51 },
        { 3, {1, 4, 6}, 3, 52 },
        { 3, {2, 5, 4}, 4, 53 },   /* D = 1 */
        { 3, {2, 3, 5}, 1, 54 },   /* H = 1: a copy */
    };
    static const HeadsCase merge[] = {
        { 4, {2, 2, 3, 4}, 0, 55 },
        { 4, {1, 3, 5, 2}, 0, 56 },
        { 4, {3, 4, 2, 1}, 0, 57 },
    };
    const HeadsCase *cases = op == OP_SPLIT_HEADS ? split : merge;
    int n = op == OP_SPLIT_HEADS ? (int)(sizeof split / sizeof split[0])
                                 : (int)(sizeof merge / sizeof merge[0]);
    GcBuildFn build = op == OP_SPLIT_HEADS ? build_split : build_merge;
    int failed = 0;
    for (int i = 0; i < n; i++) {
        const HeadsCase *c = &cases[i];
        Tensor *x = gc_leaf(c->ndim, c->shape, c->seed, -1.0f, 1.0f);
        char label[96], sx[32];
        snprintf(label, sizeof label, "%s x%s H=%d", op_name(op),
                 tensor_shape_str(x, sx, sizeof sx), op == OP_SPLIT_HEADS ? c->n_heads : c->shape[1]);
        failed += grad_case(label, op, build, (void *)c, &x, 1, GATHER_TOL, 1);
        (*n_cases)++;
        gc_leaf_free(x);
    }
    return failed;
}

int grad_cases_gather(OpKind op, int *n_cases) {
    switch (op) {
    case OP_EMBEDDING:   return embedding_cases(n_cases);
    case OP_RESHAPE:     return reshape_cases(n_cases);
    case OP_SPLIT_HEADS:
    case OP_MERGE_HEADS: return heads_cases(op, n_cases);
    default:             return 0;
    }
}
