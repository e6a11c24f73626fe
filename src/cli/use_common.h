/* use_common.h — what eval.c, generate.c and inspect.c share: their command line
 * and the printed names of tokens. */
#ifndef ATTNLAB_CLI_USE_COMMON_H
#define ATTNLAB_CLI_USE_COMMON_H

#include "attnlab/train/runload.h"

#define USE_MAX_SETS RUNLOAD_MAX_SETS

typedef struct UseArgs {
    const char *cmd;               /* "eval", "generate", "inspect" */
    const char *dir, *data, *out, *prompt;
    const char *anna, *grid;       /* inspect --anna CELL, --grid DIR */
    const char *sets[USE_MAX_SETS];
    int n_sets, json, example, max_new, draw;
    int by_position;               /* eval --by-position */
    int steps;                     /* overlap --steps; −1 when not given */
    int seq_len;                   /* eval --seq-len: the test set's task.seq_len; −1 = the run's */
} UseArgs;

/* Parses argv (argv[0] the command) into a; `allowed` lists the options the
 * command takes (e.g. "--data --set --json --out").  Returns 0 or 2 with err. */
int  use_parse(int argc, char **argv, const char *allowed, UseArgs *a, AlError *err);
/* A command's run: its arguments, the loaded run folder and the data to use. */
typedef struct UseRun {
    UseArgs a;
    LoadedRun r;
    Dataset file;        /* --data FILE read for the model (runload_read_data) … */
    const Dataset *d;    /* … or the run's test set: what the command works on */
} UseRun;

/* use_parse, then runload_open of the folder with the --set overrides (and
 * runload_retest for --seq-len) and the data.
 * Returns 0 or err->code; release with use_end in either case. */
int  use_start(UseRun *u, int argc, char **argv, const char *allowed, AlError *err);
void use_end(UseRun *u);

/* Token id's printed form: its name when the task names its tokens, else the id. */
const char *use_token_label(const LoadedRun *r, int id, char *buf, size_t n);
/* A row's real length (info, or the whole row). */
int  use_row_len(const Dataset *d, int row);

#endif
