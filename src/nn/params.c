/* params.c — see params.h. */
#include "attnlab/nn/params.h"
#include "attnlab/util/error.h"

#include <stdlib.h>
#include <string.h>

void params_init(ParamStore *ps, int capacity) {
    memset(ps, 0, sizeof *ps);
    ps->cap = capacity;
    ps->p = al_calloc((size_t)capacity, sizeof *ps->p);
}

Tensor *params_add(ParamStore *ps, const char *name, int ndim, const int *shape, int decay) {
    AL_ASSERT(!ps->block && strlen(name) < PARAM_NAME_MAX);
    /* Fixed capacity: the returned tensor pointers must never move. */
    AL_ASSERT(ps->n < ps->cap);
    Param *p = &ps->p[ps->n++];
    memset(p, 0, sizeof *p);
    strcpy(p->name, name);
    tensor_init(&p->t, NULL, NULL, ndim, shape);
    p->offset = ps->total;
    p->decay = decay;
    ps->total += p->t.n;
    return &p->t;
}

void params_set_lr(ParamStore *ps, const Tensor *t, float lr) {
    AL_ASSERT(lr > 0);
    for (int k = 0; k < ps->n; k++)
        if (&ps->p[k].t == t) {
            ps->p[k].lr = lr;
            return;
        }
    AL_ASSERT(!"params_set_lr: the tensor is not a parameter of this store");
}

void params_finalize(ParamStore *ps) {
    AL_ASSERT(!ps->block);
    ps->block = al_calloc((size_t)(4 * ps->total), sizeof(float));
    ps->data = ps->block;
    ps->grad = ps->block + ps->total;
    ps->m = ps->block + 2 * ps->total;
    ps->v = ps->block + 3 * ps->total;
    for (int i = 0; i < ps->n; i++) {
        ps->p[i].t.data = ps->data + ps->p[i].offset;
        ps->p[i].t.grad = ps->grad + ps->p[i].offset;
    }
}

void params_finalize_replica(ParamStore *ps, const ParamStore *master) {
    AL_ASSERT(!ps->block && ps->n == master->n && ps->total == master->total);
    for (int i = 0; i < ps->n; i++)
        AL_ASSERT(ps->p[i].offset == master->p[i].offset && ps->p[i].t.n == master->p[i].t.n &&
                  !strcmp(ps->p[i].name, master->p[i].name));
    ps->block = al_calloc((size_t)ps->total, sizeof(float));
    ps->data = master->data;
    ps->grad = ps->block;
    ps->m = ps->v = NULL;
    for (int i = 0; i < ps->n; i++) {
        ps->p[i].t.data = ps->data + ps->p[i].offset;
        ps->p[i].t.grad = ps->grad + ps->p[i].offset;
    }
}

void params_zero_grad(ParamStore *ps) { memset(ps->grad, 0, (size_t)ps->total * sizeof(float)); }

const Param *params_find(const ParamStore *ps, const char *name) {
    for (int i = 0; i < ps->n; i++)
        if (!strcmp(ps->p[i].name, name)) return &ps->p[i];
    return NULL;
}

void params_free(ParamStore *ps) {
    free(ps->p);
    free(ps->block);
    memset(ps, 0, sizeof *ps);
}
