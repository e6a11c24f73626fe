/* test_decode.c — incremental decoding equals the full forward pass.
 *
 * For each causal architecture (softmax dot / unit_norm, sparse, linear attention,
 * LSTM, DSS, Mamba, RetNet: parallel retention in training, recurrent in decoding): the decoder's logits at every position equal model_forward's at that
 * position, and greedy generation with the decoder gives the same tokens as naive
 * greedy generation that re-runs model_forward on the whole prefix each step.
 * Softmax attention also at 40 positions: training's fused kernel works in blocks
 * of 32 query rows, so that length spans a full and a partial block. */
#include "check.h"
#include "attnlab/config/config.h"
#include "attnlab/nn/decode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { B = 3, T_MAX = 40, V = 9 };

typedef struct Case {
    const char *label;
    CfgModelType type;
    CfgAttentionType attn;
    CfgScore score;
    CfgPositional pos;
    int T;   /* sequence length (the model's max_len) */
    int dss_ff;   /* model.dss.ff */
    int dss_glu;  /* model.dss.postact glu */
    int dss_channels;   /* model.dss.channels */
} Case;

static Model *make(const Case *k) {
    Config c;
    cfg_defaults(&c);
    CfgModel m = c.model;
    m.type = k->type;
    m.d_model = 16;
    m.n_layers = 2;
    m.n_heads = k->type != MODEL_TRANSFORMER ? 1 : 2;
    m.positional = k->pos;
    m.attention.type = k->attn;
    m.attention.score = k->score;
    m.attention.beta = 3.0f;
    m.attention.causal = 1;
    m.attention.block = 4;     /* sparse: T = 14 spans several blocks */
    m.dss.ff = k->dss_ff;
    m.dss.postact = k->dss_glu ? DSS_POSTACT_GLU : DSS_POSTACT_NONE;
    m.dss.channels = k->dss_channels;
    return model_create(&m, V, V, k->T, 11);
}

static void check_logits(const Case *k, Model *m, const int *tokens) {
    const int T = m->max_len;
    Arena a;
    arena_init(&a, 1 << 20);
    Tape t;
    tape_init(&t, &a);
    t.grad_enabled = 0;
    Tensor *full = model_forward(m, &t, tokens, B, T);
    Decoder *d = decoder_create(m, B);
    decoder_reset(d, B);
    double worst = 0;
    for (int s = 0; s < T; s++) {
        int feed[B];
        for (int b = 0; b < B; b++) feed[b] = tokens[b * T + s];
        const float *step = decoder_step(d, feed);
        for (int b = 0; b < B; b++)
            for (int c = 0; c < V; c++) {
                double want = full->data[((size_t)b * T + s) * V + c], got = step[b * V + c];
                double err = fabs(want - got) / (1.0 + fabs(want));
                if (err > worst) worst = err;
            }
    }
    printf("  %-32s max rel logit diff %.2e\n", k->label, worst);
    CHECK(worst < 1e-5, "%s: incremental logits differ from the full forward by %.2e", k->label, worst);
    decoder_free(d);
    tape_free(&t);
    arena_free(&a);
}

/* Greedy by re-running the whole prefix each step (the definition). */
static void naive_greedy(Model *m, int *row, int prompt, int eos, int *len) {
    const int T = m->max_len;
    Arena a;
    arena_init(&a, 1 << 20);
    Tape t;
    tape_init(&t, &a);
    t.grad_enabled = 0;
    *len = prompt;
    while (*len < T && (*len == prompt || row[*len - 1] != eos)) {
        tape_reset(&t);
        Tensor *lg = model_forward(m, &t, row, 1, *len);
        const float *last = lg->data + (size_t)(*len - 1) * V;
        int best = 0;
        for (int c = 1; c < V; c++)
            if (last[c] > last[best]) best = c;
        row[(*len)++] = best;
    }
    tape_free(&t);
    arena_free(&a);
}

