/* testhook.c — see testhook.h.  Variables are read at every call (not cached), so
 * a test program can set and clear them between runs in one process. */
#include "attnlab/util/testhook.h"

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
