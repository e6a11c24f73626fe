/* bench_attention.c — `./train bench attention`: why ANNA exists, in milliseconds.
 *
 * What is timed: the forward pass of ONE causal attention layer, one head, d = 64,
 * batch 1, grad off, on given q, k, v of N rows (the projections are not timed:
 * they cost the same O(N·d²) whatever mixes the rows afterwards):
 *   softmax   exact y = softmax(β·q̂·k̂ᵀ + causal mask)·v with q̂, k̂ the unit rows —
 *             the attention of ANNA's unit-norm surrogate — blocked, so memory
 *             is O(block·N) instead of the N×N matrix (17 GB at N = 65 536)
 *   anna_*    anna_attention, causal, ℓ = ANNA_TABLES tables of z functions, for
 *             hyperplane and cross-polytope LSH
 *   linear    ad_linear_attention, φ = elu+1, causal, in chunks of 32 rows
 *   sparse    ad_sparse_attention on q̂, k̂ with scale β, block 2^⌊log₂ √N⌋,
 *             one local block and one summary per block (k = c = 1)
 * Each includes its own normalisation of q and k where it has one (softmax and
 * sparse through ad_l2norm, ANNA inside anna_attention), as in a model.
 *
 * Protocol (the machine is shared: only ratios measured side by side mean much):
 *   per N: allocate everything once; warm every mechanism up (arena growth, page
 *   faults); time one call of each to choose its repetition count `inner` (calls
 *   per measurement, so one measurement lasts ≥ MIN_MEASURE_S) and its number of
 *   rounds (odd, ≤ MAX_ROUNDS, within MECH_BUDGET_S); then run the rounds, each
 *   measuring in turn every mechanism that still has rounds left, and report each
 *   one's median.  Rounds interleave the mechanisms so a burst of load from
 *   another process hits all alike.  Why a budget per mechanism rather than one
 *   round count for all: exact softmax takes seconds per call at large N and gets
 *   1–3 rounds there, and the fast mechanisms must not be held to that — a single
 *   50 ms sample of ANNA at N = 65 536 would decide its fitted exponent.
 *
 * Inputs (DESIGN in bench/README.md): the timed inputs are clustered — keys and
 * queries noisy copies of N_CLUSTERS unit centres, values a per-cluster value
 * plus noise — so that β·cosine attention is peaked and approximating it is
 * meaningful.  ANNA's relative L2 error against exact softmax is measured on those
 * outputs and again on plain Gaussian q, k, v (not timed). */
#include "attnlab/anna/anna.h"
#include "attnlab/autodiff/ops.h"
#include "attnlab/io/atomic_file.h"
#include "attnlab/report/svg.h"
#include "attnlab/bench/bench.h"
#include "attnlab/train/progress.h"
#include "attnlab/train/trainer.h"
#include "attnlab/util/fsutil.h"
#include "attnlab/util/rng.h"

#include "attnlab/util/fastmath.h"

#include "attnlab/util/gemm.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define D              64
#define MIN_N          256
#define DEFAULT_MAX_N  65536
#define LIMIT_MAX_N    262144    /* softmax takes minutes beyond; sizes stay far from int range */
#define MAX_POINTS     11        /* 256 … 262144 */
#define BETA           10.0f     /* β·cos: peaked on these inputs, see bench/README.md */
#define SOFTMAX_BLOCK  256       /* query rows per block: 64 MB of scores at N = 65 536 */

/* ANNA: ℓ tables; z per family chosen so that on the clustered inputs a table
 * rarely joins a query with another cluster's keys (collision probability
 * (1 − θ/π)^z for hyperplanes; cross-polytope's 2d buckets per function separate
 * faster) while ℓ tables still find its own cluster.  The time hardly depends on
 * z, the error a lot: bench/README.md has the sweep behind the choice. */
#define ANNA_TABLES    8
#define HP_FUNCS       12
#define CP_FUNCS       2
#define LSH_SEED       1

#define N_CLUSTERS     16
#define NOISE          0.3       /* noise norm (q, k) and std (v) around the centres */
#define INPUT_SEED     5

#define MIN_MEASURE_S  0.05      /* one measurement: ≥ 50 ms of back-to-back calls */
#define MECH_BUDGET_S  6.0       /* per N and mechanism, all its rounds together */
#define MAX_ROUNDS     7
#define FIT_OCTAVES    5         /* exponents from the 5 largest N: max_n/16 … max_n */

