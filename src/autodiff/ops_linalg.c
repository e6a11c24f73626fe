/* ops_linalg.c — matmul and linear.  Every product, forward and backward, is one
 * cblas_sgemm call on contiguous row-major storage; transposes are sgemm flags,
 * never copies.  Backward follows first writer assigns (tape.h): a grad's first
 * writer calls sgemm with beta = 0, later ones with beta = 1. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"

#include "grad_put.h"
#include "linalg.h"
#include "record.h"

/* ------------------------------------------------------------------------------ */
/* matmul: a is (…, M, K) [(…, K, M) if ta], b is (…, K, N) [(…, N, K) if tb] with
 * a's leading dims, or 2-D and shared by every batch item; c is (…, M, N). */

typedef struct MatmulDims {
    int  m, n, k;
    int  n_gemm;            /* sgemm calls per direction */
    long sa, sb, sc;        /* element strides between consecutive calls' operands */
} MatmulDims;

static MatmulDims matmul_dims(const Tensor *a, const Tensor *b, int ta, int tb) {
    AL_ASSERT(a->ndim >= 2 && b->ndim >= 2);
    int na = a->ndim, nb = b->ndim;
    MatmulDims d;
    d.m = ta ? a->shape[na - 1] : a->shape[na - 2];
    d.k = ta ? a->shape[na - 2] : a->shape[na - 1];
    d.n = tb ? b->shape[nb - 2] : b->shape[nb - 1];
    AL_ASSERT((tb ? b->shape[nb - 1] : b->shape[nb - 2]) == d.k);
    int shared = nb == 2;
    if (!shared) {
        AL_ASSERT(nb == na);
        for (int i = 0; i < na - 2; i++) AL_ASSERT(a->shape[i] == b->shape[i]);
    }
    long batch = a->n / ((long)d.m * d.k);
    d.sa = (long)d.m * d.k;
    d.sb = shared ? 0 : (long)d.k * d.n;
    d.sc = (long)d.m * d.n;
    d.n_gemm = (int)batch;
    if (shared && !ta) {
        /* The batch items' rows are consecutive rows of one (batch·M, K) matrix, so
         * one big GEMM replaces `batch` small ones (and backward sums dB for free). */
        d.m = (int)(batch * d.m);
        d.n_gemm = 1;
    }
    return d;
}

static void matmul_backward(TapeEntry *e) {
    Tensor *a = e->in[0], *b = e->in[1], *c = e->out;
    int ta = e->i[0], tb = e->i[1];
    MatmulDims d = matmul_dims(a, b, ta, tb);
    /* All of dA, then all of dB: when a and b are one tensor (x·xᵀ), the first
     * loop is its first writer and the second adds. */
    if (a->grad) {
        float beta = tape_grad_acc(a) ? 1.0f : 0.0f;
        for (int g = 0; g < d.n_gemm; g++) {
            /* d op(A) = dC·op(B)ᵀ; stored transposed, dA = op(B)·dCᵀ. */
            const float *B = b->data + g * d.sb, *dC = c->grad + g * d.sc;
            float *dA = a->grad + g * d.sa;
            if (ta) sgemm(tb, 1, d.k, d.m, d.n, B, dC, beta, dA);
            else    sgemm(0, !tb, d.m, d.k, d.n, dC, B, beta, dA);
        }
    }
    if (b->grad) {
        float beta = tape_grad_acc(b) ? 1.0f : 0.0f;
        for (int g = 0; g < d.n_gemm; g++) {
            /* d op(B) = op(A)ᵀ·dC; stored transposed, dB = dCᵀ·op(A).  With a shared
             * B (sb = 0), beta = 1 after the first call sums the batch items. */
            const float *A = a->data + g * d.sa, *dC = c->grad + g * d.sc;
            float *dB = b->grad + g * d.sb;
            if (tb) sgemm(1, ta, d.n, d.k, d.m, dC, A, beta, dB);
            else    sgemm(!ta, 0, d.k, d.n, d.m, A, dC, beta, dB);
            if (d.sb == 0) beta = 1.0f;
        }
    }
}

