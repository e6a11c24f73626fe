/* testutil.c — see testutil.h. */
#include "testutil.h"
#include "attnlab/config/config.h"

#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdio.h>
#include <stdlib.h>

char *tu_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)(size > 0 ? size : 0) + 1);
    size_t got = s ? fread(s, 1, (size_t)(size > 0 ? size : 0), f) : 0;
    fclose(f);
    if (!s) return NULL;
    s[got] = '\0';
    if (len) *len = got;
    return s;
}

int tu_write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int bad = fputs(text, f) < 0;
    return (fclose(f) != 0 || bad) ? -1 : 0;
}

int tu_load_sweep(const char *path, const char *text, Config *base, SweepSpec *s, AlError *err) {
    char *json = NULL;
    memset(err, 0, sizeof *err);
    memset(s, 0, sizeof *s);
    if (tu_write_file(path, text)) return al_fail(err, 1, "%s: cannot write the test config", path);
    int rc = cfg_load_sweep(base, path, NULL, 0, &json, err);
    if (!rc && !json) rc = al_fail(err, 2, "%s: no 'sweep' section", path);
    if (!rc) rc = sweep_spec_parse(s, json, base, path, err);
    free(json);
    return rc;
}

pid_t tu_spawn(const char *const *argv, const char *out) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

int tu_wait(pid_t pid) {
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int tu_run_captured(void (*fn)(void *ctx), void *ctx, char *text, size_t n) {
    int fds[2];
    text[0] = 0;
    if (pipe(fds) != 0) return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        fn(ctx);
        _exit(0);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < n && (r = read(fds[0], text + got, n - 1 - got)) > 0) got += (size_t)r;
    text[got] = 0;
    close(fds[0]);
    return tu_wait(pid);
}

int tu_same_text(const char *a, const char *b) {
    char *x = tu_read_file(a, NULL), *y = tu_read_file(b, NULL);
    int same = x && y && !strcmp(x, y);
    free(x);
    free(y);
    return same;
}

const char *tu_path(const char *dir, const char *name) {
    static char buf[16][1024];
    static int k;
    k = (k + 1) % 16;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

const TuModelCase TU_MODEL_CASES[] = {
    { "softmax causal", "{\"d_model\": 16, \"n_layers\": 2, \"n_heads\": 2, \"attention\": {\"causal\": true}}" },
    { "softmax causal, dropout",
      "{\"d_model\": 16, \"n_layers\": 2, \"n_heads\": 2, \"dropout\": 0.3, \"attention\": {\"causal\": true}}" },
    { "softmax bidirectional, unit-norm, sinusoidal, dropout",
      "{\"d_model\": 16, \"n_layers\": 1, \"n_heads\": 4, \"dropout\": 0.2, \"positional\": \"sinusoidal\", "
      "\"embed_layernorm\": true, \"attention\": {\"score\": \"unit_norm\", \"beta\": 2}}" },
    { "linear causal", "{\"d_model\": 16, \"n_layers\": 2, \"n_heads\": 2, \"attention\": {\"type\": \"linear\", "
                       "\"causal\": true}}" },
    { "linear bidirectional, dropout",
      "{\"d_model\": 16, \"n_layers\": 1, \"n_heads\": 2, \"dropout\": 0.1, \"attention\": {\"type\": \"linear\"}}" },
    { "sparse", "{\"d_model\": 16, \"n_layers\": 2, \"n_heads\": 2, \"attention\": {\"type\": \"sparse\", "
                "\"causal\": true, \"block\": 2}}" },
    { "lstm, dropout", "{\"type\": \"lstm\", \"d_model\": 16, \"n_layers\": 2, \"dropout\": 0.25}" },
    { "mamba, dropout", "{\"type\": \"mamba\", \"d_model\": 16, \"n_layers\": 2, \"dropout\": 0.25, "
                        "\"mamba\": {\"d_state\": 4}}" },
    { "mamba", "{\"type\": \"mamba\", \"d_model\": 16, \"n_layers\": 2}" },
    { "dss", "{\"type\": \"dss\", \"d_model\": 16, \"n_layers\": 2, \"dss\": {\"d_state\": 4}}" },
    { "dss, feed-forward, dropout", "{\"type\": \"dss\", \"d_model\": 16, \"n_layers\": 2, \"dropout\": 0.25, "
                                    "\"dss\": {\"d_state\": 4, \"ff\": 2}}" },
    { "retnet, dropout", "{\"type\": \"retnet\", \"d_model\": 16, \"n_layers\": 2, \"n_heads\": 2, "
                         "\"dropout\": 0.2}" },
};
const int TU_N_MODEL_CASES = sizeof TU_MODEL_CASES / sizeof TU_MODEL_CASES[0];

Model *tu_model(const TuModelCase *c, int vocab, int n_classes, int max_len, uint64_t seed, AlError *err) {
    char json[1024];
    snprintf(json, sizeof json, "{\"seed\": 1, \"model\": %s}", c->model_json);
    Config cfg;
    if (cfg_parse(&cfg, json, c->name, err)) return NULL;
    return model_create(&cfg.model, vocab, n_classes, max_len, seed);
}
