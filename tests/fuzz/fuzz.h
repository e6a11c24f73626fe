/* fuzz.h — what the fuzz targets share (tests/fuzz/README.md).
 *
 * Each target is one function, LLVMFuzzerTestOneInput, that feeds bytes to a reader
 * and checks what came back: either a clean error that names the input, or a result
 * whose invariants hold (a round trip, ranges).  A broken invariant calls
 * fuzz_fail(), which aborts — libFuzzer reports that as a crash, and the replay
 * test (replay.c, the normal suite) fails on it.
 *
 * Some entry points only take a path (the config reader, checkpoint resume,
 * jsonl_write), so the targets write scratch files into a private folder: in
 * /dev/shm when there is one, so a write costs microseconds, removed at exit. */
#ifndef ATTNLAB_TESTS_FUZZ_H
#define ATTNLAB_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Prints "fuzz invariant broken: ..." and aborts. */
void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* The scratch folder (created on first use). */
const char *fuzz_dir(void);
/* fuzz_dir()/name, removed at exit (valid for the whole run). */
const char *fuzz_path(const char *name);
/* Writes data to fuzz_dir()/name and returns its path (as fuzz_path). */
const char *fuzz_write(const char *name, const void *data, size_t size);
/* Does s start with prefix? */
int fuzz_starts_with(const char *s, const char *prefix);

#endif
