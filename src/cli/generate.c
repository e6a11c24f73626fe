/* generate.c — `./train generate RUN_DIR [--prompt "tokens…" | --data FILE.jsonl]
 * [--max-new N]` (cli/use.h).  Greedy decoding with the KV cache or the recurrent
 * state (nn/decode.h), as training's answer accuracy decodes (train/evaluate.c). */
#include "attnlab/cli/use.h"
#include "attnlab/nn/decode.h"
#include "attnlab/train/evaluate.h"
#include "use_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROMPT_MAX_TOKENS 65536

/* Decoding feeds each prediction back as the next token: a causal model whose
 * classes are tokens. */
static int check_decodable(const LoadedRun *r, AlError *err) {
    const Model *m = r->model;
    if (!model_is_causal(&m->cfg))
        return al_fail(err, 2, "%s: model.attention.causal is false: a bidirectional model cannot generate "
                       "(its outputs depend on tokens not yet generated)", r->config_path);
    if (m->n_classes > m->vocab_size)
        return al_fail(err, 2, "%s: the model has %d classes but %d tokens: its predictions are no tokens to "
                       "feed back (generation needs labels[i] = tokens[i+1], data/README.md)", r->config_path,
                       m->n_classes, m->vocab_size);
    return 0;
}

/* One prompt word: a token name of the task, or an id < vocab_size. */
static int prompt_token(const LoadedRun *r, const char *word, int index, int *id, AlError *err) {
    const TaskGen *g = &r->data.gen;
    for (int t = 0; g->token_name && t < r->model->vocab_size; t++)
        if (!strcmp(g->token_name(g, t), word)) return *id = t, 0;
    char *end;
    long v = strtol(word, &end, 10);
    if (*word && !*end && v >= 0 && v < r->model->vocab_size) return *id = (int)v, 0;
    return al_fail(err, 2, "--prompt: token %d '%s' is not in the vocabulary of %s (%s 0..%d%s)", index + 1, word,
                   r->config_path, g->token_name ? "a token name, or an id" : "ids", r->model->vocab_size - 1,
                   g->token_name ? "; ./train generate prints the names" : "");
}

/* --prompt: one row of `max_len` tokens whose first *n are the prompt's. */
static int parse_prompt(const LoadedRun *r, const char *text, int *row, int *n, AlError *err) {
    char *copy = strdup(text), *save = NULL;
    *n = 0;
    int rc = 0;
    for (char *w = strtok_r(copy, " \t\n,", &save); w && !rc; w = strtok_r(NULL, " \t\n,", &save)) {
        if (*n == r->model->max_len)
            rc = al_fail(err, 2, "--prompt: more than the model's %d positions (model max_len, from %s)",
                         r->model->max_len, r->config_path);
        else
            rc = prompt_token(r, w, *n, &row[*n], err);
        if (!rc) ++*n;
    }
    free(copy);
    if (!rc && *n == 0) rc = al_fail(err, 2, "--prompt: no tokens (give ids or names separated by spaces)");
    return rc;
}

static void print_tokens(const LoadedRun *r, const int *tok, int from, int to) {
    char buf[16];
    for (int i = from; i < to; i++) printf("%s%s", i > from ? " " : "", use_token_label(r, tok[i], buf, sizeof buf));
}

/* Generated rows: "N: PROMPT => GENERATED", ending at max_new tokens when set. */
static void print_row(const LoadedRun *r, int index, const int *tok, int prompt, int len, int max_new) {
    if (max_new && len > prompt + max_new) len = prompt + max_new;
    printf("%d: ", index);
    print_tokens(r, tok, 0, prompt);
    printf(" =>");
    if (len > prompt) printf(" ");
    print_tokens(r, tok, prompt, len);
    printf("\n");
}

/* Every row needs a prompt to start from; file rows name their line. */
static int check_prompts(const UseArgs *a, const Dataset *d, AlError *err) {
    for (int i = 0; i < d->n; i++)
        if (!d->info || d->info[i].prompt_len < 1)
            return al_fail(err, 2, "%s:%d: prompt_len is %d: generation starts after a prompt of at least one "
                           "token (the chain-of-thought keys, data/README.md)", a->data ? a->data : "the test set",
                           i + 1, d->info ? d->info[i].prompt_len : 0);
    return 0;
}

/* Decodes every row of d (widened) from its prompt; prints them and the answer
 * accuracy when the rows carry answers. */
static int generate_rows(const LoadedRun *r, const UseArgs *a, const Dataset *d, AlError *err) {
    if (check_prompts(a, d, err)) return err->code;
    Dataset w;
    runload_widen(r, d, &w);
    TaskGen g = r->data.gen;
    if (!g.extract_answer) g.eos_id = -1;
    int T = w.seq_len, *rows = malloc((size_t)w.n * T * sizeof(int)), *prompt = malloc((size_t)w.n * sizeof(int)),
        *len = malloc((size_t)w.n * sizeof(int));
    memcpy(rows, w.tokens, (size_t)w.n * T * sizeof(int));
    for (int i = 0; i < w.n; i++) prompt[i] = w.info[i].prompt_len;
    Decoder *dec = decoder_create(r->model, 1);
    for (int i = 0; i < w.n; i++) {   /* one at a time: a row's output prints as soon as it is done */
        decoder_greedy(dec, 1, rows + (size_t)i * T, prompt + i, g.eos_id, len + i);
        print_row(r, i, rows + (size_t)i * T, prompt[i], len[i], a->max_new);
    }
    decoder_free(dec);
    if (runload_has_answers(&w)) {
        double acc = evaluate_answers(r->model, &w, &g, r->cfg.train.batch_size);
        printf("answer accuracy %.6f (%d rows, greedy decoding)\n", acc, w.n);
    }
    free(rows);
    free(prompt);
    free(len);
    dataset_free(&w);
    return 0;
}

static int generate_prompt(const LoadedRun *r, const UseArgs *a, AlError *err) {
    int *row = calloc((size_t)r->model->max_len, sizeof(int)), n, len;
    int rc = parse_prompt(r, a->prompt, row, &n, err);
    if (!rc) {
        const TaskGen *g = &r->data.gen;
        Decoder *dec = decoder_create(r->model, 1);
        decoder_greedy(dec, 1, row, &n, g->extract_answer ? g->eos_id : -1, &len);
        decoder_free(dec);
        print_row(r, 0, row, n, len, a->max_new);
    }
    free(row);
    return rc;
}

int cli_generate(int argc, char **argv, AlError *err) {
    UseRun u;
    int rc = use_start(&u, argc, argv, "--prompt --data --max-new", err) || check_decodable(&u.r, err);
    if (!rc) rc = u.a.prompt ? generate_prompt(&u.r, &u.a, err) : generate_rows(&u.r, &u.a, u.d, err);
    use_end(&u);
    return rc ? err->code : 0;
}
