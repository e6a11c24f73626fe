/* bench.c — see bench.h.
 *
 * Models (SPECS below; bench/torch_reference.py builds the same):
 *   match2   1 layer, 1 head, d 64, MLP 4d, unit-norm scores β 0.1, bidirectional,
 *            no positions, vocab 37, 2 classes, N 32, batch 32
 *   causal   2 layers, 4 heads, d 128, MLP 4d, dot scores, causal, learned positions,
 *            vocab 16, 16 classes, N 100, batch 32
 *   retnet   RetNet (model.type retnet), 2 layers, 4 heads, d 256, MLP 4d, value
 *            factor 1, vocab 16, 16 classes, N 100, batch 32
 *   mamba    Mamba (model.type mamba), 2 layers, d 256, d_state 16, expand 2,
 *            d_conv 4, vocab 16, 16 classes, N 100, batch 32
 *   linear   paper 004's width-128 ED model: 3 layers, 4 heads, d 128, MLP 4d,
 *            linear attention (φ = elu + 1), causal, sinusoidal positions, vocab 16,
 *            16 classes, N 96, batch 32
 * Each is timed in three settings (a step = train/step.h's step_gradients_pool and
 * an Adam step, as the trainer does it):
 *   threads=1      one shard, one BLAS thread            (train.threads 1)
 *   threads=2      two data-parallel shards of 16 rows,  (train.threads 2)
 *                  one BLAS thread each
 *   threads=blas2  one shard, two BLAS threads           (what train.threads 2 meant
 *                                                         before data parallelism)
 * Rounds alternate models and settings so a burst of load from another process
 * hits all alike, and the median round is reported.  Each round also times the
 * causal model, one thread, with only the last position of each sequence scored
 * (as index lookup and the classification tasks): the step then computes the work
 * after the last layer's mixing for the scored rows only (docs/design.md decision
 * 16); its ratio to the every-position step of the same round is printed.  And the
 * causal model, one thread, on right-padded rows of lengths 10, 12, …, 100 (paper
 * 003's equality tasks train on N/10 … N), every position of a row scored up to its
 * length, plainly and in PAD_GROUPS length groups of four rows (train.length_groups,
 * docs/design.md decision 18), with the ratio of the two.  Output lines starting
 * with "RESULT" are for bench/run. */
#include "attnlab/bench/bench.h"
#include "attnlab/nn/model.h"
#include "attnlab/train/optim.h"
#include "attnlab/train/progress.h"
#include "attnlab/train/step.h"
#include "attnlab/train/trainer.h"
#include "attnlab/util/gemm.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct BenchModel {
    const char *name;
    Config cfg;
    int vocab, n_classes, T;
    Model *model;
    int *tokens, *targets;
    Batch batch;              /* over tokens and targets */
} BenchModel;

/* One bench model: the model section's changes from cfg_defaults, the task's shape. */
typedef struct BenchSpec {
    const char *name;
    CfgModelType type;
    int layers, heads, d;
    CfgScore score;
    CfgAttentionType attention;
    int causal;
    CfgPositional pos;
    int vocab, n_classes, T;
    int steps;                /* per round and setting */
} BenchSpec;

/* bench/torch_reference.py's BENCH_MODELS builds the same models. */
static const BenchSpec SPECS[] = {
    { "match2", MODEL_TRANSFORMER, 1, 1, 64, SCORE_UNIT_NORM, ATTN_SOFTMAX, 0, POS_NONE, 37, 2, 32, 100 },
    { "causal", MODEL_TRANSFORMER, 2, 4, 128, SCORE_DOT, ATTN_SOFTMAX, 1, POS_LEARNED, 16, 16, 100, 10 },
    /* paper 003's recurrent baselines: width 256 (index lookup, "up to 6 layers and
     * widths or hidden state size of 256"), 2 layers, N 100 */
    { "retnet", MODEL_RETNET, 2, 4, 256, SCORE_DOT, ATTN_SOFTMAX, 1, POS_NONE, 16, 16, 100, 5 },
    /* Mamba's width study (paper 003 Fig. 3): 2 layers; d 256, the reference defaults
     * d_state 16, expand 2, d_conv 4 */
    { "mamba", MODEL_MAMBA, 2, 1, 256, SCORE_DOT, ATTN_SOFTMAX, 1, POS_NONE, 16, 16, 100, 5 },
    /* paper 004's ED at width 128 with linear attention (ℓ = 7 has 48–91 positions) */
    { "linear", MODEL_TRANSFORMER, 3, 4, 128, SCORE_DOT, ATTN_LINEAR, 1, POS_SINUSOIDAL, 16, 16, 96, 10 },
};
enum { N_MODELS = sizeof SPECS / sizeof *SPECS };

