/* test_p002_mc.c — paper 002's Monte-Carlo forward pass against closed forms and
 * reference numbers (the reference table of results/paper002/README.md; docs/design.md), and the mc config's errors.
 *
 *  - Attention weights on the special key equal the closed forms of paper 002's attention weights
 *    (softmax 1/(1 + (n−1) n^{−a(1+a)}), linear (1+a)/(n+a), ...), computed here
 *    from the formulas, not from the code's scores.
 *  - Column d of every self-attention output is c·sqrt(ln n) (weights sum to 1).
 *  - The readout F equals a brute-force sum on a small case.
 *  - Success ratios agree with the reference table (200 repetitions there) within 4 standard
 *    deviations of the difference of two binomial proportions; the toy's m sweep
 *    against its exact law 1 − 2^{−m}.
 *  - Every config error of docs/errors.md "mc configs" names the file and key. */
#include "attnlab/exp/p002_config.h"
#include "attnlab/exp/p002_mc.h"
#include "attnlab/exp/p002_run.h"
#include "check.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEED 20231018u

static McParams self_params(McSetting s, int n, int d) {
    return (McParams){ .setting = s, .n = n, .d = d, .m = 15, .a0 = 0.01, .a1 = 1.2, .b = 0.2, .c = 0.8,
                       .tau = mc_auto_tau(s, n, 0.8) };
}

/* Weight row r puts on key j after mc_attend. */
static double weight(const McWork *w, int r, int j) { return w->W[(size_t)r * w->n + j]; }

/* ---- closed forms -------------------------------------------------------------- */

static void test_self_ones(void) {
    const int n = 200, j3 = 37;
    McParams p = self_params(MC_SELF_ONES, n, 22);
    McWork w;
    mc_work_init(&w, &p);
    for (int d1 = 0; d1 <= 1; d1++) {
        double a = d1 ? p.a1 : p.a0, N = n;
        mc_build(&p, d1, j3, 0, NULL, &w);
        mc_attend(MC_EXP, &w);
        /* Closed form: row j3 1/(1 + (n−1) n^{−a(1+a)}); other rows 1/(1 + (n−1) n^{−a}),
         * and 1/(n^a + n − 1) on every other key. */
        double self_w = 1.0 / (1.0 + (N - 1) * pow(N, -a * (1 + a)));
        double other_w = 1.0 / (1.0 + (N - 1) * pow(N, -a)), rest = 1.0 / (pow(N, a) + N - 1);
        double worst = fabs(weight(&w, j3, j3) - self_w) / self_w;
        for (int r = 0; r < n; r++) {
            if (r == j3) continue;
            double e = fabs(weight(&w, r, j3) - other_w) / other_w;
            double f = fabs(weight(&w, r, (j3 + 1) % n) - rest) / rest;
            worst = fmax(worst, fmax(e, f));
        }
        CHECK(worst < 1e-12, "self QK=1 softmax D%d: worst relative error %.3g vs closed form", d1, worst);
        if (d1) CHECK_NEAR(weight(&w, j3, j3), 0.9998, 5e-5, "self QK=1 softmax D1 row j3 (reference: 0.9998)");
        if (d1) CHECK_NEAR(weight(&w, 0, j3), 0.744, 5e-4, "self QK=1 softmax D1 other rows (reference: 0.744)");
        if (!d1) CHECK_NEAR(weight(&w, j3, j3), 0.0053, 5e-5, "self QK=1 softmax D0 row j3 (reference: 0.0053)");

        mc_attend(MC_LIN, &w);
        double lin = (1 + a) / (N + a), lo = 1, hi = 0;
        for (int r = 0; r < n; r++) lo = fmin(lo, weight(&w, r, j3)), hi = fmax(hi, weight(&w, r, j3));
        CHECK(hi - lo <= 1e-16, "self QK=1 linear D%d: weight on j3 differs across rows (%.17g .. %.17g)", d1, lo, hi);
        CHECK(fabs(lo - lin) <= 1e-15, "self QK=1 linear D%d: weight on j3 %.17g, closed form (1+a)/(n+a) = %.17g",
              d1, lo, lin);
    }
    /* The reference table: linear D1 = 2.2/201.2, D0 = 1.01/200.01 (about 0.0109 and 0.0050). */
    mc_build(&p, 1, j3, 0, NULL, &w);
    mc_attend(MC_LIN, &w);
    CHECK_NEAR(weight(&w, 5, j3), 2.2 / 201.2, 1e-15, "self QK=1 linear D1 (2.2/201.2)");
    mc_build(&p, 0, j3, 0, NULL, &w);
    mc_attend(MC_LIN, &w);
    CHECK_NEAR(weight(&w, 5, j3), 1.01 / 200.01, 1e-15, "self QK=1 linear D0 (1.01/200.01)");
    mc_work_free(&w);
}

