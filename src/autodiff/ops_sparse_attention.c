/* ops_sparse_attention.c — causal block-sparse softmax attention (paper 004 eq. 6).
 *
 * q, k (B, H, T, D), v (B, H, T, Dv) → o (B, H, T, Dv).  Query i (0-based) sees
 *   L(i) = { j ≤ i : i − j < W  or  j mod block ≥ block − c },  W = k_local·block,
 * a sliding local window (self included) plus the last c positions of every block
 * ("summaries").  Eq. 6 writes the summary rule 1-based, (j − 1) mod B ≥ B − c,
 * which is the same set.  Per (b, h) and query i:
 *   s_t = scale·q_i·k_{L(i)_t},  p = softmax(s),  o_i = Σ_t p_t v_{L(i)_t}.
 *
 * The lists L(i) depend only on (T, block, k_local, c), so they are built once per
 * call — CSR offsets and indices — and shared by every (b, h) and by backward.
 * Their total length is ≤ T·(W + c·⌈T/block⌉), so scores, softmax and products are
 * O(T·(k_local·block + c·T/block)·D); no T×T matrix exists anywhere.  A query with
 * an empty list (possible only when k_local = 0) gets o_i = 0, as a fully masked
 * row of ad_attention.
 *
 * Saved: the lists, P (B·H × total list length) and a row scratch for dP/dS. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"

#include "attnlab/util/fastmath.h"
#include "head_dims.h"
#include "record.h"

#include <math.h>
#include <string.h>

/* The visible-key lists, CSR: query i's keys are idx[off[i] .. off[i+1]), ascending. */
typedef struct SparseLists {
    long *off;      /* T + 1 */
    int  *idx;      /* off[T] */
    int   max_len;  /* longest list */
} SparseLists;

/* Writes query i's list into out (when not NULL) and returns its length: the
 * summaries before the window, block by block, then the window itself. */
static int visible_keys(int i, int block, int window, int c, int *out) {
    int lo = i - window + 1 > 0 ? i - window + 1 : 0, n = 0;
    for (int b0 = 0; b0 < lo; b0 += block) {
        int end = b0 + block < lo ? b0 + block : lo;
        for (int j = b0 + block - c; j < end; j++, n++)
            if (out) out[n] = j;
    }
    for (int j = lo; j <= i; j++, n++)
        if (out) out[n] = j;
    return n;
}

/* Counting pass, then filling pass: the same rule, so lengths always agree. */
static SparseLists build_lists(Tape *t, int T, int block, int k_local, int c) {
    SparseLists L = { tape_scratch(t, (size_t)(T + 1) * sizeof(long)), NULL, 0 };
    const int window = k_local * block;
    L.off[0] = 0;
    for (int i = 0; i < T; i++) {
        int n = visible_keys(i, block, window, c, NULL);
        L.off[i + 1] = L.off[i] + n;
        if (n > L.max_len) L.max_len = n;
    }
    L.idx = tape_scratch(t, (size_t)(L.off[T] > 0 ? L.off[T] : 1) * sizeof(int));
    for (int i = 0; i < T; i++) visible_keys(i, block, window, c, L.idx + L.off[i]);
    return L;
}

long ad_sparse_attention_pairs(int T, int block, int k_local, int c) {
    long n = 0;
    for (int i = 0; i < T; i++) n += visible_keys(i, block, k_local * block, c, NULL);
    return n;
}

/* p = softmax(p) over n in place, max-subtracted; n = 0 is a no-op. */
static void softmax_inplace(float *p, int n) {
    if (n == 0) return;
    float mx = fm_max(p, n);
    for (int j = 0; j < n; j++) p[j] = fm_exp(p[j] - mx);
    float inv = 1.0f / fm_sum(p, n);
    for (int j = 0; j < n; j++) p[j] *= inv;
}

/* out (D) += Σ_t w_t·rows[idx_t] (rows of D floats).  Eight columns at a time are
 * summed over t in a register and added to out once: accumulating into out row by
 * row would chain every t through a store and a reload of the same memory. */
static void sparse_gather_axpy(float *restrict out, const float *restrict w,
                               const int *restrict idx, int n, const float *restrict rows, int D) {
    int a0 = 0;
    for (; a0 + 8 <= D; a0 += 8) {
        fm_v8 acc = { 0 }, u;
        for (int t = 0; t < n; t++) acc += w[t] * *fm_load8(&u, rows + (long)idx[t] * D + a0);
        for (int a = 0; a < 8; a++) out[a0 + a] += acc[a];
    }
    for (; a0 < D; a0++) {
        float acc = 0.0f;
        for (int t = 0; t < n; t++) acc += w[t] * rows[(long)idx[t] * D + a0];
        out[a0] += acc;
    }
}

/* out[t] = x·rows[idx_t] for t < n (rows of D floats).  With D a multiple of 8, eight
 * keys at a time: eight 8-wide partial products, then fm_hsum8x8 gives their eight
 * sums in one vector, in place of eight horizontal sums.  The other keys and D go through fm_dot. */
static void sparse_gather_dots(float *restrict out, const float *restrict x,
                               const int *restrict idx, int n, const float *restrict rows, int D) {
    int t = 0;
    if (D % 8 == 0)
        for (; t + 8 <= n; t += 8) {
            fm_v8 acc[8] = { { 0 } }, u, v;
            for (int a0 = 0; a0 < D; a0 += 8) {
                fm_load8(&u, x + a0);
                for (int k = 0; k < 8; k++)
                    acc[k] += u * *fm_load8(&v, rows + (long)idx[t + k] * D + a0);
            }
            fm_v8 r;
            fm_hsum8x8(acc, &r);
            memcpy(out + t, &r, sizeof r);
        }
    for (; t < n; t++) out[t] = fm_dot(x, rows + (long)idx[t] * D, D);
}

