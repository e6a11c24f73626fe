/* retnet.c — RetNet (Sun et al. 2023, "Retentive Network: A Successor to
 * Transformer for Large Language Models"), as model.h lists it: pre-LN layers of
 * multi-scale retention (eq. 8) and a GELU FFN (eq. 9), a final LayerNorm and the
 * head; no positional embedding.
 *
 * Training runs retention in its parallel form, one tape op per layer
 * (ad_retention, ops_retnet.c).  Decoding runs the same layers — the same
 * projections, GroupNorm, gate and FFN, on one position — with retention in its
 * recurrent form (eq. 6 with the §2.2 normalisations) over a state per layer and
 * row: the position n, then per head S (Dk × Dv) and z (Dk):
 *   S_n = γ S_{n−1} + k̃_nᵀ v_n,   z_n = γ z_{n−1} + k̃_n,
 *   o_n = c_n q̃_n S_n / max(|c_n q̃_n·z_n|, 1).
 * The two forms are the same function (tests/autodiff/test_retention.c, and
 * tests/nn/test_decode.c end to end). */
#include "model_internal.h"
#include "attnlab/util/error.h"

#include <math.h>
#include <string.h>

static int value_dim(const CfgModel *c) { return c->retnet.value_factor * c->d_model; }

void retnet_declare(Model *m) {
    int d = m->cfg.d_model, dv = value_dim(&m->cfg), hidden = m->cfg.mlp_ratio * d;
    m->retnet = al_calloc((size_t)m->cfg.n_layers, sizeof *m->retnet);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        RetnetLayer *L = &m->retnet[l];
        model_decl_norm(m, &L->ln1, "retnet.%d.ln1", l);
        L->q.w = model_decl(m, 1, 2, (int[]){d, d}, "retnet.%d.retention.q_proj.weight", l);
        L->k.w = model_decl(m, 1, 2, (int[]){d, d}, "retnet.%d.retention.k_proj.weight", l);
        L->v.w = model_decl(m, 1, 2, (int[]){dv, d}, "retnet.%d.retention.v_proj.weight", l);
        L->g.w = model_decl(m, 1, 2, (int[]){dv, d}, "retnet.%d.retention.g_proj.weight", l);
        L->o.w = model_decl(m, 1, 2, (int[]){d, dv}, "retnet.%d.retention.out_proj.weight", l);
        model_decl_norm(m, &L->ln2, "retnet.%d.ln2", l);
        model_decl_linear(m, &L->fc1, hidden, d, "retnet.%d.ffn.fc1", l);
        model_decl_linear(m, &L->fc2, d, hidden, "retnet.%d.ffn.fc2", l);
    }
    model_decl_norm(m, &m->ln_f, "ln_f", 0);
}

/* The project's inits (model.c), not the official code's Xavier gains: "torch"
 * gives every projection U(±1/√in), "normal" N(0, std) with the residual
 * branches' out_proj and fc2 scaled by 1/√(2L). */
void retnet_init(Model *m, Rng *r) {
    for (int l = 0; l < m->cfg.n_layers; l++) {
        RetnetLayer *L = &m->retnet[l];
        model_init_norm(&L->ln1);
        model_init_linear(m, &L->q, r, 0);
        model_init_linear(m, &L->k, r, 0);
        model_init_linear(m, &L->v, r, 0);
        model_init_linear(m, &L->g, r, 0);
        model_init_linear(m, &L->o, r, 1);
        model_init_norm(&L->ln2);
        model_init_linear(m, &L->fc1, r, 0);
        model_init_linear(m, &L->fc2, r, 1);
    }
    model_init_norm(&m->ln_f);
}

/* GroupNorm with one group per head and no affine (eq. 8's GroupNorm_h): a
 * LayerNorm over each head's Dv values, gain 1 and bias 0 as constants. */
