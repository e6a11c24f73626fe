/* step.c — see step.h. */
#include "attnlab/train/step.h"
#include "attnlab/train/optim.h"
#include "attnlab/util/error.h"

#include "attnlab/util/fpenv.h"
#include "attnlab/util/gemm.h"
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void step_next_batch(const TaskData *td, Sampler *s, Rng *stream, Batch *b) {
    if (td->streaming) taskgen_batch(&td->gen, SPLIT_TRAIN, stream, b);
    else sampler_next_batch(s, &td->train, b);
}

Rng step_data_stream(uint64_t seed) { return rng_stream(seed, 0x73747265616d /* "stream" */); }

Tensor *step_loss(Tape *t, Tensor *logits, const int *targets, int multilabel) {
    return multilabel ? ad_bce_multilabel(t, logits, targets) : ad_cross_entropy(t, logits, targets);
}

static long count_targets(const Batch *b) {
    long n = 0, all = (long)b->batch * b->seq_len;
    for (long i = 0; i < all; i++) n += b->targets[i] >= 0;
    return n;
}

/* The batch's loss from the scored rows only (model_forward_rows; docs/design.md
 * decision 16) when some rows are not scored, else from the whole grid: the same
 * mean over the same rows, with less work.  *counted: how many rows are scored. */
static Tensor *forward_loss(Model *m, Tape *t, const Batch *b, long *counted) {
    const int all = b->batch * b->seq_len, n = (int)(*counted = count_targets(b));
    if (n == 0 || n == all)
        return step_loss(t, model_forward(m, t, b->tokens, b->batch, b->seq_len), b->targets, b->multilabel);
    int *rows = tape_scratch(t, (size_t)n * sizeof(int)), *targets = tape_scratch(t, (size_t)n * sizeof(int));
    for (int i = 0, k = 0; i < all; i++)
        if (b->targets[i] >= 0) rows[k] = i, targets[k++] = b->targets[i];
    Tensor *logits = model_forward_rows(m, t, b->tokens, b->batch, b->seq_len, rows, n);
    return step_loss(t, logits, targets, b->multilabel);
}

/* ---- length groups (step.h) ------------------------------------------------------------ */

int step_length_plan(const Batch *b, int groups, int *len, int *order, int *group_end, int *group_T) {
    const int B = b->batch, T = b->seq_len, G = groups < B ? groups : B;
    AL_ASSERT(groups >= 1 && B >= 1);
    for (int r = 0; r < B; r++) {
        const int *y = b->targets + (size_t)r * T;
        int n = T;
        while (n > 0 && y[n - 1] < 0) n--;
        len[r] = n;
    }
    /* Insertion sort by length, ties in row order: a batch has tens of rows. */
    for (int r = 0; r < B; r++) {
        int k = r;
        for (; k > 0 && len[order[k - 1]] > len[r]; k--) order[k] = order[k - 1];
        order[k] = r;
    }
    for (int g = 0; g < G; g++) {
        group_end[g] = (int)((long)B * (g + 1) / G);
        group_T[g] = len[order[group_end[g] - 1]];
    }
    return G;
}

/* forward_loss over b's rows in length groups (step_length_plan), each run up to its
 * longest scored position, the loss Σ_g (counted_g / counted)·mean_g: the batch's
 * mean, the same to rounding as forward_loss's for a causal model (no position
 * reads a later one, and a row's later positions are padding).  Plain forward_loss
 * when groups is 1, when nothing would be cut, or with dropout (whose masks follow
 * the rows' places in the batch). */
static Tensor *forward_loss_grouped(Model *m, Tape *t, const Batch *b, int groups, long *counted, long *positions) {
    const int B = b->batch, T = b->seq_len;
    *positions = (long)B * T;
    if (groups <= 1 || B < 2 || m->cfg.dropout > 0 || !model_is_causal(&m->cfg))
        return forward_loss(m, t, b, counted);
    int *len = tape_scratch(t, (size_t)B * sizeof(int)), *order = tape_scratch(t, (size_t)B * sizeof(int)),
        *end = tape_scratch(t, (size_t)groups * sizeof(int)), *gT = tape_scratch(t, (size_t)groups * sizeof(int));
    const int G = step_length_plan(b, groups, len, order, end, gT);
    if (gT[0] == T || (*counted = count_targets(b)) == 0) return forward_loss(m, t, b, counted);
    Tensor *loss = NULL;
    *positions = 0;
    model_groups_begin(m, T);
    for (int g = 0, r0 = 0; g < G; r0 = end[g++]) {
        const int n = end[g] - r0, Tg = gT[g];
        if (Tg == 0) continue;
        *positions += (long)n * Tg;
        Batch v = { n, Tg, tape_scratch(t, (size_t)n * Tg * sizeof(int)), tape_scratch(t, (size_t)n * Tg * sizeof(int)),
                    b->multilabel };
        for (int i = 0; i < n; i++) {
            memcpy(v.tokens + (size_t)i * Tg, b->tokens + (size_t)order[r0 + i] * T, (size_t)Tg * sizeof(int));
            memcpy(v.targets + (size_t)i * Tg, b->targets + (size_t)order[r0 + i] * T, (size_t)Tg * sizeof(int));
        }
        long c;
        Tensor *l = forward_loss(m, t, &v, &c);
        if (c == 0) continue;
        l = ad_scale(t, l, (float)((double)c / (double)*counted));
        loss = loss ? ad_add(t, loss, l) : l;
    }
    model_groups_end(m);
    return loss;
}

