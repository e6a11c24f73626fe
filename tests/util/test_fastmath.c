/* test_fastmath.c — accuracy of util/fastmath.h and of GeLU (value and derivative)
 * against double-precision libm.
 *
 * The functions are evaluated in array loops, the way the ops call them, so the
 * vectorised code is what is measured.  Errors are in units in the last place of
 * the float nearest the exact result (the denormal ulp 2⁻¹⁴⁹ below FLT_MIN), and
 * as relative error.  Bounds checked (observed values are printed):
 *   fm_exp    ≤ 2 ulp on [−86.64, 88.72]; exactly 0 below (the documented flush)
 *   fm_expm1  ≤ 2.5 ulp on [−104, 88.72] (small |x| included: no cancellation)
 *   fm_tanh   ≤ 2 ulp on [−30, 30]
 *   fm_erfc   ≤ 5 ulp on [−10, 9.3] (above, e^−x² is under fm_exp's flush)
 *   GeLU (both forms)  value ≤ 4 ulp on [−1, 30]; on all of [−30, 30] within
 *                      (4 + 2·cond) ulp, cond = |x·y′/y| the function's condition
 *                      number (it grows to ~200 in the negative tail, where
 *                      rounding the argument of exp/erfc is itself that far off;
 *                      see check_gelu).  Derivative ≤ 1e-6 absolute: it lies in
 *                      [−0.17, 1.13] and crosses 0, so absolute error is the
 *                      meaningful measure.
 * Special values: documented in fastmath.h and ops_pointwise.c, checked here. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"
#include "check.h"

#include "attnlab/util/fastmath.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

/* The spacing of floats at |ref| (the denormal spacing 2⁻¹⁴⁹ below FLT_MIN). */
static double ulp_of(double ref) {
    double a = fabs(ref);
    return a < FLT_MIN ? 0x1p-149 : ldexp(1.0, ilogb(a) - 23);
}

/* |got − ref| in ulps of the float nearest ref (inf when one is not finite and the
 * other differs). */
static double ulp_err(float got, double ref) {
    if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got) ? 0 : INFINITY;
    if (isinf(ref) || isinf(got)) return (double)got == ref ? 0 : INFINITY;
    return fabs((double)got - ref) / ulp_of(ref);
}

/* Every `stride`-th float (by bit pattern) in [lo, hi], plus hi: with an odd stride
 * this touches every exponent and thousands of mantissas in each binade. */
static long float_sweep(float lo, float hi, unsigned stride, float **out) {
    long cap = 1 << 20, n = 0;
    float *x = al_malloc((size_t)cap * sizeof(float));
    for (float v = lo; v < hi;) {
        if (n == cap) x = al_realloc(x, (size_t)(cap *= 2) * sizeof(float));
        x[n++] = v;
        /* Step `stride` floats towards hi (bit patterns are monotone per sign). */
        uint32_t b = fm_bits(v);
        if (v < 0) b = b > stride + 0x80000000u ? b - stride : 0x00000000u;
        else b += stride;
        v = fm_from_bits(b);
    }
    x = al_realloc(x, (size_t)(n + 1) * sizeof(float));
    x[n++] = hi;
    *out = x;
    return n;
}

typedef double (*DoubleFn)(double);

static void fill_exp(const float *x, float *y, long n)   { for (long i = 0; i < n; i++) y[i] = fm_exp(x[i]); }
static void fill_expm1(const float *x, float *y, long n) { for (long i = 0; i < n; i++) y[i] = fm_expm1(x[i]); }
static void fill_tanh(const float *x, float *y, long n)  { for (long i = 0; i < n; i++) y[i] = fm_tanh(x[i]); }
static void fill_erfc(const float *x, float *y, long n)  { for (long i = 0; i < n; i++) y[i] = fm_erfc(x[i]); }

/* Max ulp error of fill() over the sweep; prints it with the worst x. */
static double sweep_ulp(const char *name, void (*fill)(const float *, float *, long), DoubleFn ref,
                        float lo, float hi) {
    float *x;
    long n = float_sweep(lo, hi, 331, &x);
    float *y = al_malloc((size_t)n * sizeof(float));
    fill(x, y, n);
    double worst = 0, worst_rel = 0;
    float at = 0;
    for (long i = 0; i < n; i++) {
        double r = ref((double)x[i]);
        double u = ulp_err(y[i], r);
        if (u > worst) { worst = u; at = x[i]; }
        if (fabs(r) >= FLT_MIN && r != 0) worst_rel = fmax(worst_rel, fabs((double)y[i] - r) / fabs(r));
    }
    printf("  %-8s [%g, %g] %ld points: max %.2f ulp (at %.9g), max rel %.2e\n", name, (double)lo,
           (double)hi, n, worst, (double)at, worst_rel);
    free(x);
    free(y);
    return worst;
}

