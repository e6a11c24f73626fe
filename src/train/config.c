/* config.c — the run configuration: one schema table, a strict JSON reader, and
 * the effective-config printer.
 *
 * Everything key-specific lives in cfg_keys[] below: the key path, its type, where
 * it is stored in Config, its range or allowed names, its default and a one-line
 * doc.  The reader, the printer, the defaults, cfg_help() and cfg_first_difference()
 * are all loops over that table, so adding a key is adding a row (and, if it
 * constrains other keys, a rule in cfg_consistency()).
 *
 * Reading is done in three passes so that the order of keys in a file never
 * matters:
 *   1. walk the JSON tree: reject unknown and duplicate keys, remember which row
 *      each JSON value belongs to (seen[]);
 *   2. apply the remembered values in schema order: type, range, store.  A row may
 *      apply only to some values of an earlier enum row (its "discriminator", e.g.
 *      task keys that exist for one task.type only), so discriminators precede
 *      their dependents in the table;
 *   3. check the rules that involve several keys (cfg_consistency), once, after
 *      the file and all --set overrides, so an override can fix a file.
 *
 * Every error is one message that starts with the source (file name, or
 * "--set key=value") and names the key path; err->code is 2.  docs/errors.md lists
 * them all; keep it in step. */
#include "attnlab/train/config.h"
#include "attnlab/util/strbuf.h"
#include "attnlab/util/fsutil.h"
#include "attnlab/anna/finetune.h"
#include "attnlab/util/intlist.h"

#include <cJSON.h>

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------
 * The schema
 * ---------------------------------------------------------------------------- */

typedef enum { CFG_OBJECT, CFG_INT, CFG_U64, CFG_FLOAT, CFG_BOOL, CFG_ENUM, CFG_STRING } CfgType;

typedef struct CfgKey {
    const char *path;              /* full key path: "model.attention.beta" */
    CfgType type;
    size_t off, size;              /* where the value lives in Config (not for objects) */
    double min, max;               /* numeric range; ±INFINITY = unbounded */
    unsigned char lo_open, hi_open;/* exclusive bounds: (min, ...  /  ..., max) */
    const char *const *names;      /* ENUM: names indexed by the C enum value;
                                      STRING: the allowed values, or NULL = any */
    double def;                    /* default of numeric, bool and enum keys */
    const char *def_str;           /* default of string keys */
    unsigned ident;                /* STRING: restricted to file-name-safe characters */
    const char *when;              /* the key exists only when this enum key ... */
    unsigned when_mask;            /* ... has one of these values (bit = enum value) */
    const char *doc;
} CfgKey;

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

/* Names are indexed by the enum value (designated), so reordering an enum in
 * config.h cannot silently remap names. */
static const char *const cfg_task_names[] = {
    [TASK_MATCH2] = "match2", [TASK_KHOP] = "khop", [TASK_INDEX_LOOKUP] = "index_lookup",
    [TASK_ARITH] = "arith", [TASK_LIS] = "lis", [TASK_ED] = "ed", [TASK_DYCK] = "dyck",
    [TASK_ASSOC_RECALL] = "assoc_recall", [TASK_FILE] = "file", NULL };
static const char *const cfg_pos_names[] = {
    [POS_NONE] = "none", [POS_LEARNED] = "learned", [POS_SINUSOIDAL] = "sinusoidal", NULL };
static const char *const cfg_attn_names[] = {
    [ATTN_SOFTMAX] = "softmax", [ATTN_LINEAR] = "linear", [ATTN_SPARSE] = "sparse", NULL };
static const char *const cfg_score_names[] = {
    [SCORE_DOT] = "dot", [SCORE_UNIT_NORM] = "unit_norm", NULL };
static const char *const cfg_act_names[] = {
    [ACT_GELU_TANH] = "gelu_tanh", [ACT_GELU_ERF] = "gelu_erf", NULL };
static const char *const cfg_model_names[] = {
    [MODEL_TRANSFORMER] = "transformer", [MODEL_LSTM] = "lstm", NULL };
static const char *const cfg_feature_names[] = {
    [FEATURE_ELU1] = "elu1", [FEATURE_IDENTITY] = "identity", [FEATURE_RELU] = "relu", NULL };
static const char *const cfg_family_names[] = {
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
#define TRANSFORMER_ONLY ONLY_WHEN("model.type", 1u << MODEL_TRANSFORMER)
#define ATTN_ONLY(mask)  ONLY_WHEN("model.attention.type", mask)
#define SOFTMAX_LIKE     ((1u << ATTN_SOFTMAX) | (1u << ATTN_SPARSE))
#define SEED_MAX     9007199254740992.0   /* 2^53: larger JSON numbers lose digits */

static const CfgKey cfg_keys[] = {
    { "name", CFG_STRING, AT(name), .def_str = "run", .ident = 1,
      .doc = "run name (letters, digits and . _ - +), used in output file names and logs" },
    { "seed", CFG_U64, AT(seed), IN(0, SEED_MAX), .def = 1,
      .doc = "seed of every random stream (data, init, dropout)" },

    { "task", CFG_OBJECT, .doc = "the task to learn" },
    { "task.type", CFG_ENUM, AT(task.type), .names = cfg_task_names, .def = TASK_MATCH2,
      .doc = "which task; the other task keys depend on it" },
    { "task.seq_len", CFG_INT, AT(task.seq_len), IN(2, 65536), .def = 32,
      ONLY_FOR_TASKS(MATCH2 | KHOP | IDXL | DYCK | AR),
      .doc = "match2, dyck: N; khop: tokens including the leading hop-count token; index_lookup: most symbols N; "
             "assoc_recall: context (key, value) pairs before the query" },
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

    { "model", CFG_OBJECT, .doc = "the network" },
    { "model.type", CFG_ENUM, AT(model.type), .names = cfg_model_names, .def = MODEL_TRANSFORMER,
      .doc = "transformer, or lstm (embedding, n_layers LSTM layers of width d_model, head)" },
    { "model.d_model", CFG_INT, AT(model.d_model), IN(1, 65536), .def = 64,
      .doc = "width of the residual stream" },
    { "model.n_layers", CFG_INT, AT(model.n_layers), IN(1, 1024), .def = 1,
      .doc = "number of transformer blocks" },
    { "model.n_heads", CFG_INT, AT(model.n_heads), IN(1, 65536), .def = 1,
      TRANSFORMER_ONLY,
      .doc = "attention heads per block; must divide d_model" },
    { "model.mlp_ratio", CFG_INT, AT(model.mlp_ratio), IN(1, 1024), .def = 4,
      TRANSFORMER_ONLY,
      .doc = "MLP hidden width = mlp_ratio * d_model" },
    { "model.activation", CFG_ENUM, AT(model.activation), .names = cfg_act_names,
      .def = ACT_GELU_TANH, TRANSFORMER_ONLY,
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
    { "train.batch_size", CFG_INT, AT(train.batch_size), IN(1, 1048576), .def = 32,
      .doc = "sequences per step" },
    { "train.steps", CFG_INT, AT(train.steps), GE(1), .def = 1000,
      .doc = "optimizer steps" },
    { "train.grad_clip", CFG_FLOAT, AT(train.grad_clip), GE(0), .def = 0,
      .doc = "max global gradient norm; 0 = off" },
    { "train.threads", CFG_INT, AT(train.threads), IN(0, 64), .def = 0,
      .doc = "data-parallel threads (shards of each batch, one core each); 0 = $ATTNLAB_THREADS, else the "
              "number of cores" },
    { "train.on_nonfinite", CFG_ENUM, AT(train.on_nonfinite), .names = cfg_nonfinite_names,
      .def = NONFINITE_STOP,
      .doc = "a step whose loss or gradient norm is NaN/inf: stop (the last checkpoint stays good), or skip its "
             "update (logged; more than 10 in a row still stop)" },

    { "eval", CFG_OBJECT, .doc = "evaluation and checkpoints" },
    { "eval.every", CFG_INT, AT(eval.every), GE(1), .def = 100,
      .doc = "evaluate every N steps (and at the last step)" },
    { "eval.test_size", CFG_INT, AT(eval.test_size), GE(1), .def = 256,
      ONLY_FOR_TASKS(~FILE_TASK),
      .doc = "test sequences, drawn independently of the training set" },
    { "eval.stop_at_error", CFG_FLOAT, AT(eval.stop_at_error), LE(1), .def = -1,
      .doc = "stop when the test token error is <= this; < 0 = never" },
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

enum { CFG_NKEYS = sizeof cfg_keys / sizeof cfg_keys[0] };
#define CFG_KEY_MAX 256    /* longest key path we handle (longer ones are typos) */
#define CFG_SWEEP_SECTION "sweep"   /* read by ./train sweep (src/sweep), not part of Config */
/* Which build wrote a run's config.json (util/version.h); a run folder's config.json
 * is loaded again (./train distill, sweep cells), so it is accepted and ignored. */
#define CFG_PROVENANCE "provenance"
#define CFG_SRC_MAX 256    /* longest source name kept for messages */

/* ------------------------------------------------------------------------------
 * Small helpers: growable strings, number formatting, key lookup
 * ---------------------------------------------------------------------------- */

/* Numbers print with al_fmt_double (util/strbuf.h): exact and shortest. */

/* Same for a float: at most 9 digits, and parsing the text as a double and
 * rounding to float gives v back, which is what the round trip needs. */
static const char *cfg_fmt_float(float v, char *buf, size_t n) {
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, n, "%.*g", p, (double)v);
        if ((float)strtod(buf, NULL) == v) break;
    }
    return buf;
}

static const char *cfg_leaf(const char *path) {
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : path;
}

/* Is `path` a direct child of `parent` ("" = the top level)? */
static int cfg_is_child(const char *path, const char *parent) {
    size_t n = strlen(parent);
    if (n == 0) return strchr(path, '.') == NULL;
    return strncmp(path, parent, n) == 0 && path[n] == '.' && !strchr(path + n + 1, '.');
}

static int cfg_find(const char *path) {
    for (int i = 0; i < CFG_NKEYS; i++)
        if (!strcmp(cfg_keys[i].path, path)) return i;
    return -1;
}

static void *cfg_slot(Config *c, const CfgKey *k) { return (char *)c + k->off; }
static const void *cfg_cslot(const Config *c, const CfgKey *k) { return (const char *)c + k->off; }

static int cfg_name_index(const char *const *names, const char *s) {
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], s)) return i;
    return -1;
}

