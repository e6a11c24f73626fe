/* fuzz_util.c — see fuzz.h. */
#include "fuzz.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILES 8

static char g_dir[256];
static char g_files[MAX_FILES][320];
static int g_n_files;

void fuzz_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz invariant broken: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

int fuzz_starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static void cleanup(void) {
    for (int i = 0; i < g_n_files; i++) unlink(g_files[i]);
    if (g_dir[0]) rmdir(g_dir);
}

const char *fuzz_dir(void) {
    if (g_dir[0]) return g_dir;
    struct stat st;
    const char *base = getenv("ATTNLAB_FUZZ_TMP");
    if (!base) base = stat("/dev/shm", &st) == 0 && access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/attnlab-fuzz-%ld", base, (long)getpid());
    if (mkdir(g_dir, 0700) != 0 && stat(g_dir, &st) != 0) fuzz_fail("cannot create %s", g_dir);
    atexit(cleanup);
    return g_dir;
}

const char *fuzz_path(const char *name) {
    char path[320];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    for (int i = 0; i < g_n_files; i++)
        if (!strcmp(g_files[i], path)) return g_files[i];
    if (g_n_files == MAX_FILES) fuzz_fail("more than %d scratch file names", MAX_FILES);
    snprintf(g_files[g_n_files], sizeof g_files[0], "%s", path);
    return g_files[g_n_files++];
}

const char *fuzz_write(const char *name, const void *data, size_t size) {
    const char *path = fuzz_path(name);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) fuzz_fail("cannot write %s", path);
    return path;
}
