/* test_parallel.c — data-parallel steps and evaluation (train/step.h).
 *
 *   - model_replica_create: the master's values in place, gradients of its own,
 *     the same forward bit for bit;
 *   - for transformers (softmax causal and bidirectional, linear, sparse, unit-norm
 *     scores), LSTMs, Mamba, DSS, RetNet, with dropout on and off: a step split over 2, 3 and 7 threads
 *     gives the one-thread step's loss and gradients to 1e-5 (relative), leaves the
 *     dropout rng where one thread leaves it, and runs twice bit for bit.  The batch
 *     (5 rows) splits unevenly and has unscored positions spread unevenly, so a
 *     wrong shard weighting (an unweighted mean of the shards' losses, say) or a
 *     shard missing from the reduction fails by far more than the tolerance;
 *     (Bit-identical repeated 2-thread training: tests/autodiff/test_determinism.c.)
 *   - length groups (train.length_groups): step_length_plan sorts and cuts a batch
 *     of right-padded rows as documented, and for every causal architecture without
 *     dropout (and for multi-label targets) a step in 2, 3 or 7 groups, on 1 or 2
 *     threads, gives the plain step's loss and gradients to 1e-5 while running fewer
 *     grid positions; the groups hold unequal numbers of scored positions, so a
 *     wrong weighting fails; with dropout or a bidirectional model the step is the
 *     plain one bit for bit;
 *   - evaluate_pool and evaluate_answers_pool equal evaluate and evaluate_answers
 *     bit for bit (loss, counts, per-group accuracy, answers after greedy decoding);
 *   - the trainer with train.threads 2: two runs, and N steps + --resume + N steps,
 *     are identical in every metric and in the training state;
 *   - the trainer with train.length_groups 4 on a variable-length task: two runs
 *     identical, their curve not the plain one's (the groups are used), and a
 *     plain run resumed with length groups accepted;
 *   - every step worker flushes denormals (util/fpenv.h), whatever the mode of the
 *     thread that made the pool. */
#include "check.h"
#include "testutil.h"
#include "attnlab/data/task.h"
#include "attnlab/io/safetensors.h"
#include "attnlab/train/evaluate.h"
#include "attnlab/train/optim.h"
#include "attnlab/train/step.h"
#include "attnlab/train/trainer.h"
#include "attnlab/util/fpenv.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { B = 5, T = 9, VOCAB = 11, CLASSES = 7 };

static Model *make_model(const TuModelCase *c, uint64_t seed) {
    AlError err = {0};
    Model *m = tu_model(c, VOCAB, CLASSES, T, seed, &err);
    CHECK(m != NULL, "%s: config: %s", c->name, err.msg);
    return m;
}

/* Rows 0–1 score every position, rows 2–4 about a third, so no equal split has equal
 * weights. */
static void fill_batch(Batch *b, uint64_t seed) {
    Rng r = rng_stream(seed, 99);
    for (int i = 0; i < B * T; i++) {
        b->tokens[i] = (int)rng_below(&r, VOCAB);
        int row = i / T;
        b->targets[i] = row >= 2 && rng_below(&r, 3) != 0 ? DATASET_IGNORE : (int)rng_below(&r, CLASSES);
    }
}

typedef struct StepOut {
    double loss, norm;
    float *grad;
    Rng rng_after;
} StepOut;

/* One step of m over b with `threads` shards in `groups` length groups from the
 * dropout rng state `rng`; *positions: the grid positions the shards ran. */
static StepOut run_step_groups(Model *m, const Batch *b, int threads, int groups, Rng rng, long *positions) {
    Arena arena;
    arena_init(&arena, 1 << 16);
    Tape tape;
    tape_init(&tape, &arena);
    tape.rng = rng;
    StepPool pool;
    step_pool_init(&pool, m, &tape, threads);
    pool.length_groups = groups;
    StepOut o;
    o.loss = step_gradients_pool(&pool, b, NULL, &o.norm);
    *positions = 0;
    for (int s = 0; s < (b->batch < threads ? b->batch : threads); s++) *positions += pool.shard[s].positions;
    o.rng_after = tape.rng;
    o.grad = malloc((size_t)m->params.total * sizeof(float));
    memcpy(o.grad, m->params.grad, (size_t)m->params.total * sizeof(float));
    step_pool_free(&pool);
    tape_free(&tape);
    arena_free(&arena);
    return o;
}

