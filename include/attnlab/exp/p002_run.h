/* p002_run.h — `attnlab mc CONFIG.json [--out DIR] [--quiet]`: one Monte-Carlo sweep
 * of paper 002 (config: p002_config.h), written as
 *   OUT/success.csv   one row per value of the swept parameter: the value, the
 *                     success ratio, the four component rates (F_exp(D1) > 0,
 *                     F_lin(D1) = 0, F_exp(D0) = 0, F_lin(D0) = 0), the binomial
 *                     standard error of the success ratio, repetitions, m and tau;
 *   OUT/success.svg   the success ratio (± one standard error) and the four
 *                     component rates against the parameter.
 * Points run in order, each from its own random stream (seed, point index), so a
 * point's numbers do not depend on the other values in the sweep. */
#ifndef ATTNLAB_EXP_P002_RUN_H
#define ATTNLAB_EXP_P002_RUN_H

#include "attnlab/exp/p002_config.h"

/* Runs the sweep of a loaded config into out_dir; progress lines on stderr unless
 * quiet.  Returns 0 or err->code (1: cannot write). */
int mc_run(const McConfig *c, const char *out_dir, int quiet, AlError *err);

/* The command line: argv[0] = "mc".  Prints its own errors ("attnlab: error: ...").
 * Returns the exit code: 0, 1 (cannot write), 2 (usage or bad config). */
int p002_mc_main(int argc, char **argv);

#endif
