/* test_efficient_attention.c — linear and sparse attention against their definitions.
 *
 * 1. Linear attention (causal and bidirectional, every φ) against the quadratic
 *    form computed directly in double: A = φ(Q)φ(K)ᵀ (masked to j ≤ i when causal),
 *    out = A·V / (rowsum(A) + eps), with its gradients written out by hand.
 * 2. Sparse attention with k_local·block ≥ T against ad_attention with the causal mask.
 * 3. Sparse attention against ad_attention with eq. 6's visibility mask built
 *    explicitly (1-based, as the paper writes it) as a −inf additive mask.
 * 4. Cost: the visible (i, j) pairs at T = 4096 with the default block are
 *    O(T·(k·B + c·T/B)), far below T²/2, and the op's arena footprint is O(pairs).
 * 5. A timing table (printed, not asserted): linear vs softmax (vs sparse)
 *    attention, forward + backward, T = 256 … 4096, D = 64.
 * Also: grad mode off gives the same output, one tape entry, grads accumulate, and
 * inputs without a grad are skipped.
 *
 * Tolerances, all on O(1) values (inputs in ±1.5, outputs weighted means of v
 * rows), stated where used and observed on this machine:
 *   LIN_TOL 1e-5 relative to max(1, max|ref|): float against double.  The causal
 *     form adds up to T rank-1 terms into the state (S, z) and up to LIN_CHUNK (32)
 *     products into each entry of a chunk's GEMMs, so rounding grows like √T·ulp
 *     (T·ulp worst case, 4e-6 at T = 64 with |terms| ≤ 1); den's division and the
 *     backward's products add a few ulp more.  Observed ≤ 3.1e-7 (out) and 2e-7
 *     relative (gradients) at T ≤ 512.  T = 8 is one chunk, 33 two with a last
 *     chunk of one row, 64 exactly two, 40 and 100 end in a partial chunk, 512 is
 *     sixteen.
 *   SPARSE_TOL 5e-6 absolute: float against float, the same scores summed in a
 *     different order (fm_dot vs sgemm) and P·V accumulated in a different key
 *     order, so a few ulp per value; dv sums up to T such terms.  Observed ≤ 7.2e-7. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"
#include "check.h"
#include "gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LIN_TOL 1e-5
#define SPARSE_TOL 5e-6

static double max_abs_diff(const float *a, const float *b, long n) {
    double m = 0;
    for (long i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - (double)b[i]));
    return m;
}

static double max_abs(const double *a, long n) {
    double m = 0;
    for (long i = 0; i < n; i++) m = fmax(m, fabs(a[i]));
    return m;
}

/* A forward + backward's results, copied out of the tape and the leaves. */
typedef struct Result {
    float *out, *g[3];
    long n_out;
    int n_entries;
} Result;

static void result_free(Result *r) {
    free(r->out);
    for (int l = 0; l < 3; l++) free(r->g[l]);
}

/* Runs build on x with fresh zero grads, backward from dout, and copies all out. */
static Result forward_backward(Tape *t, GcBuildFn build, void *ctx, Tensor **x, const float *dout) {
    tape_reset(t);
    for (int l = 0; l < 3; l++) memset(x[l]->grad, 0, (size_t)x[l]->n * sizeof(float));
    Tensor *o = build(t, x, ctx);
    tape_backward_from(t, o, dout);
    Result r = { al_malloc((size_t)o->n * sizeof(float)), { NULL, NULL, NULL }, o->n, t->n };
    memcpy(r.out, o->data, (size_t)o->n * sizeof(float));
    for (int l = 0; l < 3; l++) {
        r.g[l] = al_malloc((size_t)x[l]->n * sizeof(float));
        memcpy(r.g[l], x[l]->grad, (size_t)x[l]->n * sizeof(float));
    }
    return r;
}

/* ============================================================================== */
/* 1. Linear attention against the quadratic form in double. */

typedef struct LinConfig {
    int B, H, T, D, Dv;
    AdFeature phi;
    int causal;
    float eps;
    uint64_t seed;
} LinConfig;

