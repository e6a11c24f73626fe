/* test_matmul.c — ad_matmul and ad_linear, forward and backward, against naive
 * loops in double, for every transpose combination, batched and shared-B
 * layouts and odd sizes (1, 3, 7, 17, 33).
 *
 * Tolerance per element: the classical bound for a float32 sum of n products,
 * |fl − exact| ≤ n·u·Σ|terms| with u = 2⁻²⁴, whatever order or blocking the
 * GEMM uses.  Backward starts from non-zero grads, so the bound also covers the
 * beta = 1 accumulation (one more term), and checks the accumulation itself. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"
#include "check.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#define U (FLT_EPSILON / 2)

static Tensor *make(int ndim, const int *shape, int with_grad, Rng *r) {
    Tensor *x = al_calloc(1, sizeof *x);
    long n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    tensor_init(x, al_malloc((size_t)n * sizeof(float)), NULL, ndim, shape);
    for (long i = 0; i < n; i++) x->data[i] = (float)(2.0 * rng_uniform(r) - 1.0);
    if (with_grad) {
        /* Non-zero starting grads: backward must add to them, not overwrite. */
        x->grad = al_malloc((size_t)n * sizeof(float));
        for (long i = 0; i < n; i++) x->grad[i] = (float)(2.0 * rng_uniform(r) - 1.0);
    }
    return x;
}

static void drop(Tensor *x) {
    free(x->data);
    free(x->grad);
    free(x);
}

static float *copy_grad(const Tensor *x) {
    if (!x->grad) return NULL;
    float *g = al_malloc((size_t)x->n * sizeof(float));
    memcpy(g, x->grad, (size_t)x->n * sizeof(float));
    return g;
}

/* A reference value with its error bound: Σ terms and Σ |terms| in double. */
typedef struct Acc { double sum, mag; int n; } Acc;

static void acc_add(Acc *a, double v) { a->sum += v; a->mag += fabs(v); a->n++; }

static void check_acc(const Acc *a, float got, const char *what, int *bad) {
    double tol = (a->n + 1) * U * a->mag + 1e-30;
    if (fabs((double)got - a->sum) > tol) {
        if (++*bad <= 3) CHECK_NEAR(got, a->sum, tol, what);
    }
}

/* ------------------------------------------------------------------------------ */
/* matmul */

typedef struct MmCfg {
    int ta, tb, m, n, k;
    int n_batch, batch[2];
    int shared;
    int grad_a, grad_b;
} MmCfg;

/* op(X)[i][j] of a matrix stored (rows, cols), or (cols, rows) when trans. */
static double op_at(const float *x, int trans, int rows, int cols, int i, int j) {
    return trans ? x[(long)j * rows + i] : x[(long)i * cols + j];
}