static void test_self_identity(void) {
    const int n = 200, d = 22, j3 = 123;
    McParams p = self_params(MC_SELF_IDENTITY, n, d);
    McWork w;
    mc_work_init(&w, &p);
    mc_build(&p, 1, j3, 0, NULL, &w);
    /* Closed form: row j3 scores ln n·(a² + b² + c²) on itself, ln n·(b² + c²) on the
     * t − 1 other rows of its Type II group, ln n·c² elsewhere; t = n/(d − 2) = 10. */
    double N = n, a = p.a1, b2 = p.b * p.b, c2 = p.c * p.c, t = n / (d - 2);
    double top = pow(N, a * a + b2 + c2);
    double soft = top / (top + (t - 1) * pow(N, b2 + c2) + (N - t) * pow(N, c2));
    mc_attend(MC_EXP, &w);
    CHECK(fabs(weight(&w, j3, j3) - soft) < 1e-12 * soft, "self QK=I softmax row j3: %.17g vs %.17g",
          weight(&w, j3, j3), soft);
    CHECK_NEAR(weight(&w, j3, j3), 0.927, 5e-4, "self QK=I softmax D1 row j3 (reference: 0.927)");
    mc_attend(MC_LIN, &w);
    double lin = (a * a + b2 + c2) / (a * a + b2 + c2 + (t - 1) * (b2 + c2) + (N - t) * c2);
    CHECK_NEAR(weight(&w, j3, j3), lin, 1e-15, "self QK=I linear row j3 (closed form)");
    CHECK_NEAR(weight(&w, j3, j3), 2.12 / 129.84, 1e-15, "self QK=I linear row j3 (reference: 2.12/129.8)");
    mc_work_free(&w);
}

static void test_cross(void) {
    const int n = 200, d = 11, j3 = 17, j2 = 150;
    McParams p = { .setting = MC_CROSS, .n = n, .d = d, .m = 9, .a0 = 0.01, .a1 = 3, .tau = 0.9 };
    McWork w;
    mc_work_init(&w, &p);
    mc_build(&p, 1, j3, j2, NULL, &w);
    mc_attend(MC_EXP, &w);
    double N = n, soft = 1.0 / (1.0 + (N - 1) * pow(N, -p.a1)), off = 0;
    for (int r = 0; r < n; r++)
        for (int j = 0; r != j2 && j < n; j++) off = fmax(off, fabs(weight(&w, r, j) - 1.0 / N));
    CHECK(fabs(weight(&w, j2, j3) - soft) < 1e-12, "cross softmax row j2: %.17g vs %.17g", weight(&w, j2, j3), soft);
    CHECK(off < 1e-15, "cross softmax: rows other than j2 are not uniform (off by %.3g)", off);
    /* The output of row j2 is ≈ row j3 of A2: two coordinates ≈ 1 (closed form). */
    CHECK(w.C[(size_t)j2 * d] > 0.99 && w.C[(size_t)j2 * d + 1 + j3 % (d - 1)] > 0.99, "cross softmax output "
          "of row j2: %.4f, %.4f", w.C[(size_t)j2 * d], w.C[(size_t)j2 * d + 1 + j3 % (d - 1)]);
    mc_attend(MC_LIN, &w);
    CHECK_NEAR(weight(&w, j2, j3), 4.0 / 203.0, 1e-15, "cross linear row j2 (reference: 4/203)");
    mc_work_free(&w);
}

