/* model_internal.h — what model.c shares with transformer.c, lstm.c and decode.c:
 * declaring parameters by PyTorch-style name and filling them at init, the
 * embedding, and the transformer's blocks. */
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

/* How a block's attention mixes positions: q, k, v (B, T, d) of `layer` → (B, T, d).
 * The block itself (norms, projections, residuals, MLP) is transformer_blocks',
 * for training and decoding alike; only this step differs: training attends over
 * all T positions on the tape (transformer_forward), decoding attends its one new
 * position over a KV cache or a recurrent state kept in ctx (decode.c). */
typedef struct BlockMixer {
    Tensor *(*fn)(void *ctx, const Model *m, Tape *t, int layer, Tensor *q, Tensor *k, Tensor *v);
    void *ctx;
} BlockMixer;

void    transformer_declare(Model *m);
void    transformer_init(Model *m, Rng *r);
Tensor *transformer_forward(Model *m, Tape *t, Tensor *x, int T);   /* x = embeddings (B,T,d) */
/* x (B, T, d) → LN_f(the n_layers blocks of x), each block's attention by mix. */
Tensor *transformer_blocks(Model *m, Tape *t, Tensor *x, const BlockMixer *mix);
double  transformer_flops_per_seq(const Model *m, int T);
/* Hands layer's attention maps to m->capture (model.h, ModelCapture): q, k (B, T, d)
 * as the mechanism scores them (unit-normalised for unit-norm scores), heads as
 * Dh-column slices; scale the softmax scores' factor (1/√Dh or β). */
void    capture_attention(const Model *m, int layer, const Tensor *q, const Tensor *k, float scale);

/* tokens (B, T) at positions pos0 … pos0 + T − 1 → embeddings (B, T, d): tokens,
 * positions, the embedding LayerNorm and dropout, as every forward starts (a
 * decoder's step is T = 1 at its position). */
Tensor *model_embed(Model *m, Tape *t, const int *tokens, int B, int T, int pos0);

void    lstm_declare(Model *m);
void    lstm_init(Model *m, Rng *r);
Tensor *lstm_forward(Model *m, Tape *t, Tensor *x);
double  lstm_flops_per_seq(const Model *m, int T);

#endif
