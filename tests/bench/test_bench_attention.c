/* test_bench_attention.c — `./train bench attention`'s parts (src/bench/bench_attention.c).
 *
 * 1. The blocked exact softmax equals the fused op it stands in for:
 *    ad_attention(l2norm q, l2norm k, v, causal mask, β) for N ∈ {1, 7, 256, 1000}
 *    (one block, a partial block, exactly one full block, four blocks with a partial
 *    last one), d = 64, β = 10 on unit rows; plus raw Gaussian q, k with scale 4,
 *    whose scores reach ±100 — past fm_exp's overflow at 88, so only a
 *    max-subtracted softmax survives — and a d ≠ dv case.
 *    Tolerance, absolute on outputs that are weighted means of v rows in ±1: both
 *    are float and compute the same sums in a different order (the blocked form
 *    scores only visible keys, normalises after P·V instead of before, and its
 *    sgemm has a shorter inner dimension).  A score s = scale·q·k carries a
 *    rounding error of order ε·scale·‖q‖‖k‖ (ε = FLT_EPSILON; relative to the
 *    norms, not to s, since the dot product cancels), e^s turns it into the same
 *    relative error of the weight, and the output moves by at most that times
 *    max|v − y| ≤ 2.  Hence tol = 2·ε·(1 + scale·max‖q‖·max‖k‖): 2.6e-6 for unit
 *    rows at β = 10 (observed ≤ 4.8e-7), ~1e-4 for the raw case (observed 1.8e-5).
 * 2. bench_fit_exponent on synthetic data: t = 3·N² → 2, t = 0.5·N·log₂N lies
 *    between 1 and the value fitted by hand, NaN for bad input.
 * 3. A tiny run (--max-n 512, through bench_attention_run, into a mkdtemp folder):
 *    speed.csv has the header, one row per N with every mechanism's time > 0, the
 *    speedup equal to softmax_ms / anna_ms, odd round counts per mechanism and
 *    sane errors;
 *    speed.svg names every mechanism; summary.json holds five finite exponents.
 *    Bad --max-n is a usage error (2) and writes nothing. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/bench/bench.h"
#include "attnlab/util/error.h"
#include "attnlab/util/rng.h"
#include "check.h"
#include "testutil.h"

#include <cJSON.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ========================================================================== */
/* 1. Blocked softmax against the fused op. */

static void fill_normal(float *x, long n, uint64_t seed) {
    Rng r = rng_stream(seed, 3);
    for (long i = 0; i < n; i++) x[i] = (float)rng_normal(&r);
}

static void fill_uniform(float *x, long n, uint64_t seed) {
    Rng r = rng_stream(seed, 4);
    for (long i = 0; i < n; i++) x[i] = (float)(2 * rng_uniform(&r) - 1);
}

static double max_row_norm(const float *x, int n, int d) {
    double m = 0;
    for (long i = 0; i < n; i++) {
        double s = 0;
        for (int c = 0; c < d; c++) s += (double)x[i * d + c] * x[i * d + c];
        m = fmax(m, sqrt(s));
    }
    return m;
}

