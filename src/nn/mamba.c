/* mamba.c — Mamba (Gu & Dao 2023, "Mamba: Linear-Time Sequence Modeling with
 * Selective State Spaces"), paper 003's state-space baseline: n_layers residual
 * blocks between the token embedding and the head, as the reference language model
 * (MambaLMHeadModel): pre-norm blocks x += mixer(RMSNorm(x)), a final RMSNorm
 * (norm_f), then the head.  The mixer (§3.4, Figure 3; model.h has the equations):
 * in_proj → [x, z]; x → causal depthwise conv → SiLU → x_proj → [δ_low, B, C];
 * Δ = softplus(dt_proj(δ_low)); y = S6 scan (Algorithm 2) ∘ SiLU(z); out_proj.
 *
 * Ops: every projection one ad_linear (sgemm over all B·T rows), the splits ad_columns,
 * the conv ad_causal_conv1d, the scan one ad_selective_scan (softplus, D skip and
 * the SiLU(z) gate inside, as the reference's selective_scan_fn with delta_softplus
 * and z), out_proj with the residual add in its GEMM.  RMSNorm (the reference LM's
 * norm, rms_norm with eps = model.ln_eps, default 1e-5 as the reference) is
 * ad_rmsnorm.  model.dropout applies, as in the transformer, to the embeddings and
 * to each block's output before the residual add (the reference has none).
 *
 * Initialisation (mamba_init; the reference's Mamba module and MambaLMHeadModel's
 * _init_weights, whatever model.init says — it governs the embedding and head only,
 * as for the LSTM):
 *   norm, norm_f gain          1
 *   in_proj, x_proj weights    U(±1/√fan_in)            (nn.Linear's default)
 *   conv1d weight and bias     U(±1/√d_conv)            (nn.Conv1d, fan_in = d_conv)
 *   dt_proj.weight             U(±dt_rank^−½)           (dt_init "random", dt_scale 1)
 *   dt_proj.bias               softplus⁻¹(Δ₀), Δ₀ = exp(U[0,1)·(ln 0.1 − ln 0.001) + ln 0.001)
 *                              floored at 1e-4: Δ log-uniform in [dt_min, dt_max] =
 *                              [0.001, 0.1]; softplus⁻¹(Δ) = Δ + ln(−expm1(−Δ))
 *   A_log[e, n]                ln(n + 1)                (S4D-real: A = −(1, 2, …, N))
 *   D                          1
 *   out_proj.weight            U(±1/√E)/√n_layers      (nn.Linear, then the LM's
 *                              rescale_prenorm_residual: one residual branch per block)
 * The draws come from the model's init stream in declaration order. */
#include "model_internal.h"
#include "attnlab/util/error.h"

#include <math.h>
#include <string.h>

typedef struct MambaDims { int d, E, N, K, R; } MambaDims;

static MambaDims mamba_dims(const CfgModel *c) {
    MambaDims m = { c->d_model, c->mamba.expand * c->d_model, c->mamba.d_state, c->mamba.d_conv,
                    c->mamba.dt_rank ? c->mamba.dt_rank : (c->d_model + 15) / 16 };
    return m;
}

void mamba_declare(Model *m) {
    const MambaDims k = mamba_dims(&m->cfg);
    const int L = m->cfg.n_layers;
    m->mamba = al_calloc((size_t)L + 1, sizeof *m->mamba);
    for (int l = 0; l < L; l++) {
        MambaLayer *b = &m->mamba[l];
        b->norm = model_decl(m, 0, 1, (int[]){k.d}, "layers.%d.norm.weight", l);
        b->in_proj = model_decl(m, 1, 2, (int[]){2 * k.E, k.d}, "layers.%d.mixer.in_proj.weight", l);
        b->conv_w = model_decl(m, 1, 3, (int[]){k.E, 1, k.K}, "layers.%d.mixer.conv1d.weight", l);
        b->conv_b = model_decl(m, 0, 1, (int[]){k.E}, "layers.%d.mixer.conv1d.bias", l);
        b->x_proj = model_decl(m, 1, 2, (int[]){k.R + 2 * k.N, k.E}, "layers.%d.mixer.x_proj.weight", l);
        b->dt_w = model_decl(m, 1, 2, (int[]){k.E, k.R}, "layers.%d.mixer.dt_proj.weight", l);
        b->dt_b = model_decl(m, 0, 1, (int[]){k.E}, "layers.%d.mixer.dt_proj.bias", l);
        /* A_log and D: no weight decay (the reference's _no_weight_decay) */
        b->A_log = model_decl(m, 0, 2, (int[]){k.E, k.N}, "layers.%d.mixer.A_log", l);
        b->D = model_decl(m, 0, 1, (int[]){k.E}, "layers.%d.mixer.D", l);
        b->out_proj = model_decl(m, 1, 2, (int[]){k.d, k.E}, "layers.%d.mixer.out_proj.weight", l);
    }
    m->mamba[L].norm = model_decl(m, 0, 1, (int[]){k.d}, "norm_f.weight", 0);
}

