/* gemm.h — the one door to the BLAS: every matrix product of the framework is an
 * al_sgemm call (cblas_sgemm, row-major), so a benchmark can tell how much of a
 * step is GEMM and how much is everything else.
 *
 * Accounting is off unless gemm_timing_start() turned it on; then each call adds
 * its wall time (CLOCK_MONOTONIC, ~40 ns per call for the two clock reads) to a
 * process-wide atomic total, whichever thread makes it.  With data-parallel
 * threads the total is a sum over threads: compare it with threads × wall time. */
#ifndef ATTNLAB_UTIL_GEMM_H
#define ATTNLAB_UTIL_GEMM_H

#include <cblas.h>

/* C (m, n) = alpha·op(A)·op(B) + beta·C, all row-major (cblas_sgemm's other arguments). */
void al_sgemm(enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha,
              const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);

/* Zeroes the totals and turns accounting on. */
void gemm_timing_start(void);
/* Turns accounting off; returns the seconds spent inside al_sgemm since the start
 * (summed over threads) and, in *calls, how many calls (may be NULL). */
double gemm_timing_stop(long *calls);

#endif
