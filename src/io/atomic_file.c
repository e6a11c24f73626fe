/* atomic_file.c — see atomic_file.h.
 *
 * stdio is used for the writing (fwrite/fflush/fclose all checked: a full disk may
 * only show up at the flush or the close), POSIX for fsync and the directory sync. */
#include "attnlab/io/atomic_file.h"
#include "attnlab/util/testhook.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The directory part of path ("." for a bare name, "/" for a file at the root). */
static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    const char *src = slash ? path : ".";
    size_t n = !slash || slash == path ? 1 : (size_t)(slash - path);
    char *dir = al_malloc(n + 1);
    memcpy(dir, src, n);
    dir[n] = '\0';
    return dir;
}

/* A hint for the errors whose strerror text alone leaves people guessing. */
static const char *hint(int e) {
    if (e == ENOSPC) return " (disk full?)";
#ifdef EDQUOT
    if (e == EDQUOT) return " (disk quota exceeded?)";
#endif
    if (e == EFBIG) return " (file size limit?)";
    if (e == EACCES) return " (no write permission in that folder?)";
    return "";
}

static int fail(AlError *err, const char *path, const char *step, int e) {
    return al_fail(err, 1, "cannot write '%s': %s%s%s", path, step, strerror(e), hint(e));
}

/* The temp file could not be created: say so plainly when the directory is missing. */
static int fail_create(AlError *err, const char *path, int e) {
    char *dir = dir_of(path);
    struct stat st;
    if (e == ENOENT && stat(dir, &st) != 0)
        al_fail(err, 1, "cannot write '%s': directory '%s' does not exist", path, dir);
    else
        fail(err, path, "", e);
    free(dir);
    return 1;
}

/* "<path>.tmp.<pid>": the pid keeps two processes writing the same target apart. */
static char *temp_name(const char *path) {
    size_t n = strlen(path) + 32;
    char *tmp = al_malloc(n);
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    return tmp;
}

/* Makes the rename durable.  Best effort where the file system cannot sync a
 * directory (EINVAL) or the directory cannot be opened for reading; a real I/O
 * error (EIO) is reported, since the new file may then not survive a crash. */
static int sync_dir(const char *path, AlError *err) {
    char *dir = dir_of(path);
    int rc = 0, fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
            rc = fail(err, path, "fsync of its directory failed: ", errno);
        close(fd);
    }
    free(dir);
    return rc;
}

/* errno after a failed stdio call; stdio need not set it, so never report "Success". */
static int io_errno(void) { return errno ? errno : EIO; }

/* Writes every chunk to the already-open temp file and closes it, checking each
 * step.  Returns 0 or the errno of the first failure (the file is closed either way). */
static int write_chunks(FILE *f, const void *const *chunks, const size_t *sizes, int n) {
    int e = 0;
    for (int i = 0; i < n && !e; i++) {
        AL_ASSERT(sizes[i] == 0 || chunks[i] != NULL);
        errno = 0;
        if (sizes[i] && fwrite(chunks[i], 1, sizes[i], f) != sizes[i]) e = io_errno();
    }
    errno = 0;
    if (!e && fflush(f) != 0) e = io_errno();
    if (!e && fsync(fileno(f)) != 0) e = io_errno();
    errno = 0;
    if (fclose(f) != 0 && !e) e = io_errno();
    return e;
}

static const char *file_kind(mode_t m) {
    if (S_ISDIR(m)) return "a folder";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISLNK(m)) return "a symbolic link";
    return "not a regular file";
}

/* The rename would replace whatever is at path: only a regular file (or nothing) may
 * be there.  A device node, a folder (`--out /`) or a link is refused, untouched. */
static int check_target(const char *path, AlError *err) {
    struct stat st;
    if (lstat(path, &st) != 0 || S_ISREG(st.st_mode)) return 0;
    return al_fail(err, 1, "cannot write '%s': it exists and is %s, not a regular file; refusing to replace it "
                   "(give a path to a regular file)", path, file_kind(st.st_mode));
}

int atomic_write(const char *path, const void *const *chunks, const size_t *sizes,
                 int n_chunks, AlError *err) {
    AL_ASSERT(path && n_chunks >= 0 && (n_chunks == 0 || (chunks && sizes)));
    if (check_target(path, err)) return err->code;
    char *tmp = temp_name(path);
    int rc = 0;
    /* A leftover temp with our pid can only come from a dead process that had it. */
    unlink(tmp);
    errno = 0;
    FILE *f = fopen(tmp, "wbx");
    if (!f) {
        rc = fail_create(err, path, io_errno());
    } else {
        int e = write_chunks(f, chunks, sizes, n_chunks);
        if (!e) {   /* the fault tests aim kills at these two boundaries */
            testhook_rename_delay();
            testhook_write_boundary("temp", path);
        }
        if (e) rc = fail(err, path, "", e);
        else if (rename(tmp, path) != 0)
            rc = fail(err, path, "cannot rename the temporary file over it: ", errno);
        if (rc) unlink(tmp);
        else testhook_write_boundary("renamed", path);
        if (!rc) rc = sync_dir(path, err);
    }
    free(tmp);
    return rc;
}

int write_text_atomic(const char *path, const char *text, AlError *err) {
    const void *chunk = text;
    size_t size = strlen(text);
    return atomic_write(path, &chunk, &size, 1, err);
}

/* "NAME.tmp.PID" with PID all digits: returns PID, else 0. */
static long temp_pid(const char *name) {
    const char *t = strstr(name, ".tmp.");
    if (!t || t == name) return 0;
    char *end;
    long pid = strtol(t + 5, &end, 10);
    return *end == '\0' && end != t + 5 && pid > 0 ? pid : 0;
}

int atomic_remove_stale(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int removed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        long pid = temp_pid(e->d_name);
        if (!pid || !(kill((pid_t)pid, 0) != 0 && errno == ESRCH)) continue;
        size_t n = strlen(dir) + strlen(e->d_name) + 2;
        char *path = al_malloc(n);
        snprintf(path, n, "%s/%s", dir, e->d_name);
        removed += unlink(path) == 0;
        free(path);
    }
    closedir(d);
    return removed;
}