/* Does key k exist for the current value of its discriminator (e.g. task.type)? */
static int cfg_applies(const Config *c, const CfgKey *k) {
    if (!k->when) return 1;
    int d = cfg_find(k->when);
    AL_ASSERT(d >= 0 && cfg_keys[d].type == CFG_ENUM);
    int v = *(const int *)cfg_cslot(c, &cfg_keys[d]);
    return v >= 0 && v < 32 && ((k->when_mask >> v) & 1u);
}

/* "> 0", ">= 1", "<= 1", "in [0, 1)"; "" when unbounded. */
static const char *cfg_range_text(const CfgKey *k, char *buf, size_t n) {
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
 * Suggestions for typos
 * ---------------------------------------------------------------------------- */

/* Optimal-string-alignment (Damerau-Levenshtein) distance, case-insensitive:
 * "bta" -> "beta" is 1, "nheads" -> "n_heads" is 1, "lr" <-> "rl" is 1. */
static int cfg_distance(const char *a, const char *b) {
    enum { M = 64 };
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > M || lb > M) return 1000;
    int d[M + 1][M + 1];
    for (int i = 0; i <= la; i++) d[i][0] = i;
    for (int j = 0; j <= lb; j++) d[0][j] = j;
    for (int i = 1; i <= la; i++) {
        for (int j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            int best = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

/* Case-insensitive substring test, for "warmup" -> "warmup_steps". */
static int cfg_contains(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == n) return 1;
    }
    return 0;
}

/* How far `typed` is from `cand`, or -1 when it is too far to suggest.  Short words
 * tolerate one edit, longer ones two or three; a typed word of 3+ letters that is
 * part of the candidate also counts (it ranks behind real near-misses). */
static int cfg_closeness(const char *typed, const char *cand) {
    int d = cfg_distance(typed, cand);
    size_t n = strlen(typed) > strlen(cand) ? strlen(typed) : strlen(cand);
    int limit = n <= 4 ? 1 : n <= 8 ? 2 : 3;
    if (d <= limit) return d;
    if (strlen(typed) >= 3 && cfg_contains(cand, typed)) return 100 + d;
    return -1;
}

/* The closest of names[0..] to `typed`, or NULL. */
static const char *cfg_closest_name(const char *const *names, const char *typed) {
    const char *best = NULL;
    int best_d = INT_MAX;
    for (int i = 0; names[i]; i++) {
        int d = cfg_closeness(typed, names[i]);
        if (d >= 0 && d < best_d) best_d = d, best = names[i];
    }
    return best;
}

/* ------------------------------------------------------------------------------
 * Error messages about values
 * ---------------------------------------------------------------------------- */

static int cfg_fail_key(AlError *err, const char *src, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int cfg_fail_key(AlError *err, const char *src, const char *path, const char *fmt, ...) {
    char what[AL_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return al_fail(err, 2, "%s: %s: %s", src, path, what);
}

/* What the user wrote, for "got ...": `a string ("64")`, `1.5`, `true`, `an object`. */
static const char *cfg_describe(const cJSON *v, char *buf, size_t n) {
    char num[32];
    if (cJSON_IsString(v)) {
        char s[41];   /* the first 40 bytes, control characters shown as '?' */
        size_t len = strlen(v->valuestring), i;
        for (i = 0; i < len && i < 40; i++)
            s[i] = (unsigned char)v->valuestring[i] < 0x20 ? '?' : v->valuestring[i];
        s[i] = 0;
        snprintf(buf, n, "a string (\"%s%s\")", s, len > 40 ? "..." : "");
    } else if (cJSON_IsNumber(v)) {
        if (isfinite(v->valuedouble)) snprintf(buf, n, "%s", al_fmt_double(v->valuedouble, num, sizeof num));
        else snprintf(buf, n, "%s", "a number too large for a double");
    } else if (cJSON_IsTrue(v))   snprintf(buf, n, "%s", "true");
    else if (cJSON_IsFalse(v))    snprintf(buf, n, "%s", "false");
    else if (cJSON_IsNull(v))     snprintf(buf, n, "%s", "null");
    else if (cJSON_IsObject(v))   snprintf(buf, n, "%s", "an object");
    else if (cJSON_IsArray(v))    snprintf(buf, n, "%s", "an array");
    else                          snprintf(buf, n, "%s", "an unsupported value");
    return buf;
}

/* `"gelu_tanh", "gelu_erf"` */
static const char *cfg_choices_text(const char *const *names, char *buf, size_t n) {
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; names[i] && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s\"%s\"", i ? ", " : "", names[i]);
    return buf;
}

static const char *cfg_type_text(const CfgKey *k) {
    switch (k->type) {
    case CFG_OBJECT: return "an object";
    case CFG_INT:
    case CFG_U64:    return "an integer";
    case CFG_FLOAT:  return "a number";
    case CFG_BOOL:   return "true or false";
    case CFG_ENUM:   return "a string";
    case CFG_STRING: return "a string";
    }
    return "?";
}

static int cfg_type_error(const CfgKey *k, const cJSON *v, const char *src, AlError *err) {
    char got[96], names[256];
    if (k->names && !cJSON_IsString(v))
        return cfg_fail_key(err, src, k->path, "expected one of %s; got %s",
                            cfg_choices_text(k->names, names, sizeof names),
                            cfg_describe(v, got, sizeof got));
    return cfg_fail_key(err, src, k->path, "expected %s, got %s", cfg_type_text(k),
                        cfg_describe(v, got, sizeof got));
}

static int cfg_range_error(const CfgKey *k, const char *range, double v, const char *src, AlError *err) {
    char num[32];
    return cfg_fail_key(err, src, k->path, "must be %s, got %s", range, al_fmt_double(v, num, sizeof num));
}

/* ------------------------------------------------------------------------------
 * Pass 2: type, range, store — one JSON value into one row
 * ---------------------------------------------------------------------------- */

static int cfg_in_range(const CfgKey *k, double v) {
    if (k->lo_open ? !(v > k->min) : !(v >= k->min)) return 0;
    if (k->hi_open ? !(v < k->max) : !(v <= k->max)) return 0;
    return 1;
}

/* Numbers: integral for integer keys, within the storage type, within the row. */
static int cfg_apply_number(Config *c, const CfgKey *k, const cJSON *v, const char *src, AlError *err) {
    char range[64], got[32];
    double x = v->valuedouble;
    if (!cJSON_IsNumber(v) || !isfinite(x)) return cfg_type_error(k, v, src, err);
    if (k->type != CFG_FLOAT && x != floor(x)) return cfg_type_error(k, v, src, err);
    if (k->type == CFG_FLOAT && fabs(x) > FLT_MAX)
        return cfg_fail_key(err, src, k->path, "must be within the float range (|x| <= %g), got %s",
                            (double)FLT_MAX, al_fmt_double(x, got, sizeof got));
    /* Check what will be stored: 1e-50 becomes a float 0, which "> 0" must reject. */
    double stored = k->type == CFG_FLOAT ? (double)(float)x : x;
    if (!cfg_in_range(k, stored)) return cfg_range_error(k, cfg_range_text(k, range, sizeof range), x, src, err);
    if (k->type == CFG_INT && (x < INT_MIN || x > INT_MAX))
        return cfg_fail_key(err, src, k->path, "must be <= %d (the int range), got %s", INT_MAX,
                            al_fmt_double(x, got, sizeof got));
    if (k->type == CFG_INT) *(int *)cfg_slot(c, k) = (int)x;
    else if (k->type == CFG_U64) *(uint64_t *)cfg_slot(c, k) = (uint64_t)x;
    else *(float *)cfg_slot(c, k) = (float)x;
    return 0;
}

/* Names safe in a file name: no spaces, slashes or leading dot. */
static int cfg_ident_ok(const char *s) {
    if (!*s || *s == '.') return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("._-+", *s)) return 0;
    return 1;
}

static int cfg_apply_string(Config *c, const CfgKey *k, const cJSON *v, const char *src, AlError *err) {
    char names[256], got[96];
    if (!cJSON_IsString(v)) return cfg_type_error(k, v, src, err);
    const char *s = v->valuestring;
    int idx = k->names ? cfg_name_index(k->names, s) : 0;
    if (idx < 0) {
        const char *near = cfg_closest_name(k->names, s);
        char hint[96] = "";
        if (near) snprintf(hint, sizeof hint, " (did you mean \"%s\"?)", near);
        return cfg_fail_key(err, src, k->path, "expected one of %s; got \"%.40s\"%s",
                            cfg_choices_text(k->names, names, sizeof names), s, hint);
    }
    if (k->type == CFG_ENUM) {
        *(int *)cfg_slot(c, k) = idx;
        return 0;
    }
    if (strlen(s) >= k->size || (k->ident && !cfg_ident_ok(s)))
        return cfg_fail_key(err, src, k->path,
                            "must be 1-%zu characters of A-Z a-z 0-9 . _ - + (not starting with '.'), got %s",
                            k->size - 1, cfg_describe(v, got, sizeof got));
    /* An empty path would only fail later as "cannot open ''", far from the key
     * (the distill lists say "empty list" themselves). */
    if (!*s && strstr(k->path, "_path"))
        return cfg_fail_key(err, src, k->path, "must not be empty (the path of a JSONL file)");
    memset(cfg_slot(c, k), 0, k->size);
    memcpy(cfg_slot(c, k), s, strlen(s));
    return 0;
}

/* `task.foo: not valid for task.type "match2" (only for "copy")` */
static int cfg_not_applicable(const Config *c, const CfgKey *k, const char *src, AlError *err) {
    const CfgKey *d = &cfg_keys[cfg_find(k->when)];
    char only[256];
    size_t len = 0;
    only[0] = 0;
    for (int i = 0; d->names[i] && len < sizeof only; i++)
        if ((k->when_mask >> i) & 1u)
            len += (size_t)snprintf(only + len, sizeof only - len, "%s\"%s\"", len ? ", " : "", d->names[i]);
    return cfg_fail_key(err, src, k->path, "not valid for %s \"%s\" (only for %s)", d->path,
                        d->names[*(const int *)cfg_cslot(c, d)], only);
}

static int cfg_apply(Config *c, const CfgKey *k, const cJSON *v, const char *src, AlError *err) {
    if (!cfg_applies(c, k)) return cfg_not_applicable(c, k, src, err);
    switch (k->type) {
    case CFG_OBJECT:
        return 0;                       /* its members are rows of their own */
    case CFG_INT:
    case CFG_U64:
    case CFG_FLOAT:
        return cfg_apply_number(c, k, v, src, err);
    case CFG_BOOL:
        if (!cJSON_IsBool(v)) return cfg_type_error(k, v, src, err);
        *(int *)cfg_slot(c, k) = cJSON_IsTrue(v);
        return 0;
    case CFG_ENUM:
    case CFG_STRING:
        return cfg_apply_string(c, k, v, src, err);
    }
    return 0;
}

/* Applies every value found by the walk, in schema order (discriminators first). */
static int cfg_apply_seen(Config *c, const cJSON *const *seen, const char *src, AlError *err) {
    for (int i = 0; i < CFG_NKEYS; i++)
        if (seen[i] && cfg_apply(c, &cfg_keys[i], seen[i], src, err)) return err->code;
    return 0;
}

/* ------------------------------------------------------------------------------
 * Pass 1: walk the JSON tree — unknown keys, duplicates, objects
 * ---------------------------------------------------------------------------- */

/* "(valid keys under 'model': d_model, n_layers, ...)" */
static void cfg_list_children(const char *parent, char *buf, size_t n) {
    size_t len = (size_t)snprintf(buf, n, *parent ? "valid keys under '%s': " : "valid top-level keys: %s",
                                  parent);
    int first = 1;
    for (int i = 0; i < CFG_NKEYS && len < n; i++) {
        if (!cfg_is_child(cfg_keys[i].path, parent)) continue;
        len += (size_t)snprintf(buf + len, n - len, "%s%s", first ? "" : ", ", cfg_leaf(cfg_keys[i].path));
        first = 0;
    }
}

/* The best suggestion for an unknown component `comp` under `parent`, followed by
 * `rest` (the components after it, for --set paths): a sibling first, else the
 * same name anywhere in the schema ("lr" at the top level -> "train.lr"). */
static int cfg_suggest(const char *parent, const char *comp, const char *rest, char *out, size_t n) {
    int best = -1, best_d = INT_MAX;
    for (int i = 0; i < CFG_NKEYS; i++) {
        if (!cfg_is_child(cfg_keys[i].path, parent)) continue;
        int d = cfg_closeness(comp, cfg_leaf(cfg_keys[i].path));
        if (d >= 0 && d < best_d) best_d = d, best = i;
    }
    if (best >= 0) {
        snprintf(out, n, "%s%s", cfg_keys[best].path, rest);
        if (*rest && cfg_find(out) < 0) snprintf(out, n, "%s", cfg_keys[best].path);
        return 1;
    }
    if (*rest) return 0;
    for (int i = 0; i < CFG_NKEYS; i++) {
        int d = cfg_closeness(comp, cfg_leaf(cfg_keys[i].path));
        if (d >= 0 && d < 100 && d < best_d) best_d = d, best = i;
    }
    if (best < 0) return 0;
    snprintf(out, n, "%s", cfg_keys[best].path);
    return 1;
}

/* An unknown key path: find how much of it is valid, then suggest or list. */
static int cfg_unknown(const char *path, const char *src, AlError *err) {
    char parent[CFG_KEY_MAX] = "", comp[CFG_KEY_MAX], sugg[CFG_KEY_MAX], list[512];
    const char *p = path;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        snprintf(comp, sizeof comp, "%.*s", (int)n, p);
        char probe[CFG_KEY_MAX];
        snprintf(probe, sizeof probe, "%s%s%s", parent, *parent ? "." : "", comp);
        int i = cfg_find(probe);
        if (i >= 0 && dot && cfg_keys[i].type != CFG_OBJECT)
            return al_fail(err, 2, "%s: unknown key '%s' ('%s' has no sub-keys)", src, path, probe);
        if (i < 0 || !dot) break;
        snprintf(parent, sizeof parent, "%s", probe);
        p = dot + 1;
    }
    const char *rest = p + strlen(comp);
    if (cfg_suggest(parent, comp, rest, sugg, sizeof sugg))
        return al_fail(err, 2, "%s: unknown key '%s' (did you mean '%s'?)", src, path, sugg);
    cfg_list_children(parent, list, sizeof list);
    return al_fail(err, 2, "%s: unknown key '%s' (%s)", src, path, list);
}

