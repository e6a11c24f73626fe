/* main.c — the attnlab command line (run through the ./train launcher).
 *
 *   ./train CONFIG.json [--set key.path=value]… [--out DIR] [--resume | --force] [--pause-at STEP] [--quiet]
 *   ./train data CONFIG.json [--set …] [--out DIR]
 *   ./train distill RUN_DIR [--set distill.key=value]… [--out DIR] [--resume] [--quiet]
 *   ./train eval RUN_DIR [--data FILE.jsonl | --seq-len N] [--by-position] [--set eval.key=value]… [--json]
 *                [--out FILE]
 *   ./train generate RUN_DIR [--prompt "tokens…" | --data FILE.jsonl] [--max-new N]
 *   ./train inspect RUN_DIR [--example N | --data FILE.jsonl] [--out DIR] [--anna CELL [--grid DIR] [--draw K]]
 *   ./train curve RUN_DIR…  [--metric M] [--out FILE.svg]
 *   ./train curve SWEEP_DIR… --x AXIS --out FILE.svg [--metric M]
 *   ./train mc CONFIG.json [--out DIR] [--quiet]
 *   ./train bench [--rounds N]
 *   ./train sweep CONFIG.json [--set …] [--out DIR] [--jobs N] [--shard I/N] [--only K=V]… [--seeds S,S…] [--quiet]
 *   ./train sweep --merge DIR… [--out DIR]
 *   ./train --help | --help-config | --version
 *
 * Exit codes: 0 ok, 1 runtime error (I/O, checkpoint), 2 bad usage or bad config,
 * 130/143 interrupted (a checkpoint was saved first). */
#include "attnlab/anna/distill.h"
#include "attnlab/bench/bench.h"
#include "attnlab/cli/run.h"
#include "attnlab/cli/use.h"
#include "attnlab/exp/p002_run.h"
#include "attnlab/report/curve.h"
#include "attnlab/sweep/plot.h"
#include "attnlab/sweep/spec.h"
#include "attnlab/sweep/sweep.h"
#include "attnlab/config/config.h"
#include "attnlab/util/fpenv.h"
#include "attnlab/util/fsutil.h"
#include "attnlab/util/gemm.h"
#include "attnlab/util/version.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SETS 64

/* --help-config: the one top-level member of a config.json that is no config key. */
static const char PROVENANCE_HELP[] =
    "\nprovenance: written by attnlab into a run's config.json: {\"attnlab_version\", \"commit\",\n"
    "  \"build_type\", \"compiler\"} of the build that wrote the file.  Accepted and ignored when\n"
    "  a config is loaded (./train distill RUN, sweeps reading their cells), never compared on\n"
    "  --resume; any other unknown key is still an error.\n";

