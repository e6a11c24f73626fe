/* test_forward_rows.c — model_forward_rows (nn/model.h; docs/design.md decision 16).
 *
 * For every model type (testutil.h's TU_MODEL_CASES: transformers with softmax,
 * linear and sparse attention, LSTM, DSS with and without its feed-forward block,
 * RetNet, Mamba, with dropout on and off), on a batch where about a third of the
 * positions are scored:
 *   - the logits of the scored rows, asked for in a scrambled order, equal
 *     model_forward's at those rows (1e-5 of the largest logit), with dropout too
 *     (the same masks: ad_dropout_rows); the same comparison against the wrong rows
 *     (each shifted by one) fails, so the check can fail;
 *   - the loss over those rows and every parameter's gradient equal the whole grid's
 *     to 1e-5 (relative), and the dropout rng ends where it ends;
 *   - step_gradients (the trainer's step, which takes this path when some positions
 *     are not scored) gives that loss and those gradients;
 *   - with every position scored, step_gradients is model_forward's step bit for bit. */
#include "check.h"
#include "testutil.h"
#include "attnlab/config/config.h"
#include "attnlab/nn/model.h"
#include "attnlab/train/step.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 4, T = 10, VOCAB = 11, CLASSES = 7 };

static Model *make_model(const TuModelCase *c, uint64_t seed) {
    AlError err = {0};
    Model *m = tu_model(c, VOCAB, CLASSES, T, seed, &err);
    CHECK(m != NULL, "%s: config: %s", c->name, err.msg);
    return m;
}

typedef struct Pass {
    float *logits;   /* the scored rows' logits, in the order of rows */
    double loss;
    float *grad;
    Rng rng_after;
} Pass;

/* One training-mode forward and backward from dropout rng `rng`: the whole grid
 * (rows NULL; its logits then picked at rows) or rows[0..n) only. */
static Pass run(Model *m, const int *tokens, const int *targets, const int *rows, int n, const int *picked, Rng rng) {
    Arena a;
    arena_init(&a, 1 << 16);
    Tape t;
    tape_init(&t, &a);
    t.rng = rng;
    t.training = 1;
    params_zero_grad(&m->params);
    Tensor *logits;
    int *tg = malloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) tg[i] = targets[picked[i]];
    Pass p;
    memset(&p, 0, sizeof p);
    p.logits = malloc((size_t)n * CLASSES * sizeof(float));
    Tensor *loss;
    if (rows) {
        logits = model_forward_rows(m, &t, tokens, B, T, rows, n);
        CHECK(logits->n == (long)n * CLASSES, "rows' logits: %ld floats", logits->n);
        memcpy(p.logits, logits->data, (size_t)n * CLASSES * sizeof(float));
        loss = ad_cross_entropy(&t, logits, tg);
    } else {
        logits = model_forward(m, &t, tokens, B, T);
        for (int i = 0; i < n; i++)
            memcpy(p.logits + (long)i * CLASSES, logits->data + (long)picked[i] * CLASSES, CLASSES * sizeof(float));
        loss = ad_cross_entropy(&t, logits, targets);
    }
    p.loss = loss->data[0];
    tape_backward(&t, loss);
    p.rng_after = t.rng;
    p.grad = malloc((size_t)m->params.total * sizeof(float));
    memcpy(p.grad, m->params.grad, (size_t)m->params.total * sizeof(float));
    free(tg);
    tape_free(&t);
    arena_free(&a);
    return p;
}

static void pass_free(Pass *p) { free(p->logits), free(p->grad); }

static double max_abs_diff(const float *x, const float *y, long n, double *scale) {
    double d = 0;
    *scale = 0;
    for (long i = 0; i < n; i++) {
        d = fmax(d, fabs((double)x[i] - y[i]));
        *scale = fmax(*scale, fabs((double)y[i]));
    }
    return d;
}

/* The worst per-tensor ‖g − ref‖/‖ref‖, a tensor whose reference gradient is
 * rounding noise (below 1e-4 of the whole) measured against the whole norm. */
static double worst_grad_diff(const Model *m, const float *g, const float *ref, int *worst_k) {
    double total = 0, worst = 0;
    for (long i = 0; i < m->params.total; i++) total += (double)ref[i] * ref[i];
    total = sqrt(total);
    *worst_k = 0;
    for (int k = 0; k < m->params.n; k++) {
        const Param *p = &m->params.p[k];
        double d = 0, n = 0;
        for (long i = 0; i < p->t.n; i++) {
            double x = g[p->offset + i], y = ref[p->offset + i];
            d += (x - y) * (x - y), n += y * y;
        }
        d = sqrt(d), n = sqrt(n);
        double r = n < 1e-4 * total ? d / total : d / n;
        if (r > worst) worst = r, *worst_k = k;
    }
    return worst;
}

