/* ops_pointwise.c — elementwise arithmetic, sums to a scalar, activations, GLU, dropout.
 *
 * Every op here streams once over contiguous memory in loops gcc vectorises; the
 * activations take their exp/erfc-class math from util/fastmath.h, so no libm call
 * sits in a hot loop.  Every backward follows first writer assigns (tape.h;
 * grad_put.h). */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"

#include "attnlab/util/fastmath.h"
#include "act.h"
#include "grad_put.h"
#include "record.h"

#include <math.h>
#include <stdint.h>

/* ------------------------------------------------------------------------------ */
/* add, sub, mul: a (…, C); b the same shape as a, or C elements (any shape) used
 * for every row of a; y like a.  One mechanism, the op a parameter: `bstride` is
 * b's row stride — C for the same shape, 0 for the broadcast row. */

static inline float binary_apply(OpKind op, float a, float b) {
    return op == OP_ADD ? a + b : op == OP_SUB ? a - b : a * b;
}

static void binary_backward(TapeEntry *e) {
    const Tensor *y = e->out;
    Tensor *a = e->in[0], *b = e->in[1];
    OpKind op = e->op;
    int C = tensor_cols(a);
    long R = tensor_rows(a), bstride = e->i[0];
    /* da = dy (∘ b); then db = ±dy (∘ a), or for a broadcast b its column sums.
     * a and b may be one tensor (x·x): the second write then adds to the first. */
    if (a->grad) {
        int acc = tape_grad_acc(a);
        if (op != OP_MUL || bstride)
            grad_put(a->grad, y->grad, op == OP_MUL ? b->data : NULL, 1.0f, R * C, acc);
        else
            for (long r = 0; r < R; r++) grad_put(a->grad + r * C, y->grad + r * C, b->data, 1.0f, C, acc);
    }
    if (b->grad) {
        int acc = tape_grad_acc(b);
        const float *m = op == OP_MUL ? a->data : NULL;
        float s = op == OP_SUB ? -1.0f : 1.0f;
        if (bstride) grad_put(b->grad, y->grad, m, s, R * C, acc);
        else         grad_put_colsum(b->grad, y->grad, m, s, R, C, acc);
    }
}

static Tensor *binary(Tape *t, OpKind op, Tensor *a, Tensor *b) {
    int C = tensor_cols(a);
    long R = tensor_rows(a);
    int same = tensor_same_shape(a, b);
    AL_ASSERT(same || b->n == C);
    long bstride = same ? C : 0;
    int needs_grad = tape_needs_grad(t, a, b, NULL);
    Tensor *y = tape_tensor(t, needs_grad, a->ndim, a->shape);
    for (long r = 0; r < R; r++) {
        const float *ar = a->data + r * C, *br = b->data + r * bstride;
        float *yr = y->data + r * C;
        for (int c = 0; c < C; c++) yr[c] = binary_apply(op, ar[c], br[c]);
    }
    if (needs_grad)
        ad_record(t, (TapeEntry){ .op = op, .backward = binary_backward, .out = y, .in = { a, b },
                                  .i = { (int)bstride }, .first_write = 1 });
    return y;
}

Tensor *ad_add(Tape *t, Tensor *a, Tensor *b) { return binary(t, OP_ADD, a, b); }
Tensor *ad_sub(Tape *t, Tensor *a, Tensor *b) { return binary(t, OP_SUB, a, b); }
Tensor *ad_mul(Tape *t, Tensor *a, Tensor *b) { return binary(t, OP_MUL, a, b); }

/* ------------------------------------------------------------------------------ */
/* scale: y = s·a, any shape. */

static void scale_backward(TapeEntry *e) {
    grad_put(e->in[0]->grad, e->out->grad, NULL, e->f[0], e->out->n, tape_grad_acc(e->in[0]));
}

