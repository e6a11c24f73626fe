/* dss.c — DSS, paper 003's diagonal state-space baseline (Gupta, Gu & Berant 2022,
 * "Diagonal State Spaces are as Effective as Structured State Spaces"; its code's
 * standalone DSS layer, version "softmax"; docs/design.md decision 10).
 *
 * n_layers pre-norm residual blocks between the token embedding and the head:
 *   h = LN(x);  y = K * h + D ⊙ h  (per channel, causal);  x += W_o·dropout(GELU(y)) + b_o
 * with C = model.dss.channels kernels per feature (the reference's `channels`): K and D
 * have C·d columns, y (B, T, C·d) holds each feature's C convolutions (column k·d + h:
 * feature h's k-th, the reference's '(c h)' order) and W_o is (d, C·d);
 * or, with model.dss.postact glu (the reference's `postact` option), W_o (2d, C·d) and
 *   x += GLU(W_o·dropout(GELU(y)) + b_o),  GLU(a | b) = a·σ(b)
 * and, when model.dss.ff = k > 0, after each of them the reference code's feed-forward
 * layer (its layer list [dss, ff], configs/model/layer/s4ff.yaml; expand 4 there):
 *   x += dropout(fc2(GELU(fc1(LN(x)))))            fc1 (k·d, d), fc2 (d, k·d)
 * then LN_f.  K (T, C·d) is the DSS-softmax kernel of the block's Λ (N modes, shared by
 * the d channels), log Δ (d, 2) and W (C, d, N complex) — ad_dss_kernel, normalised over
 * the model's longest sequence (max_len), so the kernel of a shorter input is a prefix
 * of it and the block is causal.  The same block decodes as a recurrence over a
 * diagonal complex state (dss_step).
 *
 * Init (the reference code's DSSKernel.init and DSS.__init__):
 *   Λ_n    = −1/2 + i·ω_n, ω the skew-HiPPO eigenvalues (dss_skew_hippo), every layer
 *   log_dt U(log dt_min, log dt_max) per channel, the same for Re and Im
 *   W      N(0, 1) real and imaginary parts;  D  N(0, 1)
 *   output_linear as any Linear (model_init_linear), LayerNorms 1 and 0.
 * Λ, log Δ and W are not weight-decayed (the reference: wd 0.0); D and the output
 * weight are. */
#include "model_internal.h"
#include "attnlab/util/error.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void dss_declare(Model *m) {
    int d = m->cfg.d_model, N = m->cfg.dss.d_state, C = m->cfg.dss.channels;
    m->dss = al_calloc((size_t)m->cfg.n_layers, sizeof *m->dss);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        DssLayer *L = &m->dss[l];
        model_decl_norm(m, &L->norm, "layers.%d.norm", l);
        L->D = model_decl(m, 1, 2, (int[]){C, d}, "layers.%d.layer.D", l);
        L->log_dt = model_decl(m, 0, 2, (int[]){d, 2}, "layers.%d.layer.kernel.log_dt", l);
        L->lambda = model_decl(m, 0, 2, (int[]){N, 2}, "layers.%d.layer.kernel.Lambda", l);
        L->w = model_decl(m, 0, 4, (int[]){C, d, N, 2}, "layers.%d.layer.kernel.W", l);
        if (m->cfg.dss.lr > 0) {   /* the kernel's own parameter group (model.dss.lr) */
            params_set_lr(&m->params, L->log_dt, m->cfg.dss.lr);
            params_set_lr(&m->params, L->lambda, m->cfg.dss.lr);
            params_set_lr(&m->params, L->w, m->cfg.dss.lr);
        }
        int out = m->cfg.dss.postact == DSS_POSTACT_GLU ? 2 * d : d;
        model_decl_linear(m, &L->out, out, C * d, "layers.%d.layer.output_linear", l);
        if (m->cfg.dss.ff) {
            model_decl_norm(m, &L->ff_norm, "layers.%d.ff.norm", l);
            model_decl_linear(m, &L->fc1, m->cfg.dss.ff * d, d, "layers.%d.ff.fc1", l);
            model_decl_linear(m, &L->fc2, d, m->cfg.dss.ff * d, "layers.%d.ff.fc2", l);
        }
    }
    model_decl_norm(m, &m->ln_f, "norm", 0);
}

/* Householder reduction of the symmetric A (M × M, row-major; its lower triangle is
 * read and destroyed) to a tridiagonal matrix with the same eigenvalues: diagonal dg,
 * sub-diagonal e (e[i] couples i and i + 1, e[M − 1] = 0).  Row i (from the last) is
 * reflected onto its sub-diagonal entry, and the leading block updated with the
 * symmetric rank-2 correction; O(M³) with a small constant (Golub & Van Loan §8.3.1). */