static void check_greedy(const Case *k, Model *m, const int *tokens) {
    const int prompt[B] = {3, 5, 1}, eos = 2, T = m->max_len;
    int rows[B * T_MAX], len[B];
    memcpy(rows, tokens, (size_t)B * T * sizeof(int));
    Decoder *d = decoder_create(m, B);
    decoder_greedy(d, B, rows, prompt, eos, len);
    for (int b = 0; b < B; b++) {
        int want[T_MAX], wlen;
        memcpy(want, tokens + b * T, (size_t)T * sizeof(int));
        naive_greedy(m, want, prompt[b], eos, &wlen);
        CHECK(len[b] == wlen && !memcmp(want, rows + b * T, (size_t)wlen * sizeof(int)),
              "%s: row %d: greedy decoding differs from re-running the prefix (len %d vs %d)", k->label, b, len[b], wlen);
    }
    decoder_free(d);
}

int main(int argc, char **argv) {
    static const Case cases[] = {
        { "softmax dot, learned positions", MODEL_TRANSFORMER, ATTN_SOFTMAX, SCORE_DOT, POS_LEARNED, 14, 0, 0, 1 },
        { "softmax unit_norm, sinusoidal", MODEL_TRANSFORMER, ATTN_SOFTMAX, SCORE_UNIT_NORM, POS_SINUSOIDAL, 14, 0, 0, 1 },
        { "sparse dot, learned positions", MODEL_TRANSFORMER, ATTN_SPARSE, SCORE_DOT, POS_LEARNED, 14, 0, 0, 1 },
        { "linear elu+1, learned positions", MODEL_TRANSFORMER, ATTN_LINEAR, SCORE_DOT, POS_LEARNED, 14, 0, 0, 1 },
        { "lstm", MODEL_LSTM, ATTN_SOFTMAX, SCORE_DOT, POS_NONE, 14, 0, 0, 1 },
        { "dss", MODEL_DSS, ATTN_SOFTMAX, SCORE_DOT, POS_NONE, 14, 0, 0, 1 },
        { "dss, feed-forward blocks", MODEL_DSS, ATTN_SOFTMAX, SCORE_DOT, POS_NONE, 14, 2, 0, 1 },
        { "dss, GLU, feed-forward blocks", MODEL_DSS, ATTN_SOFTMAX, SCORE_DOT, POS_NONE, 14, 2, 1, 1 },
        { "dss, 3 kernels per channel, GLU", MODEL_DSS, ATTN_SOFTMAX, SCORE_DOT, POS_NONE, 14, 0, 1, 3 },
        { "mamba", MODEL_MAMBA, ATTN_SOFTMAX, SCORE_DOT, POS_NONE, 14, 0, 0, 1 },
        { "softmax dot, 40 positions", MODEL_TRANSFORMER, ATTN_SOFTMAX, SCORE_DOT, POS_LEARNED, T_MAX, 0, 0, 1 },
        { "softmax unit_norm, 40 positions", MODEL_TRANSFORMER, ATTN_SOFTMAX, SCORE_UNIT_NORM, POS_SINUSOIDAL, T_MAX, 0, 0, 1 },
        { "retnet", MODEL_RETNET, ATTN_SOFTMAX, SCORE_DOT, POS_NONE, 14, 0, 0, 1 },
        { "retnet, 40 positions", MODEL_RETNET, ATTN_SOFTMAX, SCORE_DOT, POS_NONE, T_MAX, 0, 0, 1 },
    };
    int only = argc > 1 ? atoi(argv[1]) : -1;   /* run one case (debugging) */
    int tokens[B * T_MAX];
    Rng r = rng_stream(3, 3);
    for (int i = 0; i < B * T_MAX; i++) tokens[i] = (int)rng_below(&r, V);
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        if (only >= 0 && i != only) continue;
        Model *m = make(&cases[i]);
        check_logits(&cases[i], m, tokens);
        check_greedy(&cases[i], m, tokens);
        model_free(m);
    }
    return check_exit("test_decode");
}
