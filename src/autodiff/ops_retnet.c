/* ops_retnet.c — retention, the token mixer of RetNet (Sun et al. 2023, "Retentive
 * Network: A Successor to Transformer for Large Language Models"), in its parallel
 * form, every head of a layer in one op.
 *
 * q, k (B, T, H·Dk), v (B, T, H·Dv) → o (B, T, H·Dv), head h the columns
 * h·Dk … (h+1)·Dk − 1 (h·Dv … for v, o) of every row, read in place.  Per (b, h),
 * positions n, m = 0 … T−1:
 *   q̃_n = Θ_n q_n,  k̃_m = Θ_m k_m / √Dk           (eq. 5: the xPos-style rotation,
 *        pairs (x_2i, x_2i+1) turned by the angle n·θ_i, θ_i = 10000^(−i/(Dk/2 − 1)),
 *        as the official code's theta_shift; q̃_n·k̃_m depends on n − m only)
 *   A    = Q̃ K̃ᵀ                                     (the scaling of §2.2, 1)
 *   D̃_nm = γ^(n−m) / √(Σ_{i≤n} γ^i) for m ≤ n, else 0   (eq. 5's D, normalised, §2.2, 2)
 *   R    = A ⊙ D̃,  s_n = Σ_m R_nm,  P_nm = R_nm / max(|s_n|, 1)   (§2.2, 3)
 *   O    = P V
 * with γ = γ_h = 1 − 2^(−5−h) (eq. 8).  The normalisations are differentiated as
 * written (the official code detaches the last one; GroupNorm after retention
 * makes the output all but invariant to it, so the difference is at the level of
 * its eps), so the backward is the exact gradient a finite difference sees.
 *
 * Products: A and O are two sgemm per (b, h) over the full T×T (the upper
 * triangle is computed and zeroed: simpler than a blocked triangle, and T is
 * small in this project's tasks).  Saved: Q̃, K̃ (B·H·T·Dk each) and s (B·H·T);
 * backward recomputes A, hence R and P, with the same code.  With dO:
 *   dV  = Pᵀ dO,  dP = dO Vᵀ
 *   dR_nm = dP_nm / den_n + g_n,  g_n = −[|s_n| > 1]·sign(s_n)·(Σ_m dP_nm P_nm) / den_n
 *   dA  = dR ⊙ D̃,  dQ̃ = dA K̃,  dK̃ = dAᵀ Q̃
 *   dq_n = Θ_nᵀ dq̃_n,  dk_m = Θ_mᵀ dk̃_m / √Dk
 * The recurrent form (S_n = γ S_{n−1} + k̃_nᵀ v_n, z_n = γ z_{n−1} + k̃_n,
 * o_n = c_n q̃_n S_n / max(|c_n q̃_n·z_n|, 1), c_n = 1/√(Σ_{i≤n} γ^i)) is the
 * decoder's (src/nn/retnet.c); tests/autodiff/test_retention.c checks the two
 * agree. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"

#include "record.h"

#include "attnlab/util/gemm.h"
#include <math.h>
#include <string.h>

double ad_retention_decay(int head) { return 1.0 - ldexp(1.0, -5 - head); }

double ad_retention_row_scale(double gamma, int n) {
    return 1.0 / sqrt((1.0 - pow(gamma, n + 1)) / (1.0 - gamma));   /* Σ_{i=0}^{n} γ^i */
}

/* θ_i of pair i of a Dk-wide head (torch.linspace(0, 1, Dk/2) in the exponent). */
static double theta(int i, int half) { return half > 1 ? pow(10000.0, -(double)i / (half - 1)) : 1.0; }

/* cos and sin of pos·θ_i, i < Dk/2: the one place the angles are computed. */
static void angles(int Dk, int pos, float *c, float *s) {
    for (int i = 0; i < Dk / 2; i++) {
        double a = pos * theta(i, Dk / 2);
        c[i] = (float)cos(a);
        s[i] = (float)sin(a);
    }
}

/* y = scale·Θ x (inverse 0) or y += scale·Θᵀ x (inverse 1) for one Dk-wide row. */
static void rotate(const float *restrict x, float *restrict y, const float *c, const float *s, int Dk,
                   float scale, int inverse) {
    for (int i = 0; i < Dk / 2; i++) {
        float x0 = x[2 * i], x1 = x[2 * i + 1];
        if (inverse) {
            y[2 * i] += scale * (x0 * c[i] + x1 * s[i]);
            y[2 * i + 1] += scale * (x1 * c[i] - x0 * s[i]);
        } else {
            y[2 * i] = scale * (x0 * c[i] - x1 * s[i]);
            y[2 * i + 1] = scale * (x1 * c[i] + x0 * s[i]);
        }
    }
}

