/* ops_pointwise.c — STUB: being written; every function aborts. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"

Tensor *ad_add(Tape *t, Tensor *a, Tensor *b) {
    (void)t;
    (void)a;
    (void)b;
    al_panic(__FILE__, __LINE__, "not implemented");
}

Tensor *ad_sub(Tape *t, Tensor *a, Tensor *b) {
    (void)t;
    (void)a;
    (void)b;
    al_panic(__FILE__, __LINE__, "not implemented");
}

Tensor *ad_mul(Tape *t, Tensor *a, Tensor *b) {
    (void)t;
    (void)a;
    (void)b;
    al_panic(__FILE__, __LINE__, "not implemented");
}

Tensor *ad_scale(Tape *t, Tensor *a, float s) {
    (void)t;
    (void)a;
    (void)s;
    al_panic(__FILE__, __LINE__, "not implemented");
}

Tensor *ad_sum(Tape *t, Tensor *a) {
    (void)t;
    (void)a;
    al_panic(__FILE__, __LINE__, "not implemented");
}

Tensor *ad_mean(Tape *t, Tensor *a) {
    (void)t;
    (void)a;
    al_panic(__FILE__, __LINE__, "not implemented");
}

Tensor *ad_gelu(Tape *t, Tensor *x, AdGelu kind) {
    (void)t;
    (void)x;
    (void)kind;
    al_panic(__FILE__, __LINE__, "not implemented");
}

Tensor *ad_elu(Tape *t, Tensor *x) {
    (void)t;
    (void)x;
    al_panic(__FILE__, __LINE__, "not implemented");
}

Tensor *ad_relu(Tape *t, Tensor *x) {
    (void)t;
    (void)x;
    al_panic(__FILE__, __LINE__, "not implemented");
}

Tensor *ad_dropout(Tape *t, Tensor *x, float p) {
    (void)t;
    (void)x;
    (void)p;
    al_panic(__FILE__, __LINE__, "not implemented");
}

