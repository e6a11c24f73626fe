/* test_model.c — the whole transformer, gradient-checked end to end.
 *
 * Tiny models (d 8, T 5) in every combination of score mode (dot, unit_norm),
 * direction (causal, bidirectional) and positions (none, learned, sinusoidal),
 * with 1–2 layers and heads: every parameter element's analytic gradient of the
 * cross-entropy loss is compared with central differences. */
#include "check.h"
#include "gradcheck.h"
#include "attnlab/nn/model.h"

#include <stdio.h>

typedef struct Case {
    const char *label;
    CfgScore score;
    int causal, layers, heads;
    CfgPositional pos;
    CfgActivation act;
    int embed_ln;
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
    cfg.d_model = 8;
    cfg.n_layers = k->layers;
    cfg.n_heads = k->heads;
    cfg.mlp_ratio = 2;
    cfg.attention.score = k->score;
    cfg.attention.beta = 2.0f;
    cfg.attention.causal = k->causal;
    cfg.positional = k->pos;
    cfg.activation = k->act;
    cfg.embed_layernorm = k->embed_ln;
    cfg.init = INIT_NORMAL;
    cfg.init_std = 0.5f;   /* large enough that every path carries a visible gradient */
    Ctx c = { .B = 2, .T = 5 };
    c.m = model_create(&cfg, 7, 3, c.T, 42);
    Rng r = rng_stream(5, 5);
    for (int i = 0; i < c.B * c.T; i++) {
        c.tokens[i] = (int)rng_below(&r, 7);
        c.targets[i] = i % 4 == 3 ? -1 : (int)rng_below(&r, 3);   /* some ignored */
    }
    ParamStore *ps = &c.m->params;
    Tensor *leaves[256];
    for (int i = 0; i < ps->n; i++) leaves[i] = &ps->p[i].t;
    /* float32 through ~20 ops.  eps 3e-3: with 1e-2 the truncation error of the
     * unit-norm paths (curvature of x/‖x‖ on 2-wide heads) reached 2e-4; at 3e-3 the
     * worst error is ~2e-5 while the loss's rounding noise (~1e-7/2eps) stays ~1e-5. */
    GcTol tol = { 3e-3f, 5e-5f, 1e-2f };
    GcResult res;
    int ok = gradcheck(k->label, build, &c, leaves, ps->n, tol, &res);
    CHECK(ok, "%s: %ld of %ld parameter gradients off (max abs err %.2e)", k->label, res.n_bad,
          res.n_checked, res.max_abs_err);
    CHECK(res.n_checked == ps->total, "%s: checked %ld of %ld parameters", k->label, res.n_checked, ps->total);
    /* The check must see a wrong backward deep inside the model, too. */
    CHECK(gradcheck_catches_fault(k->label, OP_ATTENTION, build, &c, leaves, ps->n, tol),
          "%s: a 5%% error in the attention backward went unnoticed", k->label);
    CHECK(gradcheck_catches_fault(k->label, OP_LAYERNORM, build, &c, leaves, ps->n, tol),
          "%s: a 5%% error in the layernorm backward went unnoticed", k->label);
    model_free(c.m);
}

int main(void) {
    static const Case cases[] = {
        { "dot, bidirectional, no pos",         SCORE_DOT,       0, 1, 1, POS_NONE,       ACT_GELU_TANH, 0 },
        { "dot, causal, learned, 2L 2H",        SCORE_DOT,       1, 2, 2, POS_LEARNED,    ACT_GELU_TANH, 0 },
        { "unit_norm, bidirectional, no pos",   SCORE_UNIT_NORM, 0, 1, 1, POS_NONE,       ACT_GELU_TANH, 0 },
        { "unit_norm, causal, sinusoidal 2L 2H", SCORE_UNIT_NORM, 1, 2, 2, POS_SINUSOIDAL, ACT_GELU_ERF,  1 },
        { "unit_norm, bidirectional, learned",  SCORE_UNIT_NORM, 0, 2, 4, POS_LEARNED,    ACT_GELU_ERF,  1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
    return check_exit("test_model");
}
