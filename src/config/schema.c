/* schema.c — the config schema: one row per key (schema.h says how the rows are
 * read), the enum names the rows use, lookups in the table, and cfg_defaults.
 * A key's type, range, default and doc are all here, so docs/errors.md and
 * `./train --help` follow this file. */
#include "schema.h"
#include "attnlab/util/strbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------
 * The schema
 * ---------------------------------------------------------------------------- */

/* Enums are stored through an int pointer; make sure that is their size. */
_Static_assert(sizeof(CfgTaskType) == sizeof(int), "enum size");
_Static_assert(sizeof(CfgPositional) == sizeof(int), "enum size");
_Static_assert(sizeof(CfgAttentionType) == sizeof(int), "enum size");
_Static_assert(sizeof(CfgScore) == sizeof(int), "enum size");
_Static_assert(sizeof(CfgActivation) == sizeof(int), "enum size");
_Static_assert(sizeof(CfgInit) == sizeof(int), "enum size");
_Static_assert(sizeof(CfgSchedule) == sizeof(int), "enum size");
_Static_assert(sizeof(CfgFinetuneParams) == sizeof(int), "enum size");
_Static_assert(sizeof(CfgFinetuneHashes) == sizeof(int), "enum size");
_Static_assert(sizeof(CfgNonfinite) == sizeof(int), "enum size");
_Static_assert(sizeof(CfgStopMetric) == sizeof(int), "enum size");

/* Names are indexed by the enum value (designated), so reordering an enum in
 * nn/model_config.h, data/task_config.h or config.h cannot silently remap names. */
const char *const cfg_task_names[] = {
    [TASK_MATCH2] = "match2", [TASK_KHOP] = "khop", [TASK_INDEX_LOOKUP] = "index_lookup",
    [TASK_ARITH] = "arith", [TASK_LIS] = "lis", [TASK_ED] = "ed", [TASK_DYCK] = "dyck",
    [TASK_ASSOC_RECALL] = "assoc_recall", [TASK_EQ_RANDOM] = "eq_random", [TASK_EQ_ONE] = "eq_one",
    [TASK_EQ_NCP] = "eq_ncp", [TASK_FILE] = "file", NULL };
static const char *const cfg_pos_names[] = {
    [POS_NONE] = "none", [POS_LEARNED] = "learned", [POS_SINUSOIDAL] = "sinusoidal", NULL };
const char *const cfg_attn_names[] = {
    [ATTN_SOFTMAX] = "softmax", [ATTN_LINEAR] = "linear", [ATTN_SPARSE] = "sparse", NULL };
const char *const cfg_score_names[] = {
    [SCORE_DOT] = "dot", [SCORE_UNIT_NORM] = "unit_norm", NULL };
static const char *const cfg_act_names[] = {
    [ACT_GELU_TANH] = "gelu_tanh", [ACT_GELU_ERF] = "gelu_erf", NULL };
const char *const cfg_model_names[] = {
    [MODEL_TRANSFORMER] = "transformer", [MODEL_LSTM] = "lstm", [MODEL_DSS] = "dss", [MODEL_RETNET] = "retnet",
    [MODEL_MAMBA] = "mamba",
    NULL };
static const char *const cfg_dss_postact_names[] = {
    [DSS_POSTACT_NONE] = "none", [DSS_POSTACT_GLU] = "glu", NULL };
static const char *const cfg_feature_names[] = {
    [FEATURE_ELU1] = "elu1", [FEATURE_IDENTITY] = "identity", [FEATURE_RELU] = "relu", NULL };
const char *const cfg_family_names[] = {
    [DISTILL_HYPERPLANE] = "hyperplane", [DISTILL_CROSSPOLYTOPE] = "crosspolytope", NULL };
static const char *const cfg_ft_params_names[] = {
    [FINETUNE_EXCEPT_QK] = "except_qk", [FINETUNE_EXCEPT_ATTENTION] = "except_attention", NULL };
static const char *const cfg_ft_hashes_names[] = { [FINETUNE_FIXED] = "fixed", [FINETUNE_REDRAW] = "redraw", NULL };
static const char *const cfg_init_names[] = { [INIT_TORCH] = "torch", [INIT_NORMAL] = "normal", NULL };
static const char *const cfg_sched_names[] = {
    [SCHED_CONSTANT] = "constant", [SCHED_WARMUP_LINEAR] = "warmup_linear",
    [SCHED_WARMUP_COSINE] = "warmup_cosine", NULL };
