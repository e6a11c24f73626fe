/* checkpoint.h — what a run folder holds between sittings.
 *
 *   model.safetensors        every parameter by name; __metadata__ has the effective
 *                            config (JSON), the step and the format tag.  Any
 *                            safetensors reader opens it.
 *   train_state.safetensors  a complete, self-consistent snapshot for --resume:
 *                            the flat parameter block, both Adam moments, and in
 *                            __metadata__ the step, RNG and sampler states, timers.
 *
 * Both are written atomically (temp file + rename), train_state first: a kill at
 * any moment leaves the previous snapshot or the new one, never a torn file, and
 * resume reads train_state only, so the two files can never be mixed.  Every
 * tensor carries a CRC-32C in __metadata__ (safetensors.h), verified on load.
 *
 * Loading trusts nothing: metadata values are parsed strictly (" 20", "20 ", "+20"
 * and integers beyond 64 bits are refused) and range-checked (step within the
 * checkpoint config's train.steps, finite non-negative timers, loss sum and gradient
 * norm, counts within [0, step], …), and NaN/inf parameters are refused, so a
 * damaged file is named with the key or tensor instead of misleading a run later.
 * Every error names the file; code 1 unless the config given now is at fault (2). */
#ifndef ATTNLAB_TRAIN_CHECKPOINT_H
#define ATTNLAB_TRAIN_CHECKPOINT_H

#include "attnlab/data/dataset.h"
#include "attnlab/nn/model.h"

typedef struct TrainState {
    long   step;              /* optimizer steps completed */
    double elapsed_s;         /* training wall time so far (all sittings) */
    Rng    dropout_rng;
    SamplerState sampler;
    Rng    data_rng;          /* streaming tasks: the generator's stream */
    double loss_sum;          /* train loss accumulated since the last eval … */
    long   loss_count;        /* … over this many steps */
    double grad_norm;         /* of the last step */
    long   target_step;       /* first eval step with test token error ≤ 1%, or −1 */
    double target_elapsed_s;  /* elapsed_s at that eval */
    long   skipped_steps;     /* updates skipped for a non-finite loss (train.on_nonfinite "skip") */
    long   skipped_in_a_row;  /* … of them in the steps just before this one */
} TrainState;

int checkpoint_save(const char *dir, const Model *m, const TrainState *st, const char *config_json,
                    AlError *err);
/* model.safetensors alone: the end of a run writes it when this sitting has not
 * (a resume that finds the state at the last step, its model lost to a kill
 * between the two renames of the final checkpoint, or deleted). */
int checkpoint_save_model(const char *dir, const Model *m, long step, const char *config_json, AlError *err);
/* Loads train_state.safetensors of dir into m (params and Adam moments) and *st.
 * config_json is the current effective config: a checkpoint made with a different
 * model, task, seed or optimizer is refused, naming the first differing key, and so
 * is one whose step is past its train.steps (exit code 2 for both).  Whether the
 * sampler state fits the training set is the caller's check (sampler_set_state). */
int checkpoint_resume(const char *dir, Model *m, TrainState *st, const char *config_json, AlError *err);
/* Loads the parameters of a model.safetensors into m (shapes checked by name,
 * checksums verified when the file has them, every value finite; an attnlab model
 * file's "step" metadata must be an integer in [0, its config's train.steps]). */
int checkpoint_load_model(const char *path, Model *m, AlError *err);

#endif
