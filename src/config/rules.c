/* rules.c — pass 3 of reading (schema.h): the rules that involve several keys,
 * checked once after a file and all its --set overrides.  Each rule names the
 * keys it involves, so a broken one is blamed on the override that touched one of
 * them.  The distill section is checked in full here, lists included, so that a
 * run never trains to the end and then refuses to distil. */
#include "schema.h"
#include "attnlab/config/distill_cells.h"
#include "attnlab/nn/model.h"
#include "attnlab/util/intlist.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------------
 * Pass 3: rules that involve several keys
 * ---------------------------------------------------------------------------- */

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

/* distill.tables and distill.funcs for n_layers layers (their largest ℓ and z
 * into *l_max, *z_max), and distill.same_funcs's one z list. */
static int cfg_distill_lists(const CfgDistill *d, int n_layers, int *l_max, int *z_max, CfgProblem *p) {
    char why[160];
    int counts[DISTILL_MAX_LAYERS], lists[DISTILL_MAX_LAYERS * DISTILL_MAX_VALUES];
    if (intlist_parse_per(d->tables, n_layers, 1, 4096, lists, DISTILL_MAX_VALUES, counts, why, sizeof why))
        return cfg_problem(p, "distill.tables", "distill.layers", "distill.tables \"%s\": %s", d->tables, why);
    *l_max = cfg_lists_max(lists, counts, n_layers);
    if (intlist_parse_per(d->funcs, n_layers, 1, 64, lists, DISTILL_MAX_VALUES, counts, why, sizeof why))
        return cfg_problem(p, "distill.funcs", "distill.layers", "distill.funcs \"%s\": %s", d->funcs, why);
    *z_max = cfg_lists_max(lists, counts, n_layers);
    for (int i = 1; i < n_layers && d->same_funcs; i++)
        if (counts[i] != counts[0] || memcmp(lists + i * DISTILL_MAX_VALUES, lists, (size_t)counts[0] * sizeof *lists))
            return cfg_problem(p, "distill.same_funcs", "distill.funcs",
                               "distill.same_funcs needs the same z list for every layer, but distill.funcs is \"%s\"",
                               d->funcs);
    return 0;
}

/* distill.last_dim: cross-polytope only, and at most d_head padded to a power of two. */
static int cfg_distill_last_dim(const Config *c, CfgProblem *p) {
    const CfgModel *m = &c->model;
    const CfgDistill *d = &c->distill;
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
    return 0;
}

/* The distill section: lists that parse for the model's layers, always (./train
 * distill RUN reads them too); with distill.enabled, everything distill_run needs,
 * so a run never trains to the end and then refuses to distil. */
