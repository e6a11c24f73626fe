/* p002_mc.c — see p002_mc.h.
 *
 * Why explicit n × n score matrices rather than the closed forms of paper 002's attention weights: the
 * experiment checks the closed forms (tests/exp/test_p002_mc.c), so the forward pass
 * must not assume them.  Matrix products go through cblas_dgemm, which keeps the
 * n = 1000 points of the sweeps at a few milliseconds per evaluation. */
#include "attnlab/exp/p002_mc.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const mc_setting_names[MC_N_SETTINGS + 1] = {
    [MC_TOY] = "toy", [MC_SELF_ONES] = "self_ones", [MC_SELF_IDENTITY] = "self_identity",
    [MC_CROSS] = "cross", [MC_N_SETTINGS] = NULL };

static int is_self(McSetting s) { return s == MC_SELF_ONES || s == MC_SELF_IDENTITY; }

int mc_auto_m(McSetting s, int n, double delta) {
    int m = s == MC_TOY ? (int)floor(log((double)n)) : (int)floor(log((double)n / delta));
    if (is_self(s) && m < 15) m = 15;
    return m < 1 ? 1 : m;
}

double mc_auto_tau(McSetting s, int n, double c) {
    switch (s) {
    case MC_SELF_ONES: case MC_SELF_IDENTITY: return (c + 0.1) * sqrt(log((double)n));
    case MC_CROSS: return 0.9;
    default: return 0.25;
    }
}

int mc_check(const McParams *p, AlError *err) {
    if ((unsigned)p->setting >= MC_N_SETTINGS) return al_fail(err, 2, "setting: unknown (%d)", (int)p->setting);
    if (p->n < 2 || p->n > MC_MAX_N)
        return al_fail(err, 2, "n: must be in [2, %d] (tokens; the scores are n x n), got %d", MC_MAX_N, p->n);
    if (p->m < 1 || p->m > MC_MAX_M)
        return al_fail(err, 2, "m: must be in [1, %d] (readout units), got %d", MC_MAX_M, p->m);
    if (!isfinite(p->tau) || p->tau < 0) return al_fail(err, 2, "tau: must be a number >= 0, got %g", p->tau);
    if (p->setting == MC_TOY) return 0;
    int min_d = p->setting == MC_CROSS ? 2 : 3;
    if (p->d < min_d || p->d > MC_MAX_D)
        return al_fail(err, 2, "d: must be in [%d, %d] for setting %s (%s), got %d", min_d, MC_MAX_D,
                       mc_setting_names[p->setting],
                       p->setting == MC_CROSS ? "one special column and at least one identity column"
                                              : "a Type I, at least one Type II and a Type III column", p->d);
    if (!isfinite(p->a0) || p->a0 < 0) return al_fail(err, 2, "a0: must be a number >= 0, got %g", p->a0);
    if (!isfinite(p->a1) || p->a1 < 0) return al_fail(err, 2, "a1: must be a number >= 0, got %g", p->a1);
    if (!is_self(p->setting)) return 0;
    if (!isfinite(p->b) || p->b < 0) return al_fail(err, 2, "b: must be a number >= 0, got %g", p->b);
    if (!isfinite(p->c) || p->c <= 0)
        return al_fail(err, 2, "c: must be a number > 0 (the Type III column keeps every score positive, "
                       "which linear attention needs), got %g", p->c);
    return 0;
}

void mc_work_init(McWork *w, const McParams *p) {
    memset(w, 0, sizeof *w);
    int n = p->n;
    w->n = n;
    w->rows = p->setting == MC_TOY ? 1 : n;
    w->dv = p->setting == MC_TOY ? n : p->d;
    size_t rn = (size_t)w->rows * (size_t)n;
    w->S = al_malloc(rn * sizeof *w->S);
    w->W = al_malloc(rn * sizeof *w->W);
    w->C = al_malloc((size_t)w->rows * (size_t)w->dv * sizeof *w->C);
    w->Y = al_malloc((size_t)w->dv * (size_t)p->m * sizeof *w->Y);
    w->Z = al_malloc((size_t)w->rows * (size_t)p->m * sizeof *w->Z);
    if (p->setting != MC_TOY) {
        w->V = al_calloc((size_t)n * (size_t)p->d, sizeof *w->V);
        w->Q = al_calloc((size_t)n * (size_t)p->d, sizeof *w->Q);
    }
}

void mc_work_free(McWork *w) {
    free(w->S); free(w->W); free(w->C); free(w->Y); free(w->Z); free(w->V); free(w->Q);
    memset(w, 0, sizeof *w);
}

/* Toy (§2.1): the scores are sampled directly. */
static void build_toy(int n, int d1, int j3, Rng *rng, McWork *w) {
    double ln = log((double)n);
    for (int i = 0; i < n; i++) w->S[i] = ln * (1.0 + 0.4 * rng_uniform(rng));
    if (d1) w->S[j3] = 4.0 * ln;
}

/* Self-attention (§2.2/§2.3): V = A; Q = A·1_{d×d} (every entry the row sum) or A. */
static void build_self(const McParams *p, double a, int j3, McWork *w) {
    int n = p->n, d = p->d;
    double s = sqrt(log((double)n));
    memset(w->V, 0, (size_t)n * (size_t)d * sizeof *w->V);
    for (int i = 0; i < n; i++) {
        double *row = w->V + (size_t)i * d;
        row[0] = i == j3 ? a * s : 0.0;
        row[1 + i % (d - 2)] = p->b * s;
        row[d - 1] = p->c * s;
    }
    if (p->setting == MC_SELF_ONES) {
        for (int i = 0; i < n; i++) {
            const double *row = w->V + (size_t)i * d;
            double sum = 0;
            for (int k = 0; k < d; k++) sum += row[k];
            for (int k = 0; k < d; k++) w->Q[(size_t)i * d + k] = sum;
        }
    } else {
        memcpy(w->Q, w->V, (size_t)n * (size_t)d * sizeof *w->Q);
    }
}

