/* test_arena.c — the step arena: alignment, growth through overflow chunks,
 * coalescing on reset, and a 1000-step training loop whose memory is flat (no
 * malloc, same high-water mark, same bytes in use) from step 3 on. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"
#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int aligned(const void *p) { return (uintptr_t)p % ARENA_ALIGN == 0; }

static int in_main_block(const Arena *a, const void *p, size_t bytes) {
    const char *c = p;
    return c >= a->base && c + bytes <= a->base + a->cap;
}

/* ------------------------------------------------------------------------------ */

static void test_alignment(void) {
    Arena a;
    arena_init(&a, 1000);
    CHECK(a.cap % ARENA_ALIGN == 0 && a.cap >= 1000, "cap rounded up to ARENA_ALIGN: %zu", a.cap);
    static const size_t sizes[] = { 1, 3, 63, 64, 65, 100, 7, 0 };
    char *prev = NULL;
    size_t prev_size = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char *p = arena_alloc(&a, sizes[i]);
        CHECK(aligned(p), "alloc(%zu) at %p is not %d-aligned", sizes[i], (void *)p, ARENA_ALIGN);
        CHECK(!prev || p >= prev + prev_size, "alloc(%zu) overlaps the previous block", sizes[i]);
        memset(p, 0xab, sizes[i]);
        prev = p;
        prev_size = sizes[i];
    }
    /* 1,3,63,64 → 64 each; 65,100 → 128 each; 7,0 → 64 each */
    CHECK(arena_in_use(&a) == 4 * 64 + 2 * 128 + 2 * 64, "in use %zu", arena_in_use(&a));
    CHECK(a.extra == NULL, "everything fit in the main block");
    arena_free(&a);
}

static void test_growth_and_coalescing(void) {
    Arena a;
    arena_init(&a, 256);
    long m0 = a.n_mallocs;
    char *p1 = arena_alloc(&a, 200);             /* 256 bytes: fills the main block */
    CHECK(in_main_block(&a, p1, 200) && a.extra == NULL && a.n_mallocs == m0, "first alloc in block");
    char *p2 = arena_alloc(&a, 100);             /* overflow: a chunk of the block's size */
    CHECK(a.extra != NULL && !in_main_block(&a, p2, 100) && aligned(p2), "overflow chunk");
    CHECK(a.n_mallocs > m0, "the overflow chunk was malloc'ed");
    char *p3 = arena_alloc(&a, 1000);            /* bigger than any chunk: its own chunk */
    CHECK(aligned(p3) && !in_main_block(&a, p3, 1000), "large overflow");
    memset(p1, 1, 200);
    memset(p2, 2, 100);
    memset(p3, 3, 1000);
    CHECK(p1[199] == 1 && p2[0] == 2 && p2[99] == 2 && p3[999] == 3, "blocks do not overlap");
    size_t hw = 256 + 128 + 1024;
    CHECK(a.high_water == hw && arena_in_use(&a) == hw, "high water %zu, in use %zu", a.high_water,
          arena_in_use(&a));

    /* Reset coalesces: one block with room for the high-water mark, one malloc. */
    long m1 = a.n_mallocs;
    arena_reset(&a);
    CHECK(a.extra == NULL && a.extra_used == 0 && a.used == 0, "reset drops the chunks");
    CHECK(a.cap >= hw && a.cap % ARENA_ALIGN == 0, "coalesced cap %zu >= high water %zu", a.cap, hw);
    CHECK(a.n_mallocs == m1 + 1, "coalescing costs exactly one malloc (%ld)", a.n_mallocs - m1);

    /* The same step again fits without malloc, all in the main block. */
    long m2 = a.n_mallocs;
    p1 = arena_alloc(&a, 200);
    p2 = arena_alloc(&a, 100);
    p3 = arena_alloc(&a, 1000);
    CHECK(in_main_block(&a, p1, 200) && in_main_block(&a, p2, 100) && in_main_block(&a, p3, 1000),
          "after coalescing the step fits in the main block");
    CHECK(a.extra == NULL && a.n_mallocs == m2, "no malloc in the second step");
    CHECK(aligned(p1) && aligned(p2) && aligned(p3), "aligned after coalescing");

    /* A reset with no overflow keeps the block. */
    char *base = a.base;
    arena_reset(&a);
    CHECK(a.base == base && a.n_mallocs == m2 && arena_in_use(&a) == 0, "plain reset keeps the block");

    /* calloc zeroes memory that an earlier step dirtied. */
    memset(arena_alloc(&a, 512), 0xff, 512);
    arena_reset(&a);
    unsigned char *z = arena_calloc(&a, 512);
    int all_zero = 1;
    for (int i = 0; i < 512; i++) all_zero &= z[i] == 0;
    CHECK(all_zero, "arena_calloc returns zeroed memory");
    arena_free(&a);
}

