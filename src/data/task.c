/* task.c — see task.h. */
#include "attnlab/data/task.h"
#include "attnlab/data/jsonl.h"
#include "attnlab/data/match2.h"
#include "attnlab/data/seqset.h"
#include "attnlab/nn/model.h"
#include "attnlab/util/fsutil.h"

#include <stdio.h>
#include <string.h>

/* ---- adapters: each task's sampler behind TaskGen.sample ----------------------------- */

static void khop_task_sample(const TaskGen *g, Rng *rng, TaskSplit split, Example *ex) {
    const KhopTask *k = g->params;
    khop_sample(&k->p, rng, split == SPLIT_TEST ? k->test_hops : -1, ex);
}

static int khop_generator(const CfgTask *t, TaskData *td, AlError *err) {
    KhopTask *k = &td->params.khop;
    k->p = (KhopParams){ t->alphabet, t->seq_len, t->min_hops, t->max_hops, t->score_first };
    k->test_hops = t->test_hops;
    if (khop_check(&k->p, err)) return err->code;
    /* khop_sample asserts it: a test hop count outside training has no hop token
     * (above max_hops) or an untrained one (below min_hops). */
    if (t->test_hops != -1 && (t->test_hops < t->min_hops || t->test_hops > t->max_hops))
        return al_fail(err, 2, "khop: test_hops %d must be -1 or in [min_hops, max_hops] = [%d, %d]", t->test_hops,
                       t->min_hops, t->max_hops);
    TaskGen *g = &td->gen;
    *g = (TaskGen){ .name = "khop", .vocab_size = khop_vocab_size(&k->p), .n_classes = khop_n_classes(&k->p),
                    .max_len = khop_max_len(&k->p), .sample = khop_task_sample, .params = k };
    /* One metrics group per hop count: error per hop is the figure the papers report
     * (hop counts past the table share no group and are only in the totals). */
    static const char *const HOPS[TASKGEN_MAX_GROUPS] = {
        "hops_0", "hops_1", "hops_2", "hops_3", "hops_4", "hops_5", "hops_6", "hops_7",
        "hops_8", "hops_9", "hops_10", "hops_11", "hops_12", "hops_13", "hops_14", "hops_15" };
    int top = t->max_hops > t->test_hops ? t->max_hops : t->test_hops;
    g->n_groups = top < TASKGEN_MAX_GROUPS ? top + 1 : 0;
    for (int h = 0; h < g->n_groups; h++) g->group_names[h] = HOPS[h];
    return 0;
}

static void idx_task_sample(const TaskGen *g, Rng *rng, TaskSplit split, Example *ex) {
    const IdxParams *p = g->params;
    idx_sample(p, rng, split == SPLIT_TEST ? p->max_len : 0, ex);   /* tests at length exactly N */
}

static int idx_generator(const CfgTask *t, TaskData *td, AlError *err) {
    IdxParams *p = &td->params.idx;
    *p = (IdxParams){ t->alphabet, t->seq_len, t->min_len };
    if (idx_check(p, err)) return err->code;
    td->gen = (TaskGen){ .name = "index_lookup", .vocab_size = idx_vocab_size(p), .n_classes = idx_n_classes(p),
                         .max_len = idx_max_len(p), .sample = idx_task_sample, .params = p };
    return 0;
}

/* Chain-of-thought tasks share one shape: language modelling over the whole
 * vocabulary, deduplicated by the prompt (a test problem never appears in training,
 * even with another chain of thought), final answers read by the task's extractor. */
