/* testhook.c — see testhook.h.  Variables are read at every call (not cached), so
 * a test program can set and clear them between runs in one process. */
#include "attnlab/util/testhook.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int testhook_nan_step(long step) {
    const char *s = getenv("ATTNLAB_TEST_NAN_STEPS");
    while (s && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s) return 0;
        if (v == step) return 1;
        s = *end == ',' ? end + 1 : end;
    }
    return 0;
}

void testhook_rename_delay(void) {
    const char *s = getenv("ATTNLAB_TEST_RENAME_DELAY_MS");
    long ms = s ? atol(s) : 0;
    if (ms <= 0) return;
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0) {}
}

static long env_long(const char *name) {
    const char *s = getenv(name);
    return s ? atol(s) : 0;
}

int testhook_boundaries_active(void) {
    return env_long("ATTNLAB_TEST_KILL_AT_WRITE") > 0 || env_long("ATTNLAB_TEST_SIGNAL_AT_WRITE") > 0 ||
           getenv("ATTNLAB_TEST_TRACE_WRITES");
}

void testhook_write_boundary(const char *what, const char *path) {
    static long count;   /* one process, one sequence of boundaries */
    if (!testhook_boundaries_active()) return;
    long k = ++count;
    if (getenv("ATTNLAB_TEST_TRACE_WRITES")) fprintf(stderr, "write boundary %ld: %s %s\n", k, what, path);
    if (env_long("ATTNLAB_TEST_SIGNAL_AT_WRITE") == k) {
        raise(SIGINT);
        raise(SIGTERM);
    }
    if (env_long("ATTNLAB_TEST_KILL_AT_WRITE") == k) raise(SIGKILL);
}

void testhook_dump_rows(const char *tag, const int *tokens, int rows, int seq_len) {
    const char *path = getenv("ATTNLAB_TEST_DUMP_ROWS");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (!f) return;
    for (long r = 0; r < rows; r++) {
        fputs(tag, f);
        for (int i = 0; i < seq_len; i++) fprintf(f, " %d", tokens[r * seq_len + i]);
        fputc('\n', f);
    }
    fclose(f);
}
