/* test_svg.c — the SVG heatmap and line chart writers.
 *
 * Every figure is written into a mkdtemp folder and read back: well-formed XML (a
 * small checker here, plus Python's XML parser when /usr/bin/python3 exists), every
 * label, title and value present as text, escaping, the colour bar, log ticks at
 * powers, error bars, missing cells, byte-for-byte determinism, degenerate inputs
 * and every input error (code 2) or write error (code 1, path in the message). */
#include "attnlab/report/svg.h"
#include "check.h"
#include "testutil.h"

#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];
static int have_python;

static const char *P(const char *name) { return tu_path(tmpdir, name); }

/* The whole file as a NUL-terminated string (NULL if unreadable). */
static char *slurp(const char *path) { return tu_read_file(path, NULL); }

static int count(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* ---- a tiny XML well-formedness checker ------------------------------------------ */

/* Valid UTF-8 throughout (no overlong forms, surrogates or bytes past U+10FFFF). */
static int utf8_ok(const unsigned char *p) {
    while (*p) {
        unsigned c = *p;
        int k = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
              : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (!k) return 0;
        if (k == 1 && c < 0x20 && c != '\n' && c != '\t' && c != '\r') return 0;
        for (int i = 1; i < k; i++)
            if ((p[i] & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && p[1] < 0xA0) return 0;
        if (c == 0xED && p[1] > 0x9F) return 0;
        if (c == 0xF0 && p[1] < 0x90) return 0;
        if (c == 0xF4 && p[1] > 0x8F) return 0;
        p += k;
    }
    return 1;
}

/* At p == '&': one of the five entities or a character reference; returns its length. */
static int entity_len(const char *p) {
    static const char *const ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    for (int i = 0; i < 5; i++)
        if (!strncmp(p, ents[i], strlen(ents[i]))) return (int)strlen(ents[i]);
    if (p[1] == '#') {
        int i = 2, hex = p[2] == 'x';
        i += hex;
        int start = i;
        while (hex ? strchr("0123456789abcdefABCDEF", p[i]) && p[i] : p[i] >= '0' && p[i] <= '9') i++;
        if (i > start && p[i] == ';') return i + 1;
    }
    return 0;
}

static int name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_' || c == ':' || c == '.';
}

/* Elements nest and close in order, attributes are quoted, '<' and '&' only start
 * markup or entities, one root element.  Enough for what svg.c emits. */
static int xml_ok(const char *s, char *why, size_t n) {
    if (!utf8_ok((const unsigned char *)s)) return snprintf(why, n, "invalid UTF-8"), 0;
    if (!strncmp(s, "<?xml", 5)) {
        const char *e = strstr(s, "?>");
        if (!e) return snprintf(why, n, "unterminated prolog"), 0;
        s = e + 2;
    }
    char stack[64][32];
    int depth = 0, roots = 0;
    for (const char *p = s; *p;) {
        if (*p == '&') {
            int k = entity_len(p);
            if (!k) return snprintf(why, n, "bad entity near '%.20s'", p), 0;
            p += k;
            continue;
        }
        if (*p != '<') {
            if (depth == 0 && !strchr(" \n\r\t", *p)) return snprintf(why, n, "text outside root"), 0;
            p++;
            continue;
        }
        if (p[1] == '/') {                                  /* closing tag */
            const char *q = p + 2;
            size_t len = 0;
            while (name_char(q[len])) len++;
            if (!depth || len != strlen(stack[depth - 1]) || strncmp(q, stack[depth - 1], len) || q[len] != '>')
                return snprintf(why, n, "mismatched close near '%.30s'", p), 0;
            depth--;
            p = q + len + 1;
            continue;
        }
        const char *q = p + 1;                              /* opening tag */
        size_t len = 0;
        while (name_char(q[len])) len++;
        if (!len || len >= sizeof stack[0]) return snprintf(why, n, "bad tag near '%.30s'", p), 0;
        if (depth == 0 && roots++) return snprintf(why, n, "two root elements"), 0;
        if (depth == 64) return snprintf(why, n, "too deep"), 0;
        memcpy(stack[depth], q, len);
        stack[depth][len] = '\0';
        q += len;
        for (;;) {                                          /* attributes */
            while (*q == ' ' || *q == '\n') q++;
            if (*q == '>' || (q[0] == '/' && q[1] == '>')) break;
            size_t an = 0;
            while (name_char(q[an])) an++;
            if (!an || q[an] != '=' || (q[an + 1] != '"' && q[an + 1] != '\''))
                return snprintf(why, n, "bad attribute near '%.30s'", q), 0;
            char quote = q[an + 1];
            q += an + 2;
            while (*q && *q != quote) {
                if (*q == '<') return snprintf(why, n, "'<' in attribute"), 0;
                if (*q == '&') {
                    int k = entity_len(q);
                    if (!k) return snprintf(why, n, "bad entity in attribute near '%.20s'", q), 0;
                    q += k;
                } else q++;
            }
            if (!*q) return snprintf(why, n, "unterminated attribute"), 0;
            q++;
        }
        if (*q == '/') q += 2;                              /* self-closing */
        else q++, depth++;
        p = q;
    }
    if (depth) return snprintf(why, n, "unclosed <%s>", stack[depth - 1]), 0;
    if (!roots) return snprintf(why, n, "no root element"), 0;
    return 1;
}

/* Reads path back and checks it with both parsers; returns the text (caller frees). */
static char *load_checked(const char *path) {
    char *s = slurp(path);
    CHECK(s != NULL, "%s was not written", path);
    if (!s) return calloc(1, 1);
    char why[200] = "";
    CHECK(xml_ok(s, why, sizeof why), "%s: not well-formed: %s", path, why);
    CHECK(!strncmp(s, "<?xml", 5) && strstr(s, "<svg xmlns=\"http://www.w3.org/2000/svg\""),
          "%s: no SVG root", path);
    if (have_python) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "/usr/bin/python3 -c 'import sys, xml.etree.ElementTree as E; "
                 "E.parse(sys.argv[1])' '%s'", path);
        CHECK(system(cmd) == 0, "%s: Python's XML parser rejects it", path);
    }
    return s;
}

