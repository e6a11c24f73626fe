/* runload.h — a finished run folder, loaded back for use: its effective config
 * (RUN/config.json), its datasets rebuilt exactly as the run built them (same seed,
 * same generator: the test set is the run's test set), and the model with the
 * weights of RUN/model.safetensors.  `./train eval`, `generate` and `inspect`
 * (src/cli) start here; nothing in the folder is written or locked (model.safetensors
 * is replaced atomically by a running training, so a read sees one whole file). */
#ifndef ATTNLAB_TRAIN_RUNLOAD_H
#define ATTNLAB_TRAIN_RUNLOAD_H

#include "attnlab/config/config.h"
#include "attnlab/data/task.h"
#include "attnlab/nn/model.h"
#include "attnlab/util/fsutil.h"

typedef struct LoadedRun {
    Config cfg;
    TaskData data;
    Model *model;
    char dir[AL_PATH_MAX];
    char config_path[AL_PATH_MAX];   /* DIR/config.json, for messages */
} LoadedRun;

/* Loads the run folder dir.  sets: "--set" overrides, each of which must be an
 * eval.* key (the task and model are the run's; eval.test_size may change the test
 * set).  Errors name the folder or file: a missing folder or one without config.json
 * or model.safetensors (code 2), a config or weights that do not load (the loaders'
 * codes).  On error *r is released. */
int  runload_open(LoadedRun *r, const char *dir, const char *const *sets, int n_sets, AlError *err);
/* runload_open without the model (r->model stays NULL): a folder with config.json
 * only, e.g. a committed result whose weights are not kept. */
int  runload_open_data(LoadedRun *r, const char *dir, const char *const *sets, int n_sets, AlError *err);
void runload_close(LoadedRun *r);
/* Replaces r's config and data (after runload_open) by the run's, reloaded with the
 * same sets plus task.seq_len = seq_len and rebuilt (same seed, same generator): a
 * test set of another length for the same model, e.g. the shorter strings of its
 * training mix.  Refused (code 2, "--seq-len N: " before the config's or the
 * generator's message) when the task has no task.seq_len or the generator refuses
 * the length, when the vocabulary or classes change with it (index lookup's index
 * tokens), or when the rows would be longer than the model's max_len.  The model
 * stays; seq_len equal to the run's changes nothing. */
#define RUNLOAD_MAX_SETS 32
int  runload_retest(LoadedRun *r, int seq_len, const char *const *sets, int n_sets, AlError *err);

/* Reads a JSONL file (data/README.md) for this run's model: token ids must be in
 * the model's vocabulary, scored labels among its classes and rows no longer than
 * its max_len (errors "PATH:LINE: …" that say the run's model does not fit, code
 * 2).  Shorter rows are padded to the file's longest with the run's pad token (or
 * token 0 when the run has none: a causal model never sees padding after a row's
 * end). */
int  runload_read_data(const LoadedRun *r, const char *path, Dataset *out, AlError *err);

/* d (the run's test set or a file read above) with rows widened to the model's
 * max_len, the stride the decoder writes in place (decoder_greedy); info is
 * always set.  dataset_free it. */
void runload_widen(const LoadedRun *r, const Dataset *d, Dataset *out);

/* Does d carry chain-of-thought answers (prompt_len / answer_start / answer_len)? */
int  runload_has_answers(const Dataset *d);

#endif
