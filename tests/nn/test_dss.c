/* test_dss.c — the DSS layer's three forms agree (Gupta, Gu & Berant 2022, "Diagonal
 * State Spaces are as Effective as Structured State Spaces", §3.3 DSS-softmax).
 *
 *  1. The paper's definition: K[l] = Re Σ_n W_n·Λ_n⁻¹·e^{ΔΛ_n·l} / Σ_{k<L} e^{ΔΛ_n·k},
 *     the softmax summed term by term in double, here — against ad_dss_kernel's closed
 *     form with its flipped growing modes and the reference code's ε (which moves a
 *     value by ε/|den·Λ|², ≤ 1e-6 relative at these settings).
 *  2. The convolution y = K * u + D ⊙ u (ad_causal_conv on that kernel) against the
 *     recurrence stepped one position at a time, in double:
 *        x_k = e^{ΔΛ}·x_{k−1} + u_k,   y_k = Re Σ_n C_n·x_{k,n} + D·u_k,
 *     with the softmax normalisation folded into C (ad_dss_modes):
 *        K[l] = Re(coef·e^{b·m(l)}); for Re Λ ≤ 0, b = ΔΛ and m(l) = l, so C = coef;
 *        for Re Λ > 0, b = −ΔΛ and m(l) = L−1−l, e^{b(L−1−l)} = e^{b(L−1)}·e^{ΔΛ·l},
 *        so C = coef·e^{b(L−1)} (the state grows like e^{Δ·Re Λ·k}, C shrinks it back).
 *     Unrolled, x_k = Σ_{j≤k} e^{ΔΛ(k−j)} u_j and Re(C·x_k) = Σ_j K[k−j]·u_j.  To 1e-5
 *     relative, with modes of both signs of Re Λ, and at the model's init (skew-HiPPO
 *     Λ with |Im Λ| up to 10³, T = L = 64).  With C kernels per channel
 *     (model.dss.channels) both checks run over the C·d columns, column c reading
 *     channel c % d with that channel's Δ and its own W row and D.
 *  3. The init: Λ = −1/2 + iω with ω the skew-HiPPO eigenvalues — for N = 1 by hand
 *     (S = [[0, −√3/2], [√3/2, 0]]: ω = √3/2), for N = 64 through the trace identities
 *     Σ ω² = ‖S‖²_F / 2 and Σ ω⁴ = ‖SᵀS‖²_F / 2 (each ±iω pair counted once), and
 *     ω sorted decreasing; and each ω at N = 64 and 128 against cyclic Jacobi rotations
 *     of SᵀS here (a different algorithm from the model's Householder + QL), to float
 *     rounding. */
#include "check.h"
#include "attnlab/config/config.h"
#include "attnlab/nn/model.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Params { Tensor *lambda, *log_dt, *w, *D; int N, d, C; } Params;

static Tensor *heap_tensor(int ndim, const int *shape) {
    Tensor *x = calloc(1, sizeof *x);
    long n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    tensor_init(x, calloc((size_t)n, sizeof(float)), NULL, ndim, shape);
    return x;
}

static void free_tensor(Tensor *x) {
    free(x->data);
    free(x);
}

/* Random parameters: Re Λ alternating sign (|Re Λ| in [0.1, 1.1]), Im Λ in ±im; C
 * kernels per channel. */
static Params random_params(int N, int d, int C, float im, Rng *r) {
    int cols = C * d;
    Params p = { heap_tensor(2, (int[]){N, 2}), heap_tensor(2, (int[]){d, 2}), heap_tensor(4, (int[]){C, d, N, 2}),
                 heap_tensor(1, &cols), N, d, C };
    for (int n = 0; n < N; n++) {
        p.lambda->data[2 * n] = (float)((n % 2 ? 1 : -1) * (0.1 + rng_uniform(r)));
        p.lambda->data[2 * n + 1] = (float)(im * (2 * rng_uniform(r) - 1));
    }
    for (int i = 0; i < 2 * d; i++) p.log_dt->data[i] = (float)(log(0.02) + rng_uniform(r) * log(0.5 / 0.02));
    for (long i = 0; i < p.w->n; i++) p.w->data[i] = (float)rng_normal(r);
    for (int c = 0; c < cols; c++) p.D->data[c] = (float)rng_normal(r);
    return p;
}

