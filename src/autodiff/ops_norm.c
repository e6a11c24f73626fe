/* ops_norm.c — per-row normalisations: layer norm and L2 normalisation.
 *
 * Rows are the last dim (C, typically 64..256: a row sits in L1), so each row is
 * a few short passes that vectorise; the reductions use fastmath's lane sums. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"

#include "attnlab/util/fastmath.h"
#include "grad_put.h"
#include "record.h"

#include <math.h>

/* ------------------------------------------------------------------------------ */
/* layernorm: x (…, C), gain and bias (C) → y like x.
 *   y = x̂·g + b,  x̂ = (x − μ)·rstd,  rstd = 1/√(var + eps), var biased (÷C).
 * Saved: μ and rstd per row, and 2·C floats of row scratch for backward. */

static void layernorm_backward(TapeEntry *e) {
    Tensor *x = e->in[0], *gain = e->in[1], *bias = e->in[2];
    const float *mean = e->saved[0], *rstd = e->saved[1], *g = gain->data;
    int C = tensor_cols(x);
    long R = tensor_rows(x);
    float *dn = e->saved[2], *xh = dn + C;   /* row scratch: dL/dx̂ and x̂ */
    int acc_x = x->grad ? tape_grad_acc(x) : 1;
    int acc_g = gain->grad ? tape_grad_acc(gain) : 1, acc_b = bias->grad ? tape_grad_acc(bias) : 1;
    for (long r = 0; r < R; r++) {
        const float *xr = x->data + r * C, *dy = e->out->grad + r * C;
        const float mu = mean[r], rs = rstd[r];
        for (int c = 0; c < C; c++) {
            xh[c] = (xr[c] - mu) * rs;
            dn[c] = dy[c] * g[c];
        }
        /* dgain = Σ_rows dy∘x̂, dbias = Σ_rows dy; the first row stores when fresh. */
        if (gain->grad) grad_put(gain->grad, dy, xh, 1.0f, C, acc_g || r > 0);
        if (bias->grad) grad_put(bias->grad, dy, NULL, 1.0f, C, acc_b || r > 0);
        if (!x->grad) continue;
        /* dx = rstd·(dx̂ − mean(dx̂) − x̂·mean(dx̂·x̂)): the two means are the
         * gradient through μ and through var. */
        float m1 = fm_sum(dn, C) / (float)C, m2 = fm_dot(dn, xh, C) / (float)C;
        float *dx = x->grad + r * C;
        if (acc_x) for (int c = 0; c < C; c++) dx[c] += rs * (dn[c] - m1 - xh[c] * m2);
        else       for (int c = 0; c < C; c++) dx[c] = rs * (dn[c] - m1 - xh[c] * m2);
    }
}

Tensor *ad_layernorm(Tape *t, Tensor *x, Tensor *gain, Tensor *bias, float eps) {
    int C = tensor_cols(x);
    long R = tensor_rows(x);
    AL_ASSERT(gain->n == C && bias->n == C);
    int needs_grad = tape_needs_grad(t, x, gain, bias);
    Tensor *y = tape_tensor(t, needs_grad, x->ndim, x->shape);
    float *mean = NULL, *rstd = NULL;
    if (needs_grad) {
        mean = tape_scratch(t, (size_t)R * sizeof(float));
        rstd = tape_scratch(t, (size_t)R * sizeof(float));
    }
    const float *g = gain->data, *b = bias->data;
    for (long r = 0; r < R; r++) {
        const float *xr = x->data + r * C;
        float *yr = y->data + r * C;
        /* Two passes (mean, then squares of x − μ): the one-pass E[x²] − μ² cancels
         * badly when |μ| ≫ std. */
        float mu = fm_sum(xr, C) / (float)C;
        for (int c = 0; c < C; c++) yr[c] = xr[c] - mu;
        float rs = 1.0f / sqrtf(fm_dot(yr, yr, C) / (float)C + eps);
        for (int c = 0; c < C; c++) yr[c] = yr[c] * rs * g[c] + b[c];
        if (needs_grad) {
            mean[r] = mu;
            rstd[r] = rs;
        }
    }
    if (needs_grad) {
        float *work = tape_scratch(t, 2 * (size_t)C * sizeof(float));
        ad_record(t, (TapeEntry){ .op = OP_LAYERNORM, .backward = layernorm_backward, .out = y, .in = { x, gain, bias },
                                  .saved = { mean, rstd, work }, .first_write = 1 });
    }
    return y;
}

/* ------------------------------------------------------------------------------ */
/* l2norm: x (…, C) → y like x, y = x / max(‖x‖, eps) per row (F.normalize).
 * Saved: ‖x‖ per row.  Backward, d = max(‖x‖, eps):
 *   ‖x‖ ≥ eps:  dx = (dy − y·(y·dy)) / ‖x‖   (the denominator depends on x)
 *   ‖x‖ < eps:  dx = dy / eps               (a constant denominator; PyTorch's
 *                                            clamp_min passes no gradient below it) */