static const char *const PHI_NAME[] = { "elu+1", "identity", "relu" };

static double phi_d(AdFeature phi, double x) {
    return phi == FEATURE_ELU1 ? (x > 0 ? x + 1 : exp(x)) : phi == FEATURE_RELU ? fmax(x, 0) : x;
}
static double dphi_d(AdFeature phi, double x) {
    return phi == FEATURE_ELU1 ? (x > 0 ? 1 : exp(x)) : phi == FEATURE_RELU ? (x > 0) : 1;
}

typedef struct LinRef { double *out, *g[3]; } LinRef;

/* One (b, h) of the reference: q, k (T×D), v (T×Dv), g = dO (T×Dv) → out and dq,
 * dk, dv (written, not accumulated).  A and dA are T×T.
 *   den_i = Σ_j A_ij + eps,  out_i = Σ_j A_ij v_j / den_i,
 *   dA_ij = g_i·v_j/den_i − g_i·out_i/den_i,
 *   dF = dA·G, dG = dAᵀ·F, dv_j = Σ_i A_ij g_i/den_i, dq = dF∘φ′(q), dk = dG∘φ′(k). */
static void linear_reference_bh(const LinConfig *c, const float *q, const float *k, const float *v,
                                const float *g, double *out, double *dq, double *dk, double *dv) {
    const int T = c->T, D = c->D, Dv = c->Dv;
    double *A = calloc((size_t)T * T, sizeof(double)), *dA = calloc((size_t)T * T, sizeof(double));
    double *den = calloc((size_t)T, sizeof(double));
    for (int i = 0; i < T; i++) {
        den[i] = c->eps;
        for (int j = 0; j < T; j++) {
            if (c->causal && j > i) continue;
            double a = 0;
            for (int d = 0; d < D; d++) a += phi_d(c->phi, q[i * D + d]) * phi_d(c->phi, k[j * D + d]);
            A[i * T + j] = a;
            den[i] += a;
        }
        for (int e = 0; e < Dv; e++) {
            double s = 0;
            for (int j = 0; j < T; j++) s += A[i * T + j] * v[j * Dv + e];
            out[i * Dv + e] = s / den[i];
        }
    }
    for (int i = 0; i < T; i++) {
        double go = 0;
        for (int e = 0; e < Dv; e++) go += g[i * Dv + e] * out[i * Dv + e];
        for (int j = 0; j < T; j++) {
            if (c->causal && j > i) continue;
            double gv = 0;
            for (int e = 0; e < Dv; e++) gv += g[i * Dv + e] * v[j * Dv + e];
            dA[i * T + j] = (gv - go) / den[i];
        }
    }
    memset(dv, 0, (size_t)T * Dv * sizeof(double));
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++)
            for (int e = 0; e < Dv; e++) dv[j * Dv + e] += A[i * T + j] * g[i * Dv + e] / den[i];
    for (int i = 0; i < T; i++)
        for (int d = 0; d < D; d++) {
            double sq = 0, sk = 0;
            for (int j = 0; j < T; j++) {
                sq += dA[i * T + j] * phi_d(c->phi, k[j * D + d]);
                sk += dA[j * T + i] * phi_d(c->phi, q[j * D + d]);
            }
            dq[i * D + d] = sq * dphi_d(c->phi, q[i * D + d]);
            dk[i * D + d] = sk * dphi_d(c->phi, k[i * D + d]);
        }
    free(A);
    free(dA);
    free(den);
}

static Tensor *build_linear(Tape *t, Tensor **x, void *ctx) {
    const LinConfig *c = ctx;
    return ad_linear_attention(t, x[0], x[1], x[2], c->phi, c->causal, c->eps);
}

/* Leaves for a linear-attention config.  The identity map keeps k > 0 and q mostly
 * positive so the denominators stay far from 0 (its only sensible regime). */