static void fill(Tensor *x, float v) {
    for (long i = 0; i < x->n; i++) x->data[i] = v;
}

void mamba_init(Model *m, Rng *r) {
    const MambaDims k = mamba_dims(&m->cfg);
    const int L = m->cfg.n_layers;
    const double dt_min = 0.001, dt_max = 0.1, dt_floor = 1e-4;
    for (int l = 0; l < L; l++) {
        MambaLayer *b = &m->mamba[l];
        fill(b->norm, 1.0f);
        model_fill_uniform(b->in_proj, r, 1.0 / sqrt(k.d));
        model_fill_uniform(b->conv_w, r, 1.0 / sqrt(k.K));
        model_fill_uniform(b->conv_b, r, 1.0 / sqrt(k.K));
        model_fill_uniform(b->x_proj, r, 1.0 / sqrt(k.E));
        model_fill_uniform(b->dt_w, r, 1.0 / sqrt(k.R));
        for (int e = 0; e < k.E; e++) {
            double dt = exp(rng_uniform(r) * (log(dt_max) - log(dt_min)) + log(dt_min));
            dt = fmax(dt, dt_floor);
            b->dt_b->data[e] = (float)(dt + log(-expm1(-dt)));
        }
        for (int e = 0; e < k.E; e++)
            for (int n = 0; n < k.N; n++) b->A_log->data[(size_t)e * k.N + n] = (float)log(n + 1.0);
        fill(b->D, 1.0f);
        model_fill_uniform(b->out_proj, r, 1.0 / sqrt(k.E) / sqrt(L));
    }
    fill(m->mamba[L].norm, 1.0f);
}

/* One block's mixer on h = RMSNorm(x) (B, T, d) → y (B, T, E), before out_proj. */
static Tensor *mixer(const Model *m, Tape *t, const MambaLayer *b, Tensor *h) {
    const MambaDims k = mamba_dims(&m->cfg);
    Tensor *xz = ad_linear(t, h, b->in_proj, NULL);
    Tensor *x = ad_columns(t, xz, 0, k.E), *z = ad_columns(t, xz, k.E, k.E);
    x = ad_silu(t, ad_causal_conv1d(t, x, b->conv_w, b->conv_b));
    Tensor *x_dbl = ad_linear(t, x, b->x_proj, NULL);
    Tensor *dt = ad_columns(t, x_dbl, 0, k.R);
    Tensor *Bm = ad_columns(t, x_dbl, k.R, k.N), *Cm = ad_columns(t, x_dbl, k.R + k.N, k.N);
    Tensor *delta = ad_linear(t, dt, b->dt_w, b->dt_b);
    return ad_selective_scan(t, x, delta, b->A_log, Bm, Cm, b->D, z);
}

/* x += dropout(out_proj(y)); without dropout the add happens in out_proj's GEMM. */
static Tensor *residual(const Model *m, Tape *t, const MambaLayer *b, Tensor *y, Tensor *x) {
    if (m->cfg.dropout > 0 && t->training) return ad_add(t, x, model_dropout(m, t, ad_linear(t, y, b->out_proj, NULL), m->cfg.dropout));
    return ad_linear_residual(t, y, b->out_proj, NULL, x);
}

Tensor *mamba_forward(Model *m, Tape *t, Tensor *x) {
    const int L = m->cfg.n_layers;
    for (int l = 0; l < L; l++) {
        const MambaLayer *b = &m->mamba[l];
        Tensor *y = mixer(m, t, b, ad_rmsnorm(t, x, b->norm, m->cfg.ln_eps));
        if (l == L - 1) y = model_keep(m, t, y), x = model_keep(m, t, x);   /* the scan was the last mixing */
        x = residual(m, t, b, y, x);
    }
    return ad_rmsnorm(t, x, m->mamba[L].norm, m->cfg.ln_eps);
}

