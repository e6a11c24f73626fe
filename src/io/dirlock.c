/* dirlock.c — see dirlock.h. */
#define _DEFAULT_SOURCE   /* flock(2) is a BSD call, outside POSIX */
#include "attnlab/io/dirlock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

void dirlock_init(DirLock *l) { l->fd = -1; }

/* The PID holding a flock on the file st names, from /proc/locks lines such as
 * "3: FLOCK  ADVISORY  WRITE 12345 08:01:1234567 0 EOF"; 0 when not found. */
static long lock_holder(const struct stat *st) {
    FILE *f = fopen("/proc/locks", "r");
    if (!f) return 0;
    char line[256];
    long found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        char type[16];
        long pid;
        unsigned maj, min;
        unsigned long long ino;
        if (sscanf(line, "%*[^:]: %15s %*s %*s %ld %x:%x:%llu", type, &pid, &maj, &min, &ino) == 5 &&
            !strcmp(type, "FLOCK") && ino == (unsigned long long)st->st_ino && maj == major(st->st_dev) &&
            min == minor(st->st_dev) && pid != (long)getpid())
            found = pid;
    }
    fclose(f);
    return found;
}

int dirlock_acquire(DirLock *l, const char *dir, const char *what, int shared, AlError *err) {
    l->fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (l->fd < 0) return al_fail(err, 1, "cannot open folder '%s': %s", dir, strerror(errno));
    if (flock(l->fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) == 0) return 0;
    int e = errno;
    struct stat st;
    long pid = e == EWOULDBLOCK && fstat(l->fd, &st) == 0 ? lock_holder(&st) : 0;
    close(l->fd);
    l->fd = -1;
    if (e != EWOULDBLOCK) return al_fail(err, 1, "cannot lock folder '%s': %s", dir, strerror(e));
    if (pid > 0)
        return al_fail(err, 1, "%s: another process (PID %ld) is using this %s folder; wait for it to finish, stop "
                       "it (kill %ld), or give this one another --out", dir, pid, what, pid);
    return al_fail(err, 1, "%s: another process is using this %s folder; wait for it to finish, or give this one "
                   "another --out", dir, what);
}

void dirlock_release(DirLock *l) {
    if (l->fd >= 0) close(l->fd);   /* closing the only descriptor drops the flock */
    l->fd = -1;
}
