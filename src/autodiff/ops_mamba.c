/* ops_mamba.c — the two sequence mixers of a Mamba block (Gu & Dao 2023, "Mamba:
 * Linear-Time Sequence Modeling with Selective State Spaces"): the causal depthwise
 * convolution in front of the SSM (§3.4, Figure 3) and the selective scan itself
 * (§3.2, Algorithm 2: the S6 layer, eq. 2a–2b with Δ, B, C functions of the input).
 *
 * Layouts are batch-major rows (b, t) of channels, like every other op: u, Δ, z
 * (B, T, E), B and C (B, T, N).  The scan's state h is kept per batch row as (N, E)
 * — state index outer, channel inner — so that every inner loop runs over the E
 * channels, contiguous and vectorisable (E = expand·d ≥ 64 typically, N = 16).
 *
 * Discretisation as the reference implementation's selective_scan (and the paper's
 * §3.5 / Appendix: zero-order hold for A, the simplified Euler step Δ·B for B):
 *   Δ_t   = softplus(δ_t)                          (δ = dt_proj(·) with its bias)
 *   h_t   = exp(Δ_t·A) ∘ h_{t−1} + (Δ_t·u_t) ⊗ B_t      h_{−1} = 0, A = −exp(A_log)
 *   y_t   = C_t·h_t + D ∘ u_t
 *   out_t = y_t ∘ SiLU(z_t)                        (the gate, when z is given)
 * i.e. per channel e and state n: h[n,e] = exp(Δ[e]·A[e,n])·h[n,e] + Δ[e]·u[e]·B[n],
 * y[e] = Σ_n C[n]·h[n,e] + D[e]·u[e]. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"

#include "act.h"
#include "attnlab/util/fastmath.h"
#include "grad_put.h"
#include "record.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------------------ */
/* causal depthwise conv1d: x (B, T, E), w (E, 1, K) (nn.Conv1d(E, E, K, groups=E)'s
 * weight), b (E) → y (B, T, E):
 *   y[b,t,e] = b[e] + Σ_k w[e,k]·x[b, t−(K−1)+k, e]      (x before position 0 is 0)
 * which is PyTorch's conv1d with padding K−1 cut to its first T outputs (the Mamba
 * reference).  Weights are transposed to (K, E) once so every loop runs over e.
 * Backward: dx[s] += Σ_k w[k]·dy[s+K−1−k], dw[k] = Σ_{b,t} dy[t]∘x[t−K+1+k],
 * db = Σ dy. */

typedef struct ConvDims { int B, T, E, K; } ConvDims;

static ConvDims conv_dims(const Tensor *x, const Tensor *w, const Tensor *b) {
    AL_ASSERT(x->ndim == 3 && w->ndim == 3 && w->shape[1] == 1 && b);
    ConvDims d = { x->shape[0], x->shape[1], x->shape[2], w->shape[2] };
    AL_ASSERT(w->shape[0] == d.E && b->n == d.E && d.K >= 1);
    return d;
}

/* (E, K) → (K, E). */
static void transpose_ek(const float *w, float *wt, int E, int K) {
    for (int e = 0; e < E; e++)
        for (int k = 0; k < K; k++) wt[(size_t)k * E + e] = w[(size_t)e * K + k];
}

/* acc += a∘b over E channels. */
static void conv_tap(float *restrict acc, const float *restrict a, const float *restrict b, int E) {
    for (int c = 0; c < E; c++) acc[c] = FM_FMA(a[c], b[c], acc[c]);
}

/* One output row: y = b + Σ_k wt[k]∘x_{t−K+1+k}, rows[k] the input row of tap k or
 * NULL (before the sequence).  Shared by the op and the decoding step. */
static void conv_row(float *y, const float *bias, const float *wt,
                     const float *const *rows, int E, int K) {
    memcpy(y, bias, (size_t)E * sizeof(float));
    for (int k = 0; k < K; k++)
        if (rows[k]) conv_tap(y, wt + (size_t)k * E, rows[k], E);
}

