/* finetune.c — see finetune.h.  One cell: measure, train, measure again. */
#include "attnlab/anna/finetune.h"
#include "attnlab/io/atomic_file.h"
#include "attnlab/train/progress.h"
#include "attnlab/train/step.h"
#include "attnlab/util/fsutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const PARAMS_NAME[] = { [FINETUNE_EXCEPT_QK] = "except_qk",
                                           [FINETUNE_EXCEPT_ATTENTION] = "except_attention" };
static const char *const HASHES_NAME[] = { [FINETUNE_FIXED] = "fixed", [FINETUNE_REDRAW] = "redraw" };

/* The fine-tuning's hash draw s: its own stream, apart from the grid's draws
 * (distill_cell_seed), so those stay fresh to the fine-tuned model.  Fixed hashes
 * use draw 0 at every step; redrawn ones draw s at step s (1-based). */
static uint64_t train_draw_seed(const CfgDistill *d, long s) {
    Rng r = rng_stream((uint64_t)d->seed, 0x66696e6574756e65ull /* "finetune" */ + (uint64_t)s);
    return rng_u64(&r);
}

/* "8x1", or "8x1+4x2" for several distilled layers: distill.finetune_cells' syntax. */
static void cell_label(const AnnaCell *c, char *buf, size_t n) {
    size_t len = 0;
    for (int i = 0; i < c->n && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%dx%d", i ? "+" : "", c->tables[i], c->funcs[i]);
}

/* frozen[k] = 1 for the parameters that stay: the distilled layers' Q and K (they
 * define the buckets), and V and O too with except_attention. */
static void frozen_params(const Model *m, const AnnaCell *c, CfgFinetuneParams which, unsigned char *frozen) {
    const ParamStore *ps = &m->params;
    memset(frozen, 0, (size_t)ps->n);
    int n_frozen = which == FINETUNE_EXCEPT_QK ? 4 : 8;
    for (int i = 0; i < c->n; i++) {
        const Block *b = &m->blocks[c->layer[i]];
        const Tensor *fz[8] = { b->q.w, b->q.b, b->k.w, b->k.b, b->v.w, b->v.b, b->o.w, b->o.b };
        for (int k = 0; k < ps->n; k++)
            for (int f = 0; f < n_frozen; f++) frozen[k] |= &ps->p[k].t == fz[f];
    }
}

/* The test errors one side of the fine-tuning: the surrogate's, with the
 * fine-tuning's draw 0, and over the grid's draws. */
static int measure(const Config *cfg, Model *m, Tape *t, const Dataset *test, const AnnaCell *c,
                   double *surrogate, double *draw, double *mean, double *std, AlError *err) {
    const int bs = cfg->train.batch_size;
    *surrogate = anna_test_error(m, t, test, NULL, bs);
    AnnaHashes h;
    int rc = anna_hashes_init(&h, m, c, distill_family(&cfg->distill), cfg->distill.last_dim,
                              train_draw_seed(&cfg->distill, 0), err);
    if (!rc) *draw = anna_test_error(m, t, test, &h, bs);
    anna_hashes_free(&h);
    return rc ? rc : distill_cell_error(cfg, m, t, test, c, mean, std, err);
}

/* distill.finetune_steps Adam steps with ANNA in the cell's layers. */
static int train(const Config *cfg, Model *m, Tape *t, const TaskData *td, const AnnaCell *c,
                 const unsigned char *frozen, FinetuneResult *res, AlError *err) {
    const CfgDistill *d = &cfg->distill;
    const long steps = d->finetune_steps, tenth = steps >= 10 ? steps / 10 : 1;
    Sampler s = { 0 };
    Rng stream = rng_stream(cfg->seed, 0x667473747265616dull /* "ftstream" */);
    if (!td->streaming) sampler_init(&s, td->train.n, rng_stream(cfg->seed, 0x667473616d70ull /* "ftsamp" */));
    Batch b;
    batch_alloc(&b, cfg->train.batch_size, td->streaming ? td->gen.max_len : td->train.seq_len);
    ParamStore *ps = &m->params;
    memset(ps->m, 0, (size_t)ps->total * sizeof(float));
    memset(ps->v, 0, (size_t)ps->total * sizeof(float));
    AnnaHashes h = { 0 };
    int rc = 0;
    for (long step = 1; step <= steps && !rc; step++) {
        if (step == 1 || d->finetune_hashes == FINETUNE_REDRAW) {
            anna_hashes_free(&h);
            long draw = d->finetune_hashes == FINETUNE_REDRAW ? step : 0;
            if ((rc = anna_hashes_init(&h, m, c, distill_family(d), d->last_dim, train_draw_seed(d, draw), err))) break;
        }
        step_next_batch(td, &s, &stream, &b);
        m->anna = &h.model_anna;
        double norm, loss = step_gradients(m, t, &b, frozen, &norm);
        m->anna = NULL;
        if (!isfinite(loss) || !isfinite(norm)) {
            char label[128];
            cell_label(c, label, sizeof label);
            rc = al_fail(err, 1, "distill.finetune: cell %s, step %ld: the loss (%g) or the gradient norm (%g) is "
                         "not finite; stopped (lower distill.finetune_lr or set train.grad_clip; model.safetensors "
                         "is untouched)", label, step, loss, norm);
            break;
        }
        step_update(m, &cfg->train, d->finetune_lr, step, norm, frozen);
        if (step <= tenth) res->loss_first += loss / (double)tenth;
        if (step > steps - tenth) res->loss_last += loss / (double)tenth;
    }
    anna_hashes_free(&h);
    batch_free(&b);
    sampler_free(&s);
    return rc;
}

int finetune_cell(const Config *cfg, Model *m, const TaskData *td, const AnnaCell *cell, FinetuneResult *res,
                  AlError *err) {
    memset(res, 0, sizeof *res);
    res->cell = *cell;
    double t0 = progress_now();
    Arena arena;
    arena_init(&arena, 8u << 20);
    Tape tape;
    tape_init(&tape, &arena);
    unsigned char *frozen = al_malloc((size_t)m->params.n);
    frozen_params(m, cell, cfg->distill.finetune_params, frozen);
    int rc = measure(cfg, m, &tape, &td->test, cell, &res->surrogate_before, &res->draw_before, &res->mean_before,
                     &res->std_before, err);
    if (!rc) rc = train(cfg, m, &tape, td, cell, frozen, res, err);
    if (!rc)
        rc = measure(cfg, m, &tape, &td->test, cell, &res->surrogate_after, &res->draw_after, &res->mean_after,
                     &res->std_after, err);
    res->seconds = progress_now() - t0;
    free(frozen);
    tape_free(&tape);
    arena_free(&arena);
    return rc;
}

/* ------------------------------------------------------------------- outputs --- */

static int write_csv(const char *dir, const Config *cfg, const FinetuneResult *res, int n, AlError *err) {
    const CfgDistill *d = &cfg->distill;
    size_t cap = 512 + (size_t)n * (320 + 24 * DISTILL_MAX_LAYERS), len = 0;
    char *text = al_malloc(cap), path[AL_PATH_MAX];
    for (int i = 0; i < res[0].cell.n; i++)
        len += (size_t)snprintf(text + len, cap - len, "layer%d_tables,layer%d_funcs,", res[0].cell.layer[i],
                                res[0].cell.layer[i]);
    len += (size_t)snprintf(text + len, cap - len,
                            "steps,lr,params,hashes,runs,surrogate_error_before,surrogate_error_after,"
                            "draw_error_before,draw_error_after,mean_error_before,std_error_before,"
                            "mean_error_after,std_error_after,train_loss_first,train_loss_last\n");
    for (int c = 0; c < n; c++) {
        const FinetuneResult *r = &res[c];
        for (int i = 0; i < r->cell.n; i++)
            len += (size_t)snprintf(text + len, cap - len, "%d,%d,", r->cell.tables[i], r->cell.funcs[i]);
        len += (size_t)snprintf(text + len, cap - len,
                                "%d,%g,%s,%s,%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f\n",
                                d->finetune_steps, (double)d->finetune_lr, PARAMS_NAME[d->finetune_params],
                                HASHES_NAME[d->finetune_hashes], d->runs, r->surrogate_before, r->surrogate_after,
                                r->draw_before, r->draw_after, r->mean_before, r->std_before, r->mean_after,
                                r->std_after, r->loss_first, r->loss_last);
    }
    int rc = al_path_fmt(path, sizeof path, err, "%s/anna_finetune.csv", dir) ? err->code
                                                                           : write_text_atomic(path, text, err);
    free(text);
    return rc;
}

/* The "finetune" member of anna_summary.json. */
static char *summary_member(const Config *cfg, const FinetuneResult *res, int n, double seconds) {
    const CfgDistill *d = &cfg->distill;
    size_t cap = 512 + (size_t)n * (512 + 64 * DISTILL_MAX_LAYERS), len = 0;
    char *s = al_malloc(cap);
    len += (size_t)snprintf(s + len, cap - len,
                            "\"finetune\": {\"steps\": %d, \"lr\": %g, \"params\": \"%s\", \"hashes\": \"%s\", "
                            "\"seconds\": %.2f, \"cells\": [",
                            d->finetune_steps, (double)d->finetune_lr, PARAMS_NAME[d->finetune_params],
                            HASHES_NAME[d->finetune_hashes], seconds);
    for (int c = 0; c < n; c++) {
        const FinetuneResult *r = &res[c];
        len += (size_t)snprintf(s + len, cap - len, "%s\n    {\"cell\": [", c ? "," : "");
        for (int i = 0; i < r->cell.n; i++)
            len += (size_t)snprintf(s + len, cap - len, "%s{\"layer\": %d, \"tables\": %d, \"funcs\": %d}",
                                    i ? ", " : "", r->cell.layer[i], r->cell.tables[i], r->cell.funcs[i]);
        len += (size_t)snprintf(s + len, cap - len,
                                "], \"mean_error_before\": %.6f, \"std_error_before\": %.6f, "
                                "\"mean_error_after\": %.6f, \"std_error_after\": %.6f, "
                                "\"draw_error_before\": %.6f, \"draw_error_after\": %.6f, "
                                "\"surrogate_error_before\": %.6f, \"surrogate_error_after\": %.6f}",
                                r->mean_before, r->std_before, r->mean_after, r->std_after, r->draw_before,
                                r->draw_after, r->surrogate_before, r->surrogate_after);
    }
    snprintf(s + len, cap - len, "]}");
    return s;
}

int finetune_run(const Config *cfg, Model *m, const TaskData *td, const AnnaCell *cells, int n_cells,
                 const char *dir, int quiet, char **summary_json, AlError *err) {
    ParamStore *ps = &m->params;
    size_t bytes = (size_t)4 * ps->total * sizeof(float);
    float *start = al_malloc(bytes);
    memcpy(start, ps->block, bytes);
    FinetuneResult *res = al_calloc((size_t)n_cells, sizeof *res);
    double t0 = progress_now();
    int rc = 0;
    for (int c = 0; c < n_cells && !rc; c++) {
        rc = finetune_cell(cfg, m, td, &cells[c], &res[c], err);
        memcpy(ps->block, start, bytes);
        if (!rc && !quiet) {
            const FinetuneResult *r = &res[c];
            char label[128];
            cell_label(&cells[c], label, sizeof label);
            printf("distill: fine-tuned %s for %d steps (%.1fs): ANNA test error %.4f ± %.4f -> %.4f ± %.4f over "
                   "%d draws; the fine-tuning's draw %.4f -> %.4f; surrogate %.4f -> %.4f\n",
                   label, cfg->distill.finetune_steps, r->seconds, r->mean_before, r->std_before, r->mean_after,
                   r->std_after, cfg->distill.runs, r->draw_before, r->draw_after, r->surrogate_before,
                   r->surrogate_after);
        }
    }
    if (!rc) rc = write_csv(dir, cfg, res, n_cells, err);
    if (!rc) *summary_json = summary_member(cfg, res, n_cells, progress_now() - t0);
    if (!rc && !quiet) printf("distill: wrote %s/anna_finetune.csv\n", dir);
    free(res);
    free(start);
    return rc;
}
