/* model.h — the networks: the pre-LN transformer of the source papers and the LSTM
 * baseline of paper 003, behind one interface (tokens in, per-position logits out).
 *
 * Transformer (src/nn/transformer.c):
 *   x = embed(tokens) [+ positions] [→ LayerNorm] [→ dropout]
 *   L blocks:  x += dropout(attn(LN1(x)));  x += dropout(mlp(LN2(x)))
 *   logits = head(LN_f(x))
 * Attention has H heads of width d/H, causal or bidirectional, and is one of
 *   softmax — scores QKᵀ/√d_head ("dot") or β·Q̂K̂ᵀ with unit-norm rows ("unit_norm",
 *             the ANNA surrogate of paper 000 App. G);
 *   linear  — φ(q)ᵀΣφ(k)vᵀ / (φ(q)ᵀΣφ(k) + ε) (paper 004 eq. 8);
 *   sparse  — causal softmax over a local window plus block summaries (eq. 6).
 * The MLP is d → ratio·d → d with GeLU.
 *
 * LSTM (src/nn/lstm.c):  x = embed(tokens); L LSTM layers of width d (dropout
 * between them); logits = head(x).
 *
 * DSS (src/nn/dss.c; Gupta, Gu & Berant, "Diagonal State Spaces are as Effective as
 * Structured State Spaces", §3.3 DSS-softmax):  x = embed(tokens); L residual blocks
 *   x += output_linear(dropout(GELU(K * LN(x) + D ⊙ LN(x))))
 * with K (T, d) the DSS-softmax kernel of the block's Λ (N complex modes), log Δ
 * and W (ad_dss_kernel) and * the causal convolution per channel; logits =
 * head(LN_f(x)).
 * RetNet (src/nn/retnet.c; Sun et al. 2023, "Retentive Network", eqs. 5, 8, 9):
 *   x = embed(tokens)   (no positional embedding: positions come from the decay
 *                        and the rotation of q, k inside retention)
 *   L layers:  x += dropout(MSR(LN1(x)));  x += dropout(FFN(LN2(x)))
 *   MSR(h) = W_O (swish(h W_G) ⊙ GroupNorm_H(Retention(hW_Q, hW_K, hW_V)))
 *   logits = head(LN_f(x))
 * Retention is ad_retention (autodiff/ops.h): per head h decay γ_h = 1 − 2^(−5−h);
 * GroupNorm normalises each head's Dv values without affine parameters (the
 * official release's LayerNorm(head_dim, elementwise_affine=False)); the FFN is
 * the transformer's GELU MLP.
 * Mamba (src/nn/mamba.c; Gu & Dao 2023, "Mamba: Linear-Time Sequence Modeling with
 * Selective State Spaces", §3.4 Figure 3 and Algorithm 2), E = expand·d, N = d_state,
 * R = dt_rank:  x = embed(tokens); L blocks  x += out_proj(y(RMSNorm(x)));
 * logits = head(RMSNorm_f(x)), where for a block's input h:
 *   [x, z] = in_proj(h)                          d → 2E, no bias
 *   x = SiLU(causal depthwise conv_K(x) + b)     over time, kernel d_conv
 *   [δ_low, B, C] = x_proj(x)                    E → R + 2N, no bias
 *   Δ = softplus(dt_proj(δ_low))                 R → E with bias
 *   y = SSM_{A, D}(x; Δ, B, C) ∘ SiLU(z)         h_t = exp(Δ_t A)h_{t−1} + Δ_t B_t x_t,
 *                                                y_t = C_t·h_t + D∘x_t, A = −exp(A_log)
 *   out_proj                                     E → d, no bias
 *
 * Parameter names follow PyTorch conventions so a checkpoint loads into an
 * equivalent torch module (bench/torch_reference.py). */
#ifndef ATTNLAB_NN_MODEL_H
#define ATTNLAB_NN_MODEL_H

#include "attnlab/autodiff/ops.h"
#include "attnlab/nn/params.h"
#include "attnlab/nn/model_config.h"
#include "attnlab/util/error.h"

typedef struct Linear { Tensor *w, *b; } Linear;       /* w (out, in), b (out) */
typedef struct Norm   { Tensor *g, *b; } Norm;         /* LayerNorm gain, bias (d) */

typedef struct Block {
    Norm   ln1, ln2;
    Linear q, k, v, o;        /* attention projections, each (d, d) */
    Linear fc1, fc2;          /* MLP: (ratio·d, d) and (d, ratio·d) */
} Block;