static void conv_backward(TapeEntry *e) {
    Tensor *x = e->in[0], *w = e->in[1], *bias = e->in[2];
    const ConvDims d = conv_dims(x, w, bias);
    const int E = d.E, K = d.K;
    float *wt = e->saved[0], *dwt = e->saved[1];
    const float *dy = e->out->grad;
    /* Tap k joins input row s = t − K + 1 + k to output row t: dx_s += w_k∘dy_t and
     * dw_k += dy_t∘x_s, both in one pass.  A first-writer dx is zeroed first. */
    float *dx = x->grad;
    if (dx && !tape_grad_acc(x)) memset(dx, 0, (size_t)x->n * sizeof(float));
    if (w->grad) memset(dwt, 0, (size_t)K * E * sizeof(float));
    for (int b = 0; b < d.B; b++)
        for (int t = 0; t < d.T; t++) {
            const float *restrict g = dy + ((size_t)b * d.T + t) * E;
            for (int k = 0; k < K; k++) {
                int s = t - (K - 1) + k;
                if (s < 0) continue;
                const size_t row = ((size_t)b * d.T + s) * E;
                if (dx) conv_tap(dx + row, wt + (size_t)k * E, g, E);
                if (w->grad) conv_tap(dwt + (size_t)k * E, g, x->data + row, E);
            }
        }
    if (w->grad) {
        int acc = tape_grad_acc(w);
        for (int c = 0; c < E; c++)
            for (int k = 0; k < K; k++) {
                float v = dwt[(size_t)k * E + c];
                float *dst = w->grad + (size_t)c * K + k;
                *dst = acc ? *dst + v : v;
            }
    }
    if (bias->grad) grad_put_colsum(bias->grad, dy, NULL, 1.0f, (long)d.B * d.T, E, tape_grad_acc(bias));
}

Tensor *ad_causal_conv1d(Tape *t, Tensor *x, Tensor *w, Tensor *b) {
    const ConvDims d = conv_dims(x, w, b);
    const int E = d.E, K = d.K;
    int needs_grad = tape_needs_grad(t, x, w, b);
    Tensor *y = tape_tensor(t, needs_grad, 3, x->shape);
    float *wt = tape_scratch(t, (size_t)K * E * sizeof(float));
    transpose_ek(w->data, wt, E, K);
    const float *rows[64];
    AL_ASSERT(K <= 64);
    for (int bb = 0; bb < d.B; bb++)
        for (int s = 0; s < d.T; s++) {
            for (int k = 0; k < K; k++) {
                int src = s - (K - 1) + k;
                rows[k] = src >= 0 ? x->data + ((size_t)bb * d.T + src) * E : NULL;
            }
            conv_row(y->data + ((size_t)bb * d.T + s) * E, b->data, wt, rows, E, K);
        }
    if (needs_grad) {
        float *dwt = tape_scratch(t, (size_t)K * E * sizeof(float));
        ad_record(t, (TapeEntry){ .op = OP_CAUSAL_CONV1D, .backward = conv_backward, .out = y,
                                  .in = { x, w, b }, .saved = { wt, dwt }, .first_write = 1 });
    }
    return y;
}

void ad_causal_conv1d_step(float *window, const float *x, const float *w, const float *b, float *y, int E,
                           int K, float *work) {
    float *wt = work;
    transpose_ek(w, wt, E, K);
    const float *rows[64];
    AL_ASSERT(K <= 64);
    for (int k = 0; k + 1 < K; k++) rows[k] = window + (size_t)k * E;
    rows[K - 1] = x;
    conv_row(y, b, wt, rows, E, K);
    /* Slide: drop the oldest input, append x. */
    if (K > 1) {
        memmove(window, window + E, (size_t)(K - 2) * E * sizeof(float));
        memcpy(window + (size_t)(K - 2) * E, x, (size_t)E * sizeof(float));
    }
}

