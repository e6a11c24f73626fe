/* ops_linalg.c — STUB: being written; every function aborts. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"

Tensor *ad_matmul(Tape *t, Tensor *a, Tensor *b, int trans_a, int trans_b) {
    (void)t;
    (void)a;
    (void)b;
    (void)trans_a;
    (void)trans_b;
    al_panic(__FILE__, __LINE__, "not implemented");
}

Tensor *ad_linear(Tape *t, Tensor *x, Tensor *w, Tensor *b) {
    (void)t;
    (void)x;
    (void)w;
    (void)b;
    al_panic(__FILE__, __LINE__, "not implemented");
}

