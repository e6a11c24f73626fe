/* grad_pointwise.c — gradient checks of add, sub, mul, scale, sum, mean, gelu,
 * elu, relu, silu, glu and dropout.
 *
 * Tolerances.  The numeric gradient's error has two sources: float32 rounding of
 * the perturbed outputs (≤ ½ulp(y) each, so ≤ ulp(y)·|w|/(2·eps) with the
 * harness's weights |w| ≤ 1) and, for curved ops, the central-difference
 * truncation |f‴|·eps²/6.  eps is a power of two, so x ± eps is exact for the
 * |x| ≤ 2 used here: the perturbation itself adds no error.
 *   add sub mul scale sum dropout, relu away from 0 — affine in each input, so no
 *     truncation and eps can be large: eps 2⁻⁴.  |y| < 8 in every case (the sums
 *     here are 0.9, 4.2, −1.0) → ulp ≤ 9.5e-7 → error ≤ 7.6e-6: atol 2e-5, rtol 1e-5.
 *   mean — affine too, but its gradients are small (w/n ~ 5e-4 here), so it needs
 *     and gets a tighter bound: |mean| ≤ 2 → ulp ≤ 2.4e-7 → error ≤ 1.9e-6: atol 2e-6.
 *   gelu (both kinds), elu, silu, glu — curved, eps 2⁻⁷: truncation ≤ 1.2·eps²/6 = 1.2e-5
 *     (|f‴| ≤ 1.2 for GeLU, ≤ 1 for ELU, ≤ 0.31 for SiLU, ≤ |a|/8 ≤ 0.25 for GLU's a·σ(b)), rounding ≤ 2.4e-7/(2·eps) = 1.5e-5, the
 *     fast exp's own ≤ 2e-7 relative error as much again: ≲ 5e-5 → atol 1e-4, and
 *     rtol 1e-3 for the analytic side's float error on larger gradients.
 * Each stays far below the 5 % error the fault-injection check plants, for every
 * op (mean included: 5 % of its 5e-4 gradients is 2.7e-5 > 2e-6). */
#include "grad_cases.h"

#include <math.h>
#include <stdio.h>

static GcTol pw_tol(OpKind op) {
    switch (op) {
    case OP_MEAN: return (GcTol){ 0x1p-4f, 2e-6f, 1e-5f, 2 };
    case OP_GELU:
    case OP_ELU:
    case OP_SILU:
    case OP_GLU:  return (GcTol){ 0x1p-7f, 1e-4f, 1e-3f, 2 };
    default:      return (GcTol){ 0x1p-4f, 2e-5f, 1e-5f, 2 };
    }
}

typedef struct PwCase {
    OpKind op;
    int ndim, shape[4];     /* a, or x */
    int bdim, bshape[4];    /* b of add/sub/mul; bdim 0: b is a itself (a∘a) */
    float param;            /* scale factor, dropout p, or AdGelu kind */
    int eval;               /* dropout: build with t->training = 0 */
    uint64_t seed;
} PwCase;

static Tensor *build_pw(Tape *t, Tensor **x, void *ctx) {
    const PwCase *c = ctx;
    Tensor *a = gc_in(t, x[0]), *b = c->bdim ? gc_in(t, x[1]) : a;
    switch (c->op) {
    case OP_ADD:   return ad_add(t, a, b);
    case OP_SUB:   return ad_sub(t, a, b);
    case OP_MUL:   return ad_mul(t, a, b);
    case OP_SCALE: return ad_scale(t, a, c->param);
    case OP_SUM:   return ad_sum(t, a);
    case OP_MEAN:  return ad_mean(t, a);
    case OP_GELU:  return ad_gelu(t, a, (AdGelu)c->param);
    case OP_ELU:   return ad_elu(t, a);
    case OP_RELU:  return ad_relu(t, a);
    case OP_SILU:  return ad_silu(t, a);
    case OP_GLU:   return ad_glu(t, a);
    case OP_DROPOUT:
        t->training = !c->eval;
        return ad_dropout(t, a, c->param);
    default:       return NULL;
    }
}

#define BIN(op, nd, sa, bd, sb, seed)  { op, nd, sa, bd, sb, 0, 0, seed }
#define UNARY(op, nd, s, param, seed)  { op, nd, s, 0, {0}, param, 0, seed }
#define S(...) { __VA_ARGS__ }

