/* trainer.c — the training loop and the run folder.
 *
 * Order of work, so that bad input costs nothing: validate the config, generate
 * the data, prepare the run folder (writable?), and only then build the model and
 * train.  The loop itself allocates nothing: the tape's arena is reset each step,
 * batches reuse their buffers, and all parameter state is one flat block. */
#include "attnlab/train/trainer.h"
#include "attnlab/report/curve.h"
#include "attnlab/data/task.h"
#include "attnlab/io/atomic_file.h"
#include "attnlab/train/checkpoint.h"
#include "attnlab/config/config.h"
#include "attnlab/train/evaluate.h"
#include "attnlab/train/optim.h"
#include "attnlab/train/progress.h"
#include "attnlab/train/runfolder.h"
#include "attnlab/train/step.h"
#include "attnlab/util/fpenv.h"
#include "attnlab/util/fsutil.h"
#include "attnlab/util/gemm.h"
#include "attnlab/util/strbuf.h"
#include "attnlab/util/testhook.h"
#include "attnlab/util/version.h"

#include <cJSON.h>
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define TARGET_ERROR 0.01   /* the "time to ≤ 1% test error" the summary reports */
#define MAX_SKIPPED_IN_A_ROW 10   /* train.on_nonfinite "skip" gives up after this many */

static volatile sig_atomic_t g_signal;
static void on_signal(int sig) { g_signal = sig; }

/* SIGINT and SIGTERM only set g_signal: the loop saves a checkpoint and stops.  The
 * handler stays installed (sigaction, not the one-shot signal()), so a second Ctrl-C
 * cannot kill the process halfway through that save. */
typedef struct SignalSave { struct sigaction old_int, old_term; } SignalSave;

static void signals_install(SignalSave *s) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    g_signal = 0;
    sigaction(SIGINT, &sa, &s->old_int);
    sigaction(SIGTERM, &sa, &s->old_term);
}

static void signals_restore(const SignalSave *s) {
    sigaction(SIGINT, &s->old_int, NULL);
    sigaction(SIGTERM, &s->old_term, NULL);
}

/* Signals that arrive while a checkpoint is written wait until it is complete. */
static void signals_defer(int defer, sigset_t *old) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigprocmask(defer ? SIG_BLOCK : SIG_SETMASK, defer ? &set : old, defer ? old : NULL);
}

static long online_cores(void) { return sysconf(_SC_NPROCESSORS_ONLN); }

int train_set_threads(int cfg_threads) {
    int n = cfg_threads;
    if (n <= 0) {
        const char *env = getenv("ATTNLAB_THREADS");
        long cores = online_cores();
        n = env ? atoi(env) : cores > 64 ? 64 : (int)cores;
        if (n <= 0) n = 1;
    }
    openblas_set_num_threads(1);
    return n;
}

/* More threads than cores only adds contention (and each thread's buffers): 64
 * threads on 2 cores once deadlocked under a memory limit.  Checked before the run
 * folder is touched; ATTNLAB_THREADS (used when train.threads is 0) likewise. */
static int check_threads(const Config *cfg, const TrainOptions *opt, AlError *err) {
    long cores = online_cores();
    const char *env = getenv("ATTNLAB_THREADS");
    if (cores <= 0) return 0;
    const char *set = NULL;   /* blame the last --set of the key, as the config loader does */
    for (int i = 0; i < opt->n_overrides; i++)
        if (!strncmp(opt->overrides[i], "train.threads", 13)) set = opt->overrides[i];
    char source[AL_PATH_MAX + 16];
    if (set) snprintf(source, sizeof source, "--set %s", set);
    else snprintf(source, sizeof source, "%s", opt->config_path);
    if (cfg->train.threads > cores)
        return al_fail(err, 2, "%s: train.threads: %d threads, but this machine has %ld core%s; use at most %ld "
                       "(0: ATTNLAB_THREADS or the number of cores)", source, cfg->train.threads, cores, cores == 1 ? "" : "s", cores);
    if (cfg->train.threads <= 0 && env && atol(env) > cores)
        return al_fail(err, 2, "ATTNLAB_THREADS=%s: more threads than the %ld core%s of this machine", env, cores,
                       cores == 1 ? "" : "s");
    return 0;
}