/* ------------------------------------------------------------------------------ */
/* selective scan (header above).  Inputs u, δ, A_log, B, C, D in the entry's six
 * slots; the gate z travels in the saved struct (as the LSTM's bias does).
 *
 * Saved: Δ (B, T, E), with a gate y before the gate (B, T, E), and the states in
 * chunks.  The backward reads h_{t−1} and h_t of every step, and recomputing them
 * from the end is unstable (÷ exp(Δ·A)); but keeping all of them, (B, T, N, E), made
 * the forward spend most of its time storing states to memory and the backward
 * reading them back.  So the forward keeps only the state at the end of every
 * SCAN_CHUNK-th step, and the backward recomputes one chunk's states and decays
 * exp(Δ·A) at a time from the checkpoint before it (scan_states: scan_row's
 * arithmetic, so the same bits) into a buffer that stays in cache.  The exponentials
 * are still computed twice per step, as when the backward computed them itself; the
 * states' memory traffic and footprint are SCAN_CHUNK times smaller (a Mamba
 * training step on index lookup at N = 100: 9% faster, half the peak memory, the
 * same model bit for bit).  Backward, per batch row from
 * t = T−1 down, with the carried dh = ∂L/∂h_t (N, E) from the later steps:
 *   g      = dout ∘ SiLU(z)           dz = dout ∘ y ∘ SiLU′(z)
 *   dh    += g ⊗ C_t                   (from y_t = C_t·h_t)
 *   dC_t[n] = Σ_e g[e]·h_t[n,e];   dD += g ∘ u;   du = g ∘ D + Σ_n dh[n]·B[n] ∘ Δ
 *   with a = exp(Δ·A):  dΔ  = Σ_n dh∘h_{t−1}∘a∘A[n] + Σ_n dh[n]·B[n] ∘ u
 *                       dA[n] += dh∘h_{t−1}∘a∘Δ;   dB_t[n] = Σ_e dh[n,e]·Δ[e]·u[e]
 *   dh ← dh ∘ a                        (to h_{t−1})
 *   dδ = dΔ ∘ σ(δ);  dA_log = dA ∘ A.
 * O(B·T·E·N) both ways. */

typedef struct ScanDims { int B, T, E, N; } ScanDims;

static ScanDims scan_dims(const Tensor *u, const Tensor *delta, const Tensor *A_log, const Tensor *Bm,
                          const Tensor *Cm, const Tensor *D, const Tensor *z) {
    AL_ASSERT(u->ndim == 3 && A_log->ndim == 2 && Bm->ndim == 3 && Cm->ndim == 3);
    ScanDims d = { u->shape[0], u->shape[1], u->shape[2], A_log->shape[1] };
    AL_ASSERT(tensor_same_shape(u, delta) && (!z || tensor_same_shape(u, z)));
    AL_ASSERT(A_log->shape[0] == d.E && D->n == d.E && tensor_same_shape(Bm, Cm));
    AL_ASSERT(Bm->shape[0] == d.B && Bm->shape[1] == d.T && Bm->shape[2] == d.N);
    return d;
}

typedef struct ScanSaved {
    Tensor *z;          /* the gate, or NULL */
    float *dt;          /* (B, T, E) Δ = softplus(δ) */
    float *ck;          /* (B, scan_checkpoints(T), N, E) states at the chunks' ends */
    float *chunk;       /* (2, SCAN_CHUNK, N, E) one chunk's states and decays, recomputed */
    float *y;           /* (B, T, E) y before the gate; NULL without z */
    float *at;          /* (N, E) Aᵀ = −exp(A_log)ᵀ */
    float *dh, *dat;    /* (N, E) carried ∂L/∂h, ∂L/∂Aᵀ summed over rows */
    float *row;         /* 6·E: per-step g, du, dΔ, Σ_n dh·B, Δ∘u, dh of one n */
    float *dD;          /* (E) */
} ScanSaved;

/* softplus(x) = max(x, 0) + log1p(e), e = e^−|x| ∈ (0, 1]: no overflow, full
 * precision in both tails.  log1p(e) = 2·atanh(s) with s = e/(2 + e) ∈ (0, 1/3], by
 * its odd series 2·(s + s³/3 + … + s¹⁵/15): the first term left out, s¹⁷/17, is
 * below 1e-8 of the sum; measured against double over [−86, 100]: ≤ 2.5e-7 relative
 * (4 ulp); below −86.64 fm_exp flushes e to 0, so softplus = 0 (the true value is
 * < 2e-38).  Branch-free and without libm, so the loop over a row vectorises (a
 * log1pf call per element cost about as much as the scan's forward). */
