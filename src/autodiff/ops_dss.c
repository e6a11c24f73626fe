/* ops_dss.c — the two ops of a DSS layer (Gupta, Gu & Berant 2022, "Diagonal State
 * Spaces are as Effective as Structured State Spaces"; docs/design.md decision 10):
 * the DSS-softmax convolution kernel from (Λ, log Δ, W), and the causal depthwise
 * convolution y = K * u + D ⊙ u.
 *
 * Kernel (the paper's §3.3 "DSS-softmax", K = W · Λ⁻¹ · row-softmax(P), P_{n,k} =
 * ΔΛ_n·k over the positions k = 0 … L−1; its code's DSSKernel, version "softmax").
 * W (C, d, N) gives each of the d features C kernels (the code's `channels`): kernel
 * column c = k·d + h is feature h's k-th, with feature h's steps.  Per column c and
 * mode n, with the separate steps Δr = e^{log_dt[h,0]} of Re Λ and Δi = e^{log_dt[h,1]}
 * of Im Λ (the code's sep_dt_re_im):
 *   a   = Δr·Re Λ_n + i·Δi·Im Λ_n
 *   b   = a if Re Λ_n ≤ 0, else −a            (the code flips growing modes so that
 *                                              every exponential below is ≤ 1)
 *   num = e^b − 1,  den = e^{bL} − 1           (1/Σ_{k<L} e^{bk} = num/den)
 *   q   = den·Λ_n,  r = conj(q)/(|q|² + ε)     (the code's reciprocal(), ε = 1e-7)
 *   coef = W[c,n]·num·r
 *   K[l, c] = Re Σ_n coef·e^{b·m(l)},  m(l) = l (Re Λ ≤ 0) or L − 1 − l (Re Λ > 0)
 * For Re Λ > 0 this is the softmax shifted by its largest exponent (ΔΛ(L−1)), the
 * same values.  L is the normalising length (the model's longest sequence: the
 * kernel of a shorter input is the prefix of this one, so the layer is causal and
 * decodes step by step; dss.c).  All of it runs in double — the phases Δi·Im Λ·l
 * reach 10⁴ rad at the skew-HiPPO init — and K is rounded to float once.
 * e^{b·m(l)} is a power of e^b: one complex multiply per position, walking l up
 * (m = l) or down (m = L − 1 − l, starting from e^{b(L−T)}).  The forward keeps
 * every mode's e^b and e^{bL} for the backward, which computed them again before: the
 * complex exponentials were about an eighth of a DSS training step at N = 20; keeping them
 * makes the step 10% faster with the same bits.  A feature's C kernels differ only in
 * W: its modes' exponentials and powers are computed once and read by all C columns
 * (at C 4, N 256, d 128 a training step is about 12% faster than one walk per column).
 *
 * Backward, with gradients of a real loss written as complex numbers ḡ = ∂/∂re +
 * i·∂/∂im (for a holomorphic w = f(z): ḡ_z = conj(f′(z))·ḡ_w):
 *   A0 = Σ_l dK[l,c]·conj(e^{b m(l)}),  A1 = Σ_l dK[l,c]·m(l)·conj(e^{b m(l)})
 *   ḡ_coef = A0;  ḡ_b = conj(coef)·A1 + conj(e^b)·ḡ_num + L·conj(e^{bL})·ḡ_den
 *   ḡ_W = conj(num·r)·A0, ḡ_num = conj(W·r)·A0, ḡ_r = conj(W·num)·A0
 *   r is not holomorphic: ḡ_q = (−q²·ḡ_r + ε·conj(ḡ_r)) / (|q|² + ε)²
 *   ḡ_den = conj(Λ)·ḡ_q, ḡ_Λ += conj(den)·ḡ_q;  ḡ_a = ±ḡ_b
 *   Re Λ += Δr·Re ḡ_a, Im Λ += Δi·Im ḡ_a, log_dt[h] += (Δr·Re Λ·Re ḡ_a, Δi·Im Λ·Im ḡ_a)
 *   (log_dt[h] summed over its C columns).
 *
 * Convolution: u (B, T, d), K (T, C·d), D (C·d) → y (B, T, C·d), column c = k·d + h
 * reading feature h:
 *   y[b,t,c] = D[c]·u[b,t,h] + Σ_{s=0..t} K[s,c]·u[b,t−s,h]
 * directly, O(T²·C·d) per row, in register tiles of positions × features (K is
 * position-major for that; see "causal depthwise convolution" below).  Backward: du[b,j,h] = Σ_k (D⊙dy[b,j] + Σ_s K[s]⊙dy[b,j+s])[k·d + h];
 * dK[s] = Σ_{b,t≥s} dy[b,t]⊙u[b,t−s] (u repeated C times); dD = Σ_{b,t} dy⊙u. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"
#include "attnlab/util/fastmath.h"

#include "record.h"

#include <complex.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#define DSS_EPS 1e-7   /* the reference code's reciprocal() epsilon */

