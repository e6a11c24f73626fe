/* ops_anna.h — ANNA as an autodiff op (src/anna/ops_anna.c), for fine-tuning a
 * model with ANNA in the loop (finetune.h) and for the distillation grid, which
 * runs a model through it (ModelAnna in attnlab/nn/model.h points at it).  Its op
 * kind, OP_ANNA_ATTENTION, is in autodiff's list (attnlab/autodiff/ops.def); the op
 * itself lives here, with the ANNA it records, so autodiff needs nothing of anna. */
#ifndef ATTNLAB_ANNA_OPS_ANNA_H
#define ATTNLAB_ANNA_OPS_ANNA_H

#include "attnlab/anna/lsh.h"
#include "attnlab/autodiff/tape.h"

/* ANNA (paper 000; definition in attnlab/anna/anna.h): q, k (B, H, T, D), v (B, H, T,
 * Dv) → (B, H, T, Dv), head h hashed by per_head[h] (dim D), which must stay valid
 * until the tape is reset.  Differentiable with respect to v only: the output is
 * piecewise constant in q and k (it sees them through hash codes), so they get no
 * gradient — the buckets are fixed for the backward (see ops_anna.c). */
Tensor *ad_anna_attention(Tape *t, Tensor *q, Tensor *k, Tensor *v, const Lsh *per_head, int causal);

#endif