static inline float softplus(float x) {
    float e = fm_exp(-fabsf(x)), s = e / (2.0f + e), p = s * s;
    float q = FM_FMA(p, 1.0f / 15, 1.0f / 13);
    q = FM_FMA(p, q, 1.0f / 11);
    q = FM_FMA(p, q, 1.0f / 9);
    q = FM_FMA(p, q, 1.0f / 7);
    q = FM_FMA(p, q, 1.0f / 5);
    q = FM_FMA(p, q, 1.0f / 3);
    q = FM_FMA(p, q, 1.0f);
    return fm_select(x > 0.0f, x, 0.0f) + 2.0f * s * q;
}

static void scan_at(const float *A_log, float *at, int E, int N) {
    for (int e = 0; e < E; e++)
        for (int n = 0; n < N; n++) at[(size_t)n * E + e] = -expf(A_log[(size_t)e * N + n]);
}

/* The states' steps per checkpoint (see above): a chunk's states and decays, 2·N·E·
 * SCAN_CHUNK floats, 512 KB at N = 32, E = 128, are recomputed in the backward and
 * read there from L2.  (8 steps measured the same; the checkpoints are 1/16 of the
 * states.) */
enum { SCAN_CHUNK = AD_SCAN_CHUNK };

/* One step of one batch row: h (N, E) from h_prev (may alias h; NULL = zeros), then
 * y (E) = C·h + D∘u.  Shared by the op's forward and the decoding step. */
static void scan_row(float *h, const float *h_prev, const float *restrict u, const float *restrict dt,
                     const float *restrict at, const float *restrict Bv, const float *restrict Cv,
                     const float *restrict D, float *restrict y, int E, int N) {
    for (int e = 0; e < E; e++) y[e] = D[e] * u[e];
    for (int n = 0; n < N; n++) {
        float *hn = h + (size_t)n * E;
        const float *hp = h_prev ? h_prev + (size_t)n * E : NULL, *an = at + (size_t)n * E;
        const float bn = Bv[n], cn = Cv[n];
        if (hp)
            for (int e = 0; e < E; e++) {
                float v = FM_FMA(fm_exp(dt[e] * an[e]), hp[e], dt[e] * u[e] * bn);
                hn[e] = v;
                y[e] = FM_FMA(cn, v, y[e]);
            }
        else
            for (int e = 0; e < E; e++) {
                float v = dt[e] * u[e] * bn;
                hn[e] = v;
                y[e] = FM_FMA(cn, v, y[e]);
            }
    }
}

/* The backward's recomputation of one step: h (N, E) from h_prev (NULL = zeros) as
 * scan_row computes it, bit for bit, and the decays a = exp(Δ·A) (N, E) the backward
 * step needs (left alone at t = 0, where none is used). */
static void scan_states(float *restrict h, float *restrict a, const float *restrict h_prev,
                        const float *restrict u, const float *restrict dt, const float *restrict at,
                        const float *restrict Bv, int E, int N) {
    for (int n = 0; n < N; n++) {
        float *restrict hn = h + (size_t)n * E, *restrict a_n = a + (size_t)n * E;
        const float *restrict an = at + (size_t)n * E;
        const float bn = Bv[n];
        if (h_prev) {
            const float *restrict hp = h_prev + (size_t)n * E;
            for (int e = 0; e < E; e++) {
                a_n[e] = fm_exp(dt[e] * an[e]);
                hn[e] = FM_FMA(a_n[e], hp[e], dt[e] * u[e] * bn);
            }
        } else {
            for (int e = 0; e < E; e++) hn[e] = dt[e] * u[e] * bn;
        }
    }
}