static int cfg_walk(const cJSON *obj, const char *prefix, const cJSON **seen, const char *src, AlError *err);

/* One JSON member that belongs to row `i`: no duplicates; objects are descended. */
static int cfg_visit(int i, const cJSON *v, const cJSON **seen, const char *src, AlError *err) {
    const CfgKey *k = &cfg_keys[i];
    if (seen[i])
        return al_fail(err, 2, "%s: duplicate key '%s' (a JSON object must not repeat a key)", src, k->path);
    seen[i] = v;
    if (k->type != CFG_OBJECT) return 0;
    if (!cJSON_IsObject(v)) return cfg_type_error(k, v, src, err);
    return cfg_walk(v, k->path, seen, src, err);
}

/* `{"model": {"d_model": ...}}` */
static void cfg_nested_form(const char *path, char *buf, size_t n) {
    size_t len = 0, depth = 0;
    for (const char *p = path; len < n;) {
        const char *dot = strchr(p, '.');
        size_t m = dot ? (size_t)(dot - p) : strlen(p);
        len += (size_t)snprintf(buf + len, n - len, "{\"%.*s\": ", (int)m, p);
        depth++;
        if (!dot) break;
        p = dot + 1;
    }
    if (len < n) len += (size_t)snprintf(buf + len, n - len, "...");
    while (depth-- && len < n) len += (size_t)snprintf(buf + len, n - len, "}");
}

