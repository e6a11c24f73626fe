/* head_dims.h — the shapes of the split-heads attention ops (linear, sparse):
 * q, k (B, H, T, D) and v (B, H, T, Dv), checked once, as (B·H, T, D, Dv).
 * Internal to src/autodiff. */
#ifndef ATTNLAB_AUTODIFF_HEAD_DIMS_H
#define ATTNLAB_AUTODIFF_HEAD_DIMS_H

#include "attnlab/autodiff/tensor.h"
#include "attnlab/util/error.h"

typedef struct HeadDims { long BH; int T, D, Dv; } HeadDims;

static inline HeadDims head_dims(const Tensor *q, const Tensor *k, const Tensor *v) {
    AL_ASSERT(q->ndim == 4 && k->ndim == 4 && v->ndim == 4);
    for (int a = 0; a < 3; a++) AL_ASSERT(k->shape[a] == q->shape[a] && v->shape[a] == q->shape[a]);
    AL_ASSERT(k->shape[3] == q->shape[3]);
    return (HeadDims){ (long)q->shape[0] * q->shape[1], q->shape[2], q->shape[3], v->shape[3] };
}

#endif