/* out = y ∘ SiLU(z) over n values (z NULL: out = y, nothing to do when they alias). */
static void scan_gate(float *out, const float *y, const float *z, long n) {
    if (!z) {
        if (out != y) memcpy(out, y, (size_t)n * sizeof(float));
        return;
    }
    for (long i = 0; i < n; i++) out[i] = y[i] * silu(z[i]).y;
}

/* dt = softplus(delta) over n values. */
static void scan_softplus(float *dt, const float *delta, long n) {
    for (long i = 0; i < n; i++) dt[i] = softplus(delta[i]);
}

/* The state n's part of one backward step, over the E channels (see above): from
 * the carried dh (in: ∂L/∂h_t from later steps; out: ∂L/∂h_{t−1}), g∘C[n] and the
 * step's decays av = exp(Δ·A[n]) (scan_states), accumulates dΔ (ddt), dAᵀ[n] (dat)
 * and Σ_n dh·B (dbu), and leaves ∂L/∂h_t in dhn.
 * Every pointer restrict, so the loop vectorises without alias checks. */
static void scan_back_state(float *restrict dh, float *restrict dat, float *restrict ddt, float *restrict dbu,
                            float *restrict dhn, const float *restrict g, const float *restrict dt,
                            const float *restrict an, const float *restrict av, const float *restrict hp, float bn,
                            float cn, int E) {
    if (!hp) {   /* t = 0: h_{−1} = 0, nothing flows into Δ·A or further back */
        for (int e = 0; e < E; e++) {
            float dhv = FM_FMA(g[e], cn, dh[e]);
            dbu[e] = FM_FMA(dhv, bn, dbu[e]);
            dhn[e] = dhv;
        }
        return;
    }
    for (int e = 0; e < E; e++) {
        float dhv = FM_FMA(g[e], cn, dh[e]);
        float a = av[e], da = dhv * hp[e] * a;
        ddt[e] = FM_FMA(da, an[e], ddt[e]);
        dat[e] = FM_FMA(da, dt[e], dat[e]);
        dbu[e] = FM_FMA(dhv, bn, dbu[e]);
        dhn[e] = dhv;
        dh[e] = dhv * a;
    }
}

/* One backward step of row r = (b, t), from its state h, its decays a and the state
 * before, hp (NULL at t = 0), with the carried s->dh (see above). */
static void scan_backward_step(TapeEntry *en, const ScanSaved *s, ScanDims d, size_t r, const float *h,
                               const float *a, const float *hp, const int *acc) {
    Tensor *u = en->in[0], *delta = en->in[1], *Bm = en->in[3], *Cm = en->in[4], *D = en->in[5], *z = s->z;
    const int E = d.E, N = d.N;
    float *g = s->row, *du = g + E, *ddt = du + E, *dbu = ddt + E, *dtu = dbu + E, *dhn = dtu + E;
    const float *ur = u->data + r * E, *dt = s->dt + r * E, *dout = en->out->grad + r * E;
    const float *Bv = Bm->data + r * N, *Cv = Cm->data + r * N;
    if (z) {
        const float *zr = z->data + r * E, *yr = s->y + r * E;
        float *dz = z->grad ? z->grad + r * E : NULL;
        for (int e = 0; e < E; e++) {
            ValDer sz = silu(zr[e]);
            g[e] = dout[e] * sz.y;
            if (dz) dz[e] = acc[6] ? dz[e] + dout[e] * yr[e] * sz.d : dout[e] * yr[e] * sz.d;
        }
    } else {
        memcpy(g, dout, (size_t)E * sizeof(float));
    }
    for (int e = 0; e < E; e++) {
        s->dD[e] = FM_FMA(g[e], ur[e], s->dD[e]);
        du[e] = g[e] * D->data[e];
        ddt[e] = 0.0f;
        dbu[e] = 0.0f;
        dtu[e] = dt[e] * ur[e];
    }
    for (int n = 0; n < N; n++) {
        float *restrict dh = s->dh + (size_t)n * E, *restrict dat = s->dat + (size_t)n * E;
        const float *restrict an = s->at + (size_t)n * E, *restrict hn = h + (size_t)n * E;
        scan_back_state(dh, dat, ddt, dbu, dhn, g, dt, an, a + (size_t)n * E, hp ? hp + (size_t)n * E : NULL,
                        Bv[n], Cv[n], E);
        if (Cm->grad) {
            float v = fm_dot(g, hn, E), *dst = Cm->grad + r * N + n;
            *dst = acc[4] ? *dst + v : v;
        }
        if (Bm->grad) {
            float v = fm_dot(dhn, dtu, E), *dst = Bm->grad + r * N + n;
            *dst = acc[3] ? *dst + v : v;
        }
    }
    for (int e = 0; e < E; e++) {
        ddt[e] = FM_FMA(dbu[e], ur[e], ddt[e]);
        du[e] = FM_FMA(dbu[e], dt[e], du[e]);
    }
    if (u->grad) grad_put(u->grad + r * E, du, NULL, 1.0f, E, acc[0]);
    if (delta->grad) {
        const float *dr = delta->data + r * E;
        for (int e = 0; e < E; e++) ddt[e] *= sigmoid(dr[e]).s;   /* softplus′ = σ */
        grad_put(delta->grad + r * E, ddt, NULL, 1.0f, E, acc[1]);
    }
}

