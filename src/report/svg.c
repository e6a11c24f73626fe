/* svg.c — see svg.h.
 *
 * The file is in layers, each using only the ones above it:
 *   1. an append-only text buffer with a tiny formatter (%v coordinates, %x escaped);
 *   2. text: UTF-8 checking, XML escaping, width estimates, number labels;
 *   3. colours: viridis for values, Okabe–Ito for series;
 *   4. axes: round-number ticks (linear) and power ticks (log);
 *   5. the heatmap;  6. the line chart.
 *
 * Geometry is computed before anything is drawn (a layout struct per chart), so the
 * drawing functions only place things where the layout says.  Text widths are
 * estimates (a renderer's font is unknown here): generous on purpose, since a gap
 * costs nothing and an overlap makes a figure unreadable. */
#include "attnlab/report/svg.h"

#include "attnlab/io/atomic_file.h"

#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SVG_PAD       16.0    /* outer margin of every figure */
#define SVG_FS_TITLE  16.0    /* font sizes in px */
#define SVG_FS_AXIS   14.0
#define SVG_FS_TICK   12.0
#define SVG_CHAR_W    0.62    /* average glyph advance in em (DejaVu digits: 0.64) */
#define SVG_MAX_TICKS 64
#define SVG_MAX_MINOR 96
#define SVG_HUGE      1e300   /* larger magnitudes would overflow spans to inf */
#define SVG_FONT      "DejaVu Sans, Helvetica, Arial, sans-serif"

/* ==== 1. Buffer ================================================================== */

typedef struct SvgBuf {
    char *p;
    size_t n, cap;
} SvgBuf;

static void svg_put(SvgBuf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 8192;
        while (b->n + n + 1 > cap) cap *= 2;
        b->p = al_realloc(b->p, cap);
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void svg_puts(SvgBuf *b, const char *s) { svg_put(b, s, strlen(s)); }

/* A coordinate with at most two decimals and no trailing zeros: 0.01 px is below
 * what any screen shows, and short numbers keep files small and diffs readable.
 * Integer arithmetic, so the output cannot depend on the locale. */
static void svg_num(SvgBuf *b, double v) {
    AL_ASSERT(isfinite(v) && fabs(v) < 1e12);
    long long h = llround(v * 100.0);
    const char *sign = h < 0 ? "-" : "";
    if (h < 0) h = -h;
    char t[48];
    if (h % 100 == 0)
        snprintf(t, sizeof t, "%s%lld", sign, h / 100);
    else if (h % 10 == 0)
        snprintf(t, sizeof t, "%s%lld.%lld", sign, h / 100, h % 100 / 10);
    else
        snprintf(t, sizeof t, "%s%lld.%02lld", sign, h / 100, h % 100);
    svg_puts(b, t);
}

static void svg_escape(SvgBuf *b, const char *s);

/* Appends fmt with %v = coordinate (double), %d = int, %s = our own markup as is,
 * %x = caller text, XML-escaped, %% = '%'.  Our own formatter rather than printf:
 * every caller string must be escaped and every coordinate trimmed, and a
 * directive for each makes forgetting one visible at the call site. */
static void svg_out(SvgBuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    while (*fmt) {
        const char *pct = strchr(fmt, '%');
        size_t lit = pct ? (size_t)(pct - fmt) : strlen(fmt);
        svg_put(b, fmt, lit);
        if (!pct) break;
        AL_ASSERT(pct[1] != '\0');
        char t[16];
        switch (pct[1]) {
        case 'v': svg_num(b, va_arg(ap, double)); break;
        case 'd': snprintf(t, sizeof t, "%d", va_arg(ap, int)); svg_puts(b, t); break;
        case 's': svg_puts(b, va_arg(ap, const char *)); break;
        case 'x': svg_escape(b, va_arg(ap, const char *)); break;
        case '%': svg_put(b, "%", 1); break;
        default: AL_ASSERT(!"unknown svg_out directive");
        }
        fmt = pct + 2;
    }
    va_end(ap);
}

/* ==== 2. Text ==================================================================== */

/* Length of the valid UTF-8 sequence at p that is also an XML character (no
 * surrogates, no U+FFFE/U+FFFF, no overlong forms), or 0. */
static int svg_utf8_len(const unsigned char *p) {
    unsigned c = p[0];
    int k;
    unsigned lo = 0x80, hi = 0xBF;          /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) k = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        k = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return 0;
    if (p[1] < lo || p[1] > hi) return 0;
    for (int i = 2; i < k; i++)
        if (p[i] < 0x80 || p[i] > 0xBF) return 0;
    if (c == 0xEF && p[1] == 0xBF && (p[2] == 0xBE || p[2] == 0xBF)) return 0;
    return k;
}

/* Caller text as XML character data / attribute value.  Whitespace controls become
 * spaces (SVG would collapse them anyway); other controls and invalid UTF-8 become
 * U+FFFD, since a single one would make the whole file unreadable to an XML parser. */
static void svg_escape(SvgBuf *b, const char *s) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        unsigned c = *p;
        int k = c < 0x80 ? 1 : svg_utf8_len(p);
        if (c == '&') svg_puts(b, "&amp;");
        else if (c == '<') svg_puts(b, "&lt;");
        else if (c == '>') svg_puts(b, "&gt;");
        else if (c == '"') svg_puts(b, "&quot;");
        else if (c == '\'') svg_puts(b, "&apos;");
        else if (c == '\t' || c == '\n' || c == '\r') svg_put(b, " ", 1);
        else if (c < 0x20 || k == 0) svg_puts(b, "\xEF\xBF\xBD");
        else svg_put(b, (const char *)p, (size_t)k);
        p += k ? k : 1;
    }
}

/* Estimated width in px of s at font size fs: characters (not bytes) × an average
 * advance.  Wide glyphs (W, M) are offset by narrow ones (i, l, 1) in real labels. */
static double svg_text_w(const char *s, double fs) {
    if (!s) return 0;
    int chars = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        chars += (*p & 0xC0) != 0x80;
    return chars * fs * SVG_CHAR_W;
}

static int svg_has_text(const char *s) { return s && *s; }

/* One <text> with its baseline at (x, y).  anchor: "start", "middle" or "end";
 * angle: degrees of rotation about (x, y), 0 for none; extra: more attributes. */
static void svg_text(SvgBuf *b, double x, double y, double fs, const char *anchor,
                     double angle, const char *extra, const char *s) {
    svg_out(b, "<text x=\"%v\" y=\"%v\" font-size=\"%v\"", x, y, fs);
    if (strcmp(anchor, "start") != 0) svg_out(b, " text-anchor=\"%s\"", anchor);
    if (angle != 0) svg_out(b, " transform=\"rotate(%v %v %v)\"", angle, x, y);
    if (extra && *extra) svg_out(b, " %s", extra);
    svg_out(b, ">%x</text>\n", s);
}

/* Baseline that centres a line of text of size fs vertically on y. */
static double svg_mid(double y, double fs) { return y + 0.35 * fs; }

/* A label of a linear axis with a fixed number of decimals, so that 0.0 0.5 1.0
 * line up; %g only for magnitudes where fixed notation would be unreadable. */
static void svg_fmt_linear(char *out, size_t n, double v, int decimals) {
    if (fabs(v) >= 1e7 || decimals > 8) snprintf(out, n, "%.6g", v);
    else snprintf(out, n, "%.*f", decimals, v);
}