/* ------------------------------------------------------ exact blocked softmax --- */

long attention_blocked_work_floats(int n) {
    return (long)(n < SOFTMAX_BLOCK ? n : SOFTMAX_BLOCK) * n;
}

/* Row s of scores: e^{s_j − max} over the `visible` keys, zeros up to `width` so
 * P·V can run over the whole block.  Returns 1/Σ: the division is applied to the
 * output row afterwards — dv multiplies instead of `visible`. */
static float exp_row(float *s, int visible, int width) {
    float mx = fm_max(s, visible);
    for (int j = 0; j < visible; j++) s[j] = fm_exp(s[j] - mx);
    memset(s + visible, 0, (size_t)(width - visible) * sizeof(float));
    return 1.0f / fm_sum(s, visible);   /* ≥ 1: the max itself contributes e⁰ */
}

void attention_softmax_causal_blocked(const float *q, const float *k, const float *v, int n, int d,
                                      int dv, float scale, float *out, float *work) {
    float inv[SOFTMAX_BLOCK];
    for (int i0 = 0; i0 < n; i0 += SOFTMAX_BLOCK) {
        const int rows = n - i0 < SOFTMAX_BLOCK ? n - i0 : SOFTMAX_BLOCK;
        /* Causal: keys after the block's last row are masked for all its rows, so
         * they are never scored — half of the N² work, as in any causal kernel. */
        const int keys = i0 + rows;
        al_sgemm(CblasNoTrans, CblasTrans, rows, keys, d, scale, q + (long)i0 * d, d,
                    k, d, 0.0f, work, keys);
        for (int r = 0; r < rows; r++) inv[r] = exp_row(work + (long)r * keys, i0 + r + 1, keys);
        al_sgemm(CblasNoTrans, CblasNoTrans, rows, dv, keys, 1.0f, work, keys, v, dv,
                    0.0f, out + (long)i0 * dv, dv);
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < dv; c++) out[(long)(i0 + r) * dv + c] *= inv[r];
    }
}

/* ------------------------------------------------------------ fitted exponent --- */

double bench_fit_exponent(const double *n, const double *t, int count) {
    if (count < 2) return NAN;
    double mx = 0, my = 0;
    for (int i = 0; i < count; i++) {
        if (!(n[i] > 0) || !(t[i] > 0)) return NAN;
        mx += log(n[i]) / count;
        my += log(t[i]) / count;
    }
    double sxy = 0, sxx = 0;
    for (int i = 0; i < count; i++) {
        sxy += (log(n[i]) - mx) * (log(t[i]) - my);
        sxx += (log(n[i]) - mx) * (log(n[i]) - mx);
    }
    return sxx > 0 ? sxy / sxx : NAN;
}

/* -------------------------------------------------------------- one layer, N --- */

/* Everything a size needs, allocated once before anything is timed. */
typedef struct Layer {
    int n, sparse_block;
    float *q, *k, *v;              /* n × D each: the current inputs */
    Tensor tq, tk, tv;             /* (1, 1, n, D) views for the autodiff ops */
    float *y_softmax, *y_anna[2];  /* n × D: outputs kept for the error */
    float *work;                   /* the blocked softmax's scores */
    const Lsh *lsh;                /* [LSH_HYPERPLANE], [LSH_CROSSPOLYTOPE] */
    void *anna_scratch;
    Arena arena;                   /* grad off: outputs and scratch of the autodiff ops */
    Tape tape;
} Layer;

static const float *run_softmax(Layer *L, int unused) {
    (void)unused;
    tape_reset(&L->tape);
    const float *qh = ad_l2norm(&L->tape, &L->tq, 1e-12f)->data, *kh = ad_l2norm(&L->tape, &L->tk, 1e-12f)->data;
    attention_softmax_causal_blocked(qh, kh, L->v, L->n, D, D, BETA, L->y_softmax, L->work);
    return L->y_softmax;
}

static const float *run_anna(Layer *L, int family) {
    anna_attention(&L->lsh[family], L->q, L->k, L->v, L->n, D, D, 1, L->y_anna[family], L->anna_scratch, NULL);
    return L->y_anna[family];
}

static const float *run_linear(Layer *L, int unused) {
    (void)unused;
    tape_reset(&L->tape);
    return ad_linear_attention(&L->tape, &L->tq, &L->tk, &L->tv, FEATURE_ELU1, 1, 1e-6f)->data;
}

