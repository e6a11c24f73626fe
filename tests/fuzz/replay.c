/* replay.c — runs a fuzz target over saved inputs, without libFuzzer.
 *
 *   replay_TARGET DIR…   feeds every regular file in each DIR (sorted by name) to
 *                        LLVMFuzzerTestOneInput, once, in this process.
 *
 * Built with the normal compiler as part of the suite (tests/fuzz/CMakeLists.txt)
 * over the seed corpus and the reproducers of crashes found so far, so what was
 * fixed stays fixed; under ./tests/run --sanitize the same inputs also run under
 * ASan and UBSan.  A broken invariant aborts (fuzz_fail); reading no input at all
 * is a failure too. */
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static unsigned char *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    unsigned char *buf = malloc(cap);
    for (size_t got; (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    *size = n;
    return buf;
}

/* Replays DIR's files; returns how many, or -1 when DIR cannot be read. */
static int replay_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    char **names = NULL;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        names = realloc(names, (size_t)(n + 1) * sizeof *names);
        names[n++] = strdup(path);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n; i++) {
        size_t size = 0;
        unsigned char *data = read_all(names[i], &size);
        if (!data) {
            fprintf(stderr, "cannot read %s\n", names[i]);
            exit(1);
        }
        LLVMFuzzerTestOneInput(data, size);
        free(data);
        free(names[i]);
    }
    free(names);
    return n;
}

int main(int argc, char **argv) {
    int total = 0;
    for (int i = 1; i < argc; i++) {
        int n = replay_dir(argv[i]);
        if (n < 0) {
            fprintf(stderr, "%s: cannot read folder %s\n", argv[0], argv[i]);
            return 1;
        }
        printf("%s: %d inputs\n", argv[i], n);
        total += n;
    }
    if (total == 0) {
        fprintf(stderr, "%s: no inputs replayed\n", argv[0]);
        return 1;
    }
    printf("replayed %d inputs, no invariant broken\n", total);
    return 0;
}
