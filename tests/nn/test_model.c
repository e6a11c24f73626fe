/* test_model.c — the whole transformer, gradient-checked end to end.
 *
 * Tiny models (d 8, T 5): softmax attention in every combination of score mode
 * (dot, unit_norm), direction (causal, bidirectional) and positions (none, learned,
 * sinusoidal); linear and sparse attention; the LSTM; DSS; RetNet; Mamba.  Every parameter element's
 * analytic gradient of the cross-entropy loss is compared with central differences. */
#include "check.h"
#include "gradcheck.h"
#include "attnlab/config/config.h"
#include "attnlab/nn/model.h"

#include <stdio.h>
#include <string.h>

typedef struct Case {
    const char *label;
    CfgModelType type;
    CfgAttentionType attn;
    CfgScore score;
    int causal, layers, heads;
    CfgPositional pos;
    CfgActivation act;
    int embed_ln;
    int dss_ff;   /* model.dss.ff */
    int dss_glu;  /* model.dss.postact glu */
    int dss_channels;   /* model.dss.channels */
} Case;

typedef struct Ctx {
    Model *m;
    int B, T;
    int tokens[64], targets[64];
} Ctx;

static Tensor *build(Tape *t, Tensor **leaves, void *p) {
    (void)leaves; /* the leaves are the model's own parameter tensors */
    Ctx *c = p;
    Tensor *logits = model_forward(c->m, t, c->tokens, c->B, c->T);
    return ad_cross_entropy(t, logits, c->targets);
}

static void run_case(const Case *k) {
    CfgModel cfg;
    Config full;
    cfg_defaults(&full);
    cfg = full.model;
    cfg.type = k->type;
    cfg.attention.type = k->attn;
    cfg.attention.block = 2;   /* sparse: T = 5 spans blocks and summaries */
    cfg.d_model = 8;
    cfg.n_layers = k->layers;
    cfg.n_heads = k->type != MODEL_TRANSFORMER ? 1 : k->heads;
    cfg.mamba.d_state = 3;   /* mamba: E = 16, N = 3, R = 1, K = 4 > T/2 */
    cfg.mlp_ratio = 2;
    cfg.attention.score = k->score;
    cfg.attention.beta = 2.0f;
    cfg.attention.causal = k->causal;
    cfg.positional = k->pos;
    cfg.activation = k->act;
    cfg.embed_layernorm = k->embed_ln;
    cfg.init = INIT_NORMAL;
    cfg.init_std = 0.5f;   /* large enough that every path carries a visible gradient */
    /* DSS: 4 modes (skew-HiPPO |Im Λ| ≤ 20): with the default 64, Δ·Im Λ·t reaches 10³
     * rad and a finite difference in log Δ would turn the phase by several radians. */
    cfg.dss.d_state = 4;
    cfg.dss.ff = k->dss_ff;
    cfg.dss.postact = k->dss_glu ? DSS_POSTACT_GLU : DSS_POSTACT_NONE;
    cfg.dss.channels = k->dss_channels;
    Ctx c = { .B = 2, .T = 5 };
    c.m = model_create(&cfg, 7, 3, c.T, 42);
    Rng r = rng_stream(5, 5);
    for (int i = 0; i < c.B * c.T; i++) {
        c.tokens[i] = (int)rng_below(&r, 7);
        c.targets[i] = i % 4 == 3 ? -1 : (int)rng_below(&r, 3);   /* some ignored */
    }
    /* Mamba's reference init gives Δ ≈ 0.001..0.1 and a 1/√L out_proj, so its body
     * starts close to the identity and its gradients sit under atol: give every
     * mixer weight and the Δ bias O(1) values, so every path carries gradient. */
    if (k->type == MODEL_MAMBA)
        for (int i = 0; i < c.m->params.n; i++) {
            Param *p = &c.m->params.p[i];
            if (strstr(p->name, "mixer.") && !strstr(p->name, "A_log") && !strstr(p->name, ".D"))
                for (long j = 0; j < p->t.n; j++) p->t.data[j] = (float)(0.5 * (2.0 * rng_uniform(&r) - 1.0));
        }
    ParamStore *ps = &c.m->params;
    Tensor *leaves[256];
    for (int i = 0; i < ps->n; i++) leaves[i] = &ps->p[i].t;
    /* float32 through ~20 ops.  eps 3e-3: with 1e-2 the truncation error of the
     * unit-norm paths (curvature of x/‖x‖ on 2-wide heads) reached 2e-4; at 3e-3 the
     * worst error is ~2e-5 while the loss's rounding noise (~1e-7/2eps) stays ~1e-5. */
    GcTol tol = { 3e-3f, 5e-5f, 1e-2f, 2 };
    GcResult res;
    int ok = gradcheck(k->label, build, &c, leaves, ps->n, tol, &res);
    CHECK(ok, "%s: %ld of %ld parameter gradients off (max abs err %.2e)", k->label, res.n_bad,
          res.n_checked, res.max_abs_err);
    CHECK(res.n_checked == ps->total, "%s: checked %ld of %ld parameters", k->label, res.n_checked, ps->total);
    /* The check must see a wrong backward deep inside the model, too. */
    static const OpKind MIXER[] = { [ATTN_SOFTMAX] = OP_ATTENTION_HEADS, [ATTN_LINEAR] = OP_LINEAR_ATTENTION,
                                    [ATTN_SPARSE] = OP_SPARSE_ATTENTION };
    OpKind mixer = k->type == MODEL_LSTM ? OP_LSTM : k->type == MODEL_DSS ? OP_DSS_KERNEL
                 : k->type == MODEL_RETNET ? OP_RETENTION : k->type == MODEL_MAMBA ? OP_SELECTIVE_SCAN : MIXER[k->attn];
    CHECK(gradcheck_catches_fault(k->label, mixer, build, &c, leaves, ps->n, tol),
          "%s: a 5%% error in the %s backward went unnoticed", k->label, op_name(mixer));
    if (k->type == MODEL_DSS)   /* the block's second op */
        CHECK(gradcheck_catches_fault(k->label, OP_CAUSAL_CONV, build, &c, leaves, ps->n, tol),
              "%s: a 5%% error in the causal_conv backward went unnoticed", k->label);
    OpKind other = k->type == MODEL_LSTM ? OP_LINEAR : k->type == MODEL_MAMBA ? OP_RMSNORM : OP_LAYERNORM;
    CHECK(gradcheck_catches_fault(k->label, other, build, &c, leaves, ps->n, tol),
          "%s: a 5%% error in the %s backward went unnoticed", k->label, op_name(other));
    if (k->type == MODEL_MAMBA)   /* the mamba block's other own ops */
        for (int i = 0; i < 2; i++) {
            OpKind op = i ? OP_COLUMNS : OP_CAUSAL_CONV1D;
            CHECK(gradcheck_catches_fault(k->label, op, build, &c, leaves, ps->n, tol),
                  "%s: a 5%% error in the %s backward went unnoticed", k->label, op_name(op));
        }
    model_free(c.m);
}

