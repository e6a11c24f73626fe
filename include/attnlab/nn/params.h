/* params.h — a model's parameters in one flat block (llm.c style).
 *
 * Parameters are declared one by one (name, shape, decay flag), then
 * params_finalize() makes ONE allocation holding, back to back, the values, the
 * gradients and Adam's two moments.  So zeroing grads is one memset, an optimizer
 * step is one loop over `total` floats and a checkpoint is one write per block.
 * Each Param's Tensor points into the block; the store must not be moved after
 * finalize (keep it inside a heap-allocated model). */
#ifndef ATTNLAB_NN_PARAMS_H
#define ATTNLAB_NN_PARAMS_H

#include "attnlab/autodiff/tensor.h"

#define PARAM_NAME_MAX 64

typedef struct Param {
    char   name[PARAM_NAME_MAX];  /* e.g. "blocks.0.attn.wq.weight" (PyTorch-style) */
    Tensor t;                     /* data/grad point into the store's block */
    long   offset;                /* first element within the block */
    int    decay;                 /* 1: weight decay applies (matrices); 0: biases, norms */
    float  lr;                    /* 0: the optimizer's learning rate; > 0: this tensor's own
                                     base rate, following the schedule in the same ratio
                                     (params_set_lr) */
} Param;

typedef struct ParamStore {
    Param *p;
    int    n, cap;
    long   total;                 /* elements over all parameters */
    float *block;                 /* 4·total floats: data | grad | m | v */
    float *data, *grad, *m, *v;   /* views into block */
} ParamStore;

/* capacity: the most parameters that will be declared (pointers never move). */
void    params_init(ParamStore *ps, int capacity);
/* Declares a parameter; returns its tensor (valid after params_finalize). */
Tensor *params_add(ParamStore *ps, const char *name, int ndim, const int *shape, int decay);
void    params_finalize(ParamStore *ps);      /* allocates the block, zeroed */
/* Gives the declared tensor t its own base learning rate lr (> 0): where the
 * optimizer's rate at a step is r·train.lr, this tensor's is r·lr — a parameter group
 * of its own, as the DSS code's kernel parameters (optim_adam_step_except). */
void    params_set_lr(ParamStore *ps, const Tensor *t, float lr);
/* Instead of params_finalize, for a data-parallel replica (model_replica_create):
 * ps declared the same parameters as `master` (same names, shapes, order).  Its
 * tensors read the master's values (ps->data = master->data, shared; the replica
 * never writes them) and accumulate into a gradient block of its own (total floats,
 * zeroed; ps->block).  No Adam moments: ps->m = ps->v = NULL. */
void    params_finalize_replica(ParamStore *ps, const ParamStore *master);
void    params_zero_grad(ParamStore *ps);
const Param *params_find(const ParamStore *ps, const char *name);
void    params_free(ParamStore *ps);

#endif
