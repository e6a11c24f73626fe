/* inspect_anna.c — see inspect_anna.h. */
#include "inspect_anna.h"
#include "attnlab/anna/anna.h"
#include "attnlab/anna/ops_anna.h"
#include "attnlab/util/fsutil.h"
#include "attnlab/util/intlist.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CELL_HINT "expected \"best\" or one \"L,Z\" (tables, functions) per distilled layer, e.g. \"8,1;4,2\""

/* Model.anna's function has no context argument (nn/model.h); one inspection runs
 * at a time, so the recorder finds its InspectAnna here. */
static InspectAnna *recording;

/* The cell index of the layer whose heads use per_head. */
static int cell_index(const InspectAnna *ia, const Lsh *per_head) {
    for (int i = 0; i < ia->cell.n; i++)
        if (ia->h.per_layer[ia->cell.layer[i]] == per_head) return i;
    return -1;
}

/* ad_anna_attention, after writing the layer's collision maps from the same q, k. */
static Tensor *record_anna(Tape *t, Tensor *q, Tensor *k, Tensor *v, const Lsh *per_head, int causal) {
    InspectAnna *ia = recording;
    int i = cell_index(ia, per_head), H = q->shape[1], T = q->shape[2], D = q->shape[3];
    AL_ASSERT(i >= 0 && q->shape[0] == 1 && H == ia->H && T == ia->T);
    int *c = al_malloc((size_t)T * T * sizeof *c);
    for (int h = 0; h < H; h++) {
        anna_collision_counts(&per_head[h], q->data + (long)h * T * D, k->data + (long)h * T * D, T, D, causal, c);
        float *cnt = ia->counts + ((size_t)i * H + h) * T * T, *w = ia->weights + ((size_t)i * H + h) * T * T;
        for (int r = 0; r < T; r++) {
            long total = 0;
            for (int j = 0; j < T; j++) total += c[r * T + j];
            for (int j = 0; j < T; j++) {
                cnt[r * T + j] = (float)c[r * T + j];
                w[r * T + j] = total ? (float)((double)c[r * T + j] / (double)total) : 0.0f;
            }
        }
    }
    free(c);
    return ad_anna_attention(t, q, k, v, per_head, causal);
}

/* The distilled layers of the run's config (distill.layers). */
static int config_layers(const LoadedRun *r, AnnaCell *c, AlError *err) {
    const char *spec = r->cfg.distill.layers;
    int L = r->model->cfg.n_layers;
    char why[160];
    if (strcmp(spec, "all")) {
        if (intlist_parse(spec, 0, L - 1, c->layer, DISTILL_MAX_LAYERS, &c->n, why, sizeof why))
            return al_fail(err, 2, "inspect: distill.layers \"%s\" of %s: %s", spec, r->config_path, why);
        return 0;
    }
    if (L > DISTILL_MAX_LAYERS)
        return al_fail(err, 2, "inspect: distill.layers \"all\" of %s selects %d layers, more than %d", r->config_path,
                       L, DISTILL_MAX_LAYERS);
    c->n = L;
    for (int l = 0; l < L; l++) c->layer[l] = l;
    return 0;
}

/* "L,Z;L,Z…": one (ℓ, z) per distilled layer, in distill.layers' order. */
static int parse_cell(const char *spec, const LoadedRun *r, AnnaCell *c, AlError *err) {
    if (config_layers(r, c, err)) return err->code;
    const char *p = spec;
    for (int i = 0; i < c->n; i++) {
        int used = 0;
        if (sscanf(p, "%d,%d%n", &c->tables[i], &c->funcs[i], &used) != 2 || c->tables[i] < 1 ||
            c->tables[i] > 4096 || c->funcs[i] < 1 || c->funcs[i] > 64)
            return al_fail(err, 2, "inspect: --anna \"%s\" for %s: %s, with L in 1..4096 and Z in 1..64", spec,
                           r->config_path, CELL_HINT);
        p += used;
        if (*p != (i + 1 < c->n ? ';' : '\0'))
            return al_fail(err, 2, "inspect: --anna \"%s\" for %s: %s; it distils %d layer%s (distill.layers \"%s\")",
                           spec, r->config_path, CELL_HINT, c->n, c->n == 1 ? "" : "s", r->cfg.distill.layers);
        p += *p == ';';
    }
    return 0;
}

/* The grid's hashing (family, last dimension, seed, draws per cell) from
 * DIR/anna_summary.json into d, and its best_cell into c when best is set.  A
 * missing file is an error only when the summary is needed (best, or --grid
 * given); otherwise the run's config describes the draws.  path: where the
 * hashing was read (the summary, or the run's config).  Summaries written
 * by earlier versions carry no seed: the config's is used. */