static void setup_model(BenchModel *b, const BenchSpec *s) {
    b->name = s->name;
    cfg_defaults(&b->cfg);
    CfgModel *m = &b->cfg.model;
    m->type = s->type;
    m->n_layers = s->layers;
    m->n_heads = s->heads;
    m->d_model = s->d;
    m->attention.score = s->score;
    m->attention.type = s->attention;
    m->attention.beta = 0.1f;
    m->attention.causal = s->causal;
    m->positional = s->pos;
    b->cfg.train.batch_size = 32;
    b->cfg.train.lr = 1e-3f;
    b->vocab = s->vocab;
    b->n_classes = s->n_classes;
    b->T = s->T;
    b->model = model_create(m, s->vocab, s->n_classes, s->T, 1);
    int n = b->cfg.train.batch_size * s->T;
    b->tokens = malloc((size_t)n * sizeof(int));
    b->targets = malloc((size_t)n * sizeof(int));
    Rng r = rng_stream(7, 1);
    for (int i = 0; i < n; i++) {
        b->tokens[i] = (int)rng_below(&r, (uint32_t)s->vocab);
        b->targets[i] = (int)rng_below(&r, (uint32_t)s->n_classes);
    }
    b->batch = (Batch){ b->cfg.train.batch_size, s->T, b->tokens, b->targets, 0 };
}

/* A copy of the causal model's bench with only each sequence's last position scored. */
static void setup_last_only(BenchModel *b, const BenchSpec *s) {
    setup_model(b, s);
    for (int i = 0; i < b->batch.batch * s->T; i++)
        if (i % s->T != s->T - 1) b->targets[i] = DATASET_IGNORE;
}

/* A copy of the causal model's bench with right-padded rows: row r scored up to a
 * length drawn from 10, 12, …, T, unscored after it. */
static void setup_padded(BenchModel *b, const BenchSpec *s) {
    setup_model(b, s);
    Rng r = rng_stream(7, 2);
    for (int row = 0; row < b->batch.batch; row++) {
        const int len = 10 + 2 * (int)rng_below(&r, (uint32_t)(s->T - 10) / 2 + 1);
        for (int i = len; i < s->T; i++) b->targets[row * s->T + i] = DATASET_IGNORE;
    }
}

static void one_step(BenchModel *b, StepPool *p, long step) {
    double norm;
    step_gradients_pool(p, &b->batch, NULL, &norm);
    optim_adam_step(&b->model->params, &b->cfg.train, b->cfg.train.lr, step);
}

/* One setting's figures: ms per step, the share of the threads' time spent
 * outside GEMM, and the arenas' high water (all shards). */
typedef struct Timing { double ms, outside_gemm, arena_mb; } Timing;

/* Mean wall seconds per step over `steps` steps. */
static double run_steps(BenchModel *b, StepPool *p, int steps, long first) {
    double t0 = progress_now();
    for (int i = 0; i < steps; i++) one_step(b, p, first + i);
    return (progress_now() - t0) / steps;
}

/* `steps` steps (after a short warm-up) with `shards` data-parallel shards of one
 * BLAS thread each, or one shard on blas_threads; then as many again with the
 * GEMM time accounted (util/gemm.h: its clock reads stay out of the ms figure).
 * "Outside GEMM" is 1 − (time in al_sgemm, summed over the calling threads) /
 * (shards × wall time): elementwise work, copies, the gradient reduction, Adam,
 * and a shard's wait for the other, as a share of the threads' time. */
