/* test_numerics.c — the ops that can overflow stay finite on extreme inputs, and
 * the vectorised kernels agree with scalar references (see the second part).
 *
 * A long run must not die of one unlucky batch, so softmax, cross-entropy,
 * LayerNorm, fused and sparse attention and linear attention are fed what breaks a
 * naive implementation — logits of ±1e4 (exp overflows past 88), rows of one value
 * (zero variance), rows masked out entirely, keys that make linear attention's
 * denominator zero but for eps — and checked forward AND backward: every output and
 * gradient finite, and the forward value the exact limit (a NaN-free wrong answer is
 * still wrong).  Backward is seeded with fixed ±1 output gradients. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/train/optim.h"
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

/* ------------------------------------------------------------------------------ */
/* The vectorised kernels against scalar references, for every length 1…40 and a
 * few around the 8- and 16-float vector widths, so that every vector body and
 * every scalar tail runs:
 *   elementwise (GeLU both forms, ELU, ReLU): an element's value and derivative
 *     are the same bits whether it lands in the vector body or in the scalar tail
 *     (fastmath.h fuses the same steps in both) — checked against one-element calls,
 *     on values that include ±1e4, ±1e30, ±inf, NaN, −0 and the clamp edges;
 *   row kernels (softmax with −inf masks, layernorm, cross-entropy, Adam): against
 *     the same formula in double, to a few float ulps of the terms involved. */

static const int LENGTHS[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                               21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39,
                               40, 47, 48, 49, 63, 64, 65, 100 };
enum { N_LENGTHS = sizeof LENGTHS / sizeof LENGTHS[0], MAXLEN = 100 };

static float test_value(Rng *r, int i) {
    static const float special[] = { 1e4f, -1e4f, 1e30f, -1e30f, INFINITY, -INFINITY, NAN, -0.0f, 0.0f,
                                     15.0f, -15.0f, 9.02f, -9.3f, 1e-30f };
    enum { NS = sizeof special / sizeof special[0] };
    return i % 5 == 4 ? special[(i / 5) % NS] : (float)(20.0 * rng_uniform(r) - 10.0);
}

static int same_bits(float a, float b) { return (isnan(a) && isnan(b)) || !memcmp(&a, &b, sizeof a); }

/* y = act(x) and dx = act′(x) (backward from ones) over n elements. */
static void act_eval(int kind, const float *x, int n, float *y, float *dx) {
    float xs[MAXLEN], ones[MAXLEN];
    memcpy(xs, x, (size_t)n * sizeof(float));
    for (int i = 0; i < n; i++) ones[i] = 1.0f;
    Tensor *in = leaf(1, &n, xs);
    tape_reset(&tape);
    Tensor *out = kind == 0 ? ad_gelu(&tape, in, GELU_TANH) : kind == 1 ? ad_gelu(&tape, in, GELU_ERF)
                : kind == 2 ? ad_elu(&tape, in) : ad_relu(&tape, in);
    memcpy(y, out->data, (size_t)n * sizeof(float));
    tape_backward_from(&tape, out, ones);
    memcpy(dx, in->grad, (size_t)n * sizeof(float));
    gc_leaf_free(in);
}

static void test_elementwise_tails(void) {
    static const char *const names[] = { "gelu tanh", "gelu erf", "elu", "relu" };
    Rng r = rng_stream(3, 4);
    float x[MAXLEN], y[MAXLEN], d[MAXLEN], y1, d1;
    for (int i = 0; i < MAXLEN; i++) x[i] = test_value(&r, i);
    for (int kind = 0; kind < 4; kind++) {
        int bad = 0;
        for (int k = 0; k < N_LENGTHS; k++) {
            int n = LENGTHS[k];
            act_eval(kind, x, n, y, d);
            for (int i = 0; i < n; i++) {
                act_eval(kind, &x[i], 1, &y1, &d1);
                if (!same_bits(y[i], y1) || !same_bits(d[i], d1)) {
                    if (bad++ < 3)
                        fprintf(stderr, "%s n=%d x[%d]=%g: %.9g/%.9g in the loop, %.9g/%.9g alone\n",
                                names[kind], n, i, (double)x[i], (double)y[i], (double)d[i], (double)y1, (double)d1);
                }
            }
        }
        CHECK(bad == 0, "%s: %d elements differ between vector body and scalar tail", names[kind], bad);
    }
}