static StepOut run_step(Model *m, const Batch *b, int threads, Rng rng) {
    long positions;
    return run_step_groups(m, b, threads, 1, rng, &positions);
}

/* ‖g − ref‖ / ‖ref‖ over parameter k. */
static double rel_diff(const Model *m, int k, const float *g, const float *ref) {
    const Param *p = &m->params.p[k];
    double d = 0, n = 0;
    for (long i = 0; i < p->t.n; i++) {
        double x = g[p->offset + i], y = ref[p->offset + i];
        d += (x - y) * (x - y);
        n += y * y;
    }
    return n > 0 ? sqrt(d / n) : sqrt(d);
}

static double tensor_norm(const Model *m, int k, const float *g) {
    const Param *p = &m->params.p[k];
    double n = 0;
    for (long i = 0; i < p->t.n; i++) n += (double)g[p->offset + i] * g[p->offset + i];
    return sqrt(n);
}

/* The largest difference of g's gradients from ref's: relative per tensor, except
 * where the gradient is zero in exact arithmetic and both are rounding noise
 * (attention's key bias: softmax ignores a constant added to a query's scores):
 * those are measured against the whole gradient's norm.  *worst_k: its tensor. */
static double worst_grad_diff(const Model *m, const StepOut *g, const StepOut *ref, int *worst_k) {
    double worst = 0;
    *worst_k = 0;
    for (int p = 0; p < m->params.n; p++) {
        double d = rel_diff(m, p, g->grad, ref->grad), n = tensor_norm(m, p, ref->grad);
        if (n < 1e-4 * ref->norm) d = d * n / ref->norm;
        if (d > worst) worst = d, *worst_k = p;
    }
    return worst;
}

static void check_replica(void) {
    Model *m = make_model(&TU_MODEL_CASES[0], 5);
    Model *r = model_replica_create(m);
    const ParamStore *pm = &m->params, *pr = &r->params;
    CHECK(pr->n == pm->n && pr->total == pm->total && pr->data == pm->data && pr->grad != pm->grad &&
          pr->m == NULL && pr->v == NULL, "replica store shares values, not gradients");
    int same_layout = 1;
    for (int k = 0; k < pm->n; k++)
        same_layout &= pr->p[k].t.data == pm->p[k].t.data && pr->p[k].t.grad == pr->grad + pm->p[k].offset &&
                       !strcmp(pr->p[k].name, pm->p[k].name);
    CHECK(same_layout, "replica tensors read the master's values and own their gradients");
    CHECK(r->tok_emb == &pr->p[0].t && r->head.w->data == m->head.w->data && r->head.w->grad != m->head.w->grad,
          "the model's tensor fields point into the replica's store");

    Batch b;
    batch_alloc(&b, B, T);
    fill_batch(&b, 1);
    Arena a1, a2;
    arena_init(&a1, 1 << 16);
    arena_init(&a2, 1 << 16);
    Tape t1, t2;
    tape_init(&t1, &a1);
    tape_init(&t2, &a2);
    t1.grad_enabled = t2.grad_enabled = 0;
    Tensor *y1 = model_forward(m, &t1, b.tokens, B, T), *y2 = model_forward(r, &t2, b.tokens, B, T);
    CHECK(y1->n == y2->n && !memcmp(y1->data, y2->data, (size_t)y1->n * sizeof(float)), "replica forward");

    /* Backward through the replica writes its gradients only. */
    tape_reset(&t2);
    t2.grad_enabled = 1;
    params_zero_grad(&m->params);
    tape_backward(&t2, ad_cross_entropy(&t2, model_forward(r, &t2, b.tokens, B, T), b.targets));
    double master_sum = 0, replica_sum = 0;
    for (long i = 0; i < pm->total; i++) {
        master_sum += fabs(pm->grad[i]);
        replica_sum += fabs(pr->grad[i]);
    }
    CHECK(master_sum == 0 && replica_sum > 0, "replica backward: master %g, replica %g", master_sum, replica_sum);
    tape_free(&t1);
    tape_free(&t2);
    arena_free(&a1);
    arena_free(&a2);
    batch_free(&b);
    model_free(r);
    model_free(m);
}

