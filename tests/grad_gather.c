/* grad_gather.c — STUB: no cases yet. */
#include "grad_cases.h"

int grad_cases_gather(OpKind op, int *n_cases) {
    (void)op; (void)n_cases;
    return 0;
}