static const char *const cfg_optim_names[] = { "adam", "adamw", NULL };
static const char *const cfg_nonfinite_names[] = { [NONFINITE_STOP] = "stop", [NONFINITE_SKIP] = "skip", NULL };
static const char *const cfg_stop_metric_names[] = { [STOP_ON_TOKEN] = "token", [STOP_ON_SEQ] = "seq", NULL };

#define AT(f)        .off = offsetof(Config, f), .size = sizeof(((Config *)0)->f)
#define GE(a)        .min = (a), .max = INFINITY
#define GT(a)        .min = (a), .max = INFINITY, .lo_open = 1
#define LE(b)        .min = -INFINITY, .max = (b)
#define IN(a, b)     .min = (a), .max = (b)                /* [a, b] */
#define IN_HALF(a, b) .min = (a), .max = (b), .hi_open = 1 /* [a, b) */
#define ONLY_WHEN(key, mask) .when = (key), .when_mask = (mask)   /* key: an earlier ENUM row */
#define ONLY_FOR_TASKS(mask) ONLY_WHEN("task.type", mask)
#define MATCH2       (1u << TASK_MATCH2)
#define KHOP         (1u << TASK_KHOP)
#define IDXL         (1u << TASK_INDEX_LOOKUP)
#define ARITH        (1u << TASK_ARITH)
#define LIS          (1u << TASK_LIS)
#define ED           (1u << TASK_ED)
#define COT          (ARITH | LIS | ED)
#define DYCK         (1u << TASK_DYCK)
#define FILE_TASK    (1u << TASK_FILE)
#define AR           (1u << TASK_ASSOC_RECALL)
#define EQ_SIGMA     ((1u << TASK_EQ_ONE) | (1u << TASK_EQ_NCP))
#define EQ           ((1u << TASK_EQ_RANDOM) | EQ_SIGMA)
#define TRANSFORMER_ONLY ONLY_WHEN("model.type", 1u << MODEL_TRANSFORMER)
#define RETNET_ONLY      ONLY_WHEN("model.type", 1u << MODEL_RETNET)
#define BLOCKS_ONLY      ONLY_WHEN("model.type", (1u << MODEL_TRANSFORMER) | (1u << MODEL_RETNET))  /* heads, MLP */
#define ATTN_ONLY(mask)  ONLY_WHEN("model.attention.type", mask)
#define SOFTMAX_LIKE     ((1u << ATTN_SOFTMAX) | (1u << ATTN_SPARSE))
#define SEED_MAX     9007199254740992.0   /* 2^53: larger JSON numbers lose digits */