static void usage(FILE *f) {
    fprintf(f,
        "attnlab — train tiny transformers on algorithmic tasks\n"
        "\n"
        "usage:\n"
        "  ./train CONFIG.json [options]   train as the config says; results in results/<name>/\n"
        "  ./train data CONFIG.json        write the config's train/test sets to data/<task>/*.jsonl\n"
        "                                  (--set and --out work as for training; format: data/README.md)\n"
        "  ./train distill RUN_DIR [--out DIR] [--resume]\n"
        "                                  replace the trained attention by ANNA (LSH) over the\n"
        "                                  distill.* grid; writes anna_grid.csv and SVG figures there\n"
        "                                  (or into DIR, so grids with other --set distill.… sit side by side)\n"
        "                                  (--resume: continue a grid that was stopped, from the cells in\n"
        "                                  its anna_grid.journal)\n"
        "                                  (distill.finetune_steps > 0: then fine-tunes with ANNA in\n"
        "                                  the loop and writes anna_finetune.csv)\n"
        "  ./train eval RUN_DIR [--data FILE.jsonl | --seq-len N] [--by-position] [--set eval.key=value]\n"
        "        [--json] [--out FILE]     the trained model's metrics on its test set or FILE, as\n"
        "                                  training reports them (RUN_DIR/eval.json; --json: to stdout);\n"
        "                                  --seq-len N: on a test set of task.seq_len N from the run's\n"
        "                                  generator (RUN_DIR/eval_nN.json); --by-position: also the\n"
        "                                  accuracy at each scored position of the rows\n"
        "  ./train generate RUN_DIR [--prompt \"tokens…\" | --data FILE.jsonl] [--max-new N]\n"
        "                                  greedy decoding of a prompt, FILE's rows or the test set;\n"
        "                                  answer accuracy when the rows have answers\n"
        "  ./train inspect RUN_DIR [--example N | --data FILE.jsonl] [--out DIR]\n"
        "                                  attention maps per layer and head (SVG, safetensors) and\n"
        "                                  per-position predictions (default DIR: RUN_DIR/inspect)\n"
        "        [--anna best|\"L,Z;…\" [--grid DIR] [--draw K]]   and ANNA's collision maps of that\n"
        "                                  distilled cell (its hash draw K) beside the softmax maps\n"
        "  ./train overlap RUN_DIR [--steps N] [--set eval.key=value] [--json]\n"
        "                                  how many test examples the run also trained on (a stream\n"
        "                                  is replayed from its seed for summary.json's steps or N)\n"
        "  ./train curve RUN_DIR           (re)draw RUN_DIR/curve.svg from its metrics.jsonl\n"
        "  ./train curve RUN_DIR… --out FILE.svg [--metric token_acc|seq_acc|answer_acc|test_loss]\n"
        "                                  the runs' test metric (default token_acc) vs step, one\n"
        "                                  line per run (e.g. a transformer and an LSTM)\n"
        "  ./train curve SWEEP_DIR… --x AXIS --out FILE.svg [--metric token_acc|seq_acc|answer_acc]\n"
        "                                  the sweeps' grid.json metric (default: the first grid's\n"
        "                                  sweep.metric; mean over seeds, std as error bars) vs the\n"
        "                                  numeric axis AXIS (e.g. task.seq_len), one line per value\n"
        "                                  combination of the other axes; log2 x when max/min >= 8\n"
        "  ./train mc CONFIG.json [--out DIR] [--quiet]\n"
        "                                  paper 002's forward Monte-Carlo experiment (fixed softmax\n"
        "                                  vs linear networks; success ratio vs one parameter;\n"
        "                                  configs/paper002/, results/paper002/README.md)\n"
        "  ./train bench [--rounds N]      time training steps against sgemm (see bench/README.md)\n"
        "  ./train bench attention [--max-n N] [--out DIR]\n"
        "                                  one attention layer's time vs N: softmax, ANNA, linear, sparse\n"
        "  ./train sweep CONFIG.json [--set …] [--out DIR] [--jobs N] [--shard I/N] [--only K=V]…\n"
        "                [--seeds S,S…] [--quiet]\n"
        "                                  a grid of runs from the config's \"sweep\" section: one run\n"
        "                                  folder per cell, grid.csv/json, heatmaps, summary.md;\n"
        "                                  re-runs resume; --only runs the cells whose axis K has\n"
        "                                  value V first; --seeds replaces sweep.seeds, e.g. to add\n"
        "                                  seeds to a finished folder (README: Sweeps and grids)\n"
        "  ./train sweep --merge DIR… [--out DIR]\n"
        "                                  gather --shard folders into one grid\n"
        "  ./train --help                  this text\n"
        "  ./train --help-config           every config key: type, range, default, meaning\n"
        "  ./train --version               the version and the git commit this binary was built from\n"
        "\n"
        "options:\n"
        "  --set key.path=value   override one config value, e.g. --set train.lr=0.003\n"
        "                         (repeatable; value is JSON, or a bare string)\n"
        "  --out DIR              run folder (default: results/<name>)\n"
        "  --resume               continue the run in the run folder from its checkpoint\n"
        "  --pause-at STEP        stop at step STEP with a checkpoint, as SIGTERM would, and\n"
        "                         exit 0 (then --resume continues it, bit for bit as if never\n"
        "                         stopped); a step at or past train.steps: the run just finishes\n"
        "  --force                replace the run in the run folder (without it, a folder\n"
        "                         holding a finished, resumable or different run is refused)\n"
        "  --quiet                no progress output (errors and the final line still print)\n"
        "\n"
        "The run folder gets config.json (effective config), metrics.jsonl (one line per\n"
        "evaluation), curve.svg (losses vs step), summary.json, model.safetensors and\n"
        "train_state.safetensors; config.json, summary.json, the sweeps' grid.json and the\n"
        "safetensors metadata record the attnlab version and commit that wrote them.\n"
        "Progress: one live line on a terminal; otherwise (a log file, Slurm, nohup) a line\n"
        "per evaluation and one at least every 60 s with step/total, steps/s and ETA.\n"
        "Environment: ATTNLAB_THREADS sets the threads (data-parallel shards of each batch) when\n"
        "train.threads is 0 (default: the number of cores);\n"
        "ATTNLAB_PROGRESS_INTERVAL_S sets those 60 s.\n");
}

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "attnlab: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(run ./train --help for usage)\n");
    return 2;
}