static int read_summary(const char *dir, int required, int best, const LoadedRun *r, AnnaCell *c, CfgDistill *d,
                        char *path, AlError *err) {
    if (al_path_fmt(path, AL_PATH_MAX, err, "%s/anna_summary.json", dir)) return err->code;
    char *text = al_read_file(path, NULL);
    if (!text && !required) snprintf(path, AL_PATH_MAX, "%s", r->config_path);
    if (!text && !required) return 0;
    if (!text)
        return al_fail(err, 2, "inspect: the ANNA cells of %s: %s cannot be opened (--anna best and --grid read "
                       "the summary ./train distill writes; run it first, or give an explicit cell: %s)",
                       r->config_path, path, CELL_HINT);
    cJSON *j = cJSON_Parse(text), *e;
    cJSON *fam = cJSON_GetObjectItem(j, "family"), *last = cJSON_GetObjectItem(j, "last_dim");
    cJSON *runs = cJSON_GetObjectItem(j, "runs"), *seed = cJSON_GetObjectItem(j, "seed");
    int ok = cJSON_IsString(fam) && cJSON_IsNumber(last) && cJSON_IsNumber(runs) && runs->valueint >= 1 &&
             (!seed || cJSON_IsNumber(seed));
    if (ok) {
        d->family = strcmp(fam->valuestring, "crosspolytope") ? DISTILL_HYPERPLANE : DISTILL_CROSSPOLYTOPE;
        d->last_dim = last->valueint;
        d->runs = runs->valueint;
        if (seed) d->seed = seed->valueint;
    }
    cJSON *list = cJSON_GetObjectItem(j, "best_cell");
    if (best) {
        memset(c, 0, sizeof *c);
        ok = ok && cJSON_IsArray(list) && cJSON_GetArraySize(list) >= 1 && cJSON_GetArraySize(list) <= DISTILL_MAX_LAYERS;
        if (!ok) list = NULL;
        cJSON_ArrayForEach(e, list) {
            cJSON *l = cJSON_GetObjectItem(e, "layer"), *t = cJSON_GetObjectItem(e, "tables"), *z = cJSON_GetObjectItem(e, "funcs");
            ok = ok && cJSON_IsNumber(l) && cJSON_IsNumber(t) && cJSON_IsNumber(z) && l->valueint >= 0 &&
                 l->valueint < r->model->cfg.n_layers && t->valueint >= 1 && z->valueint >= 1 && z->valueint <= 64;
            if (ok) c->layer[c->n] = l->valueint, c->tables[c->n] = t->valueint, c->funcs[c->n++] = z->valueint;
        }
    }
    cJSON_Delete(j);
    free(text);
    return ok ? 0 : al_fail(err, 2, "inspect: %s is not a distillation summary for the model of %s (expected "
                            "family, last_dim, runs%s, as ./train distill writes)", path, r->config_path,
                            best ? " and a valid best_cell" : "");
}

int inspect_anna_open(InspectAnna *ia, const UseArgs *a, const LoadedRun *r, AlError *err) {
    memset(ia, 0, sizeof *ia);
    Config cfg = r->cfg;   /* a copy: the grid's hashing may differ from the config's */
    int best = !strcmp(a->anna, "best");
    const char *dir = a->grid ? a->grid : r->dir;   /* whose anna_summary.json describes the draws */
    char source[AL_PATH_MAX];
    int rc = read_summary(dir, best || a->grid, best, r, &ia->cell, &cfg.distill, source, err);
    if (!rc && !best) rc = parse_cell(a->anna, r, &ia->cell, err);
    if (!rc && a->draw >= cfg.distill.runs)
        rc = al_fail(err, 2, "inspect: --draw %d, but the grid draws %d hash set%s per cell (distill.runs of %s), "
                     "so K is 0..%d", a->draw, cfg.distill.runs, cfg.distill.runs == 1 ? "" : "s", source,
                     cfg.distill.runs - 1);
    if (rc) return rc;
    ia->draw = a->draw;
    rc = distill_draw_hashes(&ia->h, &cfg, r->model, &ia->cell, a->draw, err);
    ia->hook = (ModelAnna){ record_anna, ia->h.per_layer };
    return rc;
}

void inspect_anna_begin(InspectAnna *ia, Model *m, int T, float **counts, float **weights) {
    ia->T = T;
    ia->H = m->cfg.n_heads;
    size_t n = (size_t)ia->cell.n * ia->H * T * T;
    *counts = ia->counts = al_calloc(n, sizeof(float));
    *weights = ia->weights = al_calloc(n, sizeof(float));
    recording = ia;
    m->anna = &ia->hook;
}

void inspect_anna_end(InspectAnna *ia, Model *m) {
    (void)ia;
    m->anna = NULL;
    recording = NULL;
}

void inspect_anna_close(InspectAnna *ia) {
    anna_hashes_free(&ia->h);
}
