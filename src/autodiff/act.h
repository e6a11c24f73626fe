/* act.h — activations as inline functions giving the value and the derivative at
 * x in one go, for the ops that apply them elementwise (ops_pointwise.c's
 * activations, ops_mlp.c's fused MLP).  Branch-free (fm_select), so the loops
 * applying them vectorise.  Internal to src/autodiff. */
#ifndef ATTNLAB_AUTODIFF_ACT_H
#define ATTNLAB_AUTODIFF_ACT_H

#include "attnlab/util/fastmath.h"

#include <math.h>

typedef struct ValDer { float y, d; } ValDer;

/* Both GeLU forms clamp x to ±15 where it feeds the curve: beyond, the result is
 * x·1 or x·0 and the derivative exactly 1 or 0 in float, and the clamp keeps x³,
 * x² finite, so every finite x gives a finite y and d, and d(±inf) is the limit.
 * y(−inf) is NaN (−inf·0), as in PyTorch. */
static inline float gelu_clamp(float x) { return fm_clamp(x, -15.0f, 15.0f); }

/* σ(z) = 1/(1 + e^−z) and 1 − σ(z), both from e = e^−|z| ≤ 1 (r = 1/(1+e) is one
 * of them, e·r the other), so nothing overflows and each keeps full relative
 * precision in its tail. */
typedef struct Sigmoid { float s, one_minus_s; } Sigmoid;

static inline Sigmoid sigmoid(float z) {
    float e = fm_exp(-fabsf(z));
    float r = 1.0f / (1.0f + e), er = e * r;
    return (Sigmoid){ fm_select(z >= 0.0f, r, er), fm_select(z >= 0.0f, er, r) };
}

/* GeLU, tanh form: 0.5·x·(1 + tanh u), u = √(2/π)·(x + 0.044715x³).  Since
 * 1 + tanh u = 2σ(2u), this is x·σ(2u): one exp instead of a tanh, and no
 * cancellation of 1 + tanh u for x ≪ 0.  The derivative reuses σ:
 *   d = σ + x·σ·(1 − σ)·(2u)′. */
static inline ValDer gelu_tanh(float x) {
    const float k = 1.5957691216f, k3 = k * 0.044715f;  /* 2u = x·(k + k3·x²) */
    float xc = gelu_clamp(x), x2 = xc * xc;
    float z = xc * FM_FMA(k3, x2, k);
    Sigmoid g = sigmoid(z);
    float dz = FM_FMA(3.0f * k3, x2, k);
    return (ValDer){ x * g.s, FM_FMA(xc * dz, g.s * g.one_minus_s, g.s) };
}

/* SiLU (swish): x·σ(x); d = σ + x·σ·(1 − σ) = σ·(1 + x·(1 − σ)).  For x ≪ 0, σ
 * flushes to 0 (fm_exp), so y = −0 and d = −0; y(+inf) = +inf and y(−inf) =
 * −inf·0 = NaN, as PyTorch's x·sigmoid(x). */
static inline ValDer silu(float x) {
    Sigmoid g = sigmoid(x);
    return (ValDer){ x * g.s, g.s * FM_FMA(x, g.one_minus_s, 1.0f) };
}

/* GeLU, exact: x·Φ(x), Φ(x) = ½·erfc(−x/√2) (erfc: no cancellation for x ≪ 0);
 * d = Φ(x) + x·φ(x), φ the standard normal density.  fm_erfc, not libm's erfcf,
 * so that the loop vectorises like the tanh form's. */
static inline ValDer gelu_erf(float x) {
    float xc = gelu_clamp(x);
    float cdf = 0.5f * fm_erfc(-xc * 0.70710678f);
    float pdf = 0.39894228f * fm_exp(-0.5f * xc * xc);
    return (ValDer){ x * cdf, FM_FMA(xc, pdf, cdf) };
}

#endif