/* unit: normalise q, k (the bench's softmax); otherwise use them raw. */
static void check_blocked(int n, int d, int dv, float scale, int unit) {
    Arena a;
    arena_init(&a, 1u << 20);
    Tape t;
    tape_init(&t, &a);
    t.grad_enabled = 0;
    Tensor *q = tape_tensor(&t, 0, 4, (const int[]){ 1, 1, n, d });
    Tensor *k = tape_tensor(&t, 0, 4, (const int[]){ 1, 1, n, d });
    Tensor *v = tape_tensor(&t, 0, 4, (const int[]){ 1, 1, n, dv });
    Tensor *mask = tape_tensor(&t, 0, 2, (const int[]){ n, n });
    fill_normal(q->data, q->n, (uint64_t)n * 3 + 1);
    fill_normal(k->data, k->n, (uint64_t)n * 3 + 2);
    fill_uniform(v->data, v->n, (uint64_t)n * 3 + 3);
    ad_causal_mask(mask);
    if (unit) {
        q = ad_l2norm(&t, q, 1e-12f);
        k = ad_l2norm(&t, k, 1e-12f);
    }
    Tensor *ref = ad_attention(&t, q, k, v, mask, scale);

    float *out = malloc((size_t)n * dv * sizeof(float));
    float *work = malloc((size_t)attention_blocked_work_floats(n) * sizeof(float));
    attention_softmax_causal_blocked(q->data, k->data, v->data, n, d, dv, scale, out, work);
    double worst = 0, tol = 2 * FLT_EPSILON * (1 + scale * max_row_norm(q->data, n, d) * max_row_norm(k->data, n, d));
    for (long i = 0; i < (long)n * dv; i++) worst = fmax(worst, fabs((double)out[i] - ref->data[i]));
    CHECK(worst <= tol, "blocked softmax N=%d d=%d dv=%d scale %g unit %d: max |diff| %.3g > tol %.3g", n, d, dv,
          (double)scale, unit, worst, tol);
    printf("blocked vs fused: N=%4d d=%d dv=%d scale %4g %s: max |diff| %.2g (tol %.2g)\n", n, d, dv, (double)scale,
           unit ? "unit q,k" : "raw q,k ", worst, tol);
    free(out);
    free(work);
    tape_free(&t);
    arena_free(&a);
}

static void test_blocked(void) {
    const int ns[] = { 1, 7, 256, 1000 };
    for (int i = 0; i < 4; i++) check_blocked(ns[i], 64, 64, 10.0f, 1);
    check_blocked(1000, 64, 64, 4.0f, 0);   /* scores up to ~±100: needs the max subtraction */
    check_blocked(300, 16, 8, 10.0f, 1);    /* d ≠ dv, a partial second block */
}

/* ========================================================================== */
/* 2. The fitted exponent. */

static void test_fit(void) {
    double n[6], t[6];
    for (int i = 0; i < 6; i++) {
        n[i] = 256.0 * (1 << i);
        t[i] = 3.0 * n[i] * n[i];
    }
    CHECK_NEAR(bench_fit_exponent(n, t, 6), 2.0, 1e-12, "t = 3 N^2");
    for (int i = 0; i < 6; i++) t[i] = 0.5 * n[i] * log2(n[i]);
    /* N·log₂N over N = 2^8 … 2^13: slope 1 + (Σ dx·log(log₂N))/(Σ dx²) ≈ 1.12. */
    double p = bench_fit_exponent(n, t, 6);
    CHECK(p > 1.05 && p < 1.2, "t = N log N: exponent %g", p);
    t[2] = 0;
    CHECK(isnan(bench_fit_exponent(n, t, 6)), "a zero time must give NaN");
    CHECK(isnan(bench_fit_exponent(n, t, 1)), "one point must give NaN");
    double same[2] = { 512, 512 }, tt[2] = { 1, 2 };
    CHECK(isnan(bench_fit_exponent(same, tt, 2)), "equal N must give NaN");
}

/* ========================================================================== */
/* 3. A tiny run writes complete, consistent files. */

static const char *MECHS[] = { "softmax", "anna_hyperplane", "anna_crosspolytope", "linear", "sparse" };
static const char *LABELS[] = { "softmax", "ANNA-hp", "ANNA-cp", "linear", "sparse" };
enum { NM = 5, NCOL = 18 };   /* n, 5 ms, 2 speedups, 4 errors, 5 rounds, load1 */

/* Splits one CSV line into NCOL numbers; returns how many were read. */
static int parse_row(const char *line, double *v) {
    int c = 0;
    for (const char *p = line; c < NCOL; c++) {
        char *end;
        v[c] = strtod(p, &end);
        if (end == p) break;
        if (*end != ',') return c + 1;
        p = end + 1;
    }
    return c;
}

