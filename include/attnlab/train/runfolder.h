/* runfolder.h — the run folder: who owns it, what it may be, what a new run may replace.
 *
 * A run folder is owned by one process at a time (io/dirlock.h).  Before anything in
 * it changes, the trainer checks the whole config, the memory and the checkpoint
 * to resume; runfolder_open does the folder's part of that:
 *   - the path fits (never silently cut short) and is not "/";
 *   - a new run (no --resume, no --force) may only use a folder that is new, empty
 *     of run files, or holds the beginnings of the same config's run with nothing
 *     to lose (no checkpoint, model or summary yet); a folder with a finished or
 *     resumable run, or another config's run, is refused (exit 2) and left as it is;
 *   - --resume leaves the judging to the checkpoint (checkpoint_resume);
 *   - --force replaces: runfolder_clear deletes the old run's files, but only after
 *     every other check has passed.
 * runfolder_open writes nothing in an existing folder (it may create a new, empty
 * one, so that it can be locked). */
#ifndef ATTNLAB_TRAIN_RUNFOLDER_H
#define ATTNLAB_TRAIN_RUNFOLDER_H

#include "attnlab/io/dirlock.h"
#include "attnlab/config/config.h"
#include "attnlab/util/fsutil.h"

/* The longest run folder path accepted: room for its files (AL_FOLDER_ROOM). */
#define RUNFOLDER_PATH_MAX (AL_PATH_MAX - 1 - AL_FOLDER_ROOM)

typedef struct RunFolder {
    char dir[AL_PATH_MAX];
    DirLock lock;
} RunFolder;

typedef struct RunFolderOptions {
    const char *out_dir;      /* NULL: results/<name> */
    const char *source;       /* the config file, for messages */
    int resume, force;
} RunFolderOptions;

/* Decides the folder, creates it when it is new and locks it; refuses a folder
 * that would be replaced (see above).  Returns 0, or err->code (2: refused, 1:
 * cannot create or lock) with nothing in an existing folder changed. */
int runfolder_open(RunFolder *f, const Config *cfg, const RunFolderOptions *o, AlError *err);
/* --force, once every check has passed: deletes the files a run and its
 * distillation write (config, metrics, checkpoints, summary, figures, anna_*).
 * Returns 0 or 1 with err naming the file that could not be removed. */
int runfolder_clear(const RunFolder *f, AlError *err);
/* A folder whose metrics.jsonl shows steps but that holds no train_state.safetensors
 * to continue them (a run killed before its first checkpoint; a fresh clone or a new
 * machine, since checkpoints are not in git): a new run there starts again from
 * step 0, the same curve for the same config, seed and thread count.  Returns 1 and
 * puts that, naming the step reached, into out; else 0. */
int runfolder_lost_checkpoint(const char *dir, char *out, size_t n);
/* The step the finished run in the folder ended at (its summary.json's "steps"), and
 * whether it stopped early; −1 when the folder holds no finished run. */
long runfolder_finished_step(const RunFolder *f, int *stopped_early);
/* dir/file into out (AL_PATH_MAX bytes hold any file of the run). */
void runfolder_path(const RunFolder *f, const char *file, char *out, size_t n);
void runfolder_close(RunFolder *f);
/* The key path of the first setting in which have differs from want, ignoring the
 * keys a resumed run may change (name, train.steps, train.threads,
 * train.on_nonfinite, eval.*); NULL when the runs are the same. */
const char *runfolder_resume_difference(const Config *want, const Config *have);

#endif
