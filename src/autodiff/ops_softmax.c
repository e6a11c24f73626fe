/* ops_softmax.c — row softmax (with an additive mask) and softmax cross-entropy.
 * Both go through softmax_row, so they agree on the stable evaluation and on
 * what a fully masked row means.  Also the multi-label loss (per-class sigmoid
 * and binary cross-entropy), the other way to score a row of class logits. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"
#include "attnlab/util/fastmath.h"
#include "act.h"
#include "grad_put.h"
#include "record.h"

#include <math.h>
#include <string.h>

/* The row max and Σ exp(z − max) of a softmax row: log-sum-exp is max + log(sum). */
typedef struct RowStats { float max, sum; } RowStats;

/* y = softmax(x + m) over C entries (m may be NULL).  Subtracting the row max keeps
 * every exp in (0, 1]: no overflow, and the largest term is exactly 1, so the sum
 * cannot underflow to 0.  A row masked out entirely (max = −inf) gives y = 0, not
 * NaN, and sum = 0. */
static RowStats softmax_row(const float *x, const float *m, float *y, int C) {
    const float *z = x;
    if (m) {
        for (int j = 0; j < C; j++) y[j] = x[j] + m[j];
        z = y;
    }
    RowStats s = { fm_max(z, C), 0.0f };
    if (s.max == -INFINITY) {
        memset(y, 0, (size_t)C * sizeof(float));
        return s;
    }
    /* fm_exp, not expf: a libm call in the loop would stop it vectorising. */
    for (int j = 0; j < C; j++) y[j] = fm_exp(z[j] - s.max);
    s.sum = fm_sum(y, C);
    float inv = 1.0f / s.sum;
    for (int j = 0; j < C; j++) y[j] *= inv;
    return s;
}

/* ------------------------------------------------------------------------------ */
/* softmax: x is (…, R, C), mask is NULL or (R, C) broadcast over the leading dims;
 * y has x's shape. */

static void softmax_backward(TapeEntry *e) {
    Tensor *x = e->in[0], *y = e->out;
    int C = tensor_cols(y);
    long rows = tensor_rows(y);
    int acc = tape_grad_acc(x);
    /* dx = y∘(dy − Σ dy∘y), the Jacobian-vector product of softmax; uses only the
     * saved output, and masked entries (y = 0) get no gradient. */
    for (long r = 0; r < rows; r++) {
        const float *yr = y->data + r * C, *dyr = y->grad + r * C;
        grad_put_centred(x->grad + r * C, dyr, yr, fm_dot(dyr, yr, C), C, acc);
    }
}

Tensor *ad_softmax(Tape *t, Tensor *x, const Tensor *mask) {
    int C = tensor_cols(x);
    int R = x->ndim >= 2 ? x->shape[x->ndim - 2] : 1;
    AL_ASSERT(!mask || (tensor_cols(mask) == C && mask->n == (long)R * C));
    int needs_grad = tape_needs_grad(t, x, NULL, NULL);
    Tensor *y = tape_tensor(t, needs_grad, x->ndim, x->shape);
    long rows = tensor_rows(x);
    for (long r = 0; r < rows; r++) {
        const float *m = mask ? mask->data + (r % R) * C : NULL;
        softmax_row(x->data + r * C, m, y->data + r * C, C);
    }
    if (needs_grad)
        ad_record(t, (TapeEntry){ .op = OP_SOFTMAX, .backward = softmax_backward, .out = y, .in = { x },
                                  .first_write = 1 });
    return y;
}

/* ------------------------------------------------------------------------------ */
/* cross_entropy: logits is (…, C), targets has one entry per row (< 0: ignored);
 * loss is (1) = mean over counted rows of logsumexp(row) − row[target]. */

static void cross_entropy_backward(TapeEntry *e) {
    Tensor *logits = e->in[0];
    const float *probs = e->saved[0];
    const int *targets = e->saved[1];
    int C = tensor_cols(logits);
    long rows = tensor_rows(logits);
    /* d loss / d logits = (softmax − onehot(target)) / n_counted, per counted row;
     * 0 for the others (stored only when this is the grad's first writer). */
    float s = e->out->grad[0] * e->f[0];
    int acc = tape_grad_acc(logits);
    for (long r = 0; r < rows; r++) {
        float *dx = logits->grad + r * C;
        if (targets[r] < 0) {
            if (!acc) memset(dx, 0, (size_t)C * sizeof(float));
            continue;
        }
        grad_put(dx, probs + r * C, NULL, s, C, acc);
        dx[targets[r]] -= s;
    }
}

Tensor *ad_cross_entropy(Tape *t, Tensor *logits, const int *targets) {
    int C = tensor_cols(logits);
    long rows = tensor_rows(logits);
    int needs_grad = tape_needs_grad(t, logits, NULL, NULL);
    Tensor *loss = tape_tensor(t, needs_grad, 1, (const int[]){ 1 });
    /* Backward needs every counted row's probabilities; without it one row of
     * scratch is enough to compute the log-sum-exp. */
    float *probs = tape_scratch(t, (size_t)(needs_grad ? rows : 1) * C * sizeof(float));
    double total = 0.0;
    long counted = 0;
    for (long r = 0; r < rows; r++) {
        int tgt = targets[r];
        if (tgt < 0) continue;
        AL_ASSERT(tgt < C);
        const float *x = logits->data + r * C;
        RowStats st = softmax_row(x, NULL, probs + (needs_grad ? r * C : 0), C);
        /* −log p[tgt] = log(sum) + (max − x[tgt]): the difference of two logits is
         * exact-ish, where log-sum-exp − x[tgt] would cancel for large logits. */
        total += log((double)st.sum) + (double)(st.max - x[tgt]);
        counted++;
    }
    loss->data[0] = counted ? (float)(total / (double)counted) : 0.0f;
    if (needs_grad)
        ad_record(t, (TapeEntry){ .op = OP_CROSS_ENTROPY, .backward = cross_entropy_backward, .out = loss,
                                  .in = { logits }, .saved = { probs, ad_saved_copy(t, targets, (size_t)rows * sizeof(int)) },
                                  .f = { counted ? 1.0f / (float)counted : 0.0f }, .first_write = 1 });
    return loss;
}

