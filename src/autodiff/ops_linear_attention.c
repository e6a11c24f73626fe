/* ops_linear_attention.c — linear attention (Katharopoulos et al.; paper 004 eq. 8).
 *
 * q, k (B, H, T, D), v (B, H, T, Dv) → o (B, H, T, Dv).  Per (b, h), with the
 * feature map φ applied row-wise (F = φ(Q), G = φ(K), both T×D):
 *   num_i = F_iᵀ S_i,  den_i = F_i·z_i + eps,  o_i = num_i / den_i,
 *   S_i = Σ_j G_j v_jᵀ (D×Dv),  z_i = Σ_j G_j (D),
 * the sums over j ≤ i (causal) or over all j (bidirectional).
 *
 * Causal: in chunks of C = LIN_CHUNK rows.  Row i of a chunk starting at c0 sees
 * the rows before c0 through the running state (S, z) summed over them, and the
 * rows c0 … i of its own chunk through the chunk's block of the quadratic form,
 * A = tril(F_c·G_cᵀ) (C×C):  num_c = A·V_c + F_c·S,  den_i = Σ_j A_ij + F_i·z.
 * Every product is a GEMM: O(T·C·(D + Dv)) for the blocks and O(T·D·Dv) for the
 * states, never the T×T matrix.  (A scan with a rank-1 update per row does half
 * of the arithmetic, but as D-long axpys and dot products with a horizontal sum
 * each, which at head width 32 took about twice as long as the chunks.)
 * Bidirectional: S and z are global, so S = Gᵀ·V and num = F·S are two GEMMs.
 *
 * Backward, with g_i = dO_i, dnum_i = g_i/den_i, dden_i = −g_i·o_i/den_i
 * (o_i = num_i/den_i, so g·num/den² = g·o/den):
 *   dF_i = S_i·dnum_i + dden_i·z_i
 *   dG_j = R_j·v_j + r_j,   dv_j = R_jᵀ·G_j,
 *   R_j = Σ_i F_i dnum_iᵀ,  r_j = Σ_i dden_i F_i   over i ≥ j (causal) or all i,
 * because S_i and z_i are sums over j of G_j v_jᵀ and G_j.  Causal: per chunk, in
 * reverse chunk order with R and r carried from the later chunks (causal_backward
 * writes the chunk form out).  Bidirectional: R = Fᵀ·dnum and the products with it
 * are GEMMs.
 *
 * Saved: F, G (B·H·T·D each), den (B·H·T) and a workspace for backward.  The
 * states before each chunk are rebuilt in backward (one GEMM per chunk) rather
 * than stored, and the bidirectional S is recomputed too, which keeps the saved
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

/* The causal form works in chunks of at most LIN_CHUNK rows (see the top). */
enum { LIN_CHUNK = 32 };

/* Rows of a chunk that starts T rows before the end; for T the whole length, the
 * rows of the first (and largest) chunk. */
static int chunk_rows(int T) { return T < LIN_CHUNK ? T : LIN_CHUNK; }
static int chunk_count(int T) { return (T + LIN_CHUNK - 1) / LIN_CHUNK; }

/* Floats of forward workspace: S (D×Dv), z (D), and for the causal form one
 * chunk's masked scores A (C×C). */
static long lin_forward_floats(HeadDims d, int causal) {
    const long C = chunk_rows(d.T);
    return (long)d.D * d.Dv + d.D + (causal ? C * C : 0);
}

/* Floats of backward workspace.  Causal: the state (S, z) before each chunk, R
 * (D×Dv), r (D), the chunk's A and P (C×C), dnum (C×Dv), dden (C) and dX (C×D).
 * Bidirectional: S (D×Dv, later R), z, r (D), dnum (T×Dv), dden (T), dF (T×D). */
static long lin_work_floats(HeadDims d, int causal) {
    const long C = chunk_rows(d.T), state = (long)d.D * d.Dv + d.D;
    return causal ? chunk_count(d.T) * state + state + 2 * C * C + C * (d.Dv + 1 + d.D)
                  : (long)d.D * d.Dv + 2L * d.D + (long)d.T * (d.Dv + 1 + d.D);
}

/* z = Σ_i rows of G (T×D); a plain pass so it vectorises over D. */
static void col_sums(const float *restrict G, float *restrict z, int T, int D) {
    memset(z, 0, (size_t)D * sizeof(float));
    for (int i = 0; i < T; i++) axpy(z, 1.0f, G + (long)i * D, D);
}