static void check_steps(void) {
    Batch b;
    batch_alloc(&b, B, T);
    for (int c = 0; c < TU_N_MODEL_CASES; c++) {
        const TuModelCase *cs = &TU_MODEL_CASES[c];
        Model *m = make_model(cs, 7 + c);
        if (!m) continue;
        fill_batch(&b, 11 + c);
        Rng rng = rng_stream(3, 100 + c);
        StepOut one = run_step(m, &b, 1, rng);
        CHECK(isfinite(one.loss) && one.loss > 0 && one.norm > 0, "%s: one-thread step %g %g", cs->name, one.loss,
              one.norm);
        const int threads[] = { 2, 3, 7 };
        for (int k = 0; k < 3; k++) {
            StepOut par = run_step(m, &b, threads[k], rng);
            CHECK(fabs(par.loss - one.loss) <= 1e-5 * fabs(one.loss), "%s, %d threads: loss %.9g vs %.9g", cs->name,
                  threads[k], par.loss, one.loss);
            CHECK(fabs(par.norm - one.norm) <= 1e-5 * one.norm, "%s, %d threads: grad norm %.9g vs %.9g", cs->name,
                  threads[k], par.norm, one.norm);
            int worst_k;
            double worst = worst_grad_diff(m, &par, &one, &worst_k);
            if (getenv("TEST_PARALLEL_SHOW")) printf("%-55s %d threads: worst %.3g (%s), loss diff %.3g\n", cs->name, threads[k], worst, m->params.p[worst_k].name, fabs(par.loss - one.loss) / one.loss);
            CHECK(worst <= 1e-5, "%s, %d threads: gradient of %s differs by %.3g (relative)", cs->name, threads[k],
                  m->params.p[worst_k].name, worst);
            CHECK(!memcmp(&par.rng_after, &one.rng_after, sizeof(Rng)), "%s, %d threads: dropout rng after the step",
                  cs->name, threads[k]);
            if (threads[k] == 2) {
                StepOut again = run_step(m, &b, 2, rng);
                CHECK(again.loss == par.loss && again.norm == par.norm &&
                      !memcmp(again.grad, par.grad, (size_t)m->params.total * sizeof(float)),
                      "%s: two 2-thread steps differ", cs->name);
                free(again.grad);
            }
            free(par.grad);
        }
        /* Dropout changes the step (the masks matter), yet stays exact across threads. */
        if (m->cfg.dropout > 0) {
            StepOut other = run_step(m, &b, 1, rng_stream(4, 1));
            CHECK(other.loss != one.loss, "%s: another dropout rng gives another loss", cs->name);
            free(other.grad);
        }
        free(one.grad);
        model_free(m);
    }
    /* The batch really weights its shards unequally: rows 0–2 vs 3–4 with 2 threads. */
    long counted[2] = {0, 0};
    for (int i = 0; i < B * T; i++) counted[i / T >= 3] += b.targets[i] >= 0;
    CHECK(fabs((double)counted[0] / (counted[0] + counted[1]) - 0.5) > 0.1, "shard weights %ld, %ld: too even",
          counted[0], counted[1]);
    batch_free(&b);
}

/* ---- length groups ---- */

enum { GB = 7, GT = 9 };
/* Row r is scored up to LEN[r] (its last position scored, some before it not),
 * then right-padded with arbitrary tokens; row 4 has nothing scored. */
static const int LEN[GB] = { 9, 3, 6, 1, 0, 5, 3 };

