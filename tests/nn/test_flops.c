/* test_flops.c — model_flops_per_seq (the formula the sweep's grids report)
 * against an independent count: one forward pass of a real model, batch 1, and
 * the FLOPs of every product it recorded on the tape, read off the tensors'
 * shapes.  Sparse attention's visible pairs are counted by brute force from the
 * definition in ops.h (j <= i and (i - j < k·B or j mod B >= B - c)), not by the
 * op's own list builder.  Every attention kind, causal and not, the LSTM, DSS, RetNet and Mamba. */
#include "check.h"
#include "attnlab/config/config.h"
#include "attnlab/nn/model.h"

#include <string.h>

static double sparse_pairs_brute(int T, int B, int k, int c) {
    double n = 0;
    for (int i = 0; i < T; i++)
        for (int j = 0; j <= i; j++) n += (i - j < k * B) || (j % B >= B - c);
    return n;
}

/* FLOPs of one tape entry (2 per multiply-add); 0 for non-products. */
static double entry_flops(const TapeEntry *e, const Model *m) {
    const Tensor *a = e->in[0], *b = e->in[1], *v = e->in[2];
    switch (e->op) {
    case OP_LINEAR:   /* x (…, in) · Wᵀ, W (out, in) */
        return 2.0 * (double)a->n * b->shape[0];
    case OP_MATMUL:
        return 2.0 * (double)e->out->n * a->shape[a->ndim - 1];
    case OP_MLP:      /* x (…, in) · W1ᵀ, W1 (hidden, in), then · W2ᵀ, W2 (out, hidden) */
        return 2.0 * (double)a->n * b->shape[0] + 2.0 * (double)e->out->n * e->in[3]->shape[1];
    case OP_ATTENTION: {   /* q (B,H,Tq,D), k (B,H,Tk,D), v (B,H,Tk,Dv) */
        double bh = (double)a->shape[0] * a->shape[1], tq = a->shape[2], tk = b->shape[2];
        return bh * tq * tk * (2.0 * a->shape[3] + 2.0 * v->shape[3]);
    }
    case OP_ATTENTION_HEADS: {   /* q (B,Tq,H·D), k (B,Tk,H·D), v (B,Tk,H·Dv): the full Tq×Tk */
        double tq = a->shape[1], tk = b->shape[1];
        return a->shape[0] * tq * tk * (2.0 * a->shape[2] + 2.0 * v->shape[2]);
    }
    case OP_LINEAR_ATTENTION: {
        double bh = (double)a->shape[0] * a->shape[1], T = a->shape[2], D = a->shape[3], Dv = v->shape[3];
        return bh * (4.0 * T * D * Dv + 2.0 * T * D);
    }
    case OP_SPARSE_ATTENTION: {
        const CfgAttention *at = &m->cfg.attention;
        double bh = (double)a->shape[0] * a->shape[1];
        return bh * sparse_pairs_brute(a->shape[2], m->sparse_block, at->local_blocks, at->summary) *
               (2.0 * a->shape[3] + 2.0 * v->shape[3]);
    }
    case OP_RETENTION: {   /* q (B,T,H·Dk), v (B,T,H·Dv): Q̃K̃ᵀ and P·V per head, the full T×T */
        double T = a->shape[1];
        return a->shape[0] * T * T * (2.0 * a->shape[2] + 2.0 * v->shape[2]);
    }
    case OP_LSTM: {   /* x (B,T,In), w_ih (4H, In), w_hh (4H, H) */
        double T = a->shape[1];
        return 2.0 * T * b->shape[0] * b->shape[1] + 2.0 * T * v->shape[0] * v->shape[1];
    }
    case OP_CAUSAL_CONV:   /* u (B,T,d), y (B,T,C·d): T(T+1)/2 taps per output column and row */
        return (double)a->shape[0] * a->shape[1] * (a->shape[1] + 1.0) * e->out->shape[2];
    case OP_CAUSAL_CONV1D:   /* x (B,T,E), w (E,1,K): one multiply-add per tap */
        return 2.0 * (double)a->n * b->shape[2];
    case OP_SELECTIVE_SCAN:  /* u (B,T,E), A_log (E,N): state update (2) and C·h (1) per state */
        return 6.0 * (double)a->n * v->shape[1];
    default:
        return 0;
    }
}

