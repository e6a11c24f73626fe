/* test_lstm.c — ad_lstm against references that share no code with it.
 *
 * (1) A naive reference: explicit loops in complex double with libm's cexp/ctanh.
 *     With zero imaginary parts it is the plain double-precision forward; the
 *     float op must match it to float rounding (tolerance below).  The same code
 *     also gives the exact gradients by the complex step: for an input p,
 *     dL/dp = Im L(p + i·δ) / δ with δ = 1e-30 — no subtraction, so no
 *     cancellation, and independent of the hand-derived backward and of the sgemm
 *     transpose flags it uses.  Also checked: one tape entry, no entry and no grad
 *     without grads, identical output with grad mode off, accumulation into
 *     existing grads, x without a grad, and saturated gates (|z| ≫ 88).
 * (2) Parity with PyTorch's torch.nn.LSTM in float64 (weight_ih_l0 = w_ih,
 *     weight_hh_l0 = w_hh, bias_ih_l0 = b, bias_hh_l0 = 0) on the output and the
 *     gradients of Σ dout∘h, to 1e-4 relative per tensor — max |c − t| / max |t|,
 *     the convention of bench/torch_reference.py.  Needs /usr/bin/python3 with
 *     torch (Debian python3-torch); skipped with a message otherwise.
 * (3) Timing of forward + backward at B 32, T 100, In = H = 128 (printed only). */
#include "attnlab/autodiff/ops.h"
#include "attnlab/io/safetensors.h"
#include "attnlab/util/error.h"
#include "check.h"
#include "gradcheck.h"

#include <complex.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PYTHON "/usr/bin/python3"

typedef struct Shape { int B, T, In, H; } Shape;

/* ---- the reference ------------------------------------------------------------- */

typedef double complex cplx;

static cplx csigmoid(cplx z) { return 1.0 / (1.0 + cexp(-z)); }

/* h (B, T, H) of one LSTM layer, straight from the definition: for each sequence and
 * step, z = b + w_ih·x_t + w_hh·h_{t−1} row by row, gates (i, f, g, o), h0 = c0 = 0. */
static void ref_lstm(Shape s, const cplx *x, const cplx *w_ih, const cplx *w_hh, const cplx *b,
                     cplx *h) {
    int H = s.H;
    cplx *hp = calloc((size_t)H, sizeof *hp), *c = calloc((size_t)H, sizeof *c);
    cplx *z = calloc((size_t)(4 * H), sizeof *z);
    for (int bi = 0; bi < s.B; bi++) {
        for (int j = 0; j < H; j++) hp[j] = c[j] = 0;
        for (int t = 0; t < s.T; t++) {
            const cplx *xt = x + ((long)bi * s.T + t) * s.In;
            for (int r = 0; r < 4 * H; r++) {
                cplx acc = b[r];
                for (int k = 0; k < s.In; k++) acc += w_ih[(long)r * s.In + k] * xt[k];
                for (int k = 0; k < H; k++) acc += w_hh[(long)r * H + k] * hp[k];
                z[r] = acc;
            }
            cplx *ht = h + ((long)bi * s.T + t) * H;
            for (int j = 0; j < H; j++) {
                cplx i = csigmoid(z[j]), f = csigmoid(z[H + j]);
                cplx g = ctanh(z[2 * H + j]), o = csigmoid(z[3 * H + j]);
                c[j] = f * c[j] + i * g;
                ht[j] = o * ctanh(c[j]);
            }
            for (int j = 0; j < H; j++) hp[j] = ht[j];
        }
    }
    free(hp);
    free(c);
    free(z);
}

/* ---- helpers -------------------------------------------------------------------- */

/* The four inputs x, w_ih, w_hh, b as leaves with grads. */
typedef struct Inputs { Tensor *t[4]; } Inputs;

static const char *const INPUT_NAME[4] = { "x", "w_ih", "w_hh", "b" };