/* Does s show `text` as the whole content of a <text> element? */
static int has_text(const char *s, const char *text) {
    char needle[512];
    snprintf(needle, sizeof needle, ">%s</text>", text);
    return strstr(s, needle) != NULL;
}

/* The y attribute of the <text> showing `text` (NAN if none). */
static double text_y(const char *s, const char *text) {
    char needle[512];
    snprintf(needle, sizeof needle, ">%s</text>", text);
    const char *e = strstr(s, needle);
    if (!e) return NAN;
    const char *t = e;
    while (t > s && strncmp(t, "<text ", 6)) t--;
    const char *y = strstr(t, " y=\"");
    return y && y < e ? strtod(y + 4, NULL) : NAN;
}

/* ---- heatmaps ------------------------------------------------------------------- */

/* How many of a heatmap's cols-wide grid's cells have this fill: the cells group draws
 * each row's run of one fill as one rect, so a rect's width counts its cells. */
static int cells_filled(const char *s, const char *fill, int cols) {
    const char *g = strstr(s, "<g class=\"cells\">"), *end = g ? strstr(g, "</g>") : NULL;
    double x0 = INFINITY, x1 = -INFINITY;
    for (const char *p = g; p && (p = strstr(p, "<rect x=\"")) && p < end; p++) {
        double x = atof(p + 9), w = atof(strstr(p, "width=\"") + 7);
        x0 = fmin(x0, x), x1 = fmax(x1, x + w);
    }
    double cell_w = (x1 - x0) / cols;
    char want[48];
    snprintf(want, sizeof want, "fill=\"%s\"/>", fill);
    int n = 0;
    for (const char *p = g; p && (p = strstr(p, "<rect x=\"")) && p < end; p++) {
        const char *close = strstr(p, "/>");
        if (!strncmp(close - strlen(want) + 2, want, strlen(want)))
            n += (int)lround(atof(strstr(p, "width=\"") + 7) / cell_w);
    }
    return n;
}