static const float *run_sparse(Layer *L, int unused) {
    (void)unused;
    tape_reset(&L->tape);
    Tensor *qh = ad_l2norm(&L->tape, &L->tq, 1e-12f), *kh = ad_l2norm(&L->tape, &L->tk, 1e-12f);
    return ad_sparse_attention(&L->tape, qh, kh, &L->tv, L->sparse_block, 1, 1, BETA)->data;
}

typedef struct Mechanism {
    const char *name;     /* CSV column stem, RESULT lines */
    const char *label;    /* table header and legend */
    const float *(*run)(Layer *L, int arg);
    int arg;
} Mechanism;

enum { M_SOFTMAX, M_ANNA_HP, M_ANNA_CP, M_LINEAR, M_SPARSE, N_MECH };

static const Mechanism MECHS[N_MECH] = {
    [M_SOFTMAX] = { "softmax", "softmax", run_softmax, 0 },
    [M_ANNA_HP] = { "anna_hyperplane", "ANNA-hp", run_anna, LSH_HYPERPLANE },
    [M_ANNA_CP] = { "anna_crosspolytope", "ANNA-cp", run_anna, LSH_CROSSPOLYTOPE },
    [M_LINEAR] = { "linear", "linear", run_linear, 0 },
    [M_SPARSE] = { "sparse", "sparse", run_sparse, 0 },
};

/* Sparse attention's default block, as transformer.c: 2^⌊log₂ √N⌋. */
static int default_block(int n) {
    int b = 1;
    while (4L * b * b <= n) b *= 2;
    return b;
}

static float *alloc_floats(long n) {
    /* calloc: the pages are touched here, not during the first timed call. */
    return al_calloc((size_t)n, sizeof(float));
}

static void layer_init(Layer *L, int n, const Lsh *lsh) {
    memset(L, 0, sizeof *L);
    L->n = n;
    L->sparse_block = default_block(n);
    L->lsh = lsh;
    float **bufs[] = { &L->q, &L->k, &L->v, &L->y_softmax, &L->y_anna[0], &L->y_anna[1] };
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) *bufs[i] = alloc_floats((long)n * D);
    L->work = alloc_floats(attention_blocked_work_floats(n));
    const int shape[4] = { 1, 1, n, D };
    tensor_init(&L->tq, L->q, NULL, 4, shape);
    tensor_init(&L->tk, L->k, NULL, 4, shape);
    tensor_init(&L->tv, L->v, NULL, 4, shape);
    size_t scratch = anna_scratch_bytes(&lsh[0], n, D), cp = anna_scratch_bytes(&lsh[1], n, D);
    L->anna_scratch = al_calloc(scratch > cp ? scratch : cp, 1);
    arena_init(&L->arena, 1u << 20);
    tape_init(&L->tape, &L->arena);
    L->tape.grad_enabled = 0;
}

static void layer_free(Layer *L) {
    float *bufs[] = { L->q, L->k, L->v, L->y_softmax, L->y_anna[0], L->y_anna[1], L->work };
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
    free(L->anna_scratch);
    tape_free(&L->tape);
    arena_free(&L->arena);
}

/* --------------------------------------------------------------------- inputs --- */

static void gaussian_rows(Rng *r, float *x, long count, double scale) {
    for (long i = 0; i < count; i++) x[i] = (float)(scale * rng_normal(r));
}

/* Position j joins a random cluster a: k_j, q_j = centre_a + noise of norm ≈ NOISE
 * (cosine ≈ 1/(1 + NOISE²) ≈ 0.92 within a cluster, ≈ 0 ± 1/√d across), v_j =
 * value_a + N(0, NOISE²·I).  So exact attention retrieves "the value of my
 * cluster", and β·cos puts nearly all weight there.  The centres are the same for
 * every N (only the positions are drawn per N): with 16 of them, how close the
 * closest two happen to be sets ANNA's error, and a new draw per N would show up
 * as a trend in N that is not there. */
