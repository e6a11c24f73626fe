/* transformer.c — the pre-LN transformer blocks of model.h: declaration, init and
 * forward.  Backward is the tape's: every op below records itself. */
#include "model_internal.h"
#include "attnlab/util/error.h"

#include <math.h>
#include <stdlib.h>

void transformer_declare(Model *m) {
    int d = m->cfg.d_model, hidden = m->cfg.mlp_ratio * d;
    m->blocks = al_calloc((size_t)m->cfg.n_layers, sizeof *m->blocks);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        Block *b = &m->blocks[l];
        model_decl_norm(m, &b->ln1, "blocks.%d.ln1", l);
        model_decl_linear(m, &b->q, d, d, "blocks.%d.attn.q", l);
        model_decl_linear(m, &b->k, d, d, "blocks.%d.attn.k", l);
        model_decl_linear(m, &b->v, d, d, "blocks.%d.attn.v", l);
        model_decl_linear(m, &b->o, d, d, "blocks.%d.attn.o", l);
        model_decl_norm(m, &b->ln2, "blocks.%d.ln2", l);
        model_decl_linear(m, &b->fc1, hidden, d, "blocks.%d.mlp.fc1", l);
        model_decl_linear(m, &b->fc2, d, hidden, "blocks.%d.mlp.fc2", l);
    }
    model_decl_norm(m, &m->ln_f, "ln_f", 0);
    /* Sparse attention's default block: B = 2^⌊log2 √L⌋ (docs/design.md, decision 7). */
    const CfgAttention *a = &m->cfg.attention;
    m->sparse_block = a->block;
    if (a->type == ATTN_SPARSE && m->sparse_block == 0)
        for (m->sparse_block = 1; 4 * m->sparse_block * m->sparse_block <= m->max_len;) m->sparse_block *= 2;
}

void transformer_init(Model *m, Rng *r) {
    for (int l = 0; l < m->cfg.n_layers; l++) {
        Block *b = &m->blocks[l];
        model_init_norm(&b->ln1);
        model_init_linear(m, &b->q, r, 0);
        model_init_linear(m, &b->k, r, 0);
        model_init_linear(m, &b->v, r, 0);
        model_init_linear(m, &b->o, r, 1);
        model_init_norm(&b->ln2);
        model_init_linear(m, &b->fc1, r, 0);
        model_init_linear(m, &b->fc2, r, 1);
    }
    model_init_norm(&m->ln_f);
}

static Tensor *linear(Tape *t, Tensor *x, const Linear *l) { return ad_linear(t, x, l->w, l->b); }

static Tensor *norm(const Model *m, Tape *t, Tensor *x, const Norm *n) {
    return ad_layernorm(t, x, n->g, n->b, m->cfg.ln_eps);
}

/* (B, T, d) → (B, H, T, d/H) for the mechanisms that take split heads (linear,
 * sparse, ANNA).  One head needs no copy: it is a reshape. */
static Tensor *to_heads(Tape *t, Tensor *x, int H) {
    if (H == 1) return ad_reshape(t, x, 4, (int[]){x->shape[0], 1, x->shape[1], x->shape[2]});
    return ad_split_heads(t, x, H);
}

static Tensor *from_heads(Tape *t, Tensor *x) {
    if (x->shape[1] == 1) return ad_reshape(t, x, 3, (int[]){x->shape[0], x->shape[2], x->shape[3]});
    return ad_merge_heads(t, x);
}

static void split3(Tape *t, int H, Tensor **q, Tensor **k, Tensor **v) {
    *q = to_heads(t, *q, H);
    *k = to_heads(t, *k, H);
    *v = to_heads(t, *v, H);
}

/* x (B, T, H·Dh) with every head's Dh-slice of every row scaled to unit norm: one
 * l2norm over the (B·T·H, Dh) view. */
static Tensor *unit_norm_heads(Tape *t, Tensor *x, int H) {
    Tensor *rows = ad_reshape(t, x, 2, (int[]){x->shape[0] * x->shape[1] * H, x->shape[2] / H});
    return ad_reshape(t, ad_l2norm(t, rows, 1e-12f), 3, x->shape);
}

/* Training's BlockMix: q, k, v (B, T, d) → (B, T, d) over all T positions by the
 * configured mechanism, recorded on the tape.  Softmax and sparse scores are
 * q·k/√(d/H) ("dot") or β·q̂·k̂ on per-head unit-norm rows ("unit_norm"). */
static Tensor *mix_positions(void *ctx, const Model *m, Tape *t, int layer, Tensor *q, Tensor *k, Tensor *v) {
    (void)ctx;
    const CfgAttention *a = &m->cfg.attention;
    int H = m->cfg.n_heads;
    /* ANNA in place of the trained attention (distillation): q and k are
     * unit-normalised inside, as the surrogate was trained with unit-norm Q, K. */
    if (m->anna && m->anna->per_layer[layer]) {
        split3(t, H, &q, &k, &v);
        return from_heads(t, m->anna->attention(t, q, k, v, m->anna->per_layer[layer], a->causal));
    }
    const int capture = m->capture && !t->training;   /* inspection only: never while training */
    if (a->type == ATTN_LINEAR) {
        if (capture) capture_attention(m, layer, q, k, 1.0f);
        split3(t, H, &q, &k, &v);
        return from_heads(t, ad_linear_attention(t, q, k, v, a->feature, a->causal, a->eps));
    }
    float scale = 1.0f / sqrtf((float)(m->cfg.d_model / H));
    if (a->score == SCORE_UNIT_NORM) {
        q = unit_norm_heads(t, q, H);
        k = unit_norm_heads(t, k, H);
        scale = a->beta;
    }
    if (capture) capture_attention(m, layer, q, k, scale);
    if (a->type == ATTN_SPARSE) {
        split3(t, H, &q, &k, &v);
        return from_heads(t, ad_sparse_attention(t, q, k, v, m->sparse_block, a->local_blocks, a->summary, scale));
    }
    /* Softmax: heads read in place, the output already in the (B, T, d) layout. */
    return ad_attention_heads(t, q, k, v, H, a->causal, scale);
}

