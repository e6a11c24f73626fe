/* test_curve_grid.c — `./train curve SWEEP_DIR… --x AXIS --out F.svg` (src/sweep/
 * plot.c): sweeps' grid.json metric against one axis, on hand-written grids:
 *   - "tiny_tf": seq_len (listed out of order) x attention type x d_model (one
 *     value), two seeds, rows shuffled, one point pending; "tiny_lstm": seq_len x
 *     n_layers (one value), one seed.  One figure of both has exactly the legend
 *     names "tiny_tf: attention.type=softmax", "tiny_tf: attention.type=linear" and
 *     "tiny_lstm"; one marker per finished point; the pending point is a gap (the
 *     line in two pieces, the markers at the other four x); points in increasing x,
 *     at the heights the means say; error bars only where a std is given; log2 x
 *     (4..64) and the [0, 1] accuracy axis; --metric seq_acc moves the points;
 *   - linear x when the values span less than a factor of 8;
 *   - the command line: the same bytes through the binary ($ATTNLAB_BIN), and its
 *     errors (--x without --out, an axis the grid lacks) with exit code 2.
 * The messages for bad grids are rows of tests/bad_inputs.tsv (kind grid). */
#include "check.h"
#include "testutil.h"
#include "attnlab/sweep/plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[256];

static const char *in_tmp(const char *name) { return tu_path(tmp, name); }

/* ---- fixtures ---------------------------------------------------------------------- */

static void number_or_null(char *out, size_t n, double v) {
    if (isnan(v)) snprintf(out, n, "null");
    else snprintf(out, n, "%g", v);
}

/* Appends one grid.json row: token_acc {mean, std}, seq_acc half of it (NaN: null). */
static void add_row(char *rows, size_t cap, const char *values, int seeds, double mean, double std) {
    char m[32], s[32], h[32];
    number_or_null(m, sizeof m, mean);
    number_or_null(s, sizeof s, std);
    number_or_null(h, sizeof h, mean / 2);
    size_t len = strlen(rows);
    snprintf(rows + len, cap - len,
             "%s{\"values\": {%s}, \"seeds_done\": %d, \"token_acc\": {\"mean\": %s, \"std\": %s, \"n\": %d},"
             " \"seq_acc\": {\"mean\": %s, \"std\": %s, \"n\": %d}}\n",
             len ? "," : "", values, isnan(mean) ? 0 : seeds, m, s, isnan(mean) ? 0 : seeds, h, s, isnan(mean) ? 0 : seeds);
}

static void write_grid(const char *dir, const char *axes, const char *rows) {
    char path[700], text[16384];
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/grid.json", dir);
    snprintf(text, sizeof text, "{\"metric\": \"token_acc\", \"threshold\": 0.9,\n \"axes\": %s,\n \"rows\": [%s]}\n",
             axes, rows);
    CHECK(tu_write_file(path, text) == 0, "cannot write %s", path);
}

/* Means by seq_len 4, 8, 16, 32, 64; linear at 16 is pending. */
static const int N[5] = { 4, 8, 16, 32, 64 };
static const double SOFTMAX[5] = { 1.0, 0.9, 0.8, 0.7, 0.6 }, LINEAR[5] = { 0.9, 0.7, NAN, 0.3, 0.2 };

