/* linalg.h — the GEMM helpers of the ops built on products (ops_linalg.c,
 * ops_mlp.c).  Internal to src/autodiff. */
#ifndef ATTNLAB_AUTODIFF_LINALG_H
#define ATTNLAB_AUTODIFF_LINALG_H

#include "attnlab/util/gemm.h"

#include <string.h>

/* C (m, n) = op(A)·op(B) + beta·C, where op(A) is (m, k) and op(B) is (k, n).
 * A is stored (m, k), or (k, m) when ta; B is stored (k, n), or (n, k) when tb.
 * All three are dense, so the leading dimensions follow from the shapes. */
static inline void sgemm(int ta, int tb, int m, int n, int k, const float *A, const float *B,
                         float beta, float *C) {
    al_sgemm(ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
             m, n, k, 1.0f, A, ta ? m : k, B, tb ? k : n, beta, C, n);
}

/* y's rows = res + bias, res, bias, or nothing to add (then sgemm's beta is 0).
 * The pass is free: with beta = 0, OpenBLAS zeroes y in a pass of its own. */
static inline float linear_init(float *y, const float *bias, const float *res, long rows, int out) {
    if (!bias && !res) return 0.0f;
    if (!bias) {
        memcpy(y, res, (size_t)(rows * out) * sizeof(float));
        return 1.0f;
    }
    for (long r = 0; r < rows; r++) {
        float *yr = y + r * out;
        if (res)
            for (int j = 0; j < out; j++) yr[j] = res[r * out + j] + bias[j];
        else
            for (int j = 0; j < out; j++) yr[j] = bias[j];
    }
    return 1.0f;
}

#endif