/* ------------------------------------------------------------------------------ */
/* A steady-state training loop: a one-layer causal self-attention language model
 * built from embedding, matmul, softmax, linear, reshape and cross_entropy. */

enum { V = 16, D = 8, B = 2, T = 6, STEPS = 1000 };

typedef struct Model {
    float *block, *grads;                 /* every parameter, and every gradient */
    long n;
    Tensor emb, w, bias;                  /* emb (V, D), w (V, D), bias (V) */
} Model;

static void model_init(Model *m, uint64_t seed) {
    m->n = 2L * V * D + V;
    m->block = al_malloc((size_t)m->n * sizeof(float));
    m->grads = al_calloc((size_t)m->n, sizeof(float));
    Rng r = rng_stream(seed, 1);
    for (long i = 0; i < m->n; i++) m->block[i] = (float)(0.3 * rng_normal(&r));
    tensor_init(&m->emb, m->block, m->grads, 2, (const int[]){ V, D });
    tensor_init(&m->w, m->block + V * D, m->grads + V * D, 2, (const int[]){ V, D });
    tensor_init(&m->bias, m->block + 2 * V * D, m->grads + 2 * V * D, 1, (const int[]){ V });
}

static void model_free(Model *m) {
    free(m->block);
    free(m->grads);
}

/* One step: forward, backward and SGD; returns the loss. */
static float train_step(Tape *t, Model *m, const Tensor *mask, const int *ids, const int *targets) {
    tape_reset(t);
    memset(m->grads, 0, (size_t)m->n * sizeof(float));
    Tensor *h = ad_embedding(t, &m->emb, ids, 2, (const int[]){ B, T });     /* (B, T, D) */
    Tensor *p = ad_softmax(t, ad_matmul(t, h, h, 0, 1), mask);              /* (B, T, T) */
    Tensor *ctx = ad_matmul(t, p, h, 0, 0);                                 /* (B, T, D) */
    Tensor *logits = ad_linear(t, ad_reshape(t, ctx, 2, (const int[]){ B * T, D }), &m->w, &m->bias);
    Tensor *loss = ad_cross_entropy(t, logits, targets);
    tape_backward(t, loss);
    for (long i = 0; i < m->n; i++) m->block[i] -= 0.2f * m->grads[i];
    return loss->data[0];
}

static void test_steady_state(void) {
    Arena arena;
    arena_init(&arena, 4096);   /* deliberately small: step 1 must grow */
    Tape t;
    tape_init(&t, &arena);
    Model m;
    model_init(&m, 5);
    float mask_data[T * T];
    Tensor mask;
    tensor_init(&mask, mask_data, NULL, 2, (const int[]){ T, T });
    ad_causal_mask(&mask);

    /* Fixed data: the next token is a fixed function of the current one, so the
     * loss must fall; every 5th target is ignored. */
    int ids[B * T], targets[B * T];
    Rng r = rng_stream(5, 2);
    for (int i = 0; i < B * T; i++) {
        ids[i] = (int)rng_below(&r, V);
        targets[i] = i % 5 == 4 ? -1 : (ids[i] * 7 + 3) % V;
    }

    long mallocs0 = arena.n_mallocs;
    size_t hw3 = 0, in_use3 = 0, cap3 = 0;
    long mallocs3 = 0;
    int cap_entries3 = 0, n_entries3 = 0, drift = 0;
    float first = 0, last = 0;
    for (int step = 1; step <= STEPS; step++) {
        last = train_step(&t, &m, &mask, ids, targets);
        if (step == 1) first = last;
        if (step == 1) CHECK(arena.n_mallocs > mallocs0, "step 1 outgrew the 4 KiB arena");
        if (step == 3) {
            hw3 = arena.high_water;
            in_use3 = arena_in_use(&arena);
            cap3 = arena.cap;
            mallocs3 = arena.n_mallocs;
            cap_entries3 = t.cap;
            n_entries3 = t.n;
        } else if (step > 3) {
            drift += arena.high_water != hw3 || arena_in_use(&arena) != in_use3 ||
                     arena.cap != cap3 || arena.n_mallocs != mallocs3 || arena.extra != NULL ||
                     t.cap != cap_entries3 || t.n != n_entries3;
        }
    }
    CHECK(drift == 0, "%d of %d steps changed the arena or tape footprint", drift, STEPS - 3);
    CHECK(arena.n_mallocs == mallocs3, "mallocs after step 3: %ld", arena.n_mallocs - mallocs3);
    CHECK(arena.high_water == hw3 && arena_in_use(&arena) == in_use3,
          "high water %zu vs %zu, in use %zu vs %zu", arena.high_water, hw3, arena_in_use(&arena), in_use3);
    CHECK(n_entries3 == 6, "one tape entry per recording op (reshape records none): %d", n_entries3);
    CHECK(isfinite(last) && last < 0.25f * first, "training works: loss %g -> %g", first, last);

    model_free(&m);
    tape_free(&t);
    arena_free(&arena);
}

