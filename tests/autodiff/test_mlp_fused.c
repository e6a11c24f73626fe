/* test_mlp_fused.c — the fused MLP (ad_mlp) against its definition.
 *
 * ad_mlp(x, w1, b1, w2, b2, res, kind) must equal the composition
 *   ad_linear(x, w1, b1) → ad_gelu(kind) → ad_linear_residual(·, w2, b2, res)
 * in the output and in the gradients of every input for the same output gradient,
 * to 1e-5 relative to the largest |value| of each compared tensor (the two differ
 * only in float rounding order: the bias b1 is added after the GEMM instead of
 * before it).  Both GeLU kinds, no residual, a residual tensor, res = x, 2-D and
 * 3-D input, widths that are not multiples of a SIMD vector.  Also: one tape entry
 * is recorded, grad mode off gives the same output, the arena holds only the
 * output, its grad and 2·rows·hidden saved floats, and walking the tape backward
 * a second time without a reset is refused (the backward consumed its saved data). */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"
#include "check.h"
#include "testutil.h"
#include "gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-5

typedef struct MlpCase {
    int ndim, xshape[3];
    int hidden, out;
    AdGelu kind;
    int res;            /* 0 none, 1 a tensor like y, 2 x itself */
    uint64_t seed;
} MlpCase;

enum { N_IN = 6 };      /* x, w1, b1, w2, b2, res */