static void test_heatmap_basic(void) {
    const char *xl[4] = {"z=1", "z=2", "z=4", "<a&b>"};
    const char *yl[3] = {"\u2113=1", "\u2113=2", "\u2113=3"};
    double v[12] = {0.00, 0.10, 0.25, 0.30, 0.40, 0.50, 0.60, 0.70, 0.80, 0.90, 0.95, 1.00};
    SvgHeatmap h = {.title = "Error of ANNA", .x_title = "temperature z", .y_title = "window \u2113",
                    .rows = 3, .cols = 4, .x_labels = xl, .y_labels = yl, .values = v,
                    .value_format = "%.2f", .colorbar_title = "token error"};
    AlError err = {0};
    CHECK(svg_heatmap(P("heat.svg"), &h, &err) == 0, "svg_heatmap: %s", err.msg);
    char *s = load_checked(P("heat.svg"));
    const char *texts[] = {"Error of ANNA", "temperature z", "window \u2113", "token error",
                           "z=1", "z=2", "z=4", "&lt;a&amp;b&gt;", "\u2113=1", "\u2113=2", "\u2113=3"};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
        CHECK(has_text(s, texts[i]), "heatmap text '%s' missing", texts[i]);
    CHECK(!strstr(s, "<a&b>"), "a label went out unescaped");
    CHECK(strstr(s, "<title>Error of ANNA</title>"), "no <title> element");
    for (int i = 0; i < 12; i++) {
        char t[16];
        snprintf(t, sizeof t, "%.2f", v[i]);
        CHECK(has_text(s, t), "cell value %s missing", t);
    }
    CHECK(count(s, "<rect") >= 12 + 2, "expected 12 cell rects plus background and colour bar");
    /* Colour bar: the gradient, its ends labelled, intermediate round numbers. */
    CHECK(strstr(s, "class=\"colorbar\"") && strstr(s, "url(#attnlab-viridis)"), "no colour bar");
    CHECK(strstr(s, "<linearGradient id=\"attnlab-viridis\""), "no gradient");
    CHECK(has_text(s, "0.0") && has_text(s, "1.0") && has_text(s, "0.4"),
          "colour bar ticks 0.0 / 0.4 / 1.0 missing");
    /* Viridis ends and contrast: dark cell → white text, bright cell → black text. */
    CHECK(strstr(s, "fill=\"#440154\""), "min cell is not viridis' darkest");
    CHECK(strstr(s, "fill=\"#fde725\""), "max cell is not viridis' brightest");
    CHECK(strstr(s, "fill=\"#ffffff\" stroke=\"none\">0.00</text>"), "dark cell text not white");
    CHECK(strstr(s, "fill=\"#000000\" stroke=\"none\">1.00</text>"), "bright cell text not black");
    /* Row 0 at the top by default. */
    CHECK(text_y(s, "\u2113=1") < text_y(s, "\u2113=3"), "row 0 not at the top");
    CHECK(!has_text(s, "missing"), "missing key without missing cells");
    free(s);

    h.row0_at_bottom = 1;
    CHECK(svg_heatmap(P("heat_up.svg"), &h, &err) == 0, "row0_at_bottom: %s", err.msg);
    s = load_checked(P("heat_up.svg"));
    CHECK(text_y(s, "\u2113=1") > text_y(s, "\u2113=3"), "row0_at_bottom: row 0 not at the bottom");
    free(s);
}

static void test_heatmap_range_and_missing(void) {
    double v[6] = {-0.5, 0.5, NAN, 1.5, INFINITY, 0.25};
    SvgHeatmap h = {.rows = 2, .cols = 3, .values = v, .value_format = "%.1f",
                    .fixed_range = 1, .vmin = 0, .vmax = 1};
    AlError err = {0};
    CHECK(svg_heatmap(P("range.svg"), &h, &err) == 0, "fixed range: %s", err.msg);
    char *s = load_checked(P("range.svg"));
    CHECK(has_text(s, "0") && has_text(s, "2") && has_text(s, "1"), "index labels missing");
    CHECK(cells_filled(s, "#440154", 3) == 1, "-0.5 is not clamped to the low end");
    CHECK(cells_filled(s, "#fde725", 3) == 2, "1.5 and +inf are not clamped to the high end");
    CHECK(strstr(s, "fill=\"url(#attnlab-missing)\"") && strstr(s, "<pattern id=\"attnlab-missing\""),
          "missing cell not hatched");
    CHECK(has_text(s, "\u2013") && has_text(s, "missing"), "missing cell: no dash or no key");
    CHECK(!strstr(s, "nan") && !strstr(s, "NAN"), "NaN printed as a number");
    CHECK(has_text(s, "1.5") && has_text(s, "-0.5"), "out-of-range values not printed as given");
    free(s);

    /* Auto range: colour bar ends at the data's min and max. */
    double w[4] = {0.0123, 0.5, 0.25, 0.987};
    SvgHeatmap a = {.rows = 2, .cols = 2, .values = w, .value_format = ""};
    CHECK(svg_heatmap(P("auto.svg"), &a, &err) == 0, "auto range: %s", err.msg);
    s = load_checked(P("auto.svg"));
    CHECK(has_text(s, "0.0123") && has_text(s, "0.987"), "auto range ends not labelled");
    CHECK(!has_text(s, "0.50"), "value_format \"\" still printed values");
    free(s);
}