typedef struct DssDims { int N, d, C; } DssDims;   /* modes, features, kernels per feature */

static DssDims dss_dims(const Tensor *lambda, const Tensor *log_dt, const Tensor *w) {
    AL_ASSERT(lambda->ndim == 2 && lambda->shape[1] == 2 && log_dt->ndim == 2 && log_dt->shape[1] == 2);
    DssDims d = { lambda->shape[0], log_dt->shape[0], w->shape[0] };
    AL_ASSERT(w->ndim == 4 && w->n == 2L * d.C * d.d * d.N);
    return d;
}

/* One mode (feature h, n): everything the kernel, its backward and the recurrence
 * need; w and coef are those of one of the feature's C columns (mode_column). */
typedef struct DssMode {
    double complex lam, a, b, e1, eL, num, den, q, r, w, coef;
    double dtr, dti, n2;
    int flip;   /* Re Λ > 0: b = −a and m(l) = L − 1 − l */
} DssMode;

/* e: NULL, or the mode's (e^b, e^{bL}) pair — read when cached (the forward's, for the
 * backward: the two complex exponentials are most of a mode's cost), else written.
 * Everything here depends on the feature h, not on which of its C kernels: computed
 * once, shared by the C columns. */
static DssMode dss_mode(const Tensor *lambda, const Tensor *log_dt, int h, int n, int L, double complex *e,
                        int cached) {
    DssMode m;
    const float *lm = lambda->data + 2 * n, *dt = log_dt->data + 2 * h;
    m.lam = lm[0] + I * (double)lm[1];
    m.dtr = exp((double)dt[0]);
    m.dti = exp((double)dt[1]);
    m.a = m.dtr * creal(m.lam) + I * (m.dti * cimag(m.lam));
    m.flip = creal(m.lam) > 0;
    m.b = m.flip ? -m.a : m.a;
    if (e && cached) {
        m.e1 = e[0];
        m.eL = e[1];
    } else {
        m.e1 = cexp(m.b);
        m.eL = cexp(m.b * L);
        if (e) e[0] = m.e1, e[1] = m.eL;
    }
    m.num = m.e1 - 1;
    m.den = m.eL - 1;
    m.q = m.den * m.lam;
    m.n2 = creal(m.q) * creal(m.q) + cimag(m.q) * cimag(m.q) + DSS_EPS;
    m.r = conj(m.q) / m.n2;
    return m;
}

/* The mode's W and coefficient in kernel column c (= k·d + h). */
static void mode_column(DssMode *m, const Tensor *w, DssDims d, int c, int n) {
    const float *wt = w->data + 2 * ((size_t)c * d.N + n);
    m->w = wt[0] + I * (double)wt[1];
    m->coef = m->w * m->num * m->r;
}

/* Modes handled together: each mode's powers are a chain of dependent complex
 * multiplies, so walking one mode at a time waits on each product's latency; a
 * block's chains are walked side by side, each mode's in its own order (the same
 * products as one at a time). */
#define DSS_MODE_BLOCK 8

/* e^{b·m(l)} for l = 0 … T−1 of the nb modes m into s (nb, T). */
static void mode_powers(const DssMode *m, int nb, int T, int L, double complex *s) {
    for (int j = 0; j < nb; j++) {
        double complex *sj = s + (size_t)j * T;
        if (m[j].flip) sj[T - 1] = cexp(m[j].b * (L - T));
        else sj[0] = 1;
    }
    for (int i = 1; i < T; i++)
        for (int j = 0; j < nb; j++) {
            double complex *sj = s + (size_t)j * T;
            if (m[j].flip) sj[T - 1 - i] = sj[T - i] * m[j].e1;   /* walking down from e^{b(L−T)} */
            else sj[i] = sj[i - 1] * m[j].e1;
        }
}

static int mode_block(int n0, int N) { return N - n0 < DSS_MODE_BLOCK ? N - n0 : DSS_MODE_BLOCK; }