/* ---- run folder -------------------------------------------------------------------- */


/* Keeps the metrics lines of steps ≤ step (a resumed run rewrites what follows) and
 * drops a last line without its newline (a kill in the middle of an append), so the
 * next record never gets glued onto it; *last = the last step kept, or −1. */
static int truncate_metrics(const char *path, long step, long *last, AlError *err) {
    *last = -1;
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    StrBuf kept = {0};
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        const char *s = strstr(line, "\"step\":");
        if (line[len - 1] != '\n' || !s || atol(s + 7) > step) continue;
        *last = atol(s + 7);
        strbuf_printf(&kept, "%s", line);
    }
    free(line);
    fclose(f);
    int rc = write_text_atomic(path, kept.s ? kept.s : "", err);
    free(kept.s);
    return rc;
}

/* ---- the run ----------------------------------------------------------------------- */

typedef struct Run {
    Config cfg;
    char *config_json;
    RunFolder folder;
    const char *dir;       /* folder.dir */
    TaskData data;
    Model *model;
    Arena arena;
    Tape tape;
    StepPool pool;         /* train.threads data-parallel shards; shard 0 is model and tape */
    Sampler sampler;
    Batch batch;
    TrainState st;
    FILE *metrics;
    Progress progress;
    int threads;
    EvalResult last_eval;
    int have_eval;
    long saved_step;       /* step of the last checkpoint in the run folder; −1: none */
    long model_step;       /* step of the model.safetensors this sitting wrote; −1: none */
    long logged_step;      /* step of the last line in metrics.jsonl; −1: none */
    long pause_at;         /* TrainOptions.pause_at; −1: none */
    int paused;            /* the loop stopped at pause_at */
    int finished;          /* --resume found a finished run: nothing is trained or written */
    double positions_run, positions_grid;   /* this sitting's steps: positions run, of the padded grids' */
} Run;

/* Appends one line to metrics.jsonl.  The fault tests may stop the process halfway
 * through it (testhook "partial"): a resume drops such a line (truncate_metrics). */
static int append_line(Run *r, const StrBuf *b) {
    size_t half = testhook_boundaries_active() ? b->len / 2 : 0;
    if (half) {
        fwrite(b->s, 1, half, r->metrics);
        fflush(r->metrics);
        testhook_write_boundary("partial", "metrics.jsonl");
    }
    fwrite(b->s + half, 1, b->len - half, r->metrics);
    return fflush(r->metrics);
}

static int write_metrics(Run *r, float lr, double train_loss) {
    const EvalResult *e = &r->last_eval;
    StrBuf b = {0};
    strbuf_printf(&b, "{\"step\": %ld, ", r->st.step);
    strbuf_json_number(&b, "train_loss", train_loss);
    strbuf_json_number(&b, "test_loss", e->loss);
    strbuf_json_number(&b, "token_acc", e->token_acc);
    strbuf_json_number(&b, "token_error", 1 - e->token_acc);
    strbuf_json_number(&b, "seq_acc", e->seq_acc);
    strbuf_json_number(&b, "lr", lr);
    strbuf_json_number(&b, "grad_norm", r->st.grad_norm);
    /* Per-group accuracy (k-hop: per hop count; Dyck: positives, negatives, type-only). */
    int shown = 0;
    for (int g = 0; g < e->n_groups; g++) {
        if (!e->group_tokens[g]) continue;   /* e.g. hop counts the test set never draws */
        strbuf_printf(&b, "%s", shown++ ? "" : "\"group_token_acc\": {");
        strbuf_json_number(&b, r->data.gen.group_names[g], e->group_acc[g]);
    }
    if (shown) {
        b.len -= 2;   /* the last ", " */
        strbuf_printf(&b, "}, ");
    }
    if (e->answer_acc >= 0) strbuf_json_number(&b, "answer_acc", e->answer_acc);
    if (r->cfg.train.on_nonfinite == NONFINITE_SKIP) strbuf_printf(&b, "\"skipped_steps\": %ld, ", r->st.skipped_steps);
    strbuf_printf(&b, "\"elapsed_s\": %.3f}\n", r->st.elapsed_s);
    int rc = append_line(r, &b);
    free(b.s);
    return rc;
}