#define COT_ADAPTER(NAME, PARAMS, TRAIN_SAMPLE)                                                      \
    static void NAME##_task_sample(const TaskGen *g, Rng *rng, TaskSplit split, Example *ex) {      \
        if (split == SPLIT_TRAIN) TRAIN_SAMPLE(g->params, rng, ex);                                  \
        else NAME##_sample(g->params, rng, ex);                                                      \
    }                                                                                                \
    static int NAME##_task_answer(const TaskGen *g, const int *tokens, int len, int *start, int *alen) { \
        return NAME##_extract_answer(g->params, tokens, len, start, alen);                           \
    }                                                                                                \
    static const char *NAME##_task_token_name(const TaskGen *g, int id) {                            \
        return NAME##_token_name(g->params, id);                                                     \
    }                                                                                                \
    static void NAME##_task_gen(TaskGen *g, const PARAMS *p, int pad, int eos) {                     \
        *g = (TaskGen){ .name = #NAME, .vocab_size = NAME##_vocab_size(p), .n_classes = NAME##_vocab_size(p), \
                        .max_len = NAME##_max_len(p), .pad_id = pad, .key_is_prompt = 1, .eos_id = eos, \
                        .sample = NAME##_task_sample, .extract_answer = NAME##_task_answer,           \
                        .token_name = NAME##_task_token_name, .params = p };                         \
    }
COT_ADAPTER(arith, ArithParams, arith_sample_train)   /* task.under: shorter training expressions */
COT_ADAPTER(lis, LisParams, lis_sample)
COT_ADAPTER(ed, EdParams, ed_sample)

static int cot_generator(const CfgTask *t, TaskData *td, AlError *err) {
    switch (t->type) {
    case TASK_ARITH:
        td->params.arith = (ArithParams){ t->n_ops, t->modulus, t->direct, t->under };
        if (arith_check(&td->params.arith, err)) return err->code;
        arith_task_gen(&td->gen, &td->params.arith, ARITH_PAD, ARITH_EOS);
        return 0;
    case TASK_LIS:
        td->params.lis = (LisParams){ t->length, t->number_range, t->direct };
        if (lis_check(&td->params.lis, err)) return err->code;
        lis_task_gen(&td->gen, &td->params.lis, LIS_PAD, LIS_EOS);
        return 0;
    case TASK_ED:
        td->params.ed = (EdParams){ t->length, t->letters, t->number_range, t->direct, t->uniform_costs, t->local };
        if (ed_check(&td->params.ed, err)) return err->code;
        ed_task_gen(&td->gen, &td->params.ed, ED_PAD, ED_EOS);
        if (t->local) td->gen.name = "ed_local";   /* docs/design.md, decision 14 */
        return 0;
    default:
        return al_fail(err, 2, "task.type %d is not a chain-of-thought task", (int)t->type);
    }
}

/* Tasks whose sampler draws every split alike (the test set is kept apart by
 * deduplication) and which are scored per position over their own classes: the
 * adapter and the TaskGen from the task's check, sizes and sampler. */