static void fill_padded(Batch *b, uint64_t seed, int multilabel) {
    Rng r = rng_stream(seed, 98);
    b->multilabel = multilabel;
    for (int i = 0; i < GB * GT; i++) {
        const int row = i / GT, pos = i % GT;
        b->tokens[i] = (int)rng_below(&r, VOCAB);
        const int scored = pos < LEN[row] && (pos == LEN[row] - 1 || rng_below(&r, 3) != 0);
        b->targets[i] = scored ? (int)rng_below(&r, CLASSES + multilabel) : DATASET_IGNORE;
    }
}

static void check_length_plan(void) {
    Batch b;
    batch_alloc(&b, GB, GT);
    fill_padded(&b, 1, 0);
    int len[GB], order[GB], end[8], gT[8];
    const int G = step_length_plan(&b, 3, len, order, end, gT);
    int ok = G == 3 && !memcmp(len, LEN, sizeof len);
    const int want_order[GB] = { 4, 3, 1, 6, 5, 2, 0 }, want_end[3] = { 2, 4, 7 }, want_T[3] = { 1, 3, 9 };
    ok = ok && !memcmp(order, want_order, sizeof order) && !memcmp(end, want_end, sizeof want_end) &&
         !memcmp(gT, want_T, sizeof want_T);
    CHECK(ok, "length plan: G %d, order %d %d %d %d %d %d %d, ends %d %d %d, lengths %d %d %d", G, order[0], order[1],
          order[2], order[3], order[4], order[5], order[6], end[0], end[1], end[2], gT[0], gT[1], gT[2]);
    CHECK(step_length_plan(&b, 50, len, order, end, gT) == GB && end[GB - 1] == GB && gT[0] == 0 && gT[GB - 1] == 9,
          "length plan: more groups than rows gives one row per group");
    batch_free(&b);
}

static const TuModelCase GROUP_CASES[] = {
    { "softmax causal", "{\"d_model\": 16, \"n_layers\": 2, \"n_heads\": 2, \"attention\": {\"causal\": true}}" },
    { "softmax causal, sinusoidal", "{\"d_model\": 16, \"n_layers\": 1, \"n_heads\": 2, \"positional\": "
                                    "\"sinusoidal\", \"attention\": {\"causal\": true}}" },
    { "linear causal", "{\"d_model\": 16, \"n_layers\": 2, \"n_heads\": 2, \"attention\": {\"type\": \"linear\", "
                       "\"causal\": true}}" },
    { "sparse", "{\"d_model\": 16, \"n_layers\": 2, \"n_heads\": 2, \"attention\": {\"type\": \"sparse\", "
                "\"causal\": true, \"block\": 2}}" },
    { "lstm", "{\"type\": \"lstm\", \"d_model\": 16, \"n_layers\": 2}" },
    { "mamba", "{\"type\": \"mamba\", \"d_model\": 16, \"n_layers\": 2, \"mamba\": {\"d_state\": 4}}" },
    { "dss, feed-forward", "{\"type\": \"dss\", \"d_model\": 16, \"n_layers\": 2, \"dss\": {\"d_state\": 4, "
                           "\"ff\": 2}}" },
    { "retnet", "{\"type\": \"retnet\", \"d_model\": 16, \"n_layers\": 2, \"n_heads\": 2}" },
};