Tensor *ad_matmul(Tape *t, Tensor *a, Tensor *b, int trans_a, int trans_b) {
    int ta = !!trans_a, tb = !!trans_b;
    MatmulDims d = matmul_dims(a, b, ta, tb);
    int shape[AD_MAX_DIMS];
    for (int i = 0; i < a->ndim - 2; i++) shape[i] = a->shape[i];
    shape[a->ndim - 2] = ta ? a->shape[a->ndim - 1] : a->shape[a->ndim - 2];
    shape[a->ndim - 1] = d.n;
    int needs_grad = tape_needs_grad(t, a, b, NULL);
    Tensor *c = tape_tensor(t, needs_grad, a->ndim, shape);
    for (int g = 0; g < d.n_gemm; g++)
        sgemm(ta, tb, d.m, d.n, d.k, a->data + g * d.sa, b->data + g * d.sb, 0.0f, c->data + g * d.sc);
    if (needs_grad)
        ad_record(t, (TapeEntry){ .op = OP_MATMUL, .backward = matmul_backward, .out = c, .in = { a, b },
                                  .i = { ta, tb }, .first_write = 1 });
    return c;
}

/* ------------------------------------------------------------------------------ */
/* linear: x is (…, in), w is (out, in), bias is (out) or NULL, res is NULL or like
 * y; y is (…, out):  y = x·Wᵀ + bias + res.
 * The residual is a transformer block's skip connection added inside the GEMM's
 * pass: y starts as res + bias and sgemm adds x·Wᵀ with beta = 1, so the separate
 * add (a pass over three tensors forward, two backward) and its output vanish. */

static void linear_backward(TapeEntry *e) {
    Tensor *x = e->in[0], *w = e->in[1], *bias = e->in[2], *res = e->in[3], *y = e->out;
    int rows = (int)tensor_rows(x), in = tensor_cols(x), out = w->shape[0];
    const float *dy = y->grad;
    if (x->grad) sgemm(0, 0, rows, in, out, dy, w->data, tape_grad_acc(x) ? 1.0f : 0.0f, x->grad);  /* dx = dy·W */
    if (w->grad) sgemm(1, 0, out, in, rows, dy, x->data, tape_grad_acc(w) ? 1.0f : 0.0f, w->grad);  /* dW = dyᵀ·x */
    if (bias && bias->grad) grad_put_colsum(bias->grad, dy, NULL, 1.0f, rows, out, tape_grad_acc(bias));
    if (res && res->grad) grad_put(res->grad, dy, NULL, 1.0f, y->n, tape_grad_acc(res));            /* dres = dy */
}

Tensor *ad_linear_residual(Tape *t, Tensor *x, Tensor *w, Tensor *b, Tensor *res) {
    AL_ASSERT(w->ndim == 2 && tensor_cols(x) == w->shape[1]);
    int rows = (int)tensor_rows(x), in = w->shape[1], out = w->shape[0];
    AL_ASSERT(!b || b->n == out);
    int shape[AD_MAX_DIMS];
    for (int i = 0; i < x->ndim - 1; i++) shape[i] = x->shape[i];
    shape[x->ndim - 1] = out;
    AL_ASSERT(!res || res->n == (long)rows * out);
    int needs_grad = tape_needs_grad(t, x, w, b) || tape_needs_grad(t, res, NULL, NULL);
    Tensor *y = tape_tensor(t, needs_grad, x->ndim, shape);
    float beta = linear_init(y->data, b ? b->data : NULL, res ? res->data : NULL, rows, out);
    sgemm(0, 1, rows, out, in, x->data, w->data, beta, y->data);
    if (needs_grad)
        ad_record(t, (TapeEntry){ .op = OP_LINEAR, .backward = linear_backward, .out = y, .in = { x, w, b, res },
                                  .first_write = 1 });
    return y;
}

Tensor *ad_linear(Tape *t, Tensor *x, Tensor *w, Tensor *b) { return ad_linear_residual(t, x, w, b, NULL); }
