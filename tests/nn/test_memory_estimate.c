/* test_memory_estimate.c — model_memory_estimate against what a training step
 * really takes, and model_param_count against model_create.
 *
 * For models of every kind (softmax causal and bidirectional, several heads, unit-norm
 * scores, dropout, learned and sinusoidal positions, linear and sparse attention, the
 * LSTM, DSS, RetNet, Mamba) one training step runs on a fresh tape arena; the estimate's per-step terms
 * (activations, attention, logits) must cover the arena's high water and stay within
 * a small factor of it, so the memory check refuses what would not fit and no more.
 * And a request the arena cannot serve ends the process naming its real size. */
#include "check.h"
#include "testutil.h"
#include "attnlab/nn/model.h"
#include "attnlab/train/step.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Case {
    const char *label;
    CfgModelType type;
    CfgAttentionType attn;
    int causal, layers, heads, d, B, T;
    CfgPositional pos;
    float dropout;
    CfgScore score;
    int dss_ff;   /* model.dss.ff */
    int dss_glu;  /* model.dss.postact glu */
    int dss_channels;   /* model.dss.channels */
} Case;

static void run_case(const Case *k) {
    Config full;
    cfg_defaults(&full);
    CfgModel cfg = full.model;
    cfg.type = k->type;
    cfg.attention.type = k->attn;
    cfg.attention.causal = k->causal;
    cfg.attention.score = k->score;
    cfg.n_layers = k->layers;
    cfg.n_heads = k->heads;
    cfg.d_model = k->d;
    cfg.positional = k->pos;
    cfg.dropout = k->dropout;
    cfg.dss.ff = k->dss_ff;
    cfg.dss.postact = k->dss_glu ? DSS_POSTACT_GLU : DSS_POSTACT_NONE;
    cfg.dss.channels = k->dss_channels;
    const int V = 11, C = 7;
    Model *m = model_create(&cfg, V, C, k->T, 1);
    CHECK(model_param_count(&cfg, V, C, k->T) == (double)m->params.total, "%s: param count %.0f, model has %ld",
          k->label, model_param_count(&cfg, V, C, k->T), m->params.total);
    Arena arena;
    arena_init(&arena, 4096);
    Tape tape;
    tape_init(&tape, &arena);
    Batch b;
    batch_alloc(&b, k->B, k->T);
    for (int i = 0; i < k->B * k->T; i++) {
        b.tokens[i] = i % V;
        b.targets[i] = (i * 3) % C;
    }
    double norm;
    step_gradients(m, &tape, &b, NULL, &norm);
    ModelMemory est;
    model_memory_estimate(&cfg, V, C, k->T, k->B, 0, &est);
    double step = est.activations + est.attention + est.logits, used = (double)arena.high_water;
    printf("%-28s arena high water %10.0f bytes, estimate %10.0f (x%.2f)\n", k->label, used, step, step / used);
    CHECK(step >= used, "%s: the estimate %.0f is below the arena's high water %.0f", k->label, step, used);
    CHECK(step <= 3 * used, "%s: the estimate %.0f is more than 3x the arena's high water %.0f", k->label, step, used);
    batch_free(&b);
    tape_free(&tape);
    arena_free(&arena);
    model_free(m);
}

/* An arena request no machine can serve exits 1, naming the size. */
static void huge_request(void *ctx) {
    (void)ctx;
    Arena a;
    arena_init(&a, 4096);
    arena_alloc(&a, SIZE_MAX / 3);
}

static void test_arena_out_of_memory(void) {
    char text[512], want[64];
    int status = tu_run_captured(huge_request, NULL, text, sizeof text);
    snprintf(want, sizeof want, "could not get %zu bytes", SIZE_MAX / 3);
    CHECK(status == 1, "arena out of memory: status %d", status);
    CHECK(strstr(text, want) != NULL, "arena out of memory message: %s", text);
}

int main(void) {
    static const Case cases[] = {
        { "softmax causal", MODEL_TRANSFORMER, ATTN_SOFTMAX, 1, 2, 1, 32, 8, 64, POS_LEARNED, 0, SCORE_DOT, 0, 0, 1 },
        { "softmax 4 heads", MODEL_TRANSFORMER, ATTN_SOFTMAX, 0, 2, 4, 32, 8, 64, POS_NONE, 0, SCORE_DOT, 0, 0, 1 },
        { "softmax long", MODEL_TRANSFORMER, ATTN_SOFTMAX, 1, 1, 2, 16, 2, 512, POS_SINUSOIDAL, 0, SCORE_DOT, 0, 0, 1 },
        { "softmax unit_norm dropout", MODEL_TRANSFORMER, ATTN_SOFTMAX, 1, 2, 2, 64, 4, 32, POS_LEARNED, 0.1f,
          SCORE_UNIT_NORM, 0, 0, 1 },
        { "softmax wide", MODEL_TRANSFORMER, ATTN_SOFTMAX, 1, 1, 1, 256, 4, 16, POS_NONE, 0, SCORE_DOT, 0, 0, 1 },
        { "linear causal", MODEL_TRANSFORMER, ATTN_LINEAR, 1, 2, 2, 32, 8, 64, POS_NONE, 0, SCORE_DOT, 0, 0, 1 },
        { "linear bidirectional", MODEL_TRANSFORMER, ATTN_LINEAR, 0, 2, 2, 32, 8, 64, POS_NONE, 0, SCORE_DOT, 0, 0, 1 },
        { "sparse", MODEL_TRANSFORMER, ATTN_SPARSE, 1, 2, 2, 32, 4, 256, POS_NONE, 0, SCORE_DOT, 0, 0, 1 },
        { "lstm", MODEL_LSTM, ATTN_SOFTMAX, 0, 2, 1, 32, 8, 64, POS_NONE, 0, SCORE_DOT, 0, 0, 1 },
        { "dss", MODEL_DSS, ATTN_SOFTMAX, 0, 2, 1, 32, 8, 64, POS_NONE, 0, SCORE_DOT, 0, 0, 1 },
        { "dss feed-forward dropout", MODEL_DSS, ATTN_SOFTMAX, 0, 2, 1, 32, 8, 64, POS_NONE, 0.1f, SCORE_DOT, 4, 0, 1 },
        { "dss GLU feed-forward", MODEL_DSS, ATTN_SOFTMAX, 0, 2, 1, 32, 8, 64, POS_NONE, 0.1f, SCORE_DOT, 4, 1, 1 },
        { "dss 4 kernels per channel, GLU", MODEL_DSS, ATTN_SOFTMAX, 0, 2, 1, 32, 8, 64, POS_NONE, 0.1f, SCORE_DOT, 4, 1, 4 },
        { "retnet", MODEL_RETNET, ATTN_SOFTMAX, 1, 2, 2, 32, 8, 64, POS_NONE, 0, SCORE_DOT, 0, 0, 1 },
        { "retnet 4 heads dropout", MODEL_RETNET, ATTN_SOFTMAX, 1, 2, 4, 32, 4, 32, POS_NONE, 0.1f, SCORE_DOT, 0, 0, 1 },
        { "mamba", MODEL_MAMBA, ATTN_SOFTMAX, 0, 2, 1, 32, 8, 64, POS_NONE, 0, SCORE_DOT, 0, 0, 1 },
        { "mamba dropout", MODEL_MAMBA, ATTN_SOFTMAX, 0, 2, 1, 64, 4, 32, POS_NONE, 0.1f, SCORE_DOT, 0, 0, 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
    test_arena_out_of_memory();
    return check_exit("test_memory_estimate");
}
