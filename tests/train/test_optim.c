/* test_optim.c — Adam, AdamW, gradient clipping and the learning-rate schedules
 * (train/optim.h) against closed forms computed here in double.
 *
 *   - Adam on a constant gradient: m̂ = g and v̂ = g² at every step (that is what the
 *     bias correction is for), so p_t = p_0 − t·lr·g/(|g| + ε) exactly;
 *   - Adam and AdamW over five steps of hand-written gradients (signs, magnitudes
 *     from 2 down to ε, zeros): the moments as the sums
 *       m_t = (1−β₁) Σ_s β₁^(t−s) g_s,  v_t = (1−β₂) Σ_s β₂^(t−s) g_s²
 *     (not the recurrence optim.c runs), then p −= lr·(m̂/(√v̂+ε) + decoupled wd·p)
 *     with m̂ = m_t/(1−β₁ᵗ), v̂ = v_t/(1−β₂ᵗ); "adam" adds wd·p to g first (L2);
 *     decay only on the decay=1 tensor;
 *   - AdamW with zero gradients: the moments stay 0, so p_t = p_0·(1 − lr·wd)ᵗ on
 *     the decayed tensor and the other one never moves;
 *   - frozen tensors (optim_adam_step_except): values and moments untouched;
 *   - optim_grad_norm and optim_clip on a 3-4-5 gradient;
 *   - every schedule at step 0, mid-warmup, end of warmup, a quarter and half of the
 *     decay, the last step and past it.
 *
 * Tolerances are float32's, since optim.c computes in float:
 *   - schedules: within 2 ulp (2·FLT_EPSILON relative): warmup is lr·(s+1)/w, a
 *     float product and quotient, each rounded by ≤ ½ ulp; the decay is computed in
 *     double and rounded once;
 *   - parameters: 2e-6 absolute after five steps of lr = 1e-2 on |p| ≤ 1.2.  Each
 *     step rounds p (½ ulp of 1.2 ≈ 6e-8), and the update carries a relative error
 *     up to ~1e-5: 1 − β₂ᵗ from float β₂ = 0.999 loses three digits to cancellation,
 *     so powf's ½ ulp becomes ~3e-5 relative in v̂ and half that after the root;
 *     1e-5·lr = 1e-7 per step.  The worst error seen is printed (~2e-7).
 * Each bug tried in optim.c fails here by orders of magnitude more than that: no bias
 * correction, ε inside the root, L2 and decoupled decay swapped, decay on biases,
 * the raw gradient in the moments of "adam", warmup off by one step, min_lr ignored,
 * the decay ending one step early, frozen tensors updated. */
#include "attnlab/train/optim.h"
#include "check.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define K 4              /* elements of each tensor */
#define STEPS 5
#define LR 1e-2f
#define WD 0.1f
#define P_TOL 2e-6

static const double P0[K] = { 0.3, -0.7, 0.9, -1.2 };
/* The gradient of element i at step t (the same for both tensors).  Column 2 is of
 * the order of ε, where ε decides the step; column 3 is zero, where only decay moves p. */
static const float G[STEPS][K] = {
    { 0.5f, -2.0f, 1e-8f, 0 }, { 0.25f, 1.0f, 1e-8f, 0 }, { -0.75f, -1.5f, 1e-8f, 0 },
    { 1.0f, 0.5f, 1e-8f, 0 },  { 0.1f, -0.1f, 1e-8f, 0 },
};

static double worst_p;   /* the largest parameter error seen, printed at the end */

static CfgTrain adam_cfg(const char *optimizer, float wd) {
    CfgTrain c;
    memset(&c, 0, sizeof c);
    snprintf(c.optimizer, sizeof c.optimizer, "%s", optimizer);
    c.lr = LR;
    c.beta1 = 0.9f;
    c.beta2 = 0.999f;
    c.eps = 1e-8f;
    c.weight_decay = wd;
    return c;
}

/* Two tensors of K elements, "w" (decay=1) then "b" (decay=0), both at P0. */
static void store_init(ParamStore *ps) {
    int n = K;
    params_init(ps, 2);
    params_add(ps, "w", 1, &n, 1);
    params_add(ps, "b", 1, &n, 0);
    params_finalize(ps);
    for (int i = 0; i < 2 * K; i++) ps->data[i] = (float)P0[i % K];
}

static void check_p(const ParamStore *ps, const double *want, const char *what, int t) {
    for (int i = 0; i < 2 * K; i++) {
        double err = fabs(ps->data[i] - want[i]);
        if (err > worst_p) worst_p = err;
        CHECK(err <= P_TOL, "%s step %d element %d: %.9g, want %.9g", what, t, i, ps->data[i], want[i]);
    }
}