/* ------------------------------------------------------------------------------ */
/* First writer assigns (tape.h).  One graph exercising every op that follows the
 * rule next to ops that only add (embedding, split/merge_heads, attention), with
 * tensors of several consumers (x, h, y), a view whose grad is shared (reshape), an
 * input used twice by one op (y∘y), a residual, broadcast rows, ignored targets, a
 * branch that reaches no loss (skipped) and parameters declared fresh.  Its
 * gradients must equal, value for value, the same graph's with every grad zeroed
 * before backward (the rule off), whatever the arena and the parameter grads held. */

enum { FW_PARAMS = 12 };
enum { P_EMB, P_ROW, P_G, P_BLN, P_WQ, P_BQ, P_WK, P_WO, P_BO, P_WC, P_BC, P_UNUSED };

typedef struct FwNet {
    float *block, *grads;
    long n;
    Tensor p[FW_PARAMS];
} FwNet;

static void fw_init(FwNet *m) {
    const int rows[FW_PARAMS] = { V, 1, 1, 1, D, 1, D, D, 1, V, 1, 1 };
    const int cols[FW_PARAMS] = { D, D, D, D, D, D, D, D, D, D, V, D };
    m->n = 0;
    for (int i = 0; i < FW_PARAMS; i++) m->n += (long)rows[i] * cols[i];
    m->block = al_malloc((size_t)m->n * sizeof(float));
    m->grads = al_malloc((size_t)m->n * sizeof(float));
    Rng r = rng_stream(11, 3);
    for (long i = 0; i < m->n; i++) m->block[i] = (float)(0.5 * rng_normal(&r));
    long off = 0;
    for (int i = 0; i < FW_PARAMS; i++) {
        const int shape[2] = { rows[i], cols[i] };
        tensor_init(&m->p[i], m->block + off, m->grads + off, rows[i] == 1 ? 1 : 2,
                    rows[i] == 1 ? &shape[1] : shape);
        off += m->p[i].n;
    }
}

static Tensor *fw_forward(Tape *t, FwNet *m, const Tensor *mask, const int *ids, const int *targets) {
    Tensor *p = m->p;
    const int btd[3] = { B, T, D };
    Tensor *x = ad_add(t, ad_embedding(t, &p[P_EMB], ids, 2, (const int[]){ B, T }), &p[P_ROW]);
    Tensor *h = ad_layernorm(t, x, &p[P_G], &p[P_BLN], 1e-5f);
    Tensor *q = ad_linear(t, h, &p[P_WQ], &p[P_BQ]), *k = ad_linear(t, h, &p[P_WK], NULL);
    Tensor *v = ad_reshape(t, ad_reshape(t, h, 2, (const int[]){ B * T, D }), 3, btd);
    Tensor *att = ad_merge_heads(t, ad_attention(t, ad_split_heads(t, q, 2), ad_split_heads(t, k, 2),
                                                  ad_split_heads(t, v, 2), mask, 0.5f));
    Tensor *s = ad_softmax(t, ad_matmul(t, q, k, 0, 1), mask);
    Tensor *g = ad_gelu(t, ad_matmul(t, s, att, 0, 0), GELU_TANH);
    Tensor *y = ad_linear_residual(t, g, &p[P_WO], &p[P_BO], x);
    ad_relu(t, y);   /* a dead branch */
    Tensor *z = ad_sub(t, ad_mul(t, y, y), ad_scale(t, y, 0.5f));
    z = ad_dropout(t, ad_l2norm(t, z, 1e-6f), 0.25f);
    Tensor *flat = ad_reshape(t, z, 2, (const int[]){ B * T, D });
    Tensor *ce = ad_cross_entropy(t, ad_linear(t, flat, &p[P_WC], &p[P_BC]), targets);
    return ad_add(t, ce, ad_mean(t, ad_mul(t, z, &p[P_ROW])));
}

