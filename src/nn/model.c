/* model.c — what every network shares: the token embedding, positions, the output
 * head, parameter declaration and initialisation helpers, and dispatch to the
 * transformer (transformer.c) or the LSTM (lstm.c).
 *
 * Initialisation (model_init_params), per tensor, from rng_stream(seed, "init"), in
 * declaration order:
 *   init "torch" (default; what the papers' PyTorch code gets):
 *     tok_emb, learned pos_emb   N(0, 1)                (nn.Embedding)
 *     every Linear weight, bias  U(−1/√in, 1/√in)       (nn.Linear)
 *     LSTM weights and bias      U(−1/√d, 1/√d)         (nn.LSTM; one folded bias)
 *     LayerNorm gain 1, bias 0
 *   init "normal" (GPT-2 style):
 *     tok_emb, pos_emb, Linear weights  N(0, init_std)
 *     attention output o and MLP fc2    N(0, init_std/√(2·n_layers))  (residual branches)
 *     biases 0; LayerNorm gain 1, bias 0; LSTM as "torch"
 *   sinusoidal positions are fixed: PE[p, 2i] = sin(p/10000^(2i/d)), PE[p, 2i+1] = cos(…). */
#include "model_internal.h"
#include "attnlab/util/error.h"
#include "attnlab/util/fsutil.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- declaration ------------------------------------------------------------------ */

Tensor *model_decl(Model *m, int decay, int ndim, const int *shape, const char *name_fmt, int layer) {
    char name[PARAM_NAME_MAX];
    snprintf(name, sizeof name, name_fmt, layer);
    return params_add(&m->params, name, ndim, shape, decay);
}

void model_decl_linear(Model *m, Linear *l, int out, int in, const char *prefix, int layer) {
    char fmt[PARAM_NAME_MAX];
    snprintf(fmt, sizeof fmt, "%s.weight", prefix);
    l->w = model_decl(m, 1, 2, (int[]){out, in}, fmt, layer);
    snprintf(fmt, sizeof fmt, "%s.bias", prefix);
    l->b = model_decl(m, 0, 1, (int[]){out}, fmt, layer);
}

