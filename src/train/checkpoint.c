/* checkpoint.c — see checkpoint.h.
 *
 * Scalars of the training state go into __metadata__ as strings; doubles are
 * written with %a (hex float) so they come back bit for bit — that is what makes
 * `--resume` continue exactly as if the run had never stopped. */
#include "attnlab/train/checkpoint.h"
#include "attnlab/config/config.h"
#include "attnlab/io/safetensors.h"
#include "attnlab/util/fsutil.h"
#include "attnlab/util/version.h"

#include <cJSON.h>
#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
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
    {"name", NULL}, {"train", "steps"}, {"train", "decay_steps"}, {"train", "threads"}, {"train", "length_groups"},
    {"train", "on_nonfinite"},
    {"eval", NULL},
};

static int path_in(char *out, size_t n, const char *dir, const char *file, AlError *err) {
    return al_path_fmt(out, n, err, "%s/%s", dir, file);
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
    char path[AL_PATH_MAX];
    if (path_in(path, sizeof path, dir, STATE_FILE, err)) return err->code;
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
    char step_text[32], path[AL_PATH_MAX];
    snprintf(step_text, sizeof step_text, "%ld", step);
    StMeta meta[] = { {"format", MODEL_FORMAT}, {"step", step_text}, {"config", config_json},
                      {ATTNLAB_META_VERSION, attnlab_version()}, {ATTNLAB_META_COMMIT, attnlab_commit()} };
    int rc = path_in(path, sizeof path, dir, MODEL_FILE, err) ? err->code : st_write(path, t, ps->n, meta, (int)(sizeof meta / sizeof meta[0]), err);
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

/* train.steps of a parsed config (an integer >= 0), or -1. */
static long config_steps(const cJSON *root) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "train"), "steps");
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 1e15) || v->valuedouble != floor(v->valuedouble))
        return -1;
    return (long)v->valuedouble;
}

/* Compares the checkpoint's config with the current one, and gives the train.steps
 * of both: a run never goes past its train.steps, so a step beyond the checkpoint's
 * own means a damaged file, and one beyond the current one a config that would end
 * the run before where it already is (*steps_now is LONG_MAX if it has none). */
/* The config as the current version reads it: every key it has, defaults filled
 * in.  A checkpoint written before a key existed then compares equal to a config
 * that leaves the key at its default (the behaviour the older version had), so
 * adding a config key never strands the runs in progress.  NULL (err set) when
 * this version cannot read the text. */
static cJSON *effective_config(const char *json, const char *source, AlError *err) {
    Config c;
    if (cfg_parse(&c, json, source, err)) return NULL;
    char *text = cfg_to_json(&c);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!root) al_fail(err, 1, "%s: out of memory", source);
    return root;
}

static int check_config(const char *saved, const char *current, const char *path, long *steps_saved,
                        long *steps_now, AlError *err) {
    cJSON *a = saved ? cJSON_Parse(saved) : NULL, *b = NULL;
    int rc = 0;
    *steps_saved = config_steps(a);
    if (!a) {
        rc = al_fail(err, 1, "%s: its config metadata is missing or not valid JSON", path);
    } else if (*steps_saved < 0) {
        rc = al_fail(err, 1, "%s: its config metadata has no train.steps (an integer >= 0)", path);
    } else {
        char source[AL_PATH_MAX + 64];
        snprintf(source, sizeof source, "%s: its config metadata", path);
        cJSON_Delete(a);
        a = effective_config(saved, source, err);
        if (!a) {
            al_error_prefix(err, "cannot resume: this version of attnlab cannot read the checkpoint's config");
            rc = err->code;
        } else if (!(b = effective_config(current, "the current config", err))) {
            rc = err->code;
        }
    }
    *steps_now = config_steps(b) < 0 ? LONG_MAX : config_steps(b);
    if (rc == 0) {
        drop_resumable_keys(a);
        drop_resumable_keys(b);
        char where[256];
        if (first_difference(a, b, where, sizeof where, ""))
            rc = al_fail(err, 2, "%s: cannot resume: the config differs from the checkpoint's at '%s' "
                         "(only name, train.steps, train.decay_steps, train.threads, train.length_groups, "
                         "train.on_nonfinite and eval.* may change on resume)", path, where);
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
    return rc;
}

/* ---- loading: metadata values --------------------------------------------------------- */

/* Values are parsed strictly: exactly what checkpoint_save writes, and nothing a
 * damaged or hand-edited file could slip past.  strtol alone would take " 20" and
 * "+20", and turn 9223372036854775808 into LONG_MAX without a word. */

/* A decimal integer in the n bytes at s: an optional '-', then digits; no spaces,
 * no '+', no value beyond ±LONG_MAX. */
static int parse_long_span(const char *s, size_t n, long *x) {
    size_t i = n > 0 && s[0] == '-';
    unsigned long v = 0;
    if (i == n) return 0;
    for (; i < n; i++) {
        if (!isdigit((unsigned char)s[i])) return 0;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > ((unsigned long)LONG_MAX - d) / 10) return 0;
        v = v * 10 + d;
    }
    *x = s[0] == '-' ? -(long)v : (long)v;
    return 1;
}