static Timing time_steps(BenchModel *b, int shards, int blas_threads, int steps, int length_groups) {
    Arena arena;
    arena_init(&arena, 16u << 20);
    Tape tape;
    tape_init(&tape, &arena);
    StepPool p;
    step_pool_init(&p, b->model, &tape, shards);
    p.length_groups = length_groups;
    openblas_set_num_threads(blas_threads);
    for (int i = 0; i < 3; i++) one_step(b, &p, i + 1);
    Timing r = { .ms = 1000.0 * run_steps(b, &p, steps, 4) };
    gemm_timing_start();
    double wall = run_steps(b, &p, steps, 4 + steps) * steps;
    r.outside_gemm = 1.0 - gemm_timing_stop(NULL) / (shards * wall);
    size_t bytes = arena.high_water;
    for (int s = 1; s < p.threads; s++) bytes += p.shard[s].arena.high_water;
    r.arena_mb = (double)bytes / 1e6;
    step_pool_free(&p);
    tape_free(&tape);
    arena_free(&arena);
    return r;
}

static double sgemm_gflops(int n, int reps) {
    float *a = malloc((size_t)n * n * sizeof(float)), *bm = malloc((size_t)n * n * sizeof(float)),
          *c = malloc((size_t)n * n * sizeof(float));
    for (long i = 0; i < (long)n * n; i++) a[i] = bm[i] = (float)(i % 7) * 0.1f;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, bm, n, 0, c, n);
    double t0 = progress_now();
    for (int r = 0; r < reps; r++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, bm, n, 0, c, n);
    double s = progress_now() - t0;
    free(a); free(bm); free(c);
    return 2.0 * n * n * (double)n * reps / s / 1e9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define MAX_ROUNDS 15
#define PAD_GROUPS 8   /* of the bench's 32 rows: four per group */