void ad_dss_modes(const Tensor *lambda, const Tensor *log_dt, const Tensor *w, int L, double *z, double *C) {
    DssDims d = dss_dims(lambda, log_dt, w);
    for (int h = 0; h < d.d; h++)
        for (int n = 0; n < d.N; n++) {
            DssMode m = dss_mode(lambda, log_dt, h, n, L, NULL, 0);   /* once for the feature's C columns */
            /* K[l] = Re(coef·e^{b m(l)}) = Re(C·e^{a l}) with C = coef, or coef·e^{b(L−1)}
             * for a flipped mode (e^{b(L−1−l)} = e^{b(L−1)}·e^{a l}). */
            double complex za = m.flip ? 1.0 / m.e1 : m.e1, shift = m.flip ? cexp(m.b * (L - 1)) : 1;
            for (int c = h; c < d.C * d.d; c += d.d) {
                mode_column(&m, w, d, c, n);
                double complex Cn = m.flip ? m.coef * shift : m.coef;
                size_t i = 2 * ((size_t)c * d.N + n);
                z[i] = creal(za), z[i + 1] = cimag(za);
                C[i] = creal(Cn), C[i + 1] = cimag(Cn);
            }
        }
}

typedef struct DssSaved {
    int T, L;
    double complex *s;   /* (DSS_MODE_BLOCK, T) powers of a block of modes */
    double *pr, *pi;     /* (T, DSS_MODE_BLOCK) the same powers' real and imaginary parts */
    double *acc;         /* (N, 2) Λ's gradient, summed over channels */
    double complex *e;   /* (d, N, 2) every mode's e^b and e^{bL}, from the forward */
} DssSaved;

/* One mode's share of the gradients (see the header), from A0 = Σ_l dK[l]·conj(e^{b m(l)})
 * and A1 = Σ_l dK[l]·m(l)·conj(e^{b m(l)}): adds into Λ's (lam_g, 2 doubles) and the
 * channel's log Δ sums (gdt, 2), and writes or adds W's (gw, 2 floats; NULL: none). */
static void mode_backward(const DssMode *m, double complex A0, double complex A1, int L, double *lam_g, double *gdt,
                          float *gw, int acc_w) {
    double complex g_num = conj(m->w * m->r) * A0, g_r = conj(m->w * m->num) * A0;
    double complex g_q = (-m->q * m->q * g_r + DSS_EPS * conj(g_r)) / (m->n2 * m->n2);
    double complex g_den = conj(m->lam) * g_q;
    double complex g_b = conj(m->coef) * A1 + conj(m->e1) * g_num + L * conj(m->eL) * g_den;
    double complex g_a = m->flip ? -g_b : g_b, g_lam = conj(m->den) * g_q;
    lam_g[0] += m->dtr * creal(g_a) + creal(g_lam);
    lam_g[1] += m->dti * cimag(g_a) + cimag(g_lam);
    gdt[0] += m->dtr * creal(m->lam) * creal(g_a);
    gdt[1] += m->dti * cimag(m->lam) * cimag(g_a);
    if (gw) {
        double complex g_w = conj(m->num * m->r) * A0;
        gw[0] = (float)creal(g_w) + (acc_w ? gw[0] : 0.0f);
        gw[1] = (float)cimag(g_w) + (acc_w ? gw[1] : 0.0f);
    }
}

/* s (nb, T) → pr, pi (T, DSS_MODE_BLOCK), position-major with the modes side by side
 * and the lanes past nb zero, so that the backward's sums over l run across a whole
 * block of modes at once. */
static void powers_by_position(const double complex *s, int nb, int T, double *pr, double *pi) {
    for (int l = 0; l < T; l++)
        for (int j = 0; j < DSS_MODE_BLOCK; j++) {
            double complex v = j < nb ? s[(size_t)j * T + l] : 0;
            pr[(size_t)l * DSS_MODE_BLOCK + j] = creal(v);
            pi[(size_t)l * DSS_MODE_BLOCK + j] = cimag(v);
        }
}

/* A0 = Σ_l g[l]·conj(e^{b m(l)}) and A1 = Σ_l m(l)·g[l]·conj(e^{b m(l)}) for a block of
 * modes, g one kernel column's gradient (stride apart): the complex sums written out in
 * real and imaginary parts (the same products and sums, in the same order, per mode);
 * m(l) = m0 + dm·l, i.e. l or L − 1 − l. */