static void run_matmul(Arena *arena, const MmCfg *c, Rng *r) {
    int sa[4], sb[4], nd = 0;
    for (int i = 0; i < c->n_batch; i++) sa[nd] = sb[nd] = c->batch[i], nd++;
    sa[nd] = c->ta ? c->k : c->m;
    sa[nd + 1] = c->ta ? c->m : c->k;
    int nb0 = c->shared ? 0 : nd;
    sb[nb0] = c->tb ? c->n : c->k;
    sb[nb0 + 1] = c->tb ? c->k : c->n;
    Tensor *a = make(nd + 2, sa, c->grad_a, r), *b = make(nb0 + 2, sb, c->grad_b, r);
    float *ga0 = copy_grad(a), *gb0 = copy_grad(b);

    Tape t;
    tape_init(&t, arena);
    Tensor *out = ad_matmul(&t, a, b, c->ta, c->tb);
    long batch = a->n / ((long)c->m * c->k);
    CHECK(out->ndim == nd + 2 && out->shape[nd] == c->m && out->shape[nd + 1] == c->n &&
          out->n == batch * c->m * c->n, "matmul output shape");
    float *dout = tape_scratch(&t, (size_t)out->n * sizeof(float));
    for (long i = 0; i < out->n; i++) dout[i] = (float)(2.0 * rng_uniform(r) - 1.0);
    tape_backward_from(&t, out, dout);

    char what[128];
    snprintf(what, sizeof what, "matmul ta=%d tb=%d m=%d n=%d k=%d batch=%ld%s grads %d%d", c->ta,
             c->tb, c->m, c->n, c->k, batch, c->shared ? " shared" : "", c->grad_a, c->grad_b);
    int bad = 0;
    long mk = (long)c->m * c->k, kn = (long)c->k * c->n, mn = (long)c->m * c->n;
    for (long g = 0; g < batch; g++) {
        const float *A = a->data + g * mk, *B = b->data + (c->shared ? 0 : g * kn);
        const float *dC = dout + g * mn;
        for (int i = 0; i < c->m; i++)            /* C = op(A)·op(B) */
            for (int j = 0; j < c->n; j++) {
                Acc s = {0};
                for (int p = 0; p < c->k; p++)
                    acc_add(&s, op_at(A, c->ta, c->m, c->k, i, p) * op_at(B, c->tb, c->k, c->n, p, j));
                check_acc(&s, out->data[g * mn + (long)i * c->n + j], what, &bad);
            }
        if (a->grad)                               /* d op(A) = dC·op(B)ᵀ */
            for (int i = 0; i < c->m; i++)
                for (int p = 0; p < c->k; p++) {
                    long at = g * mk + (c->ta ? (long)p * c->m + i : (long)i * c->k + p);
                    Acc s = {0};
                    acc_add(&s, ga0[at]);
                    for (int j = 0; j < c->n; j++)
                        acc_add(&s, dC[(long)i * c->n + j] * op_at(B, c->tb, c->k, c->n, p, j));
                    check_acc(&s, a->grad[at], what, &bad);
                }
    }
    if (b->grad) {                                 /* d op(B) = op(A)ᵀ·dC, summed when shared */
        long n_sets = c->shared ? 1 : batch, per_set = c->shared ? batch : 1;
        for (long s0 = 0; s0 < n_sets; s0++)
            for (int p = 0; p < c->k; p++)
                for (int j = 0; j < c->n; j++) {
                    long at = s0 * kn + (c->tb ? (long)j * c->k + p : (long)p * c->n + j);
                    Acc s = {0};
                    acc_add(&s, gb0[at]);
                    for (long g = s0 * per_set; g < (s0 + 1) * per_set; g++)
                        for (int i = 0; i < c->m; i++)
                            acc_add(&s, op_at(a->data + g * mk, c->ta, c->m, c->k, i, p) *
                                            dout[g * mn + (long)i * c->n + j]);
                    check_acc(&s, b->grad[at], what, &bad);
                }
    }
    CHECK(bad == 0, "%s: %d elements out of bound", what, bad);

    tape_free(&t);
    arena_reset(arena);
    free(ga0);
    free(gb0);
    drop(a);
    drop(b);
}

static void test_matmul(Arena *arena, Rng *r) {
    static const int sizes[][3] = {
        {1, 1, 1}, {1, 7, 3}, {3, 1, 7}, {7, 3, 1}, {17, 33, 7}, {33, 17, 33}, {3, 7, 17},
    };
    static const struct { int n_batch, batch[2], shared; } layouts[] = {
        {0, {0}, 1}, {1, {2}, 0}, {2, {2, 3}, 0}, {1, {3}, 1}, {2, {2, 2}, 1},
    };
    int idx = 0;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++)
                for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++, idx++) {
                    /* Rotate which inputs carry a grad: backward must skip the others. */
                    int mask = idx % 3;
                    MmCfg c = { ta, tb, sizes[s][0], sizes[s][1], sizes[s][2],
                                layouts[l].n_batch, { layouts[l].batch[0], layouts[l].batch[1] },
                                layouts[l].shared, mask != 2, mask != 1 };
                    run_matmul(arena, &c, r);
                }
}

/* ------------------------------------------------------------------------------ */
/* linear */

