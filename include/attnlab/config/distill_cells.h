/* distill_cells.h — the cells of a distillation grid, and the parser of
 * distill.finetune_cells.
 *
 * The parser lives in the config module because the loader checks the list when
 * the config is read (so a run never trains to the end and then refuses its
 * fine-tuning cells); the distillation (anna/distill.h, anna/finetune.h) uses the
 * same parser and cell type. */
#ifndef ATTNLAB_CONFIG_DISTILL_CELLS_H
#define ATTNLAB_CONFIG_DISTILL_CELLS_H

#include "attnlab/config/config.h"

#include <stddef.h>

#define FINETUNE_MAX_CELLS 16     /* cells one distill.finetune_cells list may name */

/* One point of a grid: model layer layer[i] gets tables[i] hash tables of funcs[i]
 * functions (per head), for the n distilled layers. */
typedef struct AnnaCell {
    int n;
    int layer[DISTILL_MAX_LAYERS], tables[DISTILL_MAX_LAYERS], funcs[DISTILL_MAX_LAYERS];
} AnnaCell;

/* Parses distill.finetune_cells (not "auto"): cells separated by ',', each "LxZ"
 * for every distilled layer, or one "LxZ" per layer joined by '+' ("8x1+4x2"); ℓ in
 * [1, 4096], z in [1, 64].  Fills tables, funcs and n (= n_layers) of cells[0..*count),
 * not layer.  Returns 0, or −1 with the reason in why. */
int finetune_parse_cells(const char *spec, int n_layers, AnnaCell *cells, int max, int *count, char *why,
                        size_t why_len);

#endif
