/* test_sweep_mpi.c — `mpirun -np 2 attnlab sweep …` on localhost: the ranks share
 * one 2 x 2 grid (two seeds, 8 cells) through rank 0's queue, rank 0 writes the
 * grid, and it is byte for byte the grid of a run without MPI.  Skipped (77) when
 * this build has no MPI or mpirun is not installed (tests/run installs
 * openmpi-bin and libopenmpi-dev when it can). */
#include "check.h"
#include "testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef ATTNLAB_HAVE_MPI
int main(void) {
    printf("test_sweep_mpi: skipped: attnlab was built without MPI (install libopenmpi-dev, reconfigure)\n");
    return 77;
}
#else

#include "sweep_fixture.h"

static int run(const char *const *argv, const char *out) { return tu_wait(tu_spawn(argv, out)); }

int main(void) {
    const char *bin = getenv("ATTNLAB_BIN");
    if (!bin || !*bin) {
        fprintf(stderr, "test_sweep_mpi: set ATTNLAB_BIN to the attnlab binary (ctest does)\n");
        return 1;
    }
    if (system("command -v mpirun >/dev/null 2>&1") != 0) {
        printf("test_sweep_mpi: skipped: no mpirun (apt-get install openmpi-bin)\n");
        return 77;
    }
    char tmp[] = "/tmp/attnlab_sweep_mpi_XXXXXX", cfg[128], log[128], ref[128], mpi[128], a[256], b[256];
    CHECK(mkdtemp(tmp) != NULL, "mkdtemp");
    snprintf(cfg, sizeof cfg, "%s/tiny.json", tmp);
    snprintf(log, sizeof log, "%s/output.txt", tmp);
    snprintf(ref, sizeof ref, "%s/ref", tmp);
    snprintf(mpi, sizeof mpi, "%s/mpi", tmp);
    CHECK(tu_write_file(cfg, CONFIG) == 0, "write %s", cfg);
    CHECK(run((const char *const[]){ bin, "sweep", cfg, "--out", ref, "--jobs", "2", "--quiet", NULL }, log) == 0,
          "the reference sweep failed");
    /* Root needs --allow-run-as-root; two ranks on a small machine need --oversubscribe. */
    const char *argv[] = { "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", bin, "sweep", cfg,
                           "--out", mpi, NULL };
    int rc = run(argv, log);
    char *out = tu_read_file(log, NULL);
    CHECK(rc == 0, "mpirun sweep exited %d:\n%s", rc, out ? out : "");
    CHECK(out && strstr(out, "sweep: 8 cells (4 points x 2 seeds), 2 MPI ranks: 0 finished, 0 to resume, 8 to start"),
          "rank 0's plan line:\n%s", out ? out : "");
    CHECK(out && strstr(out, "[8/8] done"), "rank 0 reports every cell, its own and rank 1's:\n%s", out ? out : "");
    free(out);
    const char *files[] = { "grid.csv", "grid.json", "heatmap.svg", "summary.csv" };
    for (int i = 0; i < 4; i++) {
        snprintf(a, sizeof a, "%s/%s", ref, files[i]);
        snprintf(b, sizeof b, "%s/%s", mpi, files[i]);
        CHECK(tu_same_text(a, b), "%s differs between mpirun and a local run", files[i]);
    }
    /* Which rank ran what (informative: how cells spread depends on timing). */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cat %s/cells/*/train.log | grep -o 'MPI rank [0-9]' | sort | uniq -c", mpi);
    if (system(cmd)) fprintf(stderr, "could not list the ranks\n");
    int status = check_exit("test_sweep_mpi");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (!status && system(cmd)) fprintf(stderr, "could not remove %s\n", tmp);
    return status;
}
#endif
