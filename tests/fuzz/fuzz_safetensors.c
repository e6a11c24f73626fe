/* fuzz_safetensors.c — the safetensors loader (src/io/safetensors.c) and, on files
 * it accepts, the checkpoint readers on top of it (src/train/checkpoint.c).
 *
 * Input: the bytes of a .safetensors file.  Checks:
 *   - a rejected file gives a message that starts with its name;
 *   - an accepted file is fully validated: every tensor it lists reads back with
 *     its own dtype and shape unless its checksum refuses it (naming the file),
 *     and a wrong name, dtype or shape is refused;
 *   - a file that says it is an attnlab training state or model goes through
 *     checkpoint_resume / checkpoint_load_model (and the sampler state through
 *     sampler_set_state) into the model of FUZZ_CONFIG, the config of the seed
 *     checkpoints in corpus/safetensors/: any failure names the file. */
#include "fuzz.h"
#include "attnlab/config/config.h"
#include "attnlab/data/task.h"
#include "attnlab/io/safetensors.h"
#include "attnlab/train/checkpoint.h"

#include <stdlib.h>
#include <string.h>

#define NAME "fuzz.safetensors"

/* tests/fuzz/README.md shows how the seed checkpoints were made from it. */
static const char *const FUZZ_CONFIG =
    "{ \"name\": \"fuzz\", \"seed\": 1,\n"
    "  \"task\": {\"type\": \"match2\", \"seq_len\": 6, \"modulus\": 7, \"train_size\": 16},\n"
    "  \"model\": {\"d_model\": 4, \"n_heads\": 1, \"mlp_ratio\": 1},\n"
    "  \"train\": {\"batch_size\": 4, \"steps\": 4},\n"
    "  \"eval\": {\"every\": 2, \"test_size\": 4} }\n";

static struct {
    Model *model;
    char *config_json;
    Sampler sampler;
} g;

static void init_once(void) {
    if (g.model) return;
    Config c;
    TaskData td;
    TaskSpec spec;
    AlError err = {0};
    if (cfg_parse(&c, FUZZ_CONFIG, "FUZZ_CONFIG", &err) || task_build(cfg_task_spec(&c, &spec), &td, &err))
        fuzz_fail("FUZZ_CONFIG: %s", err.msg);
    g.config_json = cfg_to_json(&c);
    g.model = model_create(&c.model, td.vocab_size, td.n_classes, td.seq_len, c.seed);
    sampler_init(&g.sampler, td.train.n, rng_stream(c.seed, 1));
    task_free(&td);
}

/* Every listed tensor reads back as listed; wrong requests are refused by name. */
static void check_tensors(const StFile *f) {
    for (int i = 0; i < st_count(f); i++) {
        const StInfo *in = st_info(f, i);
        if (st_find(f, in->name) != i) fuzz_fail("st_find('%s') is not %d", in->name, i);
        size_t bytes = (size_t)st_dtype_size(in->dtype);
        for (int d = 0; d < in->ndim; d++) bytes *= (size_t)in->shape[d];
        void *buf = malloc(bytes ? bytes : 1);
        AlError err = {0};
        if (st_read(f, in->name, in->dtype, in->ndim, in->shape, buf, &err) &&
            !(fuzz_starts_with(err.msg, NAME) && strstr(err.msg, "checksum")))
            fuzz_fail("listed tensor '%s' does not read: %s", in->name, err.msg);
        StDtype other = in->dtype == ST_F32 ? ST_I32 : ST_F32;
        if (!st_read(f, in->name, other, in->ndim, in->shape, buf, &err) || !fuzz_starts_with(err.msg, NAME))
            fuzz_fail("wrong dtype for '%s' accepted or unnamed: %s", in->name, err.msg);
        free(buf);
    }
    AlError err = {0};
    char one;
    if (!st_read(f, "", ST_U8, 0, NULL, &one, &err) && st_find(f, "") < 0)
        fuzz_fail("a missing tensor read successfully");
}

static void check_named(int rc, const AlError *err, const char *path, const char *what) {
    if (rc && !strstr(err->msg, path)) fuzz_fail("%s error does not name %s: %s", what, path, err->msg);
}

static void check_checkpoint(const StFile *f, const uint8_t *data, size_t size) {
    const char *format = st_meta(f, "format");
    if (!format) return;
    init_once();
    AlError err = {0};
    if (!strcmp(format, "attnlab-train-state-1")) {
        const char *path = fuzz_write("train_state.safetensors", data, size);
        TrainState st = {0};
        int rc = checkpoint_resume(fuzz_dir(), g.model, &st, g.config_json, &err);
        check_named(rc, &err, path, "checkpoint_resume");
        if (!rc && sampler_set_state(&g.sampler, &st.sampler, &err) && err.code != 2)
            fuzz_fail("sampler_set_state error with code %d: %s", err.code, err.msg);
    } else if (!strcmp(format, "attnlab-model-1")) {
        const char *path = fuzz_write("model.safetensors", data, size);
        check_named(checkpoint_load_model(path, g.model, &err), &err, path, "checkpoint_load_model");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    AlError err = {0};
    StFile *f = st_open_memory(NAME, data, size, &err);
    if (!f) {
        if (err.code != 1 || !fuzz_starts_with(err.msg, NAME ": "))
            fuzz_fail("rejected file: code %d, message does not start with the name: %s", err.code, err.msg);
        return 0;
    }
    check_tensors(f);
    check_checkpoint(f, data, size);
    st_close(f);
    return 0;
}
