/* test_anna_grad.c — ANNA's backward (ad_anna_attention) against a dense reference,
 * and ANNA inside a model.
 *
 * 1. Dense reference.  From the codes and counts anna_attention_keep returns, the
 *    weight matrix is written out in double, O(T²·ℓ):
 *      W_ij = #{t : code_t(q_i) = code_t(k_j)} / c_i   (j ≤ i when causal; row 0 if c_i = 0),
 *      c_i  = Σ_j #{t : …},
 *    so y = W·v and ∂L/∂v = Wᵀ·dy.  The op must match both (forward: the codes
 *    mean what the bucket sums did; backward: the transpose of that matrix); the
 *    kept counts must equal the recomputed c_i; q and k must get exactly zero
 *    gradient; the backward must add into v's gradient, not overwrite it; and the
 *    op's output must equal anna_attention_heads bit for bit, with and without
 *    gradients.  Both families, causal and not, several (B, H, T, D, Dv, ℓ, z),
 *    including many empty unions.  Tolerance 1e-5 absolute (float bucket sums
 *    against double, values and dy in [−1, 1], at most a few dozen terms).
 * 2. A tiny transformer with ANNA in its layer 0: every parameter that is not
 *    upstream of the hashed queries and keys (v, o, MLP, norms after attention,
 *    head) gets its cross-entropy gradient checked by central differences — those
 *    parameters move the loss smoothly.  The distilled layer's Q and K weights get
 *    exactly zero gradient.  (The embeddings and LN1 also feed q and k, so a finite
 *    step can move a token to another bucket: no finite-difference check there.) */
#include "attnlab/config/config.h"
#include "attnlab/anna/anna.h"
#include "attnlab/anna/lsh.h"
#include "attnlab/anna/ops_anna.h"
#include "attnlab/nn/model.h"
#include "check.h"
#include "gradcheck.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#define REF_TOL 1e-5

typedef struct RefCase {
    int B, H, T, D, Dv;
    LshFamily family;
    int tables, funcs, causal;
    uint64_t seed;
} RefCase;

static int all_zero(const float *x, long n) {
    for (long i = 0; i < n; i++)
        if (x[i] != 0.0f) return 0;
    return 1;
}

/* W (T × T, double) of one head from its kept codes; checks the kept counts. */
static void dense_weights(const Lsh *lsh, const uint64_t *codes, const long *counts, int T, int causal,
                          double *W, const char *label) {
    const int l = lsh->n_tables;
    for (int i = 0; i < T; i++) {
        long c = 0;
        for (int j = 0; j < T; j++) {
            int hits = 0;
            for (int t = 0; t < l; t++) hits += codes[(long)i * l + t] == codes[(long)(T + j) * l + t];
            if (causal && j > i) hits = 0;
            W[(long)i * T + j] = hits;
            c += hits;
        }
        CHECK(counts[i] == c, "%s: query %d count %ld, recomputed %ld", label, i, counts[i], c);
        for (int j = 0; j < T; j++) W[(long)i * T + j] = c ? W[(long)i * T + j] / (double)c : 0.0;
    }
}

