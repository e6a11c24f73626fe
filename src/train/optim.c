/* optim.c — see optim.h.  The Adam update is one pass per parameter tensor over the
 * flat block: value, grad and both moments sit at the same offset of four arrays. */
#include "attnlab/train/optim.h"

#include <math.h>
#include <string.h>

#define PI 3.14159265358979323846

float optim_lr(const CfgTrain *cfg, int step) {
    if (cfg->schedule == SCHED_CONSTANT) return cfg->lr;
    if (step < cfg->warmup_steps) return cfg->lr * (float)(step + 1) / (float)cfg->warmup_steps;
    int span = (cfg->decay_steps > 0 ? cfg->decay_steps : cfg->steps) - cfg->warmup_steps;
    double progress = span > 1 ? (double)(step - cfg->warmup_steps) / (span - 1) : 1.0;
    if (progress > 1) progress = 1;
    double shape = cfg->schedule == SCHED_WARMUP_LINEAR ? 1.0 - progress
                                                        : 0.5 * (1.0 + cos(PI * progress));
    return (float)(cfg->min_lr + (cfg->lr - cfg->min_lr) * shape);
}

double optim_grad_norm(const ParamStore *ps) {
    /* Eight independent double lanes, which gcc vectorises (one running sum it may
     * not reorder); a fixed order, so the result is reproducible. */
    double acc[8] = { 0 }, s = 0;
    const float *g = ps->grad;
    long i = 0;
    for (; i + 8 <= ps->total; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += (double)g[i + j] * g[i + j];
    for (; i < ps->total; i++) s += (double)g[i] * g[i];
    for (int j = 0; j < 8; j++) s += acc[j];
    return sqrt(s);
}

void optim_clip(ParamStore *ps, double norm, double max_norm) {
    if (max_norm <= 0 || norm <= max_norm) return;
    float s = (float)(max_norm / (norm + 1e-6));
    for (long i = 0; i < ps->total; i++) ps->grad[i] *= s;
}

/* restrict: the four arrays are disjoint quarters of the block, so gcc vectorises
 * without a run-time overlap check. */
static void adam_range(float *restrict p, const float *restrict g, float *restrict m, float *restrict v,
                       long n, float lr, float b1, float b2, float eps, float l2, float decoupled, float c1,
                       float c2) {
    for (long i = 0; i < n; i++) {
        float gi = g[i] + l2 * p[i];
        m[i] = b1 * m[i] + (1.0f - b1) * gi;
        v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
        float mhat = m[i] / c1, vhat = v[i] / c2;
        p[i] -= lr * (mhat / (sqrtf(vhat) + eps) + decoupled * p[i]);
    }
}

void optim_adam_step(ParamStore *ps, const CfgTrain *cfg, float lr, long t) {
    optim_adam_step_except(ps, cfg, lr, t, NULL);
}

void optim_adam_step_except(ParamStore *ps, const CfgTrain *cfg, float lr, long t, const unsigned char *frozen) {
    float c1 = 1.0f - powf(cfg->beta1, (float)t), c2 = 1.0f - powf(cfg->beta2, (float)t);
    int decoupled = !strcmp(cfg->optimizer, "adamw");
    for (int k = 0; k < ps->n; k++) {
        if (frozen && frozen[k]) continue;
        const Param *q = &ps->p[k];
        float wd = q->decay ? cfg->weight_decay : 0.0f;
        /* a tensor with its own base rate: the schedule's ratio lr / cfg->lr times it */
        float lk = q->lr > 0 ? lr * (q->lr / cfg->lr) : lr;
        long o = q->offset;
        adam_range(ps->data + o, ps->grad + o, ps->m + o, ps->v + o, q->t.n, lk, cfg->beta1,
                   cfg->beta2, cfg->eps, decoupled ? 0.0f : wd, decoupled ? wd : 0.0f, c1, c2);
    }
}