#define PLAIN_ADAPTER(NAME, TASK_NAME, PARAMS)                                                        \
    static void NAME##_task_sample(const TaskGen *g, Rng *rng, TaskSplit split, Example *ex) {      \
        (void)split;                                                                                 \
        NAME##_sample(g->params, rng, ex);                                                           \
    }                                                                                                \
    static int NAME##_task_gen(TaskGen *g, const PARAMS *p, AlError *err) {                          \
        if (NAME##_check(p, err)) return err->code;                                                  \
        *g = (TaskGen){ .name = TASK_NAME, .vocab_size = NAME##_vocab_size(p),                       \
                        .n_classes = NAME##_n_classes(p), .max_len = NAME##_max_len(p),              \
                        .sample = NAME##_task_sample, .params = p };                                 \
        return 0;                                                                                    \
    }
PLAIN_ADAPTER(dyck, "dyck", DyckParams)
PLAIN_ADAPTER(ar, "assoc_recall", ArParams)

static int dyck_generator(const CfgTask *t, TaskData *td, AlError *err) {
    td->params.dyck = (DyckParams){ t->seq_len, t->depth, t->types };
    if (dyck_task_gen(&td->gen, &td->params.dyck, err)) return err->code;
    /* Groups: positives, negatives with a broken depth profile, and negatives whose
     * profile is valid (only bracket types wrong: these need real matching). */
    TaskGen *g = &td->gen;
    g->n_groups = 3;
    g->group_names[DYCK_GROUP_POSITIVE] = "positive";
    g->group_names[DYCK_GROUP_PROFILE] = "negative_profile";
    g->group_names[DYCK_GROUP_TYPE_ONLY] = "negative_type_only";
    return 0;
}

/* String equality (paper 003, App. H.2): eq_random, eq_one, eq_ncp.  Training
 * draws a length from the even set, tests use length exactly N. */
static void eq_task_sample(const TaskGen *g, Rng *rng, TaskSplit split, Example *ex) {
    const EqParams *p = g->params;
    eq_sample(p, rng, split == SPLIT_TEST ? p->seq_len : 0, ex);
}

static int eq_generator(const CfgTask *t, TaskData *td, AlError *err) {
    EqParams *p = &td->params.eq;
    EqKind kind = t->type == TASK_EQ_RANDOM ? EQ_RANDOM : t->type == TASK_EQ_ONE ? EQ_ONE : EQ_NCP;
    *p = (EqParams){ kind, t->seq_len, kind == EQ_RANDOM ? 2 : t->symbols };
    if (eq_check(p, err)) return err->code;
    TaskGen *g = &td->gen;
    *g = (TaskGen){ .name = eq_name(kind), .vocab_size = eq_vocab_size(p), .n_classes = eq_n_classes(p),
                    .max_len = eq_max_len(p), .multilabel = eq_multilabel(p), .sample = eq_task_sample,
                    .params = p };
    if (kind != EQ_NCP) {   /* accuracy on equal and unequal pairs apart */
        g->n_groups = 2;
        g->group_names[EQ_GROUP_EQUAL] = "equal";
        g->group_names[EQ_GROUP_UNEQUAL] = "unequal";
    }
    return 0;
}

static int ar_generator(const CfgTask *t, TaskData *td, AlError *err) {
    td->params.ar = (ArParams){ t->seq_len, t->keys };
    return ar_task_gen(&td->gen, &td->params.ar, err);
}

/* The generator of a generated task (every type but match2 and file). */
static int task_generator(const TaskSpec *s, TaskData *td, AlError *err) {
    switch (s->task.type) {
    case TASK_KHOP: return khop_generator(&s->task, td, err);
    case TASK_INDEX_LOOKUP: return idx_generator(&s->task, td, err);
    case TASK_ARITH: case TASK_LIS: case TASK_ED: return cot_generator(&s->task, td, err);
    case TASK_DYCK: return dyck_generator(&s->task, td, err);
    case TASK_ASSOC_RECALL: return ar_generator(&s->task, td, err);
    case TASK_EQ_RANDOM: case TASK_EQ_ONE: case TASK_EQ_NCP: return eq_generator(&s->task, td, err);
    case TASK_MATCH2: case TASK_FILE: break;
    }
    return al_fail(err, 2, "task.type %d has no generator", (int)s->task.type);
}

static int build_match2(const TaskSpec *s, TaskData *td, AlError *err) {
    const CfgTask *t = &s->task;
    Rng train_rng = rng_stream(s->seed, 0x747261696e /* "train" */);
    Rng test_rng = rng_stream(s->seed, 0x74657374 /* "test" */);
    Match2Stats tr, te;
    if (match2_generate(&td->train, t->train_size, t->seq_len, t->modulus, &train_rng, NULL, &tr, err))
        return err->code;
    SeqSet seen;
    seqset_init(&seen, t->seq_len, td->train.n);
    seqset_add_rows(&seen, td->train.tokens, td->train.n);
    int rc = match2_generate(&td->test, s->test_size, t->seq_len, t->modulus, &test_rng, &seen, &te, err);
    seqset_free(&seen);
    if (rc) return rc;
    td->n_distinct_train = tr.n_distinct;
    snprintf(td->summary, sizeof td->summary,
             "match2 N=%d M=%d: %d train sequences (%d distinct, %d permuted top-ups, %ld draws), "
             "%d test sequences disjoint from train",
             t->seq_len, t->modulus, td->train.n, tr.n_distinct, tr.n_topped_up, (long)tr.draws,
             td->test.n);
    return 0;
}

/* Datasets a user brings (data/README.md): both files share one vocabulary. */
static int build_file(const TaskSpec *s, TaskData *td, AlError *err) {
    JsonlOptions opt = {0};
    JsonlStats st[2];
    if (jsonl_read_pair(s->task.train_path, s->task.test_path, &opt, &td->train, &td->test, st, err))
        return err->code;
    td->n_distinct_train = dataset_count_distinct(&td->train);
    al_msgf(td->summary, sizeof td->summary, "file: %d training rows (%d distinct) from %s, %d test rows from %s, "
             "vocabulary %d, %d classes", td->train.n, td->n_distinct_train, s->task.train_path, td->test.n,
             s->task.test_path, td->train.vocab_size, td->train.n_classes);
    return 0;
}

/* A generated task: a fixed training set of distinct examples (train_size > 0) or
 * streaming, and a test set of distinct examples disjoint from the training set. */
static int build_generated(const TaskSpec *s, TaskData *td, AlError *err) {
    const TaskGen *g = &td->gen;
    Rng train_rng = rng_stream(s->seed, 0x747261696e /* "train" */);
    Rng test_rng = rng_stream(s->seed, 0x74657374 /* "test" */);
    SeqSet keys;
    seqset_init(&keys, g->max_len, s->task.train_size);
    int rc = 0;
    td->streaming = s->task.train_size == 0;
    if (!td->streaming)
        rc = taskgen_dataset(g, SPLIT_TRAIN, s->task.train_size, &train_rng, NULL, &keys, &td->train, err);
    if (!rc) rc = taskgen_dataset(g, SPLIT_TEST, s->test_size, &test_rng, td->streaming ? NULL : &keys,
                                  NULL, &td->test, err);
    seqset_free(&keys);
    if (rc) return rc;
    td->n_distinct_train = td->train.n;
    if (td->streaming)
        snprintf(td->summary, sizeof td->summary, "%s: fresh training batches every step (streaming), "
                 "%d test examples", g->name, td->test.n);
    else
        snprintf(td->summary, sizeof td->summary, "%s: %d distinct training examples, %d test examples "
                 "disjoint from them", g->name, td->train.n, td->test.n);
    return 0;
}

/* The generators name their own parameters ("lis: length 2 must be in [3, 2048]");
 * users wrote config keys.  First match of the message's start wins. */
static const struct { const char *start, *key; } PARAM_KEYS[] = {
    { "ed: length", "task.length" }, { "ed: using", "task.letters" }, { "ed: num_range", "task.number_range" },
    { "lis: length", "task.length" }, { "lis: number_range", "task.number_range" },
    { "arith: n_ops", "task.n_ops" }, { "arith: modulus", "task.modulus" },
    { "dyck: seq_len", "task.seq_len" }, { "dyck: depth", "task.depth" }, { "dyck: types", "task.types" },
    { "index_lookup: alphabet", "task.alphabet" }, { "index_lookup: max_len", "task.seq_len" },
    { "index_lookup: min_len", "task.min_len" },
    { "assoc_recall: seq_len", "task.seq_len" }, { "assoc_recall: keys", "task.keys" },
    { "khop: alphabet", "task.alphabet" }, { "khop: seq_len", "task.seq_len" },
    { "khop: min_hops", "task.min_hops" }, { "khop: max_hops", "task.max_hops" },
    { "khop: test_hops", "task.test_hops" }, { "match2: ", "task.seq_len, task.modulus" },
    { "eq_random: seq_len", "task.seq_len" }, { "eq_one: seq_len", "task.seq_len" },
    { "eq_ncp: seq_len", "task.seq_len" }, { "eq_one: symbols", "task.symbols" },
    { "eq_ncp: symbols", "task.symbols" },
};

/* "SOURCE: KEY: " (or "KEY: " without a source) before err's message. */
static void name_key(AlError *err, const char *source, const char *key) {
    if (source && key) al_error_prefix(err, "%s: %s", source, key);
    else if (source || key) al_error_prefix(err, "%s", source ? source : key);
}

/* A generator's message names its own parameter ("lis: length 2 ..."): find the
 * config key it comes from. */
static void attribute(const char *source, AlError *err) {
    const char *key = NULL;
    if (!strncmp(err->msg, "task ", 5))   /* too few distinct examples */
        key = strstr(err->msg, " test examples ") ? "eval.test_size" : "task.train_size";
    for (size_t i = 0; !key && i < sizeof PARAM_KEYS / sizeof PARAM_KEYS[0]; i++)
        if (!strncmp(err->msg, PARAM_KEYS[i].start, strlen(PARAM_KEYS[i].start))) key = PARAM_KEYS[i].key;
    name_key(err, source, key);
}

/* A JSONL file that cannot be opened: which key gave its path. */
static void attribute_file(const TaskSpec *s, const char *source, AlError *err) {
    char train[AL_PATH_MAX + 8], test[AL_PATH_MAX + 8];   /* a quoted task.*_path */
    snprintf(train, sizeof train, "'%s'", s->task.train_path);
    snprintf(test, sizeof test, "'%s'", s->task.test_path);
    if (strncmp(err->msg, "cannot ", 7)) return;   /* the others name the file and line */
    if (strstr(err->msg, train)) name_key(err, source, "task.train_path");
    else if (strstr(err->msg, test)) name_key(err, source, "task.test_path");
}

/* Match2's sizes: out of range, or more rejection sampling than is practical. */
static int match2_sizes(const TaskSpec *s, AlError *err) {
    if (match2_check_size(s->task.train_size, s->task.seq_len, s->task.modulus, err)) {
        al_error_prefix(err, "task.train_size");
        return err->code;
    }
    if (match2_check_size(s->test_size, s->task.seq_len, s->task.modulus, err)) {
        al_error_prefix(err, "eval.test_size");
        return err->code;
    }
    /* Distillation's validation split (task_build_validation): refused before training. */
    if (s->distilling && s->valid_size &&
        match2_check_size(s->valid_size, s->task.seq_len, s->task.modulus, err)) {
        al_error_prefix(err, "distill.valid_size");
        return err->code;
    }
    return 0;
}

/* The generator of s (td->gen and td->params), without drawing anything. */
static int generator_of(const TaskSpec *s, TaskData *td, AlError *err) {
    memset(td, 0, sizeof *td);
    if (s->task.type != TASK_MATCH2) return task_generator(s, td, err);
    td->gen = (TaskGen){ .name = "match2", .vocab_size = s->task.modulus, .n_classes = 2, .max_len = s->task.seq_len };
    return 0;
}

int task_check(const TaskSpec *s, const char *source, AlError *err) {
    if (s->task.type == TASK_FILE) return 0;   /* the reader checks the files */
    TaskData scratch;
    int rc = generator_of(s, &scratch, err);
    if (rc) attribute(source, err);
    else if (s->task.type == TASK_MATCH2 && (rc = match2_sizes(s, err))) name_key(err, source, NULL);
    return rc;
}

/* ---- memory ---------------------------------------------------------------------------- */

/* Bytes of n rows of max_len: tokens and targets (4 bytes each), RowInfo, and the
 * sets that keep rows distinct while they are drawn (a key copy and ~4 slots). */
static double rows_bytes(double n, int max_len) {
    return n * (16.0 * max_len + sizeof(RowInfo) + 64);
}

/* "task.seq_len=32", or the key that sets the length and the rows' length (file
 * tasks: the file holding the longest row). */
static void len_keys(const TaskSpec *s, int max_len, int train_longest, char *out, size_t n) {
    const CfgTask *t = &s->task;
    switch (t->type) {
    case TASK_FILE:   /* the file with the longest row */
        snprintf(out, n, "%s '%s' (rows of up to %d tokens)", train_longest ? "task.train_path" : "task.test_path",
                 train_longest ? t->train_path : t->test_path, max_len);
        return;
    case TASK_LIS: case TASK_ED: snprintf(out, n, "task.length=%d (rows of %d tokens)", t->length, max_len); return;
    case TASK_ARITH: snprintf(out, n, "task.n_ops=%d (rows of %d tokens)", t->n_ops, max_len); return;
    default:
        if (max_len == t->seq_len) snprintf(out, n, "task.seq_len=%d", t->seq_len);
        else snprintf(out, n, "task.seq_len=%d (rows of %d tokens)", t->seq_len, max_len);
    }
}

static void data_keys(const TaskSpec *s, char *out, size_t n) {
    if (s->task.type == TASK_FILE) snprintf(out, n, "task.train_path, task.test_path");
    else if (s->task.train_size == 0) snprintf(out, n, "eval.test_size=%d", s->test_size);
    else snprintf(out, n, "task.train_size=%d, eval.test_size=%d", s->task.train_size, s->test_size);
}

/* The datasets alone, before a row is drawn (./train data and distill need them
 * too, with or without a model). */
static int check_data_memory(const TaskSpec *s, const char *source, AlError *err) {
    TaskData scratch;
    AlError ignored = {0};   /* task_check has reported a generator that fails */
    if (s->task.type == TASK_FILE || generator_of(s, &scratch, &ignored)) return 0;
    int T = scratch.gen.max_len;
    double rows = (double)s->task.train_size + s->test_size, need = rows_bytes(rows, T);
    char what[160], keys[256], b[2][24];
    double have = al_machine_memory(what, sizeof what);
    if (need <= have) return 0;
    data_keys(s, keys, sizeof keys);
    return al_fail(err, 2, "%s%s%s: the datasets alone need about %s (%.0f rows of %d tokens, with the sets that keep "
                   "them distinct) but %s %s of memory; make them smaller", source ? source : "", source ? ": " : "",
                   keys, al_fmt_bytes(need, b[0], sizeof b[0]), rows, T, what, al_fmt_bytes(have, b[1], sizeof b[1]));
}

int task_check_memory(const TaskSpec *s, const CfgModel *model, int batch_size, const TaskData *td,
                      const char *source, AlError *err) {
    TaskData scratch;
    double data;
    if (!td) {
        if (s->task.type == TASK_FILE) return 0;   /* its shapes are known once the files are read */
        if (generator_of(s, &scratch, err)) return err->code;
        scratch.vocab_size = scratch.gen.vocab_size;
        scratch.n_classes = scratch.gen.n_classes;
        scratch.seq_len = scratch.gen.max_len;
        td = &scratch;
        data = rows_bytes((double)s->task.train_size + s->test_size, td->seq_len);
    } else {
        data = rows_bytes((double)td->train.n + td->test.n, td->seq_len);
    }
    char len[AL_PATH_MAX + 64], keys[128];
    len_keys(s, td->seq_len, td->train.seq_len == td->seq_len, len, sizeof len);
    data_keys(s, keys, sizeof keys);
    return model_memory_check(model, batch_size, td->vocab_size, td->n_classes, td->seq_len, len, data,
                              keys, source, err);
}

int task_build_from(const TaskSpec *s, const char *source, TaskData *td, AlError *err) {
    memset(td, 0, sizeof *td);
    if (task_check(s, source, err) || check_data_memory(s, source, err)) return err->code;
    int rc = task_build(s, td, err);
    if (!rc) {
        if ((rc = al_path_fmt(td->source, sizeof td->source, err, "%s", source))) task_free(td);
    } else if (s->task.type == TASK_FILE) attribute_file(s, source, err);
    else attribute(source, err);
    return rc;
}

int task_build(const TaskSpec *s, TaskData *td, AlError *err) {
    memset(td, 0, sizeof *td);
    int rc = 0;
    switch (s->task.type) {
    case TASK_MATCH2: rc = build_match2(s, td, err); break;
    case TASK_FILE: rc = build_file(s, td, err); break;
    default: rc = task_generator(s, td, err) || build_generated(s, td, err); break;
    }
    if (rc) {
        task_free(td);
        return err->code;
    }
    td->vocab_size = td->test.vocab_size;
    td->n_classes = td->test.n_classes;
    td->seq_len = td->train.seq_len > td->test.seq_len ? td->train.seq_len : td->test.seq_len;
    return 0;
}

int task_build_validation(const TaskSpec *s, const TaskData *td, Dataset *out, AlError *err) {
    memset(out, 0, sizeof *out);
    const int n = s->valid_size ? s->valid_size : s->test_size;
    const char *src = *td->source ? td->source : "config";
    if (s->task.type == TASK_FILE)
        return al_fail(err, 2, "%s: distill.valid_size: task.type \"file\" has no generator to draw a validation "
                       "split from (distil a generated task)", src);
    Rng rng = rng_stream(s->seed, 0x76616c6964 /* "valid" */);
    int rc;
    if (s->task.type == TASK_MATCH2) {
        SeqSet seen;
        seqset_init(&seen, s->task.seq_len, td->train.n + td->test.n);
        seqset_add_rows(&seen, td->train.tokens, td->train.n);
        seqset_add_rows(&seen, td->test.tokens, td->test.n);
        rc = match2_check_size(n, s->task.seq_len, s->task.modulus, err);
        if (!rc) rc = match2_generate(out, n, s->task.seq_len, s->task.modulus, &rng, &seen, NULL, err);
        seqset_free(&seen);
    } else {
        SeqSet keys;
        seqset_init(&keys, td->gen.max_len, td->train.n + td->test.n);
        taskgen_add_keys(&td->gen, &td->train, &keys);
        taskgen_add_keys(&td->gen, &td->test, &keys);
        rc = taskgen_dataset(&td->gen, SPLIT_TEST, n, &rng, &keys, NULL, out, err);
        seqset_free(&keys);
    }
    if (rc) {
        al_error_prefix(err, "%s: distill.valid_size (validation split of %d rows)", src, n);
        return err->code;
    }
    return 0;
}

void task_free(TaskData *td) {
    dataset_free(&td->train);
    dataset_free(&td->test);
}

int task_check_writable(const TaskData *td, AlError *err) {
    if (td->streaming)
        return al_fail(err, 2, "%s%stask.train_size is 0 (fresh examples every step): set it to the number of "
                       "training examples to write", td->source, *td->source ? ": " : "");
    /* A JSONL label is one class; read back, the "every class valid" code would be
     * an ordinary class (data/README.md). */
    if (td->gen.multilabel)
        return al_fail(err, 2, "%s%stask.type: %s has multi-label targets (label %d = every symbol valid), which "
                       "JSONL labels cannot express: train on the generator instead", td->source,
                       *td->source ? ": " : "", td->gen.name, td->n_classes);
    return 0;
}

int task_write_jsonl(const TaskData *td, const char *dir, AlError *err) {
    if (task_check_writable(td, err)) return err->code;
    int fields = 0;
    if (td->train.info && td->gen.n_groups) fields |= JSONL_GROUP;
    if (td->train.info && td->gen.extract_answer) fields |= JSONL_COT;
    char path[AL_PATH_MAX];
    if (al_path_fmt(path, sizeof path, err, "%s/train.jsonl", dir) || jsonl_write(path, &td->train, fields, err))
        return err->code;
    if (al_path_fmt(path, sizeof path, err, "%s/test.jsonl", dir)) return err->code;
    return jsonl_write(path, &td->test, fields, err);
}