int bench_main(int argc, char **argv, AlError *err) {
    if (argc > 1 && !strcmp(argv[1], "attention")) return bench_attention_main(argc - 1, argv + 1, err);
    int rounds = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else return al_fail(err, 2, "bench: unknown argument '%s' (usage: ./train bench [--rounds N], "
                                    "./train bench attention [--max-n N] [--out DIR])", argv[i]);
    }
    if (rounds < 1 || rounds > MAX_ROUNDS) return al_fail(err, 2, "bench: --rounds must be 1..%d", MAX_ROUNDS);
    BenchModel models[N_MODELS], last, padded;
    for (int k = 0; k < N_MODELS; k++) setup_model(&models[k], &SPECS[k]);
    enum { CAUSAL = 1 };
    setup_last_only(&last, &SPECS[CAUSAL]);
    setup_padded(&padded, &SPECS[CAUSAL]);
    double ms_last[MAX_ROUNDS], ms_pad[2][MAX_ROUNDS];
    /* The settings: label, shards, BLAS threads, and which sgemm is "the same threads". */
    enum { N_SET = 3 };
    static const struct { const char *label; int shards, blas; } SET[N_SET] = {
        { "1", 1, 1 }, { "2", 2, 1 }, { "blas2", 1, 2 } };
    double ms[N_MODELS][N_SET][MAX_ROUNDS], outside[N_MODELS][N_SET][MAX_ROUNDS], arena_mb[N_MODELS][N_SET];
    double gemm[2][MAX_ROUNDS];
    printf("attnlab bench: %d rounds; each round times sgemm 1024^3 with 1 and 2 BLAS threads, then every model "
           "with 1 thread, 2 data-parallel threads, and 1 shard on 2 BLAS threads\n", rounds);
    for (int r = 0; r < rounds; r++) {
        for (int th = 0; th < 2; th++) {
            openblas_set_num_threads(th + 1);
            gemm[th][r] = sgemm_gflops(1024, 4);
        }
        for (int set = 0; set < N_SET; set++)
            for (int k = 0; k < N_MODELS; k++) {
                Timing tm = time_steps(&models[k], SET[set].shards, SET[set].blas, SPECS[k].steps, 1);
                ms[k][set][r] = tm.ms;
                outside[k][set][r] = tm.outside_gemm;
                arena_mb[k][set] = tm.arena_mb;   /* the same every round */
            }
        ms_last[r] = time_steps(&last, 1, 1, SPECS[CAUSAL].steps, 1).ms;
        for (int g = 0; g < 2; g++) ms_pad[g][r] = time_steps(&padded, 1, 1, SPECS[CAUSAL].steps, g ? PAD_GROUPS : 1).ms;
    }
    /* The reference is the single-thread sgemm: a second thread nearly doubles a
     * 1024³ sgemm but not the small GEMMs of these models, so "share of the
     * machine's one-core GEMM speed" is the figure comparable across settings. */
    for (int th = 0; th < 2; th++) qsort(gemm[th], (size_t)rounds, sizeof(double), cmp_double);
    double g1 = gemm[0][rounds / 2];
    printf("sgemm 1024^3: %.2f GFLOP/s with 1 thread, %.2f with 2 (medians; OpenBLAS kernels %s)\n", g1,
           gemm[1][rounds / 2], gemm_core_name());
    printf("%-8s %-8s %10s %10s %22s %10s %14s %10s\n", "model", "threads", "ms/step", "GFLOP/s",
           "% of 1-thread sgemm", "speedup", "outside GEMM", "arena MB");
    for (int th = 0; th < 2; th++) printf("RESULT sgemm1024 threads=%d gflops=%.2f\n", th + 1, gemm[th][rounds / 2]);
    for (int k = 0; k < N_MODELS; k++)
        for (int set = 0; set < N_SET; set++) {
            qsort(ms[k][set], (size_t)rounds, sizeof(double), cmp_double);
            qsort(outside[k][set], (size_t)rounds, sizeof(double), cmp_double);
        }
    for (int set = 0; set < N_SET; set++) {
        /* The sgemm of as many threads as cores in use. */
        double same = gemm[SET[set].shards * SET[set].blas - 1][rounds / 2];
        for (int k = 0; k < N_MODELS; k++) {
            BenchModel *b = &models[k];
            double m = ms[k][set][rounds / 2];
            /* Training step ≈ 3× the forward matmul FLOPs (forward + two backward GEMMs). */
            double flops = 3.0 * model_flops_per_seq(b->model, b->T) * b->cfg.train.batch_size;
            double gf = flops / (m * 1e-3) / 1e9;
            double out = outside[k][set][rounds / 2];
            printf("%-8s %-8s %10.3f %10.2f %21.1f%% %9.2fx %13.1f%% %10.1f\n", b->name, SET[set].label, m, gf,
                   100 * gf / g1, ms[k][0][rounds / 2] / m, 100 * out, arena_mb[k][set]);
            printf("RESULT attnlab %s threads=%s ms=%.4f gflops=%.2f sgemm=%.2f sgemm1=%.2f sgemm2=%.2f "
                   "outside_gemm=%.4f arena_mb=%.2f\n", b->name, SET[set].label, m, gf, same, g1, gemm[1][rounds / 2],
                   out, arena_mb[k][set]);
        }
    }
    qsort(ms_last, (size_t)rounds, sizeof(double), cmp_double);
    double all = ms[CAUSAL][0][rounds / 2], one = ms_last[rounds / 2];
    printf("causal, 1 thread, last position scored: %.3f ms/step against %.3f with every position scored: "
           "%.2fx (scored rows only after the last mixing)\n", one, all, all / one);
    printf("RESULT readout causal threads=1 ms_last=%.4f ms_all=%.4f ratio=%.3f\n", one, all, all / one);
    for (int g = 0; g < 2; g++) qsort(ms_pad[g], (size_t)rounds, sizeof(double), cmp_double);
    double plain = ms_pad[0][rounds / 2], grouped = ms_pad[1][rounds / 2];
    printf("causal, 1 thread, rows of lengths 10..100: %.3f ms/step in %d length groups against %.3f plain: %.2fx "
           "(train.length_groups)\n", grouped, PAD_GROUPS, plain, plain / grouped);
    printf("RESULT lengthgroups causal threads=1 groups=%d ms_groups=%.4f ms_plain=%.4f ratio=%.3f\n", PAD_GROUPS,
           grouped, plain, plain / grouped);
    BenchModel *extra[] = { &last, &padded };
    for (int k = 0; k < 2; k++) {
        model_free(extra[k]->model);
        free(extra[k]->tokens);
        free(extra[k]->targets);
    }
    for (int k = 0; k < N_MODELS; k++) {
        model_free(models[k].model);
        free(models[k].tokens);
        free(models[k].targets);
    }
    train_set_threads(0);
    return 0;
}