static void free_params(Params *p) {
    free_tensor(p->lambda), free_tensor(p->log_dt), free_tensor(p->w), free_tensor(p->D);
}

/* 1: the kernel against the softmax summed term by term. */
static void check_definition(const char *what, const Params *p, int T, int L) {
    Arena a;
    arena_init(&a, 1 << 20);
    Tape t;
    tape_init(&t, &a);
    t.grad_enabled = 0;
    Tensor *k = ad_dss_kernel(&t, p->lambda, p->log_dt, p->w, T, L);
    double worst = 0;
    const int cols = p->C * p->d;
    for (int c = 0; c < cols; c++) {
        double complex *terms = calloc((size_t)T, sizeof *terms);
        const float *dt = p->log_dt->data + 2 * (c % p->d);   /* the column's channel's steps */
        for (int n = 0; n < p->N; n++) {
            double complex lam = p->lambda->data[2 * n] + I * (double)p->lambda->data[2 * n + 1];
            double complex a = exp(dt[0]) * creal(lam) + I * exp(dt[1]) * cimag(lam);
            double complex w = p->w->data[2 * (c * p->N + n)] + I * (double)p->w->data[2 * (c * p->N + n) + 1];
            double complex z = 0;
            for (int j = 0; j < L; j++) z += cexp(a * j);
            for (int l = 0; l < T; l++) terms[l] += w / lam * cexp(a * l) / z;
        }
        for (int l = 0; l < T; l++) {
            double want = creal(terms[l]), got = k->data[(size_t)l * cols + c];
            worst = fmax(worst, fabs(got - want) / (1 + fabs(want)));
        }
        free(terms);
    }
    printf("  %-46s kernel vs definition: max rel diff %.2e\n", what, worst);
    CHECK(worst < 1e-5, "%s: ad_dss_kernel differs from W·Λ⁻¹·softmax by %.2e", what, worst);
    tape_free(&t);
    arena_free(&a);
}

/* 2: the convolution against the recurrence, B rows of random u. */
static void check_recurrence(const char *what, const Params *p, int B, int T, int L, Rng *r) {
    Arena a;
    arena_init(&a, 1 << 20);
    Tape t;
    tape_init(&t, &a);
    t.grad_enabled = 0;
    int d = p->d, N = p->N, cols = p->C * d;
    Tensor *u = tape_tensor(&t, 0, 3, (int[]){B, T, d});
    for (long i = 0; i < u->n; i++) u->data[i] = (float)rng_normal(r);
    Tensor *y = ad_causal_conv(&t, u, ad_dss_kernel(&t, p->lambda, p->log_dt, p->w, T, L), p->D);
    double *z = malloc((size_t)2 * cols * N * sizeof(double)), *C = malloc((size_t)2 * cols * N * sizeof(double));
    ad_dss_modes(p->lambda, p->log_dt, p->w, L, z, C);
    double complex *x = malloc((size_t)cols * N * sizeof *x);   /* one state per column */
    double worst = 0;
    for (int b = 0; b < B; b++) {
        memset(x, 0, (size_t)cols * N * sizeof *x);
        for (int k = 0; k < T; k++)
            for (int c = 0; c < cols; c++) {
                double uk = u->data[((size_t)b * T + k) * d + c % d], yk = p->D->data[c] * uk;
                for (int n = 0; n < N; n++) {
                    size_t i = (size_t)c * N + n;
                    x[i] = (z[2 * i] + I * z[2 * i + 1]) * x[i] + uk;
                    yk += creal((C[2 * i] + I * C[2 * i + 1]) * x[i]);
                }
                double got = y->data[((size_t)b * T + k) * cols + c];
                worst = fmax(worst, fabs(got - yk) / (1 + fabs(yk)));
            }
    }
    printf("  %-46s convolution vs recurrence: max rel diff %.2e\n", what, worst);
    CHECK(worst < 1e-5, "%s: the convolution differs from the recurrence by %.2e", what, worst);
    free(x), free(z), free(C);
    tape_free(&t);
    arena_free(&a);
}

