/* distill.h — distil a trained softmax surrogate into ANNA (paper 000, App. G).
 *
 * The attention of the chosen layers is replaced by ANNA — ℓ hash tables of z
 * angular-LSH functions each, per head, drawn from a seed — and the test error is
 * measured for every cell of the (ℓ, z) grid of every distilled layer, `runs`
 * hash draws per cell.  Outputs, in the run folder:
 *   anna_grid.csv       one row per cell: each layer's ℓ and z, mean and std of the
 *                       test token error over the runs, the runs
 *   anna_summary.json   the surrogate's own error, the best cell, settings, time
 *   anna_error_vs_tables.svg, anna_heatmap.svg   one distilled layer: error vs ℓ with
 *                       one series per z (paper Fig. 1a) and the ℓ × z heatmap
 *   anna_layers_heatmap.svg   two layers: layer-1 ℓ × layer-2 ℓ, best over z (Fig. 1b) */
#ifndef ATTNLAB_ANNA_DISTILL_H
#define ATTNLAB_ANNA_DISTILL_H

#include "attnlab/data/dataset.h"
#include "attnlab/nn/model.h"

/* Runs cfg->distill's grid on m (a trained softmax transformer) over `test` and
 * writes the outputs into dir.  Returns 0 or an error code with err filled. */
int distill_run(const Config *cfg, Model *m, const Dataset *test, const char *dir, int quiet, AlError *err);

/* `./train distill RUN_DIR`: the run's effective config (with overrides, e.g.
 * --set distill.tables=1..8), its model.safetensors and its test set, regenerated
 * from the config's seed. */
int distill_main(const char *run_dir, const char *const *overrides, int n_overrides, int quiet, AlError *err);

#endif
