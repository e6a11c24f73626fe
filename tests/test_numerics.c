/* test_numerics.c — the ops that can overflow stay finite on extreme inputs.
 *
 * A long run must not die of one unlucky batch, so softmax, cross-entropy,
 * LayerNorm, fused and sparse attention and linear attention are fed what breaks a
 * naive implementation — logits of ±1e4 (exp overflows past 88), rows of one value
 * (zero variance), rows masked out entirely, keys that make linear attention's
 * denominator zero but for eps — and checked forward AND backward: every output and
 * gradient finite, and the forward value the exact limit (a NaN-free wrong answer is
 * still wrong).  Backward is seeded with fixed ±1 output gradients. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"
#include "check.h"
#include "gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static Arena arena;
static Tape tape;

static long count_nonfinite(const float *x, long n) {
    long bad = 0;
    for (long i = 0; i < n; i++) bad += !isfinite(x[i]);
    return bad;
}

/* A leaf holding exactly these values (a gradient buffer, zeroed). */
static Tensor *leaf(int ndim, const int *shape, const float *values) {
    Tensor *x = gc_leaf(ndim, shape, 1, 0.0f, 1.0f);
    memcpy(x->data, values, (size_t)x->n * sizeof(float));
    memset(x->grad, 0, (size_t)x->n * sizeof(float));
    return x;
}

/* Backward from out with dout = +1, −1, +1, … (every element matters). */
static void backward_alternating(Tensor *out) {
    float *dout = tape_scratch(&tape, (size_t)out->n * sizeof(float));
    for (long i = 0; i < out->n; i++) dout[i] = i % 2 ? -1.0f : 1.0f;
    tape_backward_from(&tape, out, dout);
}

static void check_finite(const char *what, const Tensor *out, Tensor *const *in, int n_in) {
    CHECK(count_nonfinite(out->data, out->n) == 0, "%s: non-finite output", what);
    for (int i = 0; i < n_in; i++)
        CHECK(count_nonfinite(in[i]->grad, in[i]->n) == 0, "%s: non-finite gradient of input %d", what, i);
}

static void test_softmax(void) {
    /* Row 0: two equal maxima at +1e4; row 1: all −1e4; row 2: all +1e4. */
    const float x0[] = { 1e4f, -1e4f, 0.0f, 1e4f, -1e4f, -1e4f, -1e4f, -1e4f, 1e4f, 1e4f, 1e4f, 1e4f };
    Tensor *x = leaf(2, (const int[]){ 3, 4 }, x0);
    tape_reset(&tape);
    Tensor *y = ad_softmax(&tape, x, NULL);
    backward_alternating(y);
    check_finite("softmax ±1e4", y, &x, 1);
    const float want[] = { 0.5f, 0.0f, 0.0f, 0.5f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f };
    for (int i = 0; i < 12; i++) CHECK_NEAR(y->data[i], want[i], 1e-7, "softmax ±1e4 value");
    gc_leaf_free(x);

    /* A row masked out entirely gives zeros and no gradient, not NaN. */
    const float z0[] = { 1e4f, -1e4f, 3.0f, 4.0f };
    float mask_data[] = { -INFINITY, -INFINITY, 0.0f, -INFINITY };
    Tensor mask;
    tensor_init(&mask, mask_data, NULL, 2, (const int[]){ 2, 2 });
    x = leaf(2, (const int[]){ 2, 2 }, z0);
    tape_reset(&tape);
    y = ad_softmax(&tape, x, &mask);
    backward_alternating(y);
    check_finite("softmax masked row", y, &x, 1);
    CHECK(y->data[0] == 0 && y->data[1] == 0 && y->data[2] == 1 && y->data[3] == 0,
          "masked softmax: %g %g %g %g", y->data[0], y->data[1], y->data[2], y->data[3]);
    gc_leaf_free(x);
}

static void test_cross_entropy(void) {
    /* Per row −log p[target]: 2e4 (the target is 2e4 below the max), log 3, log 2. */
    const float x0[] = { 1e4f, -1e4f, 0.0f, -1e4f, -1e4f, -1e4f, 1e4f, 1e4f, -1e4f };
    const int targets[] = { 1, 0, 0 };
    Tensor *x = leaf(2, (const int[]){ 3, 3 }, x0);
    tape_reset(&tape);
    Tensor *loss = ad_cross_entropy(&tape, x, targets);
    tape_backward(&tape, loss);
    check_finite("cross-entropy ±1e4", loss, &x, 1);
    double want = (2e4 + log(3.0) + log(2.0)) / 3;
    CHECK_NEAR(loss->data[0], want, 1e-6 * want, "cross-entropy ±1e4 loss");
    /* d/dlogits = (softmax − onehot)/3: row 0 is (1, −1, 0)/3. */
    CHECK_NEAR(x->grad[0], 1.0 / 3, 1e-7, "cross-entropy grad [0][0]");
    CHECK_NEAR(x->grad[1], -1.0 / 3, 1e-7, "cross-entropy grad [0][1]");
    CHECK_NEAR(x->grad[2], 0.0, 1e-7, "cross-entropy grad [0][2]");
    gc_leaf_free(x);
}

