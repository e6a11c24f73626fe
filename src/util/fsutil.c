/* fsutil.c — see fsutil.h. */
#include "attnlab/util/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* "path too long (N > MAX characters): '<first 80>…'" (the start says where it is). */
static int path_too_long(size_t n, size_t max, const char *path, AlError *err) {
    return al_fail(err, 2, "path too long (%zu > %zu characters): '%.80s…'", n, max, path);
}

int al_path_fmt(char *dst, size_t cap, AlError *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < cap) return 0;
    int rc = n < 0 ? al_fail(err, 2, "cannot format a path from '%s'", fmt) : path_too_long((size_t)n, cap - 1, dst, err);
    if (cap) dst[0] = '\0';
    return rc;
}

int al_path_check(const char *path, size_t room, const char *what, AlError *err) {
    size_t n = strlen(path), max = AL_PATH_MAX - 1 > room ? AL_PATH_MAX - 1 - room : 0;
    if (n <= max) return 0;
    path_too_long(n, max, path, err);
    al_error_prefix(err, "%s", what);
    return 2;
}

int al_mkdir_p(const char *path, AlError *err) {
    char buf[AL_PATH_MAX];
    if (al_path_fmt(buf, sizeof buf, err, "%s", path)) return err ? err->code : 2;
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

static const char *file_kind(mode_t mode) {
    if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

/* Opening a FIFO for reading blocks until a writer appears, and reading a device
 * may never end; O_NONBLOCK makes the open itself return at once, and fstat on
 * the descriptor (not stat on the name, which could change in between) decides.
 * NULL with errno set: EISDIR for a folder, EINVAL with *kind for the others. */
static FILE *open_regular(const char *path, const char **kind) {
    *kind = NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    int e = 0, flags;
    if (fstat(fd, &st) != 0) e = errno;
    else if (S_ISDIR(st.st_mode)) e = EISDIR;
    else if (!S_ISREG(st.st_mode)) e = EINVAL, *kind = file_kind(st.st_mode);
    else if ((flags = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) e = errno;
    FILE *f = e ? NULL : fdopen(fd, "rb");
    if (!f) {
        if (!e) e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

FILE *al_open_regular(const char *path, int code, AlError *err) {
    const char *kind;
    errno = 0;
    FILE *f = open_regular(path, &kind);
    if (f) return f;
    if (kind)
        al_fail(err, code, "cannot read '%s': it is %s, not a regular file (reading a pipe or device may block "
                "or never end)", path, kind);
    else if (errno == EISDIR)
        al_fail(err, code, "cannot read '%s': %s", path, strerror(errno));
    else
        al_fail(err, code, "cannot open '%s': %s", path, strerror(errno));
    return NULL;
}

char *al_read_file(const char *path, size_t *len) {
    const char *kind;
    FILE *f = open_regular(path, &kind);
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

/* Pages of virtual memory (field 0) or of data + stack (field 5) already mapped. */
static double mapped_bytes(int field) {
    FILE *f = fopen("/proc/self/statm", "r");
    long v[7] = {0};
    int got = f ? fscanf(f, "%ld %ld %ld %ld %ld %ld %ld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]) : 0;
    if (f) fclose(f);
    return got == 7 ? (double)v[field] * (double)sysconf(_SC_PAGESIZE) : 0;
}

/* A limit's headroom above what is mapped, if it is lower than *best. */
static void apply_limit(int resource, int field, const char *name, double *best, char *what, size_t n) {
    struct rlimit rl;
    if (getrlimit(resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return;
    double room = (double)rl.rlim_cur - mapped_bytes(field);
    if (room < 0) room = 0;
    if (room >= *best) return;
    char limit[32];
    *best = room;
    snprintf(what, n, "%s of %s leaves", name, al_fmt_bytes((double)rl.rlim_cur, limit, sizeof limit));
}

double al_machine_memory(char *what, size_t n) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    double best = pages > 0 && page > 0 ? (double)pages * (double)page : HUGE_VAL;   /* unknown: no limit */
    snprintf(what, n, "this machine has");
    apply_limit(RLIMIT_AS, 0, "the address-space limit (ulimit -v)", &best, what, n);
    apply_limit(RLIMIT_DATA, 5, "the data-size limit (ulimit -d)", &best, what, n);
    return best;
}

const char *al_fmt_bytes(double bytes, char *buf, size_t n) {
    static const char *const UNIT[] = { "bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    int u = 0;
    while (bytes >= 1024 && u < 6) bytes /= 1024, u++;
    if (u == 0) snprintf(buf, n, "%.0f bytes", bytes);
    else snprintf(buf, n, "%.*f %s", bytes < 10 ? 2 : bytes < 100 ? 1 : 0, bytes, UNIT[u]);
    return buf;
}