void ad_retention_rotate(const float *x, float *y, int Dk, int pos, float scale) {
    float c[Dk / 2 + 1], s[Dk / 2 + 1];
    angles(Dk, pos, c, s);
    rotate(x, y, c, s, Dk, scale, 0);
}

typedef struct RetDims { int B, T, H, Dk, Dv; } RetDims;

static RetDims ret_dims(const Tensor *q, const Tensor *k, const Tensor *v, int H) {
    AL_ASSERT(q->ndim == 3 && k->ndim == 3 && v->ndim == 3 && H >= 1);
    for (int a = 0; a < 3; a++) AL_ASSERT(k->shape[a] == q->shape[a]);
    AL_ASSERT(v->shape[0] == q->shape[0] && v->shape[1] == q->shape[1]);
    AL_ASSERT(q->shape[2] % H == 0 && v->shape[2] % H == 0 && (q->shape[2] / H) % 2 == 0);
    return (RetDims){ q->shape[0], q->shape[1], H, q->shape[2] / H, v->shape[2] / H };
}

/* What backward reads, one arena struct behind e->saved[0]. */
typedef struct RetSaved {
    float *qr, *kr;      /* rotated q, k: (B, H, T, Dk) */
    float *s;            /* row sums of R: (B, H, T) */
    float *cos, *sin;    /* (T, Dk/2) */
    float *pw, *rs;      /* per head: γ^j (T) and c_n (T): (H, T) each */
    float *P, *dP;       /* (T, T) workspaces */
    float *dqr, *dkr;    /* (T, Dk) workspaces */
} RetSaved;

/* P (T×T) of one (b, h) from Q̃, K̃: A by one sgemm, then D̃, the row sums s (written
 * when s_out is not NULL) and the division by max(|s_n|, 1). */
static void scores(const float *qr, const float *kr, const float *pw, const float *rs, int T, int Dk, float *P,
                   float *s_out) {
    al_sgemm(CblasNoTrans, CblasTrans, T, T, Dk, 1.0f, qr, Dk, kr, Dk, 0.0f, P, T);
    for (int n = 0; n < T; n++) {
        float *row = P + (size_t)n * T, sum = 0;
        for (int m = 0; m <= n; m++) sum += row[m] *= rs[n] * pw[n - m];
        memset(row + n + 1, 0, (size_t)(T - n - 1) * sizeof(float));
        float inv = 1.0f / fmaxf(fabsf(sum), 1.0f);
        for (int m = 0; m <= n; m++) row[m] *= inv;
        if (s_out) s_out[n] = sum;
    }
}

static void retention_backward(TapeEntry *e) {
    Tensor *q = e->in[0], *k = e->in[1], *v = e->in[2], *o = e->out;
    const RetSaved *sv = e->saved[0];
    const RetDims d = ret_dims(q, k, v, e->i[0]);
    const int T = d.T, Dk = d.Dk, Dv = d.Dv, ldk = d.H * Dk, ldv = d.H * Dv, half = Dk / 2;
    const float scale = 1.0f / sqrtf((float)Dk);
    float *P = sv->P, *dP = sv->dP;
    for (int b = 0; b < d.B; b++)
        for (int h = 0; h < d.H; h++) {
            size_t bh = (size_t)b * d.H + h;
            const float *qr = sv->qr + bh * T * Dk, *kr = sv->kr + bh * T * Dk, *s = sv->s + bh * T;
            const float *pw = sv->pw + (size_t)h * T, *rs = sv->rs + (size_t)h * T;
            const float *vb = v->data + (size_t)b * T * ldv + (size_t)h * Dv;
            const float *dO = o->grad + (size_t)b * T * ldv + (size_t)h * Dv;
            scores(qr, kr, pw, rs, T, Dk, P, NULL);
            if (v->grad)
                al_sgemm(CblasTrans, CblasNoTrans, T, Dv, T, 1.0f, P, T, dO, ldv, 1.0f,
                         v->grad + (size_t)b * T * ldv + (size_t)h * Dv, ldv);
            if (!q->grad && !k->grad) continue;
            al_sgemm(CblasNoTrans, CblasTrans, T, T, Dv, 1.0f, dO, ldv, vb, ldv, 0.0f, dP, T);
            for (int n = 0; n < T; n++) {   /* dP → dA in place */
                float *dp = dP + (size_t)n * T, *p = P + (size_t)n * T, den = fmaxf(fabsf(s[n]), 1.0f), dot = 0;
                for (int m = 0; m <= n; m++) dot += dp[m] * p[m];
                float g = fabsf(s[n]) > 1.0f ? (s[n] > 0 ? -dot : dot) / den : 0.0f;
                for (int m = 0; m <= n; m++) dp[m] = (dp[m] / den + g) * (rs[n] * pw[n - m]);
                memset(dp + n + 1, 0, (size_t)(T - n - 1) * sizeof(float));
            }
            al_sgemm(CblasNoTrans, CblasNoTrans, T, Dk, T, 1.0f, dP, T, kr, Dk, 0.0f, sv->dqr, Dk);
            al_sgemm(CblasTrans, CblasNoTrans, T, Dk, T, 1.0f, dP, T, qr, Dk, 0.0f, sv->dkr, Dk);
            for (int n = 0; n < T; n++) {
                size_t at = ((size_t)b * T + n) * ldk + (size_t)h * Dk;
                const float *c = sv->cos + (size_t)n * half, *sn = sv->sin + (size_t)n * half;
                if (q->grad) rotate(sv->dqr + (size_t)n * Dk, q->grad + at, c, sn, Dk, 1.0f, 1);
                if (k->grad) rotate(sv->dkr + (size_t)n * Dk, k->grad + at, c, sn, Dk, scale, 1);
            }
        }
}

