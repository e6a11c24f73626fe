/* test_torch_parity.c — the C model against PyTorch (bench/torch_reference.py).
 *
 * For each model config below (softmax, linear and sparse attention, DSS, RetNet and
 * Mamba, as python/attnlab_torch.py models them): build the model (seeded "torch" init, LayerNorm
 * gains and biases jittered so they matter), save it through checkpoint_save()
 * — the real model.safetensors path — run forward, cross-entropy (some targets −1)
 * and backward on one random batch, and write the batch and the C results (logits,
 * loss, every parameter gradient) to a data file.  torch_reference.py parity
 * rebuilds the model from the checkpoint, runs the batch in float64 and must agree
 * to 1e-4 relative on every tensor.  Then one gradient is perturbed by 1% and the
 * comparison must fail, naming that gradient — proof the check can fail.
 *
 * Needs /usr/bin/python3 with torch (Debian python3-torch); without it the test
 * is skipped (exit 77).  Runs from the repo root (ctest's working directory) or
 * any folder below it. */
#include "check.h"

#include "attnlab/config/config.h"
#include "attnlab/io/safetensors.h"
#include "attnlab/train/checkpoint.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PYTHON "/usr/bin/python3"
#define SCRIPT "bench/torch_reference.py"
#define BATCH 3
#define SEQ 12
#define VOCAB 11
#define CLASSES 5
#define PERTURBED "blocks.0.attn.q.weight"
#define PERTURBED_MAMBA "layers.0.mixer.x_proj.weight"

typedef struct Case {
    const char *name;
    int layers, heads;
    CfgScore score;
    float beta;
    int causal;
    CfgPositional positional;
    CfgActivation activation;
    int embed_layernorm;
    CfgAttentionType type;   /* softmax when left out */
    int dss_ff;              /* model.dss.ff (DSS cases) */
    int dss_glu;             /* model.dss.postact glu (DSS cases) */
    int dss_channels;        /* model.dss.channels (0: 1, the default) */
} Case;

static const Case CASES[] = {
    { "match2-like: unit_norm beta 0.1, bidirectional, no positions, 1 head",
      1, 1, SCORE_UNIT_NORM, 0.1f, 0, POS_NONE, ACT_GELU_TANH, 0, ATTN_SOFTMAX, 0, 0, 0 },
    { "causal, dot, learned positions, 2 layers, 4 heads, gelu_tanh",
      2, 4, SCORE_DOT, 1.0f, 1, POS_LEARNED, ACT_GELU_TANH, 0, ATTN_SOFTMAX, 0, 0, 0 },
    { "sinusoidal, gelu_erf, embed_layernorm, 2 heads, bidirectional, unit_norm beta 5",
      2, 2, SCORE_UNIT_NORM, 5.0f, 0, POS_SINUSOIDAL, ACT_GELU_ERF, 1, ATTN_SOFTMAX, 0, 0, 0 },
    { "linear attention (elu+1), causal, learned positions, 2 heads",
      2, 2, SCORE_DOT, 1.0f, 1, POS_LEARNED, ACT_GELU_TANH, 0, ATTN_LINEAR, 0, 0, 0 },
    { "sparse attention (block 2), unit_norm beta 2, sinusoidal, 2 heads",
      2, 2, SCORE_UNIT_NORM, 2.0f, 1, POS_SINUSOIDAL, ACT_GELU_TANH, 0, ATTN_SPARSE, 0, 0, 0 },
};

/* The other model types: a Case (its attention fields unused), the type, and the
 * gradient the failure check perturbs. */
typedef struct ModelCase {
    Case c;
    CfgModelType type;
    const char *perturbed;
} ModelCase;