/* ------------------------------------------------------------------------------ */

/* One (b, h): P (the rows of every query, laid out as the lists) and O. */
static void sparse_forward_bh(const SparseLists *L, const float *restrict Q,
                              const float *restrict K, const float *restrict V, float *restrict P,
                              float *restrict O, int T, int D, int Dv, float scale) {
    for (int i = 0; i < T; i++) {
        const int *idx = L->idx + L->off[i];
        const int n = (int)(L->off[i + 1] - L->off[i]);
        const float *qi = Q + (long)i * D;
        float *p = P + L->off[i], *oi = O + (long)i * Dv;
        sparse_gather_dots(p, qi, idx, n, K, D);
        for (int t = 0; t < n; t++) p[t] *= scale;
        softmax_inplace(p, n);
        memset(oi, 0, (size_t)Dv * sizeof(float));
        sparse_gather_axpy(oi, p, idx, n, V, Dv);
    }
}

/* One (b, h), per query i over its list (dq, dk, dv may be NULL; ds has max_len):
 *   dp_t = dO_i·v_j,  ds_t = p_t·(dp_t − Σ p·dp),
 *   dv_j += p_t·dO_i,  dq_i += scale·Σ_t ds_t·k_j,  dk_j += scale·ds_t·q_i. */
static void sparse_backward_bh(const SparseLists *L, const float *restrict Q,
                               const float *restrict K, const float *restrict V,
                               const float *restrict P, const float *restrict dO,
                               float *restrict dq, float *restrict dk, float *restrict dv,
                               float *restrict ds, int T, int D, int Dv, float scale) {
    for (int i = 0; i < T; i++) {
        const int *idx = L->idx + L->off[i];
        const int n = (int)(L->off[i + 1] - L->off[i]);
        const float *p = P + L->off[i], *doi = dO + (long)i * Dv, *qi = Q + (long)i * D;
        if (dv)
            for (int t = 0; t < n; t++) {
                float *dvj = dv + (long)idx[t] * Dv;
                for (int e = 0; e < Dv; e++) dvj[e] += p[t] * doi[e];
            }
        if (!dq && !dk) continue;
        sparse_gather_dots(ds, doi, idx, n, V, Dv);
        float dot = fm_dot(ds, p, n);
        for (int t = 0; t < n; t++) ds[t] = scale * p[t] * (ds[t] - dot);
        if (dq) sparse_gather_axpy(dq + (long)i * D, ds, idx, n, K, D);
        if (dk)
            for (int t = 0; t < n; t++) {
                float *dkj = dk + (long)idx[t] * D;
                for (int a = 0; a < D; a++) dkj[a] += ds[t] * qi[a];
            }
    }
}

/* saved[0] the lists, saved[1] P, saved[2] the dS row; f[0] scale. */
static void sparse_attention_backward(TapeEntry *e) {
    Tensor *q = e->in[0], *k = e->in[1], *v = e->in[2];
    const HeadDims d = head_dims(q, k, v);
    const SparseLists *L = e->saved[0];
    const long nnz = L->off[d.T];
    for (long bh = 0; bh < d.BH; bh++) {
        const long qo = bh * d.T * d.D, vo = bh * d.T * d.Dv;
        sparse_backward_bh(L, q->data + qo, k->data + qo, v->data + vo,
                           (const float *)e->saved[1] + bh * nnz, e->out->grad + vo,
                           q->grad ? q->grad + qo : NULL, k->grad ? k->grad + qo : NULL,
                           v->grad ? v->grad + vo : NULL, e->saved[2], d.T, d.D, d.Dv, e->f[0]);
    }
}

Tensor *ad_sparse_attention(Tape *t, Tensor *q, Tensor *k, Tensor *v, int block, int k_local, int c,
                            float scale) {
    const HeadDims d = head_dims(q, k, v);
    AL_ASSERT(block >= 1 && k_local >= 0 && c >= 0 && c <= block);
    int needs_grad = tape_needs_grad(t, q, k, v);
    Tensor *o = tape_tensor(t, needs_grad, 4, (const int[]){ q->shape[0], q->shape[1], d.T, d.Dv });
    SparseLists *L = tape_scratch(t, sizeof *L);
    *L = build_lists(t, d.T, block, k_local, c);
    const long nnz = L->off[d.T];
    /* With grad, P of every (b, h) is kept; without, one set of rows is reused. */
    float *P_all = tape_scratch(t, (size_t)((needs_grad ? d.BH : 1) * nnz + 1) * sizeof(float));
    for (long bh = 0; bh < d.BH; bh++) {
        const long qo = bh * d.T * d.D, vo = bh * d.T * d.Dv;
        sparse_forward_bh(L, q->data + qo, k->data + qo, v->data + vo,
                          P_all + (needs_grad ? bh * nnz : 0), o->data + vo, d.T, d.D, d.Dv, scale);
    }
    if (needs_grad) {
        float *dS = tape_scratch(t, (size_t)(L->max_len + 1) * sizeof(float));
        ad_record(t, (TapeEntry){ .op = OP_SPARSE_ATTENTION, .backward = sparse_attention_backward, .out = o,
                                  .in = { q, k, v }, .saved = { L, P_all, dS }, .f = { scale } });
    }
    return o;
}