const CfgKey cfg_keys[] = {
    { "name", CFG_STRING, AT(name), .def_str = "run", .ident = 1,
      .doc = "run name (letters, digits and . _ - +), used in output file names and logs" },
    { "seed", CFG_U64, AT(seed), IN(0, SEED_MAX), .def = 1,
      .doc = "seed of every random stream (data, init, dropout)" },

    { "task", CFG_OBJECT, .doc = "the task to learn" },
    { "task.type", CFG_ENUM, AT(task.type), .names = cfg_task_names, .def = TASK_MATCH2,
      .doc = "which task; the other task keys depend on it" },
    { "task.seq_len", CFG_INT, AT(task.seq_len), IN(2, 65536), .def = 32,
      ONLY_FOR_TASKS(MATCH2 | KHOP | IDXL | DYCK | AR | EQ),
      .doc = "match2, dyck: N; khop: tokens including the leading hop-count token; index_lookup: most symbols N; "
             "assoc_recall: context (key, value) pairs before the query; eq_random, eq_one, eq_ncp: N, even, the "
             "symbols of both halves (without [sep]) of a test example; training lengths 2*ceil(N/20), +2, ..., N" },
    { "task.modulus", CFG_INT, AT(task.modulus), IN(2, 1000000), .def = 37,
      ONLY_FOR_TASKS(MATCH2 | ARITH), .doc = "match2: modulus M, tokens 1..M-1; arith: a prime p <= 97 (paper: 11)" },
    { "task.train_size", CFG_INT, AT(task.train_size), GE(0), .def = 10000,
      ONLY_FOR_TASKS(~FILE_TASK), .doc = "size of the fixed training set of distinct examples; 0 = fresh examples every step (not match2)" },
    { "task.alphabet", CFG_INT, AT(task.alphabet), IN(2, 1024), .def = 4,
      ONLY_FOR_TASKS(KHOP | IDXL), .doc = "number of symbols |Sigma| (paper 003's index lookup: 64)" },
    { "task.min_hops", CFG_INT, AT(task.min_hops), IN(0, 4096), .def = 0,
      ONLY_FOR_TASKS(KHOP), .doc = "fewest hops of a training example" },
    { "task.max_hops", CFG_INT, AT(task.max_hops), IN(0, 4096), .def = 1,
      ONLY_FOR_TASKS(KHOP), .doc = "most hops of a training example" },
    { "task.test_hops", CFG_INT, AT(task.test_hops), IN(-1, 4096), .def = -1,
      ONLY_FOR_TASKS(KHOP), .doc = "hop count of every test example; -1 = drawn like training" },
    { "task.score_first", CFG_BOOL, AT(task.score_first), .def = 0, ONLY_FOR_TASKS(KHOP),
      .doc = "position 0 (the hop-count token) has the null class as target, scored in training and tests, like "
             "the public generator's constant blank there; false: not scored" },
    { "task.n_ops", CFG_INT, AT(task.n_ops), IN(1, 100), .def = 3,
      ONLY_FOR_TASKS(ARITH), .doc = "operators per expression (paper 004's sizes 3..6 at CPU scale)" },
    { "task.under", CFG_BOOL, AT(task.under), .def = 0,
      ONLY_FOR_TASKS(ARITH), .doc = "training expressions get i = 1..n_ops operators with P(i) ~ i (public --under); "
                                    "tests keep n_ops" },
    { "task.direct", CFG_BOOL, AT(task.direct), .def = 0,
      ONLY_FOR_TASKS(COT), .doc = "answer only, without the chain of thought" },
    { "task.length", CFG_INT, AT(task.length), IN(1, 4096), .def = 10,
      ONLY_FOR_TASKS(LIS | ED), .doc = "lis: sequence length n; ed: string length (paper 004 scaled sizes)" },
    { "task.number_range", CFG_INT, AT(task.number_range), IN(0, 100000), .def = 0,
      ONLY_FOR_TASKS(LIS | ED), .doc = "lis: values below it; ed: integer tokens; 0 = the public generator's default" },
    { "task.letters", CFG_INT, AT(task.letters), IN(1, 24), .def = 8,
      ONLY_FOR_TASKS(ED), .doc = "letters the two strings draw from (public --using)" },
    { "task.uniform_costs", CFG_BOOL, AT(task.uniform_costs), .def = 0,
      ONLY_FOR_TASKS(ED), .doc = "Levenshtein costs instead of the public generator's (border 1, insert/delete 2, replace 3)" },
    { "task.local", CFG_BOOL, AT(task.local), .def = 0,
      ONLY_FOR_TASKS(ED), .doc = "ED_Local (paper 004 names it, the definition is ours: docs/design.md decision 14): each "
                                 "chain-of-thought cell is written as s[i] t[j] m[i][j], restating the two letters it "
                                 "compares, so every input of a dp value lies within the last 3(b+1) tokens; the "
                                 "letters are scored like every chain-of-thought token; examples of up to 3l^2+9l+7 "
                                 "tokens instead of l^2+5l+7" },
    { "task.depth", CFG_INT, AT(task.depth), IN(1, 32), .def = 2,
      ONLY_FOR_TASKS(DYCK), .doc = "most brackets open at once (paper 003: 2)" },
    { "task.types", CFG_INT, AT(task.types), IN(1, 16), .def = 2,
      ONLY_FOR_TASKS(DYCK), .doc = "bracket types (paper 003: 2)" },
    { "task.train_path", CFG_STRING, AT(task.train_path), .def_str = "data/file/train.jsonl",
      ONLY_FOR_TASKS(FILE_TASK), .doc = "JSONL training set (format: data/README.md)" },
    { "task.test_path", CFG_STRING, AT(task.test_path), .def_str = "data/file/test.jsonl",
      ONLY_FOR_TASKS(FILE_TASK), .doc = "JSONL test set" },
    { "task.min_len", CFG_INT, AT(task.min_len), IN(1, 65536), .def = 10,
      ONLY_FOR_TASKS(IDXL), .doc = "fewest symbols of a training example (tests use exactly seq_len)" },
    { "task.keys", CFG_INT, AT(task.keys), IN(0, 1048576), .def = 0,
      ONLY_FOR_TASKS(AR), .doc = "key alphabet K (>= seq_len: the context keys are distinct); 0 = seq_len; "
                                 "vocabulary 3K" },
    { "task.symbols", CFG_INT, AT(task.symbols), IN(2, 65536), .def = 1024,
      ONLY_FOR_TASKS(EQ_SIGMA), .doc = "eq_one, eq_ncp: symbols |Sigma| besides [sep] (paper 003: 1024; eq_random "
                                       "is binary); eq_ncp: also its classes, one sigmoid each" },

    { "model", CFG_OBJECT, .doc = "the network" },
    { "model.type", CFG_ENUM, AT(model.type), .names = cfg_model_names, .def = MODEL_TRANSFORMER,
      .doc = "transformer, or lstm (embedding, n_layers LSTM layers of width d_model, head), or retnet "
             "(RetNet: multi-scale retention and a GELU MLP per layer, no positional embedding), or dss (diagonal "
             "state spaces), or mamba (embedding, n_layers pre-RMSNorm Mamba blocks, RMSNorm, head; model.mamba.*)" },
    { "model.d_model", CFG_INT, AT(model.d_model), IN(1, 65536), .def = 64,
      .doc = "width of the residual stream" },
    { "model.n_layers", CFG_INT, AT(model.n_layers), IN(1, 1024), .def = 1,
      .doc = "number of transformer blocks" },
    { "model.n_heads", CFG_INT, AT(model.n_heads), IN(1, 65536), .def = 1,
      BLOCKS_ONLY,
      .doc = "attention heads per block (retnet: retention heads, decays 1 - 2^(-5-h)); must divide d_model" },
    { "model.mlp_ratio", CFG_INT, AT(model.mlp_ratio), IN(1, 1024), .def = 4,
      BLOCKS_ONLY,
      .doc = "MLP hidden width = mlp_ratio * d_model" },
    { "model.activation", CFG_ENUM, AT(model.activation), .names = cfg_act_names,
      .def = ACT_GELU_TANH, BLOCKS_ONLY,
      .doc = "MLP nonlinearity" },
    { "model.positional", CFG_ENUM, AT(model.positional), .names = cfg_pos_names,
      .def = POS_NONE, TRANSFORMER_ONLY,
      .doc = "position information added to the token embeddings" },
    { "model.embed_layernorm", CFG_BOOL, AT(model.embed_layernorm), .def = 0,
      TRANSFORMER_ONLY,
      .doc = "LayerNorm right after the embedding sum" },
    { "model.dropout", CFG_FLOAT, AT(model.dropout), IN_HALF(0, 1), .def = 0,
      .doc = "dropout on embeddings, attention output and MLP output" },
    { "model.ln_eps", CFG_FLOAT, AT(model.ln_eps), GT(0), .def = 1e-5,
      .doc = "LayerNorm epsilon" },
    { "model.init", CFG_ENUM, AT(model.init), .names = cfg_init_names, .def = INIT_TORCH,
      .doc = "torch: PyTorch's default init; normal: N(0, init_std), GPT-2 style" },
    { "model.init_std", CFG_FLOAT, AT(model.init_std), GT(0), .def = 0.02,
      ONLY_WHEN("model.init", 1u << INIT_NORMAL),
      .doc = "std of the normal init of embeddings and weight matrices" },

    { "model.attention", CFG_OBJECT, .doc = "the attention mechanism" },
    { "model.attention.type", CFG_ENUM, AT(model.attention.type), .names = cfg_attn_names,
      .def = ATTN_SOFTMAX, TRANSFORMER_ONLY,
      .doc = "softmax (full), linear (kernelised, O(N d^2)), sparse (local window + block summaries)" },
    { "model.attention.score", CFG_ENUM, AT(model.attention.score), .names = cfg_score_names,
      .def = SCORE_DOT, ATTN_ONLY(SOFTMAX_LIKE),
      .doc = "dot: QK^T/sqrt(d_head); unit_norm: beta * cos(Q, K)" },
    { "model.attention.beta", CFG_FLOAT, AT(model.attention.beta), GT(0), .def = 1.0,
      ATTN_ONLY(SOFTMAX_LIKE), .doc = "temperature of unit_norm scores" },
    { "model.attention.causal", CFG_BOOL, AT(model.attention.causal), .def = 0, TRANSFORMER_ONLY,
      .doc = "mask attention to later positions (sparse attention requires true)" },
    { "model.attention.feature", CFG_ENUM, AT(model.attention.feature), .names = cfg_feature_names,
      .def = FEATURE_ELU1, ATTN_ONLY(1u << ATTN_LINEAR),
      .doc = "feature map phi of linear attention: elu1 = elu(x) + 1, identity, relu" },
    { "model.attention.eps", CFG_FLOAT, AT(model.attention.eps), GT(0), .def = 1e-6,
      ATTN_ONLY(1u << ATTN_LINEAR), .doc = "added to linear attention's denominator" },
    { "model.attention.block", CFG_INT, AT(model.attention.block), IN(0, 65536), .def = 0,
      ATTN_ONLY(1u << ATTN_SPARSE), .doc = "block size B; 0 = 2^floor(log2 sqrt(L)), L the longest sequence" },
    { "model.attention.local_blocks", CFG_INT, AT(model.attention.local_blocks), IN(1, 65536), .def = 1,
      ATTN_ONLY(1u << ATTN_SPARSE), .doc = "k: each query sees the k*B previous tokens" },
    { "model.attention.summary", CFG_INT, AT(model.attention.summary), IN(0, 65536), .def = 1,
      ATTN_ONLY(1u << ATTN_SPARSE), .doc = "c: and the last c positions of every earlier block" },

    /* DSS (Gupta, Gu & Berant 2022; src/nn/dss.c, docs/design.md decision 10). */
    { "model.dss", CFG_OBJECT, ONLY_WHEN("model.type", 1u << MODEL_DSS),
      .doc = "the diagonal state space layer (model.type dss)" },
    { "model.dss.d_state", CFG_INT, AT(model.dss.d_state), IN(1, 512), .def = 64,
      ONLY_WHEN("model.type", 1u << MODEL_DSS),
      .doc = "N: complex modes per channel (the paper: 64; at most 512: the init finds the eigenvalues of a 2N x 2N matrix, O(N^3), about 1 s at 512)" },
    { "model.dss.dt_min", CFG_FLOAT, AT(model.dss.dt_min), IN(1e-6, 10), .def = 0.001,
      ONLY_WHEN("model.type", 1u << MODEL_DSS),
      .doc = "smallest initial step: log(delta) per channel uniform in [log dt_min, log dt_max]" },
    { "model.dss.dt_max", CFG_FLOAT, AT(model.dss.dt_max), IN(1e-6, 10), .def = 0.1,
      ONLY_WHEN("model.type", 1u << MODEL_DSS),
      .doc = "largest initial step (>= dt_min)" },
    { "model.dss.lambda_re", CFG_FLOAT, AT(model.dss.lambda_re), IN(-10, -1e-4), .def = -0.5,
      ONLY_WHEN("model.type", 1u << MODEL_DSS),
      .doc = "initial real part of every mode's Lambda (the reference code's hippo_skew_pos_imag: -0.5); "
             "a mode decays by exp(dt * Re Lambda) per position, so closer to 0 = longer memory at the same "
             "frequencies" },
    { "model.dss.ff", CFG_INT, AT(model.dss.ff), IN(0, 16), .def = 0, ONLY_WHEN("model.type", 1u << MODEL_DSS),
      .doc = "0 = each block is the DSS layer alone (the paper's model); k = a pre-norm feed-forward "
             "block (d -> k*d, GELU, -> d) after each, as the reference code's layer list [dss, ff] (k 4 there)" },
    { "model.dss.lr", CFG_FLOAT, AT(model.dss.lr), IN(0, 1), .def = 0, ONLY_WHEN("model.type", 1u << MODEL_DSS),
      .doc = "0 = train.lr for every parameter; > 0 = the base learning rate of the kernel's Lambda, log dt and "
             "W, following train.schedule in the same ratio to train.lr (the reference code: 0.001, its own "
             "parameter group)" },
    { "model.dss.postact", CFG_ENUM, AT(model.dss.postact), .names = cfg_dss_postact_names,
      .def = DSS_POSTACT_NONE, ONLY_WHEN("model.type", 1u << MODEL_DSS),
      .doc = "after the layer's output_linear: none (the reference code's DSS default: a d -> d linear) or glu "
             "(its postact option, as in its s4ff layer list: a d -> 2d linear, then a*sigmoid(b) over the halves)" },
    { "model.dss.channels", CFG_INT, AT(model.dss.channels), IN(1, 16), .def = 1,
      ONLY_WHEN("model.type", 1u << MODEL_DSS),
      .doc = "C: kernels per feature (the reference code's `channels`, default 1): each block's convolution "
             "gives C*d outputs, C differently weighted sums of each feature's past, and output_linear maps "
             "them back to d; the decoding state stays d x d_state (the C kernels share the feature's modes)" },
    { "model.retnet", CFG_OBJECT, RETNET_ONLY, .doc = "RetNet (Sun et al. 2023, \"Retentive Network\")" },
    { "model.retnet.value_factor", CFG_INT, AT(model.retnet.value_factor), IN(1, 4), .def = 1, RETNET_ONLY,
      .doc = "width of values and of the swish gate = value_factor * d_model (the paper: 2)" },
#define MAMBA_ONLY ONLY_WHEN("model.type", 1u << MODEL_MAMBA)
    { "model.mamba", CFG_OBJECT, MAMBA_ONLY, .doc = "the Mamba block (Gu & Dao 2023, selective SSM; model.type mamba)" },
    { "model.mamba.d_state", CFG_INT, AT(model.mamba.d_state), IN(1, 256), .def = 16, MAMBA_ONLY,
      .doc = "N, SSM state size per inner channel" },
    { "model.mamba.expand", CFG_INT, AT(model.mamba.expand), IN(1, 16), .def = 2, MAMBA_ONLY,
      .doc = "inner channels = expand * d_model" },
    { "model.mamba.d_conv", CFG_INT, AT(model.mamba.d_conv), IN(1, 64), .def = 4, MAMBA_ONLY,
      .doc = "kernel of the causal depthwise convolution before the SSM" },
    { "model.mamba.dt_rank", CFG_INT, AT(model.mamba.dt_rank), IN(0, 65536), .def = 0, MAMBA_ONLY,
      .doc = "rank of the projection giving the step size Delta; 0 = ceil(d_model / 16)" },

    { "train", CFG_OBJECT, .doc = "the optimizer and its schedule" },
    { "train.optimizer", CFG_STRING, AT(train.optimizer), .names = cfg_optim_names,
      .def_str = "adam", .doc = "adam, or adamw (decoupled weight decay)" },
    { "train.lr", CFG_FLOAT, AT(train.lr), GT(0), .def = 1e-3, .doc = "peak learning rate" },
    { "train.beta1", CFG_FLOAT, AT(train.beta1), IN_HALF(0, 1), .def = 0.9,
      .doc = "Adam first-moment decay" },
    { "train.beta2", CFG_FLOAT, AT(train.beta2), IN_HALF(0, 1), .def = 0.999,
      .doc = "Adam second-moment decay" },
    { "train.eps", CFG_FLOAT, AT(train.eps), GT(0), .def = 1e-8, .doc = "Adam epsilon" },
    { "train.weight_decay", CFG_FLOAT, AT(train.weight_decay), GE(0), .def = 0,
      .doc = "L2 (adam) or decoupled (adamw) weight decay" },
    { "train.schedule", CFG_ENUM, AT(train.schedule), .names = cfg_sched_names,
      .def = SCHED_CONSTANT, .doc = "learning-rate schedule" },
    { "train.warmup_steps", CFG_INT, AT(train.warmup_steps), GE(0), .def = 0,
      .doc = "linear warmup length of the warmup_* schedules" },
    { "train.min_lr", CFG_FLOAT, AT(train.min_lr), GE(0), .def = 0,
      .doc = "floor of the decayed schedules" },
    { "train.decay_steps", CFG_INT, AT(train.decay_steps), GE(0), .def = 0,
      .doc = "length of the warmup_* schedules (warmup included): the decay reaches train.min_lr at this "
             "step and holds it after; 0 = train.steps.  May change on --resume, e.g. to extend a finished "
             "run at its final learning rate" },
    { "train.batch_size", CFG_INT, AT(train.batch_size), IN(1, 1048576), .def = 32,
      .doc = "sequences per step" },
    { "train.steps", CFG_INT, AT(train.steps), GE(1), .def = 1000,
      .doc = "optimizer steps" },
    { "train.grad_clip", CFG_FLOAT, AT(train.grad_clip), GE(0), .def = 0,
      .doc = "max global gradient norm; 0 = off" },
    { "train.threads", CFG_INT, AT(train.threads), IN(0, 64), .def = 0,
      .doc = "data-parallel threads (shards of each batch, one core each); 0 = $ATTNLAB_THREADS, else the "
              "number of cores" },
    { "train.length_groups", CFG_INT, AT(train.length_groups), IN(1, 1024), .def = 1,
      .doc = "run each shard's rows in this many groups of similar length, each only up to its longest scored "
             "position (a causal model without dropout): the same loss and gradients to float rounding, without "
             "the padding's work on variable-length tasks; 1 = off (docs/design.md decision 18)" },
    { "train.on_nonfinite", CFG_ENUM, AT(train.on_nonfinite), .names = cfg_nonfinite_names, .def = NONFINITE_STOP,
      .doc = "a step whose loss or gradient norm is NaN/inf: stop (the last checkpoint stays good), or skip its "
             "update (logged; more than 10 in a row still stop)" },

    { "eval", CFG_OBJECT, .doc = "evaluation and checkpoints" },
    { "eval.every", CFG_INT, AT(eval.every), GE(1), .def = 100,
      .doc = "evaluate every N steps (and at the last step)" },
    { "eval.test_size", CFG_INT, AT(eval.test_size), GE(1), .def = 256,
      ONLY_FOR_TASKS(~FILE_TASK),
      .doc = "test sequences, drawn independently of the training set" },
    { "eval.stop_at_error", CFG_FLOAT, AT(eval.stop_at_error), LE(1), .def = -1,
      .doc = "stop when the test error (eval.stop_metric) is <= this; < 0 = never" },
    { "eval.stop_metric", CFG_ENUM, AT(eval.stop_metric), .names = cfg_stop_metric_names, .def = STOP_ON_TOKEN,
      .doc = "the error eval.stop_at_error bounds: token (scored positions) or seq (sequences with every scored "
             "position right, e.g. paper 003's Eq-ncp accuracy); the same for one scored position per sequence" },
    { "eval.checkpoint_every", CFG_INT, AT(eval.checkpoint_every), GE(0), .def = 0,
      .doc = "save model and training state every N steps; 0 = at evaluations" },

    { "distill", CFG_OBJECT, .doc = "distillation into ANNA (LSH attention) after training, or by ./train distill RUN" },
    { "distill.enabled", CFG_BOOL, AT(distill.enabled), .def = 0,
      .doc = "distil right after training" },
    { "distill.layers", CFG_STRING, AT(distill.layers), .def_str = "all",
      .doc = "layers whose attention ANNA replaces: all, or a list such as 0,1" },
    { "distill.family", CFG_ENUM, AT(distill.family), .names = cfg_family_names, .def = DISTILL_HYPERPLANE,
      .doc = "angular LSH family: hyperplane (SimHash) or crosspolytope" },
    { "distill.tables", CFG_STRING, AT(distill.tables), .def_str = "1..16",
      .doc = "hash tables l per layer: 1..16, 32..96/8, 1,2,4; one list per layer separated by ;" },
    { "distill.funcs", CFG_STRING, AT(distill.funcs), .def_str = "1..6",
      .doc = "hash functions z per table, same form" },
    { "distill.same_funcs", CFG_BOOL, AT(distill.same_funcs), .def = 0,
      .doc = "every distilled layer uses the same z: one grid axis instead of one per layer (default: each "
             "layer its own z axis, the grid (l1, z1, l2, z2, ...))" },
    { "distill.last_dim", CFG_INT, AT(distill.last_dim), IN(0, 1 << 24), .def = 0,
      .doc = "crosspolytope: the last function of each table uses only this many rotated coordinates (2x as "
             "many buckets; FALCONN's last cross-polytope dimension), 1..d_head padded to a power of two; 0 = all" },
    { "distill.runs", CFG_INT, AT(distill.runs), IN(1, 1000), .def = 10,
      .doc = "hash draws per grid cell (mean and std over them)" },
    { "distill.seed", CFG_INT, AT(distill.seed), IN(0, 2147483647), .def = 1,
      .doc = "seed of the hash functions (each cell's r-th draw has its own seed derived from it)" },
    { "distill.valid_size", CFG_INT, AT(distill.valid_size), IN(0, 100000000), .def = 0,
      .doc = "validation sequences, drawn like the test set and disjoint from train and test: the best cell and "
             "the fine-tuned cells are chosen on them; 0 = eval.test_size" },
    { "distill.score_all", CFG_BOOL, AT(distill.score_all), .def = 1,
      .doc = "errors over every position, as the ANNA paper's figures (k-hop: position 0 too, target the null "
             "class); false: the positions training scores" },
    { "distill.finetune_steps", CFG_INT, AT(distill.finetune_steps), IN(0, 10000000), .def = 0,
      .doc = "after the grid, fine-tune each of distill.finetune_cells for this many Adam steps with ANNA in "
             "the loop (gradients through the values, buckets fixed); 0 = off" },
    { "distill.finetune_lr", CFG_FLOAT, AT(distill.finetune_lr), GT(0), .def = 0.001,
      .doc = "fine-tuning learning rate (constant; Adam with train.beta1, beta2, eps, weight_decay, grad_clip, "
             "batch_size)" },
    { "distill.finetune_cells", CFG_STRING, AT(distill.finetune_cells), .def_str = "auto",
      .doc = "cells to fine-tune: auto (the grid's best cell and its best cell with the fewest tables), or "
             "tables x functions per cell: 1x1,2x1; 8x1+4x2 gives two distilled layers their own" },
    { "distill.finetune_params", CFG_ENUM, AT(distill.finetune_params), .names = cfg_ft_params_names,
      .def = FINETUNE_EXCEPT_QK,
      .doc = "what fine-tuning trains: except_qk = every parameter but the distilled layers' Q and K "
             "projections (they define the buckets); except_attention = also not their V and O" },
    { "distill.finetune_hashes", CFG_ENUM, AT(distill.finetune_hashes), .names = cfg_ft_hashes_names,
      .def = FINETUNE_FIXED,
      .doc = "hash functions while fine-tuning: fixed = one draw for every step; redraw = a new draw each step" },
};

