/* ops_norm.c — STUB: being written; every function aborts. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"

Tensor *ad_layernorm(Tape *t, Tensor *x, Tensor *gain, Tensor *bias, float eps) {
    (void)t;
    (void)x;
    (void)gain;
    (void)bias;
    (void)eps;
    al_panic(__FILE__, __LINE__, "not implemented");
}

Tensor *ad_l2norm(Tape *t, Tensor *x, float eps) {
    (void)t;
    (void)x;
    (void)eps;
    al_panic(__FILE__, __LINE__, "not implemented");
}