static Inputs make_inputs(Shape s, uint64_t seed, float x_range, float w_range) {
    int G = 4 * s.H;
    Inputs in = { {
        gc_leaf(3, (const int[]){ s.B, s.T, s.In }, seed, -x_range, x_range),
        gc_leaf(2, (const int[]){ G, s.In }, seed + 1, -w_range, w_range),
        gc_leaf(2, (const int[]){ G, s.H }, seed + 2, -w_range, w_range),
        gc_leaf(1, &G, seed + 3, -w_range, w_range),
    } };
    return in;
}

static void free_inputs(Inputs *in) {
    for (int l = 0; l < 4; l++) gc_leaf_free(in->t[l]);
}

static void zero_grads(Inputs *in) {
    for (int l = 0; l < 4; l++)
        if (in->t[l]->grad) memset(in->t[l]->grad, 0, (size_t)in->t[l]->n * sizeof(float));
}

/* Forward and backward from dout on a fresh tape; returns the output. */
static Tensor *run_op(Tape *t, Inputs *in, const float *dout) {
    tape_reset(t);
    Tensor *h = ad_lstm(t, in->t[0], in->t[1], in->t[2], in->t[3]);
    if (dout) tape_backward_from(t, h, dout);
    return h;
}

static float *random_floats(long n, uint64_t seed) {
    float *v = al_malloc((size_t)n * sizeof(float));
    Rng r = rng_stream(seed, 0x646f7574 /* "dout" */);
    for (long i = 0; i < n; i++) v[i] = (float)(2.0 * rng_uniform(&r) - 1.0);
    return v;
}

static double max_abs(const double *a, long n) {
    double m = 0;
    for (long i = 0; i < n; i++) m = fmax(m, fabs(a[i]));
    return m;
}

/* max |c − r| / max(max |r|, 1e-6); NaN counts as infinitely wrong. */
static double rel_err(const float *c, const double *r, long n) {
    double m = 0;
    for (long i = 0; i < n; i++) {
        double d = fabs((double)c[i] - r[i]);
        if (isnan(d)) return INFINITY;
        m = fmax(m, d);
    }
    return m / fmax(max_abs(r, n), 1e-6);
}

static long out_size(Shape s) { return (long)s.B * s.T * s.H; }

/* ---- (1) the naive reference ---------------------------------------------------- */

/* Forward tolerance, absolute (|h| < 1): z sums In + H + 1 products rounded in
 * the sgemm (≤ (In + H + 1)·u·Σ|terms|, u = 6e-8, far less on average), then σ and
 * tanh (≤ 2 ulp, fastmath.h) and the cell update; the recurrence carries an error
 * on with a gain below 1 here.  Observed ≤ 7e-8 (1.7e-7 with saturated gates,
 * whose |z| ~ 100 makes the sgemm's absolute rounding larger); 1e-6 is 6x that and
 * still far below what a wrong gate order gives (3.5e-2).  Gradient tolerance,
 * relative per tensor as in (2): backward adds B·T rows of float contributions;
 * observed ≤ 5.0e-7, tolerance 5e-6 (a 1 % error in the dc carried between steps
 * shows up as ≥ 3e-3). */
#define REF_FWD_TOL 1e-6
#define REF_GRAD_TOL 5e-6
#define CSTEP 1e-30

typedef struct RefCase {
    Shape s;
    float x_range, w_range;
    uint64_t seed;
    const char *note;
    int saturated;   /* the case must drive some |z| past fm_exp's range (±88.7) */
} RefCase;

/* max over rows and gates of |b + w_ih·x_t| — the input part of z. */
static double max_input_preact(Shape s, const Inputs *in) {
    const float *x = in->t[0]->data, *w = in->t[1]->data, *b = in->t[3]->data;
    double m = 0;
    for (long r = 0; r < (long)s.B * s.T; r++)
        for (int g = 0; g < 4 * s.H; g++) {
            double z = b[g];
            for (int k = 0; k < s.In; k++) z += (double)w[(long)g * s.In + k] * x[r * s.In + k];
            m = fmax(m, fabs(z));
        }
    return m;
}