static int report(int rc, const AlError *err) {
    if (rc && rc < 128 && err->msg[0]) fprintf(stderr, "attnlab: error: %s\n", err->msg);
    return rc;
}

/* ./train curve RUN_DIR: that run's curve.svg; with --out (and --metric) or several
 * folders: one test metric of every run against the step, in one figure; with --x
 * AXIS: sweep folders' grid metric against that axis. */
static int cmd_curve(int argc, char **argv) {
    const char *dirs[64], *metric = NULL, *out = NULL, *x = NULL;
    int n = 0;
    for (int i = 2; i < argc; i++) {
        const char **value = !strcmp(argv[i], "--metric") ? &metric : !strcmp(argv[i], "--out") ? &out
                           : !strcmp(argv[i], "--x") ? &x : NULL;
        if (value) {
            if (i + 1 == argc) return usage_error("curve: %s needs a value", argv[i]);
            *value = argv[++i];
        } else if (argv[i][0] == '-') {
            return usage_error("curve: unknown option '%s'", argv[i]);
        } else if (n == 64) {
            return usage_error("curve: at most 64 run folders (got more at '%s')", argv[i]);
        } else {
            dirs[n++] = argv[i];
        }
    }
    if (!n) return usage_error("%s", "curve needs a run folder (e.g. results/match2)");
    AlError err = {0};
    for (int i = 0; i < n; i++)
        if (al_path_check(dirs[i], AL_FOLDER_ROOM, "curve: a run folder", &err)) return report(err.code, &err);
    if (out && al_path_check(out, AL_FOLDER_ROOM, "curve: --out", &err)) return report(err.code, &err);
    if (x && !out) return usage_error("curve: --x %s needs --out FILE.svg (the figure to write)", x);
    if (x) return report(sweep_grid_curve(dirs, n, x, metric, out, &err), &err);
    if (n == 1 && !metric && !out) return report(report_curve(dirs[0], &err), &err);
    if (!out) return usage_error("%s", "curve: comparing runs (several folders or --metric) needs --out FILE.svg");
    return report(report_compare(dirs, n, metric ? metric : "token_acc", out, &err), &err);
}

/* A positive step count with nothing after it; 0 on success. */
static int parse_step(const char *s, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v <= 0 || s[0] == '+' || s[0] == ' ') return 1;
    *out = v;
    return 0;
}