static void fill_clustered(Layer *L) {
    Rng r = rng_stream(INPUT_SEED, 0);
    float centre[N_CLUSTERS][D], value[N_CLUSTERS][D];
    for (int a = 0; a < N_CLUSTERS; a++) {
        gaussian_rows(&r, centre[a], D, 1.0);
        gaussian_rows(&r, value[a], D, 1.0);
        float inv = 1.0f / sqrtf(fm_dot(centre[a], centre[a], D));
        for (int c = 0; c < D; c++) centre[a][c] *= inv;
    }
    const double noise = NOISE / sqrt(D);
    r = rng_stream(INPUT_SEED, (uint64_t)L->n);
    for (long j = 0; j < L->n; j++) {
        int a = (int)rng_below(&r, N_CLUSTERS);
        float *rows[3] = { L->q + j * D, L->k + j * D, L->v + j * D };
        for (int m = 0; m < 3; m++) {
            gaussian_rows(&r, rows[m], D, m < 2 ? noise : NOISE);
            for (int c = 0; c < D; c++) rows[m][c] += m < 2 ? centre[a][c] : value[a][c];
        }
    }
}

static void fill_gaussian(Layer *L) {
    Rng r = rng_stream(INPUT_SEED + 1, (uint64_t)L->n);
    float *bufs[3] = { L->q, L->k, L->v };
    for (int m = 0; m < 3; m++) gaussian_rows(&r, bufs[m], (long)L->n * D, 1.0);
}

/* ‖a − b‖ / ‖b‖ in double. */
static double rel_l2(const float *a, const float *b, long count) {
    double num = 0, den = 0;
    for (long i = 0; i < count; i++) {
        double e = (double)a[i] - b[i];
        num += e * e;
        den += (double)b[i] * b[i];
    }
    return sqrt(num / den);
}

/* --------------------------------------------------------------------- timing --- */

typedef struct Row {
    int n, rounds[N_MECH];
    double ms[N_MECH];           /* median over rounds of the mean ms per call */
    double err[2][2];            /* ANNA family × inputs (0 clustered, 1 gaussian) */
    double load;                 /* 1-minute load average when this N started */
} Row;

/* The one timing helper: mean seconds per call over `inner` back-to-back calls.
 * The output is checked (outside the clock) so a mechanism that breaks shows up
 * as an error rather than as a fast time. */
static double time_calls(Layer *L, int m, int inner, AlError *err) {
    const float *y = NULL;
    double t0 = progress_now();
    for (int i = 0; i < inner; i++) y = MECHS[m].run(L, MECHS[m].arg);
    double s = (progress_now() - t0) / inner;
    for (long i = 0; i < (long)L->n * D; i++)
        if (!isfinite(y[i])) {
            al_fail(err, 1, "bench attention: %s gave a non-finite output at N = %d", MECHS[m].name, L->n);
            return -1;
        }
    return s;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double load_average(void) {
    FILE *f = fopen("/proc/loadavg", "r");
    double l = NAN;
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = NAN;
        fclose(f);
    }
    return l;
}

static int clamp_int(double x, int lo, int hi) { return x < lo ? lo : x > hi ? hi : (int)x; }

/* Warm-up, calibration and interleaved rounds on the inputs already in L. */
static int time_layer(Layer *L, Row *row, AlError *err) {
    for (int m = 0; m < N_MECH; m++) MECHS[m].run(L, MECHS[m].arg);
    tape_reset(&L->tape);   /* now: the arena's one block of the high-water size */
    int most = 0, inner[N_MECH];
    for (int m = 0; m < N_MECH; m++) {
        double one = time_calls(L, m, 1, err);
        if (one < 0) return err->code;
        inner[m] = clamp_int(ceil(MIN_MEASURE_S / fmax(one, 1e-9)), 1, 10000);
        int r = clamp_int(MECH_BUDGET_S / (one * inner[m]), 1, MAX_ROUNDS);
        row->rounds[m] = r - (r % 2 == 0);   /* odd: the median is a measurement */
        if (row->rounds[m] > most) most = row->rounds[m];
    }
    double s[N_MECH][MAX_ROUNDS];
    for (int r = 0; r < most; r++)
        for (int m = 0; m < N_MECH; m++)
            if (r < row->rounds[m] && (s[m][r] = time_calls(L, m, inner[m], err)) < 0) return err->code;
    for (int m = 0; m < N_MECH; m++) {
        qsort(s[m], (size_t)row->rounds[m], sizeof(double), cmp_double);
        row->ms[m] = 1000.0 * s[m][row->rounds[m] / 2];
    }
    return 0;
}

/* The fewest rounds any mechanism but softmax got (softmax's own are shown apart). */
static int fewest_other_rounds(const Row *r) {
    int f = MAX_ROUNDS;
    for (int m = 0; m < N_MECH; m++)
        if (m != M_SOFTMAX && r->rounds[m] < f) f = r->rounds[m];
    return f;
}