static const ModelCase MODEL_CASES[] = {
    { { "dss: 2 blocks, 8 modes, dt in [0.01, 0.5]", 2, 1, SCORE_DOT, 1.0f, 1, POS_NONE, ACT_GELU_TANH, 0, ATTN_SOFTMAX, 0, 0, 0 },
      MODEL_DSS, "layers.0.layer.kernel.Lambda" },
    { { .name = "dss: 2 blocks, 8 modes, feed-forward blocks (model.dss.ff 2)", .layers = 2, .heads = 1,
        .score = SCORE_DOT, .beta = 1.0f, .causal = 1, .positional = POS_NONE, .activation = ACT_GELU_TANH,
        .dss_ff = 2 }, MODEL_DSS, "layers.0.ff.fc1.weight" },
    { { .name = "dss: 2 blocks, 8 modes, GLU after output_linear (model.dss.postact glu), feed-forward 2",
        .layers = 2, .heads = 1, .score = SCORE_DOT, .beta = 1.0f, .causal = 1, .positional = POS_NONE,
        .activation = ACT_GELU_TANH, .dss_ff = 2, .dss_glu = 1 }, MODEL_DSS, "layers.1.layer.output_linear.weight" },
    { { .name = "dss: 2 blocks, 8 modes, 3 kernels per channel (model.dss.channels 3), GLU", .layers = 2, .heads = 1,
        .score = SCORE_DOT, .beta = 1.0f, .causal = 1, .positional = POS_NONE, .activation = ACT_GELU_TANH,
        .dss_glu = 1, .dss_channels = 3 }, MODEL_DSS, "layers.0.layer.kernel.W" },
    { { .name = "retnet, 2 layers, 4 heads (Dk 8), gelu_erf", .layers = 2, .heads = 4, .activation = ACT_GELU_ERF },
      MODEL_RETNET, "retnet.0.retention.q_proj.weight" },
    { { .name = "retnet, 1 layer, 2 heads, value_factor 2", .layers = 1, .heads = 2, .activation = ACT_GELU_TANH },
      MODEL_RETNET, "retnet.0.retention.k_proj.weight" },
    /* against the torch module's naive per-step scan */
    { { "mamba, 2 layers, d_state 4, dt_rank 3, expand 2, d_conv 4 (naive torch scan)", 2, 1, SCORE_DOT, 1.0f, 1,
        POS_NONE, ACT_GELU_TANH, 0, ATTN_SOFTMAX, 0, 0, 0 }, MODEL_MAMBA, PERTURBED_MAMBA },
};

static void make_config(Config *cfg, const Case *c, CfgModelType type) {
    cfg_defaults(cfg);
    cfg->task.seq_len = SEQ;
    CfgModel *m = &cfg->model;
    m->d_model = 32;
    m->n_layers = c->layers;
    m->n_heads = c->heads;
    m->mlp_ratio = 4;
    m->activation = c->activation;
    m->positional = c->positional;
    m->embed_layernorm = c->embed_layernorm;
    m->dropout = 0.0f;
    m->init = INIT_TORCH;
    m->attention.score = c->score;
    m->attention.beta = c->beta;
    m->attention.causal = c->causal;
    m->attention.type = c->type;
    if (c->type == ATTN_SPARSE) m->attention.block = 2;   /* SEQ 12: local window and block summaries */
    m->type = type;
    m->dss.d_state = 8, m->dss.dt_min = 0.01f, m->dss.dt_max = 0.5f;   /* phases Δ·Im Λ·t up to ~300 rad */
    m->dss.ff = c->dss_ff;
    m->dss.postact = c->dss_glu ? DSS_POSTACT_GLU : DSS_POSTACT_NONE;
    m->dss.channels = c->dss_channels ? c->dss_channels : 1;
    if (type == MODEL_RETNET && c->layers == 1) m->retnet.value_factor = 2;
    if (type == MODEL_MAMBA) {
        m->n_heads = 1;
        m->mamba.d_state = 4;
        m->mamba.dt_rank = 3;
    }
}

/* Mamba: norm gains off 1, and the Δ bias from U(−1, 1) (Δ ≈ 0.3..1.3 instead of the
 * init's 0.001..0.1) so states carry over several steps and every path matters; A_log
 * and D jittered off their structured init. */
static void jitter_mamba(Model *m, Rng *r) {
    if (!m->mamba) return;
    for (int l = 0; l <= m->cfg.n_layers; l++) {
        MambaLayer *b = &m->mamba[l];
        for (long i = 0; i < b->norm->n; i++) b->norm->data[i] = (float)(1.0 + 0.2 * rng_normal(r));
        if (l == m->cfg.n_layers) break;
        for (long i = 0; i < b->dt_b->n; i++) b->dt_b->data[i] = (float)(2.0 * rng_uniform(r) - 1.0);
        for (long i = 0; i < b->A_log->n; i++) b->A_log->data[i] += (float)(0.2 * rng_normal(r));
        for (long i = 0; i < b->D->n; i++) b->D->data[i] += (float)(0.2 * rng_normal(r));
    }
}