typedef struct LstmLayer { Tensor *w_ih, *w_hh, *b; } LstmLayer;   /* (4d, d), (4d, d), (4d) */
/* A DSS block (reference names): D (1, d), log_dt (d, 2), Lambda (N, 2), W (1, d, N, 2),
 * the position-wise output_linear (d, d), and its pre-norm. */
typedef struct DssLayer {
    Norm   norm;
    Tensor *D, *log_dt, *lambda, *w;
    Linear out;
    Norm   ff_norm;           /* model.dss.ff > 0: the feed-forward block after it */
    Linear fc1, fc2;          /* (ff·d, d) and (d, ff·d) */
    Tensor *k_shared;         /* between model_groups_begin and _end: the kernel of the step's length */
} DssLayer;

/* A RetNet layer (src/nn/retnet.c), dv = value_factor·d: the paper's W_Q, W_K,
 * W_V, W_G, W_O as Linears without bias (b NULL): q, k (d, d), v, g (dv, d), o (d, dv). */
typedef struct RetnetLayer {
    Norm    ln1, ln2;
    Linear  q, k, v, g, o;
    Linear  fc1, fc2;         /* FFN: (ratio·d, d) and (d, ratio·d) */
} RetnetLayer;

/* One Mamba block, the reference's names (layers.L.norm, layers.L.mixer.*).  E =
 * expand·d, N = d_state, R = dt_rank, K = d_conv. */
typedef struct MambaLayer {
    Tensor *norm;                   /* (d) RMSNorm gain */
    Tensor *in_proj;                /* (2E, d) */
    Tensor *conv_w, *conv_b;        /* (E, 1, K), (E) */
    Tensor *x_proj;                 /* (R + 2N, E) */
    Tensor *dt_w, *dt_b;            /* dt_proj: (E, R), (E) */
    Tensor *A_log;                  /* (E, N) */
    Tensor *D;                      /* (E) */
    Tensor *out_proj;               /* (d, E) */
} MambaLayer;

struct Lsh;   /* attnlab/anna/lsh.h */

/* Some layers' attention replaced by a mechanism from a module above nn
 * (distillation, paper 000: ANNA, whose op lives in attnlab/anna/ops_anna.h).  When
 * per_layer[l] is not NULL, layer l's heads (B, H, T, Dh) go through
 * attention(t, q, k, v, per_layer[l], causal) instead of the configured mechanism;
 * per_layer[l] holds that layer's n_heads hash-function sets.  A function pointer,
 * so nn calls ANNA without depending on it. */
typedef struct ModelAnna {
    Tensor *(*attention)(Tape *t, Tensor *q, Tensor *k, Tensor *v, const struct Lsh *per_head, int causal);
    const struct Lsh *const *per_layer;   /* n_layers entries */
} ModelAnna;

/* Attention maps of a forward pass, for looking inside a model (`./train inspect`).
 * When Model.capture is set and the tape is not training, every transformer layer
 * hands over, for each batch row b and head h, its T×T matrix of effective
 * attention weights w (row-major, w[i·T + j]: how much query i's output takes of
 * value j; 0 where i does not see j):
 *   softmax  the softmax probabilities (dot or unit-norm scores, causal mask);
 *   sparse   the softmax over query i's visible keys (paper 004 eq. 6), 0 elsewhere;
 *   linear   φ(q_i)·φ(k_j) / (Σ_j' φ(q_i)·φ(k_j') + eps) over the visible keys
 *            (a row sums to slightly less than 1 because of eps; φ = identity can
 *            give negative weights).
 * Computed in double from the layer's q and k, beside (never inside) the op that
 * runs the attention, so outputs are bit-identical with and without it; unset, it
 * costs one pointer test per layer.  w is valid during the call only.  LSTM layers
 * and layers replaced by ANNA report nothing. */
typedef struct ModelCapture {
    void (*fn)(void *ctx, int layer, int b, int head, int T, const double *w);
    void *ctx;
} ModelCapture;

