/* bench.h — `./train bench`: ms per training step (forward + backward + Adam) of
 * the reference models, their achieved GFLOP/s, and the sgemm GFLOP/s of this
 * machine measured in the same run (these machines are shared and noisy: only
 * ratios measured side by side mean something). */
#ifndef ATTNLAB_TRAIN_BENCH_H
#define ATTNLAB_TRAIN_BENCH_H

#include "attnlab/util/error.h"

int bench_main(int argc, char **argv, AlError *err);

#endif