static void check_elementary(void) {
    printf("elementary functions vs double libm:\n");
    CHECK(sweep_ulp("fm_exp", fill_exp, exp, FM_EXP_MIN_X, 88.72f) <= 2.0, "fm_exp > 2 ulp");
    CHECK(sweep_ulp("fm_expm1", fill_expm1, expm1, -104.0f, 88.72f) <= 2.5, "fm_expm1 > 2.5 ulp");
    CHECK(sweep_ulp("fm_tanh", fill_tanh, tanh, -30.0f, 30.0f) <= 2.0, "fm_tanh > 2 ulp");
    CHECK(sweep_ulp("fm_erfc", fill_erfc, erfc, -10.0f, 9.3f) <= 5.0, "fm_erfc > 5 ulp");

    /* Edges of the range and special values, through the same array loops. */
    static const float xs[] = { 88.7228f, 88.7229f, 89.0f, 1e4f, INFINITY, FM_EXP_MIN_X, -86.65f,
                                -1e4f, -INFINITY, NAN, -0.0f, 9.0f, 9.02f, 1e30f };
    enum { NX = sizeof xs / sizeof xs[0] };
    float e[NX], m[NX], t[NX];
    fill_exp(xs, e, NX);
    fill_expm1(xs, m, NX);
    fill_tanh(xs, t, NX);
    CHECK(isfinite(e[0]) && e[0] > 3.4e38f, "exp(88.7228) = %g, want finite ≈ 3.40e38", (double)e[0]);
    CHECK(isinf(e[1]) && isinf(e[2]) && isinf(e[3]) && isinf(e[4]), "exp overflow not inf");
    CHECK(e[5] >= 2.3e-38f, "exp(%g) = %g, want ≈ 2.35e-38", (double)xs[5], (double)e[5]);
    CHECK(e[6] == 0 && e[7] == 0 && e[8] == 0, "exp below the flush threshold not 0");
    CHECK(isnan(e[9]) && isnan(m[9]) && isnan(t[9]), "NaN does not propagate");
    CHECK(m[8] == -1.0f && m[7] == -1.0f && isinf(m[4]), "expm1 limits");
    CHECK(t[4] == 1.0f && t[8] == -1.0f && t[3] == 1.0f && t[7] == -1.0f && t[13] == 1.0f,
          "tanh does not saturate to ±1");
    CHECK(t[12] == 1.0f && t[11] < 1.0f, "tanh reaches 1 between 9 and 9.02 (libm: 9.01)");
    CHECK(signbit(t[10]) && signbit(m[10]) && e[10] == 1.0f, "−0: tanh, expm1 keep the sign");
    /* erfc: the limits, the clamp at ±10, NaN, and the flush beyond 9.3. */
    static const float xe[] = { INFINITY, -INFINITY, NAN, -0.0f, 10.0f, -10.0f, 1e30f, -1e30f, 9.4f };
    enum { NE = sizeof xe / sizeof xe[0] };
    float c[NE];
    fill_erfc(xe, c, NE);
    CHECK(c[0] == 0.0f && c[1] == 2.0f && isnan(c[2]) && c[3] == 1.0f, "erfc at ±inf, NaN, −0");
    CHECK(c[4] == 0.0f && c[5] == 2.0f && c[6] == 0.0f && c[7] == 2.0f, "erfc beyond ±10");
    CHECK(c[8] >= 0.0f && c[8] <= 3e-39f, "erfc(9.4) = %g, want ≤ 3e-39", (double)c[8]);
}

/* ------------------------------------------------------------------------------ */
/* GeLU through ad_gelu (value) and its backward with dout = 1 (derivative). */

/* Exact references in double.  Tanh form as x·σ(2u) (same function; no
 * cancellation in the tail, where 1 + tanh u would round to 0 even in double). */
static double gelu_tanh_ref(double x, double *d) {
    const double k = 2.0 * sqrt(2.0 / 3.14159265358979323846);
    double z = k * (x + 0.044715 * x * x * x), s = 1.0 / (1.0 + exp(-z));
    *d = s + x * s * (1.0 - s) * k * (1.0 + 3.0 * 0.044715 * x * x);
    return x * s;
}

static double gelu_erf_ref(double x, double *d) {
    double cdf = 0.5 * erfc(-x / sqrt(2.0));
    *d = cdf + x * exp(-0.5 * x * x) / sqrt(2.0 * 3.14159265358979323846);
    return x * cdf;
}

static void gelu_eval(AdGelu kind, const float *x, long n, float *y, float *d) {
    Arena arena;
    arena_init(&arena, 1 << 20);
    Tape t;
    tape_init(&t, &arena);
    Tensor in;
    float *grad = al_calloc((size_t)n, sizeof(float));
    tensor_init(&in, (float *)x, grad, 1, (const int[]){ (int)n });
    Tensor *out = ad_gelu(&t, &in, kind);
    memcpy(y, out->data, (size_t)n * sizeof(float));
    float *ones = al_malloc((size_t)n * sizeof(float));
    for (long i = 0; i < n; i++) ones[i] = 1.0f;
    tape_backward_from(&t, out, ones);
    memcpy(d, grad, (size_t)n * sizeof(float));
    free(ones);
    free(grad);
    tape_free(&t);
    arena_free(&arena);
}

