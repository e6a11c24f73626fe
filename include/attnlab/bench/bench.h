/* bench.h — `./train bench`: ms per training step (forward + backward + Adam) of
 * the reference models, their achieved GFLOP/s, and the sgemm GFLOP/s of this
 * machine measured in the same run (these machines are shared and noisy: only
 * ratios measured side by side mean something). */
#ifndef ATTNLAB_BENCH_BENCH_H
#define ATTNLAB_BENCH_BENCH_H

#include "attnlab/util/error.h"

/* argv[0] is "bench"; `bench attention …` goes to bench_attention_main. */
int bench_main(int argc, char **argv, AlError *err);

/* ---- ./train bench attention (bench_attention.c) --------------------------------
 * One causal attention layer's forward time against sequence length N (powers of
 * two from 256 to max_n; d = 64, one head) for exact softmax, ANNA (both LSH
 * families), linear and sparse attention; ANNA's error against exact softmax on
 * the same inputs; the fitted exponent of time vs N.  Writes speed.csv, speed.svg
 * and summary.json into out_dir.  bench/README.md describes the protocol. */
typedef struct BenchAttentionOptions {
    int max_n;             /* power of two in 256..262144; 0 = 65536 */
    const char *out_dir;   /* NULL = results/attention_speed */
} BenchAttentionOptions;

/* argv[0] is "attention": [--max-n N] [--out DIR]. */
int bench_attention_main(int argc, char **argv, AlError *err);
int bench_attention_run(const BenchAttentionOptions *opt, AlError *err);

/* Exact causal softmax attention without the n×n matrix:
 *   out_i = Σ_{j≤i} e^{scale·q_i·k_j} v_j / Σ_{j≤i} e^{scale·q_i·k_j}
 * by blocks of query rows against the keys they can see (two sgemm per block,
 * max-subtracted softmax between).  q, k (n × d), v and out (n × dv), row-major;
 * work: attention_blocked_work_floats(n) floats. */
void attention_softmax_causal_blocked(const float *q, const float *k, const float *v, int n, int d,
                                      int dv, float scale, float *out, float *work);
long attention_blocked_work_floats(int n);

/* Least-squares slope of log t against log n over `count` points: the exponent p
 * of t ≈ c·n^p.  NaN when count < 2, all n are equal, or a value is not > 0. */
double bench_fit_exponent(const double *n, const double *t, int count);

#endif
