/* inspect.c — `./train inspect RUN_DIR [--example N | --data FILE.jsonl] [--out DIR]`
 * (cli/use.h).  Runs one example at a time through model_forward with
 * Model.capture set (nn/model.h), and writes into DIR:
 *   exE_layerL_headH.svg   the attention map of example E, layer L, head H: queries
 *                          down, keys across, tokens as labels, colour 0..1;
 *   attention.safetensors  "exE.tokens" I32 (T) and "exE.layerL" F32 (H, T, T), row
 *                          i of head h = query i's weights over the keys;
 *   predictions.tsv        per example and position: token, target, the argmax
 *                          class and its probability, the target's probability.
 * With --anna CELL (inspect_anna.h), for each layer L the cell distils, also
 *   exE_layerL_headH_anna.svg   the collision weights ANNA used on the same input;
 *   "exE.layerL.anna_counts" F32 (H, T, T): in how many of the ℓ tables key j shared
 *                          query i's bucket; "exE.layerL.anna_weights": each row
 *                          divided by its total (all zero where nothing collided). */
#include "attnlab/cli/use.h"
#include "attnlab/io/safetensors.h"
#include "attnlab/report/svg.h"
#include "attnlab/util/strbuf.h"
#include "attnlab/io/atomic_file.h"
#include "inspect_anna.h"
#include "use_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INSPECT_MAX_EXAMPLES 16
#define LABEL_MAX 24
#define NAME_MAX_ 48   /* an array's name: "exE.layerL.anna_weights" */

static const char *const MECHANISM[] = { [ATTN_SOFTMAX] = "softmax", [ATTN_LINEAR] = "linear",
                                         [ATTN_SPARSE] = "sparse" };

/* The maps of one example: layer l, head h at maps + ((l·H + h)·T·T). */
typedef struct Maps {
    int T, H;
    float *maps;
} Maps;

static void on_map(void *ctx, int layer, int b, int head, int T, const double *w) {
    Maps *m = ctx;
    (void)b;   /* one example per forward */
    float *dst = m->maps + ((size_t)layer * m->H + head) * T * T;
    for (long i = 0; i < (long)T * T; i++) dst[i] = (float)w[i];
}

/* The tokens' labels "i:name" (position and token), for the axes. */
static char (*token_labels(const LoadedRun *r, const int *tok, int T))[LABEL_MAX] {
    char (*labels)[LABEL_MAX] = calloc((size_t)T, LABEL_MAX), buf[16];
    for (int i = 0; i < T; i++) snprintf(labels[i], LABEL_MAX, "%d:%s", i, use_token_label(r, tok[i], buf, sizeof buf));
    return labels;
}

/* One heatmap: ex E, layer l, head h, file suffix ("" or "_anna"), colour 0..1. */
static int write_svg(const char *dir, int ex, int l, int h, const char *suffix, const char *what, const char **lp,
                     int T, const float *w, double *values, AlError *err) {
    char title[200], path[AL_PATH_MAX];
    for (long i = 0; i < (long)T * T; i++) values[i] = w[i];
    snprintf(title, sizeof title, "example %d: layer %d, head %d (%s)", ex, l, h, what);
    SvgHeatmap hm = { title, "key (position:token)", "query (position:token)", T, T, lp, lp, values, 0,
                      T <= 16 ? "%.2f" : "", 1, 0.0, 1.0, "weight" };
    return al_path_fmt(path, sizeof path, err, "%s/ex%d_layer%d_head%d%s.svg", dir, ex, l, h, suffix) ||
           svg_heatmap(path, &hm, err);
}

/* The softmax maps of every layer, then (ia not NULL) the collision weights of the
 * cell's layers, at anna (cell layer i, head h at ((i·H + h)·T·T)). */
static int write_svgs(const LoadedRun *r, const char *dir, int ex, const int *tok, const Maps *mp,
                      const InspectAnna *ia, const float *anna, AlError *err) {
    int T = mp->T, L = r->model->cfg.n_layers, rc = 0;
    char (*labels)[LABEL_MAX] = token_labels(r, tok, T), what[96];
    const char **lp = malloc((size_t)T * sizeof *lp);
    double *values = malloc((size_t)T * T * sizeof *values);
    for (int i = 0; i < T; i++) lp[i] = labels[i];
    snprintf(what, sizeof what, "%s attention", MECHANISM[r->model->cfg.attention.type]);
    for (int l = 0; l < L && !rc; l++)
        for (int h = 0; h < mp->H && !rc; h++)
            rc = write_svg(dir, ex, l, h, "", what, lp, T, mp->maps + ((size_t)l * mp->H + h) * T * T, values, err);
    for (int i = 0; ia && i < ia->cell.n && !rc; i++)
        for (int h = 0; h < mp->H && !rc; h++) {
            snprintf(what, sizeof what, "ANNA collisions, l=%d z=%d, draw %d", ia->cell.tables[i], ia->cell.funcs[i],
                     ia->draw);
            rc = write_svg(dir, ex, ia->cell.layer[i], h, "_anna", what, lp, T,
                           anna + ((size_t)i * mp->H + h) * T * T, values, err);
        }
    free(values);
    free(lp);
    free(labels);
    return rc ? err->code : 0;
}

