/* tensor.c — Tensor header helpers. */
#include "attnlab/autodiff/tensor.h"
#include "attnlab/util/error.h"

#include <stdio.h>

void tensor_init(Tensor *t, float *data, float *grad, int ndim, const int *shape) {
    AL_ASSERT(ndim >= 1 && ndim <= AD_MAX_DIMS);
    t->data = data;
    t->grad = grad;
    t->ndim = ndim;
    t->grad_fresh = 0;
    t->grad_base = NULL;
    t->n = 1;
    for (int i = 0; i < AD_MAX_DIMS; i++) t->shape[i] = i < ndim ? shape[i] : 1;
    for (int i = 0; i < ndim; i++) {
        AL_ASSERT(shape[i] >= 1);
        t->n *= shape[i];
    }
}

void tensor_view(Tensor *v, Tensor *x, int with_grad, int ndim, const int *shape) {
    tensor_init(v, x->data, with_grad ? x->grad : NULL, ndim, shape);
    AL_ASSERT(v->n == x->n);
    if (v->grad) v->grad_base = x->grad_base ? x->grad_base : x;
}

long tensor_rows(const Tensor *t) { return t->n / t->shape[t->ndim - 1]; }
int  tensor_cols(const Tensor *t) { return t->shape[t->ndim - 1]; }

int tensor_same_shape(const Tensor *a, const Tensor *b) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

const char *tensor_shape_str(const Tensor *t, char *buf, int bufsz) {
    int k = snprintf(buf, (size_t)bufsz, "(");
    for (int i = 0; i < t->ndim && k < bufsz; i++)
        k += snprintf(buf + k, (size_t)(bufsz - k), i ? ",%d" : "%d", t->shape[i]);
    if (k < bufsz) snprintf(buf + k, (size_t)(bufsz - k), ")");
    return buf;
}