/* The step in length groups against the plain one-thread step, for one model. */
static void check_groups_of(const TuModelCase *cs, uint64_t seed, int multilabel) {
    Model *m = make_model(cs, seed);
    Batch b;
    batch_alloc(&b, GB, GT);
    fill_padded(&b, seed, multilabel);
    Rng rng = rng_stream(3, seed);
    long positions;
    StepOut one = run_step(m, &b, 1, rng);
    const int groups[] = { 2, 3, 7 }, threads[] = { 1, 2 };
    for (int gi = 0; gi < 3; gi++)
        for (int ti = 0; ti < 2; ti++) {
            StepOut g = run_step_groups(m, &b, threads[ti], groups[gi], rng, &positions);
            const int exact = m->cfg.dropout > 0 || !model_is_causal(&m->cfg);
            int worst_k;
            double worst = worst_grad_diff(m, &g, &one, &worst_k);
            if (exact) {
                StepOut plain = run_step(m, &b, threads[ti], rng);
                CHECK(g.loss == plain.loss && positions == GB * GT &&
                      !memcmp(g.grad, plain.grad, (size_t)m->params.total * sizeof(float)),
                      "%s, %d groups, %d threads: not the plain step", cs->name, groups[gi], threads[ti]);
                free(plain.grad);
            } else {
                CHECK(fabs(g.loss - one.loss) <= 1e-5 * fabs(one.loss) && fabs(g.norm - one.norm) <= 1e-5 * one.norm,
                      "%s%s, %d groups, %d threads: loss %.9g vs %.9g, norm %.9g vs %.9g", cs->name,
                      multilabel ? " (multi-label)" : "", groups[gi], threads[ti], g.loss, one.loss, g.norm, one.norm);
                CHECK(worst <= 1e-5, "%s, %d groups, %d threads: gradient of %s differs by %.3g (relative)", cs->name,
                      groups[gi], threads[ti], m->params.p[worst_k].name, worst);
                CHECK(positions < GB * GT, "%s, %d groups, %d threads: ran %ld of %d positions", cs->name, groups[gi],
                      threads[ti], positions, GB * GT);
            }
            free(g.grad);
        }
    free(one.grad);
    batch_free(&b);
    model_free(m);
}

static void check_length_groups(void) {
    check_length_plan();
    const int n = sizeof GROUP_CASES / sizeof *GROUP_CASES;
    for (int c = 0; c < n; c++) check_groups_of(&GROUP_CASES[c], 40 + c, 0);
    check_groups_of(&GROUP_CASES[0], 60, 1);
    /* Dropout, and a bidirectional model: the plain step. */
    check_groups_of(&TU_MODEL_CASES[1], 61, 0);
    check_groups_of(&TU_MODEL_CASES[2], 62, 0);
    /* The groups really weigh unequally: 3 groups hold these scored positions. */
    Batch b;
    batch_alloc(&b, GB, GT);
    fill_padded(&b, 40, 0);
    int len[GB], order[GB], end[3], gT[3], counted[3] = {0, 0, 0};
    step_length_plan(&b, 3, len, order, end, gT);
    for (int g = 0, r0 = 0; g < 3; r0 = end[g++])
        for (int i = r0; i < end[g]; i++)
            for (int p = 0; p < GT; p++) counted[g] += b.targets[order[i] * GT + p] >= 0;
    CHECK(counted[0] * 3 < counted[2] && counted[1] * 2 < counted[2], "group counts %d %d %d: too even", counted[0],
          counted[1], counted[2]);
    batch_free(&b);
}

static int same_eval(const EvalResult *a, const EvalResult *b) {
    int same = a->loss == b->loss && a->token_acc == b->token_acc && a->seq_acc == b->seq_acc &&
               a->n_tokens == b->n_tokens && a->n_seqs == b->n_seqs && a->n_groups == b->n_groups;
    for (int g = 0; g < a->n_groups; g++)
        same &= a->group_acc[g] == b->group_acc[g] && a->group_tokens[g] == b->group_tokens[g];
    return same;
}