static void do_eval(Run *r, float lr) {
    double train_loss = r->st.loss_count ? r->st.loss_sum / r->st.loss_count : 0;
    r->last_eval = evaluate_pool(&r->pool, &r->data.test, r->cfg.train.batch_size, r->data.gen.n_groups);
    if (r->data.gen.extract_answer)
        r->last_eval.answer_acc = evaluate_answers_pool(&r->pool, &r->data.test, &r->data.gen, r->cfg.train.batch_size);
    r->have_eval = 1;
    double err = 1 - r->last_eval.token_acc;
    if (err <= TARGET_ERROR && r->st.target_step < 0) {
        r->st.target_step = r->st.step;
        r->st.target_elapsed_s = r->st.elapsed_s;
    }
    /* A run resumed at its last step evaluates again, but its line is already there. */
    if (r->st.step > r->logged_step) write_metrics(r, lr, train_loss);
    r->logged_step = r->st.step;
    char answer[48] = "";
    if (r->last_eval.answer_acc >= 0) snprintf(answer, sizeof answer, " | answer acc %.4f", r->last_eval.answer_acc);
    progress_eval(&r->progress, r->st.step, "step %6ld | train loss %.4f | test loss %.4f | token err %.4f | seq acc %.4f%s | %.1fs",
                  r->st.step, train_loss, r->last_eval.loss, err, r->last_eval.seq_acc, answer, r->st.elapsed_s);
    r->st.loss_sum = 0;
    r->st.loss_count = 0;
}

/* Never replaces a good checkpoint by one with NaN or inf parameters (an update
 * can overflow even when the loss and gradient norm before it were finite). */
static int save(Run *r, AlError *err) {
    const ParamStore *ps = &r->model->params;
    for (long i = 0; i < ps->total; i++)
        if (!isfinite(ps->data[i]))
            return al_fail(err, 1, "step %ld: parameter %ld is not finite (%g); not saving it over the checkpoint "
                           "in %s (lower train.lr or set train.grad_clip)", r->st.step, i, (double)ps->data[i], r->dir);
    r->st.dropout_rng = r->tape.rng;
    if (!r->data.streaming) r->st.sampler = sampler_get_state(&r->sampler);
    sigset_t old;
    signals_defer(1, &old);
    int rc = checkpoint_save(r->dir, r->model, &r->st, r->config_json, err);
    signals_defer(0, &old);
    if (rc) return err->code;
    r->saved_step = r->model_step = r->st.step;
    return 0;
}

/* The run's final model.safetensors, unless this sitting wrote it at this step: a
 * resume that finds the state at the last step must not leave a model one checkpoint
 * old (killed between the final state's rename and the model's) or none at all. */
static int save_final_model(Run *r, AlError *err) {
    if (r->model_step == r->st.step) return 0;
    sigset_t old;
    signals_defer(1, &old);
    int rc = checkpoint_save_model(r->dir, r->model, r->st.step, r->config_json, err);
    signals_defer(0, &old);
    if (!rc) r->model_step = r->st.step;
    return rc;
}