/* Column d of the output is c·sqrt(ln n) exactly: the weights of a row sum to 1. */
static void test_type3_column(void) {
    static const int sizes[][2] = { { 200, 22 }, { 256, 4 }, { 37, 7 } };   /* 37 rows: groups truncated */
    for (int s = 0; s < 2; s++)
        for (int z = 0; z < 3; z++) {
            McParams p = self_params(s ? MC_SELF_IDENTITY : MC_SELF_ONES, sizes[z][0], sizes[z][1]);
            McWork w;
            mc_work_init(&w, &p);
            double want = p.c * sqrt(log((double)p.n)), worst = 0;
            for (int d1 = 0; d1 <= 1; d1++)
                for (int k = 0; k <= 1; k++) {
                    mc_build(&p, d1, p.n / 3, 0, NULL, &w);
                    mc_attend(k ? MC_LIN : MC_EXP, &w);
                    for (int r = 0; r < p.n; r++) worst = fmax(worst, fabs(w.C[(size_t)r * p.d + p.d - 1] - want));
                }
            CHECK(worst <= 1e-12, "%s n=%d d=%d: column d off c*sqrt(ln n) by %.3g", mc_setting_names[p.setting],
                  p.n, p.d, worst);
            mc_work_free(&w);
        }
}

/* Toy (Lemma 4.2): softmax gives the special entry ≥ 1/2 and the others ≤ n^{−2.6};
 * linear entries stay ≤ 4/n. */
static void test_toy(void) {
    McParams p = { .setting = MC_TOY, .n = 500, .m = 6, .tau = 0.25 };
    McWork w;
    mc_work_init(&w, &p);
    Rng rng = rng_stream(SEED, 1);
    int bad = 0;
    for (int i = 0; i < 50; i++) {
        int j3 = (int)rng_below(&rng, 500);
        mc_build(&p, 1, j3, 0, &rng, &w);
        mc_attend(MC_EXP, &w);
        bad += weight(&w, 0, j3) < 0.5;
        for (int j = 0; j < p.n; j++) bad += j != j3 && weight(&w, 0, j) > pow(p.n, -2.6);
        mc_attend(MC_LIN, &w);
        for (int j = 0; j < p.n; j++) bad += weight(&w, 0, j) > 4.0 / p.n;
    }
    CHECK(bad == 0, "toy: %d weights break Lemma 4.2's bounds", bad);
    mc_work_free(&w);
}

/* ---- the readout and the auto rules ----------------------------------------------- */