static void check_evaluation(void) {
    Model *m = make_model(&TU_MODEL_CASES[2], 3);
    Dataset d;
    dataset_alloc(&d, 23, T, VOCAB, CLASSES);
    dataset_alloc_info(&d);
    Rng r = rng_stream(5, 5);
    for (int i = 0; i < d.n * T; i++) {
        d.tokens[i] = (int)rng_below(&r, VOCAB);
        d.targets[i] = rng_below(&r, 4) == 0 ? DATASET_IGNORE : (int)rng_below(&r, 2);
    }
    for (int i = 0; i < d.n; i++) d.info[i].group = i % 3;
    Arena arena;
    arena_init(&arena, 1 << 16);
    Tape tape;
    tape_init(&tape, &arena);
    tape.training = 1;
    EvalResult one = evaluate(m, &tape, &d, 4, 3);
    CHECK(one.n_seqs == 23 && one.n_groups == 3 && one.loss > 0 && tape.training == 1 && tape.grad_enabled == 1,
          "evaluate: %ld rows, %d groups, loss %g", one.n_seqs, one.n_groups, one.loss);
    for (int threads = 2; threads <= 8; threads += 3) {
        StepPool pool;
        step_pool_init(&pool, m, &tape, threads);
        EvalResult par = evaluate_pool(&pool, &d, 4, 3);
        CHECK(same_eval(&par, &one), "evaluate_pool, %d threads: loss %.17g vs %.17g, acc %g vs %g", threads,
              par.loss, one.loss, par.token_acc, one.token_acc);
        CHECK(pool.shard[1].tape->training == 0 && pool.shard[1].tape->grad_enabled == 1 && tape.training == 1,
              "evaluation modes restored");
        step_pool_free(&pool);
    }
    tape_free(&tape);
    arena_free(&arena);
    dataset_free(&d);
    model_free(m);
}

/* Greedy decoding of a chain-of-thought test set, after a few training steps so
 * some answers come out right. */
static void check_answers(void) {
    Config cfg;
    AlError err = {0};
    const char *json = "{\"seed\": 2, \"task\": {\"type\": \"arith\", \"n_ops\": 1, \"modulus\": 5, "
                       "\"train_size\": 0}, \"model\": {\"d_model\": 32, \"n_layers\": 1, \"n_heads\": 2, "
                       "\"attention\": {\"causal\": true}}, \"train\": {\"batch_size\": 16, \"lr\": 0.01}, "
                       "\"eval\": {\"test_size\": 37}}";
    TaskData td;
    TaskSpec spec;
    if (cfg_parse(&cfg, json, "test_parallel", &err) ||
        task_build_from(cfg_task_spec(&cfg, &spec), "test_parallel", &td, &err)) {
        CHECK(0, "arith task: %s", err.msg);
        return;
    }
    Model *m = model_create(&cfg.model, td.vocab_size, td.n_classes, td.seq_len, 2);
    Arena arena;
    arena_init(&arena, 1 << 20);
    Tape tape;
    tape_init(&tape, &arena);
    StepPool pool;
    step_pool_init(&pool, m, &tape, 2);
    Batch b;
    batch_alloc(&b, 16, td.gen.max_len);
    Rng stream = rng_stream(1, 1);
    double acc = 0;
    for (int s = 1; s <= 300; s++) {
        step_next_batch(&td, NULL, &stream, &b);
        double norm;
        step_gradients_pool(&pool, &b, NULL, &norm);
        step_update(m, &cfg.train, 3e-3f, s, norm, NULL);
    }
    acc = evaluate_answers(m, &td.test, &td.gen, 8);
    for (int threads = 2; threads <= 3; threads++) {
        StepPool p2;
        step_pool_init(&p2, m, &tape, threads);
        double par = evaluate_answers_pool(&p2, &td.test, &td.gen, 8);
        CHECK(par == acc, "evaluate_answers_pool, %d threads: %.17g vs %.17g", threads, par, acc);
        step_pool_free(&p2);
    }
    printf("arith answer accuracy after 300 steps: %.3f (%d test rows)\n", acc, td.test.n);
    CHECK(acc > 0, "some answers right (%g), so the comparison means something", acc);
    batch_free(&b);
    step_pool_free(&pool);
    tape_free(&tape);
    arena_free(&arena);
    model_free(m);
    task_free(&td);
}

/* ---- the trainer ------------------------------------------------------------------- */

static char tmp[256];

static const char *CONFIG =
    "{ \"name\": \"p\", \"seed\": 4,\n"
    "  \"task\": {\"type\": \"match2\", \"seq_len\": 12, \"modulus\": 13, \"train_size\": 400},\n"
    "  \"model\": {\"d_model\": 16, \"n_heads\": 2, \"dropout\": 0.1,\n"
    "            \"attention\": {\"score\": \"unit_norm\", \"beta\": 2}},\n"
    "  \"train\": {\"lr\": 0.01, \"batch_size\": 15, \"steps\": 60, \"grad_clip\": 1.0},\n"
    "  \"eval\": {\"every\": 20, \"test_size\": 50} }\n";