static long peak_rss_kb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static int write_summary(Run *r, int stopped_early, double wall_s, long steps_this_sitting,
                         double train_s_this_sitting, AlError *err) {
    const EvalResult *e = &r->last_eval;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", r->cfg.name);
    cJSON_AddNumberToObject(j, "steps", (double)r->st.step);
    cJSON_AddBoolToObject(j, "stopped_early", stopped_early);
    /* Per-group accuracy among them (as in metrics.jsonl), so a sweep can tabulate it per cell. */
    eval_result_add_json(j, e, r->data.gen.group_names);
    cJSON_AddNumberToObject(j, "test_sequences", r->data.test.n);
    cJSON_AddNumberToObject(j, "train_sequences", r->data.train.n);
    cJSON_AddNumberToObject(j, "distinct_train_sequences", r->data.n_distinct_train);
    cJSON_AddNumberToObject(j, "n_params", (double)r->model->params.total);
    cJSON_AddNumberToObject(j, "flops_per_seq", model_flops_per_seq(r->model, r->data.seq_len));
    cJSON_AddNumberToObject(j, "train_seconds", r->st.elapsed_s);
    cJSON_AddNumberToObject(j, "wall_seconds_this_sitting", wall_s);
    cJSON_AddNumberToObject(j, "ms_per_step", steps_this_sitting ? 1000.0 * train_s_this_sitting / steps_this_sitting : 0);
    /* The share of the batches' padded (rows × seq_len) positions this sitting's steps
     * ran: 1 without length groups (train.length_groups), less with them on
     * variable-length rows. */
    if (r->positions_grid > 0) cJSON_AddNumberToObject(j, "positions_run_share", r->positions_run / r->positions_grid);
    else cJSON_AddNullToObject(j, "positions_run_share");
    if (r->st.target_step >= 0) {
        cJSON_AddNumberToObject(j, "seconds_to_1pct_error", r->st.target_elapsed_s);
        cJSON_AddNumberToObject(j, "steps_to_1pct_error", (double)r->st.target_step);
    } else {
        cJSON_AddNullToObject(j, "seconds_to_1pct_error");
        cJSON_AddNullToObject(j, "steps_to_1pct_error");
    }
    if (r->cfg.train.on_nonfinite == NONFINITE_SKIP)
        cJSON_AddNumberToObject(j, "skipped_steps", (double)r->st.skipped_steps);
    /* threads: the data-parallel shards (cores used), each on one BLAS thread.  Up to
     * 0.4.0 train.threads set the BLAS threads and was written as "blas_threads";
     * from 0.5.0 that key says what it still names, the BLAS threads (of a shard: 1). */
    cJSON_AddNumberToObject(j, "threads", r->threads);
    cJSON_AddNumberToObject(j, "blas_threads", 1);
    cJSON_AddStringToObject(j, "blas_core", gemm_core_name());   /* OpenBLAS's kernel set (util/gemm.h) */
    cJSON_AddNumberToObject(j, "peak_rss_mb", peak_rss_kb() / 1024.0);
    attnlab_add_provenance(j);
    char *text = cJSON_Print(j), path[AL_PATH_MAX];
    cJSON_Delete(j);
    runfolder_path(&r->folder, "summary.json", path, sizeof path);
    int rc = write_text_atomic(path, text, err);
    free(text);
    return rc;
}

/* Whether the run a --resume found is finished: its summary.json ends at the
 * checkpoint's step, and this sitting would end it there too (train.steps reached, or
 * an early stop under the same or a looser stop rule).  Resuming it then must change
 * nothing: training on past its early stop, or rewriting its summary with this
 * sitting's zero steps and thread count, would replace a good run.  A raised
 * train.steps, or a tighter (or no) eval.stop_at_error, continues it. */
static int finished_at_checkpoint(const Run *r) {
    int early;
    if (runfolder_finished_step(&r->folder, &early) != r->st.step) return 0;
    if (r->st.step >= r->cfg.train.steps) return 1;
    if (!early) return 0;
    Config was;
    AlError e = {0};
    char path[AL_PATH_MAX];
    runfolder_path(&r->folder, "config.json", path, sizeof path);
    if (cfg_load(&was, path, NULL, 0, &e)) return 1;   /* no rule to compare: keep the run as it is */
    const CfgEval *now = &r->cfg.eval;
    return now->stop_at_error >= 0 && now->stop_metric == was.eval.stop_metric &&
           now->stop_at_error >= was.eval.stop_at_error;
}