/* mode 0: every grad zeroed before backward (the rule off); 1: the rule on;
 * 2: the rule on, arena poisoned, parameter grads NaN and declared fresh. */
static void fw_run(FwNet *m, int mode, float *grads_out) {
    Arena arena;
    arena_init(&arena, 1 << 20);
    if (mode == 2) {
        memset(arena_alloc(&arena, 1 << 20), 0xff, 1 << 20);
        arena_reset(&arena);
    }
    Tape t;
    tape_init(&t, &arena);
    t.training = 1;
    rng_seed(&t.rng, 9);
    memset(m->grads, mode == 2 ? 0xff : 0, (size_t)m->n * sizeof(float));
    if (mode == 2)
        for (int i = 0; i < FW_PARAMS; i++) tape_grad_fresh(&m->p[i]);
    float mask_data[T * T];
    Tensor mask;
    tensor_init(&mask, mask_data, NULL, 2, (const int[]){ T, T });
    ad_causal_mask(&mask);
    int ids[B * T], targets[B * T];
    for (int i = 0; i < B * T; i++) {
        ids[i] = (i * 5 + 1) % V;
        targets[i] = i % 4 == 3 ? -1 : (i * 3) % V;
    }
    Tensor *loss = fw_forward(&t, m, &mask, ids, targets);
    if (mode == 0)
        for (int k = 0; k < t.n; k++) {
            tape_grad_settle(t.entries[k].out);
            for (int i = 0; i < TAPE_MAX_IN; i++) tape_grad_settle(t.entries[k].in[i]);
        }
    tape_backward(&t, loss);
    for (int i = 0; i < FW_PARAMS; i++) tape_grad_settle(&m->p[i]);
    CHECK(arena.extra == NULL, "the first-writer graph fits in its arena (mode %d)", mode);
    memcpy(grads_out, m->grads, (size_t)m->n * sizeof(float));
    tape_free(&t);
    arena_free(&arena);
}

static void test_first_writer(void) {
    FwNet m;
    fw_init(&m);
    float *g[3];
    for (int mode = 0; mode < 3; mode++) {
        g[mode] = al_malloc((size_t)m.n * sizeof(float));
        fw_run(&m, mode, g[mode]);
    }
    long differ = 0, nonfinite = 0, nonzero = 0;
    for (long i = 0; i < m.n; i++) {
        differ += g[1][i] != g[0][i] || g[2][i] != g[0][i];
        nonfinite += !isfinite(g[0][i]) || !isfinite(g[2][i]);
        nonzero += g[0][i] != 0.0f;
    }
    CHECK(differ == 0 && nonfinite == 0, "first writer assigns: %ld of %ld gradients differ from "
          "accumulating into zeros, %ld not finite", differ, m.n, nonfinite);
    long unused = m.p[P_UNUSED].grad - m.grads, n_unused = m.p[P_UNUSED].n, unused_zero = 0;
    for (long i = 0; i < n_unused; i++) unused_zero += g[2][unused + i] == 0.0f;
    CHECK(unused_zero == n_unused, "a fresh parameter no op wrote is settled to 0");
    CHECK(nonzero > (m.n - n_unused) / 2, "the graph reaches most parameters (%ld of %ld)", nonzero, m.n);
    for (int mode = 0; mode < 3; mode++) free(g[mode]);
    free(m.block);
    free(m.grads);
}

int main(void) {
    test_alignment();
    test_growth_and_coalescing();
    test_steady_state();
    test_first_writer();
    return check_exit("test_arena");
}
