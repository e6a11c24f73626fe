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
 * residual branches get std/√(2·n_layers).  l->b may be NULL (no bias). */
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

/* A block's sublayer: h (B, T, d) → (B, T, d), plus res (NULL or (B, T, d)) added
 * inside its last GEMM. */
typedef Tensor *(*Sublayer)(const Model *m, Tape *t, const BlockMixer *mix, int layer, Tensor *h, Tensor *res);
/* x + dropout(f(LayerNorm n(x))): the pre-LN residual of the transformer's and
 * RetNet's blocks (transformer.c). */
Tensor *model_residual(const Model *m, Tape *t, const BlockMixer *mix, int layer, Tensor *x, const Norm *n,
                       Sublayer f);

void    transformer_declare(Model *m);
void    transformer_init(Model *m, Rng *r);
Tensor *transformer_forward(Model *m, Tape *t, Tensor *x);   /* x = embeddings (B,T,d) */
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

/* x (B, T, c) → its rows m->keep_rows as (n_keep, 1, c) while a model_forward_rows
 * call runs; x itself otherwise (model.h).  A body calls it once its positions are
 * mixed for the last time, on every tensor the rest of the body reads. */
Tensor *model_keep(Model *m, Tape *t, Tensor *x);
/* ad_dropout for the body: after model_keep, the mask of the kept rows' grid
 * positions (ad_dropout_rows), so a model_forward_rows call drops what
 * model_forward would have dropped there. */
Tensor *model_dropout(const Model *m, Tape *t, Tensor *x, float p);

/* ---- architectures: what lies between the embedding and the head ----------------- */

/* One row per CfgModelType (model_arch(), the table in model.c).  The transformer's
 * row has no `step`: it decodes through its blocks and a KV cache (decode.c); a
 * recurrent architecture (LSTM, and every later state-space or retention model)
 * has no positional embedding, is causal by construction, and decodes by `step`
 * over a state of state_floats(m) floats per layer and sequence.  A new model type:
 * one enum value (model_config.h), one file with these functions, one row. */
typedef struct ModelArch {
    const char *name;
    void    (*declare)(Model *m);
    void    (*init)(Model *m, Rng *r);
    /* x = embeddings (B, T, d) → (B, T, d), what the head reads */
    Tensor *(*forward)(Model *m, Tape *t, Tensor *x);
    /* forward FLOPs of the body's products per sequence (model_flops_per_seq) */
    double  (*flops_per_seq)(const Model *m, int T);
    /* parameters of the body (model_param_count adds the embedding and the head) */
    double  (*param_count)(const CfgModel *c, int max_len);
    /* floats of values and gradients per layer per (b, t) of a training step
     * (model_memory_estimate's A) */
    double  (*activation_floats)(const CfgModel *c);
    /* recurrent only (NULL for the transformer): decoding state per layer and
     * sequence, and one step: x (B, 1, d) → (B, 1, d), state[l·batch·S + b·S …] of
     * S = state_floats(m) floats for layer l, row b (zero at position 0) */
    size_t  (*state_floats)(const Model *m);
    Tensor *(*step)(Model *m, Tape *t, Tensor *x, float *state, int batch);
} ModelArch;

const ModelArch *model_arch(CfgModelType type);

/* The functions of a recurrent type's row, NAME_declare … NAME_step (lstm.c, dss.c,
 * retnet.c, mamba.c), and its row of ARCHS (model.c). */
#define MODEL_ARCH_DECLARE(p)                                                       \
    void    p##_declare(Model *m);                                                  \
    void    p##_init(Model *m, Rng *r);                                             \
    Tensor *p##_forward(Model *m, Tape *t, Tensor *x);                              \
    double  p##_flops_per_seq(const Model *m, int T);                               \
    double  p##_param_count(const CfgModel *c, int max_len);                        \
    double  p##_activation_floats(const CfgModel *c);                               \
    size_t  p##_state_floats(const Model *m);                                       \
    Tensor *p##_step(Model *m, Tape *t, Tensor *x, float *state, int batch)
#define MODEL_ARCH_ROW(p)                                                           \
    { #p, p##_declare, p##_init, p##_forward, p##_flops_per_seq, p##_param_count,   \
      p##_activation_floats, p##_state_floats, p##_step }

MODEL_ARCH_DECLARE(lstm);
MODEL_ARCH_DECLARE(dss);
MODEL_ARCH_DECLARE(retnet);
MODEL_ARCH_DECLARE(mamba);

double  transformer_param_count(const CfgModel *c, int max_len);
double  transformer_activation_floats(const CfgModel *c);

#endif
