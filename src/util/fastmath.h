/* fastmath.h — float exp, expm1, tanh and row reductions written to vectorise.
 *
 * Why not libm: a call to expf/tanhf inside a loop stops gcc from vectorising the
 * loop, and GeLU, ELU and softmax run over every (B·T, d) activation each step.
 * Every function here is straight-line code: selects instead of branches, the
 * float→int rounding done with a bit trick, so a loop that calls one compiles at
 * -O3 -march=native to AVX2/AVX-512 with no calls.  The reductions keep 16
 * independent partial sums: strict IEEE (no -ffast-math) forbids gcc to reorder a
 * single running sum, but independent lanes it vectorises freely.
 *
 * Accuracy against double-precision libm (tests/test_fastmath.c sweeps them):
 *   fm_exp    ≤ 2 ulp (rel 1.5e-7) where the result is a normal float;
 *             +inf → +inf, −inf → 0, x > 88.72 → +inf, x < −103.98 → 0, in
 *             between the result is denormal (absolute error ≤ 1 denormal ulp); NaN → NaN.
 *   fm_expm1  ≤ rel 3e-7 everywhere (no cancellation near 0); −inf → −1.
 *   fm_tanh   ≤ rel 2.5e-7; ±1 exactly for |x| ≥ 9.01 and ±inf; NaN → NaN.
 * Results are the same on every path of a vectorised loop (no separate tail code
 * with different rounding), so a run is reproducible bit for bit. */
#ifndef ATTNLAB_UTIL_FASTMATH_H
#define ATTNLAB_UTIL_FASTMATH_H

#include <math.h>
#include <stdint.h>

/* With hardware FMA, fmaf is one instruction (and one rounding); without it a libm
 * fmaf would be a slow call, so fall back to the plain expression. */
#ifdef __FMA__
#define FM_FMA(a, b, c) fmaf((a), (b), (c))
#else
#define FM_FMA(a, b, c) ((a) * (b) + (c))
#endif

static inline uint32_t fm_bits(float f) {
    union { float f; uint32_t u; } v = { .f = f };
    return v.u;
}

static inline float fm_from_bits(uint32_t u) {
    union { uint32_t u; float f; } v = { .u = u };
    return v.f;
}

/* e^x.  x = n·ln2 + r with |r| ≤ ln2/2, e^x = 2^n·e^r. */
static inline float fm_exp(float x) {
    /* Beyond [−104, 89] the result is 0 or inf anyway; the clamp keeps n in
     * [−150, 128] so the scale factors below are normal floats.  NaN fails both
     * comparisons and flows through the arithmetic to a NaN result. */
    x = x < -104.0f ? -104.0f : x;
    x = x > 89.0f ? 89.0f : x;
    /* n = round(x/ln2): adding 1.5·2^23 leaves n in the low mantissa bits. */
    const float shift = 0x1.8p23f;
    float kf = FM_FMA(x, 0x1.715476p+0f, shift);
    int32_t n = (int32_t)(fm_bits(kf) - fm_bits(shift));
    kf -= shift;
    /* r = x − n·ln2 with ln2 split in two (Cody–Waite): n·0.693359375 is exact. */
    float r = FM_FMA(kf, -0.693359375f, x);
    r = FM_FMA(kf, 2.12194440e-4f, r);
    /* e^r = 1 + r + r²·P(r), Cephes' expf minimax polynomial for |r| ≤ ln2/2. */
    float p = 1.9875691500e-4f;
    p = FM_FMA(p, r, 1.3981999507e-3f);
    p = FM_FMA(p, r, 8.3334519073e-3f);
    p = FM_FMA(p, r, 4.1665795894e-2f);
    p = FM_FMA(p, r, 1.6666665459e-1f);
    p = FM_FMA(p, r, 5.0000001201e-1f);
    p = FM_FMA(p, r * r, r) + 1.0f;
    /* 2^n as 2^n1·2^n2, both normal for n in [−150, 128]: the first product is
     * exact, the second rounds once — to inf on overflow, gradually into the
     * denormals and to 0 on underflow, with no special-case selects. */
    int32_t n1 = n / 2, n2 = n - n1;
    float s1 = fm_from_bits((uint32_t)(n1 + 127) << 23);
    float s2 = fm_from_bits((uint32_t)(n2 + 127) << 23);
    return p * s1 * s2;
}

