/* model_config.h — the settings of the network: the model.* keys of a run's config.
 *
 * They live here, with the module that builds the model from them, so that nn
 * needs nothing from the layers above it; the config module (config/config.h)
 * reads them from JSON into Config.model with its schema, which documents every
 * key, its range and default. */
#ifndef ATTNLAB_NN_MODEL_CONFIG_H
#define ATTNLAB_NN_MODEL_CONFIG_H

#include "attnlab/autodiff/ops.h"   /* AdFeature */

typedef enum { POS_NONE, POS_LEARNED, POS_SINUSOIDAL } CfgPositional;
/* A new model type: a value here (before MODEL_TYPE_COUNT), its name in the config
 * schema (config/schema.c), its ModelArch row in nn/model.c. */
typedef enum { MODEL_TRANSFORMER, MODEL_LSTM, MODEL_DSS, MODEL_RETNET,
               MODEL_MAMBA,
               MODEL_TYPE_COUNT } CfgModelType;
typedef enum { ATTN_SOFTMAX, ATTN_LINEAR, ATTN_SPARSE } CfgAttentionType;
typedef AdFeature CfgFeature;   /* linear attention's φ: FEATURE_ELU1 | FEATURE_IDENTITY | FEATURE_RELU (autodiff/ops.h) */
typedef enum { SCORE_DOT, SCORE_UNIT_NORM } CfgScore;       /* QKᵀ/√d_head  |  β·Q̂K̂ᵀ */
typedef enum { ACT_GELU_TANH, ACT_GELU_ERF } CfgActivation;
typedef enum { INIT_TORCH, INIT_NORMAL } CfgInit;            /* see src/nn/transformer.c */

typedef struct CfgAttention {
    CfgAttentionType type;   /* "softmax" | "linear" | "sparse" */
    CfgScore score;          /* softmax, sparse: "dot" | "unit_norm" */
    float beta;              /* temperature for unit_norm scores (> 0) */
    int causal;              /* bool; sparse attention is always causal */
    CfgFeature feature;      /* linear: φ = "elu1" (elu + 1) | "identity" | "relu" */
    float eps;               /* linear: added to the denominator */
    int block;               /* sparse: block size B; 0 = 2^floor(log2 sqrt(max_len)) */
    int local_blocks;        /* sparse: k, the local window is k·B previous tokens */
    int summary;             /* sparse: c, the last c positions of every block are global */
} CfgAttention;

/* What follows the DSS layer's output_linear (the reference code's `postact`). */
typedef enum CfgDssPostact {
    DSS_POSTACT_NONE,        /* output_linear d → d */
    DSS_POSTACT_GLU          /* output_linear d → 2d, then GLU: a·σ(b) */
} CfgDssPostact;
/* DSS (Gupta, Gu & Berant, "Diagonal State Spaces are as Effective as Structured
 * State Spaces"; src/nn/dss.c): per channel a diagonal complex state of d_state
 * modes, log Δ drawn log-uniformly in [dt_min, dt_max]. */
typedef struct CfgDss {
    int d_state;             /* N, modes per channel (paper: 64) */
    float dt_min, dt_max;    /* the range of the initial step Δ */
    float lambda_re;         /* the initial Re Λ of every mode (the reference: −1/2) */
    int ff;                  /* 0, or the expansion of a position-wise feed-forward block after
                                every DSS block (the reference code's layer list [dss, ff]) */
    float lr;                /* 0, or the base learning rate of the kernel's Λ, log Δ and W
                                (the reference code's parameter group: 0.001) */
    CfgDssPostact postact;   /* none (the reference's DSS default) or glu */
    int channels;            /* kernels per feature (the reference code's `channels`: 1) */
} CfgDss;
/* RetNet (Sun et al. 2023, "Retentive Network"): src/nn/retnet.c. */
typedef struct CfgRetnet {
    int value_factor;        /* value and gate width = value_factor · d_model (the paper: 2) */
} CfgRetnet;
/* model.mamba.* (src/nn/mamba.c; Gu & Dao 2023, "Mamba: Linear-Time Sequence
 * Modeling with Selective State Spaces"). */
typedef struct CfgMamba {
    int d_state;             /* N, the SSM state per channel (reference default 16) */
    int expand;              /* E = expand·d_model inner channels (2) */
    int d_conv;              /* kernel of the causal depthwise conv (4) */
    int dt_rank;             /* rank of Δ's projection; 0 = ceil(d_model/16) */
} CfgMamba;

typedef struct CfgModel {
    CfgModelType type;       /* "transformer" | "lstm" (paper 003's recurrent baseline) */
    int d_model, n_layers, n_heads;
    int mlp_ratio;           /* MLP hidden width = mlp_ratio · d_model */
    CfgActivation activation;/* "gelu_tanh" | "gelu_erf" */
    CfgPositional positional;/* "none" | "learned" | "sinusoidal" */
    int embed_layernorm;     /* bool: LayerNorm right after the embedding sum */
    float dropout;           /* [0, 1) on embeddings, attention output and MLP output */
    float ln_eps;
    CfgInit init;            /* "torch": PyTorch's default init; "normal": N(0, init_std) */
    float init_std;          /* std of the "normal" init of embeddings and weight matrices */
    CfgAttention attention;
    CfgDss dss;              /* model.type "dss" */
    CfgRetnet retnet;
    CfgMamba mamba;          /* model.type "mamba" only */
} CfgModel;

#endif