static void zero_frozen(ParamStore *ps, const unsigned char *frozen) {
    for (int k = 0; frozen && k < ps->n; k++)
        if (frozen[k]) memset(ps->p[k].t.grad, 0, (size_t)ps->p[k].t.n * sizeof(float));
}

static double step_gradients_grouped(Model *m, Tape *t, const Batch *b, int groups, long *positions,
                                     const unsigned char *frozen, double *grad_norm) {
    ParamStore *ps = &m->params;
    t->training = 1;   /* dropout on; evaluate() switches it off for its own passes */
    tape_reset(t);
    params_zero_grad(ps);
    long counted;
    Tensor *loss = forward_loss_grouped(m, t, b, groups, &counted, positions);
    tape_backward(t, loss);
    zero_frozen(ps, frozen);
    *grad_norm = optim_grad_norm(ps);
    return loss->data[0];
}

double step_gradients(Model *m, Tape *t, const Batch *b, const unsigned char *frozen, double *grad_norm) {
    long positions;
    return step_gradients_grouped(m, t, b, 1, &positions, frozen, grad_norm);
}

void step_update(Model *m, const CfgTrain *cfg, float lr, long t, double grad_norm, const unsigned char *frozen) {
    optim_clip(&m->params, grad_norm, cfg->grad_clip);
    optim_adam_step_except(&m->params, cfg, lr, t, frozen);
}

/* ---- the worker threads ----------------------------------------------------------------
 *
 * A job is published by bumping `gen` (under `mu`, with a broadcast on `go`); each
 * worker runs its index, and the last one to finish signals `done`.  Waiting spins
 * on the atomics for SPIN rounds first (a job that follows at once, as shards of
 * an evaluation do, costs no system call), then sleeps on the condition variable:
 * a spinning thread between steps would take a core from whatever else runs. */

#define SPIN 2000   /* rounds of a pause instruction: some tens of microseconds */

typedef struct StepWorkers {
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    atomic_ulong gen;        /* jobs published so far */
    atomic_int pending;      /* workers still running the current job */
    int quit;
    int n;                   /* worker threads: indices 1..n */
    int n_tasks;             /* the current job's indices 0..n_tasks−1 */
    void (*fn)(void *, int);
    void *ctx;
    pthread_t *threads;
    struct WorkerArg { struct StepWorkers *w; int index; } *args;
} StepWorkers;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *worker_main(void *arg) {
    const struct WorkerArg *a = arg;
    StepWorkers *w = a->w;
    fpenv_flush_denormals();
    /* SIGINT and SIGTERM go to the caller's thread, whose handler the trainer set. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    unsigned long seen = 0;
    for (;;) {
        for (int i = 0; i < SPIN && atomic_load(&w->gen) == seen; i++) cpu_relax();
        if (atomic_load(&w->gen) == seen) {
            pthread_mutex_lock(&w->mu);
            while (atomic_load(&w->gen) == seen) pthread_cond_wait(&w->go, &w->mu);
            pthread_mutex_unlock(&w->mu);
        }
        seen = atomic_load(&w->gen);
        if (w->quit) return NULL;
        if (a->index < w->n_tasks) w->fn(w->ctx, a->index);
        if (atomic_fetch_sub(&w->pending, 1) == 1) {
            pthread_mutex_lock(&w->mu);
            pthread_cond_signal(&w->done);
            pthread_mutex_unlock(&w->mu);
        }
    }
}

static StepWorkers *workers_start(int n) {
    StepWorkers *w = al_calloc(1, sizeof *w);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->go, NULL);
    pthread_cond_init(&w->done, NULL);
    w->n = n;
    w->threads = al_calloc((size_t)n, sizeof *w->threads);
    w->args = al_calloc((size_t)n, sizeof *w->args);
    for (int i = 0; i < n; i++) {
        w->args[i] = (struct WorkerArg){ w, i + 1 };
        int rc = pthread_create(&w->threads[i], NULL, worker_main, &w->args[i]);
        if (rc) {   /* like running out of memory: nothing sensible to go on with */
            fprintf(stderr, "attnlab: cannot start worker thread %d of %d: %s (lower train.threads)\n", i + 1, n,
                    strerror(rc));
            exit(1);
        }
    }
    return w;
}

