/* ops_attention.c — fused softmax attention, per (batch, head) and block of query
 * rows, and the causal mask.
 *
 *   S = scale·Q·Kᵀ + mask,  P = softmax_rows(S),  O = P·V          per (b, h)
 *
 * Two entry points share one kernel (see ops.h for their contracts):
 *   ad_attention_heads  q, k (B, T, H·D), v (B, T, H·Dv) → (B, Tq, H·Dv): the layout
 *                       the projections produce and the output projection reads;
 *                       causal or not.  The transformer's op.
 *   ad_attention        q, k (B, H, T, D), v (B, H, T, Dv) → (B, H, Tq, Dv), any
 *                       additive (Tq, Tk) mask.  The reference other ops are tested
 *                       against.
 * The layouts differ only in where head (b, h) starts and how far apart its rows
 * are (H·D or D floats), so every product below is one cblas_sgemm reading the
 * head in place through its leading dimension: no split or merge copies.
 *
 * Forward, per (b, h) and block of R query rows i0 … i0+r−1 (R = ATTN_ROWS):
 *   P_blk = scale·Q_blk·K[0:n)ᵀ         sgemm into an R×Tk scratch (row stride n)
 *   P_blk = softmax_rows(P_blk + mask)   max-subtracted, in place
 *   O_blk = P_blk·V[0:n)                 sgemm, written in place into o
 * n = Tk, or with `causal` (row i sees keys j ≤ i, PyTorch's top-left rule when
 * Tq ≠ Tk) n = min(i0 + r, Tk): keys no row of the block sees are never scored.
 *
 * Backward recomputes P_blk with the same code (bit-identical to forward's), then
 *   dV[0:n)  += P_blkᵀ·dO_blk
 *   dS        = dO_blk·V[0:n)ᵀ, then per row dS = P∘(dS − Σ_j P∘dS)  (softmax backward)
 *   dQ_blk   += scale·dS·K[0:n),   dK[0:n) += scale·dSᵀ·Q_blk
 * Saved: two R×Tk scratch blocks (P and dS, allocated in forward: the entry has no
 * tape to allocate from later) and a copy of the mask — never the probabilities.
 * Storing P instead would skip one Q·Kᵀ GEMM and one softmax per block in backward:
 * on the causal bench model (B 32, H 4, T 100, D 32) about 20% of the attention's
 * instructions, 3% of the training step, for 3.4 MB per layer that grows as B·H·T².
 * Recomputing keeps attention's memory linear in T (bench/README.md, "The
 * attention part of a step", has the measurements). */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"

#include "attnlab/util/fastmath.h"
#include "record.h"

#include "attnlab/util/gemm.h"
#include <math.h>
#include <string.h>

#define ATTN_ROWS 32   /* query rows per block */

/* One call's geometry.  inner: (B, T, H·W) tensors, heads inside the rows;
 * otherwise (B, H, T, W). */
typedef struct AttnGeom {
    int B, H, Tq, Tk, D, Dv;
    int inner, causal;
    const float *mask;   /* NULL or (Tq, Tk) additive */
    float scale;
} AttnGeom;

/* Offset of head (b, h) in a tensor of T rows of head width W, and its row stride. */
static long head_at(const AttnGeom *g, int T, int W, int b, int h) {
    return g->inner ? (long)b * T * g->H * W + (long)h * W : ((long)b * g->H + h) * T * W;
}

static int row_stride(const AttnGeom *g, int W) { return g->inner ? g->H * W : W; }

/* Keys the block of rows [i0, i1) needs: all, or with causal the first i1. */
static int block_keys(const AttnGeom *g, int i1) { return g->causal && i1 < g->Tk ? i1 : g->Tk; }

/* Keys row i sees among the block's n. */
static int row_keys(const AttnGeom *g, int i, int n) { return g->causal && i + 1 < n ? i + 1 : n; }

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

/* P (r × n, row stride n) = the probabilities of query rows i0 … i0+r−1 of one head
 * over keys 0 … n−1; keys a row does not see get 0.  q, k: the head's first rows. */