static void write_fixtures(void) {
    static char rows[8192];
    static const int SHUFFLED[5] = { 2, 4, 0, 3, 1 };
    char values[200];
    rows[0] = 0;
    for (int j = 0; j < 5; j++) {
        int i = SHUFFLED[j];
        snprintf(values, sizeof values, "\"task.seq_len\": %d, \"model.attention.type\": \"linear\", "
                 "\"model.d_model\": 16", N[i]);
        add_row(rows, sizeof rows, values, 2, LINEAR[i], 0.1);
        snprintf(values, sizeof values, "\"task.seq_len\": %d, \"model.attention.type\": \"softmax\", "
                 "\"model.d_model\": 16", N[i]);
        add_row(rows, sizeof rows, values, 2, SOFTMAX[i], 0.05);
    }
    write_grid(in_tmp("tiny_tf"), "[{\"key\": \"task.seq_len\", \"values\": [64, 4, 8, 16, 32]},"
               " {\"key\": \"model.attention.type\", \"values\": [\"softmax\", \"linear\"]},"
               " {\"key\": \"model.d_model\", \"values\": [16]}]", rows);
    rows[0] = 0;
    for (int i = 0; i < 5; i++) {
        snprintf(values, sizeof values, "\"task.seq_len\": %d, \"model.n_layers\": 1", N[i]);
        add_row(rows, sizeof rows, values, 1, 0.5, NAN);
    }
    write_grid(in_tmp("tiny_lstm"), "[{\"key\": \"task.seq_len\", \"values\": [4, 8, 16, 32, 64]},"
               " {\"key\": \"model.n_layers\", \"values\": [1]}]", rows);
    rows[0] = 0;
    for (int i = 0; i < 2; i++) {
        snprintf(values, sizeof values, "\"task.seq_len\": %d", N[i]);
        add_row(rows, sizeof rows, values, 1, NAN, NAN);
    }
    write_grid(in_tmp("pending"), "[{\"key\": \"task.seq_len\", \"values\": [4, 8]}]", rows);
    rows[0] = 0;
    for (int k = 2; k <= 5; k += k == 2 ? 1 : 2)
        for (int d = 8; d <= 16; d += 8) {
            snprintf(values, sizeof values, "\"task.k\": %d, \"model.d_model\": %d", k, d);
            add_row(rows, sizeof rows, values, 1, 0.1 * k, NAN);
        }
    write_grid(in_tmp("narrow"), "[{\"key\": \"task.k\", \"values\": [2, 3, 5]},"
               " {\"key\": \"model.d_model\", \"values\": [8, 16]}]", rows);
}

/* ---- reading the figure -------------------------------------------------------------- */

/* Series k's <g class="series"> element (malloc'ed), or NULL. */
static char *series(const char *svg, int k) {
    const char *at = svg;
    for (int i = 0; at && i <= k; i++) at = strstr(i ? at + 1 : at, "<g class=\"series\"");
    if (!at) return NULL;
    const char *end = strstr(at + 1, "<g class=\"series\"");
    if (!end) end = strstr(at, "<g class=\"legend\"");
    return end ? strndup(at, (size_t)(end - at)) : NULL;
}

/* The x (circles: cx; squares: x + half the side) of each marker; returns the count. */
static int marker_xs(const char *s, double *x, double *y, int max) {
    const char *at = s ? strstr(s, "<g class=\"markers\"") : NULL, *end = at ? strstr(at, "</g>") : NULL;
    int n = 0;
    for (const char *p = at; p && p < end && n < max; p++) {
        if (!strncmp(p, "<circle cx=\"", 12)) {
            x[n] = atof(p + 12);
            y[n++] = atof(strstr(p, "cy=\"") + 4);
        } else if (!strncmp(p, "<rect x=\"", 9)) {
            x[n] = atof(p + 9) + 3.6;
            y[n++] = atof(strstr(p, " y=\"") + 4) + 3.6;
        } else if (!strncmp(p, "<path", 5)) {
            x[n] = y[n] = NAN, n++;
        }
    }
    return n;
}

/* How many pieces the series' line has ('M' commands in its path). */
static int line_pieces(const char *s) {
    const char *d = s ? strstr(s, "class=\"line\"") : NULL;
    d = d ? strstr(d, " d=\"") : NULL;
    int n = 0;
    for (const char *p = d ? d + 4 : NULL; p && *p && *p != '"'; p++) n += *p == 'M';
    return n;
}

static char *draw(const char *const *dirs, int n, const char *x, const char *metric, const char *out) {
    AlError err = {0};
    int rc = sweep_grid_curve(dirs, n, x, metric, out, &err);
    CHECK(rc == 0, "sweep_grid_curve(%s): %d: %s", x, rc, err.msg);
    return tu_read_file(out, NULL);
}