static int cfg_distill_rules(const Config *c, CfgProblem *p) {
    const CfgModel *m = &c->model;
    const CfgDistill *d = &c->distill;
    char why[160];
    int list[DISTILL_MAX_VALUES], n, n_cells = 0, l_max = 0, z_max = 0;
    if (strcmp(d->layers, "all") &&
        intlist_parse(d->layers, 0, m->n_layers - 1, list, DISTILL_MAX_VALUES, &n, why, sizeof why))
        return cfg_problem(p, "distill.layers", "model.n_layers", "distill.layers \"%s\": %s (layers are 0..%d, or all)",
                           d->layers, why, m->n_layers - 1);
    int n_layers = strcmp(d->layers, "all") ? n : m->n_layers;
    if (d->enabled && cfg_distill_model(c, n_layers, p)) return 1;
    if (n_layers > DISTILL_MAX_LAYERS) return 0;
    if (cfg_distill_lists(d, n_layers, &l_max, &z_max, p)) return 1;
    AnnaCell cells[FINETUNE_MAX_CELLS];
    if (strcmp(d->finetune_cells, "auto") &&
        finetune_parse_cells(d->finetune_cells, n_layers, cells, FINETUNE_MAX_CELLS, &n_cells, why, sizeof why))
        return cfg_problem(p, "distill.finetune_cells", "distill.layers", "distill.finetune_cells \"%s\": %s",
                           d->finetune_cells, why);
    if (cfg_distill_last_dim(c, p)) return 1;
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

/* RetNet (heads divide d_model, checked before): each head's key width is even (retention turns
 * q and k in pairs of coordinates, ops_retnet.c). */
static int cfg_retnet_rules(const CfgModel *m, CfgProblem *p) {
    if ((m->d_model / m->n_heads) % 2)
        return cfg_problem(p, "model.d_model", "model.n_heads",
                           "model.type \"retnet\" needs an even head width model.d_model / model.n_heads, got %d / %d "
                           "= %d (retention rotates q and k in pairs of coordinates)",
                           m->d_model, m->n_heads, m->d_model / m->n_heads);
    return 0;
}

/* The model section alone, and what the task asks of it. */
static int cfg_model_rules(const Config *c, CfgProblem *p) {
    const CfgModel *m = &c->model;
    const CfgAttention *at = &m->attention;
    CfgTaskType task = c->task.type;
    char lo[32], hi[32];
    if (m->type == MODEL_DSS && m->dss.dt_min > m->dss.dt_max)
        return cfg_problem(p, "model.dss.dt_min", "model.dss.dt_max",
                           "model.dss.dt_min (%s) must be <= model.dss.dt_max (%s)",
                           cfg_fmt_float(m->dss.dt_min, lo, sizeof lo), cfg_fmt_float(m->dss.dt_max, hi, sizeof hi));
    if (m->type != MODEL_TRANSFORMER && m->type != MODEL_RETNET) return 0;
    if (m->d_model % m->n_heads)
        return cfg_problem(p, "model.d_model", "model.n_heads",
                           "model.d_model (%d) must be divisible by model.n_heads (%d)", m->d_model, m->n_heads);
    if (m->type == MODEL_RETNET) return cfg_retnet_rules(m, p);
    /* Next-token prediction with bidirectional attention would read the answer, and
     * right-padded variable lengths are only harmless when nothing looks ahead. */
    int padded = task == TASK_INDEX_LOOKUP || task == TASK_EQ_RANDOM || task == TASK_EQ_ONE;
    if (!at->causal && (task == TASK_ARITH || task == TASK_LIS || task == TASK_ED || task == TASK_EQ_NCP || padded))
        return cfg_problem(p, "model.attention.causal", "task.type",
                           "task.type \"%s\" needs model.attention.causal true (%s)", cfg_task_names[task],
                           padded ? "examples of different lengths are right-padded"
                                  : task == TASK_EQ_NCP ? "it is next-character prediction"
                                                        : "it is next-token prediction");
    if (at->type == ATTN_SPARSE && !at->causal)
        return cfg_problem(p, "model.attention.causal", "model.attention.type",
                           "model.attention.type \"sparse\" is causal by definition (paper 004 eq. 6): "
                           "set model.attention.causal to true");
    if (at->type == ATTN_SPARSE && at->block > 0 && at->summary > at->block)
        return cfg_problem(p, "model.attention.summary", "model.attention.block",
                           "model.attention.summary (%d) must be <= model.attention.block (%d)",
                           at->summary, at->block);
    return 0;
}

static int cfg_task_rules(const CfgTask *t, CfgProblem *p) {
    if (t->type == TASK_MATCH2 && t->modulus < 3)
        return cfg_problem(p, "task.modulus", "task.type",
                           "task.modulus must be >= 3 for task.type \"match2\", got %d", t->modulus);
    if (t->type == TASK_MATCH2 && t->train_size == 0)
        return cfg_problem(p, "task.train_size", "task.type",
                           "task.train_size must be >= 1 for task.type \"match2\" (its balanced set is fixed)");
    if (t->type == TASK_KHOP && t->min_hops > t->max_hops)
        return cfg_problem(p, "task.min_hops", "task.max_hops", "task.min_hops (%d) must be <= task.max_hops (%d)",
                           t->min_hops, t->max_hops);
    /* The test's hop-count token must be one training draws: a larger count has no
     * token id at all, a smaller one only an embedding that was never trained. */
    if (t->type == TASK_KHOP && t->test_hops != -1 && (t->test_hops < t->min_hops || t->test_hops > t->max_hops))
        return cfg_problem(p, "task.test_hops", t->test_hops > t->max_hops ? "task.max_hops" : "task.min_hops",
                           "task.test_hops (%d) must be -1 or in [task.min_hops, task.max_hops] = [%d, %d] (a test "
                           "hop count the model never trained on has no learnt hop-count token)",
                           t->test_hops, t->min_hops, t->max_hops);
    if (t->type == TASK_ED && t->local && t->direct)
        return cfg_problem(p, "task.local", "task.direct",
                           "task.local restates the compared letters in every cell of the chain of thought, which "
                           "task.direct leaves out (set one of them to false)");
    if (t->type == TASK_INDEX_LOOKUP && t->min_len > t->seq_len)
        return cfg_problem(p, "task.min_len", "task.seq_len", "task.min_len (%d) must be <= task.seq_len (%d)",
                           t->min_len, t->seq_len);
    return 0;
}

/* A key of the decayed schedules set under train.schedule "constant", which ignores it. */
static int cfg_unused_by_constant(CfgProblem *p, const char *key, const char *value) {
    return cfg_problem(p, key, "train.schedule",
                       "%s (%s) has no effect with train.schedule \"constant\" "
                       "(use \"warmup_linear\" or \"warmup_cosine\", or set it to 0)", key, value);
}

static int cfg_train_rules(const CfgTrain *t, CfgProblem *p) {
    char a[32], b[32];
    if (t->warmup_steps > t->steps)
        return cfg_problem(p, "train.warmup_steps", "train.steps",
                           "train.warmup_steps (%d) must be <= train.steps (%d)", t->warmup_steps, t->steps);
    if (t->min_lr > t->lr)
        return cfg_problem(p, "train.min_lr", "train.lr", "train.min_lr (%s) must be <= train.lr (%s)",
                           cfg_fmt_float(t->min_lr, a, sizeof a), cfg_fmt_float(t->lr, b, sizeof b));
    if (t->schedule == SCHED_CONSTANT && t->warmup_steps > 0) {
        snprintf(a, sizeof a, "%d", t->warmup_steps);
        return cfg_unused_by_constant(p, "train.warmup_steps", a);
    }
    if (t->decay_steps > 0 && t->decay_steps < t->warmup_steps)
        return cfg_problem(p, "train.decay_steps", "train.warmup_steps",
                           "train.decay_steps (%d) must be 0 or >= train.warmup_steps (%d)", t->decay_steps,
                           t->warmup_steps);
    if (t->schedule == SCHED_CONSTANT && t->decay_steps > 0) {
        snprintf(a, sizeof a, "%d", t->decay_steps);
        return cfg_unused_by_constant(p, "train.decay_steps", a);
    }
    if (t->schedule == SCHED_CONSTANT && t->min_lr > 0)
        return cfg_unused_by_constant(p, "train.min_lr", cfg_fmt_float(t->min_lr, a, sizeof a));
    return 0;
}

/* Length groups cut a row after its last scored position: only a causal model's
 * earlier outputs are the same without the rest, and dropout's masks follow a row's
 * place in the batch, which the groups change. */
static int cfg_length_group_rules(const Config *c, CfgProblem *p) {
    if (c->train.length_groups == 1) return 0;
    char a[32];
    if (c->model.dropout > 0)
        return cfg_problem(p, "train.length_groups", "model.dropout",
                           "train.length_groups (%d) needs model.dropout 0, got %s (the groups reorder the rows, "
                           "whose places draw the dropout masks)", c->train.length_groups,
                           cfg_fmt_float(c->model.dropout, a, sizeof a));
    if (!model_is_causal(&c->model))
        return cfg_problem(p, "train.length_groups", "model.attention.causal",
                           "train.length_groups (%d) needs a causal model (a bidirectional one reads the padding "
                           "the groups cut): set model.attention.causal to true, or train.length_groups to 1",
                           c->train.length_groups);
    return 0;
}

/* All cross-key rules, in this order.  Settings that would be silently ignored
 * count as broken: a researcher who wrote them expected an effect. */
int cfg_consistency(const Config *c, CfgProblem *p) {
    return cfg_model_rules(c, p) || cfg_task_rules(&c->task, p) || cfg_distill_rules(c, p) ||
           cfg_train_rules(&c->train, p) || cfg_length_group_rules(c, p);
}
