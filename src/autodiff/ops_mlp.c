/* ops_mlp.c — a transformer block's MLP as one op:
 *   y = GELU(x·W1ᵀ + b1)·W2ᵀ + b2 (+ res).
 *
 * Composed of linear → gelu → linear it stores the hidden layer four times over
 * (fc1's output and its grad, GeLU's output and its grad) plus GeLU's derivative.
 * Fused, forward keeps only g = GELU(h) and d = GELU′(h), h = x·W1ᵀ + b1, computed
 * in one pass over the fc1 GEMM's output (which becomes g in place), and backward
 * writes dg = dy·W2 over g (consumed: dW2 has read it) and dh = dg∘d in place, so
 * it needs no scratch at all — and the tape is walked backward once (tape.h).
 * The residual is added inside the fc2 GEMM, as in ad_linear_residual.  Every
 * product is one sgemm (linalg.h); backward follows first writer assigns. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"

#include "act.h"
#include "grad_put.h"
#include "linalg.h"
#include "record.h"

/* x (…, D), w1 (Hd, D), b1 (Hd), w2 (O, Hd), b2 (O), res NULL or like y; y (…, O).
 * Saved: g (R, Hd) and d (R, Hd), R = rows of x. */

typedef struct MlpDims { int rows, in, hidden, out; } MlpDims;

static MlpDims mlp_dims(const Tensor *x, const Tensor *w1, const Tensor *w2) {
    return (MlpDims){ (int)tensor_rows(x), w1->shape[1], w1->shape[0], w2->shape[0] };
}

/* h (R, Hd) ← GELU(h + b1) in place, and d = GELU′(h + b1) unless d is NULL.  A
 * macro, not a function pointer, so each kind's loop is compiled (and vectorised)
 * with its GeLU inlined (as ops_pointwise.c's ACT_LOOP). */
#define GELU_ROWS(f)                                                                      \
    do {                                                                                  \
        for (long r = 0; r < R; r++) {                                                    \
            float *restrict hr = h + r * Hd, *restrict dr = d ? d + r * Hd : NULL;        \
            if (dr)                                                                       \
                for (int j = 0; j < Hd; j++) {                                            \
                    ValDer v = f(hr[j] + b1[j]);                                          \
                    hr[j] = v.y;                                                          \
                    dr[j] = v.d;                                                          \
                }                                                                         \
            else                                                                          \
                for (int j = 0; j < Hd; j++) hr[j] = f(hr[j] + b1[j]).y;                  \
        }                                                                                 \
    } while (0)

static void gelu_bias_forward(AdGelu kind, float *h, const float *restrict b1, float *d, long R, int Hd) {
    if (kind == GELU_ERF) GELU_ROWS(gelu_erf);
    else                  GELU_ROWS(gelu_tanh);
}

/* dh = dg∘d over (R, Hd), in place in dg, and db1 (= or +=) its column sums, row by
 * row while the row is in cache: one pass over dg and d. */
static void gelu_bias_backward(float *restrict dg, const float *restrict d, float *db1, long R, int Hd, int acc) {
    for (long r = 0; r < R; r++) {
        float *restrict gr = dg + r * Hd;
        const float *restrict dr = d + r * Hd;
        for (int j = 0; j < Hd; j++) gr[j] *= dr[j];
        if (db1) grad_put(db1, gr, NULL, 1.0f, Hd, acc || r > 0);
    }
}

static void mlp_backward(TapeEntry *e) {
    Tensor *x = e->in[0], *w1 = e->in[1], *b1 = e->in[2], *w2 = e->in[3], *b2 = e->in[4], *res = e->in[5];
    MlpDims m = mlp_dims(x, w1, w2);
    float *g = e->saved[0];
    const float *d = e->saved[1], *dy = e->out->grad;
    /* fc2: dW2 = dyᵀ·g, db2 = colsum dy, dres = dy. */
    if (w2->grad) sgemm(1, 0, m.out, m.hidden, m.rows, dy, g, tape_grad_acc(w2) ? 1.0f : 0.0f, w2->grad);
    if (b2->grad) grad_put_colsum(b2->grad, dy, NULL, 1.0f, m.rows, m.out, tape_grad_acc(b2));
    if (res && res->grad) grad_put(res->grad, dy, NULL, 1.0f, e->out->n, tape_grad_acc(res));
    if (!x->grad && !w1->grad && !b1->grad) return;
    /* dg = dy·W2 over g (read for the last time above), then dh = dg∘d in place. */
    float *dh = g;
    sgemm(0, 0, m.rows, m.hidden, m.out, dy, w2->data, 0.0f, dh);
    gelu_bias_backward(dh, d, b1->grad, m.rows, m.hidden, b1->grad ? tape_grad_acc(b1) : 0);
    /* fc1: dW1 = dhᵀ·x, dx = dh·W1 (after dres: with res = x, dx adds to it). */
    if (w1->grad) sgemm(1, 0, m.hidden, m.in, m.rows, dh, x->data, tape_grad_acc(w1) ? 1.0f : 0.0f, w1->grad);
    if (x->grad) sgemm(0, 0, m.rows, m.in, m.hidden, dh, w1->data, tape_grad_acc(x) ? 1.0f : 0.0f, x->grad);
}

Tensor *ad_mlp(Tape *t, Tensor *x, Tensor *w1, Tensor *b1, Tensor *w2, Tensor *b2, Tensor *res, AdGelu kind) {
    AL_ASSERT(w1->ndim == 2 && w2->ndim == 2 && tensor_cols(x) == w1->shape[1] && w2->shape[1] == w1->shape[0]);
    MlpDims m = mlp_dims(x, w1, w2);
    AL_ASSERT(b1->n == m.hidden && b2->n == m.out);
    AL_ASSERT(!res || res->n == (long)m.rows * m.out);
    int shape[AD_MAX_DIMS];
    for (int i = 0; i < x->ndim - 1; i++) shape[i] = x->shape[i];
    shape[x->ndim - 1] = m.out;
    int needs_grad = tape_needs_grad(t, x, w1, b1) || tape_needs_grad(t, w2, b2, res);
    size_t hidden_bytes = (size_t)m.rows * (size_t)m.hidden * sizeof(float);
    float *g = tape_scratch(t, hidden_bytes), *d = needs_grad ? tape_scratch(t, hidden_bytes) : NULL;
    Tensor *y = tape_tensor(t, needs_grad, x->ndim, shape);
    /* fc1 into g, GeLU (+ b1) over it in place, fc2 from it onto res + b2. */
    sgemm(0, 1, m.rows, m.hidden, m.in, x->data, w1->data, 0.0f, g);
    gelu_bias_forward(kind, g, b1->data, d, m.rows, m.hidden);
    float beta = linear_init(y->data, b2->data, res ? res->data : NULL, m.rows, m.out);
    sgemm(0, 1, m.rows, m.out, m.hidden, g, w2->data, beta, y->data);
    if (needs_grad)
        ad_record(t, (TapeEntry){ .op = OP_MLP, .backward = mlp_backward, .out = y, .in = { x, w1, b1, w2, b2, res },
                                  .saved = { g, d }, .first_write = 1 });
    return y;
}