static void test_heatmap_degenerate(void) {
    AlError err = {0};
    double one = 0.42;
    SvgHeatmap h = {.title = "one cell", .y_title = "a long y axis title for one row",
                    .rows = 1, .cols = 1, .values = &one};
    CHECK(svg_heatmap(P("one.svg"), &h, &err) == 0, "1x1: %s", err.msg);
    char *s = load_checked(P("one.svg"));
    CHECK(has_text(s, "0.42") && has_text(s, "one cell"), "1x1: value or title missing");
    free(s);

    double c[4] = {3, 3, 3, 3};
    SvgHeatmap k = {.rows = 2, .cols = 2, .values = c};
    CHECK(svg_heatmap(P("const.svg"), &k, &err) == 0, "constant: %s", err.msg);
    s = load_checked(P("const.svg"));
    CHECK(cells_filled(s, "#21908c", 2) == 4, "constant values should all get the middle colour");
    CHECK(count(s, "fill=\"#21908c\"/>") == 2, "a row of equal cells is not one rect");
    CHECK(!strstr(s, "nan") && !strstr(s, "inf"), "constant range produced nan/inf");
    free(s);

    double allnan[2] = {NAN, NAN};
    SvgHeatmap m = {.rows = 1, .cols = 2, .values = allnan};
    CHECK(svg_heatmap(P("allnan.svg"), &m, &err) == 0, "all NaN: %s", err.msg);
    free(load_checked(P("allnan.svg")));
}

/* 20×20 with long column labels: labels tilt, and the figure grows with the grid. */
static void test_heatmap_large(void) {
    enum { R = 20, C = 20 };
    static double v[R * C];
    char xs[C][32], ys[R][32];
    const char *xl[C], *yl[R];
    for (int i = 0; i < R * C; i++) v[i] = sin(i * 0.37) * 100;
    for (int i = 0; i < C; i++) snprintf(xs[i], sizeof xs[i], "width %d", 16 << (i % 6)), xl[i] = xs[i];
    for (int i = 0; i < R; i++) snprintf(ys[i], sizeof ys[i], "N = %d", 8 * (i + 1)), yl[i] = ys[i];
    SvgHeatmap h = {.title = "accuracy over problem size x width", .x_title = "width",
                    .y_title = "problem size", .rows = R, .cols = C, .x_labels = xl,
                    .y_labels = yl, .values = v, .value_format = "%.1f", .colorbar_title = "accuracy"};
    AlError err = {0};
    CHECK(svg_heatmap(P("large.svg"), &h, &err) == 0, "20x20: %s", err.msg);
    char *s = load_checked(P("large.svg"));
    CHECK(strstr(s, "rotate(-45"), "long column labels were not tilted");
    CHECK(has_text(s, "width 512") && has_text(s, "N = 160"), "labels missing");
    double w = strtod(strstr(s, "width=\"") + 7, NULL);
    CHECK(w > 20 * 42, "20 columns in a %g px wide figure", w);
    free(s);
}

/* A row's run of one fill is one rect; the white lines between all cells are one path
 * (cols + 1 vertical and rows + 1 horizontal lines), so merged cells still show apart. */
static void test_heatmap_runs(void) {
    double v[2 * 5] = {0, 0, 0, 1, 1, 0, 1, 0, 1, NAN};
    SvgHeatmap h = {.rows = 2, .cols = 5, .values = v};
    AlError err = {0};
    CHECK(svg_heatmap(P("runs.svg"), &h, &err) == 0, "runs: %s", err.msg);
    char *s = load_checked(P("runs.svg"));
    const char *g = strstr(s, "<g class=\"cells\">"), *end = g ? strstr(g, "</g>") : NULL;
    int rects = 0;
    for (const char *p = g; p && (p = strstr(p, "<rect")) && p < end; p++) rects++;
    CHECK(rects == 2 + 5, "rows 0 0 0 1 1 and 0 1 0 1 nan should take 2 + 5 rects, not %d", rects);
    CHECK(cells_filled(s, "#440154", 5) == 5 && cells_filled(s, "#fde725", 5) == 4 &&
          cells_filled(s, "url(#attnlab-missing)", 5) == 1, "merged runs do not cover their cells");
    const char *d = strstr(s, "class=\"gridlines\"");
    d = d && d < end ? strstr(d, " d=\"") : NULL;
    int vs = 0, hs = 0;
    for (const char *p = d ? d + 4 : NULL; p && *p != '"'; p++) vs += *p == 'V', hs += *p == 'H';
    CHECK(vs == 6 && hs == 3, "grid lines: %d vertical and %d horizontal, expected 6 and 3", vs, hs);
    free(s);
}

