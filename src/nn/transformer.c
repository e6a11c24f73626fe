/* transformer.c — parameters, initialisation and forward pass of the model in
 * transformer.h.  Backward is the tape's: every op below records itself.
 *
 * Initialisation (model_init_params), per tensor, from rng_stream(seed, "init"),
 * in declaration order:
 *   init "torch" (default; what the papers' PyTorch code gets):
 *     tok_emb, learned pos_emb   N(0, 1)                (nn.Embedding)
 *     every Linear weight, bias  U(−1/√in, 1/√in)       (nn.Linear)
 *     LayerNorm gain 1, bias 0
 *   init "normal" (GPT-2 style):
 *     tok_emb, pos_emb, Linear weights  N(0, init_std)
 *     attention output o and MLP fc2    N(0, init_std/√(2·n_layers))  (residual branches)
 *     biases 0; LayerNorm gain 1, bias 0
 *   sinusoidal positions are fixed: PE[p, 2i] = sin(p/10000^(2i/d)), PE[p, 2i+1] = cos(…). */
#include "attnlab/nn/transformer.h"
#include "attnlab/util/error.h"
#include "attnlab/util/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- declaration ------------------------------------------------------------------ */

static Tensor *decl(Model *m, int decay, int ndim, const int *shape, const char *fmt, int layer) {
    char name[PARAM_NAME_MAX];
    snprintf(name, sizeof name, fmt, layer);
    return params_add(&m->params, name, ndim, shape, decay);
}

static void decl_linear(Model *m, Linear *l, int out, int in, const char *prefix, int layer) {
    char fmt[PARAM_NAME_MAX];
    snprintf(fmt, sizeof fmt, "%s.weight", prefix);
    l->w = decl(m, 1, 2, (int[]){out, in}, fmt, layer);
    snprintf(fmt, sizeof fmt, "%s.bias", prefix);
    l->b = decl(m, 0, 1, (int[]){out}, fmt, layer);
}

static void decl_norm(Model *m, Norm *n, const char *prefix, int layer) {
    char fmt[PARAM_NAME_MAX];
    snprintf(fmt, sizeof fmt, "%s.weight", prefix);
    n->g = decl(m, 0, 1, (int[]){m->cfg.d_model}, fmt, layer);
    snprintf(fmt, sizeof fmt, "%s.bias", prefix);
    n->b = decl(m, 0, 1, (int[]){m->cfg.d_model}, fmt, layer);
}

static void fill_sinusoid(Model *m) {
    int d = m->cfg.d_model;
    float *pe = al_malloc((size_t)m->max_len * d * sizeof(float));
    for (int p = 0; p < m->max_len; p++)
        for (int i = 0; i < d; i++) {
            double angle = p / pow(10000.0, (double)(i - i % 2) / d);
            pe[p * d + i] = (float)(i % 2 ? cos(angle) : sin(angle));
        }
    tensor_init(&m->sinusoid, pe, NULL, 2, (int[]){m->max_len, d});
    m->pos_emb = &m->sinusoid;
}