static void test_tiny_run(void) {
    char dir[] = "/tmp/attnlab_bench_attn_XXXXXX", out[128], path[256];
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp failed");
        return;
    }
    snprintf(out, sizeof out, "%s/out/nested", dir);
    AlError err = { 0 };
    BenchAttentionOptions bad = { 300, out };
    CHECK(bench_attention_run(&bad, &err) == 2, "--max-n 300 must be rejected");
    CHECK(access(out, F_OK) != 0, "a rejected run must create nothing");

    BenchAttentionOptions opt = { 512, out };
    CHECK(bench_attention_run(&opt, &err) == 0, "tiny run failed: %s", err.msg);

    snprintf(path, sizeof path, "%s/speed.csv", out);
    char *csv = tu_read_file(path, NULL);
    CHECK(csv != NULL, "no speed.csv");
    if (csv) {
        char *line = strtok(csv, "\n");
        for (int m = 0; m < NM; m++) {
            char col[64];
            snprintf(col, sizeof col, ",%s_ms", MECHS[m]);
            CHECK(line && strstr(line, col), "header lacks %s: %s", col, line ? line : "");
        }
        int rows = 0;
        for (line = strtok(NULL, "\n"); line; line = strtok(NULL, "\n"), rows++) {
            double v[NCOL];
            CHECK(parse_row(line, v) == NCOL, "row %d has not %d numbers: %s", rows, NCOL, line);
            CHECK(v[0] == 256 << rows, "row %d: N = %g", rows, v[0]);
            for (int m = 0; m < NM; m++)
                CHECK(v[1 + m] > 0 && v[1 + m] < 10000, "row %d: %s_ms = %g", rows, MECHS[m], v[1 + m]);
            for (int f = 0; f < 2; f++)
                CHECK(fabs(v[6 + f] - v[1] / v[2 + f]) <= 1e-4 * v[6 + f], "row %d: speedup %g vs %g / %g", rows,
                      v[6 + f], v[1], v[2 + f]);
            /* Clustered inputs: ANNA finds the query's cluster (observed 0.10–0.23
             * at these N); Gaussian: no structure to find, any finite value. */
            CHECK(v[8] >= 0 && v[8] < 0.5 && v[10] >= 0 && v[10] < 0.5, "row %d: clustered errors %g, %g", rows,
                  v[8], v[10]);
            CHECK(isfinite(v[9]) && v[9] > 0 && isfinite(v[11]) && v[11] > 0, "row %d: gaussian errors %g, %g",
                  rows, v[9], v[11]);
            for (int m = 0; m < NM; m++)
                CHECK(v[12 + m] >= 1 && (int)v[12 + m] % 2 == 1, "row %d: %s rounds %g", rows, MECHS[m], v[12 + m]);
        }
        CHECK(rows == 2, "speed.csv has %d rows, want 2 (N = 256, 512)", rows);
        free(csv);
    }

    snprintf(path, sizeof path, "%s/speed.svg", out);
    char *svg = tu_read_file(path, NULL);
    CHECK(svg && strstr(svg, "<svg"), "no speed.svg");
    for (int m = 0; m < NM && svg; m++) CHECK(strstr(svg, LABELS[m]) != NULL, "speed.svg lacks %s", LABELS[m]);
    free(svg);

    snprintf(path, sizeof path, "%s/summary.json", out);
    char *text = tu_read_file(path, NULL);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    CHECK(j != NULL, "summary.json missing or not JSON");
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(j, "exponent");
    for (int m = 0; m < NM; m++) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(ex, MECHS[m]);
        /* A tiny, loaded run says nothing about the true exponent (timings of
         * sub-millisecond calls under sanitizers are noise): only that one is written. */
        CHECK(cJSON_IsNumber(p) && isfinite(p->valuedouble), "exponent of %s", MECHS[m]);
    }
    cJSON_Delete(j);
    free(text);

    const char *files[] = { "speed.csv", "speed.svg", "summary.json" };
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", out, files[i]);
        remove(path);
    }
    rmdir(out);
    snprintf(path, sizeof path, "%s/out", dir);
    rmdir(path);
    rmdir(dir);
}

int main(void) {
    test_blocked();
    test_fit();
    test_tiny_run();
    return check_exit("test_bench_attention");
}
