/* test_fpenv.c — the floating-point mode of the computing threads (util/fpenv.h):
 *   - a thread starts without the mode (so the checks below can see it change);
 *   - after fpenv_flush_denormals, a result that would be denormal is 0 (FTZ), a
 *     denormal operand counts as 0 (DAZ), and a normal result is untouched;
 *   - the BLAS in the same thread sees the mode: an sgemm over denormal inputs
 *     gives exact zeros, over normal ones the exact product;
 *   - a thread made after the call starts with the mode.
 * (The step workers set it themselves: tests/train/test_parallel.c.) */
#include "check.h"
#include "attnlab/util/fpenv.h"
#include "attnlab/util/gemm.h"

#include <float.h>
#include <pthread.h>
#include <stdio.h>

static void *report_mode(void *out) {
    *(int *)out = fpenv_flushing();
    return NULL;
}

int main(void) {
    if (fpenv_flushing() < 0) {
        printf("test_fpenv: no flush-to-zero mode on this CPU: skipped\n");
        return 77;
    }
    volatile float tiny = FLT_MIN, quarter = 0.25f, one = 1.0f;
    volatile float denormal = tiny * quarter;   /* made before the mode: 2^-128 */
    CHECK(fpenv_flushing() == 0, "a new thread already flushes denormals");
    CHECK(denormal > 0.0f && denormal < FLT_MIN, "the default mode keeps denormals: %g", (double)denormal);

    fpenv_flush_denormals();
    CHECK(fpenv_flushing() == 1, "fpenv_flush_denormals did not set FTZ and DAZ");
    volatile float r = tiny * quarter;
    CHECK(r == 0.0f, "FTZ: FLT_MIN / 4 gives %g, not 0", (double)r);
    r = denormal * one;
    CHECK(r == 0.0f, "DAZ: a denormal operand times 1 gives %g, not 0", (double)r);
    r = tiny * one;
    CHECK(r == FLT_MIN, "a normal result changed: %g", (double)r);

    float a[4] = { denormal, denormal, denormal, denormal }, b[4] = { 1, 2, 3, 4 }, c[4] = { 9, 9, 9, 9 };
    al_sgemm(CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
    CHECK(c[0] == 0 && c[1] == 0 && c[2] == 0 && c[3] == 0, "sgemm over denormals: %g %g %g %g", (double)c[0],
          (double)c[1], (double)c[2], (double)c[3]);
    float n[4] = { 1, 0, 0, 1 };   /* the identity: the product is b exactly */
    al_sgemm(CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0f, n, 2, b, 2, 0.0f, c, 2);
    CHECK(c[0] == 1 && c[1] == 2 && c[2] == 3 && c[3] == 4, "sgemm over normal values: %g %g %g %g",
          (double)c[0], (double)c[1], (double)c[2], (double)c[3]);

    int child = -2;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, report_mode, &child) == 0, "pthread_create");
    pthread_join(t, NULL);
    CHECK(child == 1, "a thread made after the call does not flush (mode %d)", child);
    return check_exit("test_fpenv");
}