/* Max over i of |got − ref| / (scale_i·2⁻²⁴), scale_i = |ref| or the given floor. */
static double ulps(const float *got, const double *ref, long n, double floor) {
    double worst = 0;
    for (long i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ref[i]) / (fmax(fabs(ref[i]), floor) * 0x1p-24);
        worst = isnan(e) ? INFINITY : fmax(worst, e);
    }
    return worst;
}

/* Softmax rows of every length with a mask (causal, plus a row masked out
 * entirely) against double; backward dx = y∘(dy − Σ dy∘y) from the op's y. */
static void test_softmax_lengths(void) {
    Rng r = rng_stream(5, 6);
    double worst_y = 0, worst_dx = 0;
    for (int k = 0; k < N_LENGTHS; k++) {
        int C = LENGTHS[k], R = 3;
        float x0[3 * MAXLEN], m0[3 * MAXLEN], dy[3 * MAXLEN];
        double yr[3 * MAXLEN], dxr[3 * MAXLEN];
        for (int i = 0; i < R * C; i++) {
            x0[i] = (float)(16.0 * rng_uniform(&r) - 8.0);
            dy[i] = (float)(2.0 * rng_uniform(&r) - 1.0);
            int row = i / C, col = i % C;
            m0[i] = row == 2 || (row == 1 && col > C / 2) ? -INFINITY : 0.0f;
        }
        m0[0] = -INFINITY;   /* row 0: one masked entry; row 2: all */
        Tensor *x = leaf(2, (const int[]){ R, C }, x0), mask;
        tensor_init(&mask, m0, NULL, 2, (const int[]){ R, C });
        tape_reset(&tape);
        Tensor *y = ad_softmax(&tape, x, &mask);
        float dyc[3 * MAXLEN];
        memcpy(dyc, dy, sizeof dyc);
        tape_backward_from(&tape, y, dyc);
        for (int row = 0; row < R; row++) {
            const float *z = x0 + row * C, *m = m0 + row * C;
            double mx = -INFINITY, sum = 0, dot = 0;
            for (int j = 0; j < C; j++) mx = fmax(mx, (double)z[j] + m[j]);
            for (int j = 0; j < C; j++) sum += mx == -INFINITY ? 0 : exp((double)z[j] + m[j] - mx);
            for (int j = 0; j < C; j++) {
                yr[row * C + j] = sum == 0 ? 0 : exp((double)z[j] + m[j] - mx) / sum;
                dot += (double)dy[row * C + j] * y->data[row * C + j];
            }
            for (int j = 0; j < C; j++) dxr[row * C + j] = y->data[row * C + j] * (dy[row * C + j] - dot);
        }
        /* Absolute scale 1/C for y (the error of the sum spreads over the row) and 1
         * for dx (|dy| ≤ 1, the dot cancels). */
        worst_y = fmax(worst_y, ulps(y->data, yr, R * C, 1.0 / C));
        worst_dx = fmax(worst_dx, ulps(x->grad, dxr, R * C, 1.0));
        for (int j = 0; j < C; j++) CHECK(y->data[2 * C + j] == 0 && x->grad[2 * C + j] == 0, "masked row C=%d", C);
        gc_leaf_free(x);
    }
    printf("  softmax vs double, C = 1…100 with −inf masks: y %.2f ulp, dx %.2f ulp\n", worst_y, worst_dx);
    CHECK(worst_y <= 8 && worst_dx <= 8, "softmax: y %.2f, dx %.2f ulp (bound 8)", worst_y, worst_dx);
}