static void linear_leaves(const LinConfig *c, Tensor **x) {
    const int ident = c->phi == FEATURE_IDENTITY;
    x[0] = gc_leaf(4, (const int[]){ c->B, c->H, c->T, c->D }, c->seed, ident ? -0.25f : -1.5f, 1.5f);
    x[1] = gc_leaf(4, (const int[]){ c->B, c->H, c->T, c->D }, c->seed + 1, ident ? 0.2f : -1.5f, 1.5f);
    x[2] = gc_leaf(4, (const int[]){ c->B, c->H, c->T, c->Dv }, c->seed + 2, -1.5f, 1.5f);
}

/* Grad mode off, one entry, accumulation, NULL grads: for any build on 3 leaves. */
static void check_tape_conventions(const char *what, GcBuildFn build, void *ctx, Tensor **x,
                                   const Result *full, const float *dout) {
    Arena arena;
    arena_init(&arena, 1 << 20);
    Tape t;
    tape_init(&t, &arena);
    CHECK(full->n_entries == 1, "%s: %d tape entries, want 1", what, full->n_entries);

    t.grad_enabled = 0;
    Tensor *o = build(&t, x, ctx);
    CHECK(o->grad == NULL && t.n == 0, "%s: grad mode off recorded something", what);
    CHECK(max_abs_diff(o->data, full->out, full->n_out) == 0, "%s: eval output differs", what);
    t.grad_enabled = 1;

    /* Grads start at 1: they must end at 1 + the gradient. */
    tape_reset(&t);
    for (int l = 0; l < 3; l++)
        for (long i = 0; i < x[l]->n; i++) x[l]->grad[i] = 1.0f;
    tape_backward_from(&t, build(&t, x, ctx), dout);
    double acc = 0;
    for (int l = 0; l < 3; l++)
        for (long i = 0; i < x[l]->n; i++)
            acc = fmax(acc, fabs((double)x[l]->grad[i] - 1.0 - (double)full->g[l][i]));
    CHECK(acc < 1e-5, "%s: gradients do not accumulate (off by %.2e)", what, acc);

    /* Only one input with a grad at a time: that grad is unchanged, the others skipped. */
    for (int keep = 0; keep < 3; keep++) {
        float *saved[3];
        for (int l = 0; l < 3; l++) {
            saved[l] = x[l]->grad;
            if (l != keep) x[l]->grad = NULL;
        }
        tape_reset(&t);
        memset(x[keep]->grad, 0, (size_t)x[keep]->n * sizeof(float));
        tape_backward_from(&t, build(&t, x, ctx), dout);
        double d = max_abs_diff(x[keep]->grad, full->g[keep], x[keep]->n);
        CHECK(d == 0, "%s: grad of input %d alone differs by %.2e", what, keep, d);
        for (int l = 0; l < 3; l++) x[l]->grad = saved[l];
    }
    tape_free(&t);
    arena_free(&arena);
}