/* LayerNorm starts at gain 1, bias 0; move them off that so parity covers both. */
static void jitter_norm(Norm *n, Rng *r) {
    if (!n->g) return;
    for (long i = 0; i < n->g->n; i++) {
        n->g->data[i] = (float)(1.0 + 0.2 * rng_normal(r));
        n->b->data[i] = (float)(0.2 * rng_normal(r));
    }
}

static void jitter_norms(Model *m, Rng *r) {
    jitter_norm(&m->ln_emb, r);
    jitter_mamba(m, r);
    for (int l = 0; m->blocks && l < m->cfg.n_layers; l++) {
        jitter_norm(&m->blocks[l].ln1, r);
        jitter_norm(&m->blocks[l].ln2, r);
    }
    for (int l = 0; m->dss && l < m->cfg.n_layers; l++) {
        jitter_norm(&m->dss[l].norm, r);
        jitter_norm(&m->dss[l].ff_norm, r);   /* no-op without model.dss.ff */
        /* DSS starts every Re Λ at −1/2: make every other mode grow (Re Λ > 0, the
         * kernel's flipped softmax) so parity covers both branches. */
        for (int n = 1; n < m->cfg.dss.d_state; n += 2) m->dss[l].lambda->data[2 * n] = (float)(0.1 + 0.5 * rng_uniform(r));
    }
    for (int l = 0; m->retnet && l < m->cfg.n_layers; l++) {
        jitter_norm(&m->retnet[l].ln1, r);
        jitter_norm(&m->retnet[l].ln2, r);
    }
    jitter_norm(&m->ln_f, r);
}

/* Random tokens; random targets with about one in four ignored (−1). */
static void make_batch(int *tokens, int *targets, Rng *r) {
    for (int i = 0; i < BATCH * SEQ; i++) {
        tokens[i] = (int)rng_below(r, VOCAB);
        targets[i] = rng_below(r, 4) == 0 ? -1 : (int)rng_below(r, CLASSES);
    }
}

/* tokens, targets, logits, loss and "grad.<name>" of every parameter. */
static int write_data(const char *path, const Model *m, const int *tokens, const int *targets,
                      const Tensor *logits, const Tensor *loss) {
    const ParamStore *ps = &m->params;
    int n = 4 + ps->n;
    StTensor *t = calloc((size_t)n, sizeof *t);
    char (*names)[PARAM_NAME_MAX + 8] = calloc((size_t)ps->n, sizeof *names);
    t[0] = (StTensor){ "tokens", 2, { BATCH, SEQ }, tokens, ST_I32 };
    t[1] = (StTensor){ "targets", 2, { BATCH, SEQ }, targets, ST_I32 };
    t[2] = (StTensor){ "logits", 3, { BATCH, SEQ, CLASSES }, logits->data, ST_F32 };
    t[3] = (StTensor){ "loss", 1, { 1 }, loss->data, ST_F32 };
    for (int i = 0; i < ps->n; i++) {
        const Tensor *p = &ps->p[i].t;
        snprintf(names[i], sizeof names[i], "grad.%s", ps->p[i].name);
        t[4 + i] = (StTensor){ names[i], p->ndim, { 0 }, p->grad, ST_F32 };
        for (int d = 0; d < p->ndim; d++) t[4 + i].shape[d] = p->shape[d];
    }
    AlError err = { 0 };
    int rc = st_write(path, t, n, NULL, 0, &err);
    CHECK(rc == 0, "writing %s: %s", path, err.msg);
    free(names);
    free(t);
    return rc;
}

/* Runs the parity check; returns its exit status (−1 if it did not exit) and the
 * start of its output (echoed) in out. */
static int run_parity(const char *root, const char *dir, char *out, size_t n) {
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, PYTHON " '%s/" SCRIPT "' parity --model '%s/model.safetensors' "
             "--data '%s/data.safetensors' 2>&1", root, dir, dir);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t len = 0, got;
    char chunk[4096];
    while ((got = fread(chunk, 1, sizeof chunk, p)) > 0) {   /* drain all, keep what fits */
        fwrite(chunk, 1, got, stdout);
        size_t keep = got < n - 1 - len ? got : n - 1 - len;
        memcpy(out + len, chunk, keep);
        len += keep;
    }
    out[len] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Scales the largest-magnitude gradient entry of parameter `name` by 1.01. */