static void column_sums(const float *g, size_t stride, int T, const double *pr, const double *pi, const double *m0,
                        const double *dm, double complex *A0, double complex *A1) {
    double a0r[DSS_MODE_BLOCK] = { 0 }, a0i[DSS_MODE_BLOCK] = { 0 };
    double a1r[DSS_MODE_BLOCK] = { 0 }, a1i[DSS_MODE_BLOCK] = { 0 };
    for (int l = 0; l < T; l++) {
        const double gl = g[(size_t)l * stride], *sr = pr + (size_t)l * DSS_MODE_BLOCK, *si = pi + (size_t)l * DSS_MODE_BLOCK;
        for (int j = 0; j < DSS_MODE_BLOCK; j++) {
            double gr = gl * sr[j], gi = gl * -si[j], m = m0[j] + dm[j] * l;
            a0r[j] += gr, a0i[j] += gi;
            a1r[j] += m * gr, a1i[j] += m * gi;
        }
    }
    for (int j = 0; j < DSS_MODE_BLOCK; j++) A0[j] = CMPLX(a0r[j], a0i[j]), A1[j] = CMPLX(a1r[j], a1i[j]);
}

static void dss_kernel_backward(TapeEntry *e) {
    Tensor *lambda = e->in[0], *log_dt = e->in[1], *w = e->in[2], *k = e->out;
    const DssSaved *sv = e->saved[0];
    DssDims d = dss_dims(lambda, log_dt, w);
    const int T = sv->T, L = sv->L;
    memset(sv->acc, 0, (size_t)2 * d.N * sizeof(double));
    int acc_dt = log_dt->grad ? tape_grad_acc(log_dt) : 0, acc_w = w->grad ? tape_grad_acc(w) : 0;
    const int cols = d.C * d.d;
    for (int h = 0; h < d.d; h++) {
        double gdt[2] = { 0, 0 };   /* feature h's log Δ, over its C columns */
        for (int n0 = 0; n0 < d.N; n0 += DSS_MODE_BLOCK) {
            const int nb = mode_block(n0, d.N);
            DssMode mb[DSS_MODE_BLOCK];
            for (int j = 0; j < nb; j++) mb[j] = dss_mode(lambda, log_dt, h, n0 + j, L, sv->e + 2 * ((size_t)h * d.N + n0 + j), 1);
            mode_powers(mb, nb, T, L, sv->s);   /* the same for the feature's C columns */
            powers_by_position(sv->s, nb, T, sv->pr, sv->pi);
            double m0[DSS_MODE_BLOCK] = { 0 }, dm[DSS_MODE_BLOCK] = { 0 };
            for (int j = 0; j < nb; j++) m0[j] = mb[j].flip ? L - 1 : 0, dm[j] = mb[j].flip ? -1 : 1;
            for (int c = h; c < cols; c += d.d) {
                double complex A0[DSS_MODE_BLOCK], A1[DSS_MODE_BLOCK];
                column_sums(k->grad + c, (size_t)cols, T, sv->pr, sv->pi, m0, dm, A0, A1);
                const size_t i0 = (size_t)c * d.N + n0;   /* the block's first W */
                for (int j = 0; j < nb; j++) {
                    mode_column(&mb[j], w, d, c, n0 + j);
                    mode_backward(&mb[j], A0[j], A1[j], L, sv->acc + 2 * (n0 + j), gdt,
                                  w->grad ? w->grad + 2 * (i0 + j) : NULL, acc_w);
                }
            }
        }
        if (log_dt->grad) {
            float *g = log_dt->grad + 2 * h;
            g[0] = (float)gdt[0] + (acc_dt ? g[0] : 0.0f);
            g[1] = (float)gdt[1] + (acc_dt ? g[1] : 0.0f);
        }
    }
    if (lambda->grad) {
        int acc = tape_grad_acc(lambda);
        for (int i = 0; i < 2 * d.N; i++) lambda->grad[i] = (float)sv->acc[i] + (acc ? lambda->grad[i] : 0.0f);
    }
}