/* max |a − b| over max |b| (1 when b is all zeros). */
static double rel_diff(const float *a, const float *b, long n) {
    double d = 0, m = 0;
    for (long i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - (double)b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return d / (m > 0 ? m : 1);
}

/* One forward (fused or composed) and backward with dout; returns the output
 * (valid until the tape is reset), the input grads left in the leaves. */
static Tensor *run(Tape *t, int fused, Tensor **x, const MlpCase *c, const float *dout) {
    tape_reset(t);
    for (int l = 0; l < N_IN; l++)
        if (x[l]) memset(x[l]->grad, 0, (size_t)x[l]->n * sizeof(float));
    Tensor *res = c->res == 2 ? x[0] : x[5];
    Tensor *y;
    if (fused) {
        y = ad_mlp(t, x[0], x[1], x[2], x[3], x[4], res, c->kind);
    } else {
        Tensor *g = ad_gelu(t, ad_linear(t, x[0], x[1], x[2]), c->kind);
        y = ad_linear_residual(t, g, x[3], x[4], res);
    }
    if (dout) tape_backward_from(t, y, dout);
    return y;
}

static void make_inputs(const MlpCase *c, Tensor **x) {
    int in = c->xshape[c->ndim - 1], yshape[3];
    for (int d = 0; d < c->ndim; d++) yshape[d] = d == c->ndim - 1 ? c->out : c->xshape[d];
    memset(x, 0, N_IN * sizeof *x);
    x[0] = gc_leaf(c->ndim, c->xshape, c->seed, -2.0f, 2.0f);
    x[1] = gc_leaf(2, (const int[]){ c->hidden, in }, c->seed + 1, -0.5f, 0.5f);
    x[2] = gc_leaf(1, &c->hidden, c->seed + 2, -1.0f, 1.0f);
    x[3] = gc_leaf(2, (const int[]){ c->out, c->hidden }, c->seed + 3, -0.5f, 0.5f);
    x[4] = gc_leaf(1, &c->out, c->seed + 4, -1.0f, 1.0f);
    if (c->res == 1) x[5] = gc_leaf(c->ndim, yshape, c->seed + 5, -2.0f, 2.0f);
}

static void check_config(const MlpCase *c) {
    static const char *const NAMES[N_IN] = { "x", "w1", "b1", "w2", "b2", "res" };
    char what[96], sx[32];
    Tensor *x[N_IN];
    make_inputs(c, x);
    snprintf(what, sizeof what, "mlp %s x%s -> %d -> %d%s", c->kind == GELU_ERF ? "erf" : "tanh",
             tensor_shape_str(x[0], sx, sizeof sx), c->hidden, c->out,
             c->res == 2 ? " + x" : c->res ? " + res" : "");
    long rows = tensor_rows(x[0]), n_out = rows * c->out;
    float *dout = al_malloc((size_t)n_out * sizeof(float));
    Rng r = rng_stream(c->seed, 77);
    for (long i = 0; i < n_out; i++) dout[i] = (float)(2.0 * rng_uniform(&r) - 1.0);
    Arena arena;
    arena_init(&arena, 1 << 20);
    Tape t;
    tape_init(&t, &arena);

    /* The composition: output and gradients kept. */
    Tensor *ref = run(&t, 0, x, c, dout);
    float *ref_y = al_malloc((size_t)n_out * sizeof(float)), *ref_g[N_IN] = { NULL };
    memcpy(ref_y, ref->data, (size_t)n_out * sizeof(float));
    for (int l = 0; l < N_IN; l++)
        if (x[l]) {
            ref_g[l] = al_malloc((size_t)x[l]->n * sizeof(float));
            memcpy(ref_g[l], x[l]->grad, (size_t)x[l]->n * sizeof(float));
        }

    /* Fused: the same to TOL; one entry; its arena use is y, dy and g, d. */
    tape_reset(&t);
    size_t before = arena_in_use(&arena);
    Tensor *y = run(&t, 1, x, c, NULL);
    size_t used = arena_in_use(&arena) - before;
    size_t want = sizeof(Tensor) + 2 * (size_t)n_out * sizeof(float) + 2 * (size_t)rows * c->hidden * sizeof(float);
    CHECK(t.n == 1 && t.entries[0].op == OP_MLP, "%s: %d entries recorded", what, t.n);
    CHECK(used >= want && used <= want + 8 * ARENA_ALIGN, "%s: arena use %zu bytes, expected %zu", what, used, want);
    y = run(&t, 1, x, c, dout);
    double dy = rel_diff(y->data, ref_y, n_out), worst = dy;
    CHECK(dy <= TOL, "%s: output differs by %.2e (relative)", what, dy);
    for (int l = 0; l < N_IN; l++) {
        if (!x[l]) continue;
        double d = rel_diff(x[l]->grad, ref_g[l], x[l]->n);
        worst = fmax(worst, d);
        CHECK(d <= TOL, "%s: grad of %s differs by %.2e (relative)", what, NAMES[l], d);
    }
    printf("  %-36s fused vs composed: worst relative difference %.2e\n", what, worst);

    /* Grad mode off: the same output, nothing recorded. */
    float *fused_y = al_malloc((size_t)n_out * sizeof(float));
    memcpy(fused_y, y->data, (size_t)n_out * sizeof(float));
    t.grad_enabled = 0;
    Tensor *e = run(&t, 1, x, c, NULL);
    CHECK(e->grad == NULL && t.n == 0, "%s: grad mode off recorded something", what);
    CHECK(rel_diff(e->data, fused_y, n_out) == 0, "%s: eval output differs", what);
    free(fused_y);
    t.grad_enabled = 1;

    for (int l = 0; l < N_IN; l++) {
        free(ref_g[l]);
        gc_leaf_free(x[l]);
    }
    free(ref_y);
    free(dout);
    tape_free(&t);
    arena_free(&arena);
}

/* A second backward over the same tape: an assertion failure naming the tape's flag. */
static void second_backward(void *ctx) {
    (void)ctx;
    MlpCase c = { 2, {3, 4}, 5, 4, GELU_TANH, 0, 9 };
    Tensor *x[N_IN];
    make_inputs(&c, x);
    Arena arena;
    arena_init(&arena, 1 << 16);
    Tape t;
    tape_init(&t, &arena);
    float dout[12] = { 1 };
    Tensor *y = run(&t, 1, x, &c, dout);
    tape_backward_from(&t, y, dout);   /* must not return */
}

static void test_second_backward_refused(void) {
    char text[512];
    int status = tu_run_captured(second_backward, NULL, text, sizeof text);
    CHECK(status != 0, "a second backward over one tape was not refused");
    CHECK(strstr(text, "walked") != NULL, "second backward: unexpected message: %s", text);
}

int main(void) {
    static const MlpCase configs[] = {
        { 2, {7, 16},     40, 16, GELU_TANH, 0, 1 },
        { 2, {7, 16},     40, 16, GELU_ERF,  0, 2 },
        { 3, {2, 9, 12},  45, 12, GELU_TANH, 2, 3 },   /* res = x, as in a transformer block */
        { 3, {2, 9, 12},  45, 12, GELU_ERF,  2, 4 },
        { 3, {3, 5, 10},  33, 7,  GELU_TANH, 1, 5 },   /* a residual tensor, out ≠ in */
        { 2, {1, 8},      3,  5,  GELU_ERF,  1, 6 },
        { 3, {4, 25, 32}, 128, 32, GELU_TANH, 2, 7 },  /* bench-like widths, mlp_ratio 4 */
    };
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) check_config(&configs[i]);
    test_second_backward_refused();
    return check_exit("test_mlp_fused");
}