static int run_config(const char *config, const char *out, const char *const *sets, int n_sets, int resume) {
    TrainOptions o = { .config_path = tu_path(tmp, config), .overrides = sets, .n_overrides = n_sets,
                       .out_dir = out, .resume = resume, .quiet = 1 };
    AlError err = {0};
    int rc = train_run(&o, &err);
    if (rc) fprintf(stderr, "train_run: %s\n", err.msg);
    return rc;
}

static int run(const char *out, const char *steps, int resume) {
    const char *sets[] = { "train.threads=2", steps };
    return run_config("config.json", out, sets, 2, resume);
}

/* metrics.jsonl without the wall-clock field. */
static char *metrics(const char *dir) {
    char *s = tu_read_file(tu_path(dir, "metrics.jsonl"), NULL);
    for (char *p = s ? strstr(s, ", \"elapsed_s\"") : NULL; p; p = strstr(p, ", \"elapsed_s\"")) {
        char *end = strchr(p, '}');
        memmove(p, end, strlen(end) + 1);
    }
    return s;
}

/* The training state's tensors (parameters, Adam moments, rng and sampler states). */
static int same_state(const char *a, const char *b) {
    size_t na, nb;
    char *x = tu_read_file(tu_path(a, "train_state.safetensors"), &na);
    char *y = tu_read_file(tu_path(b, "train_state.safetensors"), &nb);
    /* The header holds the provenance and the run folder; the data after it must match. */
    int same = 0;
    if (x && y && na > 8 && nb > 8) {
        unsigned long long ha = 0, hb = 0;
        memcpy(&ha, x, 8);
        memcpy(&hb, y, 8);
        same = 8 + ha <= na && 8 + hb <= nb && na - ha == nb - hb && !memcmp(x + 8 + ha, y + 8 + hb, na - 8 - ha);
    }
    free(x);
    free(y);
    return same;
}

static const char *EQ_CONFIG =
    "{ \"name\": \"g\", \"seed\": 5,\n"
    "  \"task\": {\"type\": \"eq_one\", \"seq_len\": 20, \"symbols\": 8, \"train_size\": 0},\n"
    "  \"model\": {\"d_model\": 16, \"n_heads\": 2, \"attention\": {\"causal\": true}},\n"
    "  \"train\": {\"lr\": 0.01, \"batch_size\": 16, \"steps\": 40, \"threads\": 1},\n"
    "  \"eval\": {\"every\": 20, \"test_size\": 50} }\n";

static void check_trainer_length_groups(void) {
    CHECK(tu_write_file(tu_path(tmp, "eq.json"), EQ_CONFIG) == 0, "config");
    char plain[300], g1[300], g2[300], resumed[300];
    snprintf(plain, sizeof plain, "%s/plain", tmp);
    snprintf(g1, sizeof g1, "%s/g1", tmp);
    snprintf(g2, sizeof g2, "%s/g2", tmp);
    snprintf(resumed, sizeof resumed, "%s/resumed", tmp);
    const char *groups[] = { "train.length_groups=4" }, *half[] = { "train.steps=20" },
               *rest[] = { "train.length_groups=4", "train.steps=40" };
    CHECK(run_config("eq.json", plain, NULL, 0, 0) == 0 && run_config("eq.json", g1, groups, 1, 0) == 0 &&
          run_config("eq.json", g2, groups, 1, 0) == 0, "eq_one runs with and without length groups");
    CHECK(run_config("eq.json", resumed, half, 1, 0) == 0 && run_config("eq.json", resumed, rest, 2, 1) == 0,
          "a plain run resumed with length groups");
    char *mp = metrics(plain), *m1 = metrics(g1), *m2 = metrics(g2), *mr = metrics(resumed);
    CHECK(m1 && m2 && !strcmp(m1, m2) && same_state(g1, g2), "two runs in length groups differ");
    CHECK(!same_state(plain, g1), "length groups left the training state bit for bit the plain one: not used?");
    CHECK(mr && strstr(mr, "\"step\": 40,"), "the resumed run did not reach step 40: %s", mr ? mr : "(none)");
    /* summary.json's positions_run_share: 1 plain, below 1 in groups (Eq-one's
     * lengths 2 … 20 leave most of a batch's grid padding). */
    double share[2] = { -1, -1 };
    const char *dirs[2] = { plain, g1 };
    for (int k = 0; k < 2; k++) {
        char *text = tu_read_file(tu_path(dirs[k], "summary.json"), NULL);
        const char *p = text ? strstr(text, "\"positions_run_share\":") : NULL;
        if (p) share[k] = strtod(p + strlen("\"positions_run_share\":"), NULL);
        free(text);
    }
    CHECK(share[0] == 1 && share[1] > 0.3 && share[1] < 0.9, "positions_run_share: plain %g, in groups %g", share[0],
          share[1]);
    free(mp);
    free(m1);
    free(m2);
    free(mr);
}