static void check_model(const char *what, const CfgModel *cfg, int T) {
    Model *m = model_create(cfg, 7, 5, T, 1);
    Arena arena;
    arena_init(&arena, 4u << 20);
    Tape tape;
    tape_init(&tape, &arena);
    int tokens[64];
    for (int i = 0; i < T; i++) tokens[i] = i % 7;
    model_forward(m, &tape, tokens, 1, T);
    double counted = 0;
    int products = 0;
    for (int i = 0; i < tape.n; i++) {
        double f = entry_flops(&tape.entries[i], m);
        counted += f;
        products += f > 0;
    }
    CHECK(products >= 2, "%s: the tape recorded only %d products", what, products);
    double formula = model_flops_per_seq(m, T);
    CHECK(formula == counted, "%s: model_flops_per_seq %.0f, counted on the tape %.0f", what, formula, counted);
    tape_free(&tape);
    arena_free(&arena);
    model_free(m);
}

static CfgModel base_model(void) {
    Config c;
    cfg_defaults(&c);
    c.model.d_model = 12;
    c.model.n_heads = 3;
    c.model.n_layers = 2;
    c.model.mlp_ratio = 2;
    return c.model;
}

int main(void) {
    CfgModel m = base_model();
    check_model("softmax, bidirectional", &m, 9);
    m.attention.causal = 1;
    check_model("softmax, causal (full T x T)", &m, 9);
    m.attention.type = ATTN_LINEAR;
    check_model("linear, causal", &m, 9);
    m.attention.causal = 0;
    check_model("linear, bidirectional", &m, 9);
    m.attention.type = ATTN_SPARSE;
    m.attention.causal = 1;
    m.attention.block = 3, m.attention.local_blocks = 1, m.attention.summary = 1;
    check_model("sparse, B 3, k 1, c 1", &m, 11);
    m.attention.block = 0, m.attention.local_blocks = 2, m.attention.summary = 1;   /* B from the length */
    check_model("sparse, automatic block, k 2", &m, 17);
    CfgModel lstm = base_model();
    lstm.type = MODEL_LSTM;
    check_model("lstm", &lstm, 9);
    CfgModel dss = base_model();
    dss.type = MODEL_DSS;
    dss.dss.d_state = 4;
    check_model("dss", &dss, 9);
    dss.dss.ff = 2;
    check_model("dss, feed-forward blocks", &dss, 9);
    dss.dss.postact = DSS_POSTACT_GLU;
    check_model("dss, GLU, feed-forward blocks", &dss, 9);
    dss.dss.channels = 3;
    check_model("dss, 3 kernels per channel, GLU, feed-forward blocks", &dss, 9);
    CfgModel retnet = base_model();
    retnet.type = MODEL_RETNET;
    retnet.n_heads = 2;   /* even head width 6 */
    check_model("retnet", &retnet, 9);
    retnet.retnet.value_factor = 2;
    check_model("retnet, value_factor 2", &retnet, 9);
    CfgModel mamba = base_model();
    mamba.type = MODEL_MAMBA;
    mamba.mamba.d_state = 5;
    check_model("mamba", &mamba, 9);
    mamba.mamba.dt_rank = 3, mamba.mamba.expand = 3, mamba.mamba.d_conv = 2;
    check_model("mamba, dt_rank 3, expand 3, d_conv 2", &mamba, 9);

    /* The closed forms themselves, for one small model by hand: d 12, h 24, T 9, C 5,
     * 2 layers: per layer 8·9·144 + 4·9·12·24 + 4·81·12 = 10368 + 10368 + 3888. */
    CfgModel s = base_model();
    Model *x = model_create(&s, 7, 5, 9, 1);
    CHECK(model_flops_per_seq(x, 9) == 2 * (10368 + 10368 + 3888) + 2 * 9 * 12 * 5,
          "hand count: got %.0f", model_flops_per_seq(x, 9));
    model_free(x);
    return check_exit("test_flops");
}
