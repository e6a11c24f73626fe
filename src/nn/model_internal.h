/* model_internal.h — what model.c shares with transformer.c and lstm.c:
 * declaring parameters by PyTorch-style name and filling them at init. */
#ifndef ATTNLAB_NN_MODEL_INTERNAL_H
#define ATTNLAB_NN_MODEL_INTERNAL_H

#include "attnlab/nn/model.h"
#include "attnlab/util/rng.h"

/* name_fmt may contain one %d (the layer). */
Tensor *model_decl(Model *m, int decay, int ndim, const int *shape, const char *name_fmt, int layer);
void    model_decl_linear(Model *m, Linear *l, int out, int in, const char *prefix, int layer);
void    model_decl_norm(Model *m, Norm *n, const char *prefix, int layer);

void model_fill_normal(Tensor *x, Rng *r, double std);
void model_fill_uniform(Tensor *x, Rng *r, double bound);
void model_init_norm(Norm *n);
/* init "torch": U(±1/√in) for weight and bias; "normal": N(0, std), bias 0, where
 * residual branches get std/√(2·n_layers). */
void model_init_linear(const Model *m, Linear *l, Rng *r, int residual);

void    transformer_declare(Model *m);
void    transformer_init(Model *m, Rng *r);
Tensor *transformer_forward(Model *m, Tape *t, Tensor *x, int T);   /* x = embeddings (B,T,d) */
double  transformer_flops_per_seq(const Model *m, int T);

void    lstm_declare(Model *m);
void    lstm_init(Model *m, Rng *r);
Tensor *lstm_forward(Model *m, Tape *t, Tensor *x);
double  lstm_flops_per_seq(const Model *m, int T);

#endif