static void to_cplx(const Tensor *t, cplx *dst) {
    for (long i = 0; i < t->n; i++) dst[i] = t->data[i];
}

/* The bookkeeping around the numbers, on the tape and inputs of a checked run
 * whose output is h (its grads in the leaves): grad mode off, accumulation, x
 * without a grad, nothing with a grad. */
static void check_grad_paths(const char *what, Tape *t, Inputs *in, const Tensor *h,
                             const float *dout) {
    long n_out = h->n;
    float *h_train = al_malloc((size_t)n_out * sizeof(float));
    memcpy(h_train, h->data, (size_t)n_out * sizeof(float));
    tape_reset(t);
    t->grad_enabled = 0;
    Tensor *he = ad_lstm(t, in->t[0], in->t[1], in->t[2], in->t[3]);
    CHECK(t->n == 0 && he->grad == NULL, "%s: grad mode off recorded an entry", what);
    CHECK(memcmp(he->data, h_train, (size_t)n_out * sizeof(float)) == 0,
          "%s: output with grad mode off differs", what);
    t->grad_enabled = 1;

    /* Gradients accumulate: a second backward on top of the first doubles them, up
     * to rounding (db's row sums now start from the old value instead of 0). */
    float *g1[4];
    for (int l = 0; l < 4; l++) {
        g1[l] = al_malloc((size_t)in->t[l]->n * sizeof(float));
        memcpy(g1[l], in->t[l]->grad, (size_t)in->t[l]->n * sizeof(float));
    }
    run_op(t, in, dout);
    for (int l = 0; l < 4; l++) {
        double e = 0, m = 0;
        for (long i = 0; i < in->t[l]->n; i++) {
            e = fmax(e, fabs((double)in->t[l]->grad[i] - 2.0 * g1[l][i]));
            m = fmax(m, fabs(2.0 * g1[l][i]));
        }
        CHECK(e <= 1e-6 * m, "%s: grad %s does not accumulate (off by %.3g of %.3g)", what,
              INPUT_NAME[l], e, m);
    }

    /* x without a grad: the weight grads must not change (and a write to x's grad
     * would crash). */
    float *x_grad = in->t[0]->grad;
    in->t[0]->grad = NULL;
    zero_grads(in);
    run_op(t, in, dout);
    for (int l = 1; l < 4; l++)
        CHECK(memcmp(in->t[l]->grad, g1[l], (size_t)in->t[l]->n * sizeof(float)) == 0,
              "%s: grad %s differs when x has no grad", what, INPUT_NAME[l]);
    /* Nothing with a grad: no entry, an output without grad. */
    float *wg[3];
    for (int l = 1; l < 4; l++) {
        wg[l - 1] = in->t[l]->grad;
        in->t[l]->grad = NULL;
    }
    tape_reset(t);
    Tensor *hn = ad_lstm(t, in->t[0], in->t[1], in->t[2], in->t[3]);
    CHECK(t->n == 0 && hn->grad == NULL, "%s: no input has a grad, yet an entry was recorded", what);
    in->t[0]->grad = x_grad;
    for (int l = 1; l < 4; l++) in->t[l]->grad = wg[l - 1];

    for (int l = 0; l < 4; l++) free(g1[l]);
    free(h_train);
}

/* dL/dp of L = Σ dout∘h for every element p of input l, by the complex step on the
 * reference (ci holds all four inputs, restored on return; ch is scratch). */
static void complex_step_grads(Shape s, cplx *ci[4], int l, long n, const float *dout,
                               cplx *ch, double *g) {
    long n_out = out_size(s);
    for (long p = 0; p < n; p++) {
        cplx keep = ci[l][p];
        ci[l][p] += I * CSTEP;
        ref_lstm(s, ci[0], ci[1], ci[2], ci[3], ch);
        ci[l][p] = keep;
        double dl = 0;
        for (long i = 0; i < n_out; i++) dl += (double)dout[i] * cimag(ch[i]);
        g[p] = dl / CSTEP;
    }
}