typedef struct Model {
    CfgModel cfg;
    int vocab_size, n_classes, max_len;
    int sparse_block;         /* sparse attention's B after resolving "auto" */
    ParamStore params;
    Tensor *tok_emb;          /* (vocab, d) */
    Tensor *pos_emb;          /* learned: (max_len, d) parameter; sinusoidal: fixed, no grad */
    Norm    ln_emb;           /* only with embed_layernorm */
    Block  *blocks;           /* transformer: n_layers */
    LstmLayer *lstm;          /* lstm: n_layers */
    DssLayer *dss;            /* dss: n_layers */
    RetnetLayer *retnet;      /* retnet: n_layers */
    MambaLayer *mamba;        /* mamba: n_layers blocks, then norm_f (its gain in .norm, the rest NULL) */
    Norm    ln_f;             /* transformer, dss and retnet */
    Linear  head;             /* (n_classes, d) */
    Tensor  sinusoid;         /* storage for the fixed sinusoidal table */
    /* Distillation (paper 000): when not NULL, the layers it names run ANNA instead
     * of their attention (differentiable w.r.t. the values only).  Owned by the caller. */
    const ModelAnna *anna;
    /* Inspection: NULL, or where each layer's attention maps go (ModelCapture).
     * Owned by the caller; replicas do not copy it. */
    const ModelCapture *capture;
    /* The rows of the (B·T) output grid a forward must produce (model_forward_rows),
     * NULL for all of them; kept counts the body's model_keep calls.  Set for one
     * call only. */
    const int *keep_rows;
    int n_keep, keep_T, kept;
    /* model_groups_begin … _end: the length of the batch whose length groups the
     * forwards in between run (0 outside), so what depends on the length only (DSS's
     * kernel) is built once, at that length, and shared. */
    int groups_T;
} Model;

/* The name of a model type as the config spells it ("transformer", "lstm", …). */
const char *model_type_name(CfgModelType type);
/* Does position i's output depend on positions ≤ i only?  Recurrent types always;
 * a transformer when model.attention.causal. */
int     model_is_causal(const CfgModel *c);

/* Declares and initialises every parameter (seeded).  Returns a heap model. */
Model  *model_create(const CfgModel *cfg, int vocab_size, int n_classes, int max_len, uint64_t seed);
/* (Re-)initialises all parameters from `seed` as documented in transformer.c / lstm.c. */
void    model_init_params(Model *m, uint64_t seed);
/* tokens (B, T), each in [0, vocab), T ≤ max_len.  Returns logits (B, T, n_classes). */
Tensor *model_forward(Model *m, Tape *t, const int *tokens, int B, int T);
/* Around the forwards of one step's length groups (train/step.c) on one tape, of
 * batch length T: parameter-only work of a forward (DSS's kernel, ad_dss_kernel) is
 * recorded once, at length T, and each group reads its prefix. */
void    model_groups_begin(Model *m, int T);
void    model_groups_end(Model *m);
/* The same forward for the n rows rows[0..n) (each b·T + t, in any order) of the
 * (B·T) grid only: logits (n, 1, n_classes), row i those of grid row rows[i], equal
 * to model_forward's (to rounding: the GEMMs have fewer rows).  Every position is
 * still mixed in every layer; what is skipped is the work after the last layer's
 * mixing that only the other rows need: the last feed-forward sublayer (transformer,
 * RetNet), DSS's last output_linear and feed-forward block, Mamba's last out_proj,
 * and for every type the final norm and the head.  Training uses it when some positions are not scored (index lookup and the
 * classification tasks score one position in ~20): docs/design.md decision 16. */
Tensor *model_forward_rows(Model *m, Tape *t, const int *tokens, int B, int T, const int *rows, int n);
/* Forward FLOPs of the products per sequence of length T (2 per multiply-add; a
 * training step ≈ 3× this).  d = d_model, h = mlp_ratio·d, Dh = d/n_heads, L layers,
 * C = n_classes; embeddings, norms, activations and softmax exponentials are free:
 *   transformer  L·(8·T·d² [q, k, v, o] + 4·T·d·h [MLP] + A) + 2·T·d·C [head], with A
 *     softmax  4·T²·d              (Q·Kᵀ and P·V, the full T×T even when causal:
 *                                   the GEMMs compute the masked half too)
 *     linear   4·T·d·Dh + 2·T·d    (per head Gᵀ·V or the running S, F·S, F·z)
 *     sparse   4·P·d               (P = Σ_i |visible keys of i|, ad_sparse_attention_pairs)
 *   lstm         L·16·T·d²  + 2·T·d·C   (input and recurrent projections of 4 gates)
 *   dss          L·(2·T·d² + T·(T+1)·d) + 2·T·d·C   (output_linear, the causal
 *                convolution's T(T+1)/2 taps per channel; the kernel, d·N·T complex
 *                terms once per batch rather than per sequence, is not counted)
 *   retnet       L·(4·T·d² + 6·T·d·dv [q, k; v, g, o] + 4·T·d·h [FFN] + 2·T²·(d + dv))
 *                + 2·T·d·C, dv = value_factor·d (Q̃K̃ᵀ and P·V over the full T×T)
 *   mamba        L·(2·T·(2dE + E(R + 2N) + RE + Ed) + 2·T·E·K + 6·T·E·N) + 2·T·d·C
 *                (in_proj, x_proj, dt_proj, out_proj; the conv; the scan's two
 *                multiply-adds per state for h and one for C·h; E = expand·d,
 *                N = d_state, R = dt_rank, K = d_conv)
 * The sweep's grids report it per cell; tests/nn/test_flops.c checks it against a count
 * of the ops a forward pass records. */