Tensor *ad_dss_kernel(Tape *t, Tensor *lambda, Tensor *log_dt, Tensor *w, int T, int L) {
    DssDims d = dss_dims(lambda, log_dt, w);
    AL_ASSERT(T >= 1 && L >= T);
    int needs_grad = tape_needs_grad(t, lambda, log_dt, w);
    const int cols = d.C * d.d;
    Tensor *k = tape_tensor(t, needs_grad, 2, (const int[]){ T, cols });
    DssSaved sv = { .T = T, .L = L };
    sv.s = tape_scratch(t, (size_t)DSS_MODE_BLOCK * T * sizeof *sv.s);
    double *kc = tape_scratch(t, (size_t)d.C * T * sizeof(double));   /* a feature's C columns, summed over modes */
    sv.e = needs_grad ? tape_scratch(t, (size_t)2 * d.d * d.N * sizeof *sv.e) : NULL;
    for (int h = 0; h < d.d; h++) {
        memset(kc, 0, (size_t)d.C * T * sizeof(double));
        for (int n0 = 0; n0 < d.N; n0 += DSS_MODE_BLOCK) {
            const int nb = mode_block(n0, d.N);
            DssMode mb[DSS_MODE_BLOCK];
            for (int j = 0; j < nb; j++)
                mb[j] = dss_mode(lambda, log_dt, h, n0 + j, L, sv.e ? sv.e + 2 * ((size_t)h * d.N + n0 + j) : NULL, 0);
            mode_powers(mb, nb, T, L, sv.s);
            for (int kk = 0; kk < d.C; kk++) {
                double *col = kc + (size_t)kk * T;
                for (int j = 0; j < nb; j++) mode_column(&mb[j], w, d, kk * d.d + h, n0 + j);
                for (int l = 0; l < T; l++)   /* over n in order, as one mode at a time summed */
                    for (int j = 0; j < nb; j++) col[l] += creal(mb[j].coef * sv.s[(size_t)j * T + l]);
            }
        }
        for (int kk = 0; kk < d.C; kk++)
            for (int l = 0; l < T; l++) k->data[(size_t)l * cols + kk * d.d + h] = (float)kc[(size_t)kk * T + l];
    }
    if (needs_grad) {
        sv.acc = tape_scratch(t, (size_t)2 * d.N * sizeof(double));
        sv.pr = tape_scratch(t, (size_t)2 * T * DSS_MODE_BLOCK * sizeof(double));
        sv.pi = sv.pr + (size_t)T * DSS_MODE_BLOCK;
        DssSaved *saved = tape_scratch(t, sizeof *saved);
        *saved = sv;
        ad_record(t, (TapeEntry){ .op = OP_DSS_KERNEL, .backward = dss_kernel_backward, .out = k,
                                  .in = { lambda, log_dt, w }, .saved = { saved }, .first_write = 1 });
    }
    return k;
}

/* ---- causal depthwise convolution ----------------------------------------------- */

/* The three sums run in tiles of CONV_R positions × CONV_W features, the tile's sums
 * held in registers while one kernel row (or one gradient row) is read once for all
 * CONV_R positions: R + 1 loads per R fused multiply-adds, where a loop over one
 * position at a time loads its sum and both operands and stores the sum again for each.
 * At N = 400 the convolution was about two-thirds of a DSS training step.  A tile's
 * rows need different numbers of terms (the triangle at its edge); rather than branch,
 * the tiles read u with CONV_R zero rows before each row of the batch and dy with
 * CONV_R zero rows after, so every row of a tile runs over the same terms, the extra
 * ones adding k·0.  Every sum runs over its terms in the order of the plain loops (s,
 * or b then t, ascending) with the same FM_FMA, and a term k·0 leaves a sum as it is,
 * so a tile gives the bits the plain loops give, which take the edges (positions past
 * the last whole tile, features past the last whole CONV_W).  At N = 400 a DSS training
 * step is 1.7× faster than with the plain loops alone (the one-position-at-a-time loops
 * this replaced), level at N = 20 (docs/design.md decision 19).  The tiles are never
 * inlined: inlined into its caller's loops, gcc kept the forward tile's sums in memory
 * rather than in registers (at 0.6× the speed). */
enum { CONV_R = 8, CONV_W = 16 };
#define CONV_TILE __attribute__((noinline)) static void

/* Below 2·CONV_R positions (the short groups of a length-grouped batch) the padded
 * copies and a tile's unused terms cost more than the tiles save: plain loops only,
 * on u and dy as they are. */
static int conv_tiled(int T) { return T >= 2 * CONV_R; }

typedef struct ConvDims { int B, T, d, cols; } ConvDims;

/* rows (B, T, width) → out (B, CONV_R + T + CONV_R, width): each batch row between
 * CONV_R zero rows before and after. */
