/* dirlock.h — one process at a time in a run or sweep folder.
 *
 * Why: two runs (or two sweeps) started into one folder would interleave their
 * metrics lines and replace each other's checkpoints and results.  The lock is an
 * advisory flock(2) on the folder itself, so taking it writes nothing into the
 * folder, and the kernel drops it when the process dies however it dies (kill -9
 * leaves no stale lock to clean up).  The descriptor is close-on-exec: a sweep's
 * workers (fork + exec) do not inherit the sweep's lock; each takes its own cell's.
 *
 * The holder's PID for the message comes from /proc/locks (Linux); where that is
 * not readable the message says "another process". */
#ifndef ATTNLAB_IO_DIRLOCK_H
#define ATTNLAB_IO_DIRLOCK_H

#include "attnlab/util/error.h"

typedef struct DirLock { int fd; } DirLock;   /* fd −1: not held */

/* Locks the existing folder dir, exclusively or shared (the shards of one sweep
 * write into one folder together; a whole sweep or a run owns it alone).  what
 * names the kind of folder for the message ("run", "sweep").  Returns 0, or 1 with
 * err: "DIR: another process (PID N) is using this WHAT folder; …" when it is
 * held, or why the folder cannot be opened. */
int dirlock_acquire(DirLock *l, const char *dir, const char *what, int shared, AlError *err);
/* Releases the lock (a DirLock with fd −1 or zeroed by dirlock_init is a no-op). */
void dirlock_release(DirLock *l);
void dirlock_init(DirLock *l);

#endif
