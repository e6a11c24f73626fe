/* step.c — see step.h. */
#include "attnlab/train/step.h"
#include "attnlab/train/optim.h"
#include "attnlab/util/error.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

void step_next_batch(const TaskData *td, Sampler *s, Rng *stream, Batch *b) {
    if (td->streaming) taskgen_batch(&td->gen, SPLIT_TRAIN, stream, b);
    else sampler_next_batch(s, &td->train, b);
}

static void zero_frozen(ParamStore *ps, const unsigned char *frozen) {
    for (int k = 0; frozen && k < ps->n; k++)
        if (frozen[k]) memset(ps->p[k].t.grad, 0, (size_t)ps->p[k].t.n * sizeof(float));
}

double step_gradients(Model *m, Tape *t, const Batch *b, const unsigned char *frozen, double *grad_norm) {
    ParamStore *ps = &m->params;
    t->training = 1;   /* dropout on; evaluate() switches it off for its own passes */
    tape_reset(t);
    params_zero_grad(ps);
    Tensor *logits = model_forward(m, t, b->tokens, b->batch, b->seq_len);
    Tensor *loss = ad_cross_entropy(t, logits, b->targets);
    tape_backward(t, loss);
    zero_frozen(ps, frozen);
    *grad_norm = optim_grad_norm(ps);
    return loss->data[0];
}

void step_update(Model *m, const CfgTrain *cfg, float lr, long t, double grad_norm, const unsigned char *frozen) {
    optim_clip(&m->params, grad_norm, cfg->grad_clip);
    optim_adam_step_except(&m->params, cfg, lr, t, frozen);
}

/* ---- data-parallel steps -------------------------------------------------------------- */

void step_pool_init(StepPool *p, Model *master, Tape *tape, int threads) {
    AL_ASSERT(threads >= 1);
    memset(p, 0, sizeof *p);
    p->threads = threads;
    p->master = master;
    p->shard = al_calloc((size_t)threads, sizeof *p->shard);
    p->shard[0].model = master;
    p->shard[0].tape = tape;
    for (int s = 1; s < threads; s++) {
        StepShard *sh = &p->shard[s];
        sh->model = model_replica_create(master);
        arena_init(&sh->arena, 8u << 20);
        tape_init(&sh->own_tape, &sh->arena);
        sh->tape = &sh->own_tape;
    }
    /* Concurrent cblas_sgemm calls from the shards' threads, each on one core. */
    if (threads > 1) openblas_set_num_threads(1);
}

void step_pool_free(StepPool *p) {
    for (int s = 1; p->shard && s < p->threads; s++) {
        tape_free(&p->shard[s].own_tape);
        arena_free(&p->shard[s].arena);
        model_free(p->shard[s].model);
    }
    free(p->shard);
    memset(p, 0, sizeof *p);
}

/* Rows [row0, row1) of b. */
static Batch batch_rows(const Batch *b, int row0, int row1) {
    Batch v = { row1 - row0, b->seq_len, b->tokens + (size_t)row0 * b->seq_len, b->targets + (size_t)row0 * b->seq_len };
    return v;
}

static long count_targets(const Batch *b) {
    long n = 0, all = (long)b->batch * b->seq_len;
    for (long i = 0; i < all; i++) n += b->targets[i] >= 0;
    return n;
}

/* Shard s of S: forward and backward of its rows, its loss's gradient seeded with
 * its weight, into its own model's gradients.  Shard s ≥ 1 first takes the
 * master's rng (as it was when the step began) and distillation hashes. */
static void shard_run(StepPool *p, int s, int S, const Batch *b, long counted, const Rng *rng0) {
    StepShard *sh = &p->shard[s];
    Tape *t = sh->tape;
    int row0 = (int)((long)b->batch * s / S), row1 = (int)((long)b->batch * (s + 1) / S);
    Batch v = batch_rows(b, row0, row1);
    if (s > 0) {
        t->rng = *rng0;
        sh->model->anna = p->master->anna;
    }
    t->batch_row0 = row0;
    t->training = 1;
    tape_reset(t);
    params_zero_grad(&sh->model->params);
    Tensor *logits = model_forward(sh->model, t, v.tokens, v.batch, v.seq_len);
    Tensor *loss = ad_cross_entropy(t, logits, v.targets);
    sh->counted = count_targets(&v);
    sh->loss = loss->data[0];
    /* d(batch mean)/d(shard mean) = counted_s / counted; 0 for a shard (or batch)
     * with nothing to score, whose mean is 0 anyway. */
    const float w = counted ? (float)((double)sh->counted / (double)counted) : 0.0f;
    tape_backward_from(t, loss, &w);
    t->batch_row0 = 0;
}

double step_gradients_pool(StepPool *p, const Batch *b, const unsigned char *frozen, double *grad_norm) {
    const int S = b->batch < p->threads ? b->batch : p->threads;
    if (S <= 1) return step_gradients(p->master, p->shard[0].tape, b, frozen, grad_norm);
    const long counted = count_targets(b);
    const Rng rng0 = p->shard[0].tape->rng;
    /* Which thread runs which shard does not matter: each has its own replica. */
#pragma omp parallel for schedule(static, 1) num_threads(S)
    for (int s = 0; s < S; s++) shard_run(p, s, S, b, counted, &rng0);
    /* The fixed order of the sums: g₀ + g₁, then + g₂, … */
    ParamStore *ps = &p->master->params;
    double loss = 0;
    for (int s = 0; s < S; s++) {
        const StepShard *sh = &p->shard[s];
        if (counted) loss += sh->loss * ((double)sh->counted / (double)counted);
        if (s == 0) continue;
        const float *restrict g = sh->model->params.grad;
        float *restrict acc = ps->grad;
        for (long i = 0; i < ps->total; i++) acc[i] += g[i];
    }
    zero_frozen(ps, frozen);
    *grad_norm = optim_grad_norm(ps);
    return loss;
}