/* Everything that can refuse the run, in an order that costs nothing when it does:
 * the config, the data, the machine (threads), the folder (lock; what a new run may
 * replace), the model and the checkpoint to resume.  Only then does anything in
 * the run folder change (config.json, metrics.jsonl, --force's removals). */
static int check_all(Run *r, const TrainOptions *opt, AlError *err) {
    if (cfg_load(&r->cfg, opt->config_path, opt->overrides, opt->n_overrides, err)) return err->code;
    r->config_json = cfg_to_json(&r->cfg);
    TaskSpec spec;
    if (task_build_from(cfg_task_spec(&r->cfg, &spec), opt->config_path, &r->data, err)) return err->code;
    if (task_check_memory(&spec, &r->cfg.model, r->cfg.train.batch_size, &r->data, opt->config_path, err))
        return err->code;
    if (check_threads(&r->cfg, opt, err)) return err->code;
    RunFolderOptions fo = { opt->out_dir, opt->config_path, opt->resume, opt->force };
    if (runfolder_open(&r->folder, &r->cfg, &fo, err)) return err->code;
    r->dir = r->folder.dir;
    r->threads = train_set_threads(r->cfg.train.threads);
    r->model = model_create(&r->cfg.model, r->data.vocab_size, r->data.n_classes, r->data.seq_len, r->cfg.seed);
    arena_init(&r->arena, 8u << 20);
    tape_init(&r->tape, &r->arena);
    r->tape.rng = rng_stream(r->cfg.seed, 0x64726f70 /* "drop" */);
    step_pool_init(&r->pool, r->model, &r->tape, r->threads);
    r->pool.length_groups = r->cfg.train.length_groups;
    if (!r->data.streaming) sampler_init(&r->sampler, r->data.train.n, rng_stream(r->cfg.seed, 0x73616d70 /* "samp" */));
    r->st.data_rng = step_data_stream(r->cfg.seed);
    batch_alloc(&r->batch, r->cfg.train.batch_size, r->data.streaming ? r->data.gen.max_len : r->data.train.seq_len);
    r->st.target_step = -1;
    r->saved_step = r->model_step = r->logged_step = -1;
    testhook_dump_rows("test", r->data.test.tokens, r->data.test.n, r->data.test.seq_len);
    if (!opt->resume) return 0;
    if (checkpoint_resume(r->dir, r->model, &r->st, r->config_json, err)) return err->code;
    if (opt->pause_at && opt->pause_at <= r->st.step)
        return al_fail(err, 2, "--pause-at %ld: the run in %s is already at step %ld; give a later step", opt->pause_at,
                       r->dir, r->st.step);
    r->saved_step = r->st.step;
    r->tape.rng = r->st.dropout_rng;
    if (!r->data.streaming && sampler_set_state(&r->sampler, &r->st.sampler, err)) {
        al_error_prefix(err, "%s/train_state.safetensors", r->dir);
        return err->code = 1;   /* a checkpoint error, like the others */
    }
    r->finished = finished_at_checkpoint(r);   /* after every check of the checkpoint */
    return 0;
}

