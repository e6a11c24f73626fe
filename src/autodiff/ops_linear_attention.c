/* ops_linear_attention.c — linear attention (Katharopoulos et al.; paper 004 eq. 8).
 *
 * q, k (B, H, T, D), v (B, H, T, Dv) → o (B, H, T, Dv).  Per (b, h), with the
 * feature map φ applied row-wise (F = φ(Q), G = φ(K), both T×D):
 *   num_i = F_iᵀ S_i,  den_i = F_i·z_i + eps,  o_i = num_i / den_i,
 *   S_i = Σ_j G_j v_jᵀ (D×Dv),  z_i = Σ_j G_j (D),
 * the sums over j ≤ i (causal) or over all j (bidirectional).
 *
 * Causal: one scan with running (S, z), a rank-1 update per step: O(T·D·Dv), and
 * never the T×T matrix tril(F·Gᵀ) of the quadratic form.  Bidirectional: S and z
 * are global, so S = Gᵀ·V and num = F·S are two GEMMs.
 *
 * Backward, with g_i = dO_i, dnum_i = g_i/den_i, dden_i = −g_i·o_i/den_i
 * (o_i = num_i/den_i, so g·num/den² = g·o/den):
 *   dF_i = S_i·dnum_i + dden_i·z_i
 *   dG_j = R_j·v_j + r_j,   dv_j = R_jᵀ·G_j,
 *   R_j = Σ_i F_i dnum_iᵀ,  r_j = Σ_i dden_i F_i   over i ≥ j (causal) or all i,
 * because S_i and z_i are sums over j of G_j v_jᵀ and G_j.  Causal: dF needs the
 * prefix states again (a forward scan), dG and dv need reverse prefix sums of
 * the gradients (a backward scan); both O(T·D·Dv).  Bidirectional: R = Fᵀ·dnum
 * and the products with it are GEMMs.
 *
 * Saved: F, G (B·H·T·D each), den (B·H·T) and a workspace for backward.  The
 * prefix states S_i are rebuilt in backward rather than stored: storing them all
 * would be T·D·Dv floats per (b, h) — Dv times the size of F, 64× at Dv = 64 — to
 * skip one rank-1 update per step out of the backward's five D×Dv passes.  The
 * bidirectional S is recomputed too (one GEMM of five), which keeps the saved
 * set the same for both forms.  φ′ is read off φ itself (see feature_backward),
 * so the inputs' pre-activations are not needed. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"

#include "attnlab/util/fastmath.h"
#include "head_dims.h"
#include "record.h"

#include "attnlab/util/gemm.h"
#include <math.h>
#include <string.h>

/* What backward reads; one arena struct behind e->saved[0]. */
typedef struct LinSaved {
    float *F, *G;    /* φ(q), φ(k): (B·H, T, D) */
    float *den;      /* (B·H, T) */
    float *work;     /* backward workspace, lin_work_floats() */
} LinSaved;

/* ------------------------------------------------------------------------------ */
/* The feature map and its derivative. */

/* y = φ(x) over n values.  elu(x) + 1 is x + 1 for x > 0 and e^x otherwise:
 * computed as e^x, not expm1(x) + 1, which loses all precision for x ≪ 0. */
static void feature_forward(AdFeature phi, const float *restrict x, float *restrict y, long n) {
    switch (phi) {
    case FEATURE_ELU1:
        for (long i = 0; i < n; i++) y[i] = fm_select(x[i] > 0.0f, x[i] + 1.0f, fm_exp(x[i]));
        break;
    case FEATURE_IDENTITY: memcpy(y, x, (size_t)n * sizeof(float)); break;
    case FEATURE_RELU:
        for (long i = 0; i < n; i++) y[i] = fm_select(x[i] > 0.0f, x[i], 0.0f);
        break;
    }
}

/* dx += dy·φ′(x), with φ′ read off y = φ(x): elu+1 has φ′ = 1 where y > 1 (x > 0)
 * and φ′ = e^x = y where y ≤ 1, i.e. min(y, 1); relu has φ′ = [y > 0] (0 at 0, as
 * PyTorch); identity 1. */