static void run_linear(Arena *arena, int ndim, const int *xshape, int out_dim, int bias, Rng *r) {
    int in = xshape[ndim - 1];
    Tensor *x = make(ndim, xshape, 1, r);
    Tensor *w = make(2, (const int[]){ out_dim, in }, 1, r);
    Tensor *b = bias ? make(1, &out_dim, 1, r) : NULL;
    float *gx0 = copy_grad(x), *gw0 = copy_grad(w), *gb0 = b ? copy_grad(b) : NULL;

    Tape t;
    tape_init(&t, arena);
    Tensor *y = ad_linear(&t, x, w, b);
    long rows = x->n / in;
    CHECK(y->ndim == ndim && y->shape[ndim - 1] == out_dim && y->n == rows * out_dim, "linear shape");
    float *dy = tape_scratch(&t, (size_t)y->n * sizeof(float));
    for (long i = 0; i < y->n; i++) dy[i] = (float)(2.0 * rng_uniform(r) - 1.0);
    tape_backward_from(&t, y, dy);

    char what[96];
    snprintf(what, sizeof what, "linear rows=%ld in=%d out=%d bias=%d", rows, in, out_dim, bias);
    int bad = 0;
    for (long i = 0; i < rows; i++)
        for (int o = 0; o < out_dim; o++) {        /* y = x·Wᵀ + b */
            Acc s = {0};
            if (b) acc_add(&s, b->data[o]);
            for (int p = 0; p < in; p++) acc_add(&s, (double)x->data[i * in + p] * w->data[(long)o * in + p]);
            check_acc(&s, y->data[i * out_dim + o], what, &bad);
        }
    for (long i = 0; i < rows; i++)                /* dx = dy·W */
        for (int p = 0; p < in; p++) {
            Acc s = {0};
            acc_add(&s, gx0[i * in + p]);
            for (int o = 0; o < out_dim; o++) acc_add(&s, (double)dy[i * out_dim + o] * w->data[(long)o * in + p]);
            check_acc(&s, x->grad[i * in + p], what, &bad);
        }
    for (int o = 0; o < out_dim; o++) {            /* dW = dyᵀ·x, db = Σ_rows dy */
        for (int p = 0; p < in; p++) {
            Acc s = {0};
            acc_add(&s, gw0[(long)o * in + p]);
            for (long i = 0; i < rows; i++) acc_add(&s, (double)dy[i * out_dim + o] * x->data[i * in + p]);
            check_acc(&s, w->grad[(long)o * in + p], what, &bad);
        }
        if (b) {
            Acc s = {0};
            acc_add(&s, gb0[o]);
            for (long i = 0; i < rows; i++) acc_add(&s, dy[i * out_dim + o]);
            check_acc(&s, b->grad[o], what, &bad);
        }
    }
    CHECK(bad == 0, "%s: %d elements out of bound", what, bad);

    tape_free(&t);
    arena_reset(arena);
    free(gx0);
    free(gw0);
    free(gb0);
    drop(x);
    drop(w);
    if (b) drop(b);
}

static void test_linear(Arena *arena, Rng *r) {
    static const int dims[] = { 1, 3, 7, 17, 33 };
    for (int bias = 0; bias < 2; bias++)
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < 5; j++) {
                run_linear(arena, 2, (const int[]){ dims[(i + j) % 5], dims[i] }, dims[j], bias, r);
                run_linear(arena, 3, (const int[]){ 2, dims[j], dims[i] }, dims[(i + 2) % 5], bias, r);
            }
}

/* ------------------------------------------------------------------------------ */
/* Grad bookkeeping: no grad anywhere → no grad on the output and no tape entry;
 * evaluation mode (grad_enabled = 0) likewise even when inputs have grads. */
static void test_no_grad(Arena *arena, Rng *r) {
    Tape t;
    tape_init(&t, arena);
    Tensor *a = make(2, (const int[]){ 3, 4 }, 0, r), *b = make(2, (const int[]){ 4, 5 }, 0, r);
    Tensor *w = make(2, (const int[]){ 5, 4 }, 1, r);
    Tensor *c = ad_matmul(&t, a, b, 0, 0);
    CHECK(c->grad == NULL && t.n == 0, "matmul of data: no grad, nothing recorded");
    Tensor *y = ad_linear(&t, a, w, NULL);
    CHECK(y->grad != NULL && t.n == 1, "linear with a trainable W records one entry");
    t.grad_enabled = 0;
    y = ad_linear(&t, a, w, NULL);
    CHECK(y->grad == NULL && t.n == 1, "evaluation mode: no grad, nothing recorded");
    tape_free(&t);
    arena_reset(arena);
    drop(a);
    drop(b);
    drop(w);
}

int main(void) {
    Arena arena;
    arena_init(&arena, 1 << 20);
    Rng r = rng_stream(7, 0x6d6d);
    test_matmul(&arena, &r);
    test_linear(&arena, &r);
    test_no_grad(&arena, &r);
    arena_free(&arena);
    return check_exit("test_matmul");
}