/* ------------------------------------------------------------------------------ */
/* bce_multilabel (paper 003, App. H.2, Eq-ncp): logits (…, C), targets one per row:
 * < 0 ignored, t < C the one valid class, t == C every class valid; loss (1) =
 * mean over counted rows of Σ_c softplus(z_c) − y_c·z_c, with softplus(z) =
 * max(z, 0) + log(1 + e^−|z|) (no overflow for any z). */

/* Σ_c softplus(s·z_c) over one row, s = ±1: Σ max(s·z_c, 0) + log Π (1 + e^−|z_c|).
 * The logs are taken of products: every factor is in [1, 2], so a block of 512 of
 * them multiplies to at most 2^512 in double, one log per block instead of a log1p
 * per class (which at |Σ| = 1 024 would cost more than the model), and the rounding
 * of the product costs ~1e-13 absolute per block.  Strict IEEE forbids gcc to
 * reorder a single running sum or product, so sixteen independent lanes of them,
 * combined in a fixed order at the end of each block, let it vectorise the loop and
 * keep the result the same for every vector width.  A NaN logit makes the sum NaN. */
#define SOFTPLUS_LANES 16

/* One class into lane j: the factor 1 + e^−|x| and the linear part max(x, 0). */
static inline void softplus_lane_add(double *prod, double *lin, int j, float x) {
    prod[j] *= 1.0 + (double)fm_exp(-fabsf(x));
    lin[j] += (double)fm_select(x > 0.0f, x, 0.0f);
}

static double softplus_row_sum(const float *z, int n, float s) {
    double total = 0.0;
    for (int c0 = 0; c0 < n; c0 += 512) {
        int c1 = n - c0 < 512 ? n : c0 + 512, c = c0;
        double prod[SOFTPLUS_LANES], lin[SOFTPLUS_LANES];
        for (int j = 0; j < SOFTPLUS_LANES; j++) prod[j] = 1.0, lin[j] = 0.0;
        for (; c + SOFTPLUS_LANES <= c1; c += SOFTPLUS_LANES)
            for (int j = 0; j < SOFTPLUS_LANES; j++) softplus_lane_add(prod, lin, j, s * z[c + j]);
        for (int j = 0; c < c1; c++, j++) softplus_lane_add(prod, lin, j, s * z[c]);
        double p = 1.0, l = 0.0;
        for (int j = 0; j < SOFTPLUS_LANES; j++) p *= prod[j], l += lin[j];
        total += l + log(p);
    }
    return total;
}

static void bce_multilabel_backward(TapeEntry *e) {
    Tensor *logits = e->in[0];
    const int *targets = e->saved[0];
    float *row = e->saved[1];   /* one row of workspace, taken in the forward */
    int C = tensor_cols(logits);
    long rows = tensor_rows(logits);
    float s = e->out->grad[0] * e->f[0];
    int acc = tape_grad_acc(logits);
    for (long r = 0; r < rows; r++) {
        float *dx = logits->grad + r * C;
        const int tgt = targets[r];
        if (tgt < 0) {
            if (!acc) memset(dx, 0, (size_t)C * sizeof(float));
            continue;
        }
        /* σ − y: σ where y = 0 and −(1 − σ) where y = 1, each from act.h's
         * sigmoid without cancellation. */
        const float *z = logits->data + r * C;
        const int all = tgt == C;
        for (int c = 0; c < C; c++) {
            Sigmoid g = sigmoid(z[c]);
            row[c] = fm_select(all, -g.one_minus_s, g.s);
        }
        if (!all) row[tgt] = -sigmoid(z[tgt]).one_minus_s;
        grad_put(dx, row, NULL, s, C, acc);
    }
}

Tensor *ad_bce_multilabel(Tape *t, Tensor *logits, const int *targets) {
    int C = tensor_cols(logits);
    long rows = tensor_rows(logits);
    int needs_grad = tape_needs_grad(t, logits, NULL, NULL);
    Tensor *loss = tape_tensor(t, needs_grad, 1, (const int[]){ 1 });
    double total = 0.0;
    long counted = 0;
    for (long r = 0; r < rows; r++) {
        const int tgt = targets[r];
        if (tgt < 0) continue;
        AL_ASSERT(tgt <= C);
        const float *z = logits->data + r * C;
        /* Every class valid: softplus(z) − z = softplus(−z) for each; one valid
         * class: Σ_c softplus(z_c), less its z. */
        if (tgt == C) total += softplus_row_sum(z, C, -1.0f);
        else total += softplus_row_sum(z, C, 1.0f) - (double)z[tgt];
        counted++;
    }
    loss->data[0] = counted ? (float)(total / (double)counted) : 0.0f;
    if (needs_grad)
        ad_record(t, (TapeEntry){ .op = OP_BCE_MULTILABEL, .backward = bce_multilabel_backward, .out = loss,
                                  .in = { logits }, .saved = { ad_saved_copy(t, targets, (size_t)rows * sizeof(int)),
                                             tape_scratch(t, (size_t)C * sizeof(float)) },
                                  .f = { counted ? 1.0f / (float)counted : 0.0f }, .first_write = 1 });
    return loss;
}