static void check_linear(const LinConfig *c) {
    char what[96];
    snprintf(what, sizeof what, "%-8s %s B%d H%d T%d D%d Dv%d", PHI_NAME[c->phi],
             c->causal ? "causal" : "bidir ", c->B, c->H, c->T, c->D, c->Dv);
    Tensor *x[3];
    linear_leaves(c, x);
    const long BH = (long)c->B * c->H, nq = x[0]->n, nv = x[2]->n;
    Tensor *dout = gc_leaf(1, (const int[]){ (int)nv }, c->seed + 3, -1.0f, 1.0f);

    Arena arena;
    arena_init(&arena, 1 << 20);
    Tape t;
    tape_init(&t, &arena);
    Result r = forward_backward(&t, build_linear, (void *)c, x, dout->data);

    LinRef ref = { calloc((size_t)nv, sizeof(double)),
                   { calloc((size_t)nq, sizeof(double)), calloc((size_t)nq, sizeof(double)),
                     calloc((size_t)nv, sizeof(double)) } };
    const long qs = (long)c->T * c->D, vs = (long)c->T * c->Dv;
    for (long bh = 0; bh < BH; bh++)
        linear_reference_bh(c, x[0]->data + bh * qs, x[1]->data + bh * qs, x[2]->data + bh * vs,
                            dout->data + bh * vs, ref.out + bh * vs, ref.g[0] + bh * qs,
                            ref.g[1] + bh * qs, ref.g[2] + bh * vs);
    double err[4], worst = 0;
    const float *got[4] = { r.out, r.g[0], r.g[1], r.g[2] };
    const double *want[4] = { ref.out, ref.g[0], ref.g[1], ref.g[2] };
    const long n[4] = { nv, nq, nq, nv };
    static const char *const NAME[4] = { "out", "dq", "dk", "dv" };
    for (int a = 0; a < 4; a++) {
        err[a] = 0;
        for (long i = 0; i < n[a]; i++) err[a] = fmax(err[a], fabs((double)got[a][i] - want[a][i]));
        /* Relative to the size of what is compared, at least 1. */
        double rel = err[a] / fmax(1.0, max_abs(want[a], n[a]));
        worst = fmax(worst, rel);
        CHECK(rel <= LIN_TOL, "%s: %s off by %.2e (relative %.2e, tol %.0e)", what, NAME[a], err[a],
              rel, LIN_TOL);
    }
    printf("  %-40s out %.1e  dq %.1e  dk %.1e  dv %.1e  (max|dq| %.2g)\n", what, err[0], err[1],
           err[2], err[3], max_abs(ref.g[0], nq));
    check_tape_conventions(what, build_linear, (void *)c, x, &r, dout->data);

    result_free(&r);
    free(ref.out);
    for (int l = 0; l < 3; l++) {
        free(ref.g[l]);
        gc_leaf_free(x[l]);
    }
    gc_leaf_free(dout);
    tape_free(&t);
    arena_free(&arena);
}

/* ============================================================================== */
/* 2, 3. Sparse attention against ad_attention with a mask. */

typedef struct SparseConfig {
    int B, H, T, D, block, k_local, c;
    uint64_t seed;
} SparseConfig;

typedef struct SparseCtx {
    const SparseConfig *c;
    Tensor mask;   /* (T, T), for the dense reference */
} SparseCtx;

static Tensor *build_sparse(Tape *t, Tensor **x, void *ctx) {
    const SparseConfig *c = ((SparseCtx *)ctx)->c;
    return ad_sparse_attention(t, x[0], x[1], x[2], c->block, c->k_local, c->c,
                               1.0f / sqrtf((float)c->D));
}

static Tensor *build_dense(Tape *t, Tensor **x, void *ctx) {
    SparseCtx *s = ctx;
    return ad_attention(t, x[0], x[1], x[2], &s->mask, 1.0f / sqrtf((float)s->c->D));
}

/* Eq. 6 as the paper writes it, 1-based positions I = i + 1, J = j + 1:
 *   J ∈ I_I  ⇔  I − kB < J ≤ I  or  (J − 1) mod B ≥ B − c,   and J ≤ I (causal). */
static int eq6_visible(int i, int j, int B, int k, int c) {
    int I = i + 1, J = j + 1;
    return J <= I && (I - k * B < J || (J - 1) % B >= B - c);
}