static Tensor *group_norm(const Model *m, Tape *t, Tensor *x) {
    int H = m->cfg.n_heads, C = x->shape[2] / H, rows = x->shape[0] * x->shape[1] * H;
    Tensor *one = tape_tensor(t, 0, 1, &C), *zero = tape_zeros(t, 0, 1, &C);
    for (int i = 0; i < C; i++) one->data[i] = 1.0f;
    Tensor *y = ad_layernorm(t, ad_reshape(t, x, 2, (int[]){rows, C}), one, zero, m->cfg.ln_eps);
    return ad_reshape(t, y, 3, x->shape);
}

static Tensor *linear(Tape *t, Tensor *x, const Linear *l) { return ad_linear(t, x, l->w, l->b); }

/* MSR(h) = W_O (swish(h W_G) ⊙ GroupNorm(retention)) + res (eq. 8); retention by mix. */
static Tensor *msr(const Model *m, Tape *t, const BlockMixer *mix, int layer, Tensor *h, Tensor *res) {
    const RetnetLayer *L = &m->retnet[layer];
    Tensor *q = linear(t, h, &L->q), *k = linear(t, h, &L->k), *v = linear(t, h, &L->v);
    Tensor *y = group_norm(m, t, mix->fn(mix->ctx, m, t, layer, q, k, v));
    y = ad_mul(t, ad_silu(t, linear(t, h, &L->g)), y);
    return ad_linear_residual(t, y, L->o.w, NULL, res);
}

static Tensor *ffn(const Model *m, Tape *t, const BlockMixer *mix, int layer, Tensor *h, Tensor *res) {
    (void)mix;
    const RetnetLayer *L = &m->retnet[layer];
    AdGelu kind = m->cfg.activation == ACT_GELU_ERF ? GELU_ERF : GELU_TANH;
    return ad_mlp(t, h, L->fc1.w, L->fc1.b, L->fc2.w, L->fc2.b, res, kind);
}

/* x (B, T, d) → LN_f(the n_layers layers of x), retention by mix (eq. 9). */
static Tensor *layers(Model *m, Tape *t, Tensor *x, const BlockMixer *mix) {
    for (int l = 0; l < m->cfg.n_layers; l++) {
        x = model_residual(m, t, mix, l, x, &m->retnet[l].ln1, msr);
        if (l == m->cfg.n_layers - 1) x = model_keep(m, t, x);   /* positions mixed for the last time */
        x = model_residual(m, t, mix, l, x, &m->retnet[l].ln2, ffn);
    }
    return ad_layernorm(t, x, m->ln_f.g, m->ln_f.b, m->cfg.ln_eps);
}

static Tensor *parallel(void *ctx, const Model *m, Tape *t, int layer, Tensor *q, Tensor *k, Tensor *v) {
    (void)ctx, (void)layer;
    return ad_retention(t, q, k, v, m->cfg.n_heads);
}

Tensor *retnet_forward(Model *m, Tape *t, Tensor *x) {
    AL_ASSERT(x->ndim == 3);
    return layers(m, t, x, &(BlockMixer){ parallel, NULL });
}

double retnet_flops_per_seq(const Model *m, int T) {
    double d = m->cfg.d_model, dv = value_dim(&m->cfg), hidden = (double)m->cfg.mlp_ratio * d;
    double per_layer = 2.0 * T * d * d * 2          /* q, k */
                     + 2.0 * T * d * dv * 3         /* v, g, o */
                     + 2.0 * T * T * (d + dv)       /* Q̃K̃ᵀ and P·V per head, full T×T */
                     + 2.0 * T * d * hidden * 2;    /* fc1, fc2 */
    return per_layer * m->cfg.n_layers;
}

double retnet_param_count(const CfgModel *c, int max_len) {
    (void)max_len;
    double d = c->d_model, dv = value_dim(c), h = (double)c->mlp_ratio * d;
    return 2 * d /* ln_f */ + c->n_layers * (4 * d + 2 * d * d + 3 * d * dv + (h * d + h) + (d * h + d));
}

