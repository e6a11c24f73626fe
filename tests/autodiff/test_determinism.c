/* test_determinism.c — the same seeded graph trained twice gives bit-identical
 * losses, parameters and parameter gradients (memcmp, not a tolerance).
 *
 * The runs deliberately differ in what must not matter: where the arena puts
 * the buffers, and what the arena memory held before, so an op that depends on
 * either (reads memory it never wrote, say) shows up.  The same for a model
 * trained with data-parallel steps over 2 threads (train/step.h): its shards'
 * arenas too are grown from too small or poisoned first. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/config/config.h"
#include "attnlab/train/step.h"
#include "attnlab/util/error.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

enum { V = 16, D = 8, H = 2, B = 2, T = 6, STEPS = 4 };

/* Parameters in one block: emb (V, D); wq, wk, wv, wo (D, D); bo (D); wout (V, D); bout (V). */
enum { N_PARAMS = V * D + 4 * D * D + D + V * D + V };

typedef struct Run {
    float params[N_PARAMS], grads[N_PARAMS];
    float losses[STEPS];
} Run;

typedef struct Net { Tensor emb, wq, wk, wv, wo, bo, wout, bout; } Net;

/* Tensor headers over consecutive slices of the block. */
static void net_bind(Net *n, Run *r) {
    long off = 0;
    Tensor *mats[] = { &n->emb, &n->wq, &n->wk, &n->wv, &n->wo, &n->bo, &n->wout, &n->bout };
    const int rows[] = { V, D, D, D, D, 1, V, 1 };
    const int cols[] = { D, D, D, D, D, D, D, V };
    for (int i = 0; i < 8; i++) {
        int nd = rows[i] == 1 ? 1 : 2;
        const int *shape = nd == 1 ? &cols[i] : (const int[]){ rows[i], cols[i] };
        tensor_init(mats[i], r->params + off, r->grads + off, nd, shape);
        off += mats[i]->n;
    }
    AL_ASSERT(off == N_PARAMS);
}

/* A head-split causal self-attention block and a vocabulary head. */
static Tensor *forward(Tape *t, Net *n, const Tensor *mask, const int *ids, const int *targets) {
    Tensor *h = ad_embedding(t, &n->emb, ids, 2, (const int[]){ B, T });           /* (B, T, D) */
    Tensor *q = ad_split_heads(t, ad_linear(t, h, &n->wq, NULL), H);               /* (B, H, T, D/H) */
    Tensor *k = ad_split_heads(t, ad_linear(t, h, &n->wk, NULL), H);
    Tensor *v = ad_split_heads(t, ad_linear(t, h, &n->wv, NULL), H);
    Tensor *p = ad_softmax(t, ad_matmul(t, q, k, 0, 1), mask);                     /* (B, H, T, T) */
    Tensor *o = ad_linear(t, ad_merge_heads(t, ad_matmul(t, p, v, 0, 0)), &n->wo, &n->bo);
    Tensor *flat = ad_reshape(t, o, 2, (const int[]){ B * T, D });
    return ad_cross_entropy(t, ad_linear(t, flat, &n->wout, &n->bout), targets);
}

static void train(Run *r, Arena *arena, uint64_t seed) {
    Rng init = rng_stream(seed, 1), data = rng_stream(seed, 2);
    for (int i = 0; i < N_PARAMS; i++) r->params[i] = (float)(0.5 * rng_normal(&init));
    Net n;
    net_bind(&n, r);
    float mask_data[T * T];
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) mask_data[i * T + j] = j <= i ? 0.0f : -INFINITY;
    Tensor mask;
    tensor_init(&mask, mask_data, NULL, 2, (const int[]){ T, T });

    Tape t;
    tape_init(&t, arena);
    for (int s = 0; s < STEPS; s++) {
        int ids[B * T], targets[B * T];
        for (int i = 0; i < B * T; i++) {
            ids[i] = (int)rng_below(&data, V);
            targets[i] = rng_below(&data, 4) == 0 ? -1 : (int)rng_below(&data, V);
        }
        tape_reset(&t);
        memset(r->grads, 0, sizeof r->grads);
        Tensor *loss = forward(&t, &n, &mask, ids, targets);
        tape_backward(&t, loss);
        r->losses[s] = loss->data[0];
        if (s == STEPS - 1) {
            /* Evaluation mode runs the same arithmetic without recording or grads
             * (cross_entropy keeps one row of probabilities instead of all): the
             * loss must match bit for bit. */
            tape_reset(&t);
            t.grad_enabled = 0;
            Tensor *eval = forward(&t, &n, &mask, ids, targets);
            CHECK(!memcmp(eval->data, &r->losses[s], sizeof(float)) && eval->grad == NULL && t.n == 0,
                  "evaluation forward: loss %.9g vs %.9g, %d entries", (double)eval->data[0],
                  (double)r->losses[s], t.n);
            break;   /* the last step's gradients are compared as they are, before SGD */
        }
        for (int i = 0; i < N_PARAMS; i++) r->params[i] -= 0.1f * r->grads[i];
    }
    tape_free(&t);
}

static int same(const Run *x, const Run *y) {
    return !memcmp(x->losses, y->losses, sizeof x->losses) &&
           !memcmp(x->params, y->params, sizeof x->params) &&
           !memcmp(x->grads, y->grads, sizeof x->grads);
}

/* ---- data-parallel: a transformer with dropout, 2 threads -------------------------- */

enum { DP_B = 7, DP_T = 10, DP_STEPS = 5 };