static void l2norm_backward(TapeEntry *e) {
    Tensor *x = e->in[0];
    const Tensor *y = e->out;
    const float *norm = e->saved[0];
    float eps = e->f[0];
    int C = tensor_cols(x);
    long R = tensor_rows(x);
    int acc = tape_grad_acc(x);
    for (long r = 0; r < R; r++) {
        const float *yr = y->data + r * C, *dy = y->grad + r * C;
        int through_norm = norm[r] >= eps;
        float proj = through_norm ? fm_dot(yr, dy, C) : 0.0f;
        grad_put_projected(x->grad + r * C, dy, yr, proj, 1.0f / (through_norm ? norm[r] : eps), C, acc);
    }
}

Tensor *ad_l2norm(Tape *t, Tensor *x, float eps) {
    int C = tensor_cols(x);
    long R = tensor_rows(x);
    int needs_grad = tape_needs_grad(t, x, NULL, NULL);
    Tensor *y = tape_tensor(t, needs_grad, x->ndim, x->shape);
    float *norm = needs_grad ? tape_scratch(t, (size_t)R * sizeof(float)) : NULL;
    for (long r = 0; r < R; r++) {
        const float *xr = x->data + r * C;
        float *yr = y->data + r * C;
        float nr = sqrtf(fm_dot(xr, xr, C));
        float inv = 1.0f / (nr > eps ? nr : eps);
        for (int c = 0; c < C; c++) yr[c] = xr[c] * inv;
        if (needs_grad) norm[r] = nr;
    }
    if (needs_grad)
        ad_record(t, (TapeEntry){ .op = OP_L2NORM, .backward = l2norm_backward, .out = y, .in = { x },
                                  .saved = { norm }, .f = { eps }, .first_write = 1 });
    return y;
}

/* ------------------------------------------------------------------------------ */
/* rmsnorm: x (…, C), gain (C) → y like x (Zhang & Sennrich 2019, "Root Mean Square
 * Layer Normalization"; the norm of the Mamba reference language model):
 *   y = x̂·g,  x̂ = x·rstd,  rstd = 1/√(mean(x²) + eps).
 * Saved: rstd per row, and 2·C floats of row scratch.  Backward, dn = dy∘g:
 *   dx = rstd·(dn − x̂·mean(dn∘x̂)),  dgain = Σ_rows dy∘x̂. */

static void rmsnorm_backward(TapeEntry *e) {
    Tensor *x = e->in[0], *gain = e->in[1];
    const float *rstd = e->saved[0], *g = gain->data;
    int C = tensor_cols(x);
    long R = tensor_rows(x);
    float *dn = e->saved[1], *xh = dn + C;
    int acc_x = x->grad ? tape_grad_acc(x) : 1, acc_g = gain->grad ? tape_grad_acc(gain) : 1;
    for (long r = 0; r < R; r++) {
        const float *xr = x->data + r * C, *dy = e->out->grad + r * C;
        for (int c = 0; c < C; c++) {
            xh[c] = xr[c] * rstd[r];
            dn[c] = dy[c] * g[c];
        }
        if (gain->grad) grad_put(gain->grad, dy, xh, 1.0f, C, acc_g || r > 0);
        if (x->grad)
            grad_put_projected(x->grad + r * C, dn, xh, fm_dot(dn, xh, C) / (float)C, rstd[r], C, acc_x);
    }
}

Tensor *ad_rmsnorm(Tape *t, Tensor *x, Tensor *gain, float eps) {
    int C = tensor_cols(x);
    long R = tensor_rows(x);
    AL_ASSERT(gain->n == C);
    int needs_grad = tape_needs_grad(t, x, gain, NULL);
    Tensor *y = tape_tensor(t, needs_grad, x->ndim, x->shape);
    float *rstd = needs_grad ? tape_scratch(t, (size_t)R * sizeof(float)) : NULL;
    const float *g = gain->data;
    for (long r = 0; r < R; r++) {
        const float *xr = x->data + r * C;
        float *yr = y->data + r * C;
        float rs = 1.0f / sqrtf(fm_dot(xr, xr, C) / (float)C + eps);
        for (int c = 0; c < C; c++) yr[c] = xr[c] * rs * g[c];
        if (needs_grad) rstd[r] = rs;
    }
    if (needs_grad) {
        float *work = tape_scratch(t, 2 * (size_t)C * sizeof(float));
        ad_record(t, (TapeEntry){ .op = OP_RMSNORM, .backward = rmsnorm_backward, .out = y, .in = { x, gain },
                                  .saved = { rstd, work }, .first_write = 1 });
    }
    return y;
}
