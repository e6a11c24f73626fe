/* ops_attention.c — fused scaled-dot-product attention and the causal mask.
 *
 * Fusing matmul → scale → softmax → matmul skips the (B, H, Tq, Tk) score tensor
 * and its grad and records one tape entry instead of four; only the probabilities
 * P are kept for backward.  Every product is one cblas_sgemm per (batch, head). */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"

#include "../util/fastmath.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

/* p = softmax(p + mask) over one row of n, in place; mask may be NULL.  A row that
 * is −inf everywhere becomes zeros (it attends to nothing) instead of NaN. */
static void softmax_row(float *p, const float *mask, int n) {
    if (mask)
        for (int j = 0; j < n; j++) p[j] += mask[j];
    float mx = fm_max(p, n);
    if (mx == -INFINITY) {
        memset(p, 0, (size_t)n * sizeof(float));
        return;
    }
    for (int j = 0; j < n; j++) p[j] = fm_exp(p[j] - mx);
    float inv = 1.0f / fm_sum(p, n);
    for (int j = 0; j < n; j++) p[j] *= inv;
}

/* ------------------------------------------------------------------------------ */
/* attention: q (B, H, Tq, D), k (B, H, Tk, D), v (B, H, Tk, Dv), mask NULL or
 * (Tq, Tk) additive → o (B, H, Tq, Dv).  Per (b, h):
 *   S = scale·Q·Kᵀ + mask,  P = softmax_rows(S),  O = P·V.
 * Saved: P (B, H, Tq, Tk), and a Tq×Tk scratch for dP/dS in backward (the entry
 * has no tape to allocate from later).  The sizes are read back from the tensors. */

typedef struct AttnDims { long BH; int Tq, Tk, D, Dv; } AttnDims;

static AttnDims attn_dims(const Tensor *q, const Tensor *k, const Tensor *v) {
    AL_ASSERT(q->ndim == 4 && k->ndim == 4 && v->ndim == 4);
    AL_ASSERT(k->shape[0] == q->shape[0] && k->shape[1] == q->shape[1] && k->shape[3] == q->shape[3]);
    AL_ASSERT(v->shape[0] == q->shape[0] && v->shape[1] == q->shape[1] && v->shape[2] == k->shape[2]);
    return (AttnDims){ (long)q->shape[0] * q->shape[1], q->shape[2], k->shape[2], q->shape[3],
                       v->shape[3] };
}

static void attention_backward(TapeEntry *e) {
    Tensor *q = e->in[0], *k = e->in[1], *v = e->in[2];
    const AttnDims d = attn_dims(q, k, v);
    const float scale = e->f[0];
    float *dS = e->saved[1];
    for (long bh = 0; bh < d.BH; bh++) {
        const float *P = (const float *)e->saved[0] + bh * d.Tq * d.Tk;
        const float *Q = q->data + bh * d.Tq * d.D, *K = k->data + bh * d.Tk * d.D;
        const float *V = v->data + bh * d.Tk * d.Dv, *dO = e->out->grad + bh * d.Tq * d.Dv;
        /* dV += Pᵀ·dO */
        if (v->grad)
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d.Tk, d.Dv, d.Tq, 1.0f, P, d.Tk,
                        dO, d.Dv, 1.0f, v->grad + bh * d.Tk * d.Dv, d.Dv);
        if (!q->grad && !k->grad) continue;
        /* dP = dO·Vᵀ; then dS = P∘(dP − rowsum(dP∘P)), the softmax backward per row. */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d.Tq, d.Tk, d.Dv, 1.0f, dO, d.Dv, V,
                    d.Dv, 0.0f, dS, d.Tk);
        for (int i = 0; i < d.Tq; i++) {
            float *ds = dS + (long)i * d.Tk;
            const float *p = P + (long)i * d.Tk;
            float dot = fm_dot(ds, p, d.Tk);
            for (int j = 0; j < d.Tk; j++) ds[j] = p[j] * (ds[j] - dot);
        }
        /* dQ += scale·dS·K,  dK += scale·dSᵀ·Q */
        if (q->grad)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d.Tq, d.D, d.Tk, scale, dS, d.Tk,
                        K, d.D, 1.0f, q->grad + bh * d.Tq * d.D, d.D);
        if (k->grad)
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d.Tk, d.D, d.Tq, scale, dS, d.Tk,
                        Q, d.D, 1.0f, k->grad + bh * d.Tk * d.D, d.D);
    }
}

Tensor *ad_attention(Tape *t, Tensor *q, Tensor *k, Tensor *v, const Tensor *mask, float scale) {
    const AttnDims d = attn_dims(q, k, v);
    AL_ASSERT(!mask || (mask->n == (long)d.Tq * d.Tk && tensor_cols(mask) == d.Tk));
    int needs_grad = tape_needs_grad(t, q, k, v);
    Tensor *o = tape_tensor(t, needs_grad, 4, (const int[]){ q->shape[0], q->shape[1], d.Tq, d.Dv });
    /* With grad, P of every (b, h) is kept; without, one Tq×Tk buffer is reused. */
    size_t p_size = (size_t)d.Tq * d.Tk * sizeof(float);
    float *P_all = tape_scratch(t, needs_grad ? (size_t)d.BH * p_size : p_size);
    for (long bh = 0; bh < d.BH; bh++) {
        float *P = needs_grad ? P_all + bh * d.Tq * d.Tk : P_all;
        const float *Q = q->data + bh * d.Tq * d.D, *K = k->data + bh * d.Tk * d.D;
        const float *V = v->data + bh * d.Tk * d.Dv;
        /* S = scale·Q·Kᵀ straight into P, then softmax in place, then O = P·V. */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d.Tq, d.Tk, d.D, scale, Q, d.D, K,
                    d.D, 0.0f, P, d.Tk);
        for (int i = 0; i < d.Tq; i++)
            softmax_row(P + (long)i * d.Tk, mask ? mask->data + (long)i * d.Tk : NULL, d.Tk);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d.Tq, d.Dv, d.Tk, 1.0f, P, d.Tk, V,
                    d.Dv, 0.0f, o->data + bh * d.Tq * d.Dv, d.Dv);
    }
    if (needs_grad) {
        TapeEntry *e = tape_record(t, OP_ATTENTION, attention_backward, o, q, k, v);
        e->saved[0] = P_all;
        e->saved[1] = tape_scratch(t, p_size);
        e->f[0] = scale;
    }
    return o;
}

/* mask (R, C): 0 where j ≤ i, −inf above the diagonal.  For R ≠ C this is the
 * top-left-aligned rule of PyTorch's is_causal (every row keeps column 0, so no
 * row is fully masked). */
void ad_causal_mask(Tensor *mask) {
    AL_ASSERT(mask->ndim == 2);
    int C = tensor_cols(mask);
    long R = tensor_rows(mask);
    for (long i = 0; i < R; i++)
        for (int j = 0; j < C; j++) mask->data[i * C + j] = j <= i ? 0.0f : -INFINITY;
}