static void test_layernorm(void) {
    /* Row 0 has zero variance (every value 5); row 1 is ±1e4; row 2 is all 0. */
    const float x0[] = { 5, 5, 5, 5, 1e4f, -1e4f, 1e4f, -1e4f, 0, 0, 0, 0 };
    const float g0[] = { 1.5f, 1.5f, 1.5f, 1.5f }, b0[] = { 0.25f, 0.25f, 0.25f, 0.25f };
    Tensor *in[3] = { leaf(2, (const int[]){ 3, 4 }, x0), leaf(1, (const int[]){ 4 }, g0),
                      leaf(1, (const int[]){ 4 }, b0) };
    tape_reset(&tape);
    Tensor *y = ad_layernorm(&tape, in[0], in[1], in[2], 1e-5f);
    backward_alternating(y);
    check_finite("layernorm", y, in, 3);
    for (int c = 0; c < 4; c++) {
        CHECK(y->data[c] == 0.25f, "zero-variance row must give the bias, got %g", y->data[c]);
        CHECK(y->data[8 + c] == 0.25f, "all-zero row must give the bias, got %g", y->data[8 + c]);
        CHECK_NEAR(y->data[4 + c], (c % 2 ? -1.5 : 1.5) + 0.25, 1e-5, "layernorm ±1e4 row");
    }
    /* Zero variance: x̂ = 0, so dx = rstd·(dx̂ − mean dx̂) = rstd·1.5·(±1), rstd = 1/√eps. */
    CHECK_NEAR(in[0]->grad[0], 1.5 / sqrt(1e-5), 1e-3 * 1.5 / sqrt(1e-5), "zero-variance row gradient");
    for (int i = 0; i < 3; i++) gc_leaf_free(in[i]);
}

/* q·k scores of ±1e4: q = (100, 0), keys (100, 0) and (−100, 0), scale 1. */
static void test_attention(void) {
    const float q0[] = { 100, 0, 100, 0 }, k0[] = { 100, 0, -100, 0 }, v0[] = { 1, 2, 3, 4 };
    const int shape[] = { 1, 1, 2, 2 };
    Tensor *in[3] = { leaf(4, shape, q0), leaf(4, shape, k0), leaf(4, shape, v0) };
    float mask_data[4];
    Tensor mask;
    tensor_init(&mask, mask_data, NULL, 2, (const int[]){ 2, 2 });
    ad_causal_mask(&mask);
    for (int causal = 0; causal < 2; causal++) {
        for (int i = 0; i < 3; i++) memset(in[i]->grad, 0, (size_t)in[i]->n * sizeof(float));
        tape_reset(&tape);
        Tensor *o = ad_attention(&tape, in[0], in[1], in[2], causal ? &mask : NULL, 1.0f);
        backward_alternating(o);
        check_finite(causal ? "causal attention ±1e4" : "attention ±1e4", o, in, 3);
        /* Both queries put all weight on key 0: output row = v0 = (1, 2). */
        for (int i = 0; i < 4; i++) CHECK_NEAR(o->data[i], v0[i % 2], 1e-6, "attention ±1e4 output");
    }
    /* Sparse attention (always causal) on the same inputs. */
    for (int i = 0; i < 3; i++) memset(in[i]->grad, 0, (size_t)in[i]->n * sizeof(float));
    tape_reset(&tape);
    Tensor *o = ad_sparse_attention(&tape, in[0], in[1], in[2], 1, 1, 1, 1.0f);
    backward_alternating(o);
    check_finite("sparse attention ±1e4", o, in, 3);
    for (int i = 0; i < 4; i++) CHECK_NEAR(o->data[i], v0[i % 2], 1e-6, "sparse attention ±1e4 output");
    for (int i = 0; i < 3; i++) gc_leaf_free(in[i]);
}

/* All-zero keys: φ(k) = 0 for identity and relu, so z = 0 and the denominator is
 * eps alone; elu+1 of keys at −1e4 is e^−1e4 = 0 too.  Output 0, gradients finite. */
static void test_linear_attention(void) {
    static const char *const names[] = { "elu1", "identity", "relu" };
    const float q0[] = { 1e4f, -1e4f, 3, -2, 0, 1, -1e4f, 1e4f };
    const float v0[] = { 1, -2, 3, 4, 5, -6, 7, 8 };
    const int shape[] = { 1, 1, 4, 2 };
    for (int phi = FEATURE_ELU1; phi <= FEATURE_RELU; phi++) {
        float k0[8];
        for (int i = 0; i < 8; i++) k0[i] = phi == FEATURE_ELU1 ? -1e4f : 0.0f;
        for (int causal = 0; causal < 2; causal++) {
            Tensor *in[3] = { leaf(4, shape, q0), leaf(4, shape, k0), leaf(4, shape, v0) };
            char what[64];
            snprintf(what, sizeof what, "linear attention %s %s, zero keys", names[phi],
                     causal ? "causal" : "bidirectional");
            tape_reset(&tape);
            Tensor *o = ad_linear_attention(&tape, in[0], in[1], in[2], (AdFeature)phi, causal, 1e-6f);
            backward_alternating(o);
            check_finite(what, o, in, 3);
            for (int i = 0; i < 8; i++) CHECK(o->data[i] == 0.0f, "%s: output %d is %g, not 0", what, i, o->data[i]);
            for (int i = 0; i < 3; i++) gc_leaf_free(in[i]);
        }
    }
}

int main(void) {
    arena_init(&arena, 1 << 20);
    tape_init(&tape, &arena);
    test_softmax();
    test_cross_entropy();
    test_layernorm();
    test_attention();
    test_linear_attention();
    tape_free(&tape);
    arena_free(&arena);
    return check_exit("test_numerics");
}