static void test_readout(void) {
    McParams p = self_params(MC_SELF_ONES, 8, 5);
    p.m = 3, p.tau = 0.1;
    McWork w;
    mc_work_init(&w, &p);
    Rng rng = rng_stream(SEED, 2);
    mc_build(&p, 1, 2, 0, NULL, &w);
    mc_attend(MC_EXP, &w);
    mc_draw_readout(&p, &rng, &w);
    int signs_ok = 1;
    for (int i = 0; i < p.d * p.m; i++) signs_ok &= w.Y[i] == 1.0 || w.Y[i] == -1.0;
    double brute = 0;
    for (int r = 0; r < p.n; r++)
        for (int l = 0; l < p.m; l++) {
            double z = 0;
            for (int k = 0; k < p.d; k++) z += w.C[r * p.d + k] * w.Y[k * p.m + l];
            brute += z > p.tau ? z - p.tau : 0;
        }
    double F = mc_readout(&p, &w);
    CHECK(signs_ok, "readout signs are not all +-1");
    CHECK(brute > 0 && fabs(F - brute) < 1e-12, "F = %.17g, brute force %.17g", F, brute);
    p.tau = 1e9;
    CHECK(mc_readout(&p, &w) == 0, "a huge threshold must give F = 0");
    mc_work_free(&w);

    CHECK(mc_auto_m(MC_SELF_ONES, 200, 0.01) == 15, "self m = max(floor(ln(n/delta)), 15)");
    CHECK(mc_auto_m(MC_SELF_IDENTITY, 100000, 0.01) == 16, "self m at n = 1e5 is floor(ln 1e7) = 16: %d", mc_auto_m(MC_SELF_IDENTITY, 100000, 0.01));
    CHECK(mc_auto_m(MC_CROSS, 200, 0.01) == 9, "cross m = floor(ln(n/delta)) = 9, got %d", mc_auto_m(MC_CROSS, 200, 0.01));
    CHECK(mc_auto_m(MC_TOY, 1000, 0.01) == 6, "toy m = floor(ln n) = 6");
    CHECK_NEAR(mc_auto_tau(MC_SELF_ONES, 200, 0.8), 0.9 * sqrt(log(200.0)), 1e-15, "self tau");
    CHECK(mc_auto_tau(MC_CROSS, 200, 0.8) == 0.9 && mc_auto_tau(MC_TOY, 200, 0.8) == 0.25, "cross / toy tau");
}

/* ---- success ratios against the reference table---------------------------------------- */

/* |measured − ref| ≤ 4 sd of the difference of two binomial proportions (this run's
 * reps and the reference's ref_reps; ref_reps = 0: the reference is exact). */
static void check_rate(const McParams *p, int reps, double ref, int ref_reps, uint64_t stream, const char *what) {
    Rng rng = rng_stream(SEED, stream);
    McRates r;
    mc_estimate(p, reps, &rng, &r);
    double var = ref * (1 - ref) * (1.0 / reps + (ref_reps ? 1.0 / ref_reps : 0));
    double tol = 4 * sqrt(var) + 1e-9;
    CHECK(fabs(r.success - ref) <= tol, "%s: success %.3f, reference %.3f (tolerance %.3f)", what, r.success, ref, tol);
    double lo = fmin(fmin(r.exp_d1_pos, r.lin_d1_zero), fmin(r.exp_d0_zero, r.lin_d0_zero));
    CHECK(r.success <= lo, "%s: success %.3f above a component rate %.3f", what, r.success, lo);
    printf("%s: success %.3f (reference %.3f +- %.3f)\n", what, r.success, ref, tol);
}

static void test_success_rates(void) {
    McParams cross = { .setting = MC_CROSS, .n = 200, .d = 11, .a0 = 0.01, .a1 = 3, .tau = 0.9 };
    cross.m = mc_auto_m(MC_CROSS, 200, 0.01);
    check_rate(&cross, 300, 0.93, 200, 10, "cross n=200 d=11 (reference: 0.91-0.96)");
    McParams ones = self_params(MC_SELF_ONES, 256, 4);
    check_rate(&ones, 300, 0.14, 200, 11, "self QK=1 n=256 d=4 (reference: 0.14)");
    ones = self_params(MC_SELF_ONES, 256, 34);
    check_rate(&ones, 300, 0.96, 200, 12, "self QK=1 n=256 d=34 (reference: 0.96)");
    McParams ident = self_params(MC_SELF_IDENTITY, 200, 22);
    check_rate(&ident, 300, 0.83, 200, 13, "self QK=I n=200 d=22 m=15 (reference: 0.83)");
    /* The toy at n = 1000: F_exp(D1) > 0 iff some unit's sign on the special entry is
     * +, probability 1 − 2^{−m}; the other three events hold with probability ≈ 1. */
    for (int m = 1; m <= 4; m++) {
        McParams toy = { .setting = MC_TOY, .n = 1000, .m = m, .tau = 0.25 };
        char what[64];
        snprintf(what, sizeof what, "toy n=1000 m=%d (1 - 2^-m)", m);
        check_rate(&toy, 2000, 1 - pow(2, -m), 0, 20 + (uint64_t)m, what);
    }
}