/* One case of (1): output and all four gradients against the reference, then the
 * bookkeeping checks. */
static void check_reference(const RefCase *rc, Arena *arena) {
    Shape s = rc->s;
    char what[128];
    snprintf(what, sizeof what, "B%d T%d In%d H%d%s", s.B, s.T, s.In, s.H, rc->note);
    Inputs in = make_inputs(s, rc->seed, rc->x_range, rc->w_range);
    long n_out = out_size(s);
    float *dout = random_floats(n_out, rc->seed + 10);

    Tape t;
    tape_init(&t, arena);
    zero_grads(&in);
    Tensor *h = run_op(&t, &in, dout);
    CHECK(t.n == 1, "%s: recorded %d tape entries, want 1", what, t.n);

    /* Forward against the reference with real inputs. */
    cplx *ci[4], *ch = al_malloc((size_t)n_out * sizeof(cplx));
    for (int l = 0; l < 4; l++) {
        ci[l] = al_malloc((size_t)in.t[l]->n * sizeof(cplx));
        to_cplx(in.t[l], ci[l]);
    }
    ref_lstm(s, ci[0], ci[1], ci[2], ci[3], ch);
    double fwd = 0;
    for (long i = 0; i < n_out; i++) fwd = fmax(fwd, cabs(ch[i] - (double)h->data[i]));
    char lbl[256];
    snprintf(lbl, sizeof lbl, "%s: output vs double reference", what);
    CHECK_NEAR(fwd, 0, REF_FWD_TOL, lbl);

    /* Gradients of Σ dout∘h by the complex step, input element by element. */
    double worst_grad = 0;
    for (int l = 0; l < 4; l++) {
        long n = in.t[l]->n;
        double *g = al_malloc((size_t)n * sizeof(double));
        complex_step_grads(s, ci, l, n, dout, ch, g);
        double e = rel_err(in.t[l]->grad, g, n);
        worst_grad = fmax(worst_grad, e);
        snprintf(lbl, sizeof lbl, "%s: grad %s vs complex step (relative)", what, INPUT_NAME[l]);
        CHECK_NEAR(e, 0, REF_GRAD_TOL, lbl);
        free(g);
    }
    printf("  %-40s forward max abs err %.1e, grads max rel err %.1e\n", what, fwd, worst_grad);
    if (rc->saturated) {
        double zmax = max_input_preact(s, &in);
        CHECK(zmax > 88.8, "%s: max |b + w_ih·x_t| is only %.1f: the case does not reach "
              "fm_exp's overflow range", what, zmax);
    }
    for (int l = 0; l < 4; l++) free(ci[l]);
    free(ch);
    check_grad_paths(what, &t, &in, h, dout);
    free(dout);
    tape_free(&t);
    free_inputs(&in);
}

static void reference_tests(void) {
    printf("(1) against the naive double reference (complex step for gradients)\n");
    static const RefCase cases[] = {
        { { 2, 1, 3, 4 },  1.0f, 0.6f, 1, "", 0 },
        { { 3, 2, 5, 2 },  1.0f, 0.6f, 2, "", 0 },
        { { 2, 7, 3, 5 },  1.0f, 0.6f, 3, "", 0 },
        { { 4, 12, 9, 13 }, 1.0f, 0.3f, 4, " (H not a multiple of 8)", 0 },
        { { 2, 16, 8, 16 }, 1.0f, 0.25f, 5, "", 0 },
        /* |z| beyond 88 (asserted below): σ is exactly 0 or 1 through fm_exp's
         * overflow and flush, tanh exactly ±1; the results must stay finite. */
        { { 2, 5, 4, 3 },  8.0f, 8.0f, 6, " (saturated gates)", 1 },
    };
    Arena arena;
    arena_init(&arena, 1 << 20);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_reference(&cases[i], &arena);
    arena_free(&arena);
}