/* One N: time on clustered inputs (their outputs give the clustered error), then
 * one untimed softmax and ANNA pass on Gaussian inputs. */
static int measure(int n, const Lsh *lsh, Row *row, AlError *err) {
    Layer L;
    layer_init(&L, n, lsh);
    memset(row, 0, sizeof *row);
    row->n = n;
    row->load = load_average();
    fill_clustered(&L);
    int rc = time_layer(&L, row, err);
    for (int input = 0; input < 2 && !rc; input++) {
        if (input == 1) {
            fill_gaussian(&L);
            run_softmax(&L, 0);
        }
        for (int f = 0; f < 2; f++) {
            if (input == 1) run_anna(&L, f);
            row->err[f][input] = rel_l2(L.y_anna[f], L.y_softmax, (long)n * D);
        }
    }
    layer_free(&L);
    return rc;
}

/* -------------------------------------------------------------------- reports --- */

static double speedup(const Row *r, int m) { return r->ms[M_SOFTMAX] / r->ms[m]; }

static void print_header(void) {
    printf("%7s", "N");
    for (int m = 0; m < N_MECH; m++) printf(" %10s", MECHS[m].label);
    printf("  %10s %10s  %-15s %-15s %6s %5s\n", "hp speedup", "cp speedup", "hp err clu/gau",
           "cp err clu/gau", "rounds", "load");
}

static void print_row(const Row *r) {
    printf("%7d", r->n);
    for (int m = 0; m < N_MECH; m++) printf(" %10.3f", r->ms[m]);
    printf("  %9.1fx %9.1fx  %6.4f / %-6.3f %6.4f / %-6.3f  %2d/%-2d %5.2f\n", speedup(r, M_ANNA_HP),
           speedup(r, M_ANNA_CP), r->err[0][0], r->err[0][1], r->err[1][0], r->err[1][1], r->rounds[M_SOFTMAX],
           fewest_other_rounds(r), r->load);
    printf("RESULT attention n=%d", r->n);
    for (int m = 0; m < N_MECH; m++) printf(" %s_ms=%.6g", MECHS[m].name, r->ms[m]);
    printf(" anna_hyperplane_err=%.6g anna_crosspolytope_err=%.6g\n", r->err[0][0], r->err[1][0]);
    fflush(stdout);
}

/* Exponent of each mechanism over rows [first, count). */
static void fit_all(const Row *rows, int count, int first, double *slope) {
    double n[MAX_POINTS], t[MAX_POINTS];
    for (int m = 0; m < N_MECH; m++) {
        for (int i = first; i < count; i++) {
            n[i - first] = rows[i].n;
            t[i - first] = rows[i].ms[m];
        }
        slope[m] = bench_fit_exponent(n, t, count - first);
    }
}

static int write_csv(const char *dir, const Row *rows, int count, AlError *err) {
    char text[MAX_POINTS * 512 + 1024], path[AL_PATH_MAX];
    size_t len = (size_t)snprintf(text, sizeof text, "n");
    for (int m = 0; m < N_MECH; m++) len += (size_t)snprintf(text + len, sizeof text - len, ",%s_ms", MECHS[m].name);
    len += (size_t)snprintf(text + len, sizeof text - len,
                            ",anna_hyperplane_speedup,anna_crosspolytope_speedup"
                            ",anna_hyperplane_err_clustered,anna_hyperplane_err_gaussian"
                            ",anna_crosspolytope_err_clustered,anna_crosspolytope_err_gaussian");
    for (int m = 0; m < N_MECH; m++) len += (size_t)snprintf(text + len, sizeof text - len, ",%s_rounds", MECHS[m].name);
    len += (size_t)snprintf(text + len, sizeof text - len, ",load1\n");
    for (int i = 0; i < count; i++) {
        const Row *r = &rows[i];
        len += (size_t)snprintf(text + len, sizeof text - len, "%d", r->n);
        for (int m = 0; m < N_MECH; m++) len += (size_t)snprintf(text + len, sizeof text - len, ",%.6g", r->ms[m]);
        len += (size_t)snprintf(text + len, sizeof text - len, ",%.6g,%.6g,%.6g,%.6g,%.6g,%.6g",
                                speedup(r, M_ANNA_HP), speedup(r, M_ANNA_CP), r->err[0][0], r->err[0][1],
                                r->err[1][0], r->err[1][1]);
        for (int m = 0; m < N_MECH; m++) len += (size_t)snprintf(text + len, sizeof text - len, ",%d", r->rounds[m]);
        len += (size_t)snprintf(text + len, sizeof text - len, ",%.2f\n", r->load);
    }
    if (al_path_fmt(path, sizeof path, err, "%s/speed.csv", dir)) return err->code;
    return write_text_atomic(path, text, err);
}

