/* use_common.h — what eval.c, generate.c and inspect.c share: their command line
 * and the printed names of tokens. */
#ifndef ATTNLAB_CLI_USE_COMMON_H
#define ATTNLAB_CLI_USE_COMMON_H

#include "attnlab/train/runload.h"

#define USE_MAX_SETS 32

typedef struct UseArgs {
    const char *cmd;               /* "eval", "generate", "inspect" */
    const char *dir, *data, *out, *prompt;
    const char *sets[USE_MAX_SETS];
    int n_sets, json, example, max_new;
} UseArgs;

/* Parses argv (argv[0] the command) into a; `allowed` lists the options the
 * command takes (e.g. "--data --set --json --out").  Returns 0 or 2 with err. */
int  use_parse(int argc, char **argv, const char *allowed, UseArgs *a, AlError *err);
/* runload_open of a->dir with a->sets; *d = the data to use: --data FILE read for
 * the model into *file (runload_read_data), else the run's test set.  Release with
 * use_close (also after an error). */
int  use_open(const UseArgs *a, LoadedRun *r, Dataset *file, const Dataset **d, AlError *err);
void use_close(LoadedRun *r, Dataset *file);
/* Token id's printed form: its name when the task names its tokens, else the id. */
const char *use_token_label(const LoadedRun *r, int id, char *buf, size_t n);
/* A row's real length (info, or the whole row). */
int  use_row_len(const Dataset *d, int row);

#endif