/* Per layer: the four projections (2·T·in·out each), the conv (2·T·E·K) and the scan
 * at 6·T·E·N: two multiply-adds per state element for h_t = exp(ΔA)∘h_{t−1} + (Δu)·B
 * and one for C·h (the exponential, softplus, D skip and gate count as free, as the
 * activations do). */
double mamba_flops_per_seq(const Model *m, int T) {
    const MambaDims k = mamba_dims(&m->cfg);
    double d = k.d, E = k.E, N = k.N, R = k.R;
    double proj = d * 2 * E + E * (R + 2 * N) + R * E + E * d;
    return m->cfg.n_layers * (2.0 * T * proj + 2.0 * T * E * k.K + 6.0 * T * E * N);
}

double mamba_param_count(const CfgModel *c, int max_len) {
    (void)max_len;
    const MambaDims k = mamba_dims(c);
    double d = k.d, E = k.E, N = k.N, R = k.R;
    double layer = d /* norm */ + 2 * E * d + E * k.K + E /* conv */ + (R + 2 * N) * E + E * R + E /* dt_proj */ +
                   E * N + E /* A_log, D */ + d * E;
    return c->n_layers * layer + d /* norm_f */;
}

/* Floats kept per (b, t) and layer, values and gradients: the norm (2d), in_proj's
 * output and its two column slices (8E), the conv and its SiLU with the derivative
 * (5E), x_proj's output and its three slices (4(R + 2N)), Δ's projection (2E), the
 * scan's output with its grad, Δ, y before the gate and the states' checkpoints
 * (4E + N·E / AD_SCAN_CHUNK), and the block's output (2d). */
double mamba_activation_floats(const CfgModel *c) {
    const MambaDims k = mamba_dims(c);
    return 4.0 * k.d + 19.0 * k.E + (double)k.N * k.E / AD_SCAN_CHUNK + 4.0 * (k.R + 2 * k.N);
}

/* Decoding state per layer and sequence: the conv window (the K − 1 previous inputs
 * of the conv, oldest first), then the scan's state h (N, E). */
size_t mamba_state_floats(const Model *m) {
    const MambaDims k = mamba_dims(&m->cfg);
    return (size_t)(k.K - 1) * k.E + (size_t)k.N * k.E;
}

/* One position per layer on x (B, 1, d): training's ops for the per-position parts
 * (norms, projections, SiLU), the conv and scan by their one-step kernels over the
 * state, so the logits are the forward's. */
Tensor *mamba_step(Model *m, Tape *t, Tensor *x, float *state, int batch) {
    const MambaDims k = mamba_dims(&m->cfg);
    const int B = x->shape[0], L = m->cfg.n_layers;
    const size_t S = mamba_state_floats(m);
    float *work = tape_scratch(t, ((size_t)k.N * k.E + 2 * k.E + (size_t)k.K * k.E) * sizeof(float));
    for (int l = 0; l < L; l++) {
        const MambaLayer *b = &m->mamba[l];
        Tensor *xz = ad_linear(t, ad_rmsnorm(t, x, b->norm, m->cfg.ln_eps), b->in_proj, NULL);
        Tensor *conv = tape_tensor(t, 0, 3, (int[]){B, 1, k.E});
        for (int r = 0; r < B; r++)
            ad_causal_conv1d_step(state + ((size_t)l * batch + r) * S, xz->data + (size_t)r * 2 * k.E,
                                  b->conv_w->data, b->conv_b->data, conv->data + (size_t)r * k.E, k.E, k.K, work);
        Tensor *u = ad_silu(t, conv);
        Tensor *x_dbl = ad_linear(t, u, b->x_proj, NULL);
        Tensor *delta = ad_linear(t, ad_columns(t, x_dbl, 0, k.R), b->dt_w, b->dt_b);
        Tensor *y = tape_tensor(t, 0, 3, (int[]){B, 1, k.E});
        const int W = k.R + 2 * k.N;
        for (int r = 0; r < B; r++) {
            float *h = state + ((size_t)l * batch + r) * S + (size_t)(k.K - 1) * k.E;
            const float *xd = x_dbl->data + (size_t)r * W;
            ad_selective_scan_step(h, u->data + (size_t)r * k.E, delta->data + (size_t)r * k.E, b->A_log->data,
                                   xd + k.R, xd + k.R + k.N, b->D->data, xz->data + (size_t)r * 2 * k.E + k.E,
                                   y->data + (size_t)r * k.E, k.E, k.N, work);
        }
        x = ad_linear_residual(t, y, b->out_proj, NULL, x);
    }
    return ad_rmsnorm(t, x, m->mamba[L].norm, m->cfg.ln_eps);
}