void model_decl_norm(Model *m, Norm *n, const char *prefix, int layer) {
    char fmt[PARAM_NAME_MAX];
    snprintf(fmt, sizeof fmt, "%s.weight", prefix);
    n->g = model_decl(m, 0, 1, (int[]){m->cfg.d_model}, fmt, layer);
    snprintf(fmt, sizeof fmt, "%s.bias", prefix);
    n->b = model_decl(m, 0, 1, (int[]){m->cfg.d_model}, fmt, layer);
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

/* Upper bound on the parameter tensors a config declares (the store never moves). */
static int param_capacity(const CfgModel *cfg) { return 16 + 16 * cfg->n_layers; }

/* Declares every parameter of cfg; then either a block of its own, initialised from
 * seed, or (master not NULL) a replica's store over the master's values. */
static Model *model_build(const CfgModel *cfg, int vocab_size, int n_classes, int max_len, uint64_t seed,
                          const Model *master) {
    Model *m = al_calloc(1, sizeof *m);
    m->cfg = *cfg;
    m->vocab_size = vocab_size;
    m->n_classes = n_classes;
    m->max_len = max_len;
    int d = cfg->d_model;
    params_init(&m->params, param_capacity(cfg));
    m->tok_emb = model_decl(m, 0, 2, (int[]){vocab_size, d}, "tok_emb.weight", 0);
    if (cfg->type == MODEL_TRANSFORMER) {   /* recurrent models see positions through their state */
        if (cfg->positional == POS_LEARNED) m->pos_emb = model_decl(m, 0, 2, (int[]){max_len, d}, "pos_emb.weight", 0);
        if (cfg->positional == POS_SINUSOIDAL) fill_sinusoid(m);
        if (cfg->embed_layernorm) model_decl_norm(m, &m->ln_emb, "ln_emb", 0);
    }
    model_arch(cfg->type)->declare(m);
    model_decl_linear(m, &m->head, n_classes, d, "head", 0);
    if (master) {
        params_finalize_replica(&m->params, &master->params);
        m->sparse_block = master->sparse_block;
        m->anna = master->anna;
    } else {
        params_finalize(&m->params);
        model_init_params(m, seed);
    }
    return m;
}

Model *model_create(const CfgModel *cfg, int vocab_size, int n_classes, int max_len, uint64_t seed) {
    return model_build(cfg, vocab_size, n_classes, max_len, seed, NULL);
}

/* Declaring the same parameters again (rather than copying the master's struct and
 * rebasing its Tensor pointers) keeps every field of Model right by construction,
 * including fields added later. */
Model *model_replica_create(const Model *master) {
    return model_build(&master->cfg, master->vocab_size, master->n_classes, master->max_len, 0, master);
}

/* ---- initialisation ---------------------------------------------------------------- */

void model_fill_normal(Tensor *x, Rng *r, double std) {
    for (long i = 0; i < x->n; i++) x->data[i] = (float)(std * rng_normal(r));
}

void model_fill_uniform(Tensor *x, Rng *r, double bound) {
    for (long i = 0; i < x->n; i++) x->data[i] = (float)(bound * (2.0 * rng_uniform(r) - 1.0));
}

static void fill_const(Tensor *x, float v) {
    for (long i = 0; i < x->n; i++) x->data[i] = v;
}

void model_init_linear(const Model *m, Linear *l, Rng *r, int residual) {
    int in = l->w->shape[1];
    if (m->cfg.init == INIT_TORCH) {
        model_fill_uniform(l->w, r, 1.0 / sqrt(in));
        if (l->b) model_fill_uniform(l->b, r, 1.0 / sqrt(in));
        return;
    }
    double std = m->cfg.init_std;
    if (residual) std /= sqrt(2.0 * m->cfg.n_layers);
    model_fill_normal(l->w, r, std);
    if (l->b) fill_const(l->b, 0.0f);
}

void model_init_norm(Norm *n) {
    fill_const(n->g, 1.0f);
    fill_const(n->b, 0.0f);
}

void model_init_params(Model *m, uint64_t seed) {
    Rng r = rng_stream(seed, 0x696e6974 /* "init" */);
    double emb_std = m->cfg.init == INIT_TORCH ? 1.0 : m->cfg.init_std;
    model_fill_normal(m->tok_emb, &r, emb_std);
    if (m->pos_emb && m->pos_emb->grad) model_fill_normal(m->pos_emb, &r, emb_std);
    if (m->cfg.type == MODEL_TRANSFORMER && m->cfg.embed_layernorm) model_init_norm(&m->ln_emb);
    model_arch(m->cfg.type)->init(m, &r);
    model_init_linear(m, &m->head, &r, 0);
}

/* ---- architectures ----------------------------------------------------------------- */

static const ModelArch ARCHS[] = {
    [MODEL_TRANSFORMER] = { "transformer", transformer_declare, transformer_init, transformer_forward,
                            transformer_flops_per_seq, transformer_param_count, transformer_activation_floats,
                            NULL, NULL },
    [MODEL_LSTM]        = MODEL_ARCH_ROW(lstm),
    [MODEL_DSS]         = MODEL_ARCH_ROW(dss),
    [MODEL_RETNET]      = MODEL_ARCH_ROW(retnet),
    [MODEL_MAMBA]       = MODEL_ARCH_ROW(mamba),
};
_Static_assert(sizeof ARCHS / sizeof *ARCHS == MODEL_TYPE_COUNT, "one ModelArch row per CfgModelType");

const ModelArch *model_arch(CfgModelType type) {
    AL_ASSERT((unsigned)type < MODEL_TYPE_COUNT && ARCHS[type].forward);
    return &ARCHS[type];
}

const char *model_type_name(CfgModelType type) { return model_arch(type)->name; }

int model_is_causal(const CfgModel *c) { return model_arch(c->type)->step ? 1 : c->attention.causal; }

/* ---- forward ----------------------------------------------------------------------- */

Tensor *model_embed(Model *m, Tape *t, const int *tokens, int B, int T, int pos0) {
    int ids_shape[2] = {B, T};
    Tensor *x = ad_embedding(t, m->tok_emb, tokens, 2, ids_shape);
    if (m->pos_emb) {
        int *pos = tape_scratch(t, (size_t)B * T * sizeof(int));
        for (int i = 0; i < B * T; i++) pos[i] = pos0 + i % T;
        x = ad_add(t, x, ad_embedding(t, m->pos_emb, pos, 2, ids_shape));
    }
    if (m->cfg.type == MODEL_TRANSFORMER && m->cfg.embed_layernorm)
        x = ad_layernorm(t, x, m->ln_emb.g, m->ln_emb.b, m->cfg.ln_eps);
    return ad_dropout(t, x, m->cfg.dropout);
}

Tensor *model_forward(Model *m, Tape *t, const int *tokens, int B, int T) {
    return model_forward_rows(m, t, tokens, B, T, NULL, 0);
}

static void clear_shared(Model *m) {
    for (int l = 0; m->dss && l < m->cfg.n_layers; l++) m->dss[l].k_shared = NULL;
}

void model_groups_begin(Model *m, int T) {
    AL_ASSERT(T >= 1 && T <= m->max_len);
    m->groups_T = T;
    clear_shared(m);
}

void model_groups_end(Model *m) {
    m->groups_T = 0;
    clear_shared(m);
}

Tensor *model_keep(Model *m, Tape *t, Tensor *x) {
    if (!m->keep_rows) return x;
    const int n = m->n_keep, c = x->shape[x->ndim - 1];
    Tensor *grid = ad_reshape(t, x, 2, (int[]){(int)(x->n / c), c});
    m->kept++;
    /* ad_embedding gathers rows of any 2-D tensor; its backward adds into x's grad. */
    return ad_reshape(t, ad_embedding(t, grid, m->keep_rows, 1, &n), 3, (int[]){n, 1, c});
}

Tensor *model_dropout(const Model *m, Tape *t, Tensor *x, float p) {
    if (m->keep_rows && m->kept) return ad_dropout_rows(t, x, p, m->keep_rows, m->keep_T);
    return ad_dropout(t, x, p);
}

Tensor *model_forward_rows(Model *m, Tape *t, const int *tokens, int B, int T, const int *rows, int n) {
    AL_ASSERT(T >= 1 && T <= m->max_len);
    AL_ASSERT(!rows || (n >= 1 && n <= B * T));
    for (int i = 0; rows && i < n; i++) AL_ASSERT(rows[i] >= 0 && rows[i] < B * T);
    Tensor *x = model_embed(m, t, tokens, B, T, 0);
    m->keep_rows = rows, m->n_keep = n, m->keep_T = T, m->kept = 0;
    x = model_arch(m->cfg.type)->forward(m, t, x);
    AL_ASSERT(!rows || (m->kept >= 1 && x->shape[0] == n && x->shape[1] == 1));
    m->keep_rows = NULL, m->n_keep = 0, m->kept = 0;
    return ad_linear(t, x, m->head.w, m->head.b);
}

double model_flops_per_seq(const Model *m, int T) {
    double body = model_arch(m->cfg.type)->flops_per_seq(m, T);
    return body + 2.0 * T * m->cfg.d_model * m->n_classes;
}

void model_free(Model *m) {
    if (!m) return;
    params_free(&m->params);
    free(m->blocks);
    free(m->lstm);
    free(m->dss);
    free(m->retnet);
    free(m->mamba);
    free(m->sinusoid.data);
    free(m);
}

/* ---- memory ------------------------------------------------------------------------ */

double model_param_count(const CfgModel *c, int vocab_size, int n_classes, int max_len) {
    double d = c->d_model, n = vocab_size * d + n_classes * (d + 1);   /* tok_emb, head */
    return n + model_arch(c->type)->param_count(c, max_len);
}

/* Attention's saved floats per layer of a training step: softmax keeps two row
 * blocks of scores (its backward recomputes P; ad_attention_saved_bytes); sparse
 * keeps P over the visible pairs; linear keeps φ(q), φ(k) and the denominators,
 * plus a workspace. */
static double attention_floats(const CfgModel *c, double B, int T) {
    const CfgAttention *a = &c->attention;
    double H = c->n_heads, Dh = (double)c->d_model / c->n_heads;
    if (a->type == ATTN_LINEAR) return B * H * T * (2 * Dh + 1) + 2 * Dh * Dh + 3.0 * T * (2 * Dh + 1);
    if (a->type == ATTN_SPARSE) {
        int block = a->block;   /* 0: as transformer_declare resolves it */
        if (block == 0)
            for (block = 1; 4L * block * block <= T;) block *= 2;
        double pairs = (double)ad_sparse_attention_pairs(T, block, a->local_blocks, a->summary);
        return (B * H + 1) * pairs + 3.0 * T;
    }
    return (double)ad_attention_saved_bytes(T, T, 0) / sizeof(float);
}

size_t model_memory_estimate(const CfgModel *c, int vocab_size, int n_classes, int max_len, int batch,
                             double data_bytes, ModelMemory *parts) {
    const double F = sizeof(float), rows = (double)batch * max_len, d = c->d_model, L = c->n_layers;
    const double arena = 1.25;   /* first-step overflow chunks, then a block of 9/8 the high water */
    ModelMemory m = {0};
    m.params = 4 * F * model_param_count(c, vocab_size, n_classes, max_len);
    if (c->type == MODEL_TRANSFORMER && c->positional == POS_SINUSOIDAL) m.params += F * max_len * d;
    double per_layer = model_arch(c->type)->activation_floats(c);   /* values + gradients */
    m.activations = arena * F * rows * (10 * d /* embeddings */ + L * per_layer + 2 * d /* ln_f */ + 2);
    if (c->type == MODEL_TRANSFORMER) {
        m.attention = arena * F * L * attention_floats(c, batch, max_len);
    }
    m.logits = arena * F * rows * 3.0 * n_classes;   /* logits, their gradient, the loss's softmax */
    m.data = data_bytes + 2 * sizeof(int) * rows;    /* and the batch buffers */
    m.total = m.params + m.activations + m.attention + m.logits + m.data + (8 << 20) /* the first arena block */;
    if (parts) *parts = m;
    return m.total >= (double)SIZE_MAX ? SIZE_MAX : (size_t)m.total;
}

/* "train.batch_size=32, task.seq_len=100, model.n_heads=4": what the biggest part
 * of the estimate grows with. */
static void memory_keys(const CfgModel *c, int batch, const ModelMemory *m, const char *len_keys,
                        const char *data_keys, char *out, size_t n) {
    double top = fmax(fmax(m->params, m->activations), fmax(fmax(m->attention, m->logits), m->data));
    if (top == m->data) snprintf(out, n, "%s", data_keys);
    else if (top == m->params) snprintf(out, n, "model.d_model=%d, model.n_layers=%d", c->d_model, c->n_layers);
    else if (top == m->activations)
        snprintf(out, n, "train.batch_size=%d, %s, model.d_model=%d, model.n_layers=%d", batch, len_keys,
                 c->d_model, c->n_layers);
    else if (top == m->attention)
        snprintf(out, n, "train.batch_size=%d, %s, model.n_heads=%d, model.n_layers=%d", batch, len_keys,
                 c->n_heads, c->n_layers);
    else snprintf(out, n, "train.batch_size=%d, %s", batch, len_keys);
}

int model_memory_check(const CfgModel *c, int batch, int vocab_size, int n_classes, int max_len,
                       const char *len_keys, double data_bytes, const char *data_keys, const char *source,
                       AlError *err) {
    ModelMemory m;
    model_memory_estimate(c, vocab_size, n_classes, max_len, batch, data_bytes, &m);
    char what[160], keys[1024], b[7][24];
    double have = al_machine_memory(what, sizeof what);
    if (m.total <= have) return 0;
    memory_keys(c, batch, &m, len_keys, data_keys, keys, sizeof keys);
    return al_fail(err, 2, "%s%s%s: the run needs about %s (parameters with their gradients and Adam moments %s, "
                   "per-step activations %s, attention scores %s, logits %s, datasets %s) but %s %s of memory; "
                   "make them smaller", source ? source : "", source ? ": " : "", keys,
                   al_fmt_bytes(m.total, b[0], sizeof b[0]), al_fmt_bytes(m.params, b[1], sizeof b[1]),
                   al_fmt_bytes(m.activations, b[2], sizeof b[2]), al_fmt_bytes(m.attention, b[3], sizeof b[3]),
                   al_fmt_bytes(m.logits, b[4], sizeof b[4]), al_fmt_bytes(m.data, b[5], sizeof b[5]), what,
                   al_fmt_bytes(have, b[6], sizeof b[6]));
}