/* ------------------------------------------------------------------------------ */
/* Causal form, chunk by chunk.  Rows c0 … c0+n−1 of a chunk see the earlier chunks
 * through the state (S, z) = (Σ G_jᵀ v_j, Σ G_j) over j < c0, and one another
 * through the chunk's block of the quadratic form, A = tril(F_c·G_cᵀ). */

/* A (n×n) = F_c·G_cᵀ with the part above the diagonal (j > i) zeroed. */
static void chunk_scores(const float *F, const float *G, float *A, int n, int D) {
    al_sgemm(CblasNoTrans, CblasTrans, n, n, D, 1.0f, F, D, G, D, 0.0f, A, n);
    for (int i = 0; i + 1 < n; i++) memset(A + (long)i * n + i + 1, 0, (size_t)(n - i - 1) * sizeof(float));
}

/* (S, z) += (G_cᵀ·V_c, Σ rows of G_c) over a chunk's n rows. */
static void state_add(float *S, float *z, const float *G, const float *V, int n, int D, int Dv) {
    al_sgemm(CblasTrans, CblasNoTrans, D, Dv, n, 1.0f, G, D, V, Dv, 1.0f, S, Dv);
    for (int i = 0; i < n; i++) axpy(z, 1.0f, G + (long)i * D, D);
}

/* o (T×Dv) and den (T) for one (b, h):
 *   num_c = A·V_c + F_c·S,   den_i = Σ_j A_ij + F_i·z + eps. */
static void causal_forward(const float *F, const float *G, const float *V, float *o, float *den,
                           float *work, int T, int D, int Dv, float eps) {
    float *S = work, *z = S + (long)D * Dv, *A = z + D;
    memset(S, 0, (size_t)((long)D * Dv + D) * sizeof(float));
    for (int c0 = 0; c0 < T; c0 += LIN_CHUNK) {
        const int n = chunk_rows(T - c0);
        const float *Fc = F + (long)c0 * D, *Gc = G + (long)c0 * D, *Vc = V + (long)c0 * Dv;
        float *oc = o + (long)c0 * Dv;
        chunk_scores(Fc, Gc, A, n, D);
        al_sgemm(CblasNoTrans, CblasNoTrans, n, Dv, n, 1.0f, A, n, Vc, Dv, 0.0f, oc, Dv);
        if (c0) al_sgemm(CblasNoTrans, CblasNoTrans, n, Dv, D, 1.0f, Fc, D, S, Dv, 1.0f, oc, Dv);
        for (int i = 0; i < n; i++) {
            float rs = 0.0f, *oi = oc + (long)i * Dv;
            for (int j = 0; j <= i; j++) rs += A[(long)i * n + j];
            den[c0 + i] = rs + fm_dot(Fc + (long)i * D, z, D) + eps;
            const float inv = 1.0f / den[c0 + i];
            for (int e = 0; e < Dv; e++) oi[e] *= inv;
        }
        if (c0 + n < T) state_add(S, z, Gc, Vc, n, D, Dv);
    }
}

/* dq, dk, dv (any may be NULL; dq and dk through φ′) for one (b, h).  Chunks in
 * reverse order with R = Σ F_i dnum_iᵀ and r = Σ dden_i F_i over the later chunks;
 * within a chunk P = tril(dnum·V_cᵀ + dden 1ᵀ), P_ij = ∂L/∂A_ij, and
 *   dF_c = P·G_c + dnum·Sᵀ + dden zᵀ       (S, z: the state before the chunk)
 *   dG_c = Pᵀ·F_c + V_c·Rᵀ + 1 rᵀ
 *   dV_c = Aᵀ·dnum + G_c·R.
 * The states before each chunk come from one forward pass first (dq needs them). */
