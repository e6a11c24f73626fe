/* test_attention_fused.c — the fused attention ops against their definition.
 *
 * ad_attention(q, k, v, mask, scale) must equal the composition of primitive ops
 *   softmax(scale·(q·kᵀ), mask) · v
 * (ad_matmul with trans_b → ad_scale → ad_softmax with the mask → ad_matmul), in
 * the output and in the gradients of q, k and v for the same output gradient, to
 * 1e-5 absolute (values here are O(1); the two differ only in float rounding
 * order, ~1e-7).  Also: grad mode off gives the same output, one tape entry is
 * recorded, and a query whose mask row is all −inf gets a zero output.
 *
 * ad_attention_heads(q, k, v, H, causal, scale) on (B, T, H·D) tensors must equal
 *   split_heads → [l2norm] → matmul(·, ·ᵀ) → scale → softmax(causal mask) → matmul
 *   → merge_heads
 * the same way, for both score modes (1/√D, and unit-norm rows with β), causal and
 * bidirectional, at sizes that are not multiples of the kernel's 32-row blocks,
 * head widths that are not powers of two, Tq ≠ Tk, B = 1 and B > 1.  And its
 * arena use is its output, the output's grad and ad_attention_saved_bytes — never
 * a B·H·Tq·Tk matrix. */
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

/* ---- ad_attention_heads ------------------------------------------------------------ */

typedef struct HeadsConfig {
    int B, H, Tq, Tk, D, Dv;
    int causal, unit_norm;
    uint64_t seed;
} HeadsConfig;

/* x (B, T, H·D) with each head's D-slice of each row scaled to unit norm. */
static Tensor *unit_norm_rows(Tape *t, Tensor *x, int D) {
    Tensor *rows = ad_reshape(t, x, 2, (const int[]){ (int)(x->n / D), D });
    return ad_reshape(t, ad_l2norm(t, rows, 1e-12f), x->ndim, x->shape);
}

/* One forward and backward with dout, fused or composed of primitive ops. */
static Tensor *run_heads(Tape *t, int fused, Tensor **x, const HeadsConfig *c, const Tensor *mask,
                         const float *dout) {
    tape_reset(t);
    for (int l = 0; l < 3; l++) memset(x[l]->grad, 0, (size_t)x[l]->n * sizeof(float));
    float scale = c->unit_norm ? 4.0f : 1.0f / sqrtf((float)c->D);
    Tensor *o;
    if (fused) {
        Tensor *q = c->unit_norm ? unit_norm_rows(t, x[0], c->D) : x[0];
        Tensor *k = c->unit_norm ? unit_norm_rows(t, x[1], c->D) : x[1];
        o = ad_attention_heads(t, q, k, x[2], c->H, c->causal, scale);
    } else {
        Tensor *q = ad_split_heads(t, x[0], c->H), *k = ad_split_heads(t, x[1], c->H);
        Tensor *v = ad_split_heads(t, x[2], c->H);
        if (c->unit_norm) {
            q = ad_l2norm(t, q, 1e-12f);
            k = ad_l2norm(t, k, 1e-12f);
        }
        Tensor *s = ad_scale(t, ad_matmul(t, q, k, 0, 1), scale);
        o = ad_merge_heads(t, ad_matmul(t, ad_softmax(t, s, mask), v, 0, 0));
    }
    tape_backward_from(t, o, dout);
    return o;
}

static int count_entries(const Tape *t, OpKind op) {
    int n = 0;
    for (int i = 0; i < t->n; i++) n += t->entries[i].op == op;
    return n;
}