static void check_trainer(void) {
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        printf("one core: the trainer refuses train.threads 2; its part is skipped\n");
        return;
    }
    snprintf(tmp, sizeof tmp, "/tmp/attnlab-parallel-XXXXXX");
    CHECK(mkdtemp(tmp) != NULL, "mkdtemp");
    CHECK(tu_write_file(tu_path(tmp, "config.json"), CONFIG) == 0, "config");
    char a[300], b[300], c[300];
    snprintf(a, sizeof a, "%s/a", tmp);
    snprintf(b, sizeof b, "%s/b", tmp);
    snprintf(c, sizeof c, "%s/c", tmp);
    CHECK(run(a, "train.steps=60", 0) == 0 && run(b, "train.steps=60", 0) == 0, "two runs");
    CHECK(run(c, "train.steps=20", 0) == 0 && run(c, "train.steps=60", 1) == 0, "a run and its resume");
    char *ma = metrics(a), *mb = metrics(b), *mc = metrics(c);
    CHECK(ma && mb && !strcmp(ma, mb), "two 2-thread runs: metrics differ");
    CHECK(ma && mc && !strcmp(ma, mc), "2-thread run resumed: metrics differ\n%s\nvs\n%s", ma ? ma : "",
          mc ? mc : "");
    CHECK(same_state(a, b) && same_state(a, c), "training states differ");
    char *summary = tu_read_file(tu_path(a, "summary.json"), NULL);
    CHECK(summary && strstr(summary, "\"threads\":\t2") && strstr(summary, "\"blas_threads\":\t1"),
          "summary.json records the threads: %s", summary ? summary : "(none)");
    free(summary);
    free(ma);
    free(mb);
    free(mc);
    check_trainer_length_groups();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    CHECK(system(cmd) == 0, "cleanup");
}

static void record_mode(void *ctx, int i) { ((int *)ctx)[i] = fpenv_flushing(); }

/* Runs first, before anything sets the mode in this thread. */
static void check_worker_mode(void) {
    if (fpenv_flushing() < 0) return;   /* no such mode on this CPU */
    CHECK(fpenv_flushing() == 0, "the test's thread flushes denormals before anything set it");
    Model *m = make_model(&TU_MODEL_CASES[0], 5);
    Arena arena;
    arena_init(&arena, 1 << 16);
    Tape tape;
    tape_init(&tape, &arena);
    StepPool pool;
    step_pool_init(&pool, m, &tape, 3);
    int modes[3] = { -2, -2, -2 };
    step_pool_run(&pool, 3, record_mode, modes);
    CHECK(modes[1] == 1 && modes[2] == 1, "step workers' modes %d %d: they must flush denormals", modes[1], modes[2]);
    step_pool_free(&pool);
    tape_free(&tape);
    arena_free(&arena);
    model_free(m);
}

int main(void) {
    check_worker_mode();
    check_replica();
    check_steps();
    check_length_groups();
    check_evaluation();
    check_answers();
    check_trainer();
    openblas_set_num_threads(1);
    return check_exit("test_parallel");
}
