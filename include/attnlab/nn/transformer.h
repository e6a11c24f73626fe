/* transformer.h — the pre-LN transformer of the source papers.
 *
 *   x = embed(tokens) [+ positions] [→ LayerNorm] [→ dropout]
 *   L blocks:  x += dropout(attn(LN1(x)));  x += dropout(mlp(LN2(x)))
 *   logits = head(LN_f(x))                       one label per position
 *
 * Attention has H heads of width d/H, causal or bidirectional, with scores either
 * QKᵀ/√d_head ("dot") or β·Q̂K̂ᵀ with rows of Q and K normalised to unit length
 * ("unit_norm", the ANNA surrogate of paper 000 App. G).  The MLP is
 * d → ratio·d → d with GeLU.  Parameter names follow PyTorch conventions so a
 * checkpoint loads into an equivalent torch module (bench/torch_reference.py). */
#ifndef ATTNLAB_NN_TRANSFORMER_H
#define ATTNLAB_NN_TRANSFORMER_H

#include "attnlab/autodiff/ops.h"
#include "attnlab/nn/params.h"
#include "attnlab/train/config.h"

typedef struct Linear { Tensor *w, *b; } Linear;       /* w (out, in), b (out) */
typedef struct Norm   { Tensor *g, *b; } Norm;         /* LayerNorm gain, bias (d) */

typedef struct Block {
    Norm   ln1, ln2;
    Linear q, k, v, o;        /* attention projections, each (d, d) */
    Linear fc1, fc2;          /* MLP: (ratio·d, d) and (d, ratio·d) */
} Block;

typedef struct Model {
    CfgModel cfg;
    int vocab_size, n_classes, max_len;
    ParamStore params;
    Tensor *tok_emb;          /* (vocab, d) */
    Tensor *pos_emb;          /* learned: (max_len, d) parameter; sinusoidal: fixed, no grad */
    Norm    ln_emb;           /* only with embed_layernorm */
    Block  *blocks;           /* n_layers */
    Norm    ln_f;
    Linear  head;             /* (n_classes, d) */
    Tensor  sinusoid;         /* storage for the fixed sinusoidal table */
} Model;

/* Declares and initialises every parameter (seeded).  Returns a heap model. */
Model  *model_create(const CfgModel *cfg, int vocab_size, int n_classes, int max_len, uint64_t seed);
/* (Re-)initialises all parameters from `seed` as documented in transformer.c. */
void    model_init_params(Model *m, uint64_t seed);
/* tokens (B, T), each in [0, vocab).  Returns logits (B, T, n_classes). */
Tensor *model_forward(Model *m, Tape *t, const int *tokens, int B, int T);
/* Forward FLOPs per sequence of length T (matmuls only; backward ≈ 2× this). */
double  model_flops_per_seq(const Model *m, int T);
void    model_free(Model *m);

#endif