static void test_heatmap_errors(void) {
    double v[4] = {0, 1, 2, 3};
    SvgHeatmap ok = {.rows = 2, .cols = 2, .values = v};
    struct { const char *fmt; int rc; } fmts[] = {
        {"%s", 2}, {"%d", 2}, {"%.2f %.2f", 2}, {"%n", 2}, {"%lf", 2}, {"%.200f", 2}, {"no conv", 2},
        {"%5.1f%%", 0}, {"%+.3e", 0}, {"%g", 0},
    };
    for (size_t i = 0; i < sizeof fmts / sizeof *fmts; i++) {
        SvgHeatmap h = ok;
        h.value_format = fmts[i].fmt;
        AlError err = {0};
        int rc = svg_heatmap(P("fmt.svg"), &h, &err);
        CHECK(rc == fmts[i].rc, "value_format \"%s\": rc %d, expected %d (%s)", fmts[i].fmt, rc,
              fmts[i].rc, err.msg);
        if (fmts[i].rc) CHECK(strstr(err.msg, "value_format") && strstr(err.msg, "fmt.svg"),
                              "message: %s", err.msg);
    }
    SvgHeatmap bad[5] = {ok, ok, ok, ok, ok};
    bad[0].rows = 0;
    bad[1].values = NULL;
    bad[2].fixed_range = 1, bad[2].vmin = 1, bad[2].vmax = 1;
    bad[3].fixed_range = 1, bad[3].vmin = 0, bad[3].vmax = NAN;
    bad[4].cols = 1001;
    const char *what[5] = {"rows", "NULL", "vmin", "vmin", "1..1000"};
    for (int i = 0; i < 5; i++) {
        AlError err = {0};
        CHECK(svg_heatmap(P("bad.svg"), &bad[i], &err) == 2 && err.code == 2,
              "bad heatmap %d not rejected with code 2", i);
        CHECK(strstr(err.msg, what[i]) && strstr(err.msg, "bad.svg"), "bad heatmap %d: %s", i, err.msg);
    }
    AlError err = {0};
    CHECK(svg_heatmap(P("x.svg"), NULL, &err) == 2, "NULL heatmap accepted");
    CHECK(svg_heatmap(NULL, &ok, &err) == 2, "NULL path accepted");
    CHECK(access(P("bad.svg"), F_OK) != 0, "a rejected heatmap left a file");
}

/* ---- line charts ----------------------------------------------------------------- */

static void test_line_basic(void) {
    double l[5] = {1, 2, 4, 8, 16};
    double e1[5] = {0.5, 0.3, 0.1, 0.05, 0.02}, e2[5] = {0.6, 0.45, 0.3, 0.2, 0.1};
    double sd[5] = {0.05, 0.04, 0.03, 0.02, 0.01};
    SvgSeries s[2] = {{"z = 1 <&>", 5, l, e1, sd}, {"z = 2", 5, l, e2, NULL}};
    SvgLineChart c = {.title = "error vs \u2113", .x_title = "window \u2113",
                      .y_title = "token error", .series = s, .n_series = 2};
    AlError err = {0};
    CHECK(svg_line_chart(P("line.svg"), &c, &err) == 0, "line chart: %s", err.msg);
    char *t = load_checked(P("line.svg"));
    const char *texts[] = {"error vs \u2113", "window \u2113", "token error", "z = 1 &lt;&amp;&gt;",
                           "z = 2"};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
        CHECK(has_text(t, texts[i]), "line chart text '%s' missing", texts[i]);
    CHECK(count(t, "class=\"errbar\"") == 1, "error bars: expected exactly one series with bars");
    CHECK(count(t, "class=\"line\"") == 2, "expected two lines");
    CHECK(strstr(t, "class=\"legend\""), "no legend");
    CHECK(count(t, "<circle") >= 5 + 1, "series 0 markers (circles) missing");
    CHECK(strstr(t, "stroke=\"#0072b2\"") && strstr(t, "stroke=\"#d55e00\""), "Okabe-Ito colours missing");
    /* Round-number ticks on a linear axis: 0 .. 16 in steps of 2 or 5 etc. */
    CHECK(has_text(t, "0") && has_text(t, "10"), "linear x ticks 0 and 10 missing");
    CHECK(has_text(t, "0.0") && has_text(t, "0.6"), "linear y ticks 0.0 and 0.6 missing");
    free(t);

    /* The same chart without y_err: no error bars at all. */
    s[0].y_err = NULL;
    CHECK(svg_line_chart(P("line_noerr.svg"), &c, &err) == 0, "no y_err: %s", err.msg);
    t = load_checked(P("line_noerr.svg"));
    CHECK(!strstr(t, "errbar"), "error bars drawn without y_err");
    free(t);
}