/* e^x − 1 without the cancellation of fm_exp(x) − 1 near 0 (ELU needs it there). */
static inline float fm_expm1(float x) {
    /* |x| < ln2: Taylor series to x⁹ (truncation < 1e-8 relative). */
    float p = 1.0f / 362880.0f;
    p = FM_FMA(p, x, 1.0f / 40320.0f);
    p = FM_FMA(p, x, 1.0f / 5040.0f);
    p = FM_FMA(p, x, 1.0f / 720.0f);
    p = FM_FMA(p, x, 1.0f / 120.0f);
    p = FM_FMA(p, x, 1.0f / 24.0f);
    p = FM_FMA(p, x, 1.0f / 6.0f);
    p = FM_FMA(p, x, 0.5f);
    float small = FM_FMA(p * x, x, x);
    /* Elsewhere |e^x − 1| ≥ 0.5, so the subtraction loses at most one bit. */
    float big = fm_exp(x) - 1.0f;
    /* e^x − 1 has the sign of x; copysign also keeps −0 (x + x²·p would give +0). */
    return copysignf(fabsf(x) < 0.693147f ? small : big, x);
}

/* tanh x, computed for |x| and given x's sign (tanh is odd; this keeps −0 too). */
static inline float fm_tanh(float x) {
    float a = fabsf(x);
    /* |x| < 0.625: odd polynomial (Cephes tanhf), where 1 − 2/(e^2a + 1) would cancel. */
    float z = a * a;
    float p = -5.70498872745e-3f;
    p = FM_FMA(p, z, 2.06390887954e-2f);
    p = FM_FMA(p, z, -5.37397155531e-2f);
    p = FM_FMA(p, z, 1.33314422036e-1f);
    p = FM_FMA(p, z, -3.33332819422e-1f);
    float small = FM_FMA(p * z, a, a);
    /* Otherwise 1 − 2/(e^2a + 1): once e^2a overflows to inf this is 1 exactly. */
    float big = 1.0f - 2.0f / (fm_exp(2.0f * a) + 1.0f);
    return copysignf(a < 0.625f ? small : big, x);
}

/* Row reductions.  FM_LANES independent partial results, combined at the end. */
#define FM_LANES 16

static inline float fm_sum(const float *x, long n) {
    float acc[FM_LANES] = { 0 };
    long i = 0;
    for (; i + FM_LANES <= n; i += FM_LANES)
        for (int j = 0; j < FM_LANES; j++) acc[j] += x[i + j];
    for (; i < n; i++) acc[0] += x[i];
    float s = 0.0f;
    for (int j = 0; j < FM_LANES; j++) s += acc[j];
    return s;
}

static inline float fm_dot(const float *x, const float *y, long n) {
    float acc[FM_LANES] = { 0 };
    long i = 0;
    for (; i + FM_LANES <= n; i += FM_LANES)
        for (int j = 0; j < FM_LANES; j++) acc[j] = FM_FMA(x[i + j], y[i + j], acc[j]);
    for (; i < n; i++) acc[0] = FM_FMA(x[i], y[i], acc[0]);
    float s = 0.0f;
    for (int j = 0; j < FM_LANES; j++) s += acc[j];
    return s;
}

/* Maximum; −inf for n = 0.  A NaN never wins a comparison, so it is skipped. */
static inline float fm_max(const float *x, long n) {
    float acc[FM_LANES];
    for (int j = 0; j < FM_LANES; j++) acc[j] = -INFINITY;
    long i = 0;
    for (; i + FM_LANES <= n; i += FM_LANES)
        for (int j = 0; j < FM_LANES; j++) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
    for (; i < n; i++) acc[0] = x[i] > acc[0] ? x[i] : acc[0];
    float m = -INFINITY;
    for (int j = 0; j < FM_LANES; j++) m = acc[j] > m ? acc[j] : m;
    return m;
}

#endif