/* mode 0: the causal mask (ad_causal_mask); mode 1: eq. 6's mask. */
static void check_sparse(const SparseConfig *c, int mode) {
    char what[96];
    snprintf(what, sizeof what, "B%d H%d T%d D%d blk%d k%d c%d vs %s", c->B, c->H, c->T, c->D,
             c->block, c->k_local, c->c, mode ? "eq.6 mask" : "causal");
    const int shape[4] = { c->B, c->H, c->T, c->D };
    Tensor *x[3] = { gc_leaf(4, shape, c->seed, -1.5f, 1.5f), gc_leaf(4, shape, c->seed + 1, -1.5f, 1.5f),
                     gc_leaf(4, shape, c->seed + 2, -1.5f, 1.5f) };
    Tensor *dout = gc_leaf(1, (const int[]){ (int)x[0]->n }, c->seed + 3, -1.0f, 1.0f);
    SparseCtx ctx = { .c = c };
    float *mask = al_malloc((size_t)c->T * c->T * sizeof(float));
    tensor_init(&ctx.mask, mask, NULL, 2, (const int[]){ c->T, c->T });
    if (mode == 0) {
        ad_causal_mask(&ctx.mask);
    } else {
        for (int i = 0; i < c->T; i++)
            for (int j = 0; j < c->T; j++)
                mask[(long)i * c->T + j] = eq6_visible(i, j, c->block, c->k_local, c->c) ? 0.0f : -INFINITY;
    }

    Arena arena;
    arena_init(&arena, 1 << 20);
    Tape t;
    tape_init(&t, &arena);
    Result rs = forward_backward(&t, build_sparse, &ctx, x, dout->data);
    Result rd = forward_backward(&t, build_dense, &ctx, x, dout->data);
    double err[4] = { max_abs_diff(rs.out, rd.out, rs.n_out), max_abs_diff(rs.g[0], rd.g[0], x[0]->n),
                      max_abs_diff(rs.g[1], rd.g[1], x[1]->n), max_abs_diff(rs.g[2], rd.g[2], x[2]->n) };
    static const char *const NAME[4] = { "out", "dq", "dk", "dv" };
    for (int a = 0; a < 4; a++)
        CHECK(err[a] <= SPARSE_TOL, "%s: %s differs by %.2e (tol %.0e)", what, NAME[a], err[a], SPARSE_TOL);
    printf("  %-44s out %.1e  dq %.1e  dk %.1e  dv %.1e\n", what, err[0], err[1], err[2], err[3]);
    if (mode == 1) check_tape_conventions(what, build_sparse, &ctx, x, &rs, dout->data);

    result_free(&rs);
    result_free(&rd);
    free(mask);
    for (int l = 0; l < 3; l++) gc_leaf_free(x[l]);
    gc_leaf_free(dout);
    tape_free(&t);
    arena_free(&arena);
}

/* ============================================================================== */
/* 4. Cost. */

/* docs/design.md decision 7: the default block: 2^⌊log2 √L⌋. */
static int default_block(int L) {
    int b = 1;
    while ((long)(2 * b) * (2 * b) <= L) b *= 2;
    return b;
}

static void check_cost(void) {
    const int T = 4096, D = 64, B = default_block(T), k = 1, c = 1;
    long pairs = 0;
    for (int i = 0; i < T; i++)
        for (int j = 0; j <= i; j++) pairs += eq6_visible(i, j, B, k, c);
    const long full = (long)T * (T + 1) / 2;
    const long bound = (long)T * (k * B + c * ((T + B - 1) / B));
    printf("cost at T %d, block %d (k %d, c %d): %ld visible pairs, bound T·(kB + c⌈T/B⌉) = %ld, "
           "causal T(T+1)/2 = %ld (%.1f%%)\n", T, B, k, c, pairs, bound, full, 100.0 * pairs / full);
    CHECK(B == 64, "default block at T 4096 is %d, want 64", B);
    CHECK(pairs <= bound, "visible pairs %ld exceed T·(kB + c·T/B) = %ld", pairs, bound);
    CHECK(pairs * 10 < full, "visible pairs %ld are not ≪ T²/2 = %ld", pairs, full);

    /* The op's own memory: output + its grad, the lists (T + 1 offsets, one int per
     * pair), P (one float per pair), a row scratch.  A T×T anything would be 64 MB. */
    const int shape[4] = { 1, 1, T, D };
    Tensor *x[3] = { gc_leaf(4, shape, 1, -1.0f, 1.0f), gc_leaf(4, shape, 2, -1.0f, 1.0f),
                     gc_leaf(4, shape, 3, -1.0f, 1.0f) };
    Arena arena;
    arena_init(&arena, 64 << 20);
    Tape t;
    tape_init(&t, &arena);
    size_t before = arena_in_use(&arena);
    ad_sparse_attention(&t, x[0], x[1], x[2], B, k, c, 0.125f);
    size_t used = arena_in_use(&arena) - before;
    size_t expect = 2 * (size_t)T * D * sizeof(float) + (size_t)(T + 1) * sizeof(long) +
                    (size_t)pairs * (sizeof(int) + sizeof(float));
    printf("  arena use of one call with grad: %zu bytes (outputs + lists + P = %zu; T×T floats = %zu)\n",
           used, expect, (size_t)T * T * sizeof(float));
    CHECK(used <= expect + 64 * 1024, "sparse attention used %zu arena bytes, expected ≤ %zu + 64 KiB",
          used, expect);
    tape_free(&t);
    arena_free(&arena);
    for (int l = 0; l < 3; l++) gc_leaf_free(x[l]);
}