Tensor *ad_scale(Tape *t, Tensor *a, float s) {
    int needs_grad = tape_needs_grad(t, a, NULL, NULL);
    Tensor *y = tape_tensor(t, needs_grad, a->ndim, a->shape);
    for (long i = 0; i < a->n; i++) y->data[i] = s * a->data[i];
    if (needs_grad)
        ad_record(t, (TapeEntry){ .op = OP_SCALE, .backward = scale_backward, .out = y, .in = { a }, .f = { s },
                                  .first_write = 1 });
    return y;
}

/* ------------------------------------------------------------------------------ */
/* sum, mean: a any shape → y (1) = f·Σa, f = 1 or 1/n.  The sum runs in double:
 * in float, adding a million terms one by one would lose ~3 digits. */

static void reduce_backward(TapeEntry *e) {
    Tensor *a = e->in[0];
    grad_put_const(a->grad, e->f[0] * e->out->grad[0], a->n, tape_grad_acc(a));
}

static Tensor *reduce(Tape *t, OpKind op, Tensor *a) {
    /* Independent double lanes: gcc vectorises them (one running sum it may not
     * reorder).  The tail has its own accumulator so that the lanes stay alike. */
    double acc[8] = { 0 }, s = 0;
    long i = 0;
    for (; i + 8 <= a->n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += a->data[i + j];
    for (; i < a->n; i++) s += a->data[i];
    for (int j = 0; j < 8; j++) s += acc[j];
    double f = op == OP_MEAN ? 1.0 / (double)a->n : 1.0;
    int needs_grad = tape_needs_grad(t, a, NULL, NULL);
    Tensor *y = tape_tensor(t, needs_grad, 1, (const int[]){ 1 });
    y->data[0] = (float)(f * s);
    if (needs_grad)
        ad_record(t, (TapeEntry){ .op = op, .backward = reduce_backward, .out = y, .in = { a }, .f = { (float)f },
                                  .first_write = 1 });
    return y;
}

Tensor *ad_sum(Tape *t, Tensor *a) { return reduce(t, OP_SUM, a); }
Tensor *ad_mean(Tape *t, Tensor *a) { return reduce(t, OP_MEAN, a); }

/* ------------------------------------------------------------------------------ */
/* Activations: x any shape → y like x.  Each is one inline function giving the
 * value and the derivative at x (the GeLUs and SiLU in act.h, shared with fused
 * ops: ops_mlp.c's GeLU).
 * With a gradient, forward stores both in one pass (they share the exp and the
 * division) and backward is dx += dy·d; without, gcc drops the derivative half. */

typedef enum Act { ACT_GELU_TANH, ACT_GELU_ERF, ACT_ELU, ACT_RELU, ACT_SILU } Act;

/* ELU, alpha 1: x for x > 0, e^x − 1 otherwise; derivative 1 or e^x (both 1 at 0). */
static inline ValDer elu(float x) {
    float em1 = fm_expm1(x);
    return (ValDer){ fm_select(x > 0.0f, x, em1), fm_select(x > 0.0f, 1.0f, em1 + 1.0f) };
}

/* ReLU; derivative 0 at 0, as PyTorch. */
static inline ValDer relu(float x) {
    return (ValDer){ x > 0.0f ? x : 0.0f, x > 0.0f ? 1.0f : 0.0f };
}

/* y = f(x), and d = f′(x) unless d is NULL, over act_forward's x, y, d, n.  A
 * macro, not a function pointer, so each activation's loop is compiled (and
 * vectorised) with f inlined. */
#define ACT_LOOP(f)                                                                       \
    do {                                                                                  \
        if (d)                                                                            \
            for (long i = 0; i < n; i++) {                                                \
                ValDer v = f(x[i]);                                                       \
                y[i] = v.y;                                                               \
                d[i] = v.d;                                                               \
            }                                                                             \
        else                                                                              \
            for (long i = 0; i < n; i++) y[i] = f(x[i]).y;                                \
    } while (0)

static void act_forward(Act act, const float *restrict x, float *restrict y,
                        float *restrict d, long n) {
    switch (act) {
    case ACT_GELU_TANH: ACT_LOOP(gelu_tanh); break;
    case ACT_GELU_ERF:  ACT_LOOP(gelu_erf);  break;
    case ACT_ELU:       ACT_LOOP(elu);       break;
    case ACT_RELU:      ACT_LOOP(relu);      break;
    case ACT_SILU:      ACT_LOOP(silu);      break;
    }
}

static void act_backward(TapeEntry *e) {
    grad_put(e->in[0]->grad, e->out->grad, e->saved[0], 1.0f, e->out->n, tape_grad_acc(e->in[0]));
}

static Tensor *activation(Tape *t, OpKind op, Act act, Tensor *x) {
    int needs_grad = tape_needs_grad(t, x, NULL, NULL);
    Tensor *y = tape_tensor(t, needs_grad, x->ndim, x->shape);
    float *d = needs_grad ? tape_scratch(t, (size_t)x->n * sizeof(float)) : NULL;
    act_forward(act, x->data, y->data, d, x->n);
    if (needs_grad)
        ad_record(t, (TapeEntry){ .op = op, .backward = act_backward, .out = y, .in = { x }, .saved = { d },
                                  .first_write = 1 });
    return y;
}

Tensor *ad_gelu(Tape *t, Tensor *x, AdGelu kind) {
    return activation(t, OP_GELU, kind == GELU_ERF ? ACT_GELU_ERF : ACT_GELU_TANH, x);
}
Tensor *ad_elu(Tape *t, Tensor *x) { return activation(t, OP_ELU, ACT_ELU, x); }
Tensor *ad_relu(Tape *t, Tensor *x) { return activation(t, OP_RELU, ACT_RELU, x); }
Tensor *ad_silu(Tape *t, Tensor *x) { return activation(t, OP_SILU, ACT_SILU, x); }

/* ------------------------------------------------------------------------------ */
/* glu: x (…, 2C) = (a | b) per row → y (…, C) = a·σ(b).  With a gradient, forward
 * stores ∂y/∂x per row as (σ(b) | a·σ(b)·(1 − σ(b))), so backward is two products. */

static void glu_backward(TapeEntry *e) {
    Tensor *x = e->in[0];
    const float *d = e->saved[0], *dy = e->out->grad;
    int C = tensor_cols(e->out), acc = tape_grad_acc(x);
    for (long r = 0, R = tensor_rows(e->out); r < R; r++) {
        grad_put(x->grad + 2 * r * C, dy + r * C, d + 2 * r * C, 1.0f, C, acc);
        grad_put(x->grad + (2 * r + 1) * C, dy + r * C, d + (2 * r + 1) * C, 1.0f, C, acc);
    }
}

Tensor *ad_glu(Tape *t, Tensor *x) {
    int C2 = tensor_cols(x), C = C2 / 2, shape[4];
    AL_ASSERT(C2 % 2 == 0 && x->ndim <= 4);
    for (int i = 0; i < x->ndim; i++) shape[i] = x->shape[i];
    shape[x->ndim - 1] = C;
    int needs_grad = tape_needs_grad(t, x, NULL, NULL);
    Tensor *y = tape_tensor(t, needs_grad, x->ndim, shape);
    float *d = needs_grad ? tape_scratch(t, (size_t)x->n * sizeof(float)) : NULL;
    for (long r = 0, R = tensor_rows(x); r < R; r++) {
        const float *a = x->data + r * C2, *b = a + C;
        float *yr = y->data + r * C;
        if (d) {   /* two loops, not a test per element, so each one vectorises */
            float *da = d + r * C2, *db = da + C;
            for (int c = 0; c < C; c++) {
                Sigmoid g = sigmoid(b[c]);
                yr[c] = a[c] * g.s;
                da[c] = g.s;
                db[c] = a[c] * g.s * g.one_minus_s;
            }
        } else {
            for (int c = 0; c < C; c++) yr[c] = a[c] * sigmoid(b[c]).s;
        }
    }
    if (needs_grad)
        ad_record(t, (TapeEntry){ .op = OP_GLU, .backward = glu_backward, .out = y, .in = { x }, .saved = { d },
                                  .first_write = 1 });
    return y;
}

/* ------------------------------------------------------------------------------ */
/* dropout: x any shape → y like x; y = x·keep/(1 − p), keep ~ Bernoulli(1 − p).
 * Saved: the keep mask, one byte per element.
 *
 * The mask comes from SplitMix64 (Java's SplittableRandom) keyed by one draw from
 * t->rng: element i gets the i-th output of that stream.  Being counter-based it
 * is one vectorised loop; n sequential rng_u64 calls cost ~5 ns each (0.7 ms for
 * 1024×256).  Still a pure function of the tape's rng state, so a seeded or
 * resumed run reproduces every mask. */

static inline uint64_t splitmix64_at(uint64_t key, uint64_t i) {
    uint64_t z = key + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void dropout_backward(TapeEntry *e) {
    const uint8_t *restrict keep = e->saved[0];
    const float *restrict dy = e->out->grad;
    float *restrict dx = e->in[0]->grad;
    float scale = e->f[0];
    if (tape_grad_acc(e->in[0]))
        for (long i = 0; i < e->out->n; i++) dx[i] += (keep[i] ? scale : 0.0f) * dy[i];
    else
        for (long i = 0; i < e->out->n; i++) dx[i] = (keep[i] ? scale : 0.0f) * dy[i];
}

Tensor *ad_dropout(Tape *t, Tensor *x, float p) { return ad_dropout_rows(t, x, p, NULL, 0); }

Tensor *ad_dropout_rows(Tape *t, Tensor *x, float p, const int *rows, int grid_rows_per_item) {
    AL_ASSERT(p >= 0.0f && p < 1.0f);
    if (!t->training || p == 0.0f) return x;
    long n = x->n, per_row = n / x->shape[0];
    uint8_t *keep = tape_scratch(t, (size_t)n);
    /* Drop when a 53-bit uniform u = bits·2⁻⁵³ is below p (rng_uniform's convention). */
    uint64_t key = rng_u64(&t->rng), thr = (uint64_t)ldexp((double)p, 53);
    /* A shard of a batch (t->batch_row0 items in) continues the whole batch's mask:
     * splitmix64_at(key + k·γ, i) = splitmix64_at(key, i + k).  An item is a row of
     * x, or grid_rows_per_item grid rows when x holds grid rows. */
    long per_item = rows ? (long)grid_rows_per_item * per_row : per_row;
    if (t->batch_row0) key += (uint64_t)t->batch_row0 * (uint64_t)per_item * 0x9E3779B97F4A7C15ull;
    for (long r = 0, i = 0; r < n / per_row; r++) {
        uint64_t g = (uint64_t)(rows ? rows[r] : r) * (uint64_t)per_row;   /* row r's first element in the grid */
        for (long c = 0; c < per_row; c++, i++) keep[i] = (splitmix64_at(key, g + (uint64_t)c) >> 11) >= thr;
    }
    float scale = 1.0f / (1.0f - p);
    int needs_grad = tape_needs_grad(t, x, NULL, NULL);
    Tensor *y = tape_tensor(t, needs_grad, x->ndim, x->shape);
    for (long i = 0; i < n; i++) y->data[i] = (keep[i] ? scale : 0.0f) * x->data[i];
    if (needs_grad)
        ad_record(t, (TapeEntry){ .op = OP_DROPOUT, .backward = dropout_backward, .out = y, .in = { x },
                                  .saved = { keep }, .f = { scale }, .first_write = 1 });
    return y;
}