/* ---- (2) PyTorch parity ----------------------------------------------------------- */

/* For every case k in the file (tensors "k.x", "k.w_ih", "k.w_hh", "k.b", "k.dout"):
 * nn.LSTM in float64, and "k.h" plus "k.grad.<input>" of Σ dout∘h written back.
 * One python run for all cases: importing torch costs seconds.  safetensors by
 * json + struct (Debian has no python3-safetensors). */
static const char TORCH_SCRIPT[] =
    "import json, struct, sys\n"
    "import numpy as np, torch\n"
    "def read(path):\n"
    "    blob = open(path, 'rb').read()\n"
    "    (n,) = struct.unpack('<Q', blob[:8])\n"
    "    hdr = json.loads(blob[8:8 + n]); hdr.pop('__metadata__', None)\n"
    "    data = memoryview(blob)[8 + n:]\n"
    "    return {k: np.frombuffer(data[e['data_offsets'][0]:e['data_offsets'][1]], dtype='<f4')\n"
    "               .reshape(e['shape']).astype(np.float64) for k, e in hdr.items()}\n"
    "def write(path, tensors):\n"
    "    hdr, off, blobs = {}, 0, []\n"
    "    for k, a in tensors.items():\n"
    "        raw = np.ascontiguousarray(a, dtype='<f8').tobytes()\n"
    "        hdr[k] = {'dtype': 'F64', 'shape': list(a.shape), 'data_offsets': [off, off + len(raw)]}\n"
    "        off += len(raw); blobs.append(raw)\n"
    "    h = json.dumps(hdr).encode(); h += b' ' * (-len(h) % 8)\n"
    "    with open(path, 'wb') as f: f.write(struct.pack('<Q', len(h)) + h + b''.join(blobs))\n"
    "t, res = read(sys.argv[1]), {}\n"
    "for p in sorted(k[:-1] for k in t if k.endswith('.x')):\n"
    "    x = torch.tensor(t[p + 'x'], requires_grad=True)\n"
    "    B, T, In = x.shape; H = t[p + 'w_hh'].shape[1]\n"
    "    lstm = torch.nn.LSTM(In, H, batch_first=True).double()\n"
    "    with torch.no_grad():\n"
    "        lstm.weight_ih_l0.copy_(torch.from_numpy(t[p + 'w_ih']))\n"
    "        lstm.weight_hh_l0.copy_(torch.from_numpy(t[p + 'w_hh']))\n"
    "        lstm.bias_ih_l0.copy_(torch.from_numpy(t[p + 'b']))\n"
    "        lstm.bias_hh_l0.zero_()\n"
    "    h, _ = lstm(x)\n"
    "    (h * torch.from_numpy(t[p + 'dout'])).sum().backward()\n"
    "    res.update({p + 'h': h.detach().numpy(), p + 'grad.x': x.grad.numpy(),\n"
    "                p + 'grad.w_ih': lstm.weight_ih_l0.grad.numpy(),\n"
    "                p + 'grad.w_hh': lstm.weight_hh_l0.grad.numpy(),\n"
    "                p + 'grad.b': lstm.bias_ih_l0.grad.numpy()})\n"
    "write(sys.argv[2], res)\n";

#define TORCH_TOL 1e-4
#define N_TORCH 4

static int torch_available(void) {
    return access(PYTHON, X_OK) == 0 && system(PYTHON " -c 'import torch' >/dev/null 2>&1") == 0;
}