/* The states' checkpoints per batch row: the state after the last step of every
 * chunk but the last. */
static int scan_checkpoints(int T) { return (T - 1) / SCAN_CHUNK; }

/* Backward of one batch row b, chunk by chunk from the last: the chunk's states and
 * decays are recomputed from the checkpoint before it into s->chunk, then its steps
 * run t = t1−1 … t0 (see above). */
static void scan_backward_row(TapeEntry *en, const ScanSaved *s, ScanDims d, int b, const int *acc) {
    const float *u = en->in[0]->data, *Bm = en->in[3]->data;
    const size_t NE = (size_t)d.N * d.E;
    const int checkpoints = scan_checkpoints(d.T);
    const float *ck = s->ck + (size_t)b * checkpoints * NE;
    float *hs = s->chunk, *as = s->chunk + SCAN_CHUNK * NE;
    memset(s->dh, 0, NE * sizeof(float));
    for (int k = checkpoints; k >= 0; k--) {
        const int t0 = k * SCAN_CHUNK, t1 = t0 + SCAN_CHUNK < d.T ? t0 + SCAN_CHUNK : d.T;
        const float *start = k ? ck + (size_t)(k - 1) * NE : NULL;   /* h_{t0−1}; NULL at t0 = 0 */
        for (int t = t0; t < t1; t++) {
            const size_t r = (size_t)b * d.T + t, i = (size_t)(t - t0) * NE;
            scan_states(hs + i, as + i, t > t0 ? hs + i - NE : start, u + r * d.E, s->dt + r * d.E, s->at,
                        Bm + r * d.N, d.E, d.N);
        }
        for (int t = t1 - 1; t >= t0; t--) {
            const size_t i = (size_t)(t - t0) * NE;
            scan_backward_step(en, s, d, (size_t)b * d.T + t, hs + i, as + i, t > t0 ? hs + i - NE : start, acc);
        }
    }
}

static void scan_backward(TapeEntry *en) {
    Tensor *A_log = en->in[2], *D = en->in[5];
    const ScanSaved *s = en->saved[0];
    const ScanDims d = scan_dims(en->in[0], en->in[1], A_log, en->in[3], en->in[4], D, s->z);
    const int E = d.E, N = d.N;
    /* Ask each grad once (first writer assigns); the rows after the first add. */
    int acc[7];
    for (int i = 0; i < 6; i++) acc[i] = en->in[i]->grad ? tape_grad_acc(en->in[i]) : 1;
    acc[6] = s->z && s->z->grad ? tape_grad_acc(s->z) : 1;
    memset(s->dat, 0, (size_t)N * E * sizeof(float));
    memset(s->dD, 0, (size_t)E * sizeof(float));
    for (int b = 0; b < d.B; b++) scan_backward_row(en, s, d, b, acc);   /* each (b, t) slice written once */
    if (A_log->grad)
        for (int e = 0; e < E; e++)
            for (int n = 0; n < N; n++) {
                size_t i = (size_t)n * E + e;
                float v = s->dat[i] * s->at[i], *dst = A_log->grad + (size_t)e * N + n;   /* dA_log = dA∘A */
                *dst = acc[2] ? *dst + v : v;
            }
    if (D->grad) grad_put(D->grad, s->dD, NULL, 1.0f, E, acc[5]);
}