static int cfg_walk(const cJSON *obj, const char *prefix, const cJSON **seen, const char *src, AlError *err) {
    for (const cJSON *it = obj->child; it; it = it->next) {
        char path[CFG_KEY_MAX], nested[CFG_KEY_MAX + 64];
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", it->string);
        int i = cfg_find(path);
        if (i < 0 && !strcmp(path, CFG_SWEEP_SECTION))   /* not cut out by cfg_load_sweep */
            return al_fail(err, 2, "%s: the '%s' section describes a grid of runs: run it with "
                           "./train sweep %s (a single run takes the config without it)", src, path, src);
        if (i < 0 && !strcmp(path, CFG_PROVENANCE)) {
            if (!cJSON_IsObject(it))
                return al_fail(err, 2, "%s: '%s' is written by attnlab (the version and commit of the build "
                               "that wrote the file) and must be an object", src, path);
            if (cJSON_GetObjectItemCaseSensitive(obj, CFG_PROVENANCE) != it)
                return al_fail(err, 2, "%s: duplicate key '%s' (a JSON object must not repeat a key)", src, path);
            continue;
        }
        if (i >= 0 && strchr(it->string, '.')) {
            /* Dotted keys are for --set; in a file the key must be nested. */
            cfg_nested_form(path, nested, sizeof nested);
            return al_fail(err, 2, "%s: key '%s' must be nested in a file: %s", src, path, nested);
        }
        if (i < 0) return cfg_unknown(path, src, err);
        if (cfg_visit(i, it, seen, src, err)) return err->code;
    }
    return 0;
}

/* ------------------------------------------------------------------------------
 * Pass 3: rules that involve several keys
 * ---------------------------------------------------------------------------- */

/* A broken rule: the message, and the keys it involves (so cfg_load can blame the
 * --set override that touched one of them rather than the file). */
typedef struct CfgProblem {
    const char *keys[3];
    char msg[512];
} CfgProblem;

static int cfg_problem(CfgProblem *p, const char *k1, const char *k2, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int cfg_problem(CfgProblem *p, const char *k1, const char *k2, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->msg, sizeof p->msg, fmt, ap);
    va_end(ap);
    p->keys[0] = k1, p->keys[1] = k2, p->keys[2] = NULL;
    return 1;
}

/* ⌈log₂ 2d⌉, the bits a cross-polytope function writes (lsh.h: a table's code is 64 bits). */
static int cfg_crosspolytope_bits(int dim) {
    int b = 1;
    while (b < 62 && (1L << b) < 2L * dim) b++;
    return b;
}

/* The largest value in per-item lists (intlist_parse_per's layout). */
static int cfg_lists_max(const int *lists, const int *counts, int items) {
    int mx = 0;
    for (int i = 0; i < items; i++)
        for (int j = 0; j < counts[i]; j++)
            if (lists[i * DISTILL_MAX_VALUES + j] > mx) mx = lists[i * DISTILL_MAX_VALUES + j];
    return mx;
}

/* Can an LSH table of the family hold z functions at d_head, with ℓ tables
 * (lsh.h: z·bits ≤ 64 bits of code; a projection matrix of at most 2^31 entries)?
 * z_key / l_key name the setting the largest z / ℓ came from. */
static int cfg_lsh_fits(const Config *c, int l, int z, const char *l_key, const char *l_value, const char *z_key,
                        const char *z_value, CfgProblem *p) {
    const CfgModel *m = &c->model;
    int dim = m->d_model / m->n_heads, cross = c->distill.family == DISTILL_CROSSPOLYTOPE;
    int bits = cross ? cfg_crosspolytope_bits(dim) : 1, padded = 1 << (cfg_crosspolytope_bits(dim) - 1);
    if ((long)z * bits > 64)
        return cfg_problem(p, z_key, "distill.family",
                           "%s \"%s\": z = %d is more than a %s table holds at d_head = %d (at most %d: %d bits per "
                           "function in a 64-bit code)", z_key, z_value, z, cfg_family_names[c->distill.family], dim,
                           64 / bits, bits);
    double entries = (double)l * z * (cross ? 3.0 * padded : dim);
    if (entries > INT_MAX)
        return cfg_problem(p, l_key, z_key,
                           "%s \"%s\": %d tables x %d functions at d_head = %d need more than 2^31 hash parameters "
                           "(%s; fewer tables or functions)", l_key, l_value, l, z, dim,
                           cross ? "3 sign vectors of d_head padded to a power of two each" : "d_head normals each");
    return 0;
}

/* With distill.enabled, what distill_run would refuse after training: a model ANNA
 * cannot replace, more layers than a grid takes. */
static int cfg_distill_model(const Config *c, int n_layers, CfgProblem *p) {
    const CfgModel *m = &c->model;
    int lstm = m->type != MODEL_TRANSFORMER;
    if (lstm || m->attention.type != ATTN_SOFTMAX)
        return cfg_problem(p, "distill.enabled", lstm ? "model.type" : "model.attention.type",
                           "distill.enabled: ANNA replaces softmax attention, but %s is \"%s\" (distil a softmax "
                           "transformer, or set distill.enabled to false)", lstm ? "model.type" : "model.attention.type",
                           lstm ? cfg_model_names[m->type] : cfg_attn_names[m->attention.type]);
    if (m->attention.score != SCORE_UNIT_NORM)
        return cfg_problem(p, "model.attention.score", "distill.enabled",
                           "model.attention.score: distillation into ANNA (distill.enabled) needs \"unit_norm\" (the "
                           "softmax surrogate must compare unit-norm queries and keys, as the LSH hashes directions "
                           "only), but it is \"%s\"", cfg_score_names[m->attention.score]);
    if (c->task.type == TASK_FILE)
        return cfg_problem(p, "distill.valid_size", "task.type",
                           "distill.valid_size: task.type \"file\" has no generator to draw the distillation's "
                           "validation split from (distil a generated task, or set distill.enabled to false)");
    if (n_layers > DISTILL_MAX_LAYERS)
        return cfg_problem(p, "distill.layers", "model.n_layers",
                           "distill.layers \"%s\" selects %d layers (model.n_layers is %d), more than the %d one "
                           "distillation grid replaces: list at most %d, e.g. \"0..%d\"", c->distill.layers, n_layers,
                           m->n_layers, DISTILL_MAX_LAYERS, DISTILL_MAX_LAYERS, DISTILL_MAX_LAYERS - 1);
    return 0;
}

/* The largest ℓ and z of the fine-tuning cells (0 when none are listed). */
static void cfg_finetune_max(const AnnaCell *cells, int n, int *l, int *z) {
    *l = *z = 0;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < cells[k].n; i++) {
            if (cells[k].tables[i] > *l) *l = cells[k].tables[i];
            if (cells[k].funcs[i] > *z) *z = cells[k].funcs[i];
        }
}

/* The distill section: lists that parse for the model's layers, always (./train
 * distill RUN reads them too); with distill.enabled, everything distill_run needs,
 * so a run never trains to the end and then refuses to distil. */