typedef struct DpRun {
    float *state;           /* values, gradients, Adam moments after the last step */
    size_t bytes;           /* of state */
    double losses[DP_STEPS];
    Rng rng;                /* the dropout rng after the last step */
} DpRun;

/* arena_bytes for every shard's arena (too small: grown in the first step); poison:
 * fill them with 0xff first. */
static DpRun dp_train(size_t arena_bytes, int poison) {
    Config cfg;
    cfg_defaults(&cfg);
    cfg.model.d_model = 16;
    cfg.model.n_layers = 2;
    cfg.model.n_heads = 2;
    cfg.model.dropout = 0.2f;
    cfg.model.attention.causal = 1;
    Model *m = model_create(&cfg.model, V, V, DP_T, 5);
    Arena arena;
    arena_init(&arena, arena_bytes);
    Tape tape;
    tape_init(&tape, &arena);
    tape.rng = rng_stream(6, 6);
    StepPool pool;
    step_pool_init(&pool, m, &tape, 2);
    for (int s = 0; poison && s < pool.threads; s++) {
        Arena *a = s ? &pool.shard[s].arena : &arena;
        memset(arena_alloc(a, a->cap), 0xff, a->cap);
        arena_reset(a);
    }
    if (!poison && arena_bytes < 8000) {   /* the replica's arena small too */
        arena_free(&pool.shard[1].arena);
        arena_init(&pool.shard[1].arena, arena_bytes);
    }
    Batch b;
    batch_alloc(&b, DP_B, DP_T);
    Rng data = rng_stream(8, 8);
    DpRun r;
    for (int s = 0; s < DP_STEPS; s++) {
        for (int i = 0; i < DP_B * DP_T; i++) {
            b.tokens[i] = (int)rng_below(&data, V);
            b.targets[i] = rng_below(&data, 3) == 0 ? -1 : (int)rng_below(&data, V);
        }
        double norm;
        r.losses[s] = step_gradients_pool(&pool, &b, NULL, &norm);
        step_update(m, &cfg.train, 1e-2f, s + 1, norm, NULL);
    }
    r.bytes = (size_t)m->params.total * 4 * sizeof(float);
    r.state = malloc(r.bytes);
    memcpy(r.state, m->params.block, r.bytes);
    r.rng = tape.rng;
    if (!poison && arena_bytes < 8000)
        CHECK(arena.n_mallocs > 1 && pool.shard[1].arena.n_mallocs > 1, "the small arenas grew");
    batch_free(&b);
    step_pool_free(&pool);
    tape_free(&tape);
    arena_free(&arena);
    model_free(m);
    return r;
}

static void check_data_parallel(void) {
    DpRun a = dp_train(1 << 20, 0), b = dp_train(3000, 0), c = dp_train(1 << 20, 1);
    const size_t bytes = a.bytes;
    CHECK(!memcmp(a.losses, b.losses, sizeof a.losses) && !memcmp(a.state, b.state, bytes) &&
          !memcmp(&a.rng, &b.rng, sizeof a.rng), "2 threads: runs a and b (other arena layout) differ");
    CHECK(!memcmp(a.losses, c.losses, sizeof a.losses) && !memcmp(a.state, c.state, bytes) &&
          !memcmp(&a.rng, &c.rng, sizeof a.rng), "2 threads: runs a and c (poisoned arenas) differ");
    CHECK(isfinite(a.losses[0]) && a.losses[0] > 0, "2 threads: loss %g", a.losses[0]);
    free(a.state);
    free(b.state);
    free(c.state);
}

int main(void) {
    static Run a, b, c, d;

    Arena arena_a;
    arena_init(&arena_a, 1 << 20);
    train(&a, &arena_a, 42);

    /* Too small for a step: step 1 runs through overflow chunks, later steps in
     * the coalesced block, so the buffers' placement differs from run a's. */
    Arena arena_b;
    arena_init(&arena_b, 3000);
    train(&b, &arena_b, 42);
    CHECK(arena_b.n_mallocs > 1, "run b grew its arena");

    /* Big enough for a step and filled with 0xff bytes (a NaN as float) first, so
     * any read of memory no op wrote poisons the results. */
    enum { POISONED = 1 << 18 };
    Arena arena_c;
    arena_init(&arena_c, POISONED);
    memset(arena_alloc(&arena_c, POISONED), 0xff, POISONED);
    arena_reset(&arena_c);
    train(&c, &arena_c, 42);
    CHECK(arena_c.extra == NULL && arena_c.n_mallocs == 1, "run c stayed in the poisoned block");

    CHECK(same(&a, &b), "runs a and b (other arena layout) differ");
    CHECK(same(&a, &c), "runs a and c (poisoned arena) differ");

    /* The comparison means something: the run trained, every gradient is finite,
     * and a different seed gives a different result. */
    int finite = 1, nonzero = 0;
    for (int i = 0; i < N_PARAMS; i++) {
        finite &= isfinite(a.grads[i]) != 0;
        nonzero += a.grads[i] != 0.0f;
    }
    CHECK(finite && nonzero > N_PARAMS / 2, "gradients finite (%d) and mostly non-zero (%d of %d)",
          finite, nonzero, N_PARAMS);
    CHECK(isfinite(a.losses[0]) && a.losses[0] > 0.0f, "loss %g", (double)a.losses[0]);
    arena_reset(&arena_a);
    train(&d, &arena_a, 43);
    CHECK(memcmp(a.grads, d.grads, sizeof a.grads) != 0, "another seed gives other gradients");

    arena_free(&arena_a);
    arena_free(&arena_b);
    arena_free(&arena_c);
    check_data_parallel();
    return check_exit("test_determinism");
}
