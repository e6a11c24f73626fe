/* checkpoint.c — see checkpoint.h.
 *
 * Scalars of the training state go into __metadata__ as strings; doubles are
 * written with %a (hex float) so they come back bit for bit — that is what makes
 * `--resume` continue exactly as if the run had never stopped. */
#include "attnlab/train/checkpoint.h"
#include "attnlab/io/safetensors.h"
#include "attnlab/util/version.h"

#include <cJSON.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATE_FORMAT "attnlab-train-state-1"
#define MODEL_FORMAT "attnlab-model-1"
#define STATE_FILE "train_state.safetensors"
#define MODEL_FILE "model.safetensors"

/* Keys a resumed run may change: they do not alter what has been computed so far. */
static const char *const RESUMABLE_KEYS[][2] = {
    {"name", NULL}, {"train", "steps"}, {"train", "threads"}, {"train", "on_nonfinite"}, {"eval", NULL},
};

static void path_in(char *out, size_t n, const char *dir, const char *file) {
    snprintf(out, n, "%s/%s", dir, file);
}

/* ---- saving ------------------------------------------------------------------------ */

#define META_MAX 24
typedef struct MetaBuf { StMeta meta[META_MAX]; char text[META_MAX][160]; int n; } MetaBuf;

static void meta_add(MetaBuf *mb, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void meta_add(MetaBuf *mb, const char *key, const char *fmt, ...) {
    AL_ASSERT(mb->n < META_MAX);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(mb->text[mb->n], sizeof mb->text[0], fmt, ap);
    va_end(ap);
    mb->meta[mb->n].key = key;
    mb->meta[mb->n].value = mb->text[mb->n];
    mb->n++;
}

static void rng_text(char *out, size_t n, const Rng *r) {
    snprintf(out, n, "%016" PRIx64 ",%016" PRIx64 ",%016" PRIx64 ",%016" PRIx64, r->s[0], r->s[1], r->s[2], r->s[3]);
}

static int save_state(const char *dir, const Model *m, const TrainState *st, const char *config_json, AlError *err) {
    const ParamStore *ps = &m->params;
    StTensor t[3] = {
        { "params", 1, {ps->total}, ps->data, ST_F32 },
        { "adam.m", 1, {ps->total}, ps->m, ST_F32 },
        { "adam.v", 1, {ps->total}, ps->v, ST_F32 },
    };
    MetaBuf mb = {0};
    char rng[96], samp_rng[96], data_rng[96];
    rng_text(rng, sizeof rng, &st->dropout_rng);
    rng_text(data_rng, sizeof data_rng, &st->data_rng);
    rng_text(samp_rng, sizeof samp_rng, &st->sampler.epoch_rng);
    meta_add(&mb, "format", "%s", STATE_FORMAT);
    meta_add(&mb, "step", "%ld", st->step);
    meta_add(&mb, "elapsed_s", "%a", st->elapsed_s);
    meta_add(&mb, "dropout_rng", "%s", rng);
    meta_add(&mb, "data_rng", "%s", data_rng);
    meta_add(&mb, "sampler", "%d,%d,%" PRId64 ",%s", st->sampler.n, st->sampler.pos, st->sampler.epoch, samp_rng);
    meta_add(&mb, "loss_sum", "%a", st->loss_sum);
    meta_add(&mb, "loss_count", "%ld", st->loss_count);
    meta_add(&mb, "grad_norm", "%a", st->grad_norm);
    meta_add(&mb, "target_step", "%ld", st->target_step);
    meta_add(&mb, "target_elapsed_s", "%a", st->target_elapsed_s);
    meta_add(&mb, "skipped_steps", "%ld", st->skipped_steps);
    meta_add(&mb, "skipped_in_a_row", "%ld", st->skipped_in_a_row);
    meta_add(&mb, ATTNLAB_META_VERSION, "%s", attnlab_version());
    meta_add(&mb, ATTNLAB_META_COMMIT, "%s", attnlab_commit());
    mb.meta[mb.n].key = "config";
    mb.meta[mb.n++].value = config_json;
    char path[1024];
    path_in(path, sizeof path, dir, STATE_FILE);
    return st_write(path, t, 3, mb.meta, mb.n, err);
}

static int save_model(const char *dir, const Model *m, long step, const char *config_json, AlError *err) {
    const ParamStore *ps = &m->params;
    StTensor *t = calloc((size_t)ps->n, sizeof *t);
    if (!t) return al_fail(err, 1, "out of memory saving the model");
    for (int i = 0; i < ps->n; i++) {
        const Tensor *x = &ps->p[i].t;
        t[i].name = ps->p[i].name;
        t[i].ndim = x->ndim;
        for (int d = 0; d < x->ndim; d++) t[i].shape[d] = x->shape[d];
        t[i].data = x->data;
        t[i].dtype = ST_F32;
    }
    char step_text[32], path[1024];
    snprintf(step_text, sizeof step_text, "%ld", step);
    StMeta meta[] = { {"format", MODEL_FORMAT}, {"step", step_text}, {"config", config_json},
                      {ATTNLAB_META_VERSION, attnlab_version()}, {ATTNLAB_META_COMMIT, attnlab_commit()} };
    path_in(path, sizeof path, dir, MODEL_FILE);
    int rc = st_write(path, t, ps->n, meta, (int)(sizeof meta / sizeof meta[0]), err);
    free(t);
    return rc;
}

int checkpoint_save(const char *dir, const Model *m, const TrainState *st, const char *config_json, AlError *err) {
    /* State first: resume reads only it, so a kill between the two renames leaves a
     * model.safetensors one checkpoint older, never an inconsistent resume. */
    if (save_state(dir, m, st, config_json, err)) return err->code;
    return save_model(dir, m, st->step, config_json, err);
}

int checkpoint_save_model(const char *dir, const Model *m, long step, const char *config_json, AlError *err) {
    return save_model(dir, m, step, config_json, err);
}

/* ---- config compatibility ------------------------------------------------------------ */

static void drop_resumable_keys(cJSON *root) {
    for (size_t i = 0; i < sizeof RESUMABLE_KEYS / sizeof RESUMABLE_KEYS[0]; i++) {
        const char *a = RESUMABLE_KEYS[i][0], *b = RESUMABLE_KEYS[i][1];
        if (!b) cJSON_DeleteItemFromObjectCaseSensitive(root, a);
        else cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, a), b);
    }
}