static int cfg_distill_rules(const Config *c, CfgProblem *p) {
    const CfgModel *m = &c->model;
    const CfgDistill *d = &c->distill;
    char why[160];
    int list[DISTILL_MAX_VALUES], counts[DISTILL_MAX_LAYERS], n, n_cells = 0;
    if (strcmp(d->layers, "all") &&
        intlist_parse(d->layers, 0, m->n_layers - 1, list, DISTILL_MAX_VALUES, &n, why, sizeof why))
        return cfg_problem(p, "distill.layers", "model.n_layers", "distill.layers \"%s\": %s (layers are 0..%d, or all)",
                           d->layers, why, m->n_layers - 1);
    int n_layers = strcmp(d->layers, "all") ? n : m->n_layers, l_max = 0, z_max = 0;
    if (d->enabled && cfg_distill_model(c, n_layers, p)) return 1;
    if (n_layers > DISTILL_MAX_LAYERS) return 0;
    int lists[DISTILL_MAX_LAYERS * DISTILL_MAX_VALUES];
    if (intlist_parse_per(d->tables, n_layers, 1, 4096, lists, DISTILL_MAX_VALUES, counts, why, sizeof why))
        return cfg_problem(p, "distill.tables", "distill.layers", "distill.tables \"%s\": %s", d->tables, why);
    l_max = cfg_lists_max(lists, counts, n_layers);
    if (intlist_parse_per(d->funcs, n_layers, 1, 64, lists, DISTILL_MAX_VALUES, counts, why, sizeof why))
        return cfg_problem(p, "distill.funcs", "distill.layers", "distill.funcs \"%s\": %s", d->funcs, why);
    z_max = cfg_lists_max(lists, counts, n_layers);
    for (int i = 1; i < n_layers && d->same_funcs; i++)
        if (counts[i] != counts[0] || memcmp(lists + i * DISTILL_MAX_VALUES, lists, (size_t)counts[0] * sizeof *lists))
            return cfg_problem(p, "distill.same_funcs", "distill.funcs",
                               "distill.same_funcs needs the same z list for every layer, but distill.funcs is \"%s\"",
                               d->funcs);
    AnnaCell cells[FINETUNE_MAX_CELLS];
    if (strcmp(d->finetune_cells, "auto") &&
        finetune_parse_cells(d->finetune_cells, n_layers, cells, FINETUNE_MAX_CELLS, &n_cells, why, sizeof why))
        return cfg_problem(p, "distill.finetune_cells", "distill.layers", "distill.finetune_cells \"%s\": %s",
                           d->finetune_cells, why);
    if (d->last_dim && d->family != DISTILL_CROSSPOLYTOPE)
        return cfg_problem(p, "distill.last_dim", "distill.family",
                           "distill.last_dim (%d) applies to distill.family \"crosspolytope\" only, but the family is "
                           "\"%s\" (set distill.last_dim to 0)", d->last_dim, cfg_family_names[d->family]);
    if (d->family == DISTILL_CROSSPOLYTOPE && m->type == MODEL_TRANSFORMER && m->d_model % m->n_heads == 0) {
        int dim = m->d_model / m->n_heads, padded = 1 << (cfg_crosspolytope_bits(dim) - 1);
        if (d->last_dim > padded)
            return cfg_problem(p, "distill.last_dim", "model.d_model",
                               "distill.last_dim (%d) must be in [1, %d] (d_head = %d padded to a power of two), or 0 "
                               "for all %d coordinates", d->last_dim, padded, dim, padded);
    }
    if (m->type == MODEL_TRANSFORMER && m->d_model % m->n_heads == 0) {   /* the whole section, enabled or not */
        if (cfg_lsh_fits(c, l_max, z_max, "distill.tables", d->tables, "distill.funcs", d->funcs, p)) return 1;
        int fl = 0, fz = 0;
        cfg_finetune_max(cells, n_cells, &fl, &fz);
        if (fl && cfg_lsh_fits(c, fl, fz, "distill.finetune_cells", d->finetune_cells, "distill.finetune_cells",
                               d->finetune_cells, p))
            return 1;
    }
    return 0;
}

/* All cross-key rules, in one place.  Returns 1 and fills *p on the first broken
 * rule.  Settings that would be silently ignored count as broken: a researcher who
 * wrote them expected an effect. */
static int cfg_consistency(const Config *c, CfgProblem *p) {
    const CfgModel *m = &c->model;
    const CfgTrain *t = &c->train;
    char a[32], b[32];
    const CfgAttention *at = &m->attention;
    int transformer = m->type == MODEL_TRANSFORMER;
    if (transformer && m->d_model % m->n_heads)
        return cfg_problem(p, "model.d_model", "model.n_heads",
                           "model.d_model (%d) must be divisible by model.n_heads (%d)", m->d_model, m->n_heads);
    /* Next-token prediction with bidirectional attention would read the answer, and
     * right-padded variable lengths are only harmless when nothing looks ahead. */
    if (transformer && !at->causal && ((1u << c->task.type) & (COT | IDXL)))
        return cfg_problem(p, "model.attention.causal", "task.type",
                           "task.type \"%s\" needs model.attention.causal true (%s)", cfg_task_names[c->task.type],
                           c->task.type == TASK_INDEX_LOOKUP ? "examples of different lengths are right-padded"
                                                             : "it is next-token prediction");
    if (transformer && at->type == ATTN_SPARSE && !at->causal)
        return cfg_problem(p, "model.attention.causal", "model.attention.type",
                           "model.attention.type \"sparse\" is causal by definition (paper 004 eq. 6): "
                           "set model.attention.causal to true");
    if (transformer && at->type == ATTN_SPARSE && at->block > 0 && at->summary > at->block)
        return cfg_problem(p, "model.attention.summary", "model.attention.block",
                           "model.attention.summary (%d) must be <= model.attention.block (%d)",
                           at->summary, at->block);
    if (c->task.type == TASK_MATCH2 && c->task.modulus < 3)
        return cfg_problem(p, "task.modulus", "task.type",
                           "task.modulus must be >= 3 for task.type \"match2\", got %d", c->task.modulus);
    if (c->task.type == TASK_MATCH2 && c->task.train_size == 0)
        return cfg_problem(p, "task.train_size", "task.type",
                           "task.train_size must be >= 1 for task.type \"match2\" (its balanced set is fixed)");
    if (c->task.type == TASK_KHOP && c->task.min_hops > c->task.max_hops)
        return cfg_problem(p, "task.min_hops", "task.max_hops", "task.min_hops (%d) must be <= task.max_hops (%d)",
                           c->task.min_hops, c->task.max_hops);
    /* The test's hop-count token must be one training draws: a larger count has no
     * token id at all, a smaller one only an embedding that was never trained. */
    if (c->task.type == TASK_KHOP && c->task.test_hops != -1 &&
        (c->task.test_hops < c->task.min_hops || c->task.test_hops > c->task.max_hops))
        return cfg_problem(p, "task.test_hops", c->task.test_hops > c->task.max_hops ? "task.max_hops" : "task.min_hops",
                           "task.test_hops (%d) must be -1 or in [task.min_hops, task.max_hops] = [%d, %d] (a test "
                           "hop count the model never trained on has no learnt hop-count token)",
                           c->task.test_hops, c->task.min_hops, c->task.max_hops);
    if (c->task.type == TASK_INDEX_LOOKUP && c->task.min_len > c->task.seq_len)
        return cfg_problem(p, "task.min_len", "task.seq_len", "task.min_len (%d) must be <= task.seq_len (%d)",
                           c->task.min_len, c->task.seq_len);
    if (cfg_distill_rules(c, p)) return 1;
    if (t->warmup_steps > t->steps)
        return cfg_problem(p, "train.warmup_steps", "train.steps",
                           "train.warmup_steps (%d) must be <= train.steps (%d)", t->warmup_steps, t->steps);
    if (t->min_lr > t->lr)
        return cfg_problem(p, "train.min_lr", "train.lr", "train.min_lr (%s) must be <= train.lr (%s)",
                           cfg_fmt_float(t->min_lr, a, sizeof a), cfg_fmt_float(t->lr, b, sizeof b));
    if (t->schedule == SCHED_CONSTANT && t->warmup_steps > 0)
        return cfg_problem(p, "train.warmup_steps", "train.schedule",
                           "train.warmup_steps (%d) has no effect with train.schedule \"constant\" "
                           "(use \"warmup_linear\" or \"warmup_cosine\", or set it to 0)", t->warmup_steps);
    if (t->schedule == SCHED_CONSTANT && t->min_lr > 0)
        return cfg_problem(p, "train.min_lr", "train.schedule",
                           "train.min_lr (%s) has no effect with train.schedule \"constant\" "
                           "(use \"warmup_linear\" or \"warmup_cosine\", or set it to 0)",
                           cfg_fmt_float(t->min_lr, a, sizeof a));
    return 0;
}

/* ------------------------------------------------------------------------------
 * JSON syntax errors: where, and what
 *
 * cJSON only says *that* a document is malformed and roughly where it gave up.
 * When it fails, this small recognizer re-reads the text to find the first error
 * and say what was expected there ("expected ',' or '}' after the value of
 * \"d_model\", found '\"' (missing comma?)").  It runs on the error path only.
 * ---------------------------------------------------------------------------- */