/* Runs TORCH_SCRIPT (fed on stdin) on in_path → out_path; returns its exit status. */
static int run_torch(const char *in_path, const char *out_path) {
    char cmd[2 * PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, PYTHON " - '%s' '%s'", in_path, out_path);
    FILE *p = popen(cmd, "w");
    if (!p) return -1;
    fputs(TORCH_SCRIPT, p);
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* One parity case: the inputs (their grads hold C's gradients after run) and a
 * copy of C's output. */
typedef struct TorchCase {
    Shape s;
    Inputs in;
    float *dout, *h;
    char names[5][16];   /* "k.x" … "k.dout" */
} TorchCase;

static void torch_case_run(TorchCase *c, int k, Arena *arena) {
    Shape s = c->s;
    /* PyTorch's own init range, ±1/√H. */
    c->in = make_inputs(s, 200 + 10 * (uint64_t)k, 1.0f, 1.0f / sqrtf((float)s.H));
    c->dout = random_floats(out_size(s), 210 + 10 * (uint64_t)k);
    Tape t;
    tape_init(&t, arena);
    zero_grads(&c->in);
    Tensor *h = run_op(&t, &c->in, c->dout);
    c->h = al_malloc((size_t)h->n * sizeof(float));
    memcpy(c->h, h->data, (size_t)h->n * sizeof(float));
    tape_free(&t);
    static const char *const IN_NAME[5] = { "x", "w_ih", "w_hh", "b", "dout" };
    for (int i = 0; i < 5; i++) snprintf(c->names[i], sizeof c->names[i], "%d.%s", k, IN_NAME[i]);
}

static void torch_case_compare(const TorchCase *c, int k, const StFile *f) {
    char what[64];
    snprintf(what, sizeof what, "B%d T%d In%d H%d", c->s.B, c->s.T, c->s.In, c->s.H);
    static const char *const OUT_NAME[5] = { "h", "grad.x", "grad.w_ih", "grad.w_hh", "grad.b" };
    Tensor h_t;
    tensor_init(&h_t, c->h, NULL, 3, (const int[]){ c->s.B, c->s.T, c->s.H });
    printf("  %-18s", what);
    for (int i = 0; i < 5; i++) {
        const Tensor *m = i == 0 ? &h_t : c->in.t[i - 1];
        char name[32];
        snprintf(name, sizeof name, "%d.%s", k, OUT_NAME[i]);
        int64_t shape[AD_MAX_DIMS];
        for (int d = 0; d < m->ndim; d++) shape[d] = m->shape[d];
        double *ref = al_malloc((size_t)m->n * sizeof(double));
        AlError err = { 0 };
        int ok = st_read(f, name, ST_F64, m->ndim, shape, ref, &err) == 0;
        CHECK(ok, "%s: %s", what, err.msg);
        if (ok) {
            double e = rel_err(i == 0 ? m->data : m->grad, ref, m->n);
            char lbl[128];
            snprintf(lbl, sizeof lbl, "%s: %s vs torch (relative)", what, OUT_NAME[i]);
            CHECK_NEAR(e, 0, TORCH_TOL, lbl);
            printf(" %s %.1e", OUT_NAME[i], e);
        }
        free(ref);
    }
    printf("\n");
}

static void torch_tests(void) {
    printf("(2) parity with torch.nn.LSTM (float64), max |c - t| / max |t| <= %g\n", TORCH_TOL);
    if (!torch_available()) {
        printf("  SKIP: " PYTHON " cannot import torch (apt-get install python3-torch)\n");
        return;
    }
    char dir[] = "/tmp/attnlab_lstm_XXXXXX", in_path[64], out_path[64];
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp: cannot create a temporary folder");
        return;
    }
    snprintf(in_path, sizeof in_path, "%s/in.safetensors", dir);
    snprintf(out_path, sizeof out_path, "%s/out.safetensors", dir);
    TorchCase cases[N_TORCH] = {
        { .s = { 3, 1, 5, 7 } }, { .s = { 2, 2, 4, 3 } }, { .s = { 3, 7, 5, 7 } },
        { .s = { 4, 50, 16, 32 } },
    };
    Arena arena;
    arena_init(&arena, 1 << 20);
    StTensor st[5 * N_TORCH];
    for (int k = 0; k < N_TORCH; k++) {
        TorchCase *c = &cases[k];
        torch_case_run(c, k, &arena);
        Shape s = c->s;
        st[5 * k + 0] = (StTensor){ c->names[0], 3, { s.B, s.T, s.In }, c->in.t[0]->data, ST_F32 };
        st[5 * k + 1] = (StTensor){ c->names[1], 2, { 4 * s.H, s.In }, c->in.t[1]->data, ST_F32 };
        st[5 * k + 2] = (StTensor){ c->names[2], 2, { 4 * s.H, s.H }, c->in.t[2]->data, ST_F32 };
        st[5 * k + 3] = (StTensor){ c->names[3], 1, { 4 * s.H }, c->in.t[3]->data, ST_F32 };
        st[5 * k + 4] = (StTensor){ c->names[4], 3, { s.B, s.T, s.H }, c->dout, ST_F32 };
    }
    AlError err = { 0 };
    int rc = st_write(in_path, st, 5 * N_TORCH, NULL, 0, &err);
    CHECK(rc == 0, "writing %s: %s", in_path, err.msg);
    if (rc == 0) {
        rc = run_torch(in_path, out_path);
        CHECK(rc == 0, "the torch script failed (exit %d)", rc);
    }
    StFile *f = rc == 0 ? st_open(out_path, &err) : NULL;
    CHECK(rc != 0 || f, "reading torch's results: %s", err.msg);
    for (int k = 0; f && k < N_TORCH; k++) torch_case_compare(&cases[k], k, f);
    st_close(f);
    for (int k = 0; k < N_TORCH; k++) {
        free_inputs(&cases[k].in);
        free(cases[k].dout);
        free(cases[k].h);
    }
    arena_free(&arena);
    unlink(in_path);
    unlink(out_path);
    rmdir(dir);
}

/* ---- (3) timing ----------------------------------------------------------------- */

static double now_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void timing(void) {
    const Shape s = { 32, 100, 128, 128 };
    const int reps = 10;
    Inputs in = make_inputs(s, 7, 1.0f, 1.0f / sqrtf((float)s.H));
    float *dout = random_floats(out_size(s), 8);
    Arena arena;
    arena_init(&arena, 1 << 20);
    Tape t;
    tape_init(&t, &arena);
    run_op(&t, &in, dout);   /* warm-up: grows the arena to its high-water size */
    double t_fwd = 0, t_bwd = 0;
    for (int r = 0; r < reps; r++) {
        tape_reset(&t);
        double t0 = now_sec();
        Tensor *h = ad_lstm(&t, in.t[0], in.t[1], in.t[2], in.t[3]);
        double t1 = now_sec();
        tape_backward_from(&t, h, dout);
        t_fwd += t1 - t0;
        t_bwd += now_sec() - t1;
    }
    t_fwd /= reps;
    t_bwd /= reps;
    /* GEMM flops: forward x·w_ihᵀ and h·w_hhᵀ; backward twice that (dh_rec, dW_hh,
     * dW_ih, dx).  The pointwise gate math is not counted. */
    double fl_fwd = 2.0 * s.B * s.T * 4.0 * s.H * (s.In + s.H);
    printf("(3) timing B%d T%d In%d H%d (mean of %d): forward %.2f ms (%.1f GFLOP/s), "
           "backward %.2f ms (%.1f GFLOP/s), total %.2f ms\n",
           s.B, s.T, s.In, s.H, reps, 1e3 * t_fwd, fl_fwd / t_fwd * 1e-9, 1e3 * t_bwd,
           2 * fl_fwd / t_bwd * 1e-9, 1e3 * (t_fwd + t_bwd));
    tape_free(&t);
    arena_free(&arena);
    free(dout);
    free_inputs(&in);
}

int main(void) {
    reference_tests();
    torch_tests();
    timing();
    return check_exit("test_lstm");
}
