/* finetune.h — fine-tuning a distilled model with ANNA in the loop (issue 5, an
 * improvement beyond paper 000, behind distill.finetune_steps > 0).
 *
 * For each chosen cell (ℓ, z per distilled layer), starting from the trained
 * surrogate each time: the distilled layers run ANNA (ad_anna_attention) with the
 * cell's hash functions, and Adam trains the model on the task's training data
 * through it.  What is trained, what is not, and why:
 *   - the distilled layers' Q and K projections are frozen: they define the
 *     buckets.  ANNA gives them no gradient anyway (its output is piecewise
 *     constant in q and k); freezing them also keeps weight decay off them;
 *   - distill.finetune_params "except_qk" (default) trains every other parameter,
 *     the reading of "the non-attention parameters" under which everything that
 *     does not define the buckets adapts to them — the values (V) and output (O)
 *     of the distilled layers included; "except_attention" also freezes V and O,
 *     so only what lies outside the distilled attention modules moves;
 *   - the buckets are fixed for the gradient, not in the forward: a token still
 *     changes bucket when the embeddings or LayerNorm before the hash change.  The
 *     gradient is exact wherever it exists; it cannot see those jumps;
 *   - distill.finetune_hashes "fixed" (default) uses one hash draw for every step,
 *     the simplest reading of "buckets fixed"; "redraw" draws new functions each
 *     step, training for the distribution of draws rather than one of them.
 *     These draws come from their own stream, never one of the grid's.
 * Reported per cell, before and after: the test error with the fine-tuning's
 * first draw (the one trained on, when fixed), the mean ± std over the grid's
 * distill.runs draws (fresh to the fine-tuning: does it generalise over draws?),
 * and the softmax surrogate's own error with the fine-tuned parameters.
 *
 * The batches, loss, clipping and Adam step are the trainer's (train/step.h);
 * the learning rate is distill.finetune_lr, constant; Adam's moments start at 0.
 * Training batches come from their own seeded stream, the same for every cell, so
 * cells are compared on the same data and a run is deterministic. */
#ifndef ATTNLAB_ANNA_FINETUNE_H
#define ATTNLAB_ANNA_FINETUNE_H

#include "attnlab/anna/distill.h"
#include "attnlab/config/distill_cells.h"   /* AnnaCell, finetune_parse_cells */

typedef struct FinetuneResult {
    AnnaCell cell;
    double surrogate_before, surrogate_after;  /* softmax attention: test error */
    double draw_before, draw_after;            /* ANNA, the fine-tuning's first hash draw */
    double mean_before, std_before;            /* ANNA over the grid's distill.runs draws */
    double mean_after, std_after;
    double loss_first, loss_last;              /* mean train loss over the first / last tenth of the steps */
    double seconds;
} FinetuneResult;

/* Fine-tunes m for one cell and measures it; m's parameters are left fine-tuned
 * (and its Adam moments overwritten).  Returns 0 or an error code with err filled:
 * 2 for hash settings lsh_init refuses, 1 for a non-finite loss. */
int finetune_cell(const Config *cfg, Model *m, const TaskData *td, const AnnaCell *cell, FinetuneResult *res,
                  AlError *err);

/* Every cell from the same starting point, m's whole parameter block (values and
 * Adam moments) restored afterwards; writes dir/anna_finetune.csv and sets
 * *summary_json (malloc'ed) to the "finetune" member for anna_summary.json. */
int finetune_run(const Config *cfg, Model *m, const TaskData *td, const AnnaCell *cells, int n_cells,
                 const char *dir, int quiet, char **summary_json, AlError *err);

#endif