/* A DSS of `layers` blocks, N modes, width d, initial Re Λ re (the default: −1/2). */
static Model *dss_model_with(int N, int d, int max_len, int layers, float re) {
    Config c;
    cfg_defaults(&c);
    c.model.type = MODEL_DSS;
    c.model.d_model = d;
    c.model.n_layers = layers;
    c.model.dss.d_state = N;
    c.model.dss.lambda_re = re;
    return model_create(&c.model, 5, 5, max_len, 7);
}

static Model *dss_model(int N, int d, int max_len) { return dss_model_with(N, d, max_len, 1, -0.5f); }

/* S = (H − Hᵀ)/2 of the M × M HiPPO-LegS matrix, and SᵀS into A (both M × M, zeroed). */
static void skew_hippo_gram(int M, double *S, double *A) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < i; j++) S[i * M + j] = sqrt((2.0 * i + 1) * (2.0 * j + 1)) / 2, S[j * M + i] = -S[i * M + j];
    for (int i = 0; i < M; i++)
        for (int k = 0; k < M; k++)
            for (int j = 0; j < M; j++) A[i * M + j] += S[k * M + i] * S[k * M + j];
}

/* Cyclic Jacobi rotations of the symmetric A (M × M, destroyed) until it is diagonal to
 * rounding; its eigenvalues into ev, sorted decreasing. */
static int desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}
static void jacobi_eigenvalues(double *A, int M, double *ev) {
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0, all = 0;
        for (int p = 0; p < M * M; p++) all += A[p] * A[p], off += p % (M + 1) ? A[p] * A[p] : 0;
        if (off <= 1e-30 * all) break;
        for (int p = 0; p < M; p++)
            for (int q = p + 1; q < M; q++) {
                double apq = A[p * M + q];
                if (apq == 0) continue;
                double theta = (A[q * M + q] - A[p * M + p]) / (2 * apq);
                double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < M; k++) {
                    double akp = A[k * M + p], akq = A[k * M + q];
                    A[k * M + p] = c * akp - s * akq, A[k * M + q] = s * akp + c * akq;
                }
                for (int k = 0; k < M; k++) {
                    double apk = A[p * M + k], aqk = A[q * M + k];
                    A[p * M + k] = c * apk - s * aqk, A[q * M + k] = s * apk + c * aqk;
                }
            }
    }
    for (int i = 0; i < M; i++) ev[i] = A[i * M + i];
    qsort(ev, (size_t)M, sizeof *ev, desc);
}

/* The model's ω for N modes against Jacobi on SᵀS: each pair of equal eigenvalues ω². */
static void check_init_jacobi(int N) {
    const int M = 2 * N;
    Model *m = dss_model(N, 2, 8);
    const Tensor *lam = &params_find(&m->params, "layers.0.layer.kernel.Lambda")->t;
    double *S = calloc((size_t)M * M, sizeof(double)), *A = calloc((size_t)M * M, sizeof(double));
    double *ev = calloc((size_t)M, sizeof(double)), worst = 0;
    skew_hippo_gram(M, S, A);
    jacobi_eigenvalues(A, M, ev);
    for (int n = 0; n < N; n++) {
        float want = (float)sqrt(fmax(0.5 * (ev[2 * n] + ev[2 * n + 1]), 0.0));
        worst = fmax(worst, fabsf(lam->data[2 * n + 1] - want) / (nextafterf(want, INFINITY) - want));
    }
    printf("  skew-HiPPO N %d: largest difference from Jacobi %.0f float ulp\n", N, worst);
    CHECK(worst <= 1, "N = %d: omega differs from Jacobi by %.0f float ulp (rounding allows 1)", N, worst);
    free(S), free(A), free(ev);
    model_free(m);
}