static int setup(Run *r, const TrainOptions *opt, AlError *err) {
    if (check_all(r, opt, err)) return err->code;
    if (r->finished) return 0;
    char path[AL_PATH_MAX], lost[AL_PATH_MAX + 160];
    if (!opt->resume && !opt->force && runfolder_lost_checkpoint(r->dir, lost, sizeof lost))
        fprintf(stderr, "attnlab: %s\n", lost);
    if (opt->force && runfolder_clear(&r->folder, err)) return err->code;
    atomic_remove_stale(r->dir);   /* temp files of a run killed mid-write */
    /* config.json follows the latest sitting (train.steps or eval.* may have changed). */
    runfolder_path(&r->folder, "config.json", path, sizeof path);
    /* With the build that ran it; checkpoints compare r->config_json, without it. */
    char *text = attnlab_json_with_provenance(r->config_json);
    int rc = write_text_atomic(path, text, err);
    free(text);
    if (rc) return err->code;
    runfolder_path(&r->folder, "metrics.jsonl", path, sizeof path);
    if (opt->resume && truncate_metrics(path, r->st.step, &r->logged_step, err)) return err->code;
    r->metrics = fopen(path, opt->resume ? "a" : "w");
    if (!r->metrics) return al_fail(err, 1, "cannot write '%s': %s", path, strerror(errno));
    return 0;
}

/* "DIR holds the last good checkpoint (step N)", or that there is none yet. */
static void last_good(const Run *r, char *out, size_t n) {
    if (r->saved_step >= 0) snprintf(out, n, "%s holds the last good checkpoint (step %ld)", r->dir, r->saved_step);
    else snprintf(out, n, "no checkpoint was saved yet in %s", r->dir);
}

/* A step whose loss or gradient norm is not finite; its update never happens.
 * "stop" ends the run; "skip" counts it and moves on to the next batch, unless
 * MAX_SKIPPED_IN_A_ROW steps before it were skipped too (the run has diverged). */
static int nonfinite_step(Run *r, double loss, double norm, AlError *err) {
    long step = r->st.step + 1;
    char kept[AL_PATH_MAX + 64];
    last_good(r, kept, sizeof kept);
    if (r->cfg.train.on_nonfinite == NONFINITE_STOP)
        return al_fail(err, 1, "step %ld: the loss (%g) or the gradient norm (%g) is not finite; stopped before "
                       "updating, so %s (lower train.lr, set train.grad_clip, or set train.on_nonfinite to "
                       "\"skip\")", step, loss, norm, kept);
    if (r->st.skipped_in_a_row >= MAX_SKIPPED_IN_A_ROW)
        return al_fail(err, 1, "step %ld: the loss (%g) or the gradient norm (%g) has not been finite for %ld steps in "
                       "a row (train.on_nonfinite \"skip\" stops after %d); stopped before updating, so %s (lower "
                       "train.lr or set train.grad_clip)", step, loss, norm, r->st.skipped_in_a_row + 1,
                       MAX_SKIPPED_IN_A_ROW, kept);
    r->st.skipped_steps++;
    r->st.skipped_in_a_row++;
    r->st.step++;
    progress_line(&r->progress, "step %ld: the loss (%g) or the gradient norm (%g) is not finite: update skipped "
                  "(%ld skipped so far)", step, loss, norm, r->st.skipped_steps);
    return 0;
}

/* One optimizer step.  A non-finite loss or gradient norm is caught before the
 * update touches the parameters, so the last checkpoint stays the last good
 * state (nonfinite_step decides whether the run goes on). */
static int train_step(Run *r, float *lr_out, AlError *err) {
    float lr = optim_lr(&r->cfg.train, (int)r->st.step);
    step_next_batch(&r->data, &r->sampler, &r->st.data_rng, &r->batch);
    testhook_dump_rows("train", r->batch.tokens, r->batch.batch, r->batch.seq_len);
    double norm, loss = step_gradients_pool(&r->pool, &r->batch, NULL, &norm);
    for (int s = 0; s < r->pool.threads && s < r->batch.batch; s++) r->positions_run += r->pool.shard[s].positions;
    r->positions_grid += (double)r->batch.batch * r->batch.seq_len;
    if (testhook_nan_step(r->st.step + 1)) loss = NAN;
    *lr_out = lr;
    if (!isfinite(loss) || !isfinite(norm)) return nonfinite_step(r, loss, norm, err);
    r->st.skipped_in_a_row = 0;
    r->st.grad_norm = norm;
    r->st.step++;
    step_update(r->model, &r->cfg.train, lr, r->st.step, norm, NULL);
    r->st.loss_sum += loss;
    r->st.loss_count++;
    return 0;
}