/* LayerNorm forward and backward against double, rows of every length. */
static void test_layernorm_lengths(void) {
    Rng r = rng_stream(7, 8);
    double worst_y = 0, worst_dx = 0, worst_dg = 0;
    for (int k = 0; k < N_LENGTHS; k++) {
        int C = LENGTHS[k], R = 3;
        float x0[3 * MAXLEN], g0[MAXLEN], b0[MAXLEN], dy[3 * MAXLEN];
        for (int i = 0; i < R * C; i++) {
            x0[i] = (float)(4.0 * rng_uniform(&r) - 1.0);
            dy[i] = (float)(2.0 * rng_uniform(&r) - 1.0);
        }
        for (int j = 0; j < C; j++) {
            g0[j] = (float)(0.5 + rng_uniform(&r));
            b0[j] = (float)(rng_uniform(&r) - 0.5);
        }
        Tensor *in[3] = { leaf(2, (const int[]){ R, C }, x0), leaf(1, &C, g0), leaf(1, &C, b0) };
        tape_reset(&tape);
        Tensor *y = ad_layernorm(&tape, in[0], in[1], in[2], 1e-5f);
        float dyc[3 * MAXLEN];
        memcpy(dyc, dy, sizeof dyc);
        tape_backward_from(&tape, y, dyc);
        double yr[3 * MAXLEN], dxr[3 * MAXLEN], dgr[MAXLEN] = { 0 };
        for (int row = 0; row < R; row++) {
            const float *xr = x0 + row * C, *d = dy + row * C;
            double mu = 0, var = 0, m1 = 0, m2 = 0, xh[MAXLEN], dn[MAXLEN];
            for (int j = 0; j < C; j++) mu += xr[j];
            mu /= C;
            for (int j = 0; j < C; j++) var += (xr[j] - mu) * (xr[j] - mu);
            double rs = 1.0 / sqrt(var / C + 1e-5);
            for (int j = 0; j < C; j++) {
                xh[j] = (xr[j] - mu) * rs;
                yr[row * C + j] = xh[j] * g0[j] + b0[j];
                dn[j] = (double)d[j] * g0[j];
                m1 += dn[j] / C;
                m2 += dn[j] * xh[j] / C;
                dgr[j] += d[j] * xh[j];
            }
            for (int j = 0; j < C; j++) dxr[row * C + j] = rs * (dn[j] - m1 - xh[j] * m2);
        }
        worst_y = fmax(worst_y, ulps(y->data, yr, R * C, 1.0));
        worst_dx = fmax(worst_dx, ulps(in[0]->grad, dxr, R * C, 1.0));
        worst_dg = fmax(worst_dg, ulps(in[1]->grad, dgr, C, 1.0));
        for (int i = 0; i < 3; i++) gc_leaf_free(in[i]);
    }
    printf("  layernorm vs double, C = 1…100: y %.2f ulp, dx %.2f ulp, dgain %.2f ulp\n", worst_y, worst_dx, worst_dg);
    CHECK(worst_y <= 16 && worst_dx <= 16 && worst_dg <= 16, "layernorm: y %.2f, dx %.2f, dgain %.2f ulp",
          worst_y, worst_dx, worst_dg);
}

/* Cross-entropy loss and gradient against double, rows of every length, every
 * third target ignored. */