/* 3: the skew-HiPPO init. */
static void check_init(void) {
    Model *m = dss_model(1, 2, 8);
    const Tensor *lam = &params_find(&m->params, "layers.0.layer.kernel.Lambda")->t;
    CHECK(lam->data[0] == -0.5f && fabs(lam->data[1] - sqrt(3.0) / 2) < 1e-6, "N = 1: Λ = %g%+gi, want -0.5%+gi",
          lam->data[0], lam->data[1], sqrt(3.0) / 2);
    model_free(m);
    m = dss_model_with(3, 2, 8, 2, -0.05f);   /* model.dss.lambda_re moves Re Λ of every mode, not Im Λ */
    int moved = 1;
    for (int l = 0; l < 2; l++) {
        char name[64];
        snprintf(name, sizeof name, "layers.%d.layer.kernel.Lambda", l);
        lam = &params_find(&m->params, name)->t;
        for (int n = 0; n < 3; n++) moved &= lam->data[2 * n] == -0.05f && lam->data[2 * n + 1] > 0;
    }
    CHECK(moved, "model.dss.lambda_re -0.05: every layer's Re Λ must start at -0.05 (Im Λ positive)");
    model_free(m);

    const int N = 64, M = 2 * N;
    m = dss_model(N, 4, 8);
    lam = &params_find(&m->params, "layers.0.layer.kernel.Lambda")->t;
    double *S = calloc((size_t)M * M, sizeof(double)), *A = calloc((size_t)M * M, sizeof(double));
    double s2 = 0, s4 = 0, w2 = 0, w4 = 0;
    skew_hippo_gram(M, S, A);
    for (int p = 0; p < M * M; p++) s2 += S[p] * S[p], s4 += A[p] * A[p];
    int sorted = 1, real_ok = 1;
    for (int n = 0; n < N; n++) {
        double w = lam->data[2 * n + 1];
        w2 += w * w, w4 += w * w * w * w;
        real_ok &= lam->data[2 * n] == -0.5f;
        if (n) sorted &= w <= lam->data[2 * n - 1];
    }
    printf("  skew-HiPPO N 64: omega %.4f .. %.4f; sum w^2 %.6e vs %.6e, sum w^4 %.6e vs %.6e\n",
           lam->data[2 * N - 1], lam->data[1], w2, s2 / 2, w4, s4 / 2);
    CHECK(real_ok && sorted && lam->data[2 * N - 1] > 0, "N = 64: Re Λ must be -0.5 and Im Λ positive, decreasing");
    CHECK(fabs(w2 - s2 / 2) < 1e-6 * s2 && fabs(w4 - s4 / 2) < 1e-5 * s4,
          "N = 64: trace identities fail (%.9e vs %.9e, %.9e vs %.9e)", w2, s2 / 2, w4, s4 / 2);
    free(S), free(A);
    model_free(m);
}

/* The recurrence at the model's own init (large Im Λ, every Re Λ = −1/2). */
static void check_init_recurrence(Rng *r) {
    const int T = 64;
    Model *m = dss_model(64, 6, T);
    const DssLayer *L = &m->dss[0];
    Params p = { L->lambda, L->log_dt, L->w, L->D, 64, 6, 1 };
    check_recurrence("model init, N 64, d 6, T = L = 64", &p, 2, T, T, r);
    model_free(m);
}

int main(void) {
    Rng r = rng_stream(5, 5);
    static const struct { int N, d, C, B, T, L; float im; } cases[] = {
        { 4, 3, 1, 2, 9, 9, 3.0f },     /* T = L */
        { 6, 5, 1, 3, 7, 12, 8.0f },    /* T < L: a prefix of the kernel */
        { 3, 2, 1, 1, 1, 5, 2.0f },     /* one position */
        { 8, 4, 1, 2, 40, 40, 20.0f },  /* growing modes over 40 steps: e^{Δ·Re Λ·39} up to e^{21} */
        { 5, 3, 3, 2, 11, 14, 8.0f },   /* three kernels per channel */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char what[96];
        snprintf(what, sizeof what, "N %d, d %d, C %d, B %d, T %d, L %d, |Im| <= %g", cases[i].N, cases[i].d,
                 cases[i].C, cases[i].B, cases[i].T, cases[i].L, cases[i].im);
        Params p = random_params(cases[i].N, cases[i].d, cases[i].C, cases[i].im, &r);
        check_definition(what, &p, cases[i].T, cases[i].L);
        check_recurrence(what, &p, cases[i].B, cases[i].T, cases[i].L, &r);
        free_params(&p);
    }
    check_init_recurrence(&r);
    check_init();
    check_init_jacobi(64);
    check_init_jacobi(128);
    return check_exit("test_dss");
}
