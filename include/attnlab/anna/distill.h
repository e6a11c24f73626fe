/* distill.h — distil a trained softmax surrogate into ANNA ("Fast attention
 * mechanisms: a tale of parallelism", App. G; decisions in docs/anna.md).
 *
 * The attention of the chosen layers is replaced by ANNA — ℓ hash tables of z
 * angular-LSH functions each, per head, drawn from a seed — and the token error is
 * measured for every cell of the grid, `runs` hash draws per cell, on a validation
 * split and on the test set.  The grid is the product of every distilled layer's
 * ℓ list and z list — (ℓ₁, z₁, ℓ₂, z₂, …), as the paper's induction-head grid —
 * or, with distill.same_funcs, of the ℓ lists and one shared z list.  The model's
 * attention must be softmax with "unit_norm" scores (refused before any work).
 *
 * Independent draws.  Cell c's draw r uses the seed distill_cell_seed(d, c, r):
 *   acc ← F(distill.seed, "annacell"),  acc ← F(acc, n)  (n distilled layers),
 *   then for each distilled layer i: acc ← F(acc, layer_i), F(acc, ℓ_i), F(acc, z_i),
 *   seed = F(acc, r),      F(a, w) = the first output of rng_stream(a, w).
 * and head h of layer L of that draw uses lsh_head_seed(seed, L, h).  So no two
 * cells (nor two draws of one cell) share hash functions — a grid's curves and
 * stds are not correlated through shared draws — and a cell's numbers are the
 * same in any grid that contains it (a sub-grid reproduces them).
 *
 * Choosing on validation.  The best cell and the "auto" fine-tuning cells are
 * chosen by mean validation error (task_build_validation: drawn like the test set,
 * disjoint from train and test); the test error is what is reported for them.
 *
 * Scored positions.  distill.score_all (default): every position, as the paper's
 * figures ("we compute the error on all the tokens") — for k-hop this adds
 * position 0 with the null class as target; otherwise the task's own positions.
 *
 * Outputs, in the run folder:
 *   anna_grid.csv       one row per cell: each layer's ℓ and z, mean and std of the
 *                       validation and of the test token error over the runs, runs
 *   anna_summary.json   the surrogate's own errors, the best cell (chosen_on:
 *                       "validation") with its validation and test errors, settings
 *   anna_error_vs_tables.svg, anna_heatmap.svg   one distilled layer: error vs ℓ with
 *                       one series per z (paper Fig. 1a) and the ℓ × z heatmap
 *   anna_layers_heatmap.svg   two layers: layer-1 ℓ × layer-2 ℓ, the test error of the z
 *                       pair of least validation error (Fig. 1b: best over z)
 * and, with distill.finetune_steps > 0, fine-tuning with ANNA in the loop
 * (finetune.h): anna_finetune.csv and a "finetune" entry in anna_summary.json.
 *
 * Stopping and continuing.  While the grid runs, each finished cell is appended to
 * anna_grid.journal (grid_journal.h) in the output folder, which is deleted once
 * the outputs above are written.  A grid stopped by a signal, a kill or the end of
 * a sitting continues from it: `./train distill … --resume`, or, for the grid a
 * training runs when it ends, `./train CONFIG --resume`.  Its numbers are those of
 * an uninterrupted grid; anna_summary.json then adds "cells_from_journal" and its
 * "seconds" are the last sitting's. */
#ifndef ATTNLAB_ANNA_DISTILL_H
#define ATTNLAB_ANNA_DISTILL_H

#include "attnlab/anna/grid_journal.h"
#include "attnlab/anna/lsh.h"
#include "attnlab/data/task.h"
#include "attnlab/config/distill_cells.h"
#include "attnlab/nn/model.h"

/* One hash draw of a cell: n_heads Lsh per distilled layer, the per-layer table,
 * and the ModelAnna (ad_anna_attention over that table) that Model.anna points at
 * while they are in use. */
typedef struct AnnaHashes {
    Lsh *lsh;                 /* n_lsh: the cell's layers × heads */
    int n_lsh;
    const Lsh **per_layer;    /* model->cfg.n_layers entries; NULL = layer kept */
    ModelAnna model_anna;
} AnnaHashes;

/* Draws the hashes of cell c: head h of layer L from lsh_head_seed(seed, L, h);
 * last_dim: the cross-polytope's (lsh_init_last; ignored for hyperplanes).
 * Returns 0, or lsh_init's error (h is then safe to free). */
int  anna_hashes_init(AnnaHashes *h, const Model *m, const AnnaCell *c, LshFamily family, int last_dim,
                      uint64_t seed, AlError *err);
void anna_hashes_free(AnnaHashes *h);
LshFamily distill_family(const CfgDistill *d);
/* The seed of cell c's hash draw r (r = 0 … distill.runs − 1); derivation above. */
uint64_t distill_cell_seed(const CfgDistill *d, const AnnaCell *c, int r);
/* anna_hashes_init of cell c's draw r with cfg's family and last dimension. */
int  distill_draw_hashes(AnnaHashes *h, const Config *cfg, const Model *m, const AnnaCell *c, int r, AlError *err);
/* Test token error (1 − accuracy) of m over test with the hashes in place (h
 * NULL: the model as it is, softmax attention). */
double anna_test_error(Model *m, Tape *t, const Dataset *test, const AnnaHashes *h, int batch_size);
/* Mean and sample std of the error of cell on `test` over its distill.runs draws. */
int distill_cell_error(const Config *cfg, Model *m, Tape *t, const Dataset *test, const AnnaCell *cell,
                       double *mean, double *std, AlError *err);

/* A copy of src (td's test set or validation split) as the grid scores it: with
 * distill.score_all, a k-hop row's position 0 (the hop-count token, DATASET_IGNORE
 * in training) gets the null class as target, so every position is scored — the
 * paper's "error on all the tokens".  Other tasks keep their scored positions
 * (padding is never a token to score).  dataset_free it. */
void distill_eval_set(const Config *cfg, const TaskData *td, const Dataset *src, Dataset *out);

/* Runs cfg->distill's grid on m (a trained softmax transformer with unit-norm
 * scores) over a validation split and td's test set and writes the outputs into dir; then, if distill.finetune_steps > 0, fine-tunes
 * (finetune.h) on td's training data.  m's parameters are left as they were.
 * model_path names the file m came from in anna_summary.json ("model"); journal:
 * what to do with an unfinished grid's journal in dir (grid_journal.h).
 * Returns 0 or an error code with err filled. */
int distill_run(const Config *cfg, Model *m, const TaskData *td, const char *dir, const char *model_path, int quiet,
                JournalMode journal, AlError *err);

/* `./train distill RUN_DIR [--out DIR]`: the run's effective config (with
 * overrides, e.g. --set distill.tables=1..8), its model.safetensors and its test
 * set, regenerated from the config's seed.  The grid's files go into out_dir
 * (created if missing; NULL: the run folder), so grids of one model with other
 * settings (another hash family, say) can sit side by side.  The run folder is
 * locked as a run's; a separate out_dir is locked too.  resume: continue the
 * unfinished grid in the output folder (JOURNAL_RESUME); without it such a grid is
 * refused, not replaced (JOURNAL_FRESH). */
int distill_main(const char *run_dir, const char *out_dir, const char *const *overrides, int n_overrides, int quiet,
                 int resume, AlError *err);

#endif