typedef struct CfgLint {
    const char *text, *p, *end;
    const char *at;          /* the first error */
    char what[256];
} CfgLint;

static void cfg_line_col(const char *text, const char *at, int *line, int *col) {
    *line = 1, *col = 1;
    for (const char *p = text; p < at; p++) {
        if (*p == '\n') ++*line, *col = 1;
        else if (((unsigned char)*p & 0xC0) != 0x80) ++*col;   /* count UTF-8 characters */
    }
}

static int lint_fail(CfgLint *l, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int lint_fail(CfgLint *l, const char *at, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->what, sizeof l->what, fmt, ap);
    va_end(ap);
    l->at = at;
    return -1;
}

static void lint_ws(CfgLint *l) {
    while (l->p < l->end && strchr(" \t\r\n", *l->p)) l->p++;
}

static int is_word(char ch) { return isalnum((unsigned char)ch) || ch == '_'; }

/* What sits at `at`, for "found ...". */
static const char *lint_found(const CfgLint *l, const char *at, char *buf, size_t n) {
    if (at >= l->end) snprintf(buf, n, "the end of the file");
    else if (is_word(*at)) {
        int m = 0;
        while (at + m < l->end && is_word(at[m]) && m < 24) m++;
        snprintf(buf, n, "'%.*s'", m, at);
    } else if (*at == '\n' || *at == '\r') snprintf(buf, n, "the end of the line");
    else if (isprint((unsigned char)*at)) snprintf(buf, n, "'%c'", *at);
    else if ((unsigned char)*at >= 0xC0) {   /* a whole UTF-8 character */
        int m = 1;
        while (at + m < l->end && ((unsigned char)at[m] & 0xC0) == 0x80 && m < 4) m++;
        snprintf(buf, n, "'%.*s'", m, at);
    }
    else snprintf(buf, n, "byte 0x%02x", (unsigned char)*at);
    return buf;
}

static int lint_unclosed(CfgLint *l, const char *open) {
    int line, col;
    cfg_line_col(l->text, open, &line, &col);
    return lint_fail(l, l->end, "unexpected end of file: the '%c' at line %d, column %d is never closed",
                     *open, line, col);
}

static int lint_string(CfgLint *l) {
    const char *open = l->p++;
    while (l->p < l->end && *l->p != '\n') {
        char ch = *l->p;
        if (ch == '"') { l->p++; return 0; }
        if (ch == '\\') {
            if (l->p + 1 >= l->end || l->p[1] == '\n') break;
            if (!strchr("\"\\/bfnrtu", l->p[1]) || !isprint((unsigned char)l->p[1]))
                return lint_fail(l, l->p, "invalid escape '\\%c' in a string",
                                 isprint((unsigned char)l->p[1]) ? l->p[1] : '?');
            if (l->p[1] == 'u') {
                for (int i = 2; i < 6; i++)
                    if (l->p + i >= l->end || !isxdigit((unsigned char)l->p[i]))
                        return lint_fail(l, l->p, "invalid escape: \\u needs 4 hex digits");
                l->p += 4;
            }
            l->p++;
        }
        l->p++;
    }
    return lint_fail(l, open, "unterminated string (no closing '\"' on this line)");
}

static int lint_number(CfgLint *l) {
    const char *start = l->p;
    if (*l->p == '-') l->p++;
    int digits = 0;
    while (l->p < l->end && isdigit((unsigned char)*l->p)) l->p++, digits++;
    if (digits && l->p < l->end && *l->p == '.') {
        l->p++;
        while (l->p < l->end && isdigit((unsigned char)*l->p)) l->p++;
    }
    if (digits && l->p < l->end && (*l->p == 'e' || *l->p == 'E')) {
        l->p++;
        if (l->p < l->end && (*l->p == '+' || *l->p == '-')) l->p++;
        digits = 0;
        while (l->p < l->end && isdigit((unsigned char)*l->p)) l->p++, digits++;
    }
    if (!digits || (l->p < l->end && (is_word(*l->p) || *l->p == '.'))) {
        const char *e = l->p;
        while (e < l->end && (is_word(*e) || strchr(".+-", *e)) && e - start < 24) e++;
        return lint_fail(l, start, "invalid number '%.*s'", (int)(e - start), start);
    }
    return 0;
}

/* A value that starts with none of { [ " - 0-9: a literal, or a typical mistake. */
static int lint_word(CfgLint *l) {
    static const char *const lits[] = { "true", "false", "null", NULL };
    char word[32], found[64];
    int m = 0;
    while (l->p + m < l->end && is_word(l->p[m])) m++;
    snprintf(word, sizeof word, "%.*s", m, l->p);
    if (m && cfg_name_index(lits, word) >= 0) { l->p += m; return 0; }
    if (*l->p == '/') return lint_fail(l, l->p, "comments are not allowed in JSON");
    if (*l->p == '\'') return lint_fail(l, l->p, "strings need double quotes (\"...\"), found '''");
    if (!strcmp(word, "NaN") || !strcmp(word, "Infinity") || !strcmp(word, "inf"))
        return lint_fail(l, l->p, "NaN and Infinity are not valid JSON numbers");
    const char *hint = "";
    const char *lit = cfg_closest_name(lits, word);
    if (lit && cfg_distance(word, lit) == 0) hint = " (true, false and null are lowercase in JSON)";
    else if (m && isalpha((unsigned char)*l->p) && !lit) hint = " (strings need double quotes)";
    return lint_fail(l, l->p, "expected a value (object, array, string, number, true, false or null), found %s%s",
                     lint_found(l, l->p, found, sizeof found), hint);
}

static int lint_value(CfgLint *l, int depth);

static int lint_key(CfgLint *l, const char *comma, char *key, size_t n) {
    char found[64];
    if (*l->p != '"') {
        if (*l->p == '}' && comma) return lint_fail(l, comma, "trailing comma before '}' (JSON does not allow one)");
        if (*l->p == '/') return lint_fail(l, l->p, "comments are not allowed in JSON");
        return lint_fail(l, l->p, "expected a key in double quotes, found %s%s", lint_found(l, l->p, found, sizeof found),
                         (*l->p == '\'' || is_word(*l->p)) ? " (keys need double quotes)" : "");
    }
    const char *start = l->p + 1;
    if (lint_string(l)) return -1;
    snprintf(key, n, "%.*s", (int)(l->p - 1 - start), start);
    return 0;
}

static int lint_object(CfgLint *l, int depth) {
    const char *open = l->p++, *comma = NULL;
    char key[64], found[64];
    lint_ws(l);
    if (l->p < l->end && *l->p == '}') { l->p++; return 0; }
    for (;;) {
        lint_ws(l);
        if (l->p >= l->end) return lint_unclosed(l, open);
        if (lint_key(l, comma, key, sizeof key)) return -1;
        lint_ws(l);
        if (l->p >= l->end) return lint_unclosed(l, open);
        if (*l->p != ':')
            return lint_fail(l, l->p, "expected ':' after the key \"%s\", found %s", key,
                             lint_found(l, l->p, found, sizeof found));
        l->p++;
        if (lint_value(l, depth + 1)) return -1;
        lint_ws(l);
        if (l->p >= l->end) return lint_unclosed(l, open);
        if (*l->p == '}') { l->p++; return 0; }
        if (*l->p != ',')
            return lint_fail(l, l->p, "expected ',' or '}' after the value of \"%s\", found %s%s", key,
                             lint_found(l, l->p, found, sizeof found), *l->p == '"' ? " (missing comma?)" : "");
        comma = l->p++;
    }
}

static int lint_array(CfgLint *l, int depth) {
    const char *open = l->p++;
    char found[64];
    lint_ws(l);
    if (l->p < l->end && *l->p == ']') { l->p++; return 0; }
    for (;;) {
        if (lint_value(l, depth + 1)) return -1;
        lint_ws(l);
        if (l->p >= l->end) return lint_unclosed(l, open);
        if (*l->p == ']') { l->p++; return 0; }
        if (*l->p != ',')
            return lint_fail(l, l->p, "expected ',' or ']' after an array element, found %s",
                             lint_found(l, l->p, found, sizeof found));
        const char *comma = l->p++;
        lint_ws(l);
        if (l->p < l->end && *l->p == ']') return lint_fail(l, comma, "trailing comma before ']' (JSON does not allow one)");
    }
}

