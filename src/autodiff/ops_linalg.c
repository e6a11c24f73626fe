/* ops_linalg.c — matmul and linear.  Every product, forward and backward, is one
 * cblas_sgemm call on contiguous row-major storage; transposes are sgemm flags,
 * never copies. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"

#include <cblas.h>

/* C (m, n) = op(A)·op(B) + beta·C, where op(A) is (m, k) and op(B) is (k, n).
 * A is stored (m, k), or (k, m) when ta; B is stored (k, n), or (n, k) when tb.
 * All three are dense, so the leading dimensions follow from the shapes. */
static void sgemm(int ta, int tb, int m, int n, int k, const float *A, const float *B,
                  float beta, float *C) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                m, n, k, 1.0f, A, ta ? m : k, B, tb ? k : n, beta, C, n);
}

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
    for (int g = 0; g < d.n_gemm; g++) {
        const float *A = a->data + g * d.sa, *B = b->data + g * d.sb, *dC = c->grad + g * d.sc;
        /* d op(A) = dC·op(B)ᵀ; stored transposed, dA = op(B)·dCᵀ. */
        if (a->grad) {
            float *dA = a->grad + g * d.sa;
            if (ta) sgemm(tb, 1, d.k, d.m, d.n, B, dC, 1.0f, dA);
            else    sgemm(0, !tb, d.m, d.k, d.n, dC, B, 1.0f, dA);
        }
        /* d op(B) = op(A)ᵀ·dC; stored transposed, dB = dCᵀ·op(A).  With a shared B,
         * beta = 1 sums the batch items' contributions. */
        if (b->grad) {
            float *dB = b->grad + g * d.sb;
            if (tb) sgemm(1, ta, d.n, d.k, d.m, dC, A, 1.0f, dB);
            else    sgemm(!ta, 0, d.k, d.n, d.m, A, dC, 1.0f, dB);
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
    if (needs_grad) {
        TapeEntry *e = tape_record(t, OP_MATMUL, matmul_backward, c, a, b, NULL);
        e->i[0] = ta;
        e->i[1] = tb;
    }
    return c;
}

/* ------------------------------------------------------------------------------ */
/* linear: x is (…, in), w is (out, in), bias is (out) or NULL; y is (…, out). */

static void linear_backward(TapeEntry *e) {
    Tensor *x = e->in[0], *w = e->in[1], *bias = e->in[2], *y = e->out;
    int rows = (int)tensor_rows(x), in = tensor_cols(x), out = w->shape[0];
    const float *dy = y->grad;
    if (x->grad) sgemm(0, 0, rows, in, out, dy, w->data, 1.0f, x->grad);   /* dx += dy·W */
    if (w->grad) sgemm(1, 0, out, in, rows, dy, x->data, 1.0f, w->grad);   /* dW += dyᵀ·x */
    if (bias && bias->grad) {
        /* Row by row so the inner loop runs over contiguous columns and vectorises. */
        float *db = bias->grad;
        for (int r = 0; r < rows; r++) {
            const float *dyr = dy + (long)r * out;
            for (int j = 0; j < out; j++) db[j] += dyr[j];
        }
    }
}

Tensor *ad_linear(Tape *t, Tensor *x, Tensor *w, Tensor *b) {
    AL_ASSERT(w->ndim == 2 && tensor_cols(x) == w->shape[1]);
    int rows = (int)tensor_rows(x), in = w->shape[1], out = w->shape[0];
    AL_ASSERT(!b || b->n == out);
    int shape[AD_MAX_DIMS];
    for (int i = 0; i < x->ndim - 1; i++) shape[i] = x->shape[i];
    shape[x->ndim - 1] = out;
    int needs_grad = tape_needs_grad(t, x, w, b);
    Tensor *y = tape_tensor(t, needs_grad, x->ndim, shape);
    /* With a bias, y starts as the bias rows and the GEMM adds x·Wᵀ (beta = 1):
     * the same one pass over y that a separate bias add would cost. */
    if (b) {
        for (int r = 0; r < rows; r++) {
            float *yr = y->data + (long)r * out;
            for (int j = 0; j < out; j++) yr[j] = b->data[j];
        }
    }
    sgemm(0, 1, rows, out, in, x->data, w->data, b ? 1.0f : 0.0f, y->data);
    if (needs_grad) tape_record(t, OP_LINEAR, linear_backward, y, x, w, b);
    return y;
}