/* ---- tests ------------------------------------------------------------------------- */

static void test_two_sweeps(void) {
    const char *dirs[2] = { in_tmp("tiny_tf"), in_tmp("tiny_lstm") };
    char *svg = draw(dirs, 2, "task.seq_len", NULL, in_tmp("fig.svg"));
    static const char *const NAMES[3] = { "tiny_tf: attention.type=softmax", "tiny_tf: attention.type=linear",
                                          "tiny_lstm" };
    char want[200];
    for (int k = 0; k < 3; k++) {
        char *s = series(svg, k);
        snprintf(want, sizeof want, "<g class=\"series\" data-name=\"%s\">", NAMES[k]);
        CHECK(s && !strncmp(s, want, strlen(want)), "series %d is not '%s': %.80s", k, NAMES[k], s ? s : "(none)");
        snprintf(want, sizeof want, ">%s</text>", NAMES[k]);
        CHECK(svg && strstr(svg, want), "no legend entry %s", want);
        free(s);
    }
    char *extra = series(svg, 3);
    CHECK(!extra, "more than 3 series");
    free(extra);
    CHECK(svg && strstr(svg, ">test token_acc vs task.seq_len</text>"), "title is not the default metric vs the axis");

    double x[3][8], y[3][8];
    char *s[3] = { series(svg, 0), series(svg, 1), series(svg, 2) };
    int n[3];
    for (int k = 0; k < 3; k++) n[k] = marker_xs(s[k], x[k], y[k], 8);
    CHECK(n[0] == 5 && n[1] == 4 && n[2] == 5, "markers per series %d %d %d, want 5 4 5 (one gap)", n[0], n[1], n[2]);
    CHECK(line_pieces(s[0]) == 1 && line_pieces(s[1]) == 2 && line_pieces(s[2]) == 1,
          "line pieces %d %d %d, want 1 2 1 (the pending point breaks the linear line)", line_pieces(s[0]),
          line_pieces(s[1]), line_pieces(s[2]));
    CHECK(s[0] && strstr(s[0], "class=\"errbar\"") && s[1] && strstr(s[1], "class=\"errbar\"") &&
          s[2] && !strstr(s[2], "class=\"errbar\""), "error bars: want them where a std is given only");
    if (n[0] == 5 && n[1] == 4) {
        /* Increasing x, equal steps for 4, 8, 16, 32, 64 (log2); heights as the means. */
        for (int i = 1; i < 5; i++) {
            CHECK_NEAR(x[0][i] - x[0][i - 1], x[0][1] - x[0][0], 0.05, "log2 x: equal steps between doublings");
            CHECK(x[0][i] > x[0][i - 1] + 10, "x not increasing at %d", i);
            CHECK_NEAR(y[0][i] - y[0][0], (y[0][1] - y[0][0]) * (SOFTMAX[0] - SOFTMAX[i]) / (SOFTMAX[0] - SOFTMAX[1]),
                       0.05, "softmax point height");
        }
        static const int AT[4] = { 0, 1, 3, 4 };   /* the linear line: no point at seq_len 16 */
        for (int j = 0; j < 4; j++) {
            CHECK_NEAR(x[1][j], x[0][AT[j]], 0.05, "linear marker x");
            CHECK_NEAR(y[1][j] - y[0][0], (y[0][1] - y[0][0]) * (SOFTMAX[0] - LINEAR[AT[j]]) / (SOFTMAX[0] - SOFTMAX[1]),
                       0.05, "linear point height");
        }
    }
    for (int k = 0; k < 3; k++) free(s[k]);

    /* --metric seq_acc: half the token accuracy, so the first point sits lower. */
    char *seq = draw(dirs, 2, "task.seq_len", "seq_acc", in_tmp("seq.svg"));
    char *s0 = series(seq, 0);
    double xs[8], ys[8];
    CHECK(marker_xs(s0, xs, ys, 8) == 5 && ys[0] > y[0][0] + 50, "--metric seq_acc: first point at %g, token at %g",
          ys[0], y[0][0]);
    CHECK(seq && strstr(seq, ">test seq_acc vs task.seq_len</text>"), "--metric seq_acc: title");
    free(s0);
    free(seq);
    free(svg);
}

