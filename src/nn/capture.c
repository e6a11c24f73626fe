/* capture.c — the attention maps of model.h's ModelCapture, computed beside the
 * forward from a layer's q and k (never inside the attention ops, so training and
 * its outputs cannot change).  Double precision: inspection compares these maps
 * with PyTorch's float64 reference to 1e-5. */
#include "model_internal.h"
#include "attnlab/util/error.h"

#include <math.h>
#include <stdlib.h>

/* φ of linear attention (ops_linear_attention.c), in double. */
static double feature(AdFeature phi, double x) {
    switch (phi) {
    case FEATURE_ELU1: return x > 0 ? x + 1 : exp(x);
    case FEATURE_RELU: return x > 0 ? x : 0;
    case FEATURE_IDENTITY: break;
    }
    return x;
}

/* Does query i see key j?  Sparse: ad_sparse_attention's rule (paper 004 eq. 6),
 * always causal; the others: j ≤ i when causal. */
static int visible(const Model *m, int i, int j) {
    const CfgAttention *a = &m->cfg.attention;
    if (a->type == ATTN_SPARSE) {
        int block = m->sparse_block;
        return j <= i && (i - j < a->local_blocks * block || j % block >= block - a->summary);
    }
    return !a->causal || j <= i;
}

/* Query row i of one head: w[j] over the T keys.  q_i and the keys are Dh floats,
 * key j at k + j·stride.  Softmax and sparse: softmax of scale·q·k over the visible
 * keys; linear: φ(q)·φ(k) / (Σ φ(q)·φ(k) + eps).  No visible key: a zero row. */
static void map_row(const Model *m, int i, const float *qi, const float *k, int stride, int Dh, int T, float scale,
                    double *w) {
    const CfgAttention *a = &m->cfg.attention;
    const int linear = a->type == ATTN_LINEAR;
    double top = -INFINITY, sum = 0;
    for (int j = 0; j < T; j++) {
        const float *kj = k + (long)j * stride;
        double s = 0;
        for (int c = 0; c < Dh; c++)
            s += linear ? feature(a->feature, qi[c]) * feature(a->feature, kj[c]) : (double)qi[c] * kj[c];
        w[j] = visible(m, i, j) ? (linear ? s : (double)scale * s) : NAN;
        if (w[j] > top) top = w[j];
    }
    for (int j = 0; j < T; j++) {
        if (isnan(w[j])) w[j] = 0;
        else if (!linear) w[j] = exp(w[j] - top);
        sum += w[j];
    }
    if (linear) sum += a->eps;
    for (int j = 0; sum != 0 && j < T; j++) w[j] /= sum;
}

void capture_attention(const Model *m, int layer, const Tensor *q, const Tensor *k, float scale) {
    const int B = q->shape[0], T = q->shape[1], d = q->shape[2], H = m->cfg.n_heads, Dh = d / H;
    double *w = al_malloc((size_t)T * T * sizeof *w);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const float *qb = q->data + (long)b * T * d + h * Dh, *kb = k->data + (long)b * T * d + h * Dh;
            for (int i = 0; i < T; i++) map_row(m, i, qb + (long)i * d, kb, d, Dh, T, scale, w + (long)i * T);
            m->capture->fn(m->capture->ctx, layer, b, h, T, w);
        }
    free(w);
}