/* Softmax of one logit row, in double; returns the argmax. */
static int probabilities(const float *logits, int C, double *p) {
    int best = 0;
    double sum = 0;
    for (int c = 1; c < C; c++)
        if (logits[c] > logits[best]) best = c;
    for (int c = 0; c < C; c++) sum += p[c] = exp((double)logits[c] - logits[best]);
    for (int c = 0; c < C; c++) p[c] /= sum;
    return best;
}

static void add_predictions(StrBuf *tsv, const LoadedRun *r, int ex, const int *tok, const int *tgt, int T,
                            const Tensor *logits) {
    int C = r->model->n_classes;
    double *p = malloc((size_t)C * sizeof *p);
    char a[16], b[16], c[16];
    for (int i = 0; i < T; i++) {
        int best = probabilities(logits->data + (size_t)i * C, C, p);
        strbuf_printf(tsv, "%d\t%d\t%s\t%s\t%s\t%.6f\t", ex, i, use_token_label(r, tok[i], a, sizeof a),
                      tgt[i] >= 0 ? use_token_label(r, tgt[i], b, sizeof b) : "-",
                      use_token_label(r, best, c, sizeof c), p[best]);
        /* A multi-label "every class valid" target (code C, data/dataset.h) has no one probability. */
        if (tgt[i] >= 0 && tgt[i] < C) strbuf_printf(tsv, "%.6f\t%d\n", p[tgt[i]], best == tgt[i]);
        else strbuf_printf(tsv, "-\t-\n");
    }
    free(p);
}

typedef struct Inspect {
    const LoadedRun *r;
    const char *dir;
    StrBuf tsv;
    StTensor *st;     /* 1 + n_layers per example … */
    char (*names)[NAME_MAX_];   /* … and their names */
    int n_st;
    void **owned;     /* buffers the tensors point at */
    int n_owned;
    InspectAnna *anna;   /* --anna, or NULL */
} Inspect;

/* One forward of tok (1 × T) without gradients, with whatever hooks the model has
 * set; with tgt, its predictions go into the TSV. */
static void forward(Inspect *in, const int *tok, int T, const int *tgt, int ex) {
    Arena arena;
    Tape tape;
    arena_init(&arena, 1u << 20);
    tape_init(&tape, &arena);
    tape.grad_enabled = 0;
    tape.training = 0;
    Tensor *logits = model_forward(in->r->model, &tape, tok, 1, T);
    if (tgt) add_predictions(&in->tsv, in->r, ex, tok, tgt, T, logits);
    tape_free(&tape);
    arena_free(&arena);
}

/* The ANNA forward of the same tokens: its counts and weights become arrays of the
 * file; *weights (kept by in) is what the SVGs draw. */
static void add_anna(Inspect *in, int ex, const int *tok, int T, float **weights) {
    InspectAnna *ia = in->anna;
    int H = in->r->model->cfg.n_heads;
    float *counts;
    inspect_anna_begin(ia, in->r->model, T, &counts, weights);
    forward(in, tok, T, NULL, ex);
    inspect_anna_end(ia, in->r->model);
    for (int i = 0; i < ia->cell.n; i++)
        for (int kind = 0; kind < 2; kind++, in->n_st++) {
            snprintf(in->names[in->n_st], NAME_MAX_, "ex%d.layer%d.anna_%s", ex, ia->cell.layer[i], kind ? "weights" : "counts");
            in->st[in->n_st] = (StTensor){ in->names[in->n_st], 3, { H, T, T },
                                           (kind ? *weights : counts) + (size_t)i * H * T * T, ST_F32 };
        }
    in->owned[in->n_owned++] = counts;
    in->owned[in->n_owned++] = *weights;
}

/* Runs example `row` of d with the capture on; SVGs now, arrays kept for the file. */
static int inspect_row(Inspect *in, const Dataset *d, int row, int ex, AlError *err) {
    const LoadedRun *r = in->r;
    Model *m = r->model;
    int T = m->cfg.attention.causal ? use_row_len(d, row) : d->seq_len, H = m->cfg.n_heads, L = m->cfg.n_layers;
    Maps mp = { T, H, calloc((size_t)L * H * T * T, sizeof(float)) };
    int *tok = malloc((size_t)T * sizeof(int));
    memcpy(tok, dataset_tokens(d, row), (size_t)T * sizeof(int));
    ModelCapture cap = { on_map, &mp };
    m->capture = &cap;
    forward(in, tok, T, dataset_targets(d, row), ex);
    m->capture = NULL;
    snprintf(in->names[in->n_st], NAME_MAX_, "ex%d.tokens", ex);
    in->st[in->n_st] = (StTensor){ in->names[in->n_st], 1, { T }, tok, ST_I32 };
    in->n_st++;
    for (int l = 0; l < L; l++, in->n_st++) {
        snprintf(in->names[in->n_st], NAME_MAX_, "ex%d.layer%d", ex, l);
        in->st[in->n_st] = (StTensor){ in->names[in->n_st], 3, { H, T, T }, mp.maps + (size_t)l * H * T * T, ST_F32 };
    }
    in->owned[in->n_owned++] = tok;
    in->owned[in->n_owned++] = mp.maps;
    float *weights = NULL;
    if (in->anna) add_anna(in, ex, tok, T, &weights);
    return write_svgs(r, in->dir, ex, tok, &mp, in->anna, weights, err);
}