/* Adam on g = G[0] at every step: p_t = p_0 − t·lr·g/(|g| + ε), no decay. */
static void test_adam_constant_gradient(void) {
    CfgTrain c = adam_cfg("adam", 0);
    ParamStore ps;
    store_init(&ps);
    for (int t = 1; t <= STEPS; t++) {
        double want[2 * K];
        for (int i = 0; i < 2 * K; i++) {
            double g = G[0][i % K];
            ps.grad[i] = (float)g;
            want[i] = P0[i % K] - t * (double)LR * g / (fabs(g) + (double)c.eps);
        }
        optim_adam_step(&ps, &c, LR, t);
        check_p(&ps, want, "adam, constant gradient", t);
    }
    params_free(&ps);
}

/* The reference: moments as explicit sums over the effective gradients so far
 * (gs[s][i], s < t), the bias correction, and the update of both optimizers. */
static void reference_step(const CfgTrain *c, int t, double gs[][2 * K], double *p) {
    double b1 = c->beta1, b2 = c->beta2, eps = c->eps, lr = c->lr;
    int decoupled = !strcmp(c->optimizer, "adamw");
    for (int i = 0; i < 2 * K; i++) {
        double wd = i < K ? c->weight_decay : 0.0;
        gs[t - 1][i] = G[t - 1][i % K] + (decoupled ? 0.0 : wd * p[i]);
        double m = 0, v = 0;
        for (int s = 1; s <= t; s++) {
            m += (1 - b1) * pow(b1, t - s) * gs[s - 1][i];
            v += (1 - b2) * pow(b2, t - s) * gs[s - 1][i] * gs[s - 1][i];
        }
        double mhat = m / (1 - pow(b1, t)), vhat = v / (1 - pow(b2, t));
        p[i] -= lr * (mhat / (sqrt(vhat) + eps) + (decoupled ? wd * p[i] : 0.0));
    }
}

static void test_adam_against_reference(const char *optimizer) {
    CfgTrain c = adam_cfg(optimizer, WD);
    ParamStore ps;
    store_init(&ps);
    double p[2 * K], gs[STEPS][2 * K];
    for (int i = 0; i < 2 * K; i++) p[i] = P0[i % K];
    for (int t = 1; t <= STEPS; t++) {
        for (int i = 0; i < 2 * K; i++) ps.grad[i] = G[t - 1][i % K];
        optim_adam_step(&ps, &c, LR, t);
        reference_step(&c, t, gs, p);
        check_p(&ps, p, optimizer, t);
    }
    params_free(&ps);
}

/* AdamW without gradients only decays: p_t = p_0·(1 − lr·wd)ᵗ on "w"; "b" stays. */
static void test_adamw_pure_decay(void) {
    CfgTrain c = adam_cfg("adamw", WD);
    ParamStore ps;
    store_init(&ps);
    for (int t = 1; t <= STEPS; t++) {
        double want[2 * K];
        for (int i = 0; i < 2 * K; i++)
            want[i] = P0[i % K] * (i < K ? pow(1 - (double)LR * WD, t) : 1.0);
        optim_adam_step(&ps, &c, LR, t);   /* grads stay 0 from params_finalize */
        check_p(&ps, want, "adamw, zero gradient", t);
    }
    for (int i = K; i < 2 * K; i++)
        CHECK(ps.data[i] == (float)P0[i % K], "adamw decayed the no-decay tensor: element %d", i);
    params_free(&ps);
}

/* A frozen tensor keeps its values and moments, even under decay. */
static void test_frozen(void) {
    CfgTrain c = adam_cfg("adamw", WD);
    ParamStore ps;
    store_init(&ps);
    const unsigned char frozen[2] = { 1, 0 };
    for (int i = 0; i < 2 * K; i++) ps.grad[i] = G[0][i % K];
    optim_adam_step_except(&ps, &c, LR, 1, frozen);
    for (int i = 0; i < K; i++)
        CHECK(ps.data[i] == (float)P0[i] && ps.m[i] == 0 && ps.v[i] == 0,
              "frozen element %d moved: p %.9g m %g v %g", i, ps.data[i], ps.m[i], ps.v[i]);
    CHECK(ps.data[K] != (float)P0[0], "the tensor that is not frozen did not move");
    params_free(&ps);
}

/* A tensor with its own base rate (params_set_lr) steps with the schedule's ratio
 * times it: at a scheduled rate of ½·LR, "w" (the optimizer's rate) moves by
 * ½·LR·g/(|g| + ε) on Adam's first step, "b" (own rate 3·LR) by 3/2·LR·g/(|g| + ε). */
static void test_own_lr(void) {
    CfgTrain c = adam_cfg("adam", 0);
    ParamStore ps;
    store_init(&ps);
    params_set_lr(&ps, &ps.p[1].t, 3 * LR);
    double want[2 * K];
    for (int i = 0; i < 2 * K; i++) {
        double g = G[0][i % K], r = i < K ? 0.5 : 1.5;
        ps.grad[i] = (float)g;
        want[i] = P0[i % K] - r * (double)LR * g / (fabs(g) + (double)c.eps);
    }
    optim_adam_step(&ps, &c, 0.5f * LR, 1);
    check_p(&ps, want, "a tensor with its own learning rate", 1);
    params_free(&ps);
}

