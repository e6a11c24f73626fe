/* gemm.c — see gemm.h. */
#include "attnlab/util/gemm.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

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

const char *gemm_core_name(void) {
    const char *name = openblas_get_corename();
    return name ? name : "unknown";
}

static int cpu_has_skylakex_subsets(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl");
#else
    return 0;
#endif
}

/* The kernel sets of Debian's OpenBLAS 0.3.21 built for AVX-512. */
static int avx512_core(const char *core) {
    return !strcasecmp(core, "SkylakeX") || !strcasecmp(core, "Cooperlake") ||
           !strcasecmp(core, "SapphireRapids");
}

void gemm_prefer_avx512_kernels(char **argv) {
    const char *mode = getenv("ATTNLAB_BLAS_KERNELS");
    if ((mode && !strcmp(mode, "as_set")) || !cpu_has_skylakex_subsets() || avx512_core(gemm_core_name())) return;
    const char *again = getenv("ATTNLAB_BLAS_REEXEC");
    int forced = getenv("OPENBLAS_CORETYPE") != NULL;
    if (again && (!strcmp(again, "2") || (!strcmp(again, "1") && forced))) return;   /* tried already */
    if (forced ? unsetenv("OPENBLAS_CORETYPE") : setenv("OPENBLAS_CORETYPE", "SkylakeX", 1)) return;
    if (setenv("ATTNLAB_BLAS_REEXEC", again ? "2" : "1", 1)) return;
    execv("/proc/self/exe", argv);
}