static void probs_block(const AttnGeom *g, const float *q, const float *k, int i0, int r, int n, float *P) {
    int ld = row_stride(g, g->D);
    al_sgemm(CblasNoTrans, CblasTrans, r, n, g->D, g->scale, q + (long)i0 * ld, ld, k, ld,
                0.0f, P, n);
    for (int i = 0; i < r; i++) {
        /* The keys the row does not see are −inf, so the softmax runs over the whole
         * block row: vector loops without ragged tails (e^−inf is 0). */
        float *p = P + (long)i * n;
        for (int j = row_keys(g, i0 + i, n); j < n; j++) p[j] = -INFINITY;
        softmax_row(p, g->mask ? g->mask + (long)(i0 + i) * g->Tk : NULL, n);
    }
}

/* The (b, h) slices of the operands: data, and grads (NULL where there is none). */
typedef struct AttnHead {
    const float *q, *k, *v;
    float *o;             /* forward: output data; backward: the output's grad */
    float *dq, *dk, *dv;
} AttnHead;

static AttnHead head_slices(const AttnGeom *g, const Tensor *q, const Tensor *k, const Tensor *v, float *o,
                            int b, int h) {
    long oq = head_at(g, g->Tq, g->D, b, h), ok = head_at(g, g->Tk, g->D, b, h);
    long ov = head_at(g, g->Tk, g->Dv, b, h), oo = head_at(g, g->Tq, g->Dv, b, h);
    return (AttnHead){ q->data + oq, k->data + ok, v->data + ov, o + oo,
                       q->grad ? q->grad + oq : NULL, k->grad ? k->grad + ok : NULL,
                       v->grad ? v->grad + ov : NULL };
}

static void head_forward(const AttnGeom *g, const AttnHead *s, float *P) {
    int ldv = row_stride(g, g->Dv);
    for (int i0 = 0; i0 < g->Tq; i0 += ATTN_ROWS) {
        int r = g->Tq - i0 < ATTN_ROWS ? g->Tq - i0 : ATTN_ROWS, n = block_keys(g, i0 + r);
        probs_block(g, s->q, s->k, i0, r, n, P);
        al_sgemm(CblasNoTrans, CblasNoTrans, r, g->Dv, n, 1.0f, P, n, s->v, ldv, 0.0f,
                    s->o + (long)i0 * ldv, ldv);
    }
}

/* dS = P∘(dS − rowsum(P∘dS)) over r rows of n, in place. */
static void softmax_backward_block(const float *P, float *dS, int r, int n) {
    for (int i = 0; i < r; i++) {
        const float *p = P + (long)i * n;
        float *ds = dS + (long)i * n;
        float dot = fm_dot(ds, p, n);
        for (int j = 0; j < n; j++) ds[j] = p[j] * (ds[j] - dot);
    }
}

static void head_backward(const AttnGeom *g, const AttnHead *s, float *P, float *dS) {
    int ld = row_stride(g, g->D), ldv = row_stride(g, g->Dv);
    for (int i0 = 0; i0 < g->Tq; i0 += ATTN_ROWS) {
        int r = g->Tq - i0 < ATTN_ROWS ? g->Tq - i0 : ATTN_ROWS, n = block_keys(g, i0 + r);
        const float *dO = s->o + (long)i0 * ldv, *q = s->q + (long)i0 * ld;
        probs_block(g, s->q, s->k, i0, r, n, P);
        if (s->dv)
            al_sgemm(CblasTrans, CblasNoTrans, n, g->Dv, r, 1.0f, P, n, dO, ldv, 1.0f, s->dv,
                        ldv);
        if (!s->dq && !s->dk) continue;
        al_sgemm(CblasNoTrans, CblasTrans, r, n, g->Dv, 1.0f, dO, ldv, s->v, ldv, 0.0f, dS, n);
        softmax_backward_block(P, dS, r, n);
        if (s->dq)
            al_sgemm(CblasNoTrans, CblasNoTrans, r, g->D, n, g->scale, dS, n, s->k, ld, 1.0f,
                        s->dq + (long)i0 * ld, ld);
        if (s->dk)
            al_sgemm(CblasTrans, CblasNoTrans, n, g->D, r, g->scale, dS, n, q, ld, 1.0f, s->dk,
                        ld);
    }
}

/* ------------------------------------------------------------------------------ */
/* The entry keeps the geometry: f[0] scale; i[0] H, i[1] inner, i[2] causal;
 * saved[0], saved[1] the P and dS blocks, saved[2] the mask copy or NULL.  The
 * sizes are read back from the tensors. */