/* Publishes a job: fn, ctx and n_tasks are read by the workers after they see gen move. */
static void workers_publish(StepWorkers *w, void (*fn)(void *, int), void *ctx, int n_tasks, int quit) {
    w->fn = fn;
    w->ctx = ctx;
    w->n_tasks = n_tasks;
    w->quit = quit;
    atomic_store(&w->pending, w->n);
    pthread_mutex_lock(&w->mu);
    atomic_fetch_add(&w->gen, 1);
    pthread_cond_broadcast(&w->go);
    pthread_mutex_unlock(&w->mu);
}

static void workers_wait(StepWorkers *w) {
    for (int i = 0; i < SPIN && atomic_load(&w->pending) > 0; i++) cpu_relax();
    if (atomic_load(&w->pending) > 0) {
        pthread_mutex_lock(&w->mu);
        while (atomic_load(&w->pending) > 0) pthread_cond_wait(&w->done, &w->mu);
        pthread_mutex_unlock(&w->mu);
    }
}

static void workers_stop(StepWorkers *w) {
    if (!w) return;
    workers_publish(w, NULL, NULL, 0, 1);
    for (int i = 0; i < w->n; i++) pthread_join(w->threads[i], NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->go);
    pthread_cond_destroy(&w->done);
    free(w->threads);
    free(w->args);
    free(w);
}

void step_pool_run(StepPool *p, int n, void (*fn)(void *ctx, int i), void *ctx) {
    AL_ASSERT(n >= 1 && n <= p->threads);
    if (n == 1 || !p->workers) {   /* one thread: no hand-over */
        for (int i = 0; i < n; i++) fn(ctx, i);
        return;
    }
    workers_publish(p->workers, fn, ctx, n, 0);
    fn(ctx, 0);
    workers_wait(p->workers);
}

/* ---- data-parallel steps -------------------------------------------------------------- */

void step_pool_init(StepPool *p, Model *master, Tape *tape, int threads) {
    AL_ASSERT(threads >= 1);
    memset(p, 0, sizeof *p);
    p->threads = threads;
    p->length_groups = 1;
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
    /* Concurrent al_sgemm calls from the shards' threads, each on one core. */
    if (threads > 1) {
        openblas_set_num_threads(1);
        p->workers = workers_start(threads - 1);
    }
}

void step_pool_free(StepPool *p) {
    workers_stop(p->workers);
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
    Batch v = { row1 - row0, b->seq_len, b->tokens + (size_t)row0 * b->seq_len, b->targets + (size_t)row0 * b->seq_len,
                b->multilabel };
    return v;
}

/* Shard s of S: forward and backward of its rows, its loss's gradient seeded with
 * its weight, into its own model's gradients.  Shard s ≥ 1 first takes the
 * master's rng (as it was when the step began) and distillation hashes. */
typedef struct ShardJob {
    StepPool *p;
    int S;
    const Batch *b;
    long counted;
    Rng rng0;
} ShardJob;

static void shard_run(void *ctx, int s) {
    const ShardJob *job = ctx;
    StepPool *p = job->p;
    const int S = job->S;
    const Batch *b = job->b;
    const long counted = job->counted;
    StepShard *sh = &p->shard[s];
    Tape *t = sh->tape;
    int row0 = (int)((long)b->batch * s / S), row1 = (int)((long)b->batch * (s + 1) / S);
    Batch v = batch_rows(b, row0, row1);
    if (s > 0) {
        t->rng = job->rng0;
        sh->model->anna = p->master->anna;
    }
    t->batch_row0 = row0;
    t->training = 1;
    tape_reset(t);
    params_zero_grad(&sh->model->params);
    Tensor *loss = forward_loss_grouped(sh->model, t, &v, p->length_groups, &sh->counted, &sh->positions);
    sh->loss = loss->data[0];
    /* d(batch mean)/d(shard mean) = counted_s / counted; 0 for a shard (or batch)
     * with nothing to score, whose mean is 0 anyway. */
    const float w = counted ? (float)((double)sh->counted / (double)counted) : 0.0f;
    tape_backward_from(t, loss, &w);
    t->batch_row0 = 0;
}

double step_gradients_pool(StepPool *p, const Batch *b, const unsigned char *frozen, double *grad_norm) {
    const int S = b->batch < p->threads ? b->batch : p->threads;
    if (S <= 1)
        return step_gradients_grouped(p->master, p->shard[0].tape, b, p->length_groups, &p->shard[0].positions, frozen,
                                      grad_norm);
    const long counted = count_targets(b);
    ShardJob job = { p, S, b, counted, p->shard[0].tape->rng };
    /* Which thread runs which shard would not matter: each has its own replica. */
    step_pool_run(p, S, shard_run, &job);
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
