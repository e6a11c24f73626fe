/* gemm.c — see gemm.h. */
#include "attnlab/util/gemm.h"

#include <stdatomic.h>
#include <time.h>

static atomic_int g_on;
static atomic_llong g_ns, g_calls;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void al_sgemm(enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha,
              const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    if (!atomic_load_explicit(&g_on, memory_order_relaxed)) {
        cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    long long t0 = now_ns();
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    atomic_fetch_add_explicit(&g_ns, now_ns() - t0, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_calls, 1, memory_order_relaxed);
}

void gemm_timing_start(void) {
    atomic_store(&g_ns, 0);
    atomic_store(&g_calls, 0);
    atomic_store(&g_on, 1);
}

double gemm_timing_stop(long *calls) {
    atomic_store(&g_on, 0);
    if (calls) *calls = (long)atomic_load(&g_calls);
    return (double)atomic_load(&g_ns) * 1e-9;
}
