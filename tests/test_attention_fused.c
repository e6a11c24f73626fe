/* test_attention_fused.c — the fused attention op against its definition.
 *
 * ad_attention(q, k, v, mask, scale) must equal the composition of primitive ops
 *   softmax(scale·(q·kᵀ), mask) · v
 * (ad_matmul with trans_b → ad_scale → ad_softmax with the mask → ad_matmul), in
 * the output and in the gradients of q, k and v for the same output gradient, to
 * 1e-5 absolute (values here are O(1); the two differ only in float rounding
 * order, ~1e-7).  Also: grad mode off gives the same output, one tape entry is
 * recorded, and a query whose mask row is all −inf gets a zero output. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"
#include "check.h"
#include "gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-5

typedef struct Config {
    int B, H, Tq, Tk, D;
    int mask;   /* 0 none, 1 causal, 2 causal with query row 0 fully masked */
    uint64_t seed;
} Config;

static double max_abs_diff(const float *a, const float *b, long n) {
    double m = 0;
    for (long i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - (double)b[i]));
    return m;
}

/* One forward (fused or composed) and backward with dout; returns the output
 * (valid until the tape is reset) and leaves the input grads in the leaves. */
static Tensor *run(Tape *t, int fused, Tensor **x, const Tensor *mask, float scale,
                   const float *dout) {
    tape_reset(t);
    for (int l = 0; l < 3; l++) memset(x[l]->grad, 0, (size_t)x[l]->n * sizeof(float));
    Tensor *o;
    if (fused) {
        o = ad_attention(t, x[0], x[1], x[2], mask, scale);
    } else {
        Tensor *s = ad_scale(t, ad_matmul(t, x[0], x[1], 0, 1), scale);
        o = ad_matmul(t, ad_softmax(t, s, mask), x[2], 0, 0);
    }
    tape_backward_from(t, o, dout);
    return o;
}

static void check_config(const Config *c) {
    char what[96];
    snprintf(what, sizeof what, "B%d H%d Tq%d Tk%d D%d mask %d", c->B, c->H, c->Tq, c->Tk, c->D,
             c->mask);
    Tensor *x[3] = {
        gc_leaf(4, (const int[]){ c->B, c->H, c->Tq, c->D }, c->seed, -1.0f, 1.0f),
        gc_leaf(4, (const int[]){ c->B, c->H, c->Tk, c->D }, c->seed + 1, -1.0f, 1.0f),
        gc_leaf(4, (const int[]){ c->B, c->H, c->Tk, c->D }, c->seed + 2, -1.0f, 1.0f),
    };
    float mask_data[64 * 64];
    Tensor mask_t, *mask = NULL;
    if (c->mask) {
        tensor_init(&mask_t, mask_data, NULL, 2, (const int[]){ c->Tq, c->Tk });
        ad_causal_mask(&mask_t);
        if (c->mask == 2)
            for (int j = 0; j < c->Tk; j++) mask_data[j] = -INFINITY;
        mask = &mask_t;
    }
    float scale = 1.0f / sqrtf((float)c->D);
    long n_out = (long)c->B * c->H * c->Tq * c->D;
    Tensor *dout_t = gc_leaf(1, (const int[]){ (int)n_out }, c->seed + 3, -1.0f, 1.0f);

    Arena arena;
    arena_init(&arena, 1 << 20);
    Tape t;
    tape_init(&t, &arena);

    /* Fused: output and grads kept in copies. */
    Tensor *of = run(&t, 1, x, mask, scale, dout_t->data);
    CHECK(t.n == 1, "%s: fused attention recorded %d tape entries, want 1", what, t.n);
    float *out_f = al_malloc((size_t)n_out * sizeof(float)), *g_f[3];
    memcpy(out_f, of->data, (size_t)n_out * sizeof(float));
    for (int l = 0; l < 3; l++) {
        g_f[l] = al_malloc((size_t)x[l]->n * sizeof(float));
        memcpy(g_f[l], x[l]->grad, (size_t)x[l]->n * sizeof(float));
    }

    /* Composed, on the same leaves. */
    Tensor *oc = run(&t, 0, x, mask, scale, dout_t->data);
    char lbl[128];
    snprintf(lbl, sizeof lbl, "%s: output", what);
    CHECK_NEAR(max_abs_diff(out_f, oc->data, n_out), 0, TOL, lbl);
    static const char *const NAME[3] = { "dq", "dk", "dv" };
    for (int l = 0; l < 3; l++) {
        snprintf(lbl, sizeof lbl, "%s: %s", what, NAME[l]);
        CHECK_NEAR(max_abs_diff(g_f[l], x[l]->grad, x[l]->n), 0, TOL, lbl);
    }

    /* Evaluation mode takes the other P-buffer path; the result must not change. */
    tape_reset(&t);
    t.grad_enabled = 0;
    Tensor *oe = ad_attention(&t, x[0], x[1], x[2], mask, scale);
    CHECK(oe->grad == NULL && t.n == 0, "%s: grad mode off recorded something", what);
    CHECK(max_abs_diff(out_f, oe->data, n_out) == 0, "%s: eval output differs from training output", what);

    if (c->mask == 2) {
        /* Query 0 of every (b, h) attends to nothing: zeros, not NaN. */
        int all_zero = 1;
        for (long bh = 0; bh < (long)c->B * c->H; bh++)
            for (int d = 0; d < c->D; d++) all_zero &= out_f[bh * c->Tq * c->D + d] == 0.0f;
        CHECK(all_zero, "%s: fully masked row does not give a zero output", what);
    }
    printf("  %-36s out %.1e  dq %.1e  dk %.1e  dv %.1e\n", what,
           max_abs_diff(out_f, oc->data, n_out), max_abs_diff(g_f[0], x[0]->grad, x[0]->n),
           max_abs_diff(g_f[1], x[1]->grad, x[1]->n), max_abs_diff(g_f[2], x[2]->grad, x[2]->n));

    free(out_f);
    for (int l = 0; l < 3; l++) {
        free(g_f[l]);
        gc_leaf_free(x[l]);
    }
    gc_leaf_free(dout_t);
    tape_free(&t);
    arena_free(&arena);
}

int main(void) {
    static const Config configs[] = {
        { 1, 1,  8,  8,  4, 0, 1 },
        { 1, 1,  8,  8,  4, 1, 2 },
        { 2, 3, 16, 16, 16, 0, 3 },
        { 2, 3, 16, 16, 16, 1, 4 },
        { 2, 2,  5, 12,  8, 0, 5 },   /* Tq < Tk */
        { 2, 2,  5, 12,  8, 1, 6 },
        { 1, 2, 12,  7,  8, 1, 7 },   /* Tq > Tk */
        { 2, 2,  6,  6,  8, 2, 8 },   /* query 0 fully masked */
        { 1, 4, 64, 64, 32, 1, 9 },   /* a realistic block */
    };
    printf("max |fused − composed|:\n");
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) check_config(&configs[i]);
    return check_exit("attention_fused");
}
