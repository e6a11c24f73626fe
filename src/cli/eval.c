/* eval.c — `./train eval RUN_DIR [--data FILE.jsonl | --seq-len N] [--by-position] [--set eval.*=…] [--json]
 * [--out FILE]`
 * (cli/use.h).  The metrics are those of training's evaluations (train/evaluate.c:
 * the same batches of train.batch_size, the same answer decoding), under the keys
 * of summary.json, so an eval of a finished run's test set repeats the figures of
 * its summary bit for bit. */
#include "attnlab/cli/use.h"
#include "attnlab/io/atomic_file.h"
#include "attnlab/train/evaluate.h"
#include "attnlab/util/version.h"
#include "use_common.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What was evaluated: the file, the run's test set, or one of another length. */
static const char *data_name(const LoadedRun *r, const UseArgs *a, char *buf, size_t n) {
    if (a->data) return a->data;
    if (a->seq_len < 0) return "test set";
    snprintf(buf, n, "test set at task.seq_len %d", r->cfg.task.seq_len);
    return buf;
}

/* --by-position: per row position, the targets scored there and the right ones. */
typedef struct Positions {
    long *right, *scored;
    int n;
} Positions;

/* "test_position_token_acc": one entry per position that has scored targets,
 * numbered from 1 (the row's first token). */
static void positions_json(cJSON *j, const Positions *p) {
    cJSON *arr = cJSON_AddArrayToObject(j, "test_position_token_acc");
    for (int i = 0; i < p->n; i++) {
        if (!p->scored[i]) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "position", i + 1);
        cJSON_AddNumberToObject(o, "tokens", (double)p->scored[i]);
        cJSON_AddNumberToObject(o, "token_acc", (double)p->right[i] / p->scored[i]);
        cJSON_AddItemToArray(arr, o);
    }
}

/* The metrics as summary.json names them, plus where they come from. */
static cJSON *metrics_json(const LoadedRun *r, const UseArgs *a, const Dataset *d, const EvalResult *e,
                           const Positions *p) {
    char name[64];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "run", r->dir);
    cJSON_AddStringToObject(j, "data", data_name(r, a, name, sizeof name));
    eval_result_add_json(j, e, r->data.gen.group_names);
    cJSON_AddNumberToObject(j, "test_sequences", d->n);
    cJSON_AddNumberToObject(j, "test_tokens", (double)e->n_tokens);
    if (p->right) positions_json(j, p);
    attnlab_add_provenance(j);
    return j;
}

static void print_text(const LoadedRun *r, const UseArgs *a, const EvalResult *e, const Positions *p) {
    char name[64];
    printf("%s on %s: %ld sequences, %ld scored tokens\n", r->dir, data_name(r, a, name, sizeof name), e->n_seqs,
           e->n_tokens);
    printf("  test loss %.6f | token acc %.6f | token err %.6f | seq acc %.6f", e->loss, e->token_acc,
           1 - e->token_acc, e->seq_acc);
    if (e->answer_acc >= 0) printf(" | answer acc %.6f", e->answer_acc);
    printf("\n");
    for (int g = 0; g < e->n_groups; g++)
        if (e->group_tokens[g])
            printf("  group %-12s token acc %.6f (%ld tokens)\n", r->data.gen.group_names[g], e->group_acc[g],
                   e->group_tokens[g]);
    for (int i = 0; p->right && i < p->n; i++)
        if (p->scored[i])
            printf("  position %-9d token acc %.6f (%ld tokens)\n", i + 1, (double)p->right[i] / p->scored[i],
                   p->scored[i]);
}

/* --out, or RUN_DIR/eval.json, RUN_DIR/eval_nN.json for --seq-len N, or
 * RUN_DIR/eval_NAME.json for --data …/NAME.jsonl. */
static int out_path(const UseArgs *a, char *path, size_t n, AlError *err) {
    if (a->out) return al_path_fmt(path, n, err, "%s", a->out);
    if (a->seq_len >= 0) return al_path_fmt(path, n, err, "%s/eval_n%d.json", a->dir, a->seq_len);
    if (!a->data) return al_path_fmt(path, n, err, "%s/eval.json", a->dir);
    const char *base = strrchr(a->data, '/') ? strrchr(a->data, '/') + 1 : a->data;
    int stem = (int)(strstr(base, ".jsonl") ? (size_t)(strstr(base, ".jsonl") - base) : strlen(base));
    return al_path_fmt(path, n, err, "%s/eval_%.*s.json", a->dir, stem, base);
}

/* The run's evaluation of d: training's (do_eval in trainer.c) on one thread,
 * which equals its pool's bit for bit (evaluate.h). */
static EvalResult run_eval(LoadedRun *r, const Dataset *d, Positions *p) {
    Arena arena;
    Tape tape;
    arena_init(&arena, 8u << 20);
    tape_init(&tape, &arena);
    EvalResult e = evaluate_by_position(r->model, &tape, d, r->cfg.train.batch_size, r->data.gen.n_groups, p->right,
                                        p->scored);
    TaskGen g = r->data.gen;
    if (g.extract_answer)
        e.answer_acc = evaluate_answers(r->model, d, &g, r->cfg.train.batch_size);
    else if (runload_has_answers(d) && model_is_causal(&r->model->cfg)) {
        Dataset wide;   /* file rows with answers: decoded in place at the model's stride */
        runload_widen(r, d, &wide);
        g.eos_id = -1;
        e.answer_acc = evaluate_answers(r->model, &wide, &g, r->cfg.train.batch_size);
        dataset_free(&wide);
    }
    tape_free(&tape);
    arena_free(&arena);
    return e;
}

int cli_eval(int argc, char **argv, AlError *err) {
    UseRun u;
    char path[AL_PATH_MAX];
    if (use_start(&u, argc, argv, "--data --seq-len --by-position --set --json --out", err) ||
        out_path(&u.a, path, sizeof path, err)) {
        use_end(&u);
        return err->code;
    }
    Positions p = { NULL, NULL, u.d->seq_len };
    if (u.a.by_position) {
        p.right = al_calloc((size_t)p.n, sizeof *p.right);
        p.scored = al_calloc((size_t)p.n, sizeof *p.scored);
    }
    EvalResult e = run_eval(&u.r, u.d, &p);
    cJSON *j = metrics_json(&u.r, &u.a, u.d, &e, &p);
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    if (u.a.json) printf("%s\n", text);
    else print_text(&u.r, &u.a, &e, &p);
    free(p.right);
    free(p.scored);
    int rc = write_text_atomic(path, text, err);
    if (!rc && !u.a.json) printf("wrote %s\n", path);
    free(text);
    use_end(&u);
    return rc;
}