/* ./train [data] CONFIG.json [options]: argv[first] is the first option or config. */
static int cmd_train(int argc, char **argv, int first, int write_data) {
    const char *sets[MAX_SETS];
    TrainOptions opt = { .overrides = sets };
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (!strcmp(a, "--set")) {
            if (!has_value) return usage_error("%s needs key.path=value", a);
            if (opt.n_overrides == MAX_SETS) return usage_error("too many %s options", a);
            sets[opt.n_overrides++] = argv[++i];
        } else if (!strncmp(a, "--set=", 6)) {
            if (opt.n_overrides == MAX_SETS) return usage_error("too many %s options", "--set");
            sets[opt.n_overrides++] = a + 6;
        } else if (!strcmp(a, "--out")) {
            if (!has_value) return usage_error("%s needs a folder", a);
            opt.out_dir = argv[++i];
        } else if (!strcmp(a, "--resume")) {
            opt.resume = 1;
        } else if (!strcmp(a, "--pause-at")) {
            if (!has_value) return usage_error("%s needs a step (a positive integer)", a);
            if (parse_step(argv[++i], &opt.pause_at))
                return usage_error("--pause-at needs a step (a positive integer), not '%s'", argv[i]);
        } else if (!strcmp(a, "--force")) {
            opt.force = 1;
        } else if (!strcmp(a, "--quiet")) {
            opt.quiet = 1;
        } else if (a[0] == '-') {
            return usage_error("unknown option '%s'", a);
        } else if (opt.config_path) {
            return usage_error("more than one config file given ('%s')", a);
        } else {
            opt.config_path = a;
        }
    }
    if (!opt.config_path) return usage_error("%s", "no config file given");
    if (write_data && opt.pause_at) return usage_error("%s", "data: --pause-at is for training runs");
    AlError err = {0};
    /* Paths too long fail here, before the config is read or anything is written. */
    if (al_path_check(opt.config_path, 0, "the config file", &err) ||
        (opt.out_dir && al_path_check(opt.out_dir, AL_FOLDER_ROOM, "--out", &err)))
        return report(err.code, &err);
    return report(write_data ? train_write_data(&opt, &err) : cli_train_run(&opt, &err), &err);
}

/* ./train distill RUN_DIR [--set distill.key=value]… [--out DIR] [--resume] [--quiet] */
static int cmd_distill(int argc, char **argv) {
    const char *sets[MAX_SETS], *dir = NULL, *out = NULL;
    int n_sets = 0, quiet = 0, resume = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--set") && i + 1 < argc && n_sets < MAX_SETS) sets[n_sets++] = argv[++i];
        else if (!strcmp(argv[i], "--quiet")) quiet = 1;
        else if (!strcmp(argv[i], "--resume")) resume = 1;
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (argv[i][0] == '-') return usage_error("unknown distill option '%s'", argv[i]);
        else if (dir) return usage_error("more than one run folder given ('%s')", argv[i]);
        else dir = argv[i];
    }
    if (!dir) return usage_error("%s", "distill needs a run folder (e.g. results/match2)");
    AlError err = {0};
    if (out && !*out) return usage_error("%s", "--out needs a folder name");
    return report(distill_main(dir, out, sets, n_sets, quiet, resume, &err), &err);
}

int main(int argc, char **argv) {
    gemm_prefer_avx512_kernels(argv);   /* may re-execute this program once (util/gemm.h) */
    fpenv_flush_denormals();            /* before any thread is made (util/fpenv.h) */
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("attnlab %s (commit %s)\n", attnlab_version(), attnlab_commit());
        return 0;
    }
    if (!strcmp(argv[1], "--help-config")) {
        char *help = cfg_help();
        fputs(help, stdout);
        fputs(PROVENANCE_HELP, stdout);
        fputs(sweep_help(), stdout);
        free(help);
        return 0;
    }
    if (!strcmp(argv[1], "bench")) {
        AlError err = {0};
        return report(bench_main(argc - 1, argv + 1, &err), &err);
    }
    if (!strcmp(argv[1], "data")) return cmd_train(argc, argv, 2, 1);
    if (!strcmp(argv[1], "distill")) return cmd_distill(argc, argv);
    if (!strcmp(argv[1], "curve")) return cmd_curve(argc, argv);
    static const struct { const char *name; int (*fn)(int, char **, AlError *); } USE[] = {
        { "eval", cli_eval }, { "generate", cli_generate }, { "inspect", cli_inspect },
        { "overlap", cli_overlap } };
    for (size_t i = 0; i < sizeof USE / sizeof USE[0]; i++)
        if (!strcmp(argv[1], USE[i].name)) {
            AlError err = {0};
            return report(USE[i].fn(argc - 1, argv + 1, &err), &err);
        }
    if (!strcmp(argv[1], "mc")) return p002_mc_main(argc - 1, argv + 1);   /* paper 002 Monte Carlo */
    if (!strcmp(argv[1], "sweep")) {
        AlError err = {0};
        return report(sweep_main(argc - 1, argv + 1, &err), &err);
    }
    return cmd_train(argc, argv, 1, 0);
}