const int cfg_nkeys = sizeof cfg_keys / sizeof cfg_keys[0];
_Static_assert(sizeof cfg_keys / sizeof cfg_keys[0] <= CFG_KEYS_MAX, "raise CFG_KEYS_MAX");

/* ------------------------------------------------------------------------------
 * Lookups in the table, and how its numbers print
 * ---------------------------------------------------------------------------- */

/* Numbers print with al_fmt_double (util/strbuf.h): exact and shortest.  The same
 * for a float: at most 9 digits, and parsing the text as a double and rounding to
 * float gives v back, which is what the round trip needs. */
const char *cfg_fmt_float(float v, char *buf, size_t n) {
    if (!buf || !n) return buf;   /* (the sanitizer build's format checks see a NULL path otherwise) */
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, n, "%.*g", p, (double)v);
        if ((float)strtod(buf, NULL) == v) break;
    }
    return buf;
}

const char *cfg_leaf(const char *path) {
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : path;
}

int cfg_is_child(const char *path, const char *parent) {
    size_t n = strlen(parent);
    if (n == 0) return strchr(path, '.') == NULL;
    return strncmp(path, parent, n) == 0 && path[n] == '.' && !strchr(path + n + 1, '.');
}

int cfg_find(const char *path) {
    for (int i = 0; i < cfg_nkeys; i++)
        if (!strcmp(cfg_keys[i].path, path)) return i;
    return -1;
}

