/* grad_put.h — the write of a backward into an input's grad, for ops that follow
 * the tape's "first writer assigns" rule (tape.h): `acc` 0 stores, 1 adds.
 *
 * Each helper is one `if (acc)` around two loops, so each loop is a plain stream gcc
 * vectorises and a store never reads the (uninitialised) destination.  The
 * arithmetic is the same in both branches: a first writer stores exactly the value
 * that adding it to a zeroed grad would give (up to the sign of a zero). */
#ifndef ATTNLAB_AUTODIFF_GRAD_PUT_H
#define ATTNLAB_AUTODIFF_GRAD_PUT_H

#include <stddef.h>

/* dst[i] (= or +=) s·src[i]·m[i] for i < n; m NULL means 1. */
static inline void grad_put(float *restrict dst, const float *restrict src, const float *restrict m,
                            float s, long n, int acc) {
    if (m) {
        if (acc) for (long i = 0; i < n; i++) dst[i] += s * src[i] * m[i];
        else     for (long i = 0; i < n; i++) dst[i] = s * src[i] * m[i];
    } else {
        if (acc) for (long i = 0; i < n; i++) dst[i] += s * src[i];
        else     for (long i = 0; i < n; i++) dst[i] = s * src[i];
    }
}

/* dst (C) (= or +=) Σ_r s·src[r]·m[r] over R rows of C (m NULL means 1): a bias
 * gradient, in one pass over src.  Row by row, so every loop runs over contiguous
 * columns; the first row stores when acc is 0 and the others add. */
static inline void grad_put_colsum(float *restrict dst, const float *restrict src, const float *restrict m,
                                   float s, long R, int C, int acc) {
    for (long r = 0; r < R; r++)
        grad_put(dst, src + r * C, m ? m + r * C : NULL, s, C, acc || r > 0);
}

/* The row backward of the normalising maps, whose Jacobian removes a projection:
 * dst[i] (= or +=) m[i]·(src[i] − k)  (softmax: y∘(dy − ⟨dy, y⟩)) … */
static inline void grad_put_centred(float *restrict dst, const float *restrict src, const float *restrict m,
                                    float k, long n, int acc) {
    if (acc) for (long i = 0; i < n; i++) dst[i] += m[i] * (src[i] - k);
    else     for (long i = 0; i < n; i++) dst[i] = m[i] * (src[i] - k);
}

/* … and dst[i] (= or +=) s·(src[i] − w[i]·k)  (l2norm: (dy − y·⟨y, dy⟩)/‖x‖). */
static inline void grad_put_projected(float *restrict dst, const float *restrict src, const float *restrict w,
                                      float k, float s, long n, int acc) {
    if (acc) for (long i = 0; i < n; i++) dst[i] += s * (src[i] - w[i] * k);
    else     for (long i = 0; i < n; i++) dst[i] = s * (src[i] - w[i] * k);
}

/* dst[i] (= or +=) v for i < n. */
static inline void grad_put_const(float *restrict dst, float v, long n, int acc) {
    if (acc) for (long i = 0; i < n; i++) dst[i] += v;
    else     for (long i = 0; i < n; i++) dst[i] = v;
}

#endif