int main(void) {
    static const Case cases[] = {
#define T_SM MODEL_TRANSFORMER, ATTN_SOFTMAX
        { "dot, bidirectional, no pos",          T_SM, SCORE_DOT,       0, 1, 1, POS_NONE,       ACT_GELU_TANH, 0, 0, 0, 1 },
        { "dot, causal, learned, 2L 2H",         T_SM, SCORE_DOT,       1, 2, 2, POS_LEARNED,    ACT_GELU_TANH, 0, 0, 0, 1 },
        { "unit_norm, bidirectional, no pos",    T_SM, SCORE_UNIT_NORM, 0, 1, 1, POS_NONE,       ACT_GELU_TANH, 0, 0, 0, 1 },
        { "unit_norm, causal, sinusoidal 2L 2H", T_SM, SCORE_UNIT_NORM, 1, 2, 2, POS_SINUSOIDAL, ACT_GELU_ERF,  1, 0, 0, 1 },
        { "unit_norm, bidirectional, learned",   T_SM, SCORE_UNIT_NORM, 0, 2, 4, POS_LEARNED,    ACT_GELU_ERF,  1, 0, 0, 1 },
        { "linear elu+1, causal, 2L 2H",         MODEL_TRANSFORMER, ATTN_LINEAR, SCORE_DOT, 1, 2, 2, POS_LEARNED, ACT_GELU_TANH, 0, 0, 0, 1 },
        { "linear elu+1, bidirectional",         MODEL_TRANSFORMER, ATTN_LINEAR, SCORE_DOT, 0, 1, 2, POS_NONE,    ACT_GELU_TANH, 0, 0, 0, 1 },
        { "sparse, causal, 2L 2H",               MODEL_TRANSFORMER, ATTN_SPARSE, SCORE_DOT, 1, 2, 2, POS_LEARNED, ACT_GELU_TANH, 0, 0, 0, 1 },
        { "lstm, 2 layers",                      MODEL_LSTM,        ATTN_SOFTMAX, SCORE_DOT, 1, 2, 1, POS_NONE,   ACT_GELU_TANH, 0, 0, 0, 1 },
        { "dss, 2 layers",                       MODEL_DSS,         ATTN_SOFTMAX, SCORE_DOT, 1, 2, 1, POS_NONE,   ACT_GELU_TANH, 0, 0, 0, 1 },
        { "dss, 2 layers, feed-forward blocks",  MODEL_DSS,         ATTN_SOFTMAX, SCORE_DOT, 1, 2, 1, POS_NONE,   ACT_GELU_TANH, 0, 2, 0, 1 },
        { "dss, 2 layers, GLU",                  MODEL_DSS,         ATTN_SOFTMAX, SCORE_DOT, 1, 2, 1, POS_NONE,   ACT_GELU_TANH, 0, 0, 1, 1 },
        { "dss, 2 layers, 3 kernels per channel", MODEL_DSS,       ATTN_SOFTMAX, SCORE_DOT, 1, 2, 1, POS_NONE,   ACT_GELU_TANH, 0, 0, 1, 3 },
        { "retnet, 2 layers, 2 heads",           MODEL_RETNET,      ATTN_SOFTMAX, SCORE_DOT, 1, 2, 2, POS_NONE,   ACT_GELU_ERF,  0, 0, 0, 1 },
        { "mamba, 2 layers",                     MODEL_MAMBA,       ATTN_SOFTMAX, SCORE_DOT, 1, 2, 1, POS_NONE,   ACT_GELU_TANH, 0, 0, 0, 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
    return check_exit("test_model");
}
