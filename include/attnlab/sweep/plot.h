/* plot.h — sweeps' results against one of their axes, as a line chart.
 *
 * `./train curve SWEEP_DIR… --x AXIS --out FILE.svg [--metric M]`: reads each sweep
 * folder's grid.json (written by ./train sweep, format in src/sweep/grid.c) and
 * draws the mean of metric M over the seeds (error bars: the sample std, when
 * there are two seeds or more) against the values of the numeric axis AXIS —
 * e.g. accuracy vs sequence length of a transformer sweep and an LSTM sweep of one
 * task in one figure (paper 003's Fig. 2).
 *
 * Each sweep gives one line per value combination of its other axes, named
 * "SWEEP: k=v,k=v" (SWEEP the folder's last component, k the key as cell folders
 * show it, without "model."; axes with a single value are left out), or just
 * "SWEEP" when no other axis varies.  Points run in increasing x; a point no seed
 * has finished yet (mean null) is a gap in its line.  The x axis is log2 when every
 * x is > 0 and max/min >= 8 (problem sizes such as 20, 50, 100, 200), else linear;
 * the y axis is the fixed [0, 1] of an accuracy. */
#ifndef ATTNLAB_SWEEP_PLOT_H
#define ATTNLAB_SWEEP_PLOT_H

#include "attnlab/util/error.h"

/* Writes out_svg from the grid.json of each of the n_dirs sweep folders.  metric
 * NULL: the first grid's own "metric".  Returns 0; 2 (err names the grid.json and
 * what was expected) when a grid.json is missing or not a sweep grid, x_key is not
 * one of its axes or has non-numeric values, or it holds no metric `metric`; 2 when
 * no point has a value; 1 when out_svg cannot be written. */
int sweep_grid_curve(const char *const *sweep_dirs, int n_dirs, const char *x_key, const char *metric,
                      const char *out_svg, AlError *err);

#endif