/* Cross-attention (§2.4): Q = A1 (X = I), V = A2 = A3. */
static void build_cross(const McParams *p, double a, int j3, int j2, McWork *w) {
    int n = p->n, d = p->d;
    double ln = log((double)n);
    memset(w->V, 0, (size_t)n * (size_t)d * sizeof *w->V);
    for (int i = 0; i < n; i++) {
        double *q = w->Q + (size_t)i * d, *v = w->V + (size_t)i * d;
        q[0] = i == j2 ? a * ln : 0.0;
        for (int k = 1; k < d; k++) q[k] = ln;
        v[0] = i == j3 ? 1.0 : 0.0;
        v[1 + i % (d - 1)] = 1.0;
    }
}

void mc_build(const McParams *p, int d1, int j3, int j2, Rng *rng, McWork *w) {
    AL_ASSERT(j3 >= 0 && j3 < p->n && j2 >= 0 && j2 < p->n);
    double a = d1 ? p->a1 : p->a0;
    if (p->setting == MC_TOY) {
        build_toy(p->n, d1, j3, rng, w);
        return;
    }
    if (p->setting == MC_CROSS) build_cross(p, a, j3, j2, w);
    else build_self(p, a, j3, w);
    /* S = Q · Vᵀ (A2 = A3 in every setting, so the keys are the values). */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, p->n, p->n, p->d, 1.0, w->Q, p->d, w->V, p->d,
                0.0, w->S, p->n);
}

void mc_attend(McKernel k, McWork *w) {
    int n = w->n;
    for (int r = 0; r < w->rows; r++) {
        const double *s = w->S + (size_t)r * n;
        double *out = w->W + (size_t)r * n, sum = 0;
        if (k == MC_EXP) {
            double mx = s[0];
            for (int j = 1; j < n; j++) mx = s[j] > mx ? s[j] : mx;
            for (int j = 0; j < n; j++) sum += out[j] = exp(s[j] - mx);
        } else {
            for (int j = 0; j < n; j++) sum += out[j] = s[j];
        }
        /* mc_check guarantees positive scores; a zero row sum here is a bug. */
        AL_ASSERT(sum > 0);
        double inv = 1.0 / sum;
        for (int j = 0; j < n; j++) out[j] *= inv;
    }
    if (!w->V) {        /* toy: V = I_n */
        memcpy(w->C, w->W, (size_t)w->rows * (size_t)n * sizeof *w->C);
        return;
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, w->rows, w->dv, n, 1.0, w->W, n, w->V, w->dv,
                0.0, w->C, w->dv);
}

void mc_draw_readout(const McParams *p, Rng *rng, McWork *w) {
    size_t count = (size_t)w->dv * (size_t)p->m;
    for (size_t i = 0; i < count; i++) w->Y[i] = (rng_u64(rng) >> 63) ? 1.0 : -1.0;
}

double mc_readout(const McParams *p, McWork *w) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, w->rows, p->m, w->dv, 1.0, w->C, w->dv, w->Y, p->m,
                0.0, w->Z, p->m);
    double F = 0;
    size_t count = (size_t)w->rows * (size_t)p->m;
    for (size_t i = 0; i < count; i++)
        if (w->Z[i] > p->tau) F += w->Z[i] - p->tau;
    return F;
}

/* F of one kernel on the input currently in w. */
static double evaluate(const McParams *p, McKernel k, McWork *w) {
    mc_attend(k, w);
    return mc_readout(p, w);
}

void mc_trial(const McParams *p, Rng *rng, McWork *w, McOutcome *o) {
    int j3 = (int)rng_below(rng, (uint32_t)p->n), j2 = (int)rng_below(rng, (uint32_t)p->n);
    mc_draw_readout(p, rng, w);
    mc_build(p, 1, j3, j2, rng, w);
    o->exp_d1_pos = evaluate(p, MC_EXP, w) > 0;
    o->lin_d1_zero = evaluate(p, MC_LIN, w) == 0;
    mc_build(p, 0, j3, j2, rng, w);
    o->exp_d0_zero = evaluate(p, MC_EXP, w) == 0;
    o->lin_d0_zero = evaluate(p, MC_LIN, w) == 0;
    o->success = o->exp_d1_pos && o->lin_d1_zero && o->exp_d0_zero && o->lin_d0_zero;
}

void mc_estimate(const McParams *p, int reps, Rng *rng, McRates *r) {
    AL_ASSERT(reps > 0);
    McWork w;
    mc_work_init(&w, p);
    long count[5] = { 0 };
    for (int i = 0; i < reps; i++) {
        McOutcome o;
        mc_trial(p, rng, &w, &o);
        count[0] += o.success, count[1] += o.exp_d1_pos, count[2] += o.lin_d1_zero;
        count[3] += o.exp_d0_zero, count[4] += o.lin_d0_zero;
    }
    mc_work_free(&w);
    r->reps = reps;
    r->success = (double)count[0] / reps;
    r->exp_d1_pos = (double)count[1] / reps;
    r->lin_d1_zero = (double)count[2] / reps;
    r->exp_d0_zero = (double)count[3] / reps;
    r->lin_d0_zero = (double)count[4] / reps;
}
