/* files.c — see files.h. */
#include "files.h"
#include "attnlab/io/atomic_file.h"
#include "attnlab/util/fsutil.h"

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void sw_csv_field(StrBuf *b, const char *text) {
    if (!strpbrk(text, ",\"\r\n")) {
        strbuf_printf(b, "%s", text);
        return;
    }
    strbuf_printf(b, "\"");
    for (const char *p = text; *p; p++) strbuf_printf(b, "%s%c", *p == '"' ? "\"" : "", *p);
    strbuf_printf(b, "\"");
}

int sweep_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

int sweep_same_dir(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int sweep_copy_files(const char *from, const char *to, AlError *err) {
    if (al_mkdir_p(to, err)) return err->code;
    DIR *d = opendir(from);
    if (!d) return al_fail(err, 1, "cannot read folder '%s': %s", from, strerror(errno));
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        char src[AL_PATH_MAX], dst[AL_PATH_MAX];
        struct stat st;
        if (al_path_fmt(src, sizeof src, err, "%s/%s", from, e->d_name) ||
            al_path_fmt(dst, sizeof dst, err, "%s/%s", to, e->d_name)) {
            rc = 2;
            break;
        }
        if (stat(src, &st) != 0 || !S_ISREG(st.st_mode) || strstr(e->d_name, ".tmp.")) continue;
        size_t len = 0;
        char *bytes = al_read_file(src, &len);
        if (!bytes) rc = al_fail(err, 1, "cannot read '%s': %s", src, strerror(errno));
        const void *chunks[1] = { bytes };
        if (!rc) rc = atomic_write(dst, chunks, &len, 1, err);
        free(bytes);
    }
    closedir(d);
    return rc;
}
