/* testhook.h — fault injection for the reliability tests (tests/faults.sh,
 * tests/test_train.c), driven by environment variables nothing sets in normal use:
 *
 *   ATTNLAB_TEST_NAN_STEPS=3,5       the training loss of these steps (1-based) is
 *                                    replaced by NaN, as a diverging batch would be;
 *   ATTNLAB_TEST_RENAME_DELAY_MS=N   atomic_write sleeps N ms between finishing the
 *                                    temporary file and renaming it over the target,
 *                                    so a kill -9 can be aimed at a checkpoint write.
 *
 * Why environment variables: the fault tests drive the real ./train binary, and a
 * command-line flag or config key would put test-only switches in front of users. */
#ifndef ATTNLAB_UTIL_TESTHOOK_H
#define ATTNLAB_UTIL_TESTHOOK_H

/* 1 if ATTNLAB_TEST_NAN_STEPS lists step. */
int testhook_nan_step(long step);
/* Sleeps ATTNLAB_TEST_RENAME_DELAY_MS milliseconds (no-op when unset). */
void testhook_rename_delay(void);

#endif
