/* fastmath.h — float exp, expm1, tanh, erfc and row reductions written to vectorise.
 *
 * Why not libm: a call to expf/tanhf/erfcf inside a loop stops gcc from vectorising the
 * loop, and GeLU, ELU and softmax run over every (B·T, d) activation each step.
 * The elementwise functions are straight-line code (bit-mask selects instead of
 * branches, the float→int rounding done with a bit trick), so a loop calling one
 * compiles at -O3 to AVX2 or AVX-512 code with no calls; without AVX they still
 * work, on SSE2 or scalar.  The reductions use gcc vector extensions (see there).
 *
 * Accuracy against double-precision libm (tests/util/test_fastmath.c sweeps ~7e6
 * points each and checks ≤ 2 ulp, 2.5 for expm1; observed in brackets):
 *   fm_exp    x in [−86.64, 88.72]  [0.99 ulp, rel 8e-8].  x < −86.64 → 0 (results
 *             under 2.4e-38 are flushed, see there); x > 88.72 and +inf → +inf;
 *             −inf → 0; NaN → NaN.
 *   fm_expm1  everywhere, no cancellation near 0  [1.74 ulp, rel 1.2e-7]; −0 → −0,
 *             −inf → −1.
 *   fm_tanh   [1.28 ulp, rel 1.4e-7]; exactly ±1 for |x| ≥ 9.02 and ±inf; −0 → −0;
 *             NaN → NaN.
 *   fm_erfc   ≤ 5 ulp on [−10, 9.3]  [4.04 ulp, rel 2.6e-7]; above 9.3 at most a
 *             flushed 2e-39 away from erfc (fm_exp's flush); 2 for x ≤ −10 and
 *             −inf; NaN → NaN.
 * With FMA hardware every fused step is an explicit fmaf, and without it none is
 * (ISO C mode does not contract a·b + c), so vector body, scalar tail and any
 * build on the same CPU give bit-identical results. */
#ifndef ATTNLAB_UTIL_FASTMATH_H
#define ATTNLAB_UTIL_FASTMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

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

/* c ? a : b for two values already computed, as bit operations.  Why not `?:`:
 * gcc turns some `?:` back into branches (an operand computed only for the
 * select gets sunk into one; chained clamps become nested conditions) and, under
 * the default -ftrapping-math, will not speculate them again, so the whole loop
 * stays scalar — every time without AVX-512 masking, sometimes even with it. */
static inline float fm_select(int c, float a, float b) {
    uint32_t m = 0u - (uint32_t)(c != 0);
    return fm_from_bits((fm_bits(a) & m) | (fm_bits(b) & ~m));
}

/* x limited to [lo, hi]; NaN passes through (both comparisons are false). */
static inline float fm_clamp(float x, float lo, float hi) {
    return fm_select(x > hi, hi, fm_select(x < lo, lo, x));
}

/* e^x.  x = n·ln2 + r with |r| ≤ ln2/2, e^x = 2^n·e^r.
 * Results below 2^−125 (x < −86.64) are flushed to 0: keeping the denormals would
 * take a second scaling step here, and denormal operands can be very slow in the
 * arithmetic that follows (softmax sums, P·V) on some CPUs, while nothing
 * downstream can tell 2e-38 from 0. */
#define FM_EXP_MIN_X (-86.64f)

static inline float fm_exp(float x) {
    /* The clamp keeps n in [−125, 128]; above 88.72 the result overflows to inf by
     * itself.  NaN fails every comparison and flows through to a NaN result. */
    float xc = fm_clamp(x, FM_EXP_MIN_X, 89.0f);
    /* n = round(x/ln2): adding 1.5·2^23 leaves n in the low mantissa bits. */
    const float shift = 0x1.8p23f;
    float kf = FM_FMA(xc, 0x1.715476p+0f, shift);
    int32_t n = (int32_t)(fm_bits(kf) - fm_bits(shift));
    kf -= shift;
    /* r = x − n·ln2 with ln2 split in two (Cody–Waite): n·0.693359375 is exact. */
    float r = FM_FMA(kf, -0.693359375f, xc);
    r = FM_FMA(kf, 2.12194440e-4f, r);
    /* e^r = 1 + r + r²·P(r), Cephes' expf minimax polynomial for |r| ≤ ln2/2. */
    float p = 1.9875691500e-4f;
    p = FM_FMA(p, r, 1.3981999507e-3f);
    p = FM_FMA(p, r, 8.3334519073e-3f);
    p = FM_FMA(p, r, 4.1665795894e-2f);
    p = FM_FMA(p, r, 1.6666665459e-1f);
    p = FM_FMA(p, r, 5.0000001201e-1f);
    p = FM_FMA(p, r * r, r) + 1.0f;
    /* (2p)·2^(n−1): 2^128 is not a float, 2^127 is; doubling p is exact. */
    float y = (p + p) * fm_from_bits((uint32_t)(n + 126) << 23);
    return fm_select(x < FM_EXP_MIN_X, 0.0f, y);
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
    return copysignf(fm_select(fabsf(x) < 0.693147f, small, big), x);
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
    return copysignf(fm_select(a < 0.625f, small, big), x);
}

