/* ops_softmax.c — STUB: being written; every function aborts. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"

Tensor *ad_softmax(Tape *t, Tensor *x, const Tensor *mask) {
    (void)t;
    (void)x;
    (void)mask;
    al_panic(__FILE__, __LINE__, "not implemented");
}

Tensor *ad_cross_entropy(Tape *t, Tensor *logits, const int *targets) {
    (void)t;
    (void)logits;
    (void)targets;
    al_panic(__FILE__, __LINE__, "not implemented");
}