static int write_svg(const char *dir, const Row *rows, int count, AlError *err) {
    double n[MAX_POINTS], ms[N_MECH][MAX_POINTS];
    SvgSeries series[N_MECH];
    for (int m = 0; m < N_MECH; m++) {
        for (int i = 0; i < count; i++) {
            n[i] = rows[i].n;
            ms[m][i] = rows[i].ms[m];
        }
        series[m] = (SvgSeries){ MECHS[m].label, count, n, ms[m], NULL };
    }
    SvgLineChart c = { "One causal attention layer, forward (d = 64, one head)", "sequence length N",
                       "ms per forward", series, N_MECH, 2, 10, 0, 0, 0 };
    char path[AL_PATH_MAX];
    if (al_path_fmt(path, sizeof path, err, "%s/speed.svg", dir)) return err->code;
    return svg_line_chart(path, &c, err);
}

/* Appends "%.4f" or "null" (JSON has no NaN). */
static size_t json_num(char *text, size_t len, size_t cap, double x) {
    return len + (size_t)(isfinite(x) ? snprintf(text + len, cap - len, "%.4f", x)
                                      : snprintf(text + len, cap - len, "null"));
}

static int write_summary(const char *dir, const Row *rows, int count, int first, const double *slope,
                         double load_end, AlError *err) {
    char text[4096], path[AL_PATH_MAX];
    size_t len = (size_t)snprintf(
        text, sizeof text,
        "{\n  \"d\": %d, \"heads\": 1, \"causal\": true, \"beta\": %g, \"softmax_block\": %d,\n"
        "  \"anna\": {\"tables\": %d, \"hyperplane_funcs\": %d, \"crosspolytope_funcs\": %d, \"seed\": %d},\n"
        "  \"sparse\": {\"block\": \"2^floor(log2 sqrt N)\", \"local_blocks\": 1, \"summary\": 1},\n"
        "  \"linear\": {\"feature\": \"elu1\", \"eps\": 1e-6},\n"
        "  \"inputs\": {\"clusters\": %d, \"noise\": %g, \"seed\": %d},\n"
        "  \"blas_threads\": %d, \"load1_start\": ",
        D, (double)BETA, SOFTMAX_BLOCK, ANNA_TABLES, HP_FUNCS, CP_FUNCS, LSH_SEED, N_CLUSTERS, NOISE,
        INPUT_SEED, openblas_get_num_threads());
    len = json_num(text, len, sizeof text, rows[0].load);
    len += (size_t)snprintf(text + len, sizeof text - len, ", \"load1_end\": ");
    len = json_num(text, len, sizeof text, load_end);
    len += (size_t)snprintf(text + len, sizeof text - len, ",\n  \"fit_n_from\": %d, \"fit_n_to\": %d,\n  \"exponent\": {",
                            rows[first].n, rows[count - 1].n);
    for (int m = 0; m < N_MECH; m++) {
        len += (size_t)snprintf(text + len, sizeof text - len, "%s\"%s\": ", m ? ", " : "", MECHS[m].name);
        len = json_num(text, len, sizeof text, slope[m]);
    }
    snprintf(text + len, sizeof text - len, "}\n}\n");
    if (al_path_fmt(path, sizeof path, err, "%s/summary.json", dir)) return err->code;
    return write_text_atomic(path, text, err);
}

/* ------------------------------------------------------------------ the run --- */