static void feature_backward(AdFeature phi, const float *restrict y, const float *restrict dy,
                             float *restrict dx, long n) {
    switch (phi) {
    case FEATURE_ELU1:
        for (long i = 0; i < n; i++) dx[i] += dy[i] * fm_select(y[i] < 1.0f, y[i], 1.0f);
        break;
    case FEATURE_IDENTITY:
        for (long i = 0; i < n; i++) dx[i] += dy[i];
        break;
    case FEATURE_RELU:
        for (long i = 0; i < n; i++) dx[i] += fm_select(y[i] > 0.0f, dy[i], 0.0f);
        break;
    }
}

/* ------------------------------------------------------------------------------ */
/* Row helpers shared by both forms. */

/* The normaliser's backward for one row: dnum = g/den (Dv), returns dden = −g·o/den. */
static float norm_grad_row(const float *restrict g, const float *restrict o, float den,
                           float *restrict dnum, int Dv) {
    float inv = 1.0f / den;
    for (int e = 0; e < Dv; e++) dnum[e] = g[e] * inv;
    return -fm_dot(g, o, Dv) * inv;
}

/* y += a·x over n (the rank-1 updates are rows of these). */
static inline void axpy(float *restrict y, float a, const float *restrict x, int n) {
    for (int e = 0; e < n; e++) y[e] += a * x[e];
}

/* Floats of backward workspace.  Causal: the two scans run one after the other;
 * the forward one uses S (D×Dv), z, dF (D), dnum (Dv) from the start, the reverse
 * one R (D×Dv), r, dG (D), dnum (Dv) from just past S, over the first's leftovers.
 * Bidirectional: S (D×Dv, later R), z, r (D), dnum (T×Dv), dden (T), dF (T×D). */
static long lin_work_floats(HeadDims d, int causal) {
    return causal ? 2L * d.D * d.Dv + 2L * d.D + d.Dv
                  : (long)d.D * d.Dv + 2L * d.D + (long)d.T * (d.Dv + 1 + d.D);
}

/* z = Σ_i rows of G (T×D); a plain pass so it vectorises over D. */
static void col_sums(const float *restrict G, float *restrict z, int T, int D) {
    memset(z, 0, (size_t)D * sizeof(float));
    for (int i = 0; i < T; i++) axpy(z, 1.0f, G + (long)i * D, D);
}

/* ------------------------------------------------------------------------------ */
/* Causal form: scans.  S is D×Dv row-major, so each rank-1 update and each product
 * with S is a loop over its D rows with a contiguous, vectorised inner loop over Dv. */

/* o (T×Dv) and den (T) for one (b, h); S, z are workspace. */
static void causal_forward(const float *F, const float *G, const float *V, float *o, float *den,
                           float *S, float *z, int T, int D, int Dv, float eps) {
    memset(S, 0, (size_t)D * Dv * sizeof(float));
    memset(z, 0, (size_t)D * sizeof(float));
    for (int i = 0; i < T; i++) {
        const float *fq = F + (long)i * D, *fk = G + (long)i * D, *v = V + (long)i * Dv;
        float *oi = o + (long)i * Dv;
        memset(oi, 0, (size_t)Dv * sizeof(float));
        /* S += fk vᵀ and oi = fqᵀS in one pass over S's rows; z += fk. */
        for (int a = 0; a < D; a++) {
            float *s = S + (long)a * Dv;
            axpy(s, fk[a], v, Dv);
            axpy(oi, fq[a], s, Dv);
        }
        axpy(z, 1.0f, fk, D);
        den[i] = fm_dot(fq, z, D) + eps;
        float inv = 1.0f / den[i];
        for (int e = 0; e < Dv; e++) oi[e] *= inv;
    }
}

/* dq (through φ′) for one (b, h): a forward scan rebuilding S_i, z_i. */
static void causal_backward_q(const float *F, const float *G, const float *V, const float *o,
                              const float *dO, const float *den, float *dq, AdFeature phi,
                              float *work, int T, int D, int Dv) {
    float *S = work, *z = S + (long)D * Dv, *dF = z + D, *dnum = dF + D;
    memset(S, 0, (size_t)D * Dv * sizeof(float));
    memset(z, 0, (size_t)D * sizeof(float));
    for (int i = 0; i < T; i++) {
        const float *fq = F + (long)i * D, *fk = G + (long)i * D, *v = V + (long)i * Dv;
        float dden = norm_grad_row(dO + (long)i * Dv, o + (long)i * Dv, den[i], dnum, Dv);
        axpy(z, 1.0f, fk, D);
        /* S += fk vᵀ, then dF = S·dnum + dden·z, row a of S at a time. */
        for (int a = 0; a < D; a++) {
            float *s = S + (long)a * Dv;
            axpy(s, fk[a], v, Dv);
            dF[a] = fm_dot(s, dnum, Dv) + dden * z[a];
        }
        feature_backward(phi, fq, dF, dq + (long)i * D, D);
    }
}

