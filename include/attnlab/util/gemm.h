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

/* The OpenBLAS kernel set this process runs ("SkylakeX", "Haswell", …). */
const char *gemm_core_name(void);

/* Why: OpenBLAS chooses its kernels when it loads: from OPENBLAS_CORETYPE when that
 * is set, else from a table of CPU models.  Both can leave an AVX-512 CPU on the
 * AVX2 ("Haswell") kernels: machines set OPENBLAS_CORETYPE=Haswell for a whole
 * fleet (this project's own build machines do), and Debian bookworm's OpenBLAS
 * 0.3.21 may not know a newer CPU model.  On an AMD EPYC (Zen 4) here the AVX-512
 * kernels ran sgemm 1024³ 1.8× faster and the steps of paper 000's Fig. 1b surrogate
 * 1.5× faster (docs/design.md, decision 15).  OpenBLAS reads its variables only as it
 * loads, before main, so the choice is made by re-executing the program once:
 *
 *   - nothing is done when ATTNLAB_BLAS_KERNELS=as_set (the opt-out: OpenBLAS then
 *     runs exactly as the environment says), when the CPU lacks any of the AVX-512
 *     subsets the SkylakeX kernels use (F, CD, BW, DQ, VL), or when the kernels in
 *     use already are AVX-512 ones;
 *   - else, if OPENBLAS_CORETYPE is set, the program runs again without it, so that
 *     OpenBLAS chooses for the CPU; if it was not set (or OpenBLAS's own choice is
 *     still an AVX2 set), it runs again with OPENBLAS_CORETYPE=SkylakeX.
 *
 * ATTNLAB_BLAS_REEXEC=1 marks the re-executed process, so this happens at most
 * twice.  Returns when nothing is to be done or execv failed (the program then runs
 * on as loaded).  summary.json records the kernels used ("blas_core"). */
void gemm_prefer_avx512_kernels(char **argv);

#endif
