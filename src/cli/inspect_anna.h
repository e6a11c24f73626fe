/* inspect_anna.h — `./train inspect RUN_DIR --anna CELL [--grid DIR] [--draw K]`:
 * the collision maps of a distilled layer (anna/anna.h, anna_collision_counts)
 * beside its softmax maps.  The hashes are cell CELL's draw K exactly as the
 * distillation drew them (anna/distill.h, distill_draw_hashes). */
#ifndef ATTNLAB_CLI_INSPECT_ANNA_H
#define ATTNLAB_CLI_INSPECT_ANNA_H

#include "attnlab/anna/distill.h"
#include "use_common.h"

typedef struct InspectAnna {
    AnnaCell cell;         /* the distilled layers and their ℓ, z */
    int draw;
    AnnaHashes h;
    ModelAnna hook;        /* h's attention, wrapped to record each layer's q and k */
    int T, H;
    float *counts, *weights;   /* the row being run: cell layer i, head h at ((i·H + h)·T·T) */
} InspectAnna;

/* Resolves --anna (and --grid, --draw) against the run and draws the hashes.
 * Returns 0 or 2 with err (a bad CELL, a missing or unreadable anna_summary.json). */
int  inspect_anna_open(InspectAnna *ia, const UseArgs *a, const LoadedRun *r, AlError *err);
/* Puts ANNA into the cell's layers of m for the forwards (1 × T) until
 * inspect_anna_end; each writes, into the buffers returned here (malloc'ed,
 * cell.n·H·T·T floats each), the collision counts and their row-normalised weights
 * (counts / row total; an all-zero row where nothing collided). */
void inspect_anna_begin(InspectAnna *ia, Model *m, int T, float **counts, float **weights);
void inspect_anna_end(InspectAnna *ia, Model *m);
void inspect_anna_close(InspectAnna *ia);

#endif