/* Is base^k short in plain digits ("0.125", "65536")? */
static int svg_power_plain(int base, int k) {
    return base == 10 ? (k >= -4 && k <= 5) : (k >= -3 && k <= 16);
}

/* base^k as a tick label: plain digits, or the base with a superscript exponent
 * ("10⁻⁶", "2²⁴").  One axis uses one style, so labels are read the same way. */
static void svg_fmt_power(char *out, size_t n, int base, int k, int plain) {
    static const char *const sup[10] = {"\u2070", "\u00B9", "\u00B2", "\u00B3", "\u2074",
                                        "\u2075", "\u2076", "\u2077", "\u2078", "\u2079"};
    if (plain) {
        snprintf(out, n, "%.*f", k < 0 ? -k : 0, pow(base, k));
        return;
    }
    char digits[16];
    snprintf(digits, sizeof digits, "%d", k < 0 ? -k : k);
    int len = snprintf(out, n, "%d%s", base, k < 0 ? "\u207B" : "");
    for (const char *d = digits; *d && len >= 0 && (size_t)len < n; d++)
        len += snprintf(out + len, n - (size_t)len, "%s", sup[*d - '0']);
}

/* ==== 3. Colours ================================================================= */

typedef struct SvgRgb {
    double r, g, b;     /* 0..255 */
} SvgRgb;

/* viridis (van der Walt & Smith): perceptually uniform, readable in grey scale and
 * by colour-blind readers.  Nine samples, linearly interpolated; the colour bar's
 * gradient uses the same stops, so bar and cells agree exactly. */
static const unsigned char svg_viridis_stops[9][3] = {
    {0x44, 0x01, 0x54}, {0x47, 0x2D, 0x7B}, {0x3B, 0x52, 0x8B}, {0x2C, 0x72, 0x8E},
    {0x21, 0x90, 0x8C}, {0x27, 0xAD, 0x81}, {0x5D, 0xC8, 0x63}, {0xAA, 0xDC, 0x32},
    {0xFD, 0xE7, 0x25},
};

static SvgRgb svg_viridis(double t) {
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    double u = t * 8;
    int i = (int)u;
    if (i > 7) i = 7;
    double f = u - i;
    const unsigned char *a = svg_viridis_stops[i], *z = svg_viridis_stops[i + 1];
    return (SvgRgb){a[0] + f * (z[0] - a[0]), a[1] + f * (z[1] - a[1]),
                    a[2] + f * (z[2] - a[2])};
}

static void svg_hex(char out[8], SvgRgb c) {
    snprintf(out, 8, "#%02x%02x%02x", (unsigned)lround(c.r), (unsigned)lround(c.g),
             (unsigned)lround(c.b));
}

/* Text colour for a cell: black or white, whichever contrasts more (WCAG relative
 * luminance; the two contrasts are equal at L = 0.179). */
static const char *svg_ink_for(SvgRgb c) {
    double ch[3] = {c.r / 255, c.g / 255, c.b / 255}, lin[3];
    for (int i = 0; i < 3; i++)
        lin[i] = ch[i] <= 0.04045 ? ch[i] / 12.92 : pow((ch[i] + 0.055) / 1.055, 2.4);
    double lum = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
    return lum > 0.179 ? "#000000" : "#ffffff";
}

/* Okabe & Ito's colour-blind-safe palette, yellow last (weak on white).  Series
 * 8.. reuse the colours with dashed lines; marker shapes cycle with period 6, so
 * colour, shape and dash together tell up to 48 series apart. */
static const char *const svg_palette[8] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                                           "#e69f00", "#56b4e9", "#000000", "#f0e442"};

/* ==== 4. Axes ==================================================================== */

/* An axis in "axis units": the value itself (linear) or its logarithm (log). */
typedef struct SvgAxis {
    int log_base;                           /* 0, 2 or 10 */
    double lo, hi;                          /* ends, axis units */
    int n_ticks, n_minor;
    double tick[SVG_MAX_TICKS];             /* axis units */
    char label[SVG_MAX_TICKS][40];
    double minor[SVG_MAX_MINOR];            /* unlabelled ticks (log10: 2..9 × 10^k) */
    double step;                            /* linear tick spacing */
    int decimals;                           /* linear label decimals */
} SvgAxis;

static double svg_axis_unit(const SvgAxis *a, double v) {
    return a->log_base == 2 ? log2(v) : a->log_base == 10 ? log10(v) : v;
}