static void householder_tridiagonal(double *A, int M, double *dg, double *e) {
    double *p = al_malloc((size_t)M * sizeof(double));
    for (int i = M - 1; i > 0; i--) {
        int l = i - 1;
        double *ai = A + (size_t)i * M, scale = 0, h = 0;
        for (int k = 0; k <= l; k++) scale += fabs(ai[k]);
        if (l == 0 || scale == 0) {
            e[l] = ai[l];
            continue;
        }
        for (int k = 0; k <= l; k++) ai[k] /= scale, h += ai[k] * ai[k];
        double f = ai[l], g = f >= 0 ? -sqrt(h) : sqrt(h);
        e[l] = scale * g;
        h -= f * g;                    /* the reflector is I − u·uᵀ/h, u = ai[0..l] */
        ai[l] = f - g;
        f = 0;
        for (int j = 0; j <= l; j++) {   /* p = A·u / h over the leading block */
            g = 0;
            for (int k = 0; k <= j; k++) g += A[(size_t)j * M + k] * ai[k];
            for (int k = j + 1; k <= l; k++) g += A[(size_t)k * M + j] * ai[k];
            p[j] = g / h;
            f += p[j] * ai[j];
        }
        double hh = f / (h + h);
        for (int j = 0; j <= l; j++) {   /* A ← A − u·qᵀ − q·uᵀ, q = p − hh·u */
            f = ai[j];
            p[j] = g = p[j] - hh * f;
            for (int k = 0; k <= j; k++) A[(size_t)j * M + k] -= f * p[k] + g * ai[k];
        }
    }
    for (int i = 0; i < M; i++) dg[i] = A[(size_t)i * M + i];
    e[M - 1] = 0;
    free(p);
}

/* Eigenvalues of the symmetric tridiagonal (dg, e) into dg, in no particular order:
 * implicit QL with Wilkinson shifts, each off-diagonal deflated at rounding
 * (Golub & Van Loan §8.3.3, in its QL form). */
static void tridiagonal_eigenvalues(double *dg, double *e, int M) {
    for (int l = 0; l < M; l++)
        for (int iter = 0;; iter++) {
            int m = l;
            while (m < M - 1 && fabs(e[m]) > DBL_EPSILON * (fabs(dg[m]) + fabs(dg[m + 1]))) m++;
            if (m == l) break;
            AL_ASSERT(iter < 64);
            double g = (dg[l + 1] - dg[l]) / (2 * e[l]), r = hypot(g, 1.0);
            g = dg[m] - dg[l] + e[l] / (g + copysign(r, g));
            double s = 1, c = 1, p = 0;
            int i;
            for (i = m - 1; i >= l; i--) {
                double f = s * e[i], b = c * e[i];
                e[i + 1] = r = hypot(f, g);
                if (r == 0) {            /* an exact zero split the matrix: start over */
                    dg[i + 1] -= p;
                    e[m] = 0;
                    break;
                }
                s = f / r, c = g / r;
                g = dg[i + 1] - p;
                r = (dg[i] - g) * s + 2 * c * b;
                p = s * r;
                dg[i + 1] = g + p;
                g = c * r - b;
            }
            if (r == 0 && i >= l) continue;
            dg[l] -= p, e[l] = g, e[m] = 0;
        }
}

static int cmp_desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* The skew-HiPPO eigenvalues DSS starts from (the reference's hippo_skew_evals(2N)
 * [:N]): the N largest imaginary parts ω_0 ≥ … ≥ ω_{N−1} > 0 of the eigenvalues ±iω
 * of S = (H − Hᵀ)/2, H the 2N×2N HiPPO-LegS lower triangle H_ij = √((2i+1)(2j+1))
 * (i > j).  They are the square roots of the eigenvalues of the symmetric SᵀS = −S²,
 * each twice: Householder + QL on SᵀS, then one ω per pair. */
static void dss_skew_hippo(int N, double *omega) {
    int M = 2 * N;
    double *S = al_malloc((size_t)M * M * sizeof(double)), *A = al_calloc((size_t)M * M, sizeof(double));
    double *ev = al_malloc((size_t)M * sizeof(double)), *e = al_malloc((size_t)M * sizeof(double));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < M; j++) {
            double h = sqrt((2.0 * i + 1) * (2.0 * j + 1)) / 2;
            S[i * M + j] = i > j ? h : i < j ? -h : 0;
        }
    for (int i = 0; i < M; i++)   /* SᵀS, its lower triangle: all the reduction reads */
        for (int k = 0; k < M; k++)
            for (int j = 0; j <= i; j++) A[i * M + j] += S[k * M + i] * S[k * M + j];
    householder_tridiagonal(A, M, ev, e);
    tridiagonal_eigenvalues(ev, e, M);
    qsort(ev, (size_t)M, sizeof *ev, cmp_desc);
    for (int n = 0; n < N; n++) omega[n] = sqrt(fmax(0.5 * (ev[2 * n] + ev[2 * n + 1]), 0.0));
    free(S);
    free(A);
    free(ev);
    free(e);
}

