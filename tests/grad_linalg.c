/* grad_linalg.c — STUB: no cases yet. */
#include "grad_cases.h"

int grad_cases_linalg(OpKind op, int *n_cases) {
    (void)op; (void)n_cases;
    return 0;
}