static AttnGeom geom_of(const Tensor *q, const Tensor *k, const Tensor *v, int H, int inner) {
    if (inner)
        return (AttnGeom){ q->shape[0], H, q->shape[1], k->shape[1], q->shape[2] / H, v->shape[2] / H, 1, 0,
                           NULL, 0.0f };
    return (AttnGeom){ q->shape[0], q->shape[1], q->shape[2], k->shape[2], q->shape[3], v->shape[3], 0, 0, NULL,
                       0.0f };
}

static void attention_backward(TapeEntry *e) {
    Tensor *q = e->in[0], *k = e->in[1], *v = e->in[2];
    AttnGeom g = geom_of(q, k, v, e->i[0], e->i[1]);
    g.causal = e->i[2];
    g.mask = e->saved[2];
    g.scale = e->f[0];
    for (int b = 0; b < g.B; b++)
        for (int h = 0; h < g.H; h++) {
            AttnHead s = head_slices(&g, q, k, v, e->out->grad, b, h);
            head_backward(&g, &s, e->saved[0], e->saved[1]);
        }
}

static size_t block_bytes(int Tq, int Tk) { return (size_t)(Tq < ATTN_ROWS ? Tq : ATTN_ROWS) * Tk * sizeof(float); }

size_t ad_attention_saved_bytes(int Tq, int Tk, int with_mask) {
    return 2 * block_bytes(Tq, Tk) + (with_mask ? (size_t)Tq * Tk * sizeof(float) : 0);
}

/* Runs the forward into o and, with grad, records the entry. */
static Tensor *attention_run(Tape *t, OpKind op, const AttnGeom *g, Tensor *q, Tensor *k, Tensor *v,
                             int ndim, const int *out_shape) {
    int needs_grad = tape_needs_grad(t, q, k, v);
    Tensor *o = tape_tensor(t, needs_grad, ndim, out_shape);
    size_t block = block_bytes(g->Tq, g->Tk);
    float *P = tape_scratch(t, block);
    for (int b = 0; b < g->B; b++)
        for (int h = 0; h < g->H; h++) {
            AttnHead s = head_slices(g, q, k, v, o->data, b, h);
            head_forward(g, &s, P);
        }
    if (needs_grad) {
        float *dS = tape_scratch(t, block);
        float *mask = g->mask ? ad_saved_copy(t, g->mask, (size_t)g->Tq * g->Tk * sizeof(float)) : NULL;
        ad_record(t, (TapeEntry){ .op = op, .backward = attention_backward, .out = o, .in = { q, k, v },
                                  .saved = { P, dS, mask }, .f = { g->scale }, .i = { g->H, g->inner, g->causal } });
    }
    return o;
}

Tensor *ad_attention_heads(Tape *t, Tensor *q, Tensor *k, Tensor *v, int n_heads, int causal, float scale) {
    AL_ASSERT(q->ndim == 3 && k->ndim == 3 && v->ndim == 3 && n_heads >= 1);
    AL_ASSERT(k->shape[0] == q->shape[0] && v->shape[0] == q->shape[0] && v->shape[1] == k->shape[1]);
    AL_ASSERT(k->shape[2] == q->shape[2] && q->shape[2] % n_heads == 0 && v->shape[2] % n_heads == 0);
    AttnGeom g = geom_of(q, k, v, n_heads, 1);
    g.causal = causal != 0;
    g.scale = scale;
    return attention_run(t, OP_ATTENTION_HEADS, &g, q, k, v, 3,
                         (const int[]){ g.B, g.Tq, v->shape[2] });
}

Tensor *ad_attention(Tape *t, Tensor *q, Tensor *k, Tensor *v, const Tensor *mask, float scale) {
    AL_ASSERT(q->ndim == 4 && k->ndim == 4 && v->ndim == 4);
    AL_ASSERT(k->shape[0] == q->shape[0] && k->shape[1] == q->shape[1] && k->shape[3] == q->shape[3]);
    AL_ASSERT(v->shape[0] == q->shape[0] && v->shape[1] == q->shape[1] && v->shape[2] == k->shape[2]);
    AttnGeom g = geom_of(q, k, v, 0, 0);
    AL_ASSERT(!mask || (mask->n == (long)g.Tq * g.Tk && tensor_cols(mask) == g.Tk));
    g.mask = mask ? mask->data : NULL;
    g.scale = scale;
    return attention_run(t, OP_ATTENTION, &g, q, k, v, 4, (const int[]){ g.B, g.H, g.Tq, g.Dv });
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