static void print_preamble(int max_n, double load) {
    printf("attnlab bench attention: one causal layer, forward only, d = %d, one head, N = %d … %d\n", D, MIN_N, max_n);
    printf("  softmax: exact, unit-norm q, k, beta = %g, blocks of %d query rows\n", (double)BETA, SOFTMAX_BLOCK);
    printf("  ANNA: %d tables; hyperplane z = %d, cross-polytope z = %d   linear: elu+1   "
           "sparse: block 2^floor(log2 sqrt N), k = c = 1\n", ANNA_TABLES, HP_FUNCS, CP_FUNCS);
    printf("  inputs: %d clusters, noise %g (timed, 'clu'); Gaussian ('gau', errors only)\n", N_CLUSTERS, NOISE);
    printf("  BLAS threads %d; 1-minute load average %.2f at start (other processes share this machine:\n"
           "  compare the speedups and exponents, not absolute times)\n", openblas_get_num_threads(), load);
    printf("  ms = median over rounds of the mean per call; rounds = softmax's / the fewest of the others';\n"
           "  err = ||y_anna - y_softmax|| / ||y_softmax||\n\n");
    print_header();
    fflush(stdout);
}

static void print_exponents(const Row *rows, int count, int first, const double *slope) {
    printf("\nfitted exponent p of time ~ N^p (least squares on log-log, N = %d … %d):\n", rows[first].n,
           rows[count - 1].n);
    for (int m = 0; m < N_MECH; m++) {
        printf("  %-10s %6.3f\n", MECHS[m].label, slope[m]);
        printf("RESULT attention_exponent mech=%s p=%.4f n_from=%d n_to=%d\n", MECHS[m].name, slope[m],
               rows[first].n, rows[count - 1].n);
    }
}

static int is_valid_max_n(int n) {
    return n >= MIN_N && n <= LIMIT_MAX_N && (n & (n - 1)) == 0;
}

int bench_attention_run(const BenchAttentionOptions *opt, AlError *err) {
    const int max_n = opt->max_n ? opt->max_n : DEFAULT_MAX_N;
    const char *dir = opt->out_dir ? opt->out_dir : "results/attention_speed";
    if (al_path_check(dir, AL_FOLDER_ROOM, "bench attention: --out", err)) return err->code;
    if (!is_valid_max_n(max_n))
        return al_fail(err, 2, "bench attention: --max-n must be a power of two in %d..%d (got %d)", MIN_N,
                       LIMIT_MAX_N, max_n);
    if (al_mkdir_p(dir, err)) return err->code;
    /* One BLAS thread, whatever the caller had: exact softmax is all sgemm and would
     * gain from more threads where the others gain little. */
    openblas_set_num_threads(1);
    Lsh lsh[2];
    if (lsh_init(&lsh[LSH_HYPERPLANE], LSH_HYPERPLANE, D, ANNA_TABLES, HP_FUNCS, LSH_SEED, err) ||
        lsh_init(&lsh[LSH_CROSSPOLYTOPE], LSH_CROSSPOLYTOPE, D, ANNA_TABLES, CP_FUNCS, LSH_SEED, err)) {
        lsh_free(&lsh[LSH_HYPERPLANE]);
        return err->code;
    }
    Row rows[MAX_POINTS];
    int count = 0, rc = 0;
    print_preamble(max_n, load_average());
    for (int n = MIN_N; n <= max_n && !rc; n *= 2) {
        rc = measure(n, lsh, &rows[count], err);
        if (!rc) print_row(&rows[count++]);
    }
    for (int f = 0; f < 2; f++) lsh_free(&lsh[f]);
    if (rc) return rc;

    int first = count > FIT_OCTAVES ? count - FIT_OCTAVES : 0;
    double slope[N_MECH];
    fit_all(rows, count, first, slope);
    print_exponents(rows, count, first, slope);
    double load_end = load_average();
    printf("1-minute load average: %.2f at start, %.2f at the end\n", rows[0].load, load_end);
    rc = write_csv(dir, rows, count, err) || write_svg(dir, rows, count, err) ||
         write_summary(dir, rows, count, first, slope, load_end, err);
    if (rc) return err->code;
    printf("wrote %s/speed.csv, speed.svg, summary.json\n", dir);
    return 0;
}

int bench_attention_main(int argc, char **argv, AlError *err) {
    BenchAttentionOptions opt = { 0, NULL };
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max-n") && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < MIN_N || v > LIMIT_MAX_N || !is_valid_max_n((int)v))
                return al_fail(err, 2, "bench attention: --max-n must be a power of two in %d..%d (got '%s')",
                               MIN_N, LIMIT_MAX_N, argv[i]);
            opt.max_n = (int)v;
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            opt.out_dir = argv[++i];
        } else {
            return al_fail(err, 2, "bench attention: unknown argument '%s' (usage: ./train bench attention "
                                   "[--max-n N] [--out DIR])", argv[i]);
        }
    }
    return bench_attention_run(&opt, err);
}
