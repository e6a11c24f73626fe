/* inspect.c — `./train inspect RUN_DIR [--example N | --data FILE.jsonl] [--out DIR]`
 * (cli/use.h).  Runs one example at a time through model_forward with
 * Model.capture set (nn/model.h), and writes into DIR:
 *   exE_layerL_headH.svg   the attention map of example E, layer L, head H: queries
 *                          down, keys across, tokens as labels, colour 0..1;
 *   attention.safetensors  "exE.tokens" I32 (T) and "exE.layerL" F32 (H, T, T), row
 *                          i of head h = query i's weights over the keys;
 *   predictions.tsv        per example and position: token, target, the argmax
 *                          class and its probability, the target's probability. */
#include "attnlab/cli/use.h"
#include "attnlab/io/safetensors.h"
#include "attnlab/report/svg.h"
#include "attnlab/util/strbuf.h"
#include "attnlab/io/atomic_file.h"
#include "use_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INSPECT_MAX_EXAMPLES 16
#define LABEL_MAX 24

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

static int write_svgs(const LoadedRun *r, const char *dir, int ex, const int *tok, const Maps *mp, AlError *err) {
    int T = mp->T, L = r->model->cfg.n_layers, rc = 0;
    char (*labels)[LABEL_MAX] = token_labels(r, tok, T);
    const char **lp = malloc((size_t)T * sizeof *lp);
    double *values = malloc((size_t)T * T * sizeof *values);
    for (int i = 0; i < T; i++) lp[i] = labels[i];
    for (int l = 0; l < L && !rc; l++)
        for (int h = 0; h < mp->H && !rc; h++) {
            const float *w = mp->maps + ((size_t)l * mp->H + h) * T * T;
            for (long i = 0; i < (long)T * T; i++) values[i] = w[i];
            char title[96], path[AL_PATH_MAX];
            snprintf(title, sizeof title, "example %d: layer %d, head %d (%s attention)", ex, l, h,
                     MECHANISM[r->model->cfg.attention.type]);
            SvgHeatmap hm = { title, "key (position:token)", "query (position:token)", T, T, lp, lp, values, 0,
                              T <= 16 ? "%.2f" : "", 1, 0.0, 1.0, "weight" };
            rc = al_path_fmt(path, sizeof path, err, "%s/ex%d_layer%d_head%d.svg", dir, ex, l, h) ||
                 svg_heatmap(path, &hm, err);
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
        if (tgt[i] >= 0) strbuf_printf(tsv, "%.6f\t%d\n", p[tgt[i]], best == tgt[i]);
        else strbuf_printf(tsv, "-\t-\n");
    }
    free(p);
}

typedef struct Inspect {
    const LoadedRun *r;
    const char *dir;
    StrBuf tsv;
    StTensor *st;     /* 1 + n_layers per example … */
    char (*names)[32];   /* … and their names */
    int n_st;
    void **owned;     /* buffers the tensors point at */
    int n_owned;
} Inspect;

/* Runs example `row` of d with the capture on; SVGs now, arrays kept for the file. */
static int inspect_row(Inspect *in, const Dataset *d, int row, int ex, AlError *err) {
    const LoadedRun *r = in->r;
    Model *m = r->model;
    int T = m->cfg.attention.causal ? use_row_len(d, row) : d->seq_len, H = m->cfg.n_heads, L = m->cfg.n_layers;
    Maps mp = { T, H, calloc((size_t)L * H * T * T, sizeof(float)) };
    int *tok = malloc((size_t)T * sizeof(int));
    memcpy(tok, dataset_tokens(d, row), (size_t)T * sizeof(int));
    ModelCapture cap = { on_map, &mp };
    Arena arena;
    Tape tape;
    arena_init(&arena, 1u << 20);
    tape_init(&tape, &arena);
    tape.grad_enabled = 0;
    tape.training = 0;
    m->capture = &cap;
    Tensor *logits = model_forward(m, &tape, tok, 1, T);
    m->capture = NULL;
    add_predictions(&in->tsv, r, ex, tok, dataset_targets(d, row), T, logits);
    tape_free(&tape);
    arena_free(&arena);
    snprintf(in->names[in->n_st], 32, "ex%d.tokens", ex);
    in->st[in->n_st] = (StTensor){ in->names[in->n_st], 1, { T }, tok, ST_I32 };
    in->n_st++;
    for (int l = 0; l < L; l++, in->n_st++) {
        snprintf(in->names[in->n_st], 32, "ex%d.layer%d", ex, l);
        in->st[in->n_st] = (StTensor){ in->names[in->n_st], 3, { H, T, T }, mp.maps + (size_t)l * H * T * T, ST_F32 };
    }
    in->owned[in->n_owned++] = tok;
    in->owned[in->n_owned++] = mp.maps;
    return write_svgs(r, in->dir, ex, tok, &mp, err);
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

static int inspect_all(const UseArgs *a, const LoadedRun *r, const Dataset *d, const char *dir, AlError *err) {
    int first, n;
    if (r->model->cfg.type == MODEL_LSTM)
        return al_fail(err, 2, "inspect: %s is an LSTM: it has no attention to show", r->config_path);
    if (choose_rows(a, r, d, &first, &n, err) || al_mkdir_p(dir, err)) return err->code;
    size_t n_st = (size_t)n * (1 + r->model->cfg.n_layers);
    Inspect in = { r, dir, { 0 }, calloc(n_st, sizeof(StTensor)), calloc(n_st, 32), 0,
                   calloc((size_t)n * 2, sizeof(void *)), 0 };
    strbuf_printf(&in.tsv, "example\tposition\ttoken\ttarget\tpredicted\tp_predicted\tp_target\tright\n");
    int rc = 0;
    for (int e = 0; e < n && !rc; e++) rc = inspect_row(&in, d, first + e, a->data ? e : first, err);
    if (!rc) rc = write_files(&in, err);
    if (!rc)
        printf("wrote %s: attention.safetensors, predictions.tsv and %d SVG maps (%d example%s x %d layers x %d "
               "heads)\n", dir, n * r->model->cfg.n_layers * r->model->cfg.n_heads, n, n == 1 ? "" : "s",
               r->model->cfg.n_layers, r->model->cfg.n_heads);
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
    int rc = use_start(&u, argc, argv, "--example --data --out", err);
    if (!rc) rc = u.a.out ? al_path_fmt(dir, sizeof dir, err, "%s", u.a.out)
                          : al_path_fmt(dir, sizeof dir, err, "%s/inspect", u.a.dir);
    if (!rc) rc = inspect_all(&u.a, &u.r, u.d, dir, err);
    use_end(&u);
    return rc ? err->code : 0;
}
