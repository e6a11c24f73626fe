/* p002_mc.h — the forward Monte-Carlo experiments of paper 002 (Deng, Song, Zhou
 * 2023, "Superiority of Softmax: Unveiling the Performance Edge Over Linear
 * Attention"; docs/design.md; reference table in results/paper002/README.md).  Nothing is trained: the networks are fixed
 * by hand and only the random ±1 readout varies.
 *
 * The network (paper 002's fixed network F).  With scores S (rows × n), values V (n × dv) and a
 * readout y ∈ {±1}^{dv × m}:
 *
 *     W = rownorm(κ(S))      κ = exp (softmax, row max subtracted) or identity ("linear")
 *     C = W · V              the attention output, rows × dv
 *     F = Σ_rows Σ_l max(<C_row, y_l> − τ, 0)      (the outer ReLU of the paper is a no-op)
 *
 * and the decision is F > 0 ⇒ "D1", F = 0 ⇒ "D0".  "Linear" is the paper's exp →
 * identity replacement, W = diag(S·1)^{-1} S: every score here is > 0, so it is
 * well defined (mc_check enforces what that needs).
 *
 * The inputs (paper 002's datasets D0/D1; s = sqrt(ln n), natural log):
 *  - MC_TOY (§2.1, Fig. 3): one query; its scores are u_i ~ U[ln n, 1.4 ln n],
 *    and D1 sets u_{j3} = 4 ln n.  V = I_n, so y is n × m.
 *  - MC_SELF_ONES / MC_SELF_IDENTITY (§2.2 / §2.3, Figs. 5 / 4): A1 = A2 = A3 = A
 *    (n × d), row i = s · (a·[i = j3], b·e_{k(i)}, c) with k(i) = i mod (d − 2): one
 *    Type I column, d − 2 Type II columns (stacked identities, truncated when d − 2
 *    does not divide n), one Type III column.  a = a0 for D0, a1 for D1.
 *    S = A X Aᵀ with X = QKᵀ = 1_{d×d} (ONES) or I_d (IDENTITY); V = A.
 *  - MC_CROSS (§2.4, Fig. 7): A1 row i = ln n · (a·[i = j2], 1, …, 1); A2 = A3 row i
 *    = ([i = j3], e_{k(i)}) with k(i) = i mod (d − 1).  S = A1 A2ᵀ; V = A2.
 *
 * The success event (paper 002's) of one repetition: draw j3 (and j2) uniformly and
 * one y, shared by the four evaluations; then
 *     F_exp(D1) > 0  ∧  F_lin(D1) = 0  ∧  F_exp(D0) = 0  ∧  F_lin(D0) = 0.
 * D0 and D1 of a repetition use the same j3/j2 (only a differs; the toy draws its
 * u's separately for each).  Everything is double precision. */
#ifndef ATTNLAB_EXP_P002_MC_H
#define ATTNLAB_EXP_P002_MC_H

#include "attnlab/util/error.h"
#include "attnlab/util/rng.h"

typedef enum { MC_TOY, MC_SELF_ONES, MC_SELF_IDENTITY, MC_CROSS, MC_N_SETTINGS } McSetting;
typedef enum { MC_EXP, MC_LIN } McKernel;

#define MC_MAX_N 4096      /* S is n × n doubles: 128 MiB at this size */
#define MC_MAX_D 1024
#define MC_MAX_M 1000

typedef struct McParams {
    McSetting setting;
    int n;                 /* tokens (toy: entries of u) */
    int d;                 /* width of a token (not toy) */
    int m;                 /* readout units */
    double a0, a1;         /* self, cross: the special entry of D0 and D1 */
    double b, c;           /* self: Type II and Type III magnitudes */
    double tau;            /* readout threshold */
} McParams;

/* Scores, values and scratch of one input, sized for one McParams. */
typedef struct McWork {
    int rows, n, dv;       /* query rows, keys, value width */
    double *S;             /* rows × n scores */
    double *V;             /* n × dv values; NULL for the toy (V = I_n) */
    double *Q;             /* n × d: A1 · X (self, cross) */
    double *W;             /* rows × n attention weights (after mc_attend) */
    double *C;             /* rows × dv attention output (after mc_attend) */
    double *Y;             /* dv × m readout signs, row-major */
    double *Z;             /* rows × m readout pre-activations */
} McWork;

typedef struct McOutcome { int exp_d1_pos, lin_d1_zero, exp_d0_zero, lin_d0_zero, success; } McOutcome;
typedef struct McRates {
    int reps;
    double success, exp_d1_pos, lin_d1_zero, exp_d0_zero, lin_d0_zero;   /* fractions of reps */
} McRates;

extern const char *const mc_setting_names[MC_N_SETTINGS + 1];   /* "toy", "self_ones", ... NULL */

/* The paper's rules where the config says "auto" (paper 002's):
 * m: toy floor(ln n); self max(floor(ln(n/δ)), 15); cross floor(ln(n/δ)); at least 1.
 * τ: self (c + 0.1)·sqrt(ln n); cross 0.9; toy 0.25 (unstated in the paper; the
 * note's choice). */
int    mc_auto_m(McSetting s, int n, double delta);
double mc_auto_tau(McSetting s, int n, double c);

/* Returns 0, or 2 with err naming the parameter ("d: ...") when the construction
 * is undefined: sizes out of range, d too small for the setting's columns, a
 * negative magnitude, or c ≤ 0 (self: Type III keeps every score > 0, which the
 * linear kernel needs). */
int  mc_check(const McParams *p, AlError *err);

void mc_work_init(McWork *w, const McParams *p);
void mc_work_free(McWork *w);

/* Builds the scores and values of D1 (d1 = 1) or D0 (d1 = 0) with special token j3
 * (toy, self, cross) and special query j2 (cross only), both in [0, n).  The toy
 * draws its u from rng; the other settings are deterministic. */
void mc_build(const McParams *p, int d1, int j3, int j2, Rng *rng, McWork *w);
/* W = rownorm(κ(S)) and C = W · V. */
void mc_attend(McKernel k, McWork *w);
/* y ~ Rademacher, dv × m. */
void mc_draw_readout(const McParams *p, Rng *rng, McWork *w);
/* F of the current C and Y. */
double mc_readout(const McParams *p, McWork *w);

/* One repetition of the success event. */
void mc_trial(const McParams *p, Rng *rng, McWork *w, McOutcome *o);
/* reps repetitions; rates are fractions of reps. */
void mc_estimate(const McParams *p, int reps, Rng *rng, McRates *r);

#endif