double  model_flops_per_seq(const Model *m, int T);
void    model_free(Model *m);

/* ---- data-parallel replicas (train/step.h) ---------------------------------------- */

/* A replica of master for one data-parallel shard: the same config and parameters
 * (names, shapes, order), whose tensors read the master's values in place (shared,
 * never written through the replica) and accumulate gradients into a block of the
 * replica's own (params.grad; no Adam moments).  So shards run forward and backward
 * concurrently on one set of weights, each into its own gradients, and the caller
 * reduces them into master->params.grad.  m->anna is copied at creation (a caller
 * that sets the master's later sets the replica's too).  Valid while the master
 * lives; its values must not change while a replica's forward or backward runs.
 * Freed by model_free. */
Model  *model_replica_create(const Model *master);

/* ---- memory, before anything is allocated ---------------------------------------- */

/* Parameters model_create would declare (exact). */
double  model_param_count(const CfgModel *c, int vocab_size, int n_classes, int max_len);

/* What a training run needs, in bytes (an estimate that errs high, not a bound).
 * B = batch, T = max_len, d = d_model, h = mlp_ratio·d, L = n_layers, H = n_heads,
 * C = n_classes, P = model_param_count, f = 4 (bytes per float), a = 1.25 (the
 * tape arena: overflow chunks in the first step, then one block of 9/8 its high
 * water):
 *   params       4·f·P                  values, gradients, Adam's m and v
 *                                       (+ f·T·d for a sinusoidal table)
 *   activations  a·f·B·T·(10d + L·A + 2d + 2) with A = 36d + 2h per transformer
 *                block with dropout (values and gradients of ~18 (B,T,d) tensors;
 *                the fused MLP, ad_mlp, keeps its hidden layer only as GELU(h) and
 *                GELU′(h)), A = 32d + 2h without dropout (the two residual adds
 *                happen inside the output projection's and fc2's GEMMs: two
 *                tensors fewer), 20d per LSTM layer, 4d + 19E + N·E + 4(R + 2N)
 *                per Mamba layer (mamba_activation_floats: every scan state is kept);
 *                10d the embeddings, 2d the
 *                final LayerNorm
 *   attention    a·f·L·S, S per layer: softmax 2·min(T, 32)·T (two row blocks of
 *                scores: the fused kernel recomputes P in its backward,
 *                ad_attention_saved_bytes); sparse (B·H + 1)·pairs + 3T
 *                (pairs = ad_sparse_attention_pairs); linear B·H·T·(2·Dh + 1)
 *                + a workspace (Dh = d/H)
 *   logits       a·f·3·B·T·C            logits, their gradient, the loss's softmax
 *   data         data_bytes (the caller's: datasets, generation scratch) + the
 *                batch buffers 2·4·B·T
 * plus the arena's first 8 MiB block.  Evaluation runs on the same arena without
 * gradients, so it needs less than a training step.  Returns the total (SIZE_MAX
 * when it does not fit a size_t); parts (may be NULL) gets each term. */
typedef struct ModelMemory {
    double params, activations, attention, logits, data, total;
} ModelMemory;
size_t  model_memory_estimate(const CfgModel *c, int vocab_size, int n_classes, int max_len, int batch,
                              double data_bytes, ModelMemory *parts);

/* Refuses a run whose estimate is more than al_machine_memory() (physical memory,
 * or what ulimit -v / -d leave).  The message starts with "SOURCE: " (when source
 * is not NULL) and the keys the largest term grows with: len_keys describes the
 * sequence length (e.g. "task.seq_len=100"), data_keys the datasets' sizes (e.g.
 * "task.train_size=10000, eval.test_size=256"); batch is train.batch_size.
 * Returns 0, or 2 with err. */
int     model_memory_check(const CfgModel *c, int batch, int vocab_size, int n_classes, int max_len, const char *len_keys,
                           double data_bytes, const char *data_keys, const char *source, AlError *err);

#endif