Tensor *ad_selective_scan(Tape *t, Tensor *u, Tensor *delta, Tensor *A_log, Tensor *Bm, Tensor *Cm, Tensor *D,
                          Tensor *z) {
    const ScanDims d = scan_dims(u, delta, A_log, Bm, Cm, D, z);
    const int E = d.E, N = d.N;
    const long rows = (long)d.B * d.T;
    int needs_grad = tape_needs_grad(t, u, delta, A_log) || tape_needs_grad(t, Bm, Cm, D) ||
                     tape_needs_grad(t, z, NULL, NULL);
    Tensor *out = tape_tensor(t, needs_grad, 3, u->shape);
    ScanSaved s = { .z = z };
    s.dt = tape_scratch(t, (size_t)rows * E * sizeof(float));
    s.at = tape_scratch(t, (size_t)N * E * sizeof(float));
    /* One state per batch row, copied out at the chunks' ends when the backward will
     * need them. */
    const int checkpoints = scan_checkpoints(d.T);
    const size_t NE = (size_t)N * E;
    float *h = tape_scratch(t, NE * sizeof(float));
    s.ck = needs_grad ? tape_scratch(t, (size_t)d.B * checkpoints * NE * sizeof(float)) : NULL;
    s.y = z && needs_grad ? tape_scratch(t, (size_t)rows * E * sizeof(float)) : NULL;
    float *y_tmp = z && !needs_grad ? tape_scratch(t, (size_t)E * sizeof(float)) : NULL;
    scan_softplus(s.dt, delta->data, rows * E);
    scan_at(A_log->data, s.at, E, N);
    for (int b = 0; b < d.B; b++)
        for (int tt = 0; tt < d.T; tt++) {
            const size_t r = (size_t)b * d.T + tt;
            float *y = z ? (s.y ? s.y + r * E : y_tmp) : out->data + r * E;
            scan_row(h, tt ? h : NULL, u->data + r * E, s.dt + r * E, s.at, Bm->data + r * N, Cm->data + r * N,
                     D->data, y, E, N);
            scan_gate(out->data + r * E, y, z ? z->data + r * E : NULL, E);
            const int k = tt / SCAN_CHUNK;
            if (s.ck && tt % SCAN_CHUNK == SCAN_CHUNK - 1 && k < checkpoints)
                memcpy(s.ck + ((size_t)b * checkpoints + k) * NE, h, NE * sizeof(float));
        }
    if (needs_grad) {
        ScanSaved *keep = tape_scratch(t, sizeof *keep);
        *keep = s;
        keep->chunk = tape_scratch(t, (size_t)2 * SCAN_CHUNK * NE * sizeof(float));
        keep->dh = tape_scratch(t, (size_t)N * E * sizeof(float));
        keep->dat = tape_scratch(t, (size_t)N * E * sizeof(float));
        keep->row = tape_scratch(t, (size_t)6 * E * sizeof(float));
        keep->dD = tape_scratch(t, (size_t)E * sizeof(float));
        ad_record(t, (TapeEntry){ .op = OP_SELECTIVE_SCAN, .backward = scan_backward, .out = out,
                                  .in = { u, delta, A_log, Bm, Cm, D }, .saved = { keep }, .first_write = 1 });
    }
    return out;
}

void ad_selective_scan_step(float *h, const float *u, const float *delta, const float *A_log, const float *Bv,
                            const float *Cv, const float *D, const float *z, float *out, int E, int N,
                            float *work) {
    float *at = work, *dt = at + (size_t)N * E, *y = dt + E;
    scan_at(A_log, at, E, N);
    scan_softplus(dt, delta, E);
    scan_row(h, h, u, dt, at, Bv, Cv, D, y, E, N);
    scan_gate(out, y, z, E);
}