static void test_determinism(void) {
    McParams p = self_params(MC_SELF_IDENTITY, 60, 8);
    McRates r[3];
    for (int i = 0; i < 3; i++) {
        Rng rng = rng_stream(i < 2 ? SEED : SEED + 1, 5);
        mc_estimate(&p, 300, &rng, &r[i]);
    }
    CHECK(!memcmp(&r[0], &r[1], sizeof r[0]), "same seed, different rates");
    CHECK(memcmp(&r[0], &r[2], sizeof r[0]) != 0, "other seed, identical rates (%.3f)", r[0].success);
}

/* ---- config errors ------------------------------------------------------------------ */

#define GOOD_TAIL "\"sweep\": {\"param\": \"d\", \"values\": [4, 6]}, \"out\": \"x\""

static void expect_error(const char *json, const char *where, const char *fragment) {
    McConfig *c = malloc(sizeof *c);
    AlError err = { 0 };
    int rc = mc_config_parse(c, json, "cfg.json", &err);
    CHECK(rc == 2 && err.code == 2, "%s: rc %d (%s)", json, rc, err.msg);
    char start[160];
    snprintf(start, sizeof start, "cfg.json%s", where);
    CHECK(!strncmp(err.msg, start, strlen(start)) && strstr(err.msg, fragment),
          "%s\n  message: %s\n  wanted it to start with '%s' and contain '%s'", json, err.msg, start, fragment);
    free(c);
}

