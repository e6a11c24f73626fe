/* grid_journal.h — a distillation grid's finished cells on disk, so that an
 * interrupted grid continues where it stopped instead of starting over.
 *
 * Why: a two-layer grid of paper 000's Fig. 1b (1 152 cells × 10 draws) runs for
 * hours on one core, longer than a sitting; without this, a stop at 90% loses all.
 *
 * The file, DIR/anna_grid.journal (text, one record per line):
 *   attnlab grid journal 1
 *   key <the grid's identity: everything a cell's numbers depend on, one line>
 *   cell <index> <valid mean> <valid std> <test mean> <test std>      (%.17g)
 * The header is written atomically; each cell line is appended, flushed and
 * fsync'ed when the cell is done.  A kill in the middle of an append leaves a last
 * line without its newline: reading drops it (that cell is redone), and the file is
 * rewritten without it before anything is appended.  A complete line that does not
 * parse, or names a cell outside the grid, is an error naming the file and line.
 * When the grid's outputs are written the journal is deleted.
 *
 * Because every cell's draws have their own seeds (distill.h), a continued grid's
 * numbers are those of an uninterrupted one, to the bit (doubles are stored with 17
 * significant digits, which round-trip exactly). */
#ifndef ATTNLAB_ANNA_GRID_JOURNAL_H
#define ATTNLAB_ANNA_GRID_JOURNAL_H

#include "attnlab/util/error.h"
#include "attnlab/util/fsutil.h"

#include <stdio.h>

/* What to do with a journal already in the folder:
 *   JOURNAL_FRESH   refuse (error naming the file, its progress and --resume) —
 *                   hours of finished cells are never thrown away unasked;
 *   JOURNAL_RESUME  continue it; a journal of another grid (another key) is an
 *                   error that shows both keys; none at all starts a new one;
 *   JOURNAL_AUTO    continue it if its key is this grid's, else start over (the
 *                   grid a training runs when it ends: a journal of an older model
 *                   in the folder is stale, not precious). */
typedef enum { JOURNAL_FRESH, JOURNAL_RESUME, JOURNAL_AUTO } JournalMode;

#define JOURNAL_VALUES 4   /* per cell: valid mean, valid std, test mean, test std */

typedef struct GridJournal {
    FILE *f;
    char path[AL_PATH_MAX];
} GridJournal;

/* Opens DIR/anna_grid.journal for a grid of `cells` cells identified by key (one
 * line of text, no newline).  done[c] (cells entries, zeroed here) is set for each
 * cell the journal already holds, with its values in vals[c·JOURNAL_VALUES …];
 * *n_done counts them.  Returns 0, or err->code (2 for a refused or mismatched
 * journal, 1 for an I/O error). */
int grid_journal_open(GridJournal *j, const char *dir, const char *key, long cells, JournalMode mode,
                      unsigned char *done, double *vals, long *n_done, AlError *err);
/* Appends cell c's values, flushed and synced.  Returns 0 or err->code (1). */
int grid_journal_add(GridJournal *j, long c, const double *vals, AlError *err);
/* Closes the journal; remove: also delete the file (the grid's outputs are written). */
void grid_journal_close(GridJournal *j, int remove_file);

#endif