/* 1, 2 or 5 × 10^k nearest above raw: round numbers people read at a glance. */
static double svg_nice_step(double raw) {
    double p = pow(10, floor(log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/* Ticks about `target` apart over [dmin, dmax].  fixed: the axis spans exactly
 * [dmin, dmax] and ticks fall inside; else it widens to the outer ticks, so the
 * frame starts and ends on a labelled number. */
static void svg_axis_linear(SvgAxis *a, double dmin, double dmax, int fixed, int target) {
    memset(a, 0, sizeof *a);
    double span = dmax - dmin;
    if (!fixed && span <= 1e-12 * fmax(fabs(dmin), fabs(dmax))) {   /* one value */
        double d = dmin != 0 ? fabs(dmin) * 0.5 : 1.0;
        dmin -= d, dmax += d, span = dmax - dmin;
    }
    double step = svg_nice_step(span / target);
    double i0 = fixed ? ceil(dmin / step - 1e-9) : floor(dmin / step + 1e-9);
    double i1 = fixed ? floor(dmax / step + 1e-9) : ceil(dmax / step - 1e-9);
    a->lo = fixed ? dmin : i0 * step;
    a->hi = fixed ? dmax : i1 * step;
    a->step = step;
    a->decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    for (double i = i0; i <= i1 && a->n_ticks < SVG_MAX_TICKS; i++) {
        double v = i * step;
        if (fabs(v) < step * 1e-9) v = 0;     /* no "-0.0" from rounding noise */
        a->tick[a->n_ticks] = v;
        svg_fmt_linear(a->label[a->n_ticks], sizeof a->label[0], v, a->decimals);
        a->n_ticks++;
    }
}

/* Ticks at every stride-th power of base over [dmin, dmax] (both > 0); unfixed
 * ends widen to whole powers. */
static void svg_axis_log(SvgAxis *a, int base, double dmin, double dmax, int fixed,
                         int stride) {
    memset(a, 0, sizeof *a);
    a->log_base = base;
    double l0 = svg_axis_unit(a, dmin), l1 = svg_axis_unit(a, dmax);
    if (fixed) {
        a->lo = l0, a->hi = l1;
    } else {
        a->lo = floor(l0 + 1e-9), a->hi = ceil(l1 - 1e-9);
        if (a->hi <= a->lo) a->lo -= 1, a->hi += 1;       /* one value: centre it */
    }
    int plain = 1;
    for (int k = (int)ceil(a->lo - 1e-9); k <= (int)floor(a->hi + 1e-9); k++) {
        if (((k % stride) + stride) % stride != 0 || a->n_ticks == SVG_MAX_TICKS) continue;
        a->tick[a->n_ticks++] = k;
        plain &= svg_power_plain(base, k);
    }
    for (int i = 0; i < a->n_ticks; i++)
        svg_fmt_power(a->label[i], sizeof a->label[0], base, (int)a->tick[i], plain);
    if (base != 10 || stride != 1 || a->hi - a->lo > 8) return;
    for (int k = (int)floor(a->lo); k < (int)ceil(a->hi); k++)
        for (int m = 2; m <= 9 && a->n_minor < SVG_MAX_MINOR; m++) {
            double u = k + log10(m);
            if (u > a->lo && u < a->hi) a->minor[a->n_minor++] = u;
        }
}

/* Do the tick labels fit along len px?  Side by side (x) their widths count;
 * stacked (y) only their height. */
static int svg_axis_fits(const SvgAxis *a, double len, int horizontal) {
    for (int i = 0; i + 1 < a->n_ticks; i++) {
        double gap = (a->tick[i + 1] - a->tick[i]) / (a->hi - a->lo) * len;
        double need = horizontal ? (svg_text_w(a->label[i], SVG_FS_TICK) +
                                    svg_text_w(a->label[i + 1], SVG_FS_TICK)) / 2 + 14
                                 : SVG_FS_TICK * 2;
        if (gap < need) return 0;
    }
    return 1;
}

/* The densest ticks whose labels fit: fewer round numbers, or every 2nd, 3rd, ...
 * power, until nothing overlaps. */
static void svg_axis_fit(SvgAxis *a, int log_base, double dmin, double dmax, int fixed,
                         double len, int horizontal) {
    if (!log_base) {
        for (int target = horizontal ? 8 : 6; target >= 2; target--) {
            svg_axis_linear(a, dmin, dmax, fixed, target);
            if (svg_axis_fits(a, len, horizontal)) return;
        }
        return;
    }
    int powers = (int)(log10(dmax / dmin) * (log_base == 2 ? 3.33 : 1)) + 2;
    for (int stride = powers / 40 + 1; ; stride++) {   /* start below SVG_MAX_TICKS */
        svg_axis_log(a, log_base, dmin, dmax, fixed, stride);
        if (a->n_ticks <= 2 || svg_axis_fits(a, len, horizontal)) return;
    }
}

static double svg_axis_label_w(const SvgAxis *a) {
    double w = 0;
    for (int i = 0; i < a->n_ticks; i++) w = fmax(w, svg_text_w(a->label[i], SVG_FS_TICK));
    return w;
}

/* ==== Document frame ============================================================= */

/* Thread-local switch to the C numeric locale for the duration of one figure: the
 * caller may have set one whose printf writes "0,5", which would corrupt numbers in
 * labels.  uselocale() leaves other threads and the global locale untouched. */
typedef struct SvgLocale {
    locale_t c, old;
} SvgLocale;

static SvgLocale svg_locale_begin(void) {
    SvgLocale l = {newlocale(LC_NUMERIC_MASK, "C", (locale_t)0), (locale_t)0};
    if (l.c) l.old = uselocale(l.c);
    return l;
}

static void svg_locale_end(SvgLocale l) {
    if (!l.c) return;
    uselocale(l.old);
    freelocale(l.c);
}

/* Root element, a <title> for screen readers and browser tabs, and a white
 * background so the figure reads the same on a dark page. */
static void svg_doc_begin(SvgBuf *b, double w, double h, const char *title) {
    svg_out(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%v\" height=\"%v\" "
               "viewBox=\"0 0 %v %v\" font-family=\"%s\" fill=\"#000000\">\n",
            w, h, w, h, SVG_FONT);
    if (svg_has_text(title)) svg_out(b, "<title>%x</title>\n", title);
    svg_out(b, "<rect width=\"%v\" height=\"%v\" fill=\"#ffffff\"/>\n", w, h);
}

/* Title centred at the top; the layouts reserve its band. */
static void svg_doc_title(SvgBuf *b, double w, const char *title) {
    if (svg_has_text(title))
        svg_text(b, w / 2, SVG_PAD + SVG_FS_TITLE * 0.8, SVG_FS_TITLE, "middle", 0,
                 "font-weight=\"bold\"", title);
}

static double svg_title_band(const char *title) {
    return svg_has_text(title) ? SVG_FS_TITLE + 14 : 0;
}

/* Writes the finished document; the buffer is freed either way. */
static int svg_doc_write(SvgBuf *b, const char *path, AlError *err) {
    svg_puts(b, "</svg>\n");
    int rc = write_text_atomic(path, b->p, err);
    free(b->p);
    return rc;
}

static int svg_bad(AlError *err, const char *path, const char *what) {
    return al_fail(err, 2, "cannot plot '%s': %s", path ? path : "(null)", what);
}

/* ==== 5. Heatmap ================================================================= */

#define SVG_HEAT_FS    12.0   /* cell values and labels */
#define SVG_HEAT_BAR_W 16.0
#define SVG_HEAT_MISS  "missing"

typedef struct SvgHeatLayout {
    double vmin, vmax;          /* colour range */
    int any_nan, tilt;          /* missing cells present; column labels at -45° */
    double cell_w, cell_h, grid_x, grid_y, grid_w, grid_h;
    double band_h;              /* height of the row band (≥ grid, ≥ y title) */
    double bar_x, bar_y, bar_h, bar_lab_w;
    double col_lab_w;           /* widest column label */
    double xt_x, xt_y;          /* x title centre and baseline */
    double width, height;
    char (*text)[48];           /* rows×cols printed values ("" when not printed) */
} SvgHeatLayout;

/* A printf format with exactly one floating conversion (flags, width and precision
 * of at most two digits) and any literal text: anything else, such as %s, would
 * read a pointer that is not there. */
static int svg_format_ok(const char *f) {
    int convs = 0;
    for (; *f; f++) {
        if (*f != '%') continue;
        if (f[1] == '%') { f++; continue; }
        f++;
        f += strspn(f, "-+ #0");
        size_t w = strspn(f, "0123456789");
        f += w;
        size_t p = 0;
        if (*f == '.') {
            p = strspn(f + 1, "0123456789");
            f += 1 + p;
        }
        if (w > 2 || p > 2 || !*f || !strchr("fFeEgGaA", *f)) return 0;
        convs++;
    }
    return convs == 1;
}

static int svg_heat_check(const char *path, const SvgHeatmap *h, AlError *err) {
    char m[200];
    if (!path) return svg_bad(err, path, "no output path");
    if (!h) return svg_bad(err, path, "no heatmap (NULL)");
    if (h->rows < 1 || h->rows > 1000 || h->cols < 1 || h->cols > 1000) {
        snprintf(m, sizeof m, "heatmap of %d x %d cells; rows and cols must be in 1..1000",
                 h->rows, h->cols);
        return svg_bad(err, path, m);
    }
    if (!h->values) return svg_bad(err, path, "heatmap values are NULL");
    if (h->value_format && *h->value_format && !svg_format_ok(h->value_format)) {
        snprintf(m, sizeof m, "value_format \"%.60s\" must hold exactly one floating-point "
                 "conversion such as %%.2f", h->value_format);
        return svg_bad(err, path, m);
    }
    if (h->fixed_range && !(isfinite(h->vmin) && isfinite(h->vmax) && h->vmin < h->vmax &&
                            fabs(h->vmin) <= SVG_HUGE && fabs(h->vmax) <= SVG_HUGE)) {
        snprintf(m, sizeof m, "fixed range [%g, %g]; expected finite vmin < vmax",
                 h->vmin, h->vmax);
        return svg_bad(err, path, m);
    }
    for (int i = 0; i < h->rows * h->cols; i++)
        if (isfinite(h->values[i]) && fabs(h->values[i]) > SVG_HUGE) {
            snprintf(m, sizeof m, "value[%d] = %g is too large to plot", i, h->values[i]);
            return svg_bad(err, path, m);
        }
    return 0;
}

/* The colour range: fixed, or the finite values' min and max.  One distinct value
 * gets a range around it (mid colour); no finite value gets [0, 1]. */
static void svg_heat_range(const SvgHeatmap *h, SvgHeatLayout *L) {
    L->vmin = INFINITY, L->vmax = -INFINITY;
    for (int i = 0; i < h->rows * h->cols; i++) {
        double v = h->values[i];
        if (isnan(v)) L->any_nan = 1;
        if (!isfinite(v)) continue;
        L->vmin = fmin(L->vmin, v), L->vmax = fmax(L->vmax, v);
    }
    if (h->fixed_range) L->vmin = h->vmin, L->vmax = h->vmax;
    else if (L->vmin > L->vmax) L->vmin = 0, L->vmax = 1;
    else if (L->vmin == L->vmax) {
        double d = L->vmin != 0 ? fabs(L->vmin) * 0.5 : 1.0;
        L->vmin -= d, L->vmax += d;
    }
}

static const char *svg_label(const char *const *labels, int i, char tmp[16]) {
    if (labels) return labels[i] ? labels[i] : "";
    snprintf(tmp, 16, "%d", i);
    return tmp;
}

/* The colour bar's ticks: both ends, plus the round numbers between them that
 * keep clear of the ends. */
static int svg_heat_bar_ticks(const SvgHeatLayout *L, double v[], char lab[][40]) {
    SvgAxis a;
    svg_axis_linear(&a, L->vmin, L->vmax, 1, 5);
    int n = 0;
    double ends[2] = {L->vmin, L->vmax};
    for (int e = 0; e < 2; e++) {
        double q = ends[e] / a.step;
        v[n] = ends[e];
        if (fabs(q - round(q)) < 1e-6) svg_fmt_linear(lab[n], 40, ends[e], a.decimals);
        else snprintf(lab[n], 40, "%.4g", ends[e]);
        n++;
    }
    double clear = (SVG_HEAT_FS + 4) / L->bar_h * (L->vmax - L->vmin);
    for (int i = 0; i < a.n_ticks; i++) {
        if (a.tick[i] - L->vmin < clear || L->vmax - a.tick[i] < clear) continue;
        v[n] = a.tick[i];
        memcpy(lab[n], a.label[i], 40);
        n++;
    }
    return n;
}

/* Cell size from the widest printed value, column labels tilted when they would not
 * fit under their cells even after widening them a little, and every margin from
 * the text that goes in it. */
static void svg_heat_layout(const SvgHeatmap *h, SvgHeatLayout *L) {
    const char *fmt = h->value_format ? h->value_format : "%.3g";
    double val_w = 0, row_w = 0;
    char tmp[16];
    for (int i = 0; i < h->rows * h->cols; i++) {
        double v = h->values[i];
        if (isnan(v)) strcpy(L->text[i], "\u2013");
        else if (*fmt) snprintf(L->text[i], sizeof L->text[i], fmt, v);
        else L->text[i][0] = '\0';
        val_w = fmax(val_w, svg_text_w(L->text[i], SVG_HEAT_FS));
    }
    for (int c = 0; c < h->cols; c++)
        L->col_lab_w = fmax(L->col_lab_w, svg_text_w(svg_label(h->x_labels, c, tmp), SVG_HEAT_FS));
    for (int r = 0; r < h->rows; r++)
        row_w = fmax(row_w, svg_text_w(svg_label(h->y_labels, r, tmp), SVG_HEAT_FS));

    L->cell_w = fmax(42, val_w + 12);
    if (L->col_lab_w + 8 > L->cell_w && L->col_lab_w + 8 <= 72)
        L->cell_w = L->col_lab_w + 8;           /* a little wider rather than tilted */
    L->tilt = L->col_lab_w + 8 > L->cell_w;
    L->cell_h = 30;
    L->grid_w = h->cols * L->cell_w, L->grid_h = h->rows * L->cell_h;

    /* Left: y title, row labels; a tilted first column label must also clear the
     * y title's column.  Top: the title band; the rows are centred in a band tall
     * enough for the rotated y title. */
    double yt_col = svg_has_text(h->y_title) ? SVG_FS_AXIS + 10 : 0;
    double tilt_out = L->tilt ? L->col_lab_w * 0.71 + SVG_HEAT_FS - L->cell_w / 2 : 0;
    L->grid_x = SVG_PAD + yt_col + fmax(row_w + 8, tilt_out);
    double top = SVG_PAD + svg_title_band(h->title);
    L->band_h = fmax(L->grid_h, svg_has_text(h->y_title) ? svg_text_w(h->y_title, SVG_FS_AXIS) + 8 : 0);
    L->grid_y = top + (L->band_h - L->grid_h) / 2;

    /* Right: the colour bar, its tick labels, its rotated title, the missing key. */
    L->bar_x = L->grid_x + L->grid_w + 24, L->bar_y = top;
    L->bar_h = fmax(L->band_h, 160);     /* and no shorter than its rotated title */
    L->bar_h = fmax(L->bar_h, svg_text_w(h->colorbar_title, SVG_FS_AXIS) + 8);
    double v[SVG_MAX_TICKS + 2];
    char lab[SVG_MAX_TICKS + 2][40];
    int n = svg_heat_bar_ticks(L, v, lab);
    for (int i = 0; i < n; i++) L->bar_lab_w = fmax(L->bar_lab_w, svg_text_w(lab[i], SVG_HEAT_FS));
    double right = L->bar_x + SVG_HEAT_BAR_W + 7 + L->bar_lab_w;
    if (svg_has_text(h->colorbar_title)) right += 10 + SVG_FS_AXIS;
    if (L->any_nan) right = fmax(right, L->bar_x + 20 + svg_text_w(SVG_HEAT_MISS, SVG_HEAT_FS));
    double bar_bottom = L->bar_y + L->bar_h + (L->any_nan ? 34 : 0);

    /* Below: column labels, then the x title (lower still if it is wider than the
     * grid and would run under the colour bar's column). */
    double labels_h = L->tilt ? (L->col_lab_w + SVG_HEAT_FS) * 0.71 + 8 : SVG_HEAT_FS + 8;
    double bottom = L->grid_y + L->grid_h + labels_h;
    double xt_w = svg_text_w(h->x_title, SVG_FS_AXIS);
    L->xt_x = fmax(L->grid_x + L->grid_w / 2, SVG_PAD + xt_w / 2);
    if (svg_has_text(h->x_title)) {
        L->xt_y = bottom + 8 + SVG_FS_AXIS * 0.8;
        if (xt_w / 2 > L->grid_w / 2 + 20) L->xt_y = fmax(L->xt_y, bar_bottom + 8 + SVG_FS_AXIS);
        bottom = L->xt_y + 4;
    }
    L->width = fmax(right, L->xt_x + xt_w / 2) + SVG_PAD;
    L->width = fmax(L->width, svg_text_w(h->title, SVG_FS_TITLE) + 2 * SVG_PAD);
    L->height = fmax(bottom, bar_bottom) + SVG_PAD;
}

/* Shared definitions: the gradient and the hatch.  Their ids are fixed, which is
 * harmless when several figures are inlined in one page: the definitions are
 * identical in every file. */
static void svg_heat_defs(SvgBuf *b) {
    svg_puts(b, "<defs>\n<linearGradient id=\"attnlab-viridis\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n");
    for (int i = 0; i < 9; i++) {
        char hex[8];
        svg_hex(hex, svg_viridis(i / 8.0));
        svg_out(b, "<stop offset=\"%v\" stop-color=\"%s\"/>\n", i / 8.0, hex);
    }
    svg_puts(b, "</linearGradient>\n"
                "<pattern id=\"attnlab-missing\" width=\"6\" height=\"6\" "
                "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
                "<rect width=\"6\" height=\"6\" fill=\"#eeeeee\"/>"
                "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#cccccc\" stroke-width=\"1.5\"/>"
                "</pattern>\n</defs>\n");
}

/* A cell's fill ("url(#attnlab-missing)" for NaN) and the ink its printed value takes. */
static const char *svg_heat_fill(char fill[32], double v, const SvgHeatLayout *L) {
    if (isnan(v)) {
        strcpy(fill, "url(#attnlab-missing)");
        return "#222222";
    }
    SvgRgb col = svg_viridis((v - L->vmin) / (L->vmax - L->vmin));
    svg_hex(fill, col);
    return svg_ink_for(col);
}

/* Each row's run of cells of one fill as one rect: a 100 × 100 attention map, mostly
 * of equal cells, shrinks about fivefold. */
static void svg_heat_runs(SvgBuf *b, const SvgHeatmap *h, const SvgHeatLayout *L) {
    for (int r = 0; r < h->rows; r++) {
        double y = L->grid_y + (h->row0_at_bottom ? h->rows - 1 - r : r) * L->cell_h;
        char run[32], next[32];
        svg_heat_fill(run, h->values[r * h->cols], L);
        for (int c0 = 0, c = 1; c <= h->cols; c++) {
            if (c < h->cols) {
                svg_heat_fill(next, h->values[r * h->cols + c], L);
                if (!strcmp(next, run)) continue;
            }
            svg_out(b, "<rect x=\"%v\" y=\"%v\" width=\"%v\" height=\"%v\" fill=\"%s\"/>\n",
                    L->grid_x + c0 * L->cell_w, y, (c - c0) * L->cell_w, L->cell_h, run);
            strcpy(run, next);
            c0 = c;
        }
    }
}

/* The white 1-px lines between cells and around the grid, as one path over the runs
 * (where each cell's own stroke drew them). */
static void svg_heat_gridlines(SvgBuf *b, const SvgHeatmap *h, const SvgHeatLayout *L) {
    svg_puts(b, "<path class=\"gridlines\" fill=\"none\" stroke=\"#ffffff\" stroke-width=\"1\" d=\"");
    for (int c = 0; c <= h->cols; c++)
        svg_out(b, "M%v %vV%v", L->grid_x + c * L->cell_w, L->grid_y, L->grid_y + L->grid_h);
    for (int r = 0; r <= h->rows; r++)
        svg_out(b, "M%v %vH%v", L->grid_x, L->grid_y + r * L->cell_h, L->grid_x + L->grid_w);
    svg_puts(b, "\"/>\n");
}

/* The printed values, each in the ink that contrasts with its cell. */
static void svg_heat_values(SvgBuf *b, const SvgHeatmap *h, const SvgHeatLayout *L) {
    for (int r = 0; r < h->rows; r++) {
        double y = L->grid_y + (h->row0_at_bottom ? h->rows - 1 - r : r) * L->cell_h;
        for (int c = 0; c < h->cols; c++) {
            const char *t = L->text[r * h->cols + c];
            if (!*t) continue;
            char fill[32], attrs[32];
            snprintf(attrs, sizeof attrs, "fill=\"%s\" stroke=\"none\"",
                     svg_heat_fill(fill, h->values[r * h->cols + c], L));
            svg_text(b, L->grid_x + (c + 0.5) * L->cell_w, svg_mid(y + L->cell_h / 2, SVG_HEAT_FS),
                     SVG_HEAT_FS, "middle", 0, attrs, t);
        }
    }
}

static void svg_heat_cells(SvgBuf *b, const SvgHeatmap *h, const SvgHeatLayout *L) {
    svg_puts(b, "<g class=\"cells\">\n");
    svg_heat_runs(b, h, L);
    svg_heat_gridlines(b, h, L);
    svg_heat_values(b, h, L);
    svg_puts(b, "</g>\n");
}

static void svg_heat_labels(SvgBuf *b, const SvgHeatmap *h, const SvgHeatLayout *L) {
    char tmp[16];
    double below = L->grid_y + L->grid_h;
    svg_puts(b, "<g class=\"labels\">\n");
    for (int r = 0; r < h->rows; r++) {
        double y = L->grid_y + ((h->row0_at_bottom ? h->rows - 1 - r : r) + 0.5) * L->cell_h;
        svg_text(b, L->grid_x - 6, svg_mid(y, SVG_HEAT_FS), SVG_HEAT_FS, "end", 0, "",
                 svg_label(h->y_labels, r, tmp));
    }
    for (int c = 0; c < h->cols; c++) {
        double x = L->grid_x + (c + 0.5) * L->cell_w;
        const char *s = svg_label(h->x_labels, c, tmp);
        if (L->tilt) svg_text(b, x + 4, below + 10, SVG_HEAT_FS, "end", -45, "", s);
        else svg_text(b, x, below + 4 + SVG_HEAT_FS, SVG_HEAT_FS, "middle", 0, "", s);
    }
    if (svg_has_text(h->x_title))
        svg_text(b, L->xt_x, L->xt_y, SVG_FS_AXIS, "middle", 0, "", h->x_title);
    if (svg_has_text(h->y_title))
        svg_text(b, SVG_PAD + SVG_FS_AXIS * 0.8, L->grid_y + L->grid_h / 2, SVG_FS_AXIS,
                 "middle", -90, "", h->y_title);
    svg_puts(b, "</g>\n");
}

static void svg_heat_colorbar(SvgBuf *b, const SvgHeatmap *h, const SvgHeatLayout *L) {
    double x = L->bar_x, y = L->bar_y, bh = L->bar_h, bw = SVG_HEAT_BAR_W;
    svg_puts(b, "<g class=\"colorbar\">\n");
    svg_out(b, "<rect x=\"%v\" y=\"%v\" width=\"%v\" height=\"%v\" fill=\"url(#attnlab-viridis)\" "
               "stroke=\"#444444\" stroke-width=\"0.5\"/>\n", x, y, bw, bh);
    double v[SVG_MAX_TICKS + 2];
    char lab[SVG_MAX_TICKS + 2][40];
    int n = svg_heat_bar_ticks(L, v, lab);
    for (int i = 0; i < n; i++) {
        double ty = y + bh * (1 - (v[i] - L->vmin) / (L->vmax - L->vmin));
        svg_out(b, "<line x1=\"%v\" y1=\"%v\" x2=\"%v\" y2=\"%v\" stroke=\"#444444\"/>\n",
                x + bw, ty, x + bw + 4, ty);
        svg_text(b, x + bw + 7, svg_mid(ty, SVG_HEAT_FS), SVG_HEAT_FS, "start", 0, "", lab[i]);
    }
    if (svg_has_text(h->colorbar_title))
        svg_text(b, x + bw + 7 + L->bar_lab_w + 10 + SVG_FS_AXIS * 0.8, y + bh / 2,
                 SVG_FS_AXIS, "middle", -90, "", h->colorbar_title);
    if (L->any_nan) {
        double ky = y + bh + 14;
        svg_out(b, "<rect x=\"%v\" y=\"%v\" width=\"14\" height=\"14\" "
                   "fill=\"url(#attnlab-missing)\" stroke=\"#444444\" stroke-width=\"0.5\"/>\n",
                x, ky);
        svg_text(b, x + 20, svg_mid(ky + 7, SVG_HEAT_FS), SVG_HEAT_FS, "start", 0, "", SVG_HEAT_MISS);
    }
    svg_puts(b, "</g>\n");
}

int svg_heatmap(const char *path, const SvgHeatmap *h, AlError *err) {
    if (svg_heat_check(path, h, err)) return 2;
    SvgLocale loc = svg_locale_begin();
    SvgHeatLayout L = {0};
    L.text = al_calloc((size_t)h->rows * (size_t)h->cols, sizeof *L.text);
    svg_heat_range(h, &L);
    svg_heat_layout(h, &L);

    SvgBuf b = {0};
    svg_doc_begin(&b, L.width, L.height, h->title);
    svg_heat_defs(&b);
    svg_doc_title(&b, L.width, h->title);
    svg_heat_cells(&b, h, &L);
    svg_heat_labels(&b, h, &L);
    svg_heat_colorbar(&b, h, &L);
    free(L.text);
    svg_locale_end(loc);
    return svg_doc_write(&b, path, err);
}

/* ==== 6. Line chart ============================================================== */

#define SVG_PLOT_W      560.0
#define SVG_PLOT_H      340.0
#define SVG_MARKER_MAX  60      /* more points per series: line only, markers clutter */
#define SVG_LEG_ROW     20.0
#define SVG_LEG_SWATCH  30.0
#define SVG_INSET       10.0    /* data area inside the frame, px on each side */

typedef struct SvgChartLayout {
    SvgAxis ax, ay;
    double plot_x, plot_y, plot_w, plot_h;
    double leg_x;
    int n_legend;
    double width, height;
    char clip_id[32];
} SvgChartLayout;

static const char *svg_series_name(const SvgSeries *s) { return s->name ? s->name : ""; }

/* What is wrong with point i, written to m; 0 when nothing is. */
static int svg_point_problem(const SvgLineChart *c, const SvgSeries *s, int i, char *m,
                             size_t n) {
    double xy[2] = {s->x[i], s->y[i]};
    int logs[2] = {c->log_x, c->log_y};
    for (int a = 0; a < 2; a++) {
        double v = xy[a];
        if (isnan(v)) continue;
        if (!isfinite(v) || fabs(v) > SVG_HUGE)
            return snprintf(m, n, "%c[%d] = %g is not a finite number", "xy"[a], i, v), 1;
        if (logs[a] && v <= 0)
            return snprintf(m, n, "%c[%d] = %g cannot be shown on a log scale", "xy"[a], i, v), 1;
    }
    if (s->y_err && !isnan(s->y_err[i]) && !(s->y_err[i] >= 0 && s->y_err[i] <= SVG_HUGE))
        return snprintf(m, n, "y_err[%d] = %g; expected a finite value >= 0", i, s->y_err[i]), 1;
    return 0;
}

static int svg_chart_check(const char *path, const SvgLineChart *c, AlError *err) {
    char m[300];
    if (!path) return svg_bad(err, path, "no output path");
    if (!c) return svg_bad(err, path, "no chart (NULL)");
    if (c->n_series < 1 || !c->series)
        return svg_bad(err, path, "no series to plot (n_series must be >= 1)");
    int logs[2] = {c->log_x, c->log_y};
    for (int a = 0; a < 2; a++)
        if (logs[a] != 0 && logs[a] != 2 && logs[a] != 10) {
            snprintf(m, sizeof m, "log_%c = %d; expected 0 (linear), 2 or 10", "xy"[a], logs[a]);
            return svg_bad(err, path, m);
        }
    if (c->fixed_y_range &&
        !(isfinite(c->y_min) && isfinite(c->y_max) && c->y_min < c->y_max &&
          fabs(c->y_min) <= SVG_HUGE && fabs(c->y_max) <= SVG_HUGE && (!c->log_y || c->y_min > 0))) {
        snprintf(m, sizeof m, "fixed y range [%g, %g]; expected finite y_min < y_max%s",
                 c->y_min, c->y_max, c->log_y ? ", both > 0 on a log scale" : "");
        return svg_bad(err, path, m);
    }
    int points = 0;
    for (int k = 0; k < c->n_series; k++) {
        const SvgSeries *s = &c->series[k];
        if (s->n < 0 || (s->n > 0 && (!s->x || !s->y))) {
            snprintf(m, sizeof m, "series %d ('%.60s'): %s", k, svg_series_name(s),
                     s->n < 0 ? "n < 0" : "x or y is NULL");
            return svg_bad(err, path, m);
        }
        for (int i = 0; i < s->n; i++) {
            char why[200];
            if (svg_point_problem(c, s, i, why, sizeof why)) {
                snprintf(m, sizeof m, "series %d ('%.60s'): %s", k, svg_series_name(s), why);
                return svg_bad(err, path, m);
            }
            points += !isnan(s->x[i]) && !isnan(s->y[i]);
        }
    }
    if (!points) return svg_bad(err, path, "no point with both x and y given (all series empty or NaN)");
    return 0;
}

/* Data extent: every point, and on y the error bars' ends (a lower end <= 0 is left
 * out on a log axis; the bar then runs off the bottom). */
static void svg_chart_extent(const SvgLineChart *c, double ext[4]) {
    ext[0] = ext[2] = INFINITY, ext[1] = ext[3] = -INFINITY;
    for (int k = 0; k < c->n_series; k++) {
        const SvgSeries *s = &c->series[k];
        for (int i = 0; i < s->n; i++) {
            double x = s->x[i], y = s->y[i], lo = y, hi = y;
            if (isnan(x) || isnan(y)) continue;
            if (s->y_err && !isnan(s->y_err[i])) {
                hi = y + s->y_err[i], lo = y - s->y_err[i];
                if (c->log_y && lo <= 0) lo = y;
            }
            ext[0] = fmin(ext[0], x), ext[1] = fmax(ext[1], x);
            ext[2] = fmin(ext[2], lo), ext[3] = fmax(ext[3], hi);
        }
    }
}

/* FNV-1a over the chart's data: a clip-path id that is deterministic yet differs
 * between charts, so several figures inlined in one page do not share a clip. */
static uint32_t svg_fnv(uint32_t h, const void *p, size_t n) {
    const unsigned char *q = p;
    for (size_t i = 0; i < n; i++) h = (h ^ q[i]) * 16777619u;
    return h;
}

static void svg_chart_clip_id(const SvgLineChart *c, char out[32]) {
    uint32_t h = 2166136261u;
    if (c->title) h = svg_fnv(h, c->title, strlen(c->title));
    for (int k = 0; k < c->n_series; k++) {
        const SvgSeries *s = &c->series[k];
        h = svg_fnv(h, svg_series_name(s), strlen(svg_series_name(s)));
        if (s->n > 0) {
            h = svg_fnv(h, s->x, (size_t)s->n * sizeof *s->x);
            h = svg_fnv(h, s->y, (size_t)s->n * sizeof *s->y);
        }
    }
    snprintf(out, 32, "attnlab-clip-%08x", (unsigned)h);
}

static void svg_chart_layout(const SvgLineChart *c, SvgChartLayout *L) {
    double ext[4];
    svg_chart_extent(c, ext);
    double ytw = svg_text_w(c->y_title, SVG_FS_AXIS), xtw = svg_text_w(c->x_title, SVG_FS_AXIS);
    L->plot_w = fmax(SVG_PLOT_W, xtw + 20);
    L->plot_h = fmax(SVG_PLOT_H, ytw + 20);
    double in_w = L->plot_w - 2 * SVG_INSET, in_h = L->plot_h - 2 * SVG_INSET;
    svg_axis_fit(&L->ax, c->log_x, ext[0], ext[1], 0, in_w, 1);
    if (c->fixed_y_range) svg_axis_fit(&L->ay, c->log_y, c->y_min, c->y_max, 1, in_h, 0);
    else svg_axis_fit(&L->ay, c->log_y, ext[2], ext[3], 0, in_h, 0);

    L->plot_x = SVG_PAD + (svg_has_text(c->y_title) ? SVG_FS_AXIS + 10 : 0) +
                svg_axis_label_w(&L->ay) + 10;
    if (L->ax.n_ticks)          /* the first x label is centred near the left edge */
        L->plot_x = fmax(L->plot_x, SVG_PAD + svg_text_w(L->ax.label[0], SVG_FS_TICK) / 2 - SVG_INSET);
    L->plot_y = SVG_PAD + svg_title_band(c->title);

    double name_w = 0;
    for (int k = 0; k < c->n_series; k++)
        if (svg_has_text(c->series[k].name)) {
            L->n_legend++;
            name_w = fmax(name_w, svg_text_w(c->series[k].name, SVG_FS_TICK));
        }
    double right = L->plot_x + L->plot_w;
    if (L->ax.n_ticks)
        right += svg_text_w(L->ax.label[L->ax.n_ticks - 1], SVG_FS_TICK) / 2 - SVG_INSET;
    L->leg_x = L->plot_x + L->plot_w + 20;
    if (L->n_legend) right = fmax(right, L->leg_x + SVG_LEG_SWATCH + 6 + name_w);
    L->width = fmax(right + SVG_PAD, svg_text_w(c->title, SVG_FS_TITLE) + 2 * SVG_PAD);

    /* Below the plot: tick labels and the x title; a long legend may reach lower. */
    double below = 8 + SVG_FS_TICK + 4 + (svg_has_text(c->x_title) ? SVG_FS_AXIS + 10 : 0);
    L->height = L->plot_y + fmax(L->plot_h + below, L->n_legend * SVG_LEG_ROW) + SVG_PAD;
    svg_chart_clip_id(c, L->clip_id);
}

/* Offset along an axis of length len for u in axis units.  The axis ends sit
 * SVG_INSET inside the frame, so points and markers at the extremes never sit on
 * it.  Points far outside a fixed range are pulled in to 100 axis lengths away:
 * still clipped, but coordinates a renderer can take. */
static double svg_offset(const SvgAxis *a, double u, double len) {
    double f = (u - a->lo) / (a->hi - a->lo);
    f = f < -100 ? -100 : f > 100 ? 100 : f;
    return SVG_INSET + f * (len - 2 * SVG_INSET);
}

static double svg_ux(const SvgChartLayout *L, double u) {
    return L->plot_x + svg_offset(&L->ax, u, L->plot_w);
}

static double svg_uy(const SvgChartLayout *L, double u) {
    return L->plot_y + L->plot_h - svg_offset(&L->ay, u, L->plot_h);
}

static double svg_px_x(const SvgChartLayout *L, double v) {
    return svg_ux(L, svg_axis_unit(&L->ax, v));
}

static double svg_px_y(const SvgChartLayout *L, double v) {
    return svg_uy(L, svg_axis_unit(&L->ay, v));
}

/* Grid, frame, ticks with labels, axis titles. */
static void svg_chart_axes(SvgBuf *b, const SvgLineChart *c, const SvgChartLayout *L) {
    double x0 = L->plot_x, y0 = L->plot_y, w = L->plot_w, h = L->plot_h, y1 = y0 + h;
    const SvgAxis *ax = &L->ax, *ay = &L->ay;
    svg_puts(b, "<g class=\"grid\" stroke=\"#e6e6e6\" stroke-width=\"1\">\n");
    for (int i = 0; i < ax->n_ticks; i++)
        svg_out(b, "<line x1=\"%v\" y1=\"%v\" x2=\"%v\" y2=\"%v\"/>\n",
                svg_ux(L, ax->tick[i]), y0, svg_ux(L, ax->tick[i]), y1);
    for (int i = 0; i < ay->n_ticks; i++)
        svg_out(b, "<line x1=\"%v\" y1=\"%v\" x2=\"%v\" y2=\"%v\"/>\n",
                x0, svg_uy(L, ay->tick[i]), x0 + w, svg_uy(L, ay->tick[i]));
    svg_puts(b, "</g>\n<g class=\"axes\" stroke=\"#444444\">\n");
    svg_out(b, "<rect x=\"%v\" y=\"%v\" width=\"%v\" height=\"%v\" fill=\"none\"/>\n", x0, y0, w, h);
    for (int i = 0; i < ax->n_ticks + ax->n_minor; i++) {
        int major = i < ax->n_ticks;
        double x = svg_ux(L, major ? ax->tick[i] : ax->minor[i - ax->n_ticks]);
        svg_out(b, "<line x1=\"%v\" y1=\"%v\" x2=\"%v\" y2=\"%v\"/>\n", x, y1, x, y1 + (major ? 5 : 3));
        if (major)
            svg_text(b, x, y1 + 8 + SVG_FS_TICK * 0.8, SVG_FS_TICK, "middle", 0, "stroke=\"none\"",
                     ax->label[i]);
    }
    for (int i = 0; i < ay->n_ticks + ay->n_minor; i++) {
        int major = i < ay->n_ticks;
        double y = svg_uy(L, major ? ay->tick[i] : ay->minor[i - ay->n_ticks]);
        svg_out(b, "<line x1=\"%v\" y1=\"%v\" x2=\"%v\" y2=\"%v\"/>\n", x0 - (major ? 5 : 3), y, x0, y);
        if (major)
            svg_text(b, x0 - 8, svg_mid(y, SVG_FS_TICK), SVG_FS_TICK, "end", 0, "stroke=\"none\"",
                     ay->label[i]);
    }
    svg_puts(b, "</g>\n");
    if (svg_has_text(c->x_title))
        svg_text(b, x0 + w / 2, y1 + 8 + SVG_FS_TICK + 10 + SVG_FS_AXIS * 0.8, SVG_FS_AXIS,
                 "middle", 0, "", c->x_title);
    if (svg_has_text(c->y_title))
        svg_text(b, SVG_PAD + SVG_FS_AXIS * 0.8, y0 + h / 2, SVG_FS_AXIS, "middle", -90, "",
                 c->y_title);
}

/* Marker k (shape k % 6) centred on (x, y): filled shapes with a white rim that
 * keeps them apart from lines; shape 5 is hollow. */
static void svg_marker(SvgBuf *b, int k, double x, double y, const char *col) {
    const double r = 4;
    switch (k % 6) {
    case 0: svg_out(b, "<circle cx=\"%v\" cy=\"%v\" r=\"%v\" fill=\"%s\"/>\n", x, y, r, col); break;
    case 1: svg_out(b, "<rect x=\"%v\" y=\"%v\" width=\"%v\" height=\"%v\" fill=\"%s\"/>\n",
                    x - r * 0.9, y - r * 0.9, r * 1.8, r * 1.8, col); break;
    case 2: svg_out(b, "<path d=\"M%v %vL%v %vL%v %vZ\" fill=\"%s\"/>\n", x, y - r * 1.2,
                    x + r * 1.1, y + r * 0.8, x - r * 1.1, y + r * 0.8, col); break;
    case 3: svg_out(b, "<path d=\"M%v %vL%v %vL%v %vL%v %vZ\" fill=\"%s\"/>\n", x, y - r * 1.3,
                    x + r * 1.1, y, x, y + r * 1.3, x - r * 1.1, y, col); break;
    case 4: svg_out(b, "<path d=\"M%v %vL%v %vL%v %vZ\" fill=\"%s\"/>\n", x, y + r * 1.2,
                    x + r * 1.1, y - r * 0.8, x - r * 1.1, y - r * 0.8, col); break;
    default: svg_out(b, "<circle cx=\"%v\" cy=\"%v\" r=\"%v\" fill=\"#ffffff\" stroke=\"%s\" "
                        "stroke-width=\"2\"/>\n", x, y, r * 0.9, col); break;
    }
}

static int svg_point_ok(const SvgSeries *s, int i) {
    return i >= 0 && i < s->n && !isnan(s->x[i]) && !isnan(s->y[i]);
}

/* y ± err as vertical bars with caps; a lower end at or below 0 on a log axis runs
 * off the bottom of the plot (clipped there, no cap). */
static void svg_chart_errbars(SvgBuf *b, const SvgSeries *s, const SvgChartLayout *L,
                              const char *col) {
    int any = 0;
    for (int i = 0; i < s->n; i++) any |= svg_point_ok(s, i) && !isnan(s->y_err[i]);
    if (!any) return;
    svg_out(b, "<path class=\"errbar\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\" d=\"", col);
    double bottom = L->plot_y + L->plot_h + 1;
    for (int i = 0; i < s->n; i++) {
        if (!svg_point_ok(s, i) || isnan(s->y_err[i])) continue;
        double x = svg_px_x(L, s->x[i]), lo = s->y[i] - s->y_err[i];
        double yh = svg_px_y(L, s->y[i] + s->y_err[i]);
        int lo_off = L->ay.log_base && lo <= 0;
        double yl = lo_off ? bottom : svg_px_y(L, lo);
        svg_out(b, "M%v %vV%vM%v %vH%v", x, yl, yh, x - 3, yh, x + 3);
        if (!lo_off) svg_out(b, "M%v %vH%v", x - 3, yl, x + 3);
    }
    svg_puts(b, "\"/>\n");
}

/* The line, broken at missing points; isolated points are left to the markers. */
static void svg_chart_line(SvgBuf *b, const SvgSeries *s, int k, const SvgChartLayout *L,
                           const char *col) {
    svg_out(b, "<path class=\"line\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
               "stroke-linejoin=\"round\"%s d=\"", col, k / 8 % 2 ? " stroke-dasharray=\"7 4\"" : "");
    for (int i = 0; i < s->n; i++) {
        if (!svg_point_ok(s, i)) continue;
        int starts = !svg_point_ok(s, i - 1);
        if (starts && !svg_point_ok(s, i + 1)) continue;
        svg_out(b, "%s%v %v", starts ? "M" : "L", svg_px_x(L, s->x[i]), svg_px_y(L, s->y[i]));
    }
    svg_puts(b, "\"/>\n");
}

/* Error bars, the line, then the markers: all of them for short series, and for
 * long ones only the isolated points that no line shows. */
static void svg_chart_series(SvgBuf *b, const SvgLineChart *c, int k, const SvgChartLayout *L) {
    const SvgSeries *s = &c->series[k];
    const char *col = svg_palette[k % 8];
    svg_out(b, "<g class=\"series\" data-name=\"%x\">\n", svg_series_name(s));
    if (s->y_err) svg_chart_errbars(b, s, L, col);
    int segments = 0;
    for (int i = 0; i + 1 < s->n; i++) segments |= svg_point_ok(s, i) && svg_point_ok(s, i + 1);
    if (segments) svg_chart_line(b, s, k, L, col);
    svg_puts(b, "<g class=\"markers\" stroke=\"#ffffff\" stroke-width=\"0.8\">\n");
    for (int i = 0; i < s->n; i++) {
        if (!svg_point_ok(s, i)) continue;
        int isolated = !svg_point_ok(s, i - 1) && !svg_point_ok(s, i + 1);
        if (s->n <= SVG_MARKER_MAX || isolated)
            svg_marker(b, k, svg_px_x(L, s->x[i]), svg_px_y(L, s->y[i]), col);
    }
    svg_puts(b, "</g>\n</g>\n");
}

static void svg_chart_legend(SvgBuf *b, const SvgLineChart *c, const SvgChartLayout *L) {
    if (!L->n_legend) return;
    svg_puts(b, "<g class=\"legend\">\n");
    double y = L->plot_y + SVG_LEG_ROW / 2, x = L->leg_x;
    for (int k = 0; k < c->n_series; k++) {
        const SvgSeries *s = &c->series[k];
        if (!svg_has_text(s->name)) continue;
        const char *col = svg_palette[k % 8];
        svg_out(b, "<line x1=\"%v\" y1=\"%v\" x2=\"%v\" y2=\"%v\" stroke=\"%s\" stroke-width=\"2\"%s/>\n",
                x, y, x + SVG_LEG_SWATCH, y, col, k / 8 % 2 ? " stroke-dasharray=\"7 4\"" : "");
        if (s->n <= SVG_MARKER_MAX) {
            svg_puts(b, "<g stroke=\"#ffffff\" stroke-width=\"0.8\">");
            svg_marker(b, k, x + SVG_LEG_SWATCH / 2, y, col);
            svg_puts(b, "</g>\n");
        }
        svg_text(b, x + SVG_LEG_SWATCH + 6, svg_mid(y, SVG_FS_TICK), SVG_FS_TICK, "start", 0, "",
                 s->name);
        y += SVG_LEG_ROW;
    }
    svg_puts(b, "</g>\n");
}

int svg_line_chart(const char *path, const SvgLineChart *c, AlError *err) {
    if (svg_chart_check(path, c, err)) return 2;
    SvgLocale loc = svg_locale_begin();
    SvgChartLayout L = {0};
    svg_chart_layout(c, &L);

    SvgBuf b = {0};
    svg_doc_begin(&b, L.width, L.height, c->title);
    /* Data stays inside the frame (a fixed range may leave points outside it). */
    svg_out(&b, "<defs><clipPath id=\"%s\"><rect x=\"%v\" y=\"%v\" width=\"%v\" height=\"%v\"/>"
                "</clipPath></defs>\n", L.clip_id, L.plot_x, L.plot_y, L.plot_w, L.plot_h);
    svg_doc_title(&b, L.width, c->title);
    svg_chart_axes(&b, c, &L);
    svg_out(&b, "<g class=\"data\" clip-path=\"url(#%s)\">\n", L.clip_id);
    for (int k = 0; k < c->n_series; k++) svg_chart_series(&b, c, k, &L);
    svg_puts(&b, "</g>\n");
    svg_chart_legend(&b, c, &L);
    svg_locale_end(loc);
    return svg_doc_write(&b, path, err);
}