/* Writes the dotted path of the first leaf where a and b differ into out. */
static int first_difference(const cJSON *a, const cJSON *b, char *out, size_t n, const char *prefix) {
    if (cJSON_Compare(a, b, 1)) return 0;
    if (cJSON_IsObject(a) && cJSON_IsObject(b)) {
        for (const cJSON *x = a->child; x; x = x->next) {
            char path[256];
            snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", x->string);
            const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, x->string);
            if (!y) { snprintf(out, n, "%s", path); return 1; }
            if (first_difference(x, y, out, n, path)) return 1;
        }
    }
    snprintf(out, n, "%s", *prefix ? prefix : "(top level)");
    return 1;
}

static int check_config(const char *saved, const char *current, const char *path, AlError *err) {
    cJSON *a = saved ? cJSON_Parse(saved) : NULL, *b = cJSON_Parse(current);
    int rc = 0;
    if (!a) {
        rc = al_fail(err, 1, "%s: its config metadata is missing or not valid JSON", path);
    } else {
        drop_resumable_keys(a);
        drop_resumable_keys(b);
        char where[256];
        if (first_difference(a, b, where, sizeof where, ""))
            rc = al_fail(err, 2, "%s: cannot resume: the config differs from the checkpoint's at '%s' "
                         "(only name, train.steps, train.threads, train.on_nonfinite and eval.* may change on resume)", path, where);
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
    return rc;
}

/* ---- loading ------------------------------------------------------------------------- */

static int meta_text(const StFile *f, const char *key, const char *path, const char **out, AlError *err) {
    *out = st_meta(f, key);
    if (!*out) return al_fail(err, 1, "%s: metadata key '%s' is missing (not an attnlab training state?)", path, key);
    return 0;
}

static int parse_rng(const char *s, Rng *r) {
    int used = 0;
    return sscanf(s, "%" SCNx64 ",%" SCNx64 ",%" SCNx64 ",%" SCNx64 "%n", &r->s[0], &r->s[1], &r->s[2], &r->s[3], &used) == 4
           && s[used] == '\0';
}

static int parse_double(const char *s, double *x) {
    char *end;
    *x = strtod(s, &end);
    return end != s && *end == '\0';
}

static int parse_long(const char *s, long *x) {
    char *end;
    *x = strtol(s, &end, 10);
    return end != s && *end == '\0';
}

/* The training-state metadata: key, how to parse it, where it goes. */
typedef enum { META_LONG, META_DOUBLE, META_RNG } MetaKind;
/* optional: absent in checkpoints written before the key existed (then 0). */
typedef struct MetaField { const char *key; MetaKind kind; size_t offset; int optional; } MetaField;

static const MetaField STATE_FIELDS[] = {
    { "step", META_LONG, offsetof(TrainState, step), 0 },
    { "elapsed_s", META_DOUBLE, offsetof(TrainState, elapsed_s), 0 },
    { "dropout_rng", META_RNG, offsetof(TrainState, dropout_rng), 0 },
    { "data_rng", META_RNG, offsetof(TrainState, data_rng), 0 },
    { "loss_sum", META_DOUBLE, offsetof(TrainState, loss_sum), 0 },
    { "loss_count", META_LONG, offsetof(TrainState, loss_count), 0 },
    { "grad_norm", META_DOUBLE, offsetof(TrainState, grad_norm), 0 },
    { "target_step", META_LONG, offsetof(TrainState, target_step), 0 },
    { "target_elapsed_s", META_DOUBLE, offsetof(TrainState, target_elapsed_s), 0 },
    { "skipped_steps", META_LONG, offsetof(TrainState, skipped_steps), 1 },
    { "skipped_in_a_row", META_LONG, offsetof(TrainState, skipped_in_a_row), 1 },
};

static int parse_field(const char *v, const MetaField *f, TrainState *st) {
    void *slot = (char *)st + f->offset;
    switch (f->kind) {
    case META_LONG: return parse_long(v, slot);
    case META_DOUBLE: return parse_double(v, slot);
    case META_RNG: return parse_rng(v, slot);
    }
    return 0;
}

static int read_scalars(const StFile *f, const char *path, TrainState *st, AlError *err) {
    const char *v;
    for (size_t i = 0; i < sizeof STATE_FIELDS / sizeof STATE_FIELDS[0]; i++) {
        if (STATE_FIELDS[i].optional && !st_meta(f, STATE_FIELDS[i].key)) continue;
        if (meta_text(f, STATE_FIELDS[i].key, path, &v, err)) return err->code;
        if (!parse_field(v, &STATE_FIELDS[i], st))
            return al_fail(err, 1, "%s: malformed training-state metadata '%s' = '%s'", path, STATE_FIELDS[i].key, v);
    }
    if (st->step < 0) return al_fail(err, 1, "%s: negative step in the training state", path);
    if (st->skipped_steps < 0 || st->skipped_in_a_row < 0 || st->skipped_in_a_row > st->skipped_steps)
        return al_fail(err, 1, "%s: inconsistent skipped-step counts in the training state", path);
    if (meta_text(f, "sampler", path, &v, err)) return err->code;
    int used = 0;
    if (sscanf(v, "%d,%d,%" SCNd64 ",%n", &st->sampler.n, &st->sampler.pos, &st->sampler.epoch, &used) != 3 ||
        used == 0 || !parse_rng(v + used, &st->sampler.epoch_rng))
        return al_fail(err, 1, "%s: malformed training-state metadata 'sampler' = '%s'", path, v);
    return 0;
}

int checkpoint_resume(const char *dir, Model *m, TrainState *st, const char *config_json, AlError *err) {
    char path[1024];
    path_in(path, sizeof path, dir, STATE_FILE);
    StFile *f = st_open(path, err);
    if (!f) {
        al_error_prefix(err, "cannot resume (start without --resume for a new run)");
        return err->code;
    }
    int rc = 0;
    const char *format = st_meta(f, "format");
    ParamStore *ps = &m->params;
    int64_t shape[1] = { ps->total };
    if (!format || strcmp(format, STATE_FORMAT))
        rc = al_fail(err, 1, "%s: not an attnlab training state (format '%s', expected '%s')", path,
                     format ? format : "none", STATE_FORMAT);
    else if (!(rc = check_config(st_meta(f, "config"), config_json, path, err)) &&
             !(rc = read_scalars(f, path, st, err)) &&
             !(rc = st_read_f32(f, "params", 1, shape, ps->data, err)) &&
             !(rc = st_read_f32(f, "adam.m", 1, shape, ps->m, err)))
        rc = st_read_f32(f, "adam.v", 1, shape, ps->v, err);
    st_close(f);
    return rc;
}

int checkpoint_load_model(const char *path, Model *m, AlError *err) {
    StFile *f = st_open(path, err);
    if (!f) return err->code;
    int rc = 0;
    const ParamStore *ps = &m->params;
    for (int i = 0; i < ps->n && !rc; i++) {
        const Tensor *x = &ps->p[i].t;
        int64_t shape[AD_MAX_DIMS];
        for (int d = 0; d < x->ndim; d++) shape[d] = x->shape[d];
        rc = st_read_f32(f, ps->p[i].name, x->ndim, shape, x->data, err);
    }
    st_close(f);
    return rc;
}