/* Values and gradients per row: ln1, q, k, the MSR output and ln2, the FFN output
 * (d each), v, g, retention, GroupNorm, swish, gate (dv each), plus the op's
 * rotated q̃, k̃ (values only) and the FFN's 2h; dropout adds two (B,T,d) tensors
 * and the two residual adds. */
double retnet_activation_floats(const CfgModel *c) {
    double d = c->d_model;
    return (c->dropout > 0 ? 18 : 14) * d + 12.0 * value_dim(c) + 2.0 * c->mlp_ratio * d;
}

size_t retnet_state_floats(const Model *m) {
    size_t H = (size_t)m->cfg.n_heads, dk = (size_t)m->cfg.d_model / H, dv = (size_t)value_dim(&m->cfg) / H;
    return 1 + H * dk * dv + H * dk;   /* position, S, z */
}

/* The decoder's state: [layer][row][S floats], rows of the decoder's batch. */
typedef struct RetnetState { float *state; int batch; } RetnetState;

/* One position of every head of row b: q, k (Dk), v (Dv) → out (Dv), the state st
 * of that row and layer advanced by one step. */
static void recurrent_row(const Model *m, float *st, const float *q, const float *k, const float *v, float *out,
                          float *qr, float *kr) {
    int H = m->cfg.n_heads, Dk = m->cfg.d_model / H, Dv = value_dim(&m->cfg) / H, n = (int)st[0];
    float *S_all = st + 1, *z_all = S_all + (size_t)H * Dk * Dv;
    for (int h = 0; h < H; h++) {
        double gamma = ad_retention_decay(h);
        float g = (float)gamma, c = (float)ad_retention_row_scale(gamma, n), sum = 0;
        float *S = S_all + (size_t)h * Dk * Dv, *z = z_all + (size_t)h * Dk, *o = out + (size_t)h * Dv;
        ad_retention_rotate(q + (size_t)h * Dk, qr, Dk, n, 1.0f);
        ad_retention_rotate(k + (size_t)h * Dk, kr, Dk, n, 1.0f / sqrtf((float)Dk));
        memset(o, 0, (size_t)Dv * sizeof(float));
        for (int a = 0; a < Dk; a++) {
            float *Sa = S + (size_t)a * Dv;
            const float *vh = v + (size_t)h * Dv;
            z[a] = g * z[a] + kr[a];
            sum += c * qr[a] * z[a];
            for (int e = 0; e < Dv; e++) {
                Sa[e] = g * Sa[e] + kr[a] * vh[e];
                o[e] += c * qr[a] * Sa[e];
            }
        }
        float inv = 1.0f / fmaxf(fabsf(sum), 1.0f);
        for (int e = 0; e < Dv; e++) o[e] *= inv;
    }
    st[0] = (float)(n + 1);
}

static Tensor *recurrent(void *ctx, const Model *m, Tape *t, int layer, Tensor *q, Tensor *k, Tensor *v) {
    const RetnetState *rs = ctx;
    int B = q->shape[0], dq = q->shape[2], dv = v->shape[2], Dk = dq / m->cfg.n_heads;
    AL_ASSERT(q->shape[1] == 1);
    size_t S = retnet_state_floats(m);
    Tensor *o = tape_tensor(t, 0, 3, (int[]){B, 1, dv});
    float *qr = tape_scratch(t, (size_t)Dk * sizeof(float)), *kr = tape_scratch(t, (size_t)Dk * sizeof(float));
    for (int b = 0; b < B; b++)
        recurrent_row(m, rs->state + ((size_t)layer * rs->batch + b) * S, q->data + (size_t)b * dq,
                      k->data + (size_t)b * dq, v->data + (size_t)b * dv, o->data + (size_t)b * dv, qr, kr);
    return o;
}

Tensor *retnet_step(Model *m, Tape *t, Tensor *x, float *state, int batch) {
    RetnetState rs = { state, batch };
    return layers(m, t, x, &(BlockMixer){ recurrent, &rs });
}