static void ref_case(const RefCase *c) {
    char label[128];
    snprintf(label, sizeof label, "%s l%d z%d %s B%d H%d T%d D%d Dv%d", lsh_family_name(c->family), c->tables,
             c->funcs, c->causal ? "causal" : "bidir", c->B, c->H, c->T, c->D, c->Dv);
    const int qs[4] = { c->B, c->H, c->T, c->D }, vs[4] = { c->B, c->H, c->T, c->Dv };
    Tensor *q = gc_leaf(4, qs, c->seed, -1, 1), *k = gc_leaf(4, qs, c->seed + 1, -1, 1),
           *v = gc_leaf(4, vs, c->seed + 2, -1, 1), *dy = gc_leaf(4, vs, c->seed + 3, -1, 1);
    Lsh lsh[4];
    AlError err = { 0 };
    for (int h = 0; h < c->H; h++)
        CHECK(!lsh_init(&lsh[h], c->family, c->D, c->tables, c->funcs, lsh_head_seed(c->seed, 0, h), &err),
              "lsh_init: %s", err.msg);

    /* The plain inference path, for the bit-for-bit comparisons. */
    float *plain = malloc((size_t)v->n * sizeof(float));
    AnnaStats st;
    anna_attention_heads(lsh, q->data, k->data, v->data, c->B, c->H, c->T, c->D, c->Dv, c->causal, plain, NULL, &st);

    Arena arena;
    arena_init(&arena, 1 << 20);
    Tape tape;
    tape_init(&tape, &arena);
    tape.grad_enabled = 0;
    Tensor *y0 = ad_anna_attention(&tape, q, k, v, lsh, c->causal);
    CHECK(!memcmp(y0->data, plain, (size_t)v->n * sizeof(float)), "%s: op without gradients != anna_attention_heads", label);
    tape_reset(&tape);
    tape.grad_enabled = 1;
    for (long i = 0; i < v->n; i++) v->grad[i] = 1.0f;   /* the backward must add to this */
    Tensor *y = ad_anna_attention(&tape, q, k, v, lsh, c->causal);
    CHECK(!memcmp(y->data, plain, (size_t)v->n * sizeof(float)), "%s: op with gradients != anna_attention_heads", label);
    tape_backward_from(&tape, y, dy->data);
    CHECK(all_zero(q->grad, q->n) && all_zero(k->grad, k->n), "%s: q or k got a gradient", label);

    const int T = c->T, Dv = c->Dv;
    double *W = malloc(sizeof(double) * T * T), fwd = 0, bwd = 0;
    uint64_t *codes = malloc(sizeof(uint64_t) * 2 * T * c->tables);
    long *counts = malloc(sizeof(long) * T);
    float *tmp = malloc(sizeof(float) * T * Dv);
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->H; h++) {
            long head = (long)b * c->H + h;
            const float *vh = v->data + head * T * Dv, *dyh = dy->data + head * T * Dv;
            anna_attention_keep(&lsh[h], q->data + head * T * c->D, k->data + head * T * c->D, vh, T, c->D, Dv,
                                c->causal, tmp, NULL, NULL, codes, counts);
            dense_weights(&lsh[h], codes, counts, T, c->causal, W, label);
            for (int i = 0; i < T; i++)
                for (int e = 0; e < Dv; e++) {
                    double yr = 0, gr = 1.0;   /* v's gradient started at 1 */
                    for (int j = 0; j < T; j++) {
                        yr += W[(long)i * T + j] * vh[(long)j * Dv + e];
                        gr += W[(long)j * T + i] * dyh[(long)j * Dv + e];
                    }
                    fwd = fmax(fwd, fabs(yr - y->data[head * T * Dv + (long)i * Dv + e]));
                    bwd = fmax(bwd, fabs(gr - v->grad[head * T * Dv + (long)i * Dv + e]));
                }
        }
    CHECK(fwd <= REF_TOL, "%s: forward differs from W·v by %.3g", label, fwd);
    CHECK(bwd <= REF_TOL, "%s: backward differs from 1 + Wᵀ·dy by %.3g", label, bwd);
    printf("  %-52s empty %5.1f%%  |y − W·v| %.2e  |dv − Wᵀ·dy| %.2e\n", label, 100 * st.empty_fraction, fwd, bwd);

    free(W); free(codes); free(counts); free(tmp); free(plain);
    tape_free(&tape);
    arena_free(&arena);
    for (int h = 0; h < c->H; h++) lsh_free(&lsh[h]);
    gc_leaf_free(q); gc_leaf_free(k); gc_leaf_free(v); gc_leaf_free(dy);
}

static void test_dense_reference(void) {
    static const RefCase cases[] = {
        { 1, 1, 12, 4, 3, LSH_HYPERPLANE,    1, 1, 1, 11 },
        { 1, 1, 12, 4, 3, LSH_HYPERPLANE,    1, 1, 0, 12 },
        { 2, 3, 20, 8, 5, LSH_HYPERPLANE,    4, 2, 1, 13 },
        { 2, 3, 20, 8, 5, LSH_HYPERPLANE,    4, 2, 0, 14 },
        { 2, 2, 17, 6, 6, LSH_CROSSPOLYTOPE, 3, 1, 1, 15 },
        { 2, 2, 17, 6, 6, LSH_CROSSPOLYTOPE, 3, 1, 0, 16 },
        { 1, 2, 24, 8, 4, LSH_HYPERPLANE,    2, 7, 1, 17 },   /* mostly empty unions */
        { 1, 2, 24, 8, 4, LSH_HYPERPLANE,    2, 7, 0, 18 },
        { 1, 1, 40, 4, 2, LSH_HYPERPLANE,   16, 1, 1, 19 },   /* many tables: multiplicities up to 16 */
    };
    printf("dense reference:\n");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) ref_case(&cases[i]);
}

