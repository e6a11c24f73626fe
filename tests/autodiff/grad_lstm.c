/* grad_lstm.c — gradient checks of the LSTM layer.
 *
 * Cases: several seeds, B > 1, T ∈ {1, 2, 7}, In ≠ H both ways, gradients of x and
 * all three weights; one case with x as plain data (no grad), the common first-layer
 * use, which takes the x-less path through backward.
 *
 * Tolerance: eps 2⁻⁸, atol 1e-4, rtol 1e-3.  Unlike matmul the op is curved, and
 * over T steps strongly so (a bias element moves every gate of every step), so the
 * central difference has a real truncation error |L‴|·eps²/6.  Measured worst
 * element error over these cases and 16 seed offsets of them: 4.2e-4 at eps 2⁻⁶,
 * 1.1e-4 at 2⁻⁷, 4.0e-5 at 2⁻⁸, 7.5e-5 at 2⁻⁹ — it falls as eps² down to 2⁻⁸ and
 * then rounding takes over: each of the B·T·H ≈ 60 outputs carries ~1e-7 of float
 * error (sgemm sums, fastmath's ≤ 2 ulp σ/tanh, the cell update), so L = Σ w·h is
 * off by ~√60·0.5·1e-7 ≈ 4e-7, which divided by 2·eps = 2⁻⁷ is ~5e-5.  2⁻⁸ is where
 * the two balance; T = 1 cases stay below 3e-6.  atol 1e-4 is 2.5x the worst of
 * those 96 case runs; rtol 1e-3 covers the few gradients above 0.1.  The planted
 * fault is 5 % on every gradient, so every element above |g| ≈ 2e-3 is flagged —
 * 36 % of all elements at T = 1 (where the 64 w_hh grads are exactly 0: h0 = 0),
 * 76 % at T = 2 and 93–98 % at T = 7.
 */
#include "grad_cases.h"

#include <stdio.h>
#include <stdlib.h>

static const GcTol LSTM_TOL = { 0x1p-8f, 1e-4f, 1e-3f, 2 };

typedef struct LstmCase {
    int B, T, In, H;
    int x_grad;      /* 0: x is data without a grad (only the weights are leaves) */
    uint64_t seed;
} LstmCase;

typedef struct LstmCtx {
    const LstmCase *c;
    Tensor *x;       /* the data x when !c->x_grad */
} LstmCtx;

static Tensor *build_lstm(Tape *t, Tensor **leaves, void *ctx) {
    const LstmCtx *l = ctx;
    if (l->c->x_grad) return ad_lstm(t, leaves[0], leaves[1], leaves[2], leaves[3]);
    return ad_lstm(t, l->x, leaves[0], leaves[1], leaves[2]);
}

static int lstm_cases(int *n_cases) {
    static const LstmCase cases[] = {
        { 2, 1, 3, 4, 1, 1 },   /* one step: no recurrence, c_{−1} = 0 path only */
        { 3, 2, 5, 2, 1, 2 },   /* In > H */
        { 2, 2, 2, 5, 1, 3 },   /* In < H */
        { 2, 7, 3, 4, 1, 4 },   /* backward through 7 steps */
        { 3, 7, 4, 3, 1, 5 },
        { 2, 7, 3, 4, 0, 6 },   /* x without grad: weight grads only */
    };
    int failed = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const LstmCase *c = &cases[k];
        int G = 4 * c->H;
        /* Weights in ±0.6 (PyTorch's init is ±1/√H = ±0.5..0.7 here) and x in ±1 keep
         * the gates off saturation, so every path carries gradient. */
        Tensor *x = gc_leaf(3, (const int[]){ c->B, c->T, c->In }, c->seed, -1.0f, 1.0f);
        Tensor *w[3] = {
            gc_leaf(2, (const int[]){ G, c->In }, c->seed + 100, -0.6f, 0.6f),
            gc_leaf(2, (const int[]){ G, c->H }, c->seed + 200, -0.6f, 0.6f),
            gc_leaf(1, &G, c->seed + 300, -0.6f, 0.6f),
        };
        Tensor *leaves[4] = { x, w[0], w[1], w[2] };
        LstmCtx ctx = { .c = c, .x = x };
        if (!c->x_grad) {
            free(x->grad);
            x->grad = NULL;
        }
        char label[96];
        snprintf(label, sizeof label, "lstm B%d T%d In%d H%d%s", c->B, c->T, c->In, c->H,
                 c->x_grad ? "" : " (x no grad)");
        failed += grad_case(label, OP_LSTM, build_lstm, &ctx, c->x_grad ? leaves : leaves + 1,
                            c->x_grad ? 4 : 3, LSTM_TOL, 1);
        (*n_cases)++;
        for (int l = 0; l < 4; l++) gc_leaf_free(leaves[l]);
    }
    return failed;
}

int grad_cases_lstm(OpKind op, int *n_cases) {
    return op == OP_LSTM ? lstm_cases(n_cases) : 0;
}