/* dk (through φ′) and dv for one (b, h), either may be NULL: a reverse scan with
 * R = Σ_{i≥j} F_i dnum_iᵀ and r = Σ_{i≥j} dden_i F_i. */
static void causal_backward_kv(const float *F, const float *G, const float *V, const float *o,
                               const float *dO, const float *den, float *dk, float *dv,
                               AdFeature phi, float *work, int T, int D, int Dv) {
    float *R = work + (long)D * Dv, *r = R + (long)D * Dv, *dG = r + D, *dnum = dG + D;
    memset(R, 0, (size_t)D * Dv * sizeof(float));
    memset(r, 0, (size_t)D * sizeof(float));
    for (int j = T - 1; j >= 0; j--) {
        const float *fq = F + (long)j * D, *fk = G + (long)j * D, *v = V + (long)j * Dv;
        float dden = norm_grad_row(dO + (long)j * Dv, o + (long)j * Dv, den[j], dnum, Dv);
        axpy(r, dden, fq, D);
        /* R += fq dnumᵀ, then dG = R·v + r and dv += Rᵀ·fk, row a of R at a time. */
        for (int a = 0; a < D; a++) {
            float *ra = R + (long)a * Dv;
            axpy(ra, fq[a], dnum, Dv);
            if (dk) dG[a] = fm_dot(ra, v, Dv) + r[a];
            if (dv) axpy(dv + (long)j * Dv, fk[a], ra, Dv);
        }
        if (dk) feature_backward(phi, fk, dG, dk + (long)j * D, D);
    }
}

/* ------------------------------------------------------------------------------ */
/* Bidirectional form: global S = Gᵀ·V and z = Σ G, every product a GEMM. */

static void global_forward(const float *F, const float *G, const float *V, float *o, float *den,
                           float *S, float *z, int T, int D, int Dv, float eps) {
    al_sgemm(CblasTrans, CblasNoTrans, D, Dv, T, 1.0f, G, D, V, Dv, 0.0f, S, Dv);
    col_sums(G, z, T, D);
    al_sgemm(CblasNoTrans, CblasNoTrans, T, Dv, D, 1.0f, F, D, S, Dv, 0.0f, o, Dv);
    for (int i = 0; i < T; i++) {
        den[i] = fm_dot(F + (long)i * D, z, D) + eps;
        float inv = 1.0f / den[i], *oi = o + (long)i * Dv;
        for (int e = 0; e < Dv; e++) oi[e] *= inv;
    }
}

static void global_backward(const float *F, const float *G, const float *V, const float *o,
                            const float *dO, const float *den, float *dq, float *dk, float *dv,
                            AdFeature phi, float *work, int T, int D, int Dv) {
    float *S = work, *z = S + (long)D * Dv, *r = z + D, *dnum = r + D, *dden = dnum + (long)T * Dv;
    float *dF = dden + T;
    for (int i = 0; i < T; i++)
        dden[i] = norm_grad_row(dO + (long)i * Dv, o + (long)i * Dv, den[i], dnum + (long)i * Dv, Dv);
    if (dq) {
        /* dF = dnum·Sᵀ + dden zᵀ, with S, z recomputed. */
        al_sgemm(CblasTrans, CblasNoTrans, D, Dv, T, 1.0f, G, D, V, Dv, 0.0f, S, Dv);
        col_sums(G, z, T, D);
        al_sgemm(CblasNoTrans, CblasTrans, T, D, Dv, 1.0f, dnum, Dv, S, Dv, 0.0f,
                    dF, D);
        for (int i = 0; i < T; i++) axpy(dF + (long)i * D, dden[i], z, D);
        feature_backward(phi, F, dF, dq, (long)T * D);
    }
    if (!dk && !dv) return;
    /* R = Fᵀ·dnum (into S's space), r = Fᵀ·dden. */
    float *R = S;
    al_sgemm(CblasTrans, CblasNoTrans, D, Dv, T, 1.0f, F, D, dnum, Dv, 0.0f, R, Dv);
    memset(r, 0, (size_t)D * sizeof(float));
    for (int i = 0; i < T; i++) axpy(r, dden[i], F + (long)i * D, D);
    if (dv)  /* dv += G·R */
        al_sgemm(CblasNoTrans, CblasNoTrans, T, Dv, D, 1.0f, G, D, R, Dv, 1.0f,
                    dv, Dv);
    if (dk) {  /* dG = V·Rᵀ + 1 rᵀ */
        al_sgemm(CblasNoTrans, CblasTrans, T, D, Dv, 1.0f, V, Dv, R, Dv, 0.0f,
                    dF, D);
        for (int i = 0; i < T; i++) axpy(dF + (long)i * D, 1.0f, r, D);
        feature_backward(phi, G, dF, dk, (long)T * D);
    }
}