/* erfc x (GeLU's exact form).  Coefficients fitted for this file: relative minimax
 * in double, each rounded to float in turn with the rest refitted.
 *   |x| < 0.5   1 − erf x, erf x = x·P(x²)   (erfc ∈ (0.47, 1.53): no cancellation)
 *   |x| ≥ 0.5   erfc |x| = e^−x²·erfcx |x|, the scaled tail erfcx a = e^a²·erfc a
 *               being smooth: a polynomial in a − 1.25 on [0.5, 2), s·R(s) with
 *               s = 1/a on [2, 10];  erfc x = 2 − erfc |x| for x < 0.
 * e^−a² is e^−hi·(1 − lo) with hi + lo = a² exactly (Dekker's product on a split
 * into 12-bit halves), so rounding a² does not cost up to a²·2⁻²⁴ relative.  |x|
 * is clamped to 10: beyond 9.3, e^−x² is under fm_exp's flush and erfc is 0
 * (x > 0) or 2 (x < 0) in float anyway. */
static inline float fm_erfc(float x) {
    float z = x * x;
    float p = 0.0028503148f;
    p = FM_FMA(p, z, -0.0258209f);
    p = FM_FMA(p, z, 0.11268135f);
    p = FM_FMA(p, z, -0.3761187f);
    p = FM_FMA(p, z, 1.1283791f);
    float small = FM_FMA(-x, p, 1.0f);

    float a = fm_clamp(fabsf(x), 0.0f, 10.0f), u = a - 1.25f;
    float m = 6.221134e-05f;
    m = FM_FMA(m, u, -0.00019004059f);
    m = FM_FMA(m, u, 0.0004694249f);
    m = FM_FMA(m, u, -0.0013118447f);
    m = FM_FMA(m, u, 0.0035545279f);
    m = FM_FMA(m, u, -0.009084506f);
    m = FM_FMA(m, u, 0.022011057f);
    m = FM_FMA(m, u, -0.05021807f);
    m = FM_FMA(m, u, 0.10679561f);
    m = FM_FMA(m, u, -0.20882188f);
    m = FM_FMA(m, u, 0.36782292f);
    float s = 1.0f / a, r = -0.2954632f;
    r = FM_FMA(r, s, 0.52170205f);
    r = FM_FMA(r, s, -0.00560785f);
    r = FM_FMA(r, s, -0.6899985f);
    r = FM_FMA(r, s, 0.6354806f);
    r = FM_FMA(r, s, -0.03814703f);
    r = FM_FMA(r, s, -0.27802122f);
    r = FM_FMA(r, s, -0.00023916939f);
    r = FM_FMA(r, s, 0.5641955f);
    float scaled = fm_select(a < 2.0f, m, s * r);

    float ah = fm_from_bits(fm_bits(a) & 0xfffff000u), al = a - ah;
    float hi = a * a, lo = ((ah * ah - hi) + 2.0f * ah * al) + al * al;
    float e = fm_exp(-hi) * scaled;
    float tail = FM_FMA(-lo, e, e);
    float big = fm_select(x < 0.0f, 2.0f - tail, tail);
    return fm_select(fabsf(x) < 0.5f, small, big);
}

/* Row reductions.  Strict IEEE (no -ffast-math) forbids gcc to reorder one running
 * sum, so it will not vectorise `s += x[i]`; these keep 16 independent partial
 * results in two 8-wide vectors (gcc's generic vectors: AVX registers where
 * available, pairs of SSE registers or plain scalars elsewhere) and add them up
 * at the end.  The order of additions is fixed, so results are reproducible. */