/* --pause-at: the loop reached r->pause_at before the end of the schedule.  The run
 * stays resumable, exactly as after SIGTERM, but this is the planned end of the sitting. */
static int pause_run(Run *r, AlError *err) {
    if (r->saved_step != r->st.step && save(r, err)) return err->code;
    if (r->progress.line_open) fputc('\n', stdout);
    printf("paused at step %ld of %d (--pause-at): checkpoint saved in %s; continue with --resume\n", r->st.step,
           r->cfg.train.steps, r->dir);
    r->paused = 1;
    return 0;
}

/* The test error eval.stop_at_error bounds (eval.stop_metric). */
static double stop_error(const Run *r) {
    return 1 - (r->cfg.eval.stop_metric == STOP_ON_SEQ ? r->last_eval.seq_acc : r->last_eval.token_acc);
}

static int loop(Run *r, AlError *err) {
    const CfgTrain *tc = &r->cfg.train;
    const CfgEval *ec = &r->cfg.eval;
    double t0 = progress_now(), train_s = 0;
    long first_step = r->st.step;
    int stopped_early = 0;
    float lr = optim_lr(tc, (int)r->st.step);
    progress_line(&r->progress, "%s", r->data.summary);
    progress_line(&r->progress, "model: %ld parameters, %d thread%s (data-parallel shards of each batch); run "
                  "folder %s", r->model->params.total, r->threads, r->threads == 1 ? "" : "s", r->dir);
    while (r->st.step < tc->steps && !g_signal && r->st.step != r->pause_at) {
        double s0 = progress_now();
        if (train_step(r, &lr, err)) return err->code;
        double dt = progress_now() - s0;
        train_s += dt;
        r->st.elapsed_s += dt;
        int last = r->st.step == tc->steps;
        int eval_now = r->st.step % ec->every == 0 || last;
        if (eval_now) do_eval(r, lr);
        int stop = eval_now && ec->stop_at_error >= 0 && stop_error(r) <= ec->stop_at_error;
        int ckpt = ec->checkpoint_every ? r->st.step % ec->checkpoint_every == 0 : eval_now;
        if ((ckpt || last || stop) && save(r, err)) return err->code;
        ProgressInfo pi = { r->st.step, tc->steps, r->st.loss_count ? r->st.loss_sum / r->st.loss_count : 0,
                            r->have_eval ? r->last_eval.token_acc : -1, lr,
                            train_s > 0 ? (r->st.step - first_step) / train_s : 0 };
        progress_step(&r->progress, &pi);
        if (stop) {
            stopped_early = 1;
            progress_line(&r->progress, "stopping early: test %s error %.4f <= %.4f",
                          ec->stop_metric == STOP_ON_SEQ ? "sequence" : "token", stop_error(r),
                          (double)ec->stop_at_error);
            break;
        }
    }
    if (g_signal) {
        if (r->saved_step != r->st.step && save(r, err)) return err->code;
        /* stderr, and even with --quiet: whoever reads the log must see why it ended. */
        if (r->progress.line_open) fputc('\n', stdout);
        fflush(stdout);
        fprintf(stderr, "attnlab: interrupted at step %ld (%s): checkpoint saved in %s; continue with --resume\n",
                r->st.step, g_signal == SIGINT ? "SIGINT" : "SIGTERM", r->dir);
        return 128 + g_signal;
    }
    if (r->st.step == r->pause_at && !stopped_early && r->st.step < tc->steps) return pause_run(r, err);
    if (!r->have_eval) do_eval(r, lr);
    if (save_final_model(r, err)) return err->code;
    if (write_summary(r, stopped_early, progress_now() - t0, r->st.step - first_step, train_s, err)) return err->code;
    if (report_curve(r->dir, err)) return err->code;
    double ms = r->st.step > first_step ? 1000 * train_s / (r->st.step - first_step) : 0;
    char target[96] = "not reached";
    if (r->st.target_step >= 0)
        snprintf(target, sizeof target, "%.1fs (step %ld)", r->st.target_elapsed_s, r->st.target_step);
    printf("done: %ld steps, test token error %.4f, seq acc %.4f | %.3f ms/step | time to <=1%% error %s | "
           "peak RSS %.1f MB | %s\n",
           r->st.step, 1 - r->last_eval.token_acc, r->last_eval.seq_acc, ms, target, peak_rss_kb() / 1024.0, r->dir);
    return 0;
}