static const PwCase CASES[] = {
    /* same shape, broadcast of a row (as (C) and as (1, C)), and a∘a (b is a) */
    BIN(OP_ADD, 2, S(3, 5), 2, S(3, 5), 1),
    BIN(OP_ADD, 3, S(2, 3, 4), 3, S(2, 3, 4), 2),
    BIN(OP_ADD, 3, S(2, 3, 4), 1, S(4), 3),
    BIN(OP_ADD, 2, S(5, 6), 2, S(1, 6), 4),
    BIN(OP_ADD, 2, S(3, 4), 0, S(0), 5),
    BIN(OP_SUB, 2, S(3, 5), 2, S(3, 5), 11),
    BIN(OP_SUB, 3, S(2, 3, 4), 3, S(2, 3, 4), 12),
    BIN(OP_SUB, 3, S(2, 3, 4), 1, S(4), 13),
    BIN(OP_SUB, 2, S(5, 6), 2, S(1, 6), 14),
    BIN(OP_MUL, 2, S(3, 5), 2, S(3, 5), 21),
    BIN(OP_MUL, 3, S(2, 3, 4), 3, S(2, 3, 4), 22),
    BIN(OP_MUL, 3, S(2, 3, 4), 1, S(4), 23),
    BIN(OP_MUL, 2, S(5, 6), 2, S(1, 6), 24),
    BIN(OP_MUL, 2, S(3, 4), 0, S(0), 25),
    UNARY(OP_SCALE, 2, S(3, 5), 0.37f, 31),
    UNARY(OP_SCALE, 3, S(2, 3, 4), -2.5f, 32),
    UNARY(OP_SUM, 1, S(7), 0, 41),
    UNARY(OP_SUM, 3, S(3, 4, 5), 0, 42),
    UNARY(OP_SUM, 4, S(2, 2, 3, 2), 0, 43),
    UNARY(OP_MEAN, 1, S(7), 0, 51),
    UNARY(OP_MEAN, 3, S(3, 4, 5), 0, 52),
    UNARY(OP_MEAN, 4, S(2, 2, 3, 2), 0, 53),
    UNARY(OP_GELU, 2, S(4, 9), GELU_TANH, 61),
    UNARY(OP_GELU, 3, S(2, 3, 7), GELU_TANH, 62),
    UNARY(OP_GELU, 2, S(4, 9), GELU_ERF, 63),
    UNARY(OP_GELU, 3, S(2, 3, 7), GELU_ERF, 64),
    UNARY(OP_ELU, 2, S(4, 9), 0, 71),
    UNARY(OP_ELU, 3, S(2, 3, 7), 0, 72),
    UNARY(OP_RELU, 2, S(4, 9), 0, 81),
    UNARY(OP_RELU, 3, S(2, 3, 7), 0, 82),
    UNARY(OP_SILU, 2, S(4, 9), 0, 86),
    UNARY(OP_SILU, 3, S(2, 3, 7), 0, 87),
    UNARY(OP_GLU, 2, S(4, 10), 0, 88),     /* halves the last dim: y (4, 5) */
    UNARY(OP_GLU, 3, S(2, 3, 8), 0, 89),
    UNARY(OP_DROPOUT, 2, S(6, 7), 0.3f, 91),
    UNARY(OP_DROPOUT, 3, S(2, 3, 9), 0.3f, 92),
    /* identities: p = 0, and evaluation mode (no tape entry, so no fault check) */
    UNARY(OP_DROPOUT, 2, S(3, 5), 0.0f, 93),
    { OP_DROPOUT, 2, S(3, 5), 0, {0}, 0.3f, 1, 94 },
};

/* Inputs lie in [−2, 2); for relu and elu they are pushed at least 0.1 away from
 * the kink at 0, farther than eps, so no finite-difference stencil straddles it:
 * relu's derivative jumps there (the numeric value would be anything in [0, 1]) and
 * elu's second derivative jumps (error O(eps) instead of O(eps²)). */
static Tensor *pw_leaf(const PwCase *c, int ndim, const int *shape, uint64_t seed) {
    Tensor *x = gc_leaf(ndim, shape, seed, -2.0f, 2.0f);
    if (c->op == OP_RELU || c->op == OP_ELU)
        for (long i = 0; i < x->n; i++)
            if (fabsf(x->data[i]) < 0.1f) x->data[i] += x->data[i] < 0 ? -0.1f : 0.1f;
    return x;
}

static void pw_label(const PwCase *c, const Tensor *a, const Tensor *b, char *buf, int n) {
    char sa[32], sb[32], extra[48] = "";
    tensor_shape_str(a, sa, sizeof sa);
    if (c->op == OP_ADD || c->op == OP_SUB || c->op == OP_MUL)
        snprintf(extra, sizeof extra, " b%s", b ? tensor_shape_str(b, sb, sizeof sb) : " = a");
    else if (c->op == OP_SCALE)
        snprintf(extra, sizeof extra, " s=%g", (double)c->param);
    else if (c->op == OP_GELU)
        snprintf(extra, sizeof extra, " %s", (AdGelu)c->param == GELU_ERF ? "erf" : "tanh");
    else if (c->op == OP_DROPOUT)
        snprintf(extra, sizeof extra, " p=%g%s", (double)c->param, c->eval ? " eval" : "");
    snprintf(buf, (size_t)n, "%s a%s%s seed %llu", op_name(c->op), sa, extra,
             (unsigned long long)c->seed);
}

int grad_cases_pointwise(OpKind op, int *n_cases) {
    int failed = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const PwCase *c = &CASES[i];
        if (c->op != op) continue;
        Tensor *x[2] = { pw_leaf(c, c->ndim, c->shape, c->seed), NULL };
        int n_leaves = 1;
        if (c->bdim) x[n_leaves++] = pw_leaf(c, c->bdim, c->bshape, c->seed + 1000);
        /* Identity dropout returns x itself: nothing is recorded to inject a fault into. */
        int records = !(op == OP_DROPOUT && (c->param == 0.0f || c->eval));
        char label[128];
        pw_label(c, x[0], x[1], label, sizeof label);
        failed += grad_case_both(label, op, build_pw, (void *)c, x, n_leaves,
                            pw_tol(op), records);
        (*n_cases)++;
        gc_leaf_free(x[0]);
        gc_leaf_free(x[1]);
    }
    return failed;
}
