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
 *   anna_layers_heatmap.svg   two layers: layer-1 ℓ × layer-2 ℓ, best over z (Fig. 1b)
 * and, with distill.finetune_steps > 0, fine-tuning with ANNA in the loop
 * (finetune.h): anna_finetune.csv and a "finetune" entry in anna_summary.json. */
#ifndef ATTNLAB_ANNA_DISTILL_H
#define ATTNLAB_ANNA_DISTILL_H

#include "attnlab/anna/lsh.h"
#include "attnlab/data/task.h"
#include "attnlab/nn/model.h"

/* One point of a grid: model layer layer[i] gets tables[i] hash tables of funcs[i]
 * functions (per head), for the n distilled layers. */
typedef struct AnnaCell {
    int n;
    int layer[DISTILL_MAX_LAYERS], tables[DISTILL_MAX_LAYERS], funcs[DISTILL_MAX_LAYERS];
} AnnaCell;

/* One hash draw of a cell: n_heads Lsh per distilled layer, and the per-layer
 * table that Model.anna points at while they are in use. */
typedef struct AnnaHashes {
    Lsh *lsh;                 /* n_lsh: the cell's layers × heads */
    int n_lsh;
    const Lsh **per_layer;    /* model->cfg.n_layers entries; NULL = layer kept */
} AnnaHashes;

/* Draws the hashes of cell c: head h of layer L from lsh_head_seed(seed, L, h).
 * Returns 0, or lsh_init's error (h is then safe to free). */
int  anna_hashes_init(AnnaHashes *h, const Model *m, const AnnaCell *c, LshFamily family, uint64_t seed,
                      AlError *err);
void anna_hashes_free(AnnaHashes *h);
LshFamily distill_family(const CfgDistill *d);
/* The seed of the grid's hash draw r (r = 0 … distill.runs − 1). */
uint64_t distill_draw_seed(const CfgDistill *d, int r);
/* Test token error (1 − accuracy) of m over test with the hashes in place (h
 * NULL: the model as it is, softmax attention). */
double anna_test_error(Model *m, Tape *t, const Dataset *test, const AnnaHashes *h, int batch_size);
/* Mean and sample std of the test error of cell over the grid's distill.runs draws. */
int distill_cell_error(const Config *cfg, Model *m, Tape *t, const Dataset *test, const AnnaCell *cell,
                       double *mean, double *std, AlError *err);

/* Runs cfg->distill's grid on m (a trained softmax transformer) over td's test set
 * and writes the outputs into dir; then, if distill.finetune_steps > 0, fine-tunes
 * (finetune.h) on td's training data.  m's parameters are left as they were.
 * Returns 0 or an error code with err filled. */
int distill_run(const Config *cfg, Model *m, const TaskData *td, const char *dir, int quiet, AlError *err);

/* `./train distill RUN_DIR`: the run's effective config (with overrides, e.g.
 * --set distill.tables=1..8), its model.safetensors and its test set, regenerated
 * from the config's seed. */
int distill_main(const char *run_dir, const char *const *overrides, int n_overrides, int quiet, AlError *err);

#endif