static void conv_pad(const float *rows, float *out, ConvDims c, int width) {
    const size_t row = (size_t)width, stride = (size_t)(c.T + 2 * CONV_R) * row;
    for (int b = 0; b < c.B; b++) {
        float *o = out + (size_t)b * stride;
        memset(o, 0, CONV_R * row * sizeof(float));
        memcpy(o + CONV_R * row, rows + (size_t)b * c.T * row, (size_t)c.T * row * sizeof(float));
        memset(o + (CONV_R + (size_t)c.T) * row, 0, CONV_R * row * sizeof(float));
    }
}

/* Row b's position 0: in the padded copy (CONV_R zero rows before it, CONV_R after
 * T − 1), or in rows itself when there is no copy (padded NULL: no tiles). */
static const float *conv_row(const float *padded, const float *rows, ConvDims c, int b, int width) {
    return padded ? padded + ((size_t)b * (c.T + 2 * CONV_R) + CONV_R) * width : rows + (size_t)b * c.T * width;
}

/* Forward.  y[i, c] = D[c]·u[i, h] + Σ_{s=0..i} K[s, c]·u[i − s, h], c = c0 + h, the
 * first term already in y (conv_forward_init).  up: row b of u, padded; y: row b's
 * (T, cols). */
CONV_TILE conv_forward_tile(const float *up, const float *k, float *y, ConvDims c, int i0, int h0, int c0) {
    float acc[CONV_R][CONV_W];
    for (int r = 0; r < CONV_R; r++)
        for (int w = 0; w < CONV_W; w++) acc[r][w] = y[(size_t)(i0 + r) * c.cols + c0 + h0 + w];
    for (int s = 0; s < i0 + CONV_R; s++) {
        const float *ks = k + (size_t)s * c.cols + c0 + h0;
        for (int r = 0; r < CONV_R; r++) {
            const float *ur = up + ((ptrdiff_t)(i0 + r) - s) * c.d + h0;   /* zeros below position 0 */
            for (int w = 0; w < CONV_W; w++) acc[r][w] = FM_FMA(ks[w], ur[w], acc[r][w]);
        }
    }
    for (int r = 0; r < CONV_R; r++)
        for (int w = 0; w < CONV_W; w++) y[(size_t)(i0 + r) * c.cols + c0 + h0 + w] = acc[r][w];
}

/* The same for positions [i_lo, i_hi) × features [h_lo, h_hi), one at a time. */
static void conv_forward_plain(const float *up, const float *k, float *y, ConvDims c, int i_lo, int i_hi, int h_lo,
                               int h_hi, int c0) {
    for (int i = i_lo; i < i_hi; i++) {
        float *yr = y + (size_t)i * c.cols + c0;
        for (int s = 0; s <= i; s++)
            for (int h = h_lo; h < h_hi; h++)
                yr[h] = FM_FMA(k[(size_t)s * c.cols + c0 + h], up[(size_t)(i - s) * c.d + h], yr[h]);
    }
}

/* y[b, i, c] = D[c]·u[b, i, h], or 0 without D: where the forward's sums start. */
static void conv_forward_init(const float *u, const float *D, float *y, ConvDims c) {
    for (long r = 0; r < (long)c.B * c.T; r++)
        for (int c0 = 0; c0 < c.cols; c0 += c.d)
            for (int h = 0; h < c.d; h++) y[r * c.cols + c0 + h] = D ? D[c0 + h] * u[r * c.d + h] : 0.0f;
}

/* du[j, h] += Σ over the kernels c = c0 + h of D[c]·dy[j, c] + Σ_{s=0..T−1−j} K[s, c]·dy[j + s, c],
 * one kernel c0 at a time.  gp: row b of dy, padded; du: row b's (T, d). */
CONV_TILE conv_du_tile(const float *gp, const float *k, const float *D, float *du, ConvDims c, int j0, int h0, int c0) {
    float acc[CONV_R][CONV_W];
    for (int r = 0; r < CONV_R; r++)
        for (int w = 0; w < CONV_W; w++) {
            float g = du[(size_t)(j0 + r) * c.d + h0 + w];
            acc[r][w] = D ? FM_FMA(D[c0 + h0 + w], gp[(size_t)(j0 + r) * c.cols + c0 + h0 + w], g) : g;
        }
    for (int s = 0; s < c.T - j0; s++) {   /* zeros past position T − 1 */
        const float *ks = k + (size_t)s * c.cols + c0 + h0;
        for (int r = 0; r < CONV_R; r++) {
            const float *gr = gp + (size_t)(j0 + r + s) * c.cols + c0 + h0;
            for (int w = 0; w < CONV_W; w++) acc[r][w] = FM_FMA(ks[w], gr[w], acc[r][w]);
        }
    }
    for (int r = 0; r < CONV_R; r++)
        for (int w = 0; w < CONV_W; w++) du[(size_t)(j0 + r) * c.d + h0 + w] = acc[r][w];
}