static void test_cross_entropy_lengths(void) {
    Rng r = rng_stream(9, 10);
    double worst_loss = 0, worst_dx = 0;
    for (int k = 0; k < N_LENGTHS; k++) {
        int C = LENGTHS[k], R = 4, targets[4];
        float x0[4 * MAXLEN];
        for (int i = 0; i < R * C; i++) x0[i] = (float)(20.0 * rng_uniform(&r) - 10.0);
        for (int row = 0; row < R; row++) targets[row] = row % 3 == 2 ? -1 : (int)rng_below(&r, (uint32_t)C);
        Tensor *x = leaf(2, (const int[]){ R, C }, x0);
        tape_reset(&tape);
        Tensor *loss = ad_cross_entropy(&tape, x, targets);
        tape_backward(&tape, loss);
        double total = 0, dxr[4 * MAXLEN];
        int counted = 0;
        for (int row = 0; row < R; row++) counted += targets[row] >= 0;
        for (int row = 0; row < R; row++) {
            const float *z = x0 + row * C;
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < C; j++) mx = fmax(mx, z[j]);
            for (int j = 0; j < C; j++) sum += exp(z[j] - mx);
            for (int j = 0; j < C; j++)
                dxr[row * C + j] = targets[row] < 0 ? 0 : (exp(z[j] - mx) / sum - (j == targets[row])) / counted;
            if (targets[row] >= 0) total += log(sum) + mx - z[targets[row]];
        }
        double lr = total / counted;
        worst_loss = fmax(worst_loss, ulps(loss->data, &lr, 1, 1.0));
        worst_dx = fmax(worst_dx, ulps(x->grad, dxr, R * C, 1.0 / counted));
        gc_leaf_free(x);
    }
    printf("  cross-entropy vs double, C = 1…100: loss %.2f ulp, dx %.2f ulp\n", worst_loss, worst_dx);
    CHECK(worst_loss <= 8 && worst_dx <= 16, "cross-entropy: loss %.2f, dx %.2f ulp", worst_loss, worst_dx);
}

/* Three Adam(W) steps on parameter tensors of every length (tails of the
 * vectorised loop) against the same update in double. */
static void test_adam_lengths(void) {
    CfgTrain cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.optimizer, sizeof cfg.optimizer, "adamw");
    cfg.beta1 = 0.9f;
    cfg.beta2 = 0.999f;
    cfg.eps = 1e-8f;
    cfg.weight_decay = 0.1f;
    double worst = 0;
    for (int k = 0; k < N_LENGTHS; k++) {
        int n = LENGTHS[k];
        ParamStore ps;
        params_init(&ps, 2);
        params_add(&ps, "w", 1, &n, 1);
        params_add(&ps, "b", 1, &n, 0);
        params_finalize(&ps);
        Rng r = rng_stream(11, (uint64_t)n);
        double p[2 * MAXLEN], m[2 * MAXLEN] = { 0 }, v[2 * MAXLEN] = { 0 };
        for (long i = 0; i < ps.total; i++) p[i] = ps.data[i] = (float)(rng_uniform(&r) - 0.5);
        for (int t = 1; t <= 3; t++) {
            double c1 = 1 - pow(0.9, t), c2 = 1 - pow(0.999, t);
            for (long i = 0; i < ps.total; i++) {
                double g = ps.grad[i] = (float)(rng_uniform(&r) - 0.5) * (t == 2 ? 1e-4f : 1.0f);
                m[i] = 0.9 * m[i] + 0.1 * g;
                v[i] = 0.999 * v[i] + 0.001 * g * g;
                double wd = i < n ? 0.1 : 0.0;
                p[i] -= 1e-2 * (m[i] / c1 / (sqrt(v[i] / c2) + 1e-8) + wd * p[i]);
            }
            optim_adam_step(&ps, &cfg, 1e-2f, t);
        }
        float got[2 * MAXLEN];
        memcpy(got, ps.data, (size_t)ps.total * sizeof(float));
        worst = fmax(worst, ulps(got, p, ps.total, 1.0));
        params_free(&ps);
    }
    printf("  adamw vs double, 1…100 parameters, 3 steps: %.2f ulp\n", worst);
    CHECK(worst <= 8, "adamw: %.2f ulp from double", worst);
}

int main(void) {
    arena_init(&arena, 1 << 20);
    tape_init(&tape, &arena);
    printf("vectorised kernels against scalar references:\n");
    test_elementwise_tails();
    test_softmax_lengths();
    test_layernorm_lengths();
    test_cross_entropy_lengths();
    test_adam_lengths();
    test_softmax();
    test_cross_entropy();
    test_layernorm();
    test_attention();
    test_linear_attention();
    tape_free(&tape);
    arena_free(&arena);
    return check_exit("test_numerics");
}
