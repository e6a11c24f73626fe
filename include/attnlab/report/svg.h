/* svg.h — heatmaps and line charts written as standalone SVG files.
 *
 * Why SVG written by hand: the figures of a study must come out of the same C
 * program that produced the numbers (no Python, no plotting library), and SVG is
 * text any browser opens.  The output is a pure function of the input: the same
 * struct gives the same bytes on any machine and in any locale (numbers always
 * use '.'), so figures can be diffed and committed.
 *
 * Both writers build the document in memory and replace <path> with
 * write_text_atomic(), so a figure is never left half-written.
 * Return value: 0 on success; 2 for bad input (err->msg names the file and the
 * field, e.g. "cannot plot 'a.svg': series 1 ('z=2'): y[3] = 0 cannot be shown on
 * a log scale"); 1 when the file cannot be written ("cannot write 'a.svg': ...").
 *
 * Layout adapts to the content (cell size to the printed values, margins to the
 * longest labels, column labels tilted when they do not fit), so nothing overlaps
 * up to about 20x20 cells or 10 series.  Text is XML-escaped; invalid UTF-8 and
 * control characters are replaced, so the file is always well-formed XML. */
#ifndef ATTNLAB_REPORT_SVG_H
#define ATTNLAB_REPORT_SVG_H

#include "attnlab/util/error.h"

/* ---- heatmap ------------------------------------------------------------------ */

/* A rows x cols grid of coloured cells (viridis: dark purple = low, yellow = high)
 * with the value printed in each cell, a colour bar on the right, column labels
 * below the grid and row labels on its left.  Any text field may be NULL. */
typedef struct SvgHeatmap {
    const char *title, *x_title, *y_title;
    int rows, cols;                     /* each in 1..1000 */
    const char *const *x_labels;        /* cols column labels, or NULL for 0, 1, ... */
    const char *const *y_labels;        /* rows row labels, or NULL for 0, 1, ... */
    const double *values;               /* row-major: values[r * cols + c]; NaN = missing
                                           (drawn hatched grey with "–") */
    int row0_at_bottom;                 /* 0: row 0 at the top, as in a table;
                                           1: row 0 at the bottom, as on a y axis */
    const char *value_format;           /* printf format with exactly one floating
                                           conversion, e.g. "%.2f"; NULL = "%.3g";
                                           "" = print no values */
    int fixed_range;                    /* 1: colours span [vmin, vmax] (values outside
                                           get the end colours); 0: span the data */
    double vmin, vmax;
    const char *colorbar_title;
} SvgHeatmap;

int svg_heatmap(const char *path, const SvgHeatmap *h, AlError *err);

/* ---- line chart ---------------------------------------------------------------- */

/* One named series.  A point whose x or y is NaN is missing: the line breaks there. */
typedef struct SvgSeries {
    const char *name;                   /* legend text (NULL or "" = not in the legend) */
    int n;                              /* number of points, >= 0 */
    const double *x, *y;                /* n values each */
    const double *y_err;                /* n half-lengths (e.g. std) drawn as y ± err
                                           error bars, or NULL; NaN = no bar */
} SvgSeries;

/* Series get distinct Okabe–Ito colours and marker shapes (colour-blind safe);
 * markers are drawn when a series has at most 60 points.  Axes get round-number
 * ticks; a log axis gets its ticks at powers of its base (all values must be > 0
 * there).  The legend sits right of the plot, where it cannot hide data. */
typedef struct SvgLineChart {
    const char *title, *x_title, *y_title;
    const SvgSeries *series;
    int n_series;                       /* >= 1 */
    int log_x, log_y;                   /* 0 = linear, 2 = log2, 10 = log10 */
    int fixed_y_range;                  /* 1: the y axis spans exactly [y_min, y_max]
                                           (e.g. accuracy in [0, 1]); 0: fit the data */
    double y_min, y_max;
} SvgLineChart;

int svg_line_chart(const char *path, const SvgLineChart *c, AlError *err);

#endif
