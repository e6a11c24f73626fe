/* testutil.h — file helpers shared by the test programs. */
#ifndef ATTNLAB_TESTS_TESTUTIL_H
#define ATTNLAB_TESTS_TESTUTIL_H

#include "attnlab/nn/model.h"
#include "attnlab/sweep/spec.h"

#include <stddef.h>
#include <sys/types.h>

/* The whole file, NUL-terminated (malloc'ed), or NULL if unreadable; *len (may be
 * NULL) gets its size in bytes. */
char *tu_read_file(const char *path, size_t *len);
/* Writes text to path (plain fopen/fputs: test fixtures, not atomic). 0 on success. */
int   tu_write_file(const char *path, const char *text);

/* "dir/name" in one of 16 rotating static buffers, so a few paths can be live at
 * once (e.g. the two arguments of one call). */
const char *tu_path(const char *dir, const char *name);
/* Do two text files hold the same text (both readable)? */
int   tu_same_text(const char *a, const char *b);
/* Starts argv[0] (a path, or a name looked up in PATH) with argv, stdout and
 * stderr both going to the file out (truncated).  Returns the child's pid. */
pid_t tu_spawn(const char *const *argv, const char *out);
/* Writes text (a config with a "sweep" section) to path and reads it as ./train sweep
 * does: the base config, then the spec (free with sweep_spec_free whatever the
 * result).  0, or the loader's code with err set (2 when there is no sweep). */
int   tu_load_sweep(const char *path, const char *text, Config *base, SweepSpec *s, AlError *err);
/* Waits for pid: its exit status, or 128 + the signal that killed it. */
int   tu_wait(pid_t pid);
/* Runs fn(ctx) in a forked child (which exits 0 if fn returns) with its stderr
 * captured into text (n bytes, NUL-terminated): for what must end the process.
 * Returns the child's status as tu_wait does. */
int   tu_run_captured(void (*fn)(void *ctx), void *ctx, char *text, size_t n);

/* Small models of every type, with dropout on and off, for the tests that must hold
 * for every architecture (test_parallel, test_forward_rows): a name and the config's
 * "model" section.  The first three (softmax causal; with dropout; bidirectional
 * unit-norm with sinusoidal positions, the embedding LayerNorm and dropout) keep
 * their places: test_parallel picks them by index. */
typedef struct TuModelCase {
    const char *name;
    const char *model_json;
} TuModelCase;
extern const TuModelCase TU_MODEL_CASES[];
extern const int TU_N_MODEL_CASES;
/* The case's model through cfg_parse and model_create (seeded), or NULL with err set. */
Model *tu_model(const TuModelCase *c, int vocab, int n_classes, int max_len, uint64_t seed, AlError *err);

#endif