Model *model_create(const CfgModel *cfg, int vocab_size, int n_classes, int max_len, uint64_t seed) {
    Model *m = al_calloc(1, sizeof *m);
    m->cfg = *cfg;
    m->vocab_size = vocab_size;
    m->n_classes = n_classes;
    m->max_len = max_len;
    int d = cfg->d_model, hidden = cfg->mlp_ratio * d;
    params_init(&m->params, 16 + 16 * cfg->n_layers);
    m->tok_emb = decl(m, 0, 2, (int[]){vocab_size, d}, "tok_emb.weight", 0);
    if (cfg->positional == POS_LEARNED) m->pos_emb = decl(m, 0, 2, (int[]){max_len, d}, "pos_emb.weight", 0);
    if (cfg->positional == POS_SINUSOIDAL) fill_sinusoid(m);
    if (cfg->embed_layernorm) decl_norm(m, &m->ln_emb, "ln_emb", 0);
    m->blocks = al_calloc((size_t)cfg->n_layers, sizeof *m->blocks);
    for (int l = 0; l < cfg->n_layers; l++) {
        Block *b = &m->blocks[l];
        decl_norm(m, &b->ln1, "blocks.%d.ln1", l);
        decl_linear(m, &b->q, d, d, "blocks.%d.attn.q", l);
        decl_linear(m, &b->k, d, d, "blocks.%d.attn.k", l);
        decl_linear(m, &b->v, d, d, "blocks.%d.attn.v", l);
        decl_linear(m, &b->o, d, d, "blocks.%d.attn.o", l);
        decl_norm(m, &b->ln2, "blocks.%d.ln2", l);
        decl_linear(m, &b->fc1, hidden, d, "blocks.%d.mlp.fc1", l);
        decl_linear(m, &b->fc2, d, hidden, "blocks.%d.mlp.fc2", l);
    }
    decl_norm(m, &m->ln_f, "ln_f", 0);
    decl_linear(m, &m->head, n_classes, d, "head", 0);
    params_finalize(&m->params);
    model_init_params(m, seed);
    return m;
}

/* ---- initialisation ---------------------------------------------------------------- */

static void fill_normal(Tensor *x, Rng *r, double std) {
    for (long i = 0; i < x->n; i++) x->data[i] = (float)(std * rng_normal(r));
}

static void fill_uniform(Tensor *x, Rng *r, double bound) {
    for (long i = 0; i < x->n; i++) x->data[i] = (float)(bound * (2.0 * rng_uniform(r) - 1.0));
}

static void fill_const(Tensor *x, float v) {
    for (long i = 0; i < x->n; i++) x->data[i] = v;
}

static void init_linear(const Model *m, Linear *l, Rng *r, int residual) {
    int in = l->w->shape[1];
    if (m->cfg.init == INIT_TORCH) {
        fill_uniform(l->w, r, 1.0 / sqrt(in));
        fill_uniform(l->b, r, 1.0 / sqrt(in));
        return;
    }
    double std = m->cfg.init_std;
    if (residual) std /= sqrt(2.0 * m->cfg.n_layers);
    fill_normal(l->w, r, std);
    fill_const(l->b, 0.0f);
}

static void init_norm(Norm *n) {
    fill_const(n->g, 1.0f);
    fill_const(n->b, 0.0f);
}

void model_init_params(Model *m, uint64_t seed) {
    Rng r = rng_stream(seed, 0x696e6974 /* "init" */);
    double emb_std = m->cfg.init == INIT_TORCH ? 1.0 : m->cfg.init_std;
    fill_normal(m->tok_emb, &r, emb_std);
    if (m->pos_emb && m->pos_emb->grad) fill_normal(m->pos_emb, &r, emb_std);
    if (m->cfg.embed_layernorm) init_norm(&m->ln_emb);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        Block *b = &m->blocks[l];
        init_norm(&b->ln1);
        init_linear(m, &b->q, &r, 0);
        init_linear(m, &b->k, &r, 0);
        init_linear(m, &b->v, &r, 0);
        init_linear(m, &b->o, &r, 1);
        init_norm(&b->ln2);
        init_linear(m, &b->fc1, &r, 0);
        init_linear(m, &b->fc2, &r, 1);
    }
    init_norm(&m->ln_f);
    init_linear(m, &m->head, &r, 0);
}

/* ---- forward ----------------------------------------------------------------------- */

static Tensor *linear(Tape *t, Tensor *x, const Linear *l) { return ad_linear(t, x, l->w, l->b); }

static Tensor *norm(const Model *m, Tape *t, Tensor *x, const Norm *n) {
    return ad_layernorm(t, x, n->g, n->b, m->cfg.ln_eps);
}