Tensor *ad_retention(Tape *t, Tensor *q, Tensor *k, Tensor *v, int n_heads) {
    const RetDims d = ret_dims(q, k, v, n_heads);
    const int T = d.T, Dk = d.Dk, Dv = d.Dv, ldk = d.H * Dk, ldv = d.H * Dv, half = Dk / 2;
    const float scale = 1.0f / sqrtf((float)Dk);
    int needs_grad = tape_needs_grad(t, q, k, v);
    Tensor *o = tape_tensor(t, needs_grad, 3, (const int[]){ d.B, T, ldv });

    RetSaved sv = { 0 };
    size_t rows = (size_t)d.B * d.H * T;
    sv.qr = tape_scratch(t, rows * Dk * sizeof(float));
    sv.kr = tape_scratch(t, rows * Dk * sizeof(float));
    sv.s = tape_scratch(t, rows * sizeof(float));
    sv.cos = tape_scratch(t, (size_t)T * half * sizeof(float));
    sv.sin = tape_scratch(t, (size_t)T * half * sizeof(float));
    sv.pw = tape_scratch(t, (size_t)d.H * T * sizeof(float));
    sv.rs = tape_scratch(t, (size_t)d.H * T * sizeof(float));
    sv.P = tape_scratch(t, (size_t)T * T * sizeof(float));
    for (int n = 0; n < T; n++) angles(Dk, n, sv.cos + (size_t)n * half, sv.sin + (size_t)n * half);
    for (int h = 0; h < d.H; h++) {
        double gamma = ad_retention_decay(h);
        for (int n = 0; n < T; n++) {
            sv.pw[(size_t)h * T + n] = (float)pow(gamma, n);
            sv.rs[(size_t)h * T + n] = (float)ad_retention_row_scale(gamma, n);
        }
    }
    for (int b = 0; b < d.B; b++)
        for (int h = 0; h < d.H; h++) {
            size_t bh = (size_t)b * d.H + h;
            float *qr = sv.qr + bh * T * Dk, *kr = sv.kr + bh * T * Dk;
            for (int n = 0; n < T; n++) {
                size_t at = ((size_t)b * T + n) * ldk + (size_t)h * Dk;
                const float *c = sv.cos + (size_t)n * half, *sn = sv.sin + (size_t)n * half;
                rotate(q->data + at, qr + (size_t)n * Dk, c, sn, Dk, 1.0f, 0);
                rotate(k->data + at, kr + (size_t)n * Dk, c, sn, Dk, scale, 0);
            }
            scores(qr, kr, sv.pw + (size_t)h * T, sv.rs + (size_t)h * T, T, Dk, sv.P, sv.s + bh * T);
            al_sgemm(CblasNoTrans, CblasNoTrans, T, Dv, T, 1.0f, sv.P, T, v->data + (size_t)b * T * ldv + (size_t)h * Dv,
                     ldv, 0.0f, o->data + (size_t)b * T * ldv + (size_t)h * Dv, ldv);
        }
    if (needs_grad) {
        /* Backward cannot allocate (the entry has no tape), so its buffers come now. */
        sv.dP = tape_scratch(t, (size_t)T * T * sizeof(float));
        sv.dqr = tape_scratch(t, (size_t)T * Dk * sizeof(float));
        sv.dkr = tape_scratch(t, (size_t)T * Dk * sizeof(float));
        RetSaved *saved = tape_scratch(t, sizeof *saved);
        *saved = sv;
        ad_record(t, (TapeEntry){ .op = OP_RETENTION, .backward = retention_backward, .out = o, .in = { q, k, v },
                                  .saved = { saved }, .i = { d.H } });
    }
    return o;
}