static void perturb_grad(Model *m, const char *name) {
    const Param *p = params_find(&m->params, name);
    long at = 0;
    for (long i = 1; i < p->t.n; i++)
        if (fabsf(p->t.grad[i]) > fabsf(p->t.grad[at])) at = i;
    p->t.grad[at] *= 1.01f;
}

static void remove_run_dir(const char *dir) {
    const char *files[] = { "model.safetensors", "train_state.safetensors", "data.safetensors" };
    char path[PATH_MAX + 32];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

static void check_case(const char *root, const Case *c, uint64_t seed, CfgModelType type, const char *perturbed) {
    printf("--- %s\n", c->name);
    Config cfg;
    make_config(&cfg, c, type);
    Model *m = model_create(&cfg.model, VOCAB, CLASSES, SEQ, seed);
    Rng r = rng_stream(seed, 0x706172 /* "par" */);
    jitter_norms(m, &r);
    int tokens[BATCH * SEQ], targets[BATCH * SEQ];
    make_batch(tokens, targets, &r);

    char dir[] = "/tmp/attnlab_parity_XXXXXX", data[sizeof dir + 32], out[16384];
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp: cannot create a temporary folder");
        model_free(m);
        return;
    }
    snprintf(data, sizeof data, "%s/data.safetensors", dir);
    char *json = cfg_to_json(&cfg);
    TrainState st = { 0 };
    AlError err = { 0 };
    CHECK(checkpoint_save(dir, m, &st, json, &err) == 0, "checkpoint_save: %s", err.msg);

    Arena arena;
    arena_init(&arena, 1u << 20);
    Tape tape;
    tape_init(&tape, &arena);
    params_zero_grad(&m->params);
    Tensor *logits = model_forward(m, &tape, tokens, BATCH, SEQ);
    Tensor *loss = ad_cross_entropy(&tape, logits, targets);
    tape_backward(&tape, loss);

    if (write_data(data, m, tokens, targets, logits, loss) == 0) {
        int rc = run_parity(root, dir, out, sizeof out);
        CHECK(rc == 0 && strstr(out, "parity ok"), "%s: torch parity failed (exit %d)", c->name, rc);

        char worst[PARAM_NAME_MAX + 32];
        snprintf(worst, sizeof worst, "worst tensor grad.%s:", perturbed);
        perturb_grad(m, perturbed);
        write_data(data, m, tokens, targets, logits, loss);
        rc = run_parity(root, dir, out, sizeof out);
        CHECK(rc == 1 && strstr(out, worst), "%s: a 1%% error in grad.%s went unnoticed (exit %d)", c->name,
              perturbed, rc);
    }
    tape_free(&tape);
    arena_free(&arena);
    free(json);
    model_free(m);
    remove_run_dir(dir);
}

/* The folder at or above the working directory that holds SCRIPT, into root. */
static int find_root(char *root, size_t n) {
    if (!getcwd(root, n)) return -1;
    for (;;) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/" SCRIPT, root);
        if (access(path, R_OK) == 0) return 0;
        char *slash = strrchr(root, '/');
        if (!slash || slash == root) return -1;
        *slash = '\0';
    }
}

int main(void) {
    if (system(PYTHON " -c 'import torch' >/dev/null 2>&1") != 0) {
        printf("SKIP: python3-torch not installed (apt-get install python3-torch)\n");
        return 77;
    }
    char root[PATH_MAX];
    int found = find_root(root, sizeof root) == 0;
    CHECK(found, "cannot find " SCRIPT " at or above the working directory");
    for (size_t i = 0; found && i < sizeof CASES / sizeof CASES[0]; i++)
        check_case(root, &CASES[i], 100 + i, MODEL_TRANSFORMER, PERTURBED);
    for (size_t i = 0; found && i < sizeof MODEL_CASES / sizeof *MODEL_CASES; i++)
        check_case(root, &MODEL_CASES[i].c, 200 + i, MODEL_CASES[i].type, MODEL_CASES[i].perturbed);
    return check_exit("test_torch_parity");
}