/* ------------------------------------------------------------------------------ */

static void linear_attention_backward(TapeEntry *e) {
    Tensor *q = e->in[0], *k = e->in[1], *v = e->in[2];
    const HeadDims d = head_dims(q, k, v);
    const LinSaved *s = e->saved[0];
    const AdFeature phi = (AdFeature)e->i[0];
    const int causal = e->i[1];
    for (long bh = 0; bh < d.BH; bh++) {
        const long qo = bh * d.T * d.D, vo = bh * d.T * d.Dv;
        const float *F = s->F + qo, *G = s->G + qo, *V = v->data + vo, *den = s->den + bh * d.T;
        const float *o = e->out->data + vo, *dO = e->out->grad + vo;
        float *dq = q->grad ? q->grad + qo : NULL, *dk = k->grad ? k->grad + qo : NULL;
        float *dv = v->grad ? v->grad + vo : NULL;
        if (!causal) {
            global_backward(F, G, V, o, dO, den, dq, dk, dv, phi, s->work, d.T, d.D, d.Dv);
            continue;
        }
        if (dq) causal_backward_q(F, G, V, o, dO, den, dq, phi, s->work, d.T, d.D, d.Dv);
        if (dk || dv) causal_backward_kv(F, G, V, o, dO, den, dk, dv, phi, s->work, d.T, d.D, d.Dv);
    }
}

Tensor *ad_linear_attention(Tape *t, Tensor *q, Tensor *k, Tensor *v, AdFeature phi, int causal,
                            float eps) {
    const HeadDims d = head_dims(q, k, v);
    AL_ASSERT(phi == FEATURE_ELU1 || phi == FEATURE_IDENTITY || phi == FEATURE_RELU);
    int needs_grad = tape_needs_grad(t, q, k, v);
    Tensor *o = tape_tensor(t, needs_grad, 4, (const int[]){ q->shape[0], q->shape[1], d.T, d.Dv });
    /* With grad, F, G and den of every (b, h) are kept; without, one of each is reused. */
    const long nbh = needs_grad ? d.BH : 1, td = (long)d.T * d.D;
    float *F_all = tape_scratch(t, (size_t)(2 * nbh * td + nbh * d.T) * sizeof(float));
    float *G_all = F_all + nbh * td, *den_all = G_all + nbh * td;
    float *S = tape_scratch(t, (size_t)((long)d.D * d.Dv + d.D) * sizeof(float)), *z = S + (long)d.D * d.Dv;
    for (long bh = 0; bh < d.BH; bh++) {
        const long qo = bh * td, vo = bh * d.T * d.Dv, so = needs_grad ? bh : 0;
        float *F = F_all + so * td, *G = G_all + so * td, *den = den_all + so * d.T;
        feature_forward(phi, q->data + qo, F, td);
        feature_forward(phi, k->data + qo, G, td);
        (causal ? causal_forward : global_forward)(F, G, v->data + vo, o->data + vo, den, S, z,
                                                   d.T, d.D, d.Dv, eps);
    }
    if (needs_grad) {
        LinSaved *s = tape_scratch(t, sizeof *s);
        *s = (LinSaved){ F_all, G_all, den_all,
                         tape_scratch(t, (size_t)lin_work_floats(d, causal) * sizeof(float)) };
        ad_record(t, (TapeEntry){ .op = OP_LINEAR_ATTENTION, .backward = linear_attention_backward, .out = o,
                                  .in = { q, k, v }, .saved = { s }, .i = { (int)phi, causal } });
    }
    return o;
}