static void test_config(void) {
    McConfig *c = malloc(sizeof *c);
    AlError err = { 0 };
    int rc = mc_config_parse(c, "{\"setting\": \"self_ones\", \"defaults\": {\"n\": 256, \"m\": \"auto\"}, " GOOD_TAIL "}",
                             "cfg.json", &err);
    CHECK(rc == 0, "good config refused: %s", err.msg);
    McParams p;
    mc_config_point(c, 1, &p);
    CHECK(p.n == 256 && p.d == 6 && p.m == 15 && p.a1 == 1.2 && fabs(p.tau - 0.9 * sqrt(log(256.0))) < 1e-15 &&
          c->reps == 100 && c->seed == 1 && c->param == MCP_D && !strcmp(c->out, "x"),
          "point 1: n %d d %d m %d tau %g reps %d", p.n, p.d, p.m, p.tau, c->reps);
    rc = mc_config_parse(c, "{\"setting\": \"cross\", \"defaults\": {\"tau\": 0.5}, \"sweep\": {\"param\": \"n\", "
                         "\"values\": [200, 1000]}, \"repetitions\": 7, \"seed\": 3, \"out\": \"y\"}", "cfg.json", &err);
    mc_config_point(c, 1, &p);
    CHECK(rc == 0 && p.n == 1000 && p.d == 11 && p.a1 == 3 && p.m == 11 && p.tau == 0.5 && c->reps == 7 &&
          c->seed == 3, "cross point: rc %d n %d d %d m %d tau %g (%s)", rc, p.n, p.d, p.m, p.tau, err.msg);
    free(c);

    expect_error("{\"setting\": \"cross\",\n \"sweep\": {\"param\": \"d\" \"values\": [2]}}", ":2:", "invalid JSON");
    expect_error("[1]", ": ", "the top level must be a JSON object");
    expect_error("{\"setting\": \"toy\", \"sweeps\": {}}", ": ", "unknown key 'sweeps' (valid keys: ");
    expect_error("{\"setting\": \"toy\", \"setting\": \"toy\"}", ": ", "duplicate key 'setting'");
    expect_error("{\"out\": \"x\"}", ": setting: ", "missing (one of \"toy\", \"self_ones\"");
    expect_error("{\"setting\": \"self\"}", ": setting: ", "expected one of \"toy\", \"self_ones\", "
                 "\"self_identity\", \"cross\"; got a string (\"self\")");
    expect_error("{\"setting\": \"toy\", \"defaults\": {\"nn\": 3}}", ": ", "unknown key 'defaults.nn' (valid keys "
                 "under defaults.: \"n\", \"d\"");
    expect_error("{\"setting\": \"toy\", \"defaults\": {\"d\": 3}}", ": defaults.d: ",
                 "not used by setting \"toy\" (it uses n, m, delta, tau)");
    expect_error("{\"setting\": \"cross\", \"defaults\": {\"b\": 0.3}}", ": defaults.b: ", "not used by setting \"cross\"");
    expect_error("{\"setting\": \"cross\", \"defaults\": 3}", ": defaults: ", "expected an object, got 3");
    expect_error("{\"setting\": \"cross\", \"defaults\": {\"n\": 200.5}}", ": defaults.n: ", "expected an integer, got 200.5");
    expect_error("{\"setting\": \"cross\", \"defaults\": {\"a1\": \"3\"}}", ": defaults.a1: ", "expected a number, got a string");
    expect_error("{\"setting\": \"cross\", \"defaults\": {\"m\": \"many\"}}", ": defaults.m: ",
                 "expected an integer or \"auto\", got \"many\"");
    expect_error("{\"setting\": \"cross\", \"defaults\": {\"delta\": 1}}", ": defaults.delta: ", "must be in (0, 1), got 1");
    expect_error("{\"setting\": \"cross\"}", ": sweep: ", "missing (an object");
    expect_error("{\"setting\": \"cross\", \"sweep\": {\"param\": \"q\", \"values\": [1]}}", ": sweep.param: ",
                 "expected one of \"n\", \"d\"");
    expect_error("{\"setting\": \"toy\", \"sweep\": {\"param\": \"a1\", \"values\": [1]}}", ": sweep.param: ",
                 "not used by setting \"toy\"");
    expect_error("{\"setting\": \"toy\", \"sweep\": {\"param\": \"n\"}}", ": sweep.values: ", "missing (a list of numbers)");
    expect_error("{\"setting\": \"toy\", \"sweep\": {\"param\": \"n\", \"values\": []}}", ": sweep.values: ",
                 "must hold 1-1000 values, got 0");
    expect_error("{\"setting\": \"toy\", \"sweep\": {\"param\": \"n\", \"values\": 5}}", ": sweep.values: ",
                 "expected an array of numbers, got 5");
    expect_error("{\"setting\": \"toy\", \"sweep\": {\"param\": \"n\", \"values\": [100, 1.5]}}", ": sweep.values[1]: ",
                 "expected an integer, got 1.5");
    expect_error("{\"setting\": \"toy\", \"sweep\": {\"param\": \"n\", \"values\": [\"auto\"]}}", ": sweep.values[0]: ",
                 "expected an integer, got a string");
    expect_error("{\"setting\": \"toy\", \"sweep\": {\"param\": \"n\", \"values\": [1]}, \"out\": \"x\"}",
                 ": sweep.values[0]: ", "must be in [2, 4096] (tokens; the scores are n x n), got 1");
    expect_error("{\"setting\": \"self_ones\", " GOOD_TAIL ", \"defaults\": {\"c\": 0}}", ": defaults.c: ",
                 "must be a number > 0 (the Type III column keeps every score positive");
    expect_error("{\"setting\": \"self_ones\", \"sweep\": {\"param\": \"d\", \"values\": [22, 2]}, \"out\": \"x\"}",
                 ": sweep.values[1]: ", "must be in [3, 1024] for setting self_ones");
    expect_error("{\"setting\": \"cross\", \"sweep\": {\"param\": \"m\", \"values\": [0]}, \"out\": \"x\"}",
                 ": sweep.values[0]: ", "must be in [1, 1000] (readout units), got 0");
    expect_error("{\"setting\": \"cross\", \"defaults\": {\"a0\": -1}, \"sweep\": {\"param\": \"n\", \"values\": [200]}, "
                 "\"out\": \"x\"}", ": defaults.a0: ", "must be a number >= 0, got -1");
    expect_error("{\"setting\": \"cross\", \"defaults\": {\"tau\": -1}, \"sweep\": {\"param\": \"n\", \"values\": [200]}, "
                 "\"out\": \"x\"}", ": defaults.tau: ", "must be a number >= 0, got -1");
    expect_error("{\"setting\": \"cross\", " GOOD_TAIL ", \"repetitions\": 0}", ": repetitions: ", "must be in [1, 10000000], got 0");
    expect_error("{\"setting\": \"cross\", " GOOD_TAIL ", \"seed\": -1}", ": seed: ", "must be in [0, ");
    expect_error("{\"setting\": \"cross\", " GOOD_TAIL ", \"title\": 5}", ": title: ", "expected a string, got 5");
    expect_error("{\"setting\": \"cross\", \"sweep\": {\"param\": \"d\", \"values\": [4]}}", ": out: ", "missing (the output folder");
    expect_error("{\"setting\": \"cross\", \"sweep\": {\"param\": \"d\", \"values\": [4]}, \"out\": \"\"}", ": out: ",
                 "must be 1-1023 characters, got 0");

    McConfig *c2 = malloc(sizeof *c2);
    AlError e2 = { 0 };
    CHECK(mc_config_load(c2, "tests/no_such_mc_config.json", &e2) == 1 &&
          strstr(e2.msg, "cannot open 'tests/no_such_mc_config.json': No such file"), "missing file: %s", e2.msg);
    free(c2);
}