static void check_gelu(AdGelu kind) {
    const char *name = kind == GELU_TANH ? "gelu tanh" : "gelu erf";
    float *x;
    long n = float_sweep(-30.0f, 30.0f, 997, &x);
    float *y = al_malloc((size_t)n * sizeof(float)), *d = al_malloc((size_t)n * sizeof(float));
    gelu_eval(kind, x, n, y, d);
    double worst_ulp = 0, worst_ratio = 0, worst_d = 0;
    float at_y = 0, at_r = 0, at_d = 0;
    for (long i = 0; i < n; i++) {
        double dr, yr = kind == GELU_TANH ? gelu_tanh_ref(x[i], &dr) : gelu_erf_ref(x[i], &dr);
        /* GeLU is ill-conditioned in its negative tail: a relative change δ of x
         * changes y by cond·δ, cond = |x·y′/y| (≈ 1 near 0, growing like |2u| and
         * x² in the tails), and the few roundings that form the argument of
         * exp/erfc (2u from x, x², x³; or x/√2) are such a δ of a couple of ½ulp.
         * So the bound is 4 ulp plus 2·cond ulp; plus, for the far tail where
         * fm_exp flushes a gate below e^−86.64 ≈ 2.35e-38 to 0 (and erfcf's gate
         * turns denormal), 2·|x|·e^−86.64: twice, as the rounded 2u decides which
         * side of the threshold a point near it falls on. */
        double cond = x[i] == 0.0f ? 0.0 : fabs((double)x[i] * dr / yr);
        double allowed = (4.0 + 2.0 * cond) * ulp_of(yr) + 2.0 * fabs(x[i]) * exp(FM_EXP_MIN_X);
        double ratio = fabs((double)y[i] - yr) / allowed, u = ulp_err(y[i], yr);
        if (ratio > worst_ratio) { worst_ratio = ratio; at_r = x[i]; }
        if (x[i] >= -1.0f && u > worst_ulp) { worst_ulp = u; at_y = x[i]; }
        double ad = fabs((double)d[i] - dr);
        if (ad > worst_d) { worst_d = ad; at_d = x[i]; }
    }
    printf("  %-9s [-30, 30] %ld points: value max %.2f ulp on [-1, 30] (at %.7g), max"
           " error/bound %.2f (at %.7g); derivative max abs err %.2e (at %.7g)\n",
           name, n, worst_ulp, (double)at_y, worst_ratio, (double)at_r, worst_d, (double)at_d);
    CHECK(worst_ulp <= 4.0, "%s value error %.2f ulp > 4 on [-1, 30]", name, worst_ulp);
    CHECK(worst_ratio <= 1.0, "%s value error %.2f times the bound", name, worst_ratio);
    CHECK(worst_d <= 1e-6, "%s derivative error %.2e > 1e-6", name, worst_d);
    free(x);
    free(y);
    free(d);

    /* Extremes: finite inputs give finite results, and ±inf the limits. */
    static const float xs[] = { 1e4f, -1e4f, 1e30f, -1e30f, INFINITY, -INFINITY, NAN };
    enum { NX = sizeof xs / sizeof xs[0] };
    float ye[NX], de[NX];
    gelu_eval(kind, xs, NX, ye, de);
    CHECK(ye[0] == 1e4f && de[0] == 1.0f, "%s(1e4) = %g, d %g", name, (double)ye[0], (double)de[0]);
    CHECK(ye[1] == 0.0f && de[1] == 0.0f, "%s(-1e4) = %g, d %g", name, (double)ye[1], (double)de[1]);
    CHECK(ye[2] == 1e30f && de[2] == 1.0f, "%s(1e30) = %g, d %g", name, (double)ye[2], (double)de[2]);
    CHECK(ye[3] == 0.0f && de[3] == 0.0f, "%s(-1e30) = %g, d %g", name, (double)ye[3], (double)de[3]);
    CHECK(isinf(ye[4]) && de[4] == 1.0f && de[5] == 0.0f, "%s at ±inf", name);
    /* −inf·Φ(−inf) = −inf·0: NaN, as in PyTorch (documented, not a goal). */
    CHECK(isnan(ye[5]) && isnan(ye[6]) && isnan(de[6]), "%s NaN cases", name);
}

/* fm_hsum8x8: lane k of the result is the sum of vector k.  Integer-valued lanes, so
 * every order of addition is exact and the comparison is ==; distinct lane values so
 * a wrong shuffle cannot pass by symmetry. */
static void check_hsum8x8(void) {
    fm_v8 v[8], r;
    float want[8];
    for (int k = 0; k < 8; k++) {
        want[k] = 0.0f;
        for (int j = 0; j < 8; j++) {
            v[k][j] = (float)((k * 8 + j) * (j + 3) % 97);
            want[k] += v[k][j];
        }
    }
    fm_hsum8x8(v, &r);
    for (int k = 0; k < 8; k++)
        CHECK(r[k] == want[k], "fm_hsum8x8 lane %d = %g, want %g", k, (double)r[k], (double)want[k]);
}

int main(void) {
    check_elementary();
    check_hsum8x8();
    printf("GeLU through ad_gelu and its backward:\n");
    check_gelu(GELU_TANH);
    check_gelu(GELU_ERF);
    return check_exit("fastmath");
}
