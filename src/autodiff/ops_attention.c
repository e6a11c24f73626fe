/* ops_attention.c — STUB: being written; every function aborts. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"

Tensor *ad_attention(Tape *t, Tensor *q, Tensor *k, Tensor *v, const Tensor *mask, float scale) {
    (void)t;
    (void)q;
    (void)k;
    (void)v;
    (void)mask;
    (void)scale;
    al_panic(__FILE__, __LINE__, "not implemented");
}

void ad_causal_mask(Tensor *mask) {
    (void)mask;
    al_panic(__FILE__, __LINE__, "not implemented");
}