typedef float fm_v8 __attribute__((vector_size(32)));
typedef int32_t fm_v8i __attribute__((vector_size(32)));

/* Helpers take vectors by pointer: passing a 32-byte vector by value is an ABI
 * question without AVX (gcc warns), and once inlined the pointers vanish. */
static inline fm_v8 *fm_load8(fm_v8 *v, const float *p) {
    memcpy(v, p, sizeof *v);   /* an unaligned vector load */
    return v;
}

static inline float fm_hsum8(const fm_v8 *v) {
    float s = 0.0f;
    for (int j = 0; j < 8; j++) s += (*v)[j];
    return s;
}

/* Two-source lane shuffle: lanes 0–7 of a, then 8–15 of b (gcc and clang spell it
 * differently). */
#if defined(__clang__)
#define FM_SHUFFLE8(a, b, i0, i1, i2, i3, i4, i5, i6, i7) \
    __builtin_shufflevector(a, b, i0, i1, i2, i3, i4, i5, i6, i7)
#else
#define FM_SHUFFLE8(a, b, i0, i1, i2, i3, i4, i5, i6, i7) \
    __builtin_shuffle(a, b, (fm_v8i){ i0, i1, i2, i3, i4, i5, i6, i7 })
#endif

/* (*out)[k] = the sum of v[k]'s eight lanes, k < 8: eight horizontal sums in one
 * transposing pass (three rounds of pairwise shuffles and adds). */
static inline void fm_hsum8x8(const fm_v8 *v, fm_v8 *out) {
    fm_v8 s[4], q[2];
    for (int k = 0; k < 4; k++)
        s[k] = FM_SHUFFLE8(v[2 * k], v[2 * k + 1], 0, 8, 2, 10, 4, 12, 6, 14) +
               FM_SHUFFLE8(v[2 * k], v[2 * k + 1], 1, 9, 3, 11, 5, 13, 7, 15);
    for (int k = 0; k < 2; k++)
        q[k] = FM_SHUFFLE8(s[2 * k], s[2 * k + 1], 0, 1, 8, 9, 4, 5, 12, 13) +
               FM_SHUFFLE8(s[2 * k], s[2 * k + 1], 2, 3, 10, 11, 6, 7, 14, 15);
    *out = FM_SHUFFLE8(q[0], q[1], 0, 1, 2, 3, 8, 9, 10, 11) +
           FM_SHUFFLE8(q[0], q[1], 4, 5, 6, 7, 12, 13, 14, 15);
}

/* *acc = max(*acc, *v) per lane, as a mask blend (C has no vector `?:`). */
static inline void fm_max8(fm_v8 *acc, const fm_v8 *v) {
    fm_v8i m = *v > *acc;
    *acc = (fm_v8)(((fm_v8i)*v & m) | ((fm_v8i)*acc & ~m));
}

static inline float fm_sum(const float *x, long n) {
    fm_v8 a = { 0 }, b = { 0 }, u;
    long i = 0;
    for (; i + 16 <= n; i += 16) {
        a += *fm_load8(&u, x + i);
        b += *fm_load8(&u, x + i + 8);
    }
    a += b;
    float s = fm_hsum8(&a);
    for (; i < n; i++) s += x[i];
    return s;
}

static inline float fm_dot(const float *x, const float *y, long n) {
    fm_v8 a = { 0 }, b = { 0 }, u, v;
    long i = 0;
    for (; i + 16 <= n; i += 16) {
        a += *fm_load8(&u, x + i) * *fm_load8(&v, y + i);
        b += *fm_load8(&u, x + i + 8) * *fm_load8(&v, y + i + 8);
    }
    a += b;
    float s = fm_hsum8(&a);
    for (; i < n; i++) s += x[i] * y[i];
    return s;
}

/* Maximum; −inf for n = 0.  A NaN never wins a comparison, so it is skipped. */
static inline float fm_max(const float *x, long n) {
    const float ninf = -INFINITY;
    fm_v8 a = { ninf, ninf, ninf, ninf, ninf, ninf, ninf, ninf }, b = a, u;
    long i = 0;
    for (; i + 16 <= n; i += 16) {
        fm_max8(&a, fm_load8(&u, x + i));
        fm_max8(&b, fm_load8(&u, x + i + 8));
    }
    fm_max8(&a, &b);
    float m = ninf;
    for (int j = 0; j < 8; j++) m = a[j] > m ? a[j] : m;
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

#endif