static int lint_value(CfgLint *l, int depth) {
    lint_ws(l);
    if (depth > 64) return lint_fail(l, l->p, "nested deeper than 64 levels");
    if (l->p >= l->end) return lint_fail(l, l->p, "unexpected end of file: expected a value");
    char ch = *l->p;
    if (ch == '{') return lint_object(l, depth);
    if (ch == '[') return lint_array(l, depth);
    if (ch == '"') return lint_string(l);
    if (ch == '-' || isdigit((unsigned char)ch)) return lint_number(l);
    return lint_word(l);
}

/* "src:L:C: what", then the line with a caret under column C:
 *
 *     configs/x.json:4:5: expected ',' or '}' after the value of "d_model", found '"' (missing comma?)
 *         4 |     "n_heads": 2
 *           |     ^
 */
static int cfg_fail_at(AlError *err, const char *src, const char *text, const char *end, const char *at,
                       const char *what) {
    enum { BEFORE = 40, WIDTH = 72 };
    if (at >= end) /* at end of file: point just after the last token, not at a blank line */
        while (at > text && strchr(" \t\r\n", at[-1])) at--;
    int line, col;
    cfg_line_col(text, at, &line, &col);
    const char *ls = at, *le = at;
    while (ls > text && ls[-1] != '\n') ls--;
    while (le < end && *le != '\n' && *le != '\r') le++;
    int line_chars, unused;
    cfg_line_col(ls, le, &unused, &line_chars);
    const char *from = ls;
    if (line_chars - 1 > WIDTH) /* a long line: show the part around the error */
        for (int chars = col - 1; chars > BEFORE; chars--)
            do from++; while (((unsigned char)*from & 0xC0) == 0x80);
    char shown[4 * WIDTH + 8], caret[4 * WIDTH + 8];
    size_t ns = 0, nc = 0;
    if (from > ls) memcpy(shown, "...", 3), memcpy(caret, "   ", 3), ns = nc = 3;
    int chars = 0;
    const char *q = from;
    /* Bytes are bounded too: invalid UTF-8 can have any number of continuation bytes. */
    for (; q < le && chars < WIDTH && ns < 3 + 4 * WIDTH; q++) {
        unsigned char ch = (unsigned char)*q;
        int starts_char = (ch & 0xC0) != 0x80;
        chars += starts_char;
        shown[ns++] = (ch < 0x20 && ch != '\t') || ch == 0x7f ? '?' : (char)ch;
        if (q < at && starts_char) caret[nc++] = ch == '\t' ? '\t' : ' ';
    }
    if (q < le) memcpy(shown + ns, "...", 3), ns += 3;
    shown[ns] = caret[nc] = 0;
    return al_fail(err, 2, "%s:%d:%d: %s\n%6d | %s\n       | %s^", src, line, col, what, line, shown, caret);
}

static int cfg_syntax_error(const char *text, const char *end, const char *cjson_at, const char *src,
                            AlError *err) {
    CfgLint l = { .text = text, .p = text, .end = end };
    if (lint_value(&l, 0) == 0) {
        /* The recognizer is happy but cJSON is not (e.g. a lone UTF-16 surrogate):
         * report cJSON's position rather than guessing. */
        return cfg_fail_at(err, src, text, end, cjson_at ? cjson_at : text, "invalid JSON");
    }
    return cfg_fail_at(err, src, text, end, l.at, l.what);
}

/* ------------------------------------------------------------------------------
 * Reading a document
 * ---------------------------------------------------------------------------- */

static const char *cfg_skip_ws(const char *p, const char *end) {
    while (p < end && strchr(" \t\r\n", *p)) p++;
    return p;
}

/* Parses `text` (len bytes, NUL-terminated) and applies it over *c, without the
 * cross-key rules (the caller runs them after any overrides).  With sweep_json, a
 * top-level "sweep" member is cut out first and returned as JSON text (malloc'ed;
 * NULL when there is none). */
static int cfg_read_text(Config *c, const char *text, size_t len, const char *src, char **sweep_json,
                         AlError *err) {
    const char *end = text + len, *nul = memchr(text, 0, len);
    if (nul) return cfg_fail_at(err, src, text, end, nul, "contains a NUL byte (is this a text file?)");
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) text += 3;   /* UTF-8 byte-order mark */
    if (cfg_skip_ws(text, end) == end)
        return al_fail(err, 2, "%s: file is empty (write {} to use every default)", src);

    const char *parse_end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &parse_end, 0);
    if (!root) return cfg_syntax_error(text, end, parse_end, src, err);
    int rc = 0;
    const char *extra = parse_end ? cfg_skip_ws(parse_end, end) : end;
    if (extra < end) {
        char what[128], found[64];
        CfgLint l = { .text = text, .p = extra, .end = end };
        snprintf(what, sizeof what, "unexpected %s after the end of the top-level %s%s",
                 lint_found(&l, extra, found, sizeof found), cJSON_IsObject(root) ? "object" : "value",
                 (*extra == '}' || *extra == ']') ? " (one too many?)" : "");
        rc = cfg_fail_at(err, src, text, end, extra, what);
    } else if (!cJSON_IsObject(root)) {
        char got[96];
        rc = al_fail(err, 2, "%s: the top level must be a JSON object {...}, got %s", src,
                     cfg_describe(root, got, sizeof got));
    } else {
        const cJSON *seen[CFG_NKEYS] = { 0 };
        cJSON *sweep = sweep_json ? cJSON_DetachItemFromObjectCaseSensitive(root, CFG_SWEEP_SECTION) : NULL;
        if (sweep && cJSON_GetObjectItemCaseSensitive(root, CFG_SWEEP_SECTION))
            rc = al_fail(err, 2, "%s: duplicate key '%s' (a JSON object must not repeat a key)", src, CFG_SWEEP_SECTION);
        if (sweep && !rc) *sweep_json = cJSON_PrintUnformatted(sweep);
        cJSON_Delete(sweep);
        if (!rc) rc = cfg_walk(root, "", seen, src, err);
        if (!rc) rc = cfg_apply_seen(c, seen, src, err);
    }
    cJSON_Delete(root);
    return rc;
}