/* ============================================================================== */
/* 5. Timing (printed only). */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef enum Kind { K_LINEAR, K_SOFTMAX, K_SPARSE } Kind;

/* Best of `reps` forward + backward passes, in ms. */
static double time_fb(Kind kind, Tape *t, Tensor **x, const Tensor *mask, int block, const float *dout,
                      int reps) {
    double best = INFINITY;
    const float scale = 1.0f / sqrtf((float)x[0]->shape[3]);
    for (int r = 0; r < reps; r++) {
        tape_reset(t);
        double t0 = now_s();
        Tensor *o = kind == K_LINEAR  ? ad_linear_attention(t, x[0], x[1], x[2], FEATURE_ELU1, 1, 1e-6f)
                  : kind == K_SOFTMAX ? ad_attention(t, x[0], x[1], x[2], mask, scale)
                                      : ad_sparse_attention(t, x[0], x[1], x[2], block, 1, 1, scale);
        tape_backward_from(t, o, dout);
        best = fmin(best, 1e3 * (now_s() - t0));
    }
    return best;
}

static void timing_table(void) {
    const int D = 64, T_MAX = 4096;
    printf("timing, forward + backward, B·H = 1, D = Dv = 64, causal, best of 3 (ms; ×: vs T/2):\n");
    printf("  %6s  %16s  %16s  %16s\n", "T", "linear (elu+1)", "softmax", "sparse (def. B)");
    const int shape[4] = { 1, 1, T_MAX, D };
    Tensor *xs[3] = { gc_leaf(4, shape, 7, -1.0f, 1.0f), gc_leaf(4, shape, 8, -1.0f, 1.0f),
                      gc_leaf(4, shape, 9, -1.0f, 1.0f) };
    float *dout = al_malloc((size_t)T_MAX * D * sizeof(float));
    for (long i = 0; i < (long)T_MAX * D; i++) dout[i] = xs[0]->data[i];
    float *mask = al_malloc((size_t)T_MAX * T_MAX * sizeof(float));
    Arena arena;
    arena_init(&arena, 1 << 20);
    Tape t;
    tape_init(&t, &arena);
    double prev[3] = { 0, 0, 0 };
    for (int T = 256; T <= T_MAX; T *= 2) {
        /* Views of the first T rows of the big leaves. */
        Tensor x[3], *xp[3];
        for (int l = 0; l < 3; l++) {
            tensor_init(&x[l], xs[l]->data, xs[l]->grad, 4, (const int[]){ 1, 1, T, D });
            xp[l] = &x[l];
        }
        Tensor m;
        tensor_init(&m, mask, NULL, 2, (const int[]){ T, T });
        ad_causal_mask(&m);
        double ms[3];
        for (int kind = 0; kind < 3; kind++)
            ms[kind] = time_fb((Kind)kind, &t, xp, &m, default_block(T), dout, 3);
        printf("  %6d", T);
        for (int kind = 0; kind < 3; kind++) {
            if (prev[kind] > 0) printf("  %8.2f (×%4.1f)", ms[kind], ms[kind] / prev[kind]);
            else printf("  %8.2f        ", ms[kind]);
            prev[kind] = ms[kind];
        }
        printf("\n");
    }
    tape_free(&t);
    arena_free(&arena);
    free(mask);
    free(dout);
    for (int l = 0; l < 3; l++) gc_leaf_free(xs[l]);
}