static void check_case(const TuModelCase *c, int index) {
    Model *m = make_model(c, 20 + index);
    if (!m) return;
    Batch b;
    batch_alloc(&b, B, T);
    Rng r = rng_stream(5, index);
    int n = 0, scored[B * T], rows[B * T];
    for (int i = 0; i < B * T; i++) {
        b.tokens[i] = (int)rng_below(&r, VOCAB);
        b.targets[i] = rng_below(&r, 3) == 0 ? (int)rng_below(&r, CLASSES) : DATASET_IGNORE;
        if (b.targets[i] >= 0) scored[n++] = i;
    }
    CHECK(n > 2 && n < B * T, "%s: %d of %d positions scored", c->name, n, B * T);
    for (int i = 0; i < n; i++) rows[i] = scored[(2 * n - 1 - i + n / 2) % n];   /* reversed, then rotated */
    Rng drop = rng_stream(9, index);

    Pass full = run(m, b.tokens, b.targets, NULL, n, rows, drop);
    Pass part = run(m, b.tokens, b.targets, rows, n, rows, drop);
    double scale, d = max_abs_diff(part.logits, full.logits, (long)n * CLASSES, &scale);
    CHECK(d <= 1e-5 * scale, "%s: the rows' logits differ by %.3g (largest %.3g)", c->name, d, scale);
    /* The same comparison against the neighbouring rows fails. */
    int shifted[B * T] = { 0 };
    for (int i = 0; i < n; i++) shifted[i] = rows[i] + 1 < B * T ? rows[i] + 1 : rows[i] - 1;
    Pass wrong = run(m, b.tokens, b.targets, NULL, n, shifted, drop);
    double dw = max_abs_diff(part.logits, wrong.logits, (long)n * CLASSES, &scale);
    CHECK(dw > 1e-3 * scale, "%s: shifted rows give the same logits (%.3g)", c->name, dw);
    CHECK(fabs(part.loss - full.loss) <= 1e-5 * full.loss, "%s: loss %.9g vs %.9g", c->name, part.loss, full.loss);
    int k;
    double g = worst_grad_diff(m, part.grad, full.grad, &k);
    CHECK(g <= 1e-5, "%s: gradient of %s differs by %.3g (relative)", c->name, m->params.p[k].name, g);
    CHECK(!memcmp(&part.rng_after, &full.rng_after, sizeof(Rng)), "%s: dropout rng after the pass", c->name);

    /* The trainer's step takes this path. */
    Arena a;
    arena_init(&a, 1 << 16);
    Tape t;
    tape_init(&t, &a);
    t.rng = drop;
    double norm, loss = step_gradients(m, &t, &b, NULL, &norm);
    CHECK(fabs(loss - full.loss) <= 1e-5 * full.loss, "%s: step_gradients loss %.9g vs %.9g", c->name, loss,
          full.loss);
    g = worst_grad_diff(m, m->params.grad, full.grad, &k);
    CHECK(g <= 1e-5, "%s: step_gradients' gradient of %s differs by %.3g", c->name, m->params.p[k].name, g);

    /* Every position scored: the step is the whole-grid forward's, bit for bit. */
    int all[B * T];
    for (int i = 0; i < B * T; i++) {
        if (b.targets[i] < 0) b.targets[i] = (int)rng_below(&r, CLASSES);
        all[i] = i;
    }
    Pass whole = run(m, b.tokens, b.targets, NULL, B * T, all, drop);
    tape_reset(&t);
    t.rng = drop;
    loss = step_gradients(m, &t, &b, NULL, &norm);
    CHECK(loss == whole.loss && !memcmp(m->params.grad, whole.grad, (size_t)m->params.total * sizeof(float)),
          "%s: every position scored: step %.9g vs forward %.9g", c->name, loss, whole.loss);

    pass_free(&full), pass_free(&part), pass_free(&wrong), pass_free(&whole);
    tape_free(&t);
    arena_free(&a);
    batch_free(&b);
    model_free(m);
}

int main(void) {
    for (int c = 0; c < TU_N_MODEL_CASES; c++) check_case(&TU_MODEL_CASES[c], c);
    return check_exit("test_forward_rows");
}