static void teardown(Run *r) {
    if (r->metrics) fclose(r->metrics);
    runfolder_close(&r->folder);
    batch_free(&r->batch);
    sampler_free(&r->sampler);
    if (r->model) {
        step_pool_free(&r->pool);
        tape_free(&r->tape);
        arena_free(&r->arena);
        model_free(r->model);
    }
    task_free(&r->data);
    free(r->config_json);
}

int train_write_data(const TrainOptions *opt, AlError *err) {
    Config cfg;
    TaskData td;
    TaskSpec spec;
    char dir[AL_PATH_MAX];
    if (opt->out_dir && al_path_check(opt->out_dir, AL_FOLDER_ROOM, "--out", err)) return err->code;
    if (cfg_load(&cfg, opt->config_path, opt->overrides, opt->n_overrides, err)) return err->code;
    if (task_build_from(cfg_task_spec(&cfg, &spec), opt->config_path, &td, err)) return err->code;
    char *type = cfg_to_json(&cfg), *at = strstr(type, "\"type\": \""), name[64] = "task";
    if (at) sscanf(at + 9, "%63[^\"]", name);
    free(type);
    int rc = 0;
    if (opt->out_dir ? al_path_fmt(dir, sizeof dir, err, "%s", opt->out_dir)
                     : al_path_fmt(dir, sizeof dir, err, "data/%s", name))   /* a type name is short */
        rc = err->code;
    else if (task_check_writable(&td, err))   /* before the folder is made: a refusal leaves nothing */
        rc = err->code;
    else
        rc = al_mkdir_p(dir, err) || task_write_jsonl(&td, dir, err);
    if (!rc && !opt->quiet)
        printf("%s\nwrote %s/train.jsonl (%d rows) and %s/test.jsonl (%d rows)\n", td.summary, dir, td.train.n,
               dir, td.test.n);
    task_free(&td);
    return rc ? err->code : 0;
}

int train_run(const TrainOptions *opt, AlError *err) {
    fpenv_flush_denormals();   /* util/fpenv.h: main() did too, a test may not */
    Run *r = al_calloc(1, sizeof *r);
    dirlock_init(&r->folder.lock);
    progress_init(&r->progress, opt->quiet);
    r->pause_at = opt->pause_at > 0 ? opt->pause_at : -1;
    int rc = setup(r, opt, err);
    if (!rc && r->finished) {
        printf("%s holds a finished run of %ld steps (summary.json%s); nothing to continue: every file is left as it "
               "was (raise train.steps%s to train it further)\n", r->dir, r->st.step,
               r->st.step < r->cfg.train.steps ? ", stopped early" : "",
               r->st.step < r->cfg.train.steps ? ", or lower eval.stop_at_error," : "");
        fflush(stdout);   /* before a next stage's own lines */
    } else if (!rc) {
        if (!opt->quiet) printf("effective config:\n%s\n", r->config_json);
        SignalSave saved;
        signals_install(&saved);
        rc = loop(r, err);
        signals_restore(&saved);
    }
    /* A finished run found by --resume still gets its next stage (a distillation
     * stopped part-way continues). */
    if (!rc && !r->paused && opt->then) {
        TrainedRun done = { &r->cfg, r->model, &r->data, r->dir, opt->quiet };
        rc = opt->then(&done, err);
    }
    teardown(r);
    free(r);
    return rc;
}