/* ============================================================================== */

int main(void) {
    static const LinConfig lin[] = {
        { 1, 1,  8, 4, 4, FEATURE_ELU1,     1, 1e-6f, 1 },
        { 2, 3, 33, 8, 5, FEATURE_ELU1,     1, 1e-6f, 2 },   /* D ≠ Dv, B·H > 1 */
        { 2, 3, 33, 8, 5, FEATURE_ELU1,     0, 1e-6f, 3 },
        { 1, 2, 64, 16, 16, FEATURE_ELU1,   1, 1e-6f, 4 },
        { 1, 2, 64, 16, 16, FEATURE_ELU1,   0, 1e-6f, 5 },
        { 1, 1, 512, 16, 16, FEATURE_ELU1,  1, 1e-6f, 11 },  /* a long scan: rounding drift */
        { 2, 2, 40, 8, 12, FEATURE_ELU1,    1, 0.5f,  6 },   /* eps that matters */
        { 2, 2, 40, 8, 6, FEATURE_IDENTITY, 1, 1e-6f, 7 },
        { 2, 2, 40, 8, 6, FEATURE_IDENTITY, 0, 1e-6f, 8 },
        { 2, 2, 40, 8, 6, FEATURE_RELU,     1, 1e-6f, 9 },
        { 2, 2, 40, 8, 6, FEATURE_RELU,     0, 1e-6f, 10 },
        { 1, 2, 100, 8, 6, FEATURE_RELU,    1, 1e-6f, 12 },  /* three full chunks and 4 rows */
    };
    printf("linear attention, max |op − double reference| (tol %.0e relative to max(1, max|ref|)):\n",
           LIN_TOL);
    for (size_t i = 0; i < sizeof lin / sizeof lin[0]; i++) check_linear(&lin[i]);

    /* k_local·block ≥ T: the window covers everything, so this is causal attention. */
    static const SparseConfig full[] = {
        { 1, 1, 16, 8, 4, 4, 0, 11 },    /* c 0: window alone, exactly T */
        { 2, 2, 24, 16, 8, 3, 1, 12 },   /* window 24 = T */
        { 1, 3, 20, 8, 32, 1, 1, 13 },   /* T < block */
        { 2, 1, 50, 16, 8, 7, 2, 14 },   /* window 56 > T, block ∤ T */
    };
    printf("sparse attention with k_local·block ≥ T vs ad_attention + causal mask (tol %.0e):\n",
           SPARSE_TOL);
    for (size_t i = 0; i < sizeof full / sizeof full[0]; i++) check_sparse(&full[i], 0);

    static const SparseConfig eq6[] = {
        { 1, 1, 37, 8, 4, 1, 1, 21 },    /* the defaults' pattern, block ∤ T */
        { 2, 2, 64, 16, 8, 1, 1, 22 },   /* default block for T 64 */
        { 1, 2, 40, 8, 8, 1, 2, 23 },
        { 2, 1, 33, 8, 4, 2, 0, 24 },    /* c 0: sliding window only */
        { 1, 2, 30, 8, 5, 2, 3, 25 },
        { 1, 1, 45, 8, 4, 1, 4, 26 },    /* c = block: every key a summary */
        { 2, 2, 12, 8, 4, 0, 1, 27 },    /* k 0: queries 0–2 see nothing → zeros */
        { 1, 1, 96, 32, 8, 2, 1, 28 },
        { 2, 1, 41, 12, 6, 1, 1, 29 },   /* D 12: one 8-wide column block and 4 single columns */
        { 1, 2, 29, 4, 4, 2, 1, 30 },    /* D 4 (width 16, 4 heads): single columns only */
    };
    printf("sparse attention vs ad_attention + eq. 6 mask (tol %.0e):\n", SPARSE_TOL);
    for (size_t i = 0; i < sizeof eq6 / sizeof eq6[0]; i++) check_sparse(&eq6[i], 1);

    check_cost();
    timing_table();
    return check_exit("efficient_attention");
}
