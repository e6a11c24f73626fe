/* check.h — the test suite's assertion macros.
 *
 * CHECK records a failure (with file:line and a message) and goes on, so one run
 * reports every broken assertion; check_exit() returns the process status.  Each
 * test program also prints how many checks it ran, so a test that asserts nothing
 * shows up as "0 checks" and fails (check_exit treats 0 checks as a failure). */
#ifndef ATTNLAB_TESTS_CHECK_H
#define ATTNLAB_TESTS_CHECK_H

#include <math.h>
#include <stdio.h>

static int check_count, check_failures;

#define CHECK(cond, ...)                                                              \
    do {                                                                              \
        check_count++;                                                                \
        if (!(cond)) {                                                                \
            check_failures++;                                                         \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
        }                                                                             \
    } while (0)

#define CHECK_NEAR(a, b, tol, what)                                                   \
    CHECK(fabs((double)(a) - (double)(b)) <= (tol), "%s: %.9g vs %.9g (tol %.3g)",   \
          (what), (double)(a), (double)(b), (double)(tol))

static inline int check_exit(const char *name) {
    if (check_count == 0) {
        fprintf(stderr, "%s: ran no checks — a test must assert something\n", name);
        return 1;
    }
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    return check_failures ? 1 : 0;
}

#endif