/* (B, T, d) → (B, H, T, d/H).  One head needs no copy: it is a reshape. */
static Tensor *to_heads(Tape *t, Tensor *x, int H) {
    if (H == 1) return ad_reshape(t, x, 4, (int[]){x->shape[0], 1, x->shape[1], x->shape[2]});
    return ad_split_heads(t, x, H);
}

static Tensor *from_heads(Tape *t, Tensor *x) {
    if (x->shape[1] == 1) return ad_reshape(t, x, 3, (int[]){x->shape[0], x->shape[2], x->shape[3]});
    return ad_merge_heads(t, x);
}

/* h is (B, T, d); mask NULL or (T, T). */
static Tensor *attention(const Model *m, Tape *t, const Block *b, Tensor *h, const Tensor *mask) {
    const CfgAttention *a = &m->cfg.attention;
    int H = m->cfg.n_heads;
    Tensor *q = to_heads(t, linear(t, h, &b->q), H);
    Tensor *k = to_heads(t, linear(t, h, &b->k), H);
    Tensor *v = to_heads(t, linear(t, h, &b->v), H);
    float scale = 1.0f / sqrtf((float)(m->cfg.d_model / H));
    if (a->score == SCORE_UNIT_NORM) {
        q = ad_l2norm(t, q, 1e-12f);
        k = ad_l2norm(t, k, 1e-12f);
        scale = a->beta;
    }
    Tensor *y = ad_attention(t, q, k, v, mask, scale);
    return linear(t, from_heads(t, y), &b->o);
}

static Tensor *mlp(const Model *m, Tape *t, const Block *b, Tensor *h) {
    AdGelu kind = m->cfg.activation == ACT_GELU_ERF ? GELU_ERF : GELU_TANH;
    return linear(t, ad_gelu(t, linear(t, h, &b->fc1), kind), &b->fc2);
}

static Tensor *embed(const Model *m, Tape *t, const int *tokens, int B, int T) {
    int ids_shape[2] = {B, T};
    Tensor *x = ad_embedding(t, m->tok_emb, tokens, 2, ids_shape);
    if (m->pos_emb) {
        int *pos = tape_scratch(t, (size_t)B * T * sizeof(int));
        for (int i = 0; i < B * T; i++) pos[i] = i % T;
        x = ad_add(t, x, ad_embedding(t, m->pos_emb, pos, 2, ids_shape));
    }
    if (m->cfg.embed_layernorm) x = norm(m, t, x, &m->ln_emb);
    return ad_dropout(t, x, m->cfg.dropout);
}

Tensor *model_forward(Model *m, Tape *t, const int *tokens, int B, int T) {
    AL_ASSERT(T >= 1 && T <= m->max_len);
    Tensor *mask = NULL;
    if (m->cfg.attention.causal) {
        mask = tape_tensor(t, 0, 2, (int[]){T, T});
        ad_causal_mask(mask);
    }
    Tensor *x = embed(m, t, tokens, B, T);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const Block *b = &m->blocks[l];
        x = ad_add(t, x, ad_dropout(t, attention(m, t, b, norm(m, t, x, &b->ln1), mask), m->cfg.dropout));
        x = ad_add(t, x, ad_dropout(t, mlp(m, t, b, norm(m, t, x, &b->ln2)), m->cfg.dropout));
    }
    return linear(t, norm(m, t, x, &m->ln_f), &m->head);
}

double model_flops_per_seq(const Model *m, int T) {
    double d = m->cfg.d_model, hidden = (double)m->cfg.mlp_ratio * d;
    double per_layer = 2.0 * T * d * d * 4       /* q, k, v, o */
                     + 2.0 * T * T * d * 2       /* Q·Kᵀ and P·V over all heads */
                     + 2.0 * T * d * hidden * 2; /* fc1, fc2 */
    return per_layer * m->cfg.n_layers + 2.0 * T * d * m->n_classes;
}

void model_free(Model *m) {
    if (!m) return;
    params_free(&m->params);
    free(m->blocks);
    free(m->sinusoid.data);
    free(m);
}