static void conv_du_plain(const float *gp, const float *k, const float *D, float *du, ConvDims c, int j_lo, int j_hi,
                          int h_lo, int h_hi, int c0) {
    for (int j = j_lo; j < j_hi; j++) {
        float *dj = du + (size_t)j * c.d;
        const float *gj = gp + (size_t)j * c.cols + c0;
        if (D)
            for (int h = h_lo; h < h_hi; h++) dj[h] = FM_FMA(D[c0 + h], gj[h], dj[h]);
        for (int s = 0; s < c.T - j; s++)
            for (int h = h_lo; h < h_hi; h++) dj[h] = FM_FMA(k[(size_t)s * c.cols + c0 + h], gj[(size_t)s * c.cols + h], dj[h]);
    }
}

/* dK[s, c] += Σ_b Σ_{t=s..T−1} dy[b, t, c]·u[b, t − s, h], b then t ascending.
 * u_pad: all of u, padded; gk: dK (rows ≥ T untouched). */
CONV_TILE conv_dk_tile(const float *dy, const float *u_pad, float *gk, ConvDims c, int s0, int h0, int c0) {
    float acc[CONV_R][CONV_W];
    for (int r = 0; r < CONV_R; r++)
        for (int w = 0; w < CONV_W; w++) acc[r][w] = gk[(size_t)(s0 + r) * c.cols + c0 + h0 + w];
    for (int b = 0; b < c.B; b++) {
        const float *gb = dy + (size_t)b * c.T * c.cols + c0 + h0, *ub = conv_row(u_pad, NULL, c, b, c.d) + h0;
        for (int t = s0; t < c.T; t++) {   /* zeros below position 0 for t < s0 + r */
            const float *gt = gb + (size_t)t * c.cols;
            for (int r = 0; r < CONV_R; r++) {
                const float *ur = ub + ((ptrdiff_t)t - s0 - r) * c.d;
                for (int w = 0; w < CONV_W; w++) acc[r][w] = FM_FMA(gt[w], ur[w], acc[r][w]);
            }
        }
    }
    for (int r = 0; r < CONV_R; r++)
        for (int w = 0; w < CONV_W; w++) gk[(size_t)(s0 + r) * c.cols + c0 + h0 + w] = acc[r][w];
}

static void conv_dk_plain(const float *dy, const float *u_pad, const float *u, float *gk, ConvDims c, int s_lo,
                          int s_hi, int h_lo, int h_hi, int c0) {
    for (int s = s_lo; s < s_hi; s++) {
        float *g = gk + (size_t)s * c.cols + c0;
        for (int b = 0; b < c.B; b++) {
            const float *ub = conv_row(u_pad, u, c, b, c.d);
            for (int t = s; t < c.T; t++)
                for (int h = h_lo; h < h_hi; h++)
                    g[h] = FM_FMA(dy[((size_t)b * c.T + t) * c.cols + c0 + h], ub[(size_t)(t - s) * c.d + h], g[h]);
        }
    }
}

/* One of the three sums over the whole (positions, features, kernels) grid: whole
 * tiles, then the plain loops on the features past the last whole CONV_W and on the
 * positions past the last whole tile.  Per kernel c0, in order (du sums over them). */
#define CONV_GRID(c, tile, plain)                                                                                   \
    do {                                                                                                            \
        const int p_tiles = conv_tiled((c).T) ? (c).T / CONV_R * CONV_R : 0, h_tiles = (c).d / CONV_W * CONV_W;   \
        for (int p0 = 0; p0 < p_tiles; p0 += CONV_R)                                                                \
            for (int c0 = 0; c0 < (c).cols; c0 += (c).d) {                                                         \
                for (int h0 = 0; h0 < h_tiles; h0 += CONV_W) tile;                                                  \
                if (h_tiles < (c).d) plain(p0, p0 + CONV_R, h_tiles, (c).d, c0);                                   \
            }                                                                                                       \
        if (p_tiles < (c).T)                                                                                        \
            for (int c0 = 0; c0 < (c).cols; c0 += (c).d) plain(p_tiles, (c).T, 0, (c).d, c0);                      \
    } while (0)