static void causal_backward(const float *F, const float *G, const float *V, const float *o,
                            const float *dO, const float *den, float *dq, float *dk, float *dv,
                            AdFeature phi, float *work, int T, int D, int Dv) {
    const int nc = chunk_count(T), C = chunk_rows(T);
    const long state = (long)D * Dv + D;
    float *St = work, *R = St + nc * state, *r = R + (long)D * Dv, *A = r + D, *P = A + (long)C * C;
    float *dnum = P + (long)C * C, *dden = dnum + (long)C * Dv, *dX = dden + C;
    if (dq) {
        memset(St, 0, (size_t)state * sizeof(float));
        for (int c = 1; c < nc; c++) {
            const long c0 = (long)(c - 1) * LIN_CHUNK;
            memcpy(St + c * state, St + (c - 1) * state, (size_t)state * sizeof(float));
            state_add(St + c * state, St + c * state + (long)D * Dv, G + c0 * D, V + c0 * Dv,
                      LIN_CHUNK, D, Dv);
        }
    }
    memset(R, 0, (size_t)state * sizeof(float));
    for (int c = nc - 1; c >= 0; c--) {
        const int c0 = c * LIN_CHUNK, n = chunk_rows(T - c0);
        const float *Fc = F + (long)c0 * D, *Gc = G + (long)c0 * D, *Vc = V + (long)c0 * Dv;
        for (int i = 0; i < n; i++)
            dden[i] = norm_grad_row(dO + (long)(c0 + i) * Dv, o + (long)(c0 + i) * Dv, den[c0 + i],
                                    dnum + (long)i * Dv, Dv);
        al_sgemm(CblasNoTrans, CblasTrans, n, n, Dv, 1.0f, dnum, Dv, Vc, Dv, 0.0f, P, n);
        for (int i = 0; i < n; i++) {
            float *Pi = P + (long)i * n;
            for (int j = 0; j <= i; j++) Pi[j] += dden[i];
            memset(Pi + i + 1, 0, (size_t)(n - i - 1) * sizeof(float));
        }
        if (dq) {
            const float *S = St + c * state, *z = S + (long)D * Dv;
            al_sgemm(CblasNoTrans, CblasNoTrans, n, D, n, 1.0f, P, n, Gc, D, 0.0f, dX, D);
            if (c) {
                al_sgemm(CblasNoTrans, CblasTrans, n, D, Dv, 1.0f, dnum, Dv, S, Dv, 1.0f, dX, D);
                for (int i = 0; i < n; i++) axpy(dX + (long)i * D, dden[i], z, D);
            }
            feature_backward(phi, Fc, dX, dq + (long)c0 * D, (long)n * D);
        }
        if (dk) {
            al_sgemm(CblasTrans, CblasNoTrans, n, D, n, 1.0f, P, n, Fc, D, 0.0f, dX, D);
            if (c + 1 < nc) {
                al_sgemm(CblasNoTrans, CblasTrans, n, D, Dv, 1.0f, Vc, Dv, R, Dv, 1.0f, dX, D);
                for (int j = 0; j < n; j++) axpy(dX + (long)j * D, 1.0f, r, D);
            }
            feature_backward(phi, Gc, dX, dk + (long)c0 * D, (long)n * D);
        }
        if (dv) {
            float *dvc = dv + (long)c0 * Dv;
            chunk_scores(Fc, Gc, A, n, D);
            al_sgemm(CblasTrans, CblasNoTrans, n, Dv, n, 1.0f, A, n, dnum, Dv, 1.0f, dvc, Dv);
            if (c + 1 < nc) al_sgemm(CblasNoTrans, CblasNoTrans, n, Dv, D, 1.0f, Gc, D, R, Dv, 1.0f, dvc, Dv);
        }
        if (c && (dk || dv)) {
            al_sgemm(CblasTrans, CblasNoTrans, D, Dv, n, 1.0f, Fc, D, dnum, Dv, 1.0f, R, Dv);
            for (int i = 0; i < n; i++) axpy(r, dden[i], Fc + (long)i * D, D);
        }
    }
}

/* ------------------------------------------------------------------------------ */
/* Bidirectional form: global S = Gᵀ·V and z = Σ G, every product a GEMM. */

static void global_forward(const float *F, const float *G, const float *V, float *o, float *den,
                           float *work, int T, int D, int Dv, float eps) {
    float *S = work, *z = S + (long)D * Dv;
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
        causal_backward(F, G, V, o, dO, den, dq, dk, dv, phi, s->work, d.T, d.D, d.Dv);
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
    float *work = tape_scratch(t, (size_t)lin_forward_floats(d, causal) * sizeof(float));
    for (long bh = 0; bh < d.BH; bh++) {
        const long qo = bh * td, vo = bh * d.T * d.Dv, so = needs_grad ? bh : 0;
        float *F = F_all + so * td, *G = G_all + so * td, *den = den_all + so * d.T;
        feature_forward(phi, q->data + qo, F, td);
        feature_forward(phi, k->data + qo, G, td);
        (causal ? causal_forward : global_forward)(F, G, v->data + vo, o->data + vo, den, work,
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
