/* fsutil.c — see fsutil.h. */
#include "attnlab/util/fsutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int al_mkdir_p(const char *path, AlError *err) {
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return al_fail(err, 1, "folder path too long: '%.64s…'", path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char keep = *p;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return al_fail(err, 1, "cannot create folder '%s': %s", buf, strerror(errno));
        *p = keep;
        if (!keep) break;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return al_fail(err, 1, "'%s' exists but is not a folder", path);
    return 0;
}

char *al_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0, got;
    char *buf = al_malloc(cap);
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0)
        if ((n += got) + 1 >= cap) buf = al_realloc(buf, cap *= 2);
    int bad = ferror(f), saved = errno;
    fclose(f);
    if (bad) {
        free(buf);
        errno = saved;
        return NULL;
    }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}