static size_t aligned(size_t n) { return (n + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN; }

/* The fused op's own arena use, with grad (dot scores): header, output, its grad, saved. */
static void check_heads_memory(Tape *t, Tensor **x, const HeadsConfig *c, const char *what) {
    tape_reset(t);
    size_t before = arena_in_use(t->arena);
    Tensor *o = ad_attention_heads(t, x[0], x[1], x[2], c->H, c->causal, 1.0f);
    size_t used = arena_in_use(t->arena) - before;
    size_t want = aligned(sizeof(Tensor)) + 2 * aligned((size_t)o->n * sizeof(float)) +
                  aligned(ad_attention_saved_bytes(c->Tq, c->Tk, 0) / 2) * 2;
    CHECK(used == want, "%s: the op took %zu arena bytes, want %zu", what, used, want);
    double scores = (double)c->B * c->H * c->Tq * c->Tk * sizeof(float);
    CHECK(c->Tq < 64 || (double)used < scores, "%s: %zu arena bytes, as much as the %.0f-byte score tensor", what,
          used, scores);
}

static void check_heads(const HeadsConfig *c) {
    char what[96];
    snprintf(what, sizeof what, "heads B%d H%d Tq%d Tk%d D%d Dv%d %s %s", c->B, c->H, c->Tq, c->Tk, c->D, c->Dv,
             c->causal ? "causal" : "bidir", c->unit_norm ? "unit-norm" : "dot");
    Tensor *x[3] = {
        gc_leaf(3, (const int[]){ c->B, c->Tq, c->H * c->D }, c->seed, -1.0f, 1.0f),
        gc_leaf(3, (const int[]){ c->B, c->Tk, c->H * c->D }, c->seed + 1, -1.0f, 1.0f),
        gc_leaf(3, (const int[]){ c->B, c->Tk, c->H * c->Dv }, c->seed + 2, -1.0f, 1.0f),
    };
    float *mask_data = NULL;
    Tensor mask_t, *mask = NULL;
    if (c->causal) {
        mask_data = al_malloc((size_t)c->Tq * c->Tk * sizeof(float));
        tensor_init(&mask_t, mask_data, NULL, 2, (const int[]){ c->Tq, c->Tk });
        ad_causal_mask(&mask_t);
        mask = &mask_t;
    }
    long n_out = (long)c->B * c->Tq * c->H * c->Dv;
    Tensor *dout = gc_leaf(1, (const int[]){ (int)n_out }, c->seed + 3, -1.0f, 1.0f);
    Arena arena;
    arena_init(&arena, 1 << 20);
    Tape t;
    tape_init(&t, &arena);

    Tensor *of = run_heads(&t, 1, x, c, mask, dout->data);
    CHECK(count_entries(&t, OP_ATTENTION_HEADS) == 1 && t.n == 1 + 2 * c->unit_norm,
          "%s: fused attention recorded %d tape entries", what, t.n);
    float *out_f = al_malloc((size_t)n_out * sizeof(float)), *g_f[3];
    memcpy(out_f, of->data, (size_t)n_out * sizeof(float));
    for (int l = 0; l < 3; l++) {
        g_f[l] = al_malloc((size_t)x[l]->n * sizeof(float));
        memcpy(g_f[l], x[l]->grad, (size_t)x[l]->n * sizeof(float));
    }
    Tensor *oc = run_heads(&t, 0, x, c, mask, dout->data);
    double err[4] = { max_abs_diff(out_f, oc->data, n_out) };
    for (int l = 0; l < 3; l++) err[l + 1] = max_abs_diff(g_f[l], x[l]->grad, x[l]->n);
    static const char *const NAME[4] = { "output", "dq", "dk", "dv" };
    for (int l = 0; l < 4; l++) {
        char lbl[128];
        snprintf(lbl, sizeof lbl, "%s: %s", what, NAME[l]);
        CHECK_NEAR(err[l], 0, TOL, lbl);
    }

    /* Grad mode off: the same output, nothing recorded. */
    tape_reset(&t);
    t.grad_enabled = 0;
    Tensor *q = c->unit_norm ? unit_norm_rows(&t, x[0], c->D) : x[0];
    Tensor *k = c->unit_norm ? unit_norm_rows(&t, x[1], c->D) : x[1];
    Tensor *oe = ad_attention_heads(&t, q, k, x[2], c->H, c->causal, c->unit_norm ? 4.0f : 1.0f / sqrtf((float)c->D));
    CHECK(oe->grad == NULL && t.n == 0, "%s: grad mode off recorded something", what);
    CHECK(max_abs_diff(out_f, oe->data, n_out) == 0, "%s: eval output differs from training output", what);
    t.grad_enabled = 1;
    check_heads_memory(&t, x, c, what);
    printf("  %-44s out %.1e  dq %.1e  dk %.1e  dv %.1e\n", what, err[0], err[1], err[2], err[3]);

    free(out_f);
    free(mask_data);
    for (int l = 0; l < 3; l++) {
        free(g_f[l]);
        gc_leaf_free(x[l]);
    }
    gc_leaf_free(dout);
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
    static const HeadsConfig heads[] = {
        { 1, 1,   8,   8,  4,  4, 0, 0, 11 },
        { 2, 3,  45,  45,  6,  6, 1, 0, 12 },   /* T not a multiple of the block, D = 6 */
        { 2, 3,  45,  45,  6,  6, 0, 1, 13 },
        { 1, 4,  70,  70, 12, 12, 1, 1, 14 },   /* three blocks, B = 1 */
        { 3, 2,  33,  33,  5,  7, 1, 0, 15 },   /* a one-row last block, Dv ≠ D */
        { 2, 2,  20,  50,  8,  8, 1, 0, 16 },   /* Tq < Tk */
        { 2, 2,  50,  20,  8,  8, 1, 1, 17 },   /* Tq > Tk: later rows see every key */
        { 2, 2,  40,  40,  8,  8, 0, 0, 18 },
        { 1, 4, 100, 100, 32, 32, 1, 0, 19 },   /* the causal bench model's heads */
    };
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) check_heads(&heads[i]);
    return check_exit("attention_fused");
}