void dss_init(Model *m, Rng *r) {
    int d = m->cfg.d_model, N = m->cfg.dss.d_state;
    double *omega = al_malloc((size_t)N * sizeof(double));
    dss_skew_hippo(N, omega);
    double lo = log(m->cfg.dss.dt_min), hi = log(m->cfg.dss.dt_max);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        DssLayer *L = &m->dss[l];
        model_init_norm(&L->norm);
        model_fill_normal(L->D, r, 1.0);
        for (int c = 0; c < d; c++)
            L->log_dt->data[2 * c] = L->log_dt->data[2 * c + 1] = (float)(lo + rng_uniform(r) * (hi - lo));
        for (int n = 0; n < N; n++) {
            L->lambda->data[2 * n] = m->cfg.dss.lambda_re;
            L->lambda->data[2 * n + 1] = (float)omega[n];
        }
        model_fill_normal(L->w, r, 1.0);
        model_init_linear(m, &L->out, r, 1);
        if (m->cfg.dss.ff) {
            model_init_norm(&L->ff_norm);
            model_init_linear(m, &L->fc1, r, 0);
            model_init_linear(m, &L->fc2, r, 1);
        }
    }
    model_init_norm(&m->ln_f);
    free(omega);
}

static Tensor *ff(const Model *m, Tape *t, const BlockMixer *mix, int layer, Tensor *h, Tensor *res) {
    (void)mix;
    const DssLayer *L = &m->dss[layer];
    return ad_mlp(t, h, L->fc1.w, L->fc1.b, L->fc2.w, L->fc2.b, res, GELU_ERF);   /* nn.GELU(): erf */
}

/* x + dropout(fc2(GELU(fc1(LN(x))))) when model.dss.ff > 0 (the transformer's
 * model_residual; GELU erf, as the reference's FF layer); x otherwise. */
static Tensor *ff_block(const Model *m, Tape *t, int layer, Tensor *x) {
    return m->cfg.dss.ff ? model_residual(m, t, NULL, layer, x, &m->dss[layer].ff_norm, ff) : x;
}

/* x + postact(output_linear(y)): the layer's output added to the residual stream. */
static Tensor *dss_output(const Model *m, Tape *t, const DssLayer *L, Tensor *y, Tensor *x) {
    if (m->cfg.dss.postact == DSS_POSTACT_NONE) return ad_linear_residual(t, y, L->out.w, L->out.b, x);
    return ad_add(t, x, ad_glu(t, ad_linear(t, y, L->out.w, L->out.b)));
}

Tensor *dss_forward(Model *m, Tape *t, Tensor *x) {
    int T = x->shape[1];
    for (int l = 0; l < m->cfg.n_layers; l++) {
        DssLayer *L = &m->dss[l];
        Tensor *h = ad_layernorm(t, x, L->norm.g, L->norm.b, m->cfg.ln_eps);
        Tensor *k;
        if (m->groups_T) {   /* length groups: one kernel, of the batch's length, for all (model_groups_begin) */
            if (!L->k_shared) L->k_shared = ad_dss_kernel(t, L->lambda, L->log_dt, L->w, m->groups_T, m->max_len);
            k = L->k_shared;
        } else
            k = ad_dss_kernel(t, L->lambda, L->log_dt, L->w, T, m->max_len);
        Tensor *y = ad_gelu(t, ad_causal_conv(t, h, k, L->D), GELU_ERF);   /* torch nn.GELU(): erf */
        y = ad_dropout(t, y, m->cfg.dropout);
        if (l == m->cfg.n_layers - 1) y = model_keep(m, t, y), x = model_keep(m, t, x);   /* the conv was the last mixing */
        x = ff_block(m, t, l, dss_output(m, t, L, y, x));
    }
    return ad_layernorm(t, x, m->ln_f.g, m->ln_f.b, m->cfg.ln_eps);
}

double dss_flops_per_seq(const Model *m, int T) {
    double d = m->cfg.d_model, C = m->cfg.dss.channels, ff = 4.0 * T * d * d * m->cfg.dss.ff;   /* fc1 and fc2 */
    double out = m->cfg.dss.postact == DSS_POSTACT_GLU ? 2 : 1;          /* output_linear's rows / d */
    return m->cfg.n_layers * (2.0 * out * T * d * C * d + (double)T * (T + 1) * C * d + ff);
}