typedef struct ConvSaved { float *u_pad, *g_pad; } ConvSaved;

/* u (B, T, d), y (B, T, C·d): y's column c = k·d + h reads u's feature h. */
static void causal_conv_backward(TapeEntry *e) {
    Tensor *u = e->in[0], *k = e->in[1], *D = e->in[2], *y = e->out;
    const ConvSaved *sv = e->saved[0];
    const ConvDims c = { u->shape[0], u->shape[1], u->shape[2], y->shape[2] };
    const float *dy = y->grad, *Dd = D ? D->data : NULL;
    if (u->grad) {
        if (!tape_grad_acc(u)) memset(u->grad, 0, (size_t)u->n * sizeof(float));
        if (sv->g_pad) conv_pad(dy, sv->g_pad, c, c.cols);
        for (int b = 0; b < c.B; b++) {
            const float *gp = conv_row(sv->g_pad, dy, c, b, c.cols);
            float *du = u->grad + (size_t)b * c.T * c.d;
#define DU_PLAIN(lo, hi, hlo, hhi, c0) conv_du_plain(gp, k->data, Dd, du, c, lo, hi, hlo, hhi, c0)
            CONV_GRID(c, conv_du_tile(gp, k->data, Dd, du, c, p0, h0, c0), DU_PLAIN);
#undef DU_PLAIN
        }
    }
    if (k->grad) {
        if (!tape_grad_acc(k)) memset(k->grad, 0, (size_t)k->n * sizeof(float));   /* rows ≥ T too */
#define DK_PLAIN(lo, hi, hlo, hhi, c0) conv_dk_plain(dy, sv->u_pad, u->data, k->grad, c, lo, hi, hlo, hhi, c0)
        CONV_GRID(c, conv_dk_tile(dy, sv->u_pad, k->grad, c, p0, h0, c0), DK_PLAIN);
#undef DK_PLAIN
    }
    if (D && D->grad) {
        if (!tape_grad_acc(D)) memset(D->grad, 0, (size_t)c.cols * sizeof(float));
        for (long r = 0; r < (long)c.B * c.T; r++)
            for (int c0 = 0; c0 < c.cols; c0 += c.d)
                for (int h = 0; h < c.d; h++) D->grad[c0 + h] += dy[r * c.cols + c0 + h] * u->data[r * c.d + h];
    }
}

Tensor *ad_causal_conv(Tape *t, Tensor *u, Tensor *k, Tensor *D) {
    AL_ASSERT(u->ndim == 3 && k->ndim == 2 && k->shape[0] >= u->shape[1] && k->shape[1] % u->shape[2] == 0);
    AL_ASSERT(!D || D->n == k->shape[1]);
    const ConvDims c = { u->shape[0], u->shape[1], u->shape[2], k->shape[1] };
    int needs_grad = tape_needs_grad(t, u, k, D);
    Tensor *y = tape_tensor(t, needs_grad, 3, (const int[]){ c.B, c.T, c.cols });
    const size_t padded = (size_t)c.B * (c.T + 2 * CONV_R);
    ConvSaved sv = { NULL, NULL };
    if (conv_tiled(c.T)) conv_pad(u->data, sv.u_pad = tape_scratch(t, padded * c.d * sizeof(float)), c, c.d);
    conv_forward_init(u->data, D ? D->data : NULL, y->data, c);
    for (int b = 0; b < c.B; b++) {
        const float *up = conv_row(sv.u_pad, u->data, c, b, c.d);
        float *yb = y->data + (size_t)b * c.T * c.cols;
#define FWD_PLAIN(lo, hi, hlo, hhi, c0) conv_forward_plain(up, k->data, yb, c, lo, hi, hlo, hhi, c0)
        CONV_GRID(c, conv_forward_tile(up, k->data, yb, c, p0, h0, c0), FWD_PLAIN);
#undef FWD_PLAIN
    }
    if (needs_grad) {
        if (u->grad && conv_tiled(c.T)) sv.g_pad = tape_scratch(t, padded * c.cols * sizeof(float));
        ConvSaved *saved = tape_scratch(t, sizeof *saved);
        *saved = sv;
        ad_record(t, (TapeEntry){ .op = OP_CAUSAL_CONV, .backward = causal_conv_backward, .out = y,
                                  .in = { u, k, D }, .saved = { saved }, .first_write = 1 });
    }
    return y;
}