/* Is the label a power of 2 or 10?  (plain digits only) */
static int is_power_label(const char *lab) {
    double v = strtod(lab, NULL);
    if (!(v > 0)) return 0;
    double l2 = log2(v), l10 = log10(v);
    return fabs(l2 - round(l2)) < 1e-9 || fabs(l10 - round(l10)) < 1e-9;
}

static void test_line_log(void) {
    double n[9], t_soft[9], t_lin[9];
    for (int i = 0; i < 9; i++) {
        n[i] = 256 << i;
        t_soft[i] = 0.002 * n[i] * n[i] / 1000;   /* ~0.13 .. 8600 ms */
        t_lin[i] = 0.05 * n[i] / 10;
    }
    SvgSeries s[2] = {{"softmax", 9, n, t_soft, NULL}, {"linear", 9, n, t_lin, NULL}};
    SvgLineChart c = {.title = "time vs N", .x_title = "N", .y_title = "ms / step",
                      .series = s, .n_series = 2, .log_x = 2, .log_y = 10};
    AlError err = {0};
    CHECK(svg_line_chart(P("log.svg"), &c, &err) == 0, "log chart: %s", err.msg);
    char *t = load_checked(P("log.svg"));
    CHECK(has_text(t, "256") && has_text(t, "65536"), "log2 x ends 256 / 65536 missing");
    CHECK(has_text(t, "0.1") && has_text(t, "10000"), "log10 y ticks 0.1 / 10000 missing");
    /* Every labelled tick of the axes group is a power of 2 or 10. */
    const char *g = strstr(t, "class=\"axes\""), *end = g ? strstr(g, "</g>") : NULL;
    int labels = 0;
    for (const char *p = g; p && p < end && (p = strstr(p, "<text ")) && p < end; p++) {
        const char *gt = strchr(p, '>');
        char lab[64];
        size_t len = strcspn(gt + 1, "<");
        snprintf(lab, sizeof lab, "%.*s", (int)len, gt + 1);
        CHECK(is_power_label(lab), "log tick label '%s' is not a power", lab);
        labels++;
    }
    CHECK(labels >= 9 + 5, "expected >= 14 log tick labels, got %d", labels);
    free(t);

    /* Wide log10 range: superscript exponents. */
    double x[3] = {1, 2, 3}, y[3] = {1e-8, 1e-4, 1};
    SvgSeries one = {"tiny", 3, x, y, NULL};
    SvgLineChart d = {.series = &one, .n_series = 1, .log_y = 10};
    CHECK(svg_line_chart(P("sup.svg"), &d, &err) == 0, "superscripts: %s", err.msg);
    t = load_checked(P("sup.svg"));
    CHECK(has_text(t, "10\u207B\u2078"), "10^-8 not written as 10⁻⁸");
    CHECK(has_text(t, "10\u2070") && !has_text(t, "0.0001") && !has_text(t, "1"),
          "one log axis mixes plain and superscript labels");
    free(t);
}

static void test_line_degenerate(void) {
    AlError err = {0};
    double x = 5, y = 0.5;
    SvgSeries s = {"only", 1, &x, &y, NULL};
    SvgLineChart c = {.series = &s, .n_series = 1};
    CHECK(svg_line_chart(P("point.svg"), &c, &err) == 0, "single point: %s", err.msg);
    char *t = load_checked(P("point.svg"));
    CHECK(count(t, "<circle") == 2, "single point: marker (plus legend) expected");
    CHECK(!strstr(t, "class=\"line\""), "single point drew a line");
    CHECK(!strstr(t, "nan") && !strstr(t, "inf"), "single point: nan/inf in output");
    free(t);

    c.log_x = 2, c.log_y = 10;
    CHECK(svg_line_chart(P("point_log.svg"), &c, &err) == 0, "single point, log: %s", err.msg);
    free(load_checked(P("point_log.svg")));

    /* A gap: NaN breaks the line into two pieces. */
    double xs[5] = {1, 2, 3, 4, 5}, ys[5] = {1, 2, NAN, 4, 5};
    SvgSeries g = {"gap", 5, xs, ys, NULL};
    SvgLineChart gc = {.series = &g, .n_series = 1, .fixed_y_range = 1, .y_min = 0, .y_max = 1};
    CHECK(svg_line_chart(P("gap.svg"), &gc, &err) == 0, "gap: %s", err.msg);
    t = load_checked(P("gap.svg"));
    const char *d = strstr(t, "class=\"line\"");
    CHECK(d && count(strstr(d, " d=\""), "M") >= 2, "NaN did not break the line");
    CHECK(has_text(t, "0.0") && has_text(t, "1.0"), "fixed y range [0, 1] ends not labelled");
    free(t);

    /* Long series: no marker clutter; ten series: distinct styles. */
    enum { N = 200, S = 10 };
    static double lx[N], ly[S][N];
    SvgSeries many[S];
    char names[S][16];
    for (int i = 0; i < N; i++) lx[i] = i * 25;
    for (int k = 0; k < S; k++) {
        for (int i = 0; i < N; i++) ly[k][i] = 1 - exp(-i / (10.0 + 8 * k));
        snprintf(names[k], sizeof names[k], "run %d", k);
        many[k] = (SvgSeries){names[k], N, lx, ly[k], NULL};
    }
    SvgLineChart m = {.title = "validation accuracy", .x_title = "step", .y_title = "accuracy",
                      .series = many, .n_series = S, .fixed_y_range = 1, .y_min = 0, .y_max = 1};
    CHECK(svg_line_chart(P("many.svg"), &m, &err) == 0, "many series: %s", err.msg);
    t = load_checked(P("many.svg"));
    CHECK(count(t, "class=\"markers\"") == S && count(t, "<circle") == 0, "200-point series got markers");
    for (int k = 0; k < S; k++) CHECK(has_text(t, names[k]), "legend entry '%s' missing", names[k]);
    CHECK(count(t, "stroke-dasharray") == 2 * 2, "series 8 and 9 should be dashed (line + legend)");
    free(t);
}