void *cfg_slot(Config *c, const CfgKey *k) { return (char *)c + k->off; }
const void *cfg_cslot(const Config *c, const CfgKey *k) { return (const char *)c + k->off; }

int cfg_applies(const Config *c, const CfgKey *k) {
    if (!k->when) return 1;
    int d = cfg_find(k->when);
    AL_ASSERT(d >= 0 && cfg_keys[d].type == CFG_ENUM);
    int v = *(const int *)cfg_cslot(c, &cfg_keys[d]);
    return v >= 0 && v < 32 && ((k->when_mask >> v) & 1u);
}

const char *cfg_range_text(const CfgKey *k, char *buf, size_t n) {
    char lo[32], hi[32];
    al_fmt_double(k->min, lo, sizeof lo);
    al_fmt_double(k->max, hi, sizeof hi);
    int has_lo = isfinite(k->min), has_hi = isfinite(k->max);
    if (has_lo && has_hi)
        snprintf(buf, n, "in %c%s, %s%c", k->lo_open ? '(' : '[', lo, hi, k->hi_open ? ')' : ']');
    else if (has_lo)
        snprintf(buf, n, "%s %s", k->lo_open ? ">" : ">=", lo);
    else if (has_hi)
        snprintf(buf, n, "%s %s", k->hi_open ? "<" : "<=", hi);
    else
        snprintf(buf, n, "%s", "");
    return buf;
}

/* ------------------------------------------------------------------------------
 * Defaults
 * ---------------------------------------------------------------------------- */

void cfg_defaults(Config *c) {
    memset(c, 0, sizeof *c);
    for (int i = 0; i < cfg_nkeys; i++) {
        const CfgKey *k = &cfg_keys[i];
        switch (k->type) {
        case CFG_OBJECT: break;
        case CFG_INT:
        case CFG_BOOL:
        case CFG_ENUM:   *(int *)cfg_slot(c, k) = (int)k->def; break;
        case CFG_U64:    *(uint64_t *)cfg_slot(c, k) = (uint64_t)k->def; break;
        case CFG_FLOAT:  *(float *)cfg_slot(c, k) = (float)k->def; break;
        case CFG_STRING: snprintf(cfg_slot(c, k), k->size, "%s", k->def_str); break;
        }
    }
}