/* Gradients (3, 4, 0, …): norm 5; clipped to 1 they become (3, 4)/(5 + 1e-6). */
static void test_clip(void) {
    ParamStore ps;
    store_init(&ps);
    ps.grad[0] = 3;
    ps.grad[K] = 4;
    double norm = optim_grad_norm(&ps);
    CHECK_NEAR(norm, 5.0, 1e-12, "global gradient norm");
    optim_clip(&ps, norm, 10);
    CHECK(ps.grad[0] == 3 && ps.grad[K] == 4, "clip below the limit changed the gradients");
    optim_clip(&ps, norm, 1);
    double s = 1 / (5 + 1e-6);
    CHECK_NEAR(ps.grad[0], 3 * s, 2 * FLT_EPSILON, "clipped gradient 0");
    CHECK_NEAR(ps.grad[K], 4 * s, 2 * FLT_EPSILON, "clipped gradient 1");
    params_free(&ps);
}

static void check_lr(const CfgTrain *c, int step, double want, const char *what) {
    float got = optim_lr(c, step);
    CHECK(fabs(got - want) <= 2 * FLT_EPSILON * fabs(want), "%s, step %d: lr %.9g, want %.9g", what, step,
          got, want);
}

/* lr 1e-3 → min_lr 1e-4; 10 warmup steps, then 101 decay steps (10 … 110), so
 * step 35 is a quarter of the decay, 60 half of it and 110 the last step. */
static void test_schedules(void) {
    CfgTrain c = adam_cfg("adam", 0);
    c.lr = 1e-3f;
    c.steps = 111;
    int steps[] = { 0, 50, 110 };
    for (int k = 0; k < 3; k++) check_lr(&c, steps[k], c.lr, "constant");

    c.warmup_steps = 10;
    c.min_lr = 1e-4f;
    double lr = c.lr, lo = c.min_lr;
    const CfgSchedule scheds[] = { SCHED_WARMUP_LINEAR, SCHED_WARMUP_COSINE };
    const char *names[] = { "warmup_linear", "warmup_cosine" };
    for (int k = 0; k < 2; k++) {
        c.schedule = scheds[k];
        int linear = c.schedule == SCHED_WARMUP_LINEAR;
        check_lr(&c, 0, lr / 10, names[k]);         /* first step: lr·1/warmup, not 0 */
        check_lr(&c, 4, lr * 5 / 10, names[k]);     /* mid-warmup */
        check_lr(&c, 9, lr, names[k]);              /* last warmup step reaches lr */
        check_lr(&c, 10, lr, names[k]);             /* the decay starts at lr */
        /* a quarter: linear 1 − ¼, cosine ½(1 + cos(π/4)) */
        check_lr(&c, 35, lo + (lr - lo) * (linear ? 0.75 : 0.5 * (1 + sqrt(0.5))), names[k]);
        check_lr(&c, 60, lo + (lr - lo) * 0.5, names[k]);
        check_lr(&c, 110, lo, names[k]);            /* the last step is at min_lr */
        check_lr(&c, 200, lo, names[k]);            /* and it stays there */
    }
    /* decay_steps 61: the same decay compressed into steps 10 … 60, then min_lr
     * held for the rest of the 111 steps; decay_steps = train.steps is the default. */
    c.decay_steps = 61;
    check_lr(&c, 9, lr, "decay_steps 61");
    check_lr(&c, 35, lo + (lr - lo) * 0.5, "decay_steps 61");
    check_lr(&c, 60, lo, "decay_steps 61");
    check_lr(&c, 61, lo, "decay_steps 61");
    check_lr(&c, 110, lo, "decay_steps 61");
    c.decay_steps = c.steps;
    check_lr(&c, 35, lo + (lr - lo) * 0.5 * (1 + sqrt(0.5)), "decay_steps = train.steps");
    check_lr(&c, 60, lo + (lr - lo) * 0.5, "decay_steps = train.steps");
    c.decay_steps = 0;
    c.warmup_steps = 0;                              /* no warmup: step 0 at lr */
    check_lr(&c, 0, lr, "warmup_cosine without warmup");
    check_lr(&c, 110, lo, "warmup_cosine without warmup");
}

int main(void) {
    test_adam_constant_gradient();
    test_adam_against_reference("adam");
    test_adam_against_reference("adamw");
    test_adamw_pure_decay();
    test_frozen();
    test_own_lr();
    test_clip();
    test_schedules();
    printf("  parameters: worst error %.3g (tolerance %.3g)\n", worst_p, P_TOL);
    return check_exit("optim");
}
