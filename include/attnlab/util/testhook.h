/* testhook.h — fault injection for the reliability tests (tests/cli/faults.sh,
 * tests/train/test_train.c), driven by environment variables nothing sets in normal use:
 *
 *   ATTNLAB_TEST_NAN_STEPS=3,5       the training loss of these steps (1-based) is
 *                                    replaced by NaN, as a diverging batch would be;
 *   ATTNLAB_TEST_RENAME_DELAY_MS=N   atomic_write sleeps N ms between finishing the
 *                                    temporary file and renaming it over the target,
 *                                    so a kill -9 can be aimed at a checkpoint write;
 *   ATTNLAB_TEST_KILL_AT_WRITE=K     the process kills itself (SIGKILL) at the K-th write
 *                                    boundary (below), so the fault tests place a kill
 *                                    at every boundary deterministically, whatever the
 *                                    machine's load;
 *   ATTNLAB_TEST_SIGNAL_AT_WRITE=K   at the K-th write boundary the process sends itself
 *                                    SIGINT and then SIGTERM: signals that arrive while
 *                                    a checkpoint is being saved;
 *   ATTNLAB_TEST_TRACE_WRITES=1      every write boundary prints "write boundary K: WHAT
 *                                    PATH" to stderr (how a test counts them).
 *   ATTNLAB_TEST_DUMP_ROWS=FILE      training appends its test set ("test t0 t1 …", one
 *                                    line per padded row) when it starts and every
 *                                    training batch ("train …") as it draws it, so a
 *                                    test can check `./train overlap` by brute force.
 *
 * Write boundaries, numbered from 1 in the order a process reaches them: in every
 * atomic write, "temp" (the temporary file is complete and synced, not yet renamed)
 * and "renamed" (renamed over the target, directory not yet synced); in every
 * metrics.jsonl record, "partial" (half of the line written and flushed, as a kill
 * in the middle of an append leaves it).
 *
 * Why environment variables: the fault tests drive the real ./train binary, and a
 * command-line flag or config key would put test-only switches in front of users. */
#ifndef ATTNLAB_UTIL_TESTHOOK_H
#define ATTNLAB_UTIL_TESTHOOK_H

/* 1 if ATTNLAB_TEST_NAN_STEPS lists step. */
int testhook_nan_step(long step);
/* Sleeps ATTNLAB_TEST_RENAME_DELAY_MS milliseconds (no-op when unset). */
void testhook_rename_delay(void);
/* A write boundary (what: "temp", "renamed", "partial"; path: the file): counts it,
 * traces it, and kills or signals the process there when the variables above say so. */
void testhook_write_boundary(const char *what, const char *path);
/* 1 if the next write boundary is one the tests act on (a caller that must do extra
 * work to create the boundary, e.g. split a line in two, asks first). */
int testhook_boundaries_active(void);
/* Appends rows × seq_len tokens to ATTNLAB_TEST_DUMP_ROWS (no-op when unset). */
void testhook_dump_rows(const char *tag, const int *tokens, int rows, int seq_len);

#endif