double dss_param_count(const CfgModel *c, int max_len) {
    (void)max_len;
    double d = c->d_model, N = c->dss.d_state, C = c->dss.channels;
    double h = (double)c->dss.ff * d;
    double out = c->dss.postact == DSS_POSTACT_GLU ? 2 * d : d;
    /* norm 2d, D C·d, log_dt 2d, Λ 2N, W 2C·dN, output_linear out·C·d + out (out = d,
     * or 2d with the GLU); final norm 2d; the feed-forward block's norm 2d, fc1 h·d + h,
     * fc2 d·h + d */
    double ff = c->dss.ff ? 2 * h * d + h + 3 * d : 0;
    return c->n_layers * (out * C * d + out + (4 + C) * d + 2 * N + 2 * C * d * N + ff) + 2 * d;
}

/* Per (b, t) and layer: LN (value, grad, mean/rstd) and output: about 4 floats per
 * channel; conv, GELU (+ derivative), dropout mask: about 8 per channel and kernel
 * (C per channel); the GLU's 2d-wide projection
 * (value, grad), its derivative and its output (value, grad): 10 more; the
 * feed-forward block's LN, hidden pre- and post-GELU and output: about 6 more per
 * channel and 4 per hidden unit. */
double dss_activation_floats(const CfgModel *c) {
    double glu = c->dss.postact == DSS_POSTACT_GLU ? 10.0 : 0;
    return (4.0 + 8.0 * c->dss.channels + glu + (c->dss.ff ? 6.0 + 4.0 * c->dss.ff : 0)) * c->d_model;
}

/* Decoding state per layer and sequence: x (d, N) complex doubles (re, im) — double
 * because a mode with Re Λ > 0 grows like e^{Δ·Re Λ·t} before its folded C (ad_dss_modes)
 * shrinks it back; the decoder's float buffer holds them (S a multiple of 4 floats, so
 * every row's state is 16-byte aligned). */
size_t dss_state_floats(const Model *m) { return 4 * (size_t)m->cfg.d_model * m->cfg.dss.d_state; }

/* One position through every block, x (B, 1, d): the convolution as the recurrence
 * x_t = z·x_{t−1} + u_t, y_t = Re Σ_n C·x_t + D·u_t (ops.h, ad_dss_modes), one state
 * per feature, read by its K columns k·d + h through their own C and D. */
Tensor *dss_step(Model *m, Tape *t, Tensor *x, float *state, int batch) {
    int B = x->shape[0], d = m->cfg.d_model, N = m->cfg.dss.d_state, K = m->cfg.dss.channels;
    size_t S = dss_state_floats(m);
    double *z = tape_scratch(t, (size_t)2 * K * d * N * sizeof(double));
    double *C = tape_scratch(t, (size_t)2 * K * d * N * sizeof(double));
    for (int l = 0; l < m->cfg.n_layers; l++) {
        DssLayer *L = &m->dss[l];
        Tensor *h = ad_layernorm(t, x, L->norm.g, L->norm.b, m->cfg.ln_eps);
        ad_dss_modes(L->lambda, L->log_dt, L->w, m->max_len, z, C);
        Tensor *y = tape_tensor(t, 0, 3, (int[]){B, 1, K * d});
        for (int b = 0; b < B; b++) {
            double *xs = (double *)(void *)(state + ((size_t)l * batch + b) * S);
            for (int c = 0; c < d; c++) {
                double u = h->data[(size_t)b * d + c];
                for (int n = 0; n < N; n++) {
                    size_t i = 2 * ((size_t)c * N + n);
                    double xr = z[i] * xs[i] - z[i + 1] * xs[i + 1] + u;
                    xs[i + 1] = z[i] * xs[i + 1] + z[i + 1] * xs[i];
                    xs[i] = xr;
                }
                for (int k = 0; k < K; k++) {   /* column k·d + c: z the same, C its own */
                    size_t col = (size_t)k * d + c;
                    double acc = 0;
                    for (int n = 0; n < N; n++) {
                        size_t i = 2 * ((size_t)c * N + n), j = 2 * (col * N + n);
                        acc += C[j] * xs[i] - C[j + 1] * xs[i + 1];
                    }
                    y->data[(size_t)b * K * d + col] = (float)(acc + (double)L->D->data[col] * u);
                }
            }
        }
        x = ff_block(m, t, l, dss_output(m, t, L, ad_gelu(t, y, GELU_ERF), x));
    }
    return ad_layernorm(t, x, m->ln_f.g, m->ln_f.b, m->cfg.ln_eps);
}