/* The whole command into a temporary folder: the CSV's shape and the SVG. */
static void test_run(void) {
    char dir[] = "/tmp/attnlab_p002_XXXXXX", cfg[128], out[160], path[200];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(cfg, sizeof cfg, "%s/c.json", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    char json[512];
    snprintf(json, sizeof json, "{\"setting\": \"cross\", \"defaults\": {\"n\": 40}, \"sweep\": {\"param\": \"d\", "
             "\"values\": [2, 5, 9]}, \"repetitions\": 20, \"out\": \"%s\"}", out);
    CHECK(tu_write_file(cfg, json) == 0, "cannot write %s", cfg);
    char *argv[] = { "mc", cfg, "--quiet", NULL };
    CHECK(p002_mc_main(3, argv) == 0, "attnlab mc failed");
    snprintf(path, sizeof path, "%s/success.csv", out);
    char *csv = tu_read_file(path, NULL);
    int lines = 0;
    for (const char *s = csv; s && *s; s++) lines += *s == '\n';
    CHECK(csv && !strncmp(csv, "d,success,exp_d1_pos,lin_d1_zero,exp_d0_zero,lin_d0_zero,success_se,repetitions,m,tau\n", 84)
          && lines == 4 && strstr(csv, "\n2,0,"), "success.csv:\n%s", csv ? csv : "(missing)");
    snprintf(path, sizeof path, "%s/success.svg", out);
    char *svg = tu_read_file(path, NULL);
    CHECK(svg && strstr(svg, "<svg") && strstr(svg, "linear: F(D1) = 0"), "success.svg missing or without series");
    char *bad[] = { "mc", NULL };
    CHECK(p002_mc_main(1, bad) == 2, "no config must exit 2");
    char *bad2[] = { "mc", cfg, "--what", NULL };
    CHECK(p002_mc_main(3, bad2) == 2, "an unknown option must exit 2");
    free(csv);
    free(svg);
    unlink(path);
    snprintf(path, sizeof path, "%s/success.csv", out);
    unlink(path);
    rmdir(out);
    unlink(cfg);
    rmdir(dir);
}

int main(void) {
    test_self_ones();
    test_self_identity();
    test_cross();
    test_type3_column();
    test_toy();
    test_readout();
    test_determinism();
    test_config();
    test_run();
    test_success_rates();
    return check_exit("test_p002_mc");
}