static int parse_long(const char *s, long *x) { return parse_long_span(s, strlen(s), x); }

/* What strtod reads (%a hex floats, decimals, "nan", "inf"), all of s, no leading
 * space or '+'.  NaN and inf parse here and fail the range checks, which say why. */
static int parse_double(const char *s, double *x) {
    char *end;
    if (!*s || isspace((unsigned char)*s) || *s == '+') return 0;
    *x = strtod(s, &end);
    return *end == '\0';
}

/* Exactly 16 hex digits. */
static int parse_hex64(const char *s, uint64_t *x) {
    *x = 0;
    for (int i = 0; i < 16; i++) {
        if (!isxdigit((unsigned char)s[i])) return 0;
        *x = *x << 4 | (uint64_t)(isdigit((unsigned char)s[i]) ? s[i] - '0' : tolower((unsigned char)s[i]) - 'a' + 10);
    }
    return 1;
}

/* Four 16-digit hex words separated by commas, as rng_text writes them. */
static int parse_rng(const char *s, Rng *r) {
    for (int i = 0; i < 4; i++, s += 17) {
        if (!parse_hex64(s, &r->s[i]) || s[16] != (i < 3 ? ',' : '\0')) return 0;
    }
    return 1;
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

static const char *const KIND_EXPECTED[] = {
    [META_LONG] = "a decimal integer: digits, an optional '-', no spaces or '+'",
    [META_DOUBLE] = "a number, as %a writes it, without spaces or '+'",
    [META_RNG] = "four 16-digit hex words separated by commas",
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

static int meta_text(const StFile *f, const char *key, const char *path, const char **out, AlError *err) {
    *out = st_meta(f, key);
    if (!*out) return al_fail(err, 1, "%s: metadata key '%s' is missing (not an attnlab training state?)", path, key);
    return 0;
}

/* "F: training-state metadata 'K' = 'V' is out of range (expected …)". */
static int out_of_range(const StFile *f, const char *path, const char *key, AlError *err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int out_of_range(const StFile *f, const char *path, const char *key, AlError *err, const char *fmt, ...) {
    char expected[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(expected, sizeof expected, fmt, ap);
    va_end(ap);
    return al_fail(err, 1, "%s: training-state metadata '%s' = '%.80s' is out of range (expected %s)", path, key,
                   st_meta(f, key) ? st_meta(f, key) : "", expected);
}

/* Elapsed times and the gradient norm are >= 0, and so is loss_sum: every step's
 * loss is a cross-entropy.  A NaN here would reach summary.json and the curves. */
static int check_doubles(const StFile *f, const char *path, const TrainState *st, AlError *err) {
    const struct { const char *key; double x; } v[] = {
        { "elapsed_s", st->elapsed_s }, { "loss_sum", st->loss_sum }, { "grad_norm", st->grad_norm },
        { "target_elapsed_s", st->target_elapsed_s },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (!(isfinite(v[i].x) && v[i].x >= 0)) return out_of_range(f, path, v[i].key, err, "a finite number >= 0");
    if (st->target_elapsed_s > st->elapsed_s)
        return out_of_range(f, path, "target_elapsed_s", err, "at most elapsed_s = %.17g: it is the elapsed_s of "
                            "an earlier evaluation", st->elapsed_s);
    return 0;
}

/* step within [0, the checkpoint's train.steps]; the counts of steps within [0, step]. */
static int check_counts(const StFile *f, const char *path, const TrainState *st, long max_step, AlError *err) {
    if (st->step < 0) return al_fail(err, 1, "%s: negative step in the training state (metadata 'step' = '%ld')", path, st->step);
    if (st->step > max_step)
        return out_of_range(f, path, "step", err, "0 <= step <= %ld, the train.steps of the checkpoint's config", max_step);
    if (st->loss_count < 0 || st->loss_count > st->step)
        return out_of_range(f, path, "loss_count", err, "0 <= loss_count <= step = %ld", st->step);
    if (st->target_step < -1 || st->target_step > st->step)
        return out_of_range(f, path, "target_step", err, "-1 (not reached) or 0 <= target_step <= step = %ld", st->step);
    if (st->skipped_steps < 0 || st->skipped_in_a_row < 0 || st->skipped_in_a_row > st->skipped_steps)
        return al_fail(err, 1, "%s: inconsistent skipped-step counts in the training state (skipped_steps %ld, "
                       "skipped_in_a_row %ld)", path, st->skipped_steps, st->skipped_in_a_row);
    if (st->skipped_steps > st->step)
        return out_of_range(f, path, "skipped_steps", err, "0 <= skipped_steps <= step = %ld", st->step);
    return 0;
}

/* "sampler" = "N,POS,EPOCH,RNG": the row sampler of a fixed training set (all zero for
 * streaming tasks).  Whether N is this run's training set size is the trainer's
 * check (sampler_set_state); here, what holds for any sampler. */
static int read_sampler(const StFile *f, const char *path, SamplerState *s, AlError *err) {
    const char *v, *p;
    if (meta_text(f, "sampler", path, &v, err)) return err->code;
    long x[3];
    int ok = 1;
    p = v;
    for (int i = 0; i < 3 && ok; i++) {
        const char *comma = strchr(p, ',');
        ok = comma && parse_long_span(p, (size_t)(comma - p), &x[i]);
        p = ok ? comma + 1 : p;
    }
    if (!ok || !parse_rng(p, &s->epoch_rng))
        return al_fail(err, 1, "%s: malformed training-state metadata 'sampler' = '%.200s' (expected N,POSITION,EPOCH,"
                       "RNG: three decimal integers and four 16-digit hex words)", path, v);
    if (x[0] < 0 || x[0] > INT_MAX || x[1] < 0 || x[1] > x[0] || x[2] < 0)
        return al_fail(err, 1, "%s: sampler state out of range (epoch %ld, position %ld of %ld) in training-state "
                       "metadata 'sampler' (expected 0 <= position <= n <= %d and epoch >= 0)", path, x[2], x[1], x[0],
                       INT_MAX);
    s->n = (int)x[0];
    s->pos = (int)x[1];
    s->epoch = x[2];
    return 0;
}

static int read_scalars(const StFile *f, const char *path, long max_step, TrainState *st, AlError *err) {
    const char *v;
    for (size_t i = 0; i < sizeof STATE_FIELDS / sizeof STATE_FIELDS[0]; i++) {
        const MetaField *m = &STATE_FIELDS[i];
        if (m->optional && !st_meta(f, m->key)) continue;
        if (meta_text(f, m->key, path, &v, err)) return err->code;
        if (!parse_field(v, m, st))
            return al_fail(err, 1, "%s: malformed training-state metadata '%s' = '%.200s' (expected %s)", path, m->key, v,
                           KIND_EXPECTED[m->kind]);
    }
    int rc = check_counts(f, path, st, max_step, err);
    if (!rc) rc = check_doubles(f, path, st, err);
    return rc ? rc : read_sampler(f, path, &st->sampler, err);
}

/* ---- loading: tensors ---------------------------------------------------------------- */

/* "blocks.0.attn.wq.weight[45]": the parameter that flat element i belongs to. */
static void param_at(const ParamStore *ps, long i, char *out, size_t n) {
    for (int k = 0; k < ps->n; k++) {
        const Param *p = &ps->p[k];
        if (i >= p->offset && i < p->offset + p->t.n) {
            snprintf(out, n, "%s[%ld]", p->name, i - p->offset);
            return;
        }
    }
    snprintf(out, n, "?");
}

/* Parameters and Adam's first moment must be finite; its second moment, an average
 * of squared gradients, must not be NaN or negative.  It may be +inf: a gradient
 * component above ~1e19 squares to inf in float while the norm (in double) stays
 * finite, and Adam then makes that element's steps 0 — the trainer saves that, so it
 * is not damage.  Anything else is: the trainer never saves it, and left in, it would
 * surface steps later as a NaN loss that looks like a too-high learning rate. */
static int check_values(const char *path, const char *tensor, const float *x, const ParamStore *ps, int second_moment,
                        AlError *err) {
    for (long i = 0; i < ps->total; i++) {
        int bad = second_moment ? (isnan(x[i]) || x[i] < 0) : !isfinite(x[i]);
        if (!bad) continue;
        char where[PARAM_NAME_MAX + 32];
        param_at(ps, i, where, sizeof where);
        if (isnan(x[i]) || isinf(x[i]))
            return al_fail(err, 1, "%s: tensor '%s' element %ld (%s) is not finite (%g): the checkpoint is damaged", path,
                           tensor, i, where, (double)x[i]);
        return al_fail(err, 1, "%s: tensor '%s' element %ld (%s) is negative (%g), but Adam's second moment is an average "
                       "of squares: the checkpoint is damaged", path, tensor, i, where, (double)x[i]);
    }
    return 0;
}

static int read_state_tensors(const StFile *f, const char *path, ParamStore *ps, AlError *err) {
    int64_t shape[1] = { ps->total };
    struct { const char *name; float *dst; } t[3] = { { "params", ps->data }, { "adam.m", ps->m }, { "adam.v", ps->v } };
    for (int i = 0; i < 3; i++) {
        int rc = st_read_f32(f, t[i].name, 1, shape, t[i].dst, err);
        if (!rc) rc = check_values(path, t[i].name, t[i].dst, ps, i == 2, err);
        if (rc) return rc;
    }
    return 0;
}

int checkpoint_resume(const char *dir, Model *m, TrainState *st, const char *config_json, AlError *err) {
    char path[AL_PATH_MAX];
    if (path_in(path, sizeof path, dir, STATE_FILE, err)) return err->code;
    StFile *f = st_open(path, err);
    if (!f) {
        al_error_prefix(err, "cannot resume (start without --resume for a new run)");
        return err->code;
    }
    int rc = 0;
    long steps_saved, steps_now;
    const char *format = st_meta(f, "format");
    if (!format || strcmp(format, STATE_FORMAT))
        rc = al_fail(err, 1, "%s: not an attnlab training state (format '%s', expected '%s')", path,
                     format ? format : "none", STATE_FORMAT);
    else if (!(rc = check_config(st_meta(f, "config"), config_json, path, &steps_saved, &steps_now, err)) &&
             !(rc = read_scalars(f, path, steps_saved, st, err)) &&
             !(rc = read_state_tensors(f, path, &m->params, err)) && st->step > steps_now)
        rc = al_fail(err, 2, "%s: cannot resume: the checkpoint is at step %ld, past train.steps = %ld of this config "
                     "(a run cannot go back: give train.steps >= %ld, or start a new run folder)", path, st->step,
                     steps_now, st->step);
    st_close(f);
    return rc;
}

/* ---- the model file ------------------------------------------------------------------ */

/* An attnlab model file's "step": an integer in [0, the train.steps of its config]. */
static int check_model_step(const StFile *f, const char *path, AlError *err) {
    const char *format = st_meta(f, "format"), *v = st_meta(f, "step");
    long step;
    if (!format || strcmp(format, MODEL_FORMAT) || !v) return 0;
    if (!parse_long(v, &step))
        return al_fail(err, 1, "%s: malformed model metadata 'step' = '%.200s' (expected %s)", path, v,
                       KIND_EXPECTED[META_LONG]);
    const char *config = st_meta(f, "config");
    cJSON *c = config ? cJSON_Parse(config) : NULL;
    long max_step = config_steps(c);
    cJSON_Delete(c);
    if (step < 0 || (max_step >= 0 && step > max_step)) {
        char upper[64] = "";
        if (max_step >= 0) snprintf(upper, sizeof upper, " <= %ld, the train.steps of its config", max_step);
        return al_fail(err, 1, "%s: model metadata 'step' = '%.80s' is out of range (expected 0 <= step%s)", path, v,
                       upper);
    }
    return 0;
}

int checkpoint_load_model(const char *path, Model *m, AlError *err) {
    StFile *f = st_open(path, err);
    if (!f) return err->code;
    int rc = check_model_step(f, path, err);
    const ParamStore *ps = &m->params;
    for (int i = 0; i < ps->n && !rc; i++) {
        const Tensor *x = &ps->p[i].t;
        int64_t shape[AD_MAX_DIMS];
        for (int d = 0; d < x->ndim; d++) shape[d] = x->shape[d];
        rc = st_read_f32(f, ps->p[i].name, x->ndim, shape, x->data, err);
        for (long k = 0; !rc && k < x->n; k++)
            if (!isfinite(x->data[k]))
                rc = al_fail(err, 1, "%s: tensor '%s' element %ld is not finite (%g): the checkpoint is damaged", path,
                             ps->p[i].name, k, (double)x->data[k]);
    }
    st_close(f);
    return rc;
}