static void test_line_errors(void) {
    double x[3] = {1, 2, 3}, y[3] = {0.5, 0, 0.2}, neg[3] = {0.1, -1, 0.1};
    double inf_y[3] = {1, INFINITY, 2};
    AlError err = {0};

    SvgLineChart none = {.title = "empty"};
    CHECK(svg_line_chart(P("none.svg"), &none, &err) == 2, "empty series list not rejected");
    CHECK(strstr(err.msg, "no series") && strstr(err.msg, "none.svg"), "message: %s", err.msg);

    SvgSeries s = {"z=3", 3, x, y, NULL};
    SvgLineChart c = {.series = &s, .n_series = 1, .log_y = 10};
    CHECK(svg_line_chart(P("logzero.svg"), &c, &err) == 2, "y = 0 on a log axis accepted");
    CHECK(strstr(err.msg, "log scale") && strstr(err.msg, "z=3") && strstr(err.msg, "y[1]"),
          "message: %s", err.msg);

    c.log_y = 3;
    CHECK(svg_line_chart(P("e.svg"), &c, &err) == 2 && strstr(err.msg, "log_y = 3"), "log_y = 3: %s", err.msg);
    c.log_y = 0;
    s.y_err = neg;
    CHECK(svg_line_chart(P("e.svg"), &c, &err) == 2 && strstr(err.msg, "y_err[1]"), "negative y_err: %s", err.msg);
    s.y_err = NULL;
    s.y = inf_y;
    CHECK(svg_line_chart(P("e.svg"), &c, &err) == 2 && strstr(err.msg, "finite"), "infinite y: %s", err.msg);
    s.y = y;
    s.n = -1;
    CHECK(svg_line_chart(P("e.svg"), &c, &err) == 2 && strstr(err.msg, "n < 0"), "n < 0: %s", err.msg);
    s.n = 0;
    CHECK(svg_line_chart(P("e.svg"), &c, &err) == 2 && strstr(err.msg, "no point"), "no points: %s", err.msg);
    s.n = 3;
    c.fixed_y_range = 1, c.y_min = 1, c.y_max = 0;
    CHECK(svg_line_chart(P("e.svg"), &c, &err) == 2 && strstr(err.msg, "y_min"), "bad y range: %s", err.msg);
    CHECK(access(P("e.svg"), F_OK) != 0, "a rejected chart left a file");
}

/* ---- across both ----------------------------------------------------------------- */

static int same_file(const char *a, const char *b) {
    char *x = slurp(a), *y = slurp(b);
    int same = x && y && !strcmp(x, y);
    free(x), free(y);
    return same;
}