/* k = 2, 3, 5 (max/min < 8): a linear axis, points spaced as the values. */
static void test_linear_x(void) {
    const char *dirs[1] = { in_tmp("narrow") };
    char *svg = draw(dirs, 1, "task.k", NULL, in_tmp("narrow.svg"));
    char *s0 = series(svg, 0), *s1 = series(svg, 1);
    double x[8], y[8];
    CHECK(s0 && strstr(s0, "data-name=\"narrow: d_model=8\"") && s1 && strstr(s1, "data-name=\"narrow: d_model=16\""),
          "the d_model lines are not named 'narrow: d_model=8' and 'narrow: d_model=16'");
    CHECK(marker_xs(s0, x, y, 8) == 3, "3 markers");
    CHECK_NEAR(x[2] - x[1], 2 * (x[1] - x[0]), 0.05, "linear x: 3 -> 5 is twice 2 -> 3");
    free(s0);
    free(s1);
    free(svg);
}

static int run_bin(const char *out, const char *const *args) {
    const char *argv[16] = { getenv("ATTNLAB_BIN"), "curve" };
    int n = 2;
    for (int i = 0; args[i] && n < 15; i++) argv[n++] = args[i];
    argv[n] = NULL;
    return tu_wait(tu_spawn(argv, out));
}

static void expect_output(const char *out, const char *what) {
    char *text = tu_read_file(out, NULL);
    CHECK(text && strstr(text, what), "output lacks '%s':\n%s", what, text ? text : "(none)");
    free(text);
}

static void test_command_line(void) {
    if (!getenv("ATTNLAB_BIN")) {
        CHECK(0, "%s", "ATTNLAB_BIN is not set (ctest sets it to the attnlab binary)");
        return;
    }
    const char *log = in_tmp("cli.txt"), *tf = in_tmp("tiny_tf"), *lstm = in_tmp("tiny_lstm");
    const char *ok[] = { tf, lstm, "--x", "task.seq_len", "--out", in_tmp("cli.svg"), NULL };
    CHECK(run_bin(log, ok) == 0, "the command failed");
    CHECK(tu_same_text(in_tmp("cli.svg"), in_tmp("fig.svg")), "the command's figure differs from the library's");
    const char *no_out[] = { tf, "--x", "task.seq_len", NULL };
    CHECK(run_bin(log, no_out) == 2, "--x without --out: exit 2");
    expect_output(log, "attnlab: curve: --x task.seq_len needs --out FILE.svg (the figure to write)");
    const char *bad_axis[] = { tf, lstm, "--x", "model.n_layers", "--out", in_tmp("bad.svg"), NULL };
    CHECK(run_bin(log, bad_axis) == 2, "an axis of one grid only: exit 2");
    char want[800];
    snprintf(want, sizeof want, "attnlab: error: %s/grid.json: 'model.n_layers' is not an axis of this grid (its "
             "axes: task.seq_len, model.attention.type, model.d_model)", tf);
    expect_output(log, want);
    CHECK(access(in_tmp("bad.svg"), F_OK) != 0, "a rejected grid left a figure");
    const char *pending[] = { in_tmp("pending"), "--x", "task.seq_len", "--out", in_tmp("pending.svg"), NULL };
    CHECK(run_bin(log, pending) == 2, "a grid with no finished point: exit 2");
    expect_output(log, "no point with both x and y given");
    CHECK(access(in_tmp("pending.svg"), F_OK) != 0, "a grid with no finished point left a figure");
}

int main(void) {
    snprintf(tmp, sizeof tmp, "%s/attnlab_curve_grid_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp)) return 1;
    write_fixtures();
    test_two_sweeps();
    test_linear_x();
    test_command_line();
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (!check_failures && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    return check_exit("test_curve_grid");
}