static Tensor *attention(const Model *m, Tape *t, const BlockMixer *mix, int layer, Tensor *h, Tensor *res) {
    const Block *b = &m->blocks[layer];
    Tensor *q = linear(t, h, &b->q), *k = linear(t, h, &b->k), *v = linear(t, h, &b->v);
    return ad_linear_residual(t, mix->fn(mix->ctx, m, t, layer, q, k, v), b->o.w, b->o.b, res);
}

static Tensor *mlp(const Model *m, Tape *t, const BlockMixer *mix, int layer, Tensor *h, Tensor *res) {
    (void)mix;
    const Block *b = &m->blocks[layer];
    AdGelu kind = m->cfg.activation == ACT_GELU_ERF ? GELU_ERF : GELU_TANH;
    return ad_mlp(t, h, b->fc1.w, b->fc1.b, b->fc2.w, b->fc2.b, res, kind);
}

/* x + dropout(f(norm(x))).  Without dropout (ad_dropout would return its input) the
 * add happens inside f's last GEMM; with it, dropout sits between f and the add.
 * A decoder's tape is never training, so decoding always takes the fused path. */
Tensor *model_residual(const Model *m, Tape *t, const BlockMixer *mix, int layer, Tensor *x, const Norm *n,
                       Sublayer f) {
    float p = m->cfg.dropout;
    Tensor *h = norm(m, t, x, n);
    if (!t->training || p == 0.0f) return f(m, t, mix, layer, h, x);
    return ad_add(t, x, model_dropout(m, t, f(m, t, mix, layer, h, NULL), p));
}

Tensor *transformer_blocks(Model *m, Tape *t, Tensor *x, const BlockMixer *mix) {
    for (int l = 0; l < m->cfg.n_layers; l++) {
        x = model_residual(m, t, mix, l, x, &m->blocks[l].ln1, attention);
        if (l == m->cfg.n_layers - 1) x = model_keep(m, t, x);   /* positions mixed for the last time */
        x = model_residual(m, t, mix, l, x, &m->blocks[l].ln2, mlp);
    }
    return norm(m, t, x, &m->ln_f);
}

Tensor *transformer_forward(Model *m, Tape *t, Tensor *x) {
    AL_ASSERT(x->ndim == 3);
    return transformer_blocks(m, t, x, &(BlockMixer){ mix_positions, NULL });
}

/* Forward multiply-adds (×2) of the products per sequence; see model_flops_per_seq. */
double transformer_flops_per_seq(const Model *m, int T) {
    const CfgAttention *a = &m->cfg.attention;
    double d = m->cfg.d_model, d_head = d / m->cfg.n_heads, hidden = (double)m->cfg.mlp_ratio * d, mix;
    if (a->type == ATTN_LINEAR)        /* per head: S or Gᵀ·V and F·S (T·Dh² each), den = F·z */
        mix = 2.0 * T * d * d_head * 2 + 2.0 * T * d;
    else if (a->type == ATTN_SPARSE)   /* q·k and p·v over the visible pairs only */
        mix = 2.0 * (double)ad_sparse_attention_pairs(T, m->sparse_block, a->local_blocks, a->summary) * d * 2;
    else                               /* Q·Kᵀ and P·V over the full T×T, causal too: a */
        mix = 2.0 * T * T * d * 2;     /* nominal count (the kernel skips masked blocks) */
    double per_layer = 2.0 * T * d * d * 4       /* q, k, v, o */
                     + mix
                     + 2.0 * T * d * hidden * 2; /* fc1, fc2 */
    return per_layer * m->cfg.n_layers;
}

/* The blocks' parameters, the embedding extras (learned positions, the embedding
 * LayerNorm) and the final LayerNorm; model_param_count adds tok_emb and the head. */
double transformer_param_count(const CfgModel *c, int max_len) {
    double d = c->d_model, L = c->n_layers, h = (double)c->mlp_ratio * d, n = 0;
    if (c->positional == POS_LEARNED) n += max_len * d;
    if (c->embed_layernorm) n += 2 * d;
    return n + 2 * d /* ln_f */ + L * (4 * d + 4 * (d * d + d) + (h * d + h) + (d * h + d));
}

/* A block's values and gradients per row (model_memory_estimate): the MLP (ad_mlp)
 * keeps GELU(h) and GELU′(h) of its hidden layer; without dropout the two residual
 * adds happen inside the GEMMs (ad_linear_residual, ad_mlp), so their outputs are
 * two (B,T,d) tensors fewer. */
double transformer_activation_floats(const CfgModel *c) {
    return (c->dropout > 0 ? 36 : 32) * (double)c->d_model + 2.0 * c->mlp_ratio * c->d_model;
}
