/* test_committed_configs.c — every config under configs/ loads and validates the way
 * the command that runs it reads it:
 *   - a paper 002 Monte-Carlo config ("setting" at the top; `./train mc`) through
 *     mc_config_load, which checks every point of its sweep;
 *   - a config with a "sweep" section (`./train sweep`) through cfg_load_sweep and
 *     sweep_spec_parse, which checks every cell's config;
 *   - any other (`./train CONFIG`) through cfg_load.
 * So a key renamed, a range narrowed or a rule added that breaks a committed config
 * fails here, not hours into a sitting when someone runs it.  Run from the source
 * folder (ctest's working directory). */
#define _XOPEN_SOURCE 700   /* nftw */
#include "attnlab/config/config.h"
#include "attnlab/exp/p002_config.h"
#include "attnlab/sweep/spec.h"
#include "attnlab/util/fsutil.h"

#include "check.h"

#include <cJSON.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_run, n_sweep, n_mc;

static int is_mc_config(const char *path) {
    char *text = al_read_file(path, NULL);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    int mc = root && cJSON_GetObjectItemCaseSensitive(root, "setting") != NULL;
    cJSON_Delete(root);
    free(text);
    return mc;
}

static void check_mc(const char *path) {
    McConfig c;
    AlError err = {0};
    int rc = mc_config_load(&c, path, &err);
    CHECK(rc == 0, "./train mc: %s", err.msg);
    n_mc++;
}

static void check_run_or_sweep(const char *path) {
    Config c;
    AlError err = {0};
    char *sweep_json = NULL;
    int rc = cfg_load_sweep(&c, path, NULL, 0, &sweep_json, &err);
    CHECK(rc == 0, "%s", err.msg);
    if (!rc && sweep_json) {
        SweepSpec s;
        rc = sweep_spec_parse(&s, sweep_json, &c, path, &err);
        CHECK(rc == 0, "./train sweep: %s", err.msg);
        sweep_spec_free(&s);
        n_sweep++;
    } else if (!rc) {
        n_run++;
    }
    free(sweep_json);
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)st, (void)ftw;
    size_t n = strlen(path);
    if (type != FTW_F || n < 5 || strcmp(path + n - 5, ".json")) return 0;
    if (is_mc_config(path)) check_mc(path);
    else check_run_or_sweep(path);
    return 0;
}

int main(void) {
    CHECK(nftw("configs", visit, 16, FTW_PHYS) == 0, "cannot walk configs/ (run from the source folder)");
    /* At least the kinds the repository has: a walk that finds nothing must fail. */
    CHECK(n_run >= 10 && n_sweep >= 10 && n_mc >= 10, "found %d run, %d sweep and %d mc configs", n_run, n_sweep,
          n_mc);
    printf("  configs: %d runs, %d sweeps, %d Monte-Carlo sweeps read\n", n_run, n_sweep, n_mc);
    return check_exit("committed_configs");
}