static int write_files(Inspect *in, AlError *err) {
    char path[AL_PATH_MAX], max_len[16];
    /* max_len: what python/attnlab_torch.py needs to rebuild sparse attention's "auto" block. */
    snprintf(max_len, sizeof max_len, "%d", in->r->model->max_len);
    StMeta meta[] = { { "max_len", max_len }, { "run", in->r->dir } };
    if (al_path_fmt(path, sizeof path, err, "%s/attention.safetensors", in->dir) ||
        st_write(path, in->st, in->n_st, meta, 2, err))
        return err->code;
    if (al_path_fmt(path, sizeof path, err, "%s/predictions.tsv", in->dir)) return err->code;
    return write_text_atomic(path, in->tsv.s, err);
}

/* The rows to inspect: --example N of the test set (default 0), or the file's first 16. */
static int choose_rows(const UseArgs *a, const LoadedRun *r, const Dataset *d, int *first, int *n, AlError *err) {
    *first = a->example > 0 ? a->example : 0;
    if (*first >= d->n)
        return al_fail(err, 2, "inspect: --example %d, but the test set of %s has %d rows (0..%d)", *first,
                       r->config_path, d->n, d->n - 1);
    *n = a->data ? (d->n < INSPECT_MAX_EXAMPLES ? d->n : INSPECT_MAX_EXAMPLES) : 1;
    if (a->data && d->n > INSPECT_MAX_EXAMPLES)
        printf("inspect: %s has %d rows; inspecting the first %d\n", a->data, d->n, INSPECT_MAX_EXAMPLES);
    return 0;
}

static int inspect_all(const UseArgs *a, const LoadedRun *r, const Dataset *d, const char *dir, InspectAnna *ia,
                       AlError *err) {
    int first = 0, n = 0;
    if (r->model->cfg.type != MODEL_TRANSFORMER)
        return al_fail(err, 2, "inspect: %s is a%s %s model: it has no attention to show", r->config_path,
                       r->model->cfg.type == MODEL_LSTM ? "n" : "", model_type_name(r->model->cfg.type));
    if (choose_rows(a, r, d, &first, &n, err) || al_mkdir_p(dir, err)) return err->code;
    int n_anna = ia ? ia->cell.n : 0;
    size_t n_st = (size_t)n * (1 + r->model->cfg.n_layers + 2 * n_anna);
    Inspect in = { r, dir, { 0 }, calloc(n_st, sizeof(StTensor)), calloc(n_st, NAME_MAX_), 0,
                   calloc((size_t)n * 4, sizeof(void *)), 0, ia };
    strbuf_printf(&in.tsv, "example\tposition\ttoken\ttarget\tpredicted\tp_predicted\tp_target\tright\n");
    int rc = 0;
    for (int e = 0; e < n && !rc; e++) rc = inspect_row(&in, d, first + e, a->data ? e : first, err);
    if (!rc) rc = write_files(&in, err);
    if (!rc)
        printf("wrote %s: attention.safetensors, predictions.tsv and %d SVG maps (%d example%s x %d layers x %d "
               "heads%s)\n", dir, n * (r->model->cfg.n_layers + n_anna) * r->model->cfg.n_heads, n, n == 1 ? "" : "s",
               r->model->cfg.n_layers, r->model->cfg.n_heads, ia ? ", and as many per ANNA layer" : "");
    for (int i = 0; i < in.n_owned; i++) free(in.owned[i]);
    free(in.owned);
    free(in.names);
    free(in.st);
    free(in.tsv.s);
    return rc;
}

int cli_inspect(int argc, char **argv, AlError *err) {
    UseRun u;
    char dir[AL_PATH_MAX];
    InspectAnna ia;
    int anna = 0, rc = use_start(&u, argc, argv, "--example --data --out --anna --grid --draw", err);
    if (!rc) rc = u.a.out ? al_path_fmt(dir, sizeof dir, err, "%s", u.a.out)
                          : al_path_fmt(dir, sizeof dir, err, "%s/inspect", u.a.dir);
    if (!rc && u.a.anna && u.r.model->cfg.type == MODEL_TRANSFORMER) rc = inspect_anna_open(&ia, &u.a, &u.r, err), anna = 1;
    if (!rc) rc = inspect_all(&u.a, &u.r, u.d, dir, anna ? &ia : NULL, err);
    if (anna) inspect_anna_close(&ia);
    use_end(&u);
    return rc ? err->code : 0;
}