static char *cfg_slurp(const char *path, size_t *len, AlError *err) {
    enum { LIMIT = 16 << 20 };
    FILE *f = al_open_regular(path, 2, err);   /* a FIFO or device is refused unread */
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = al_malloc(cap);
    for (;;) {
        if (n + 1 >= cap) buf = al_realloc(buf, cap *= 2);
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0 || n > LIMIT) break;
    }
    int failed = ferror(f), saved = errno;
    fclose(f);
    if (failed || n > LIMIT) {
        if (failed) al_fail(err, 2, "cannot read '%s': %s", path, strerror(saved));
        else al_fail(err, 2, "%s: larger than %d MiB; this is not a config file", path, LIMIT >> 20);
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* ------------------------------------------------------------------------------
 * --set key.path=value
 * ---------------------------------------------------------------------------- */

static void cfg_trim(const char *s, size_t n, char *out, size_t cap) {
    while (n && isspace((unsigned char)*s)) s++, n--;
    while (n && isspace((unsigned char)s[n - 1])) n--;
    snprintf(out, cap, "%.*s", (int)n, s);
}

/* Applies one override without the cross-key rules.  On success *key_out holds the
 * key path it set (for blaming it in a later consistency error). */
static int cfg_assign(Config *c, const char *assignment, char *key, size_t key_cap, AlError *err) {
    char src[CFG_SRC_MAX];
    snprintf(src, sizeof src, "--set %s", assignment);
    const char *eq = strchr(assignment, '=');
    if (!eq)
        return al_fail(err, 2, "%s: missing '=' (write --set key.path=value, e.g. --set train.lr=0.001)", src);
    cfg_trim(assignment, (size_t)(eq - assignment), key, key_cap);
    if (!*key) return al_fail(err, 2, "%s: missing the key path before '='", src);
    int i = cfg_find(key);
    if (i < 0) return cfg_unknown(key, src, err);

    /* The value is JSON when it parses as JSON (8, 1e-3, true, "text", {...}),
     * else a bare string (gelu_erf).  String keys always take the text as written,
     * so --set name=2024 names the run "2024". */
    size_t vlen = strlen(eq + 1);
    char *text = al_malloc(vlen + 1);
    cfg_trim(eq + 1, vlen, text, vlen + 1);
    cJSON *v = cJSON_ParseWithOpts(text, NULL, 1);
    if (!v || (cfg_keys[i].type == CFG_STRING && !cJSON_IsString(v))) {
        cJSON_Delete(v);
        v = cJSON_CreateString(text);
    }
    free(text);
    const cJSON *seen[CFG_NKEYS] = { 0 };
    int rc = cfg_visit(i, v, seen, src, err);
    if (!rc) rc = cfg_apply_seen(c, seen, src, err);
    cJSON_Delete(v);
    return rc;
}

/* ------------------------------------------------------------------------------
 * Public entry points
 * ---------------------------------------------------------------------------- */

void cfg_defaults(Config *c) {
    memset(c, 0, sizeof *c);
    for (int i = 0; i < CFG_NKEYS; i++) {
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

/* Does override key path `set` cover key `key` (equal, or an enclosing object)? */
static int cfg_covers(const char *set, const char *key) {
    size_t n = strlen(set);
    return !strncmp(set, key, n) && (key[n] == 0 || key[n] == '.');
}

int cfg_set_all(Config *c, const char *const *assignments, int n, const char *source, AlError *err) {
    Config tmp = *c;
    int rc = 0;
    char (*keys)[CFG_KEY_MAX] = al_calloc(n > 0 ? (size_t)n : 1, CFG_KEY_MAX);
    for (int i = 0; i < n && !rc; i++)
        rc = cfg_assign(&tmp, assignments[i], keys[i], CFG_KEY_MAX, err);
    CfgProblem p;
    if (!rc && cfg_consistency(&tmp, &p)) {
        /* Blame the last override that set one of the keys involved, else the source. */
        int blame = -1;
        for (int i = n - 1; i >= 0 && blame < 0; i--)
            for (int j = 0; p.keys[j]; j++)
                if (cfg_covers(keys[i], p.keys[j])) { blame = i; break; }
        if (blame >= 0) rc = al_fail(err, 2, "--set %.200s: %s", assignments[blame], p.msg);
        else rc = al_fail(err, 2, "%s: %s", source, p.msg);
    }
    free(keys);
    if (!rc) *c = tmp;
    return rc;
}

static int cfg_load_file(Config *c, const char *path, const char *const *overrides, int n_overrides,
                         char **sweep_json, AlError *err) {
    size_t len = 0;
    char *text = cfg_slurp(path, &len, err);
    if (!text) return err->code;
    Config tmp;
    cfg_defaults(&tmp);
    int rc = cfg_read_text(&tmp, text, len, path, sweep_json, err);
    free(text);
    if (!rc) rc = cfg_set_all(&tmp, overrides, n_overrides, path, err);
    if (!rc) *c = tmp;
    return rc;
}

int cfg_load(Config *c, const char *path, const char *const *overrides, int n_overrides, AlError *err) {
    return cfg_load_file(c, path, overrides, n_overrides, NULL, err);
}

int cfg_load_sweep(Config *c, const char *path, const char *const *overrides, int n_overrides,
                   char **sweep_json, AlError *err) {
    *sweep_json = NULL;
    int rc = cfg_load_file(c, path, overrides, n_overrides, sweep_json, err);
    if (rc) {
        free(*sweep_json);
        *sweep_json = NULL;
    }
    return rc;
}

int cfg_parse(Config *c, const char *json, const char *source, AlError *err) {
    Config tmp;
    cfg_defaults(&tmp);
    if (cfg_read_text(&tmp, json, strlen(json), source, NULL, err)) return err->code;
    CfgProblem p;
    if (cfg_consistency(&tmp, &p)) return al_fail(err, 2, "%s: %s", source, p.msg);
    *c = tmp;
    return 0;
}

int cfg_set(Config *c, const char *assignment, AlError *err) {
    Config tmp = *c;
    char key[CFG_KEY_MAX];
    if (cfg_assign(&tmp, assignment, key, sizeof key, err)) return err->code;
    CfgProblem p;
    if (cfg_consistency(&tmp, &p)) return al_fail(err, 2, "--set %.200s: %s", assignment, p.msg);
    *c = tmp;
    return 0;
}

/* ------------------------------------------------------------------------------
 * Printing: the effective config, the schema, differences
 * ---------------------------------------------------------------------------- */

static void cfg_print_string(StrBuf *b, const char *s) {
    strbuf_printf(b, "\"");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') strbuf_printf(b, "\\%c", ch);
        else if (ch < 0x20) strbuf_printf(b, "\\u%04x", ch);
        else strbuf_printf(b, "%c", ch);
    }
    strbuf_printf(b, "\"");
}

static void cfg_print_value(StrBuf *b, const Config *c, const CfgKey *k) {
    char num[32];
    const void *p = cfg_cslot(c, k);
    switch (k->type) {
    case CFG_OBJECT: break;
    case CFG_INT:    strbuf_printf(b, "%d", *(const int *)p); break;
    case CFG_U64:    strbuf_printf(b, "%llu", (unsigned long long)*(const uint64_t *)p); break;
    case CFG_BOOL:   strbuf_printf(b, "%s", *(const int *)p ? "true" : "false"); break;
    case CFG_STRING: cfg_print_string(b, p); break;
    case CFG_FLOAT: {
        float f = *(const float *)p;   /* non-finite values only come from bypassing the loader */
        strbuf_printf(b, "%s", isfinite(f) ? cfg_fmt_float(f, num, sizeof num) : "null");
        break;
    }
    case CFG_ENUM: {
        int v = *(const int *)p;
        int n = 0;
        while (k->names[n]) n++;
        AL_ASSERT(v >= 0 && v < n);
        cfg_print_string(b, k->names[v]);
        break;
    }
    }
}

static void cfg_print_object(StrBuf *b, const Config *c, const char *prefix, int depth) {
    int first = 1;
    strbuf_printf(b, "{");
    for (int i = 0; i < CFG_NKEYS; i++) {
        const CfgKey *k = &cfg_keys[i];
        if (!cfg_is_child(k->path, prefix) || !cfg_applies(c, k)) continue;
        strbuf_printf(b, "%s\n%*s\"%s\": ", first ? "" : ",", 2 * (depth + 1), "", cfg_leaf(k->path));
        first = 0;
        if (k->type == CFG_OBJECT) cfg_print_object(b, c, k->path, depth + 1);
        else cfg_print_value(b, c, k);
    }
    if (first) strbuf_printf(b, "}");
    else strbuf_printf(b, "\n%*s}", 2 * depth, "");
}

char *cfg_to_json(const Config *c) {
    StrBuf b = { 0 };
    cfg_print_object(&b, c, "", 0);
    strbuf_printf(&b, "\n");
    return b.s;
}

char *cfg_help(void) {
    StrBuf b = { 0 };
    Config def;
    cfg_defaults(&def);
    for (int i = 0; i < CFG_NKEYS; i++) {
        const CfgKey *k = &cfg_keys[i];
        char type[192], range[64], names[160];
        if (k->type == CFG_OBJECT) {
            strbuf_printf(&b, "%s%s: %s\n", i ? "\n" : "", k->path, k->doc);
            continue;
        }
        if (k->names) snprintf(type, sizeof type, "one of %s", cfg_choices_text(k->names, names, sizeof names));
        else if (k->type == CFG_BOOL) snprintf(type, sizeof type, "true | false");
        else if (k->type == CFG_STRING) snprintf(type, sizeof type, "string of 1-%zu characters%s", k->size - 1,
                                                 k->ident ? " A-Z a-z 0-9 . _ - +" : "");
        else snprintf(type, sizeof type, "%s %s", k->type == CFG_FLOAT ? "number" : k->type == CFG_STRING ? "string" : "integer",
                      cfg_range_text(k, range, sizeof range));
        StrBuf dv = { 0 };
        cfg_print_value(&dv, &def, k);
        strbuf_printf(&b, "  %-26s %s\n      %s (default %s)", k->path, k->doc, type, dv.s);
        free(dv.s);
        if (k->when) {
            const CfgKey *d = &cfg_keys[cfg_find(k->when)];
            const char *sep = "; only for ";
            for (int j = 0; d->names[j]; j++) {
                if (!((k->when_mask >> j) & 1u)) continue;
                strbuf_printf(&b, "%s%s \"%s\"", sep, d->path, d->names[j]);
                sep = ", ";
            }
        }
        strbuf_printf(&b, "\n");
    }
    return b.s;
}

const char *cfg_first_difference(const Config *a, const Config *b) {
    for (int i = 0; i < CFG_NKEYS; i++) {
        const CfgKey *k = &cfg_keys[i];
        if (k->type == CFG_OBJECT || !cfg_applies(a, k)) continue;
        const void *pa = cfg_cslot(a, k), *pb = cfg_cslot(b, k);
        int same = k->type == CFG_STRING ? !strncmp(pa, pb, k->size) : !memcmp(pa, pb, k->size);
        if (!same) return k->path;
    }
    return NULL;
}
