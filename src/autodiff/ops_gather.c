/* ops_gather.c — STUB: being written; every function aborts. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"

Tensor *ad_embedding(Tape *t, Tensor *table, const int *ids, int ids_ndim, const int *ids_shape) {
    (void)t;
    (void)table;
    (void)ids;
    (void)ids_ndim;
    (void)ids_shape;
    al_panic(__FILE__, __LINE__, "not implemented");
}

Tensor *ad_reshape(Tape *t, Tensor *x, int ndim, const int *shape) {
    (void)t;
    (void)x;
    (void)ndim;
    (void)shape;
    al_panic(__FILE__, __LINE__, "not implemented");
}

Tensor *ad_split_heads(Tape *t, Tensor *x, int n_heads) {
    (void)t;
    (void)x;
    (void)n_heads;
    al_panic(__FILE__, __LINE__, "not implemented");
}

Tensor *ad_merge_heads(Tape *t, Tensor *x) {
    (void)t;
    (void)x;
    al_panic(__FILE__, __LINE__, "not implemented");
}