/* ------------------------------------------------------------------------------ */

typedef struct ModelCtx {
    Model *m;
    int B, T;
    int tokens[64], targets[64];
} ModelCtx;

static Tensor *build_model(Tape *t, Tensor **leaves, void *p) {
    (void)leaves;
    ModelCtx *c = p;
    Tensor *logits = model_forward(c->m, t, c->tokens, c->B, c->T);
    return ad_cross_entropy(t, logits, c->targets);
}

/* Is parameter p upstream of layer 0's hashed queries and keys? */
static int feeds_hash(const Param *p) {
    return !strncmp(p->name, "tok_emb", 7) || !strncmp(p->name, "pos_emb", 7) ||
           !strncmp(p->name, "blocks.0.ln1", 12) || !strncmp(p->name, "blocks.0.attn.q", 15) ||
           !strncmp(p->name, "blocks.0.attn.k", 15);
}

static void test_model(int causal) {
    Config full;
    cfg_defaults(&full);
    CfgModel cfg = full.model;
    cfg.d_model = 8;
    cfg.n_layers = 2;
    cfg.n_heads = 2;
    cfg.mlp_ratio = 2;
    cfg.positional = POS_LEARNED;
    cfg.attention.score = SCORE_UNIT_NORM;
    cfg.attention.beta = 2.0f;
    cfg.attention.causal = causal;
    cfg.init = INIT_NORMAL;
    cfg.init_std = 0.5f;
    ModelCtx c = { .B = 2, .T = 6 };
    c.m = model_create(&cfg, 7, 3, c.T, 43);
    Rng r = rng_stream(6, 6);
    for (int i = 0; i < c.B * c.T; i++) {
        c.tokens[i] = (int)rng_below(&r, 7);
        c.targets[i] = i % 5 == 4 ? -1 : (int)rng_below(&r, 3);
    }
    Lsh lsh[2];
    AlError err = { 0 };
    for (int h = 0; h < 2; h++)
        CHECK(!lsh_init(&lsh[h], LSH_HYPERPLANE, 4, 2, 1, lsh_head_seed(3, 0, h), &err), "lsh_init: %s", err.msg);
    const Lsh *per_layer[2] = { lsh, NULL };
    ModelAnna anna = { ad_anna_attention, per_layer };
    c.m->anna = &anna;

    ParamStore *ps = &c.m->params;
    Tensor *leaves[64];
    int n = 0;
    long n_elems = 0;
    for (int i = 0; i < ps->n; i++)
        if (!feeds_hash(&ps->p[i])) {
            leaves[n++] = &ps->p[i].t;
            n_elems += ps->p[i].t.n;
        }
    char label[64];
    snprintf(label, sizeof label, "model, ANNA in layer 0, %s", causal ? "causal" : "bidirectional");
    GcTol tol = { 3e-3f, 5e-5f, 1e-2f, 2 };   /* as test_model.c */
    GcResult res;
    CHECK(gradcheck(label, build_model, &c, leaves, n, tol, &res), "%s: %ld of %ld gradients off", label, res.n_bad,
          res.n_checked);
    CHECK(res.n_checked == n_elems, "%s: checked %ld of %ld", label, res.n_checked, n_elems);
    CHECK(gradcheck_catches_fault(label, OP_ANNA_ATTENTION, build_model, &c, leaves, n, tol),
          "%s: a 5%% error in the ANNA backward went unnoticed", label);

    /* The distilled layer's Q and K get nothing; its V does. */
    const char *zero[] = { "blocks.0.attn.q.weight", "blocks.0.attn.q.bias", "blocks.0.attn.k.weight",
                           "blocks.0.attn.k.bias" };
    for (int i = 0; i < 4; i++) {
        const Param *p = params_find(ps, zero[i]);
        CHECK(p && all_zero(p->t.grad, p->t.n), "%s: %s has a gradient", label, zero[i]);
    }
    const Param *pv = params_find(ps, "blocks.0.attn.v.weight");
    CHECK(pv && !all_zero(pv->t.grad, pv->t.n), "%s: blocks.0.attn.v.weight has no gradient", label);
    for (int h = 0; h < 2; h++) lsh_free(&lsh[h]);
    model_free(c.m);
}

int main(void) {
    openblas_set_num_threads(1);
    test_dense_reference();
    test_model(1);
    test_model(0);
    return check_exit("test_anna_grad");
}