static void test_determinism_and_io(void) {
    double v[6] = {0.1, 0.2, NAN, 0.4, 0.5, 0.6};
    SvgHeatmap h = {.title = "det", .rows = 2, .cols = 3, .values = v, .value_format = "%.2f"};
    double x[4] = {256, 1024, 4096, 16384}, y[4] = {1, 3, 9, 27}, e[4] = {0.1, 0.3, 0.9, 2};
    SvgSeries s = {"a", 4, x, y, e};
    SvgLineChart c = {.title = "det", .series = &s, .n_series = 1, .log_x = 2};
    AlError err = {0};
    CHECK(svg_heatmap(P("d1.svg"), &h, &err) == 0 && svg_heatmap(P("d2.svg"), &h, &err) == 0, "%s", err.msg);
    CHECK(same_file(P("d1.svg"), P("d2.svg")), "heatmap output differs between two runs");
    CHECK(svg_line_chart(P("l1.svg"), &c, &err) == 0 && svg_line_chart(P("l2.svg"), &c, &err) == 0, "%s", err.msg);
    CHECK(same_file(P("l1.svg"), P("l2.svg")), "line chart output differs between two runs");
    /* Clip ids differ between charts, so figures inlined in one page keep their own. */
    char *l1 = slurp(P("l1.svg")), *other = slurp(P("line.svg"));
    const char *i1 = l1 ? strstr(l1, "clipPath id=\"") : NULL, *i2 = other ? strstr(other, "clipPath id=\"") : NULL;
    CHECK(i1 && i2 && strncmp(i1, i2, 34) != 0, "two different charts share a clip-path id");
    free(l1), free(other);

    /* A comma-decimal locale must not leak into numbers (skipped if none installed). */
    const char *locs[] = {"de_DE.UTF-8", "fr_FR.UTF-8", "de_DE.utf8", "fr_FR.utf8"};
    const char *used = NULL;
    for (size_t i = 0; i < 4 && !used; i++) used = setlocale(LC_NUMERIC, locs[i]) ? locs[i] : NULL;
    if (used) {
        CHECK(svg_heatmap(P("d3.svg"), &h, &err) == 0 && svg_line_chart(P("l3.svg"), &c, &err) == 0, "%s", err.msg);
        CHECK(same_file(P("d1.svg"), P("d3.svg")) && same_file(P("l1.svg"), P("l3.svg")),
              "output changes under LC_NUMERIC=%s", used);
        setlocale(LC_NUMERIC, "C");
    } else {
        printf("test_svg: no comma-decimal locale installed; locale check skipped\n");
    }

    /* Unwritable paths: code 1, the path in the message, nothing left behind. */
    const char *bad = "/nonexistent-attnlab-dir/fig.svg";
    CHECK(svg_heatmap(bad, &h, &err) == 1 && err.code == 1, "unwritable heatmap path: rc %d", err.code);
    CHECK(strstr(err.msg, bad), "message lacks the path: %s", err.msg);
    err = (AlError){0};
    CHECK(svg_line_chart(bad, &c, &err) == 1, "unwritable chart path accepted");
    CHECK(strstr(err.msg, bad), "message lacks the path: %s", err.msg);
    char under_file[600];
    snprintf(under_file, sizeof under_file, "%s/fig.svg", P("d1.svg"));   /* parent is a file */
    CHECK(svg_line_chart(under_file, &c, &err) == 1 && strstr(err.msg, under_file), "%s", err.msg);
}

/* Caller text that would break XML: quotes, controls, invalid UTF-8. */
static void test_escaping(void) {
    double x[2] = {0, 1}, y[2] = {0, 1};
    SvgSeries s = {"q\"uote' \x01 bad\xff\xfe utf8 \xed\xa0\x80", 2, x, y, NULL};
    SvgLineChart c = {.title = "a < b && c > d", .x_title = "\"x\"", .y_title = "tab\there",
                      .series = &s, .n_series = 1};
    AlError err = {0};
    CHECK(svg_line_chart(P("esc.svg"), &c, &err) == 0, "escaping: %s", err.msg);
    char *t = load_checked(P("esc.svg"));
    CHECK(has_text(t, "a &lt; b &amp;&amp; c &gt; d"), "title not escaped");
    CHECK(has_text(t, "&quot;x&quot;") && has_text(t, "tab here"), "quotes or tab not handled");
    CHECK(strstr(t, "q&quot;uote&apos;") && strstr(t, "\xEF\xBF\xBD"), "series name not sanitised");
    free(t);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/attnlab_svg_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    have_python = access("/usr/bin/python3", X_OK) == 0;
    if (!have_python) printf("test_svg: /usr/bin/python3 not found; only the built-in XML check runs\n");

    test_heatmap_basic();
    test_heatmap_range_and_missing();
    test_heatmap_degenerate();
    test_heatmap_large();
    test_heatmap_runs();
    test_heatmap_errors();
    test_line_basic();
    test_line_log();
    test_line_degenerate();
    test_line_errors();
    test_determinism_and_io();
    test_escaping();

    if (getenv("ATTNLAB_KEEP_SVG")) printf("test_svg: figures kept in %s\n", tmpdir);
    else {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0) fprintf(stderr, "test_svg: could not remove %s\n", tmpdir);
    }
    return check_exit("test_svg");
}
