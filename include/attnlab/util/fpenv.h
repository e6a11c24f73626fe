/* fpenv.h — the floating-point mode the computing threads run in: denormals flushed
 * to zero.
 *
 * Why: a denormal operand (0 < |x| < 2^−126) sends an x86 multiply-add through a
 * microcode assist, many times slower than the plain instruction.  Training makes
 * them when a model sits near chance for long: its gradients and Adam moments
 * shrink until some underflow.  A protocol LSTM on Eq-random at chance slowed down
 * step after step without the mode, and ran at an even pace with it, on the same
 * losses (bench/README.md, "Denormals").  With FTZ (results that would be
 * denormal become 0) and DAZ (denormal operands read as 0) nothing in the framework
 * can tell 1e-39 from 0 (fm_exp flushes them already, util/fastmath.h), and a step
 * costs what its arithmetic does.
 *
 * The mode belongs to a thread (x86: its MXCSR); a new thread starts with its
 * creator's.  main() sets it before anything runs, train_run() again (a test may
 * train without main), and every step worker at its start.  OpenBLAS's own worker
 * threads are made when the library loads, before main, and keep the default
 * mode: training gives the BLAS one thread per worker (train/step.c), so only
 * `bench` with several BLAS threads computes there.  Not x86: a no-op. */
#ifndef ATTNLAB_UTIL_FPENV_H
#define ATTNLAB_UTIL_FPENV_H

/* Sets FTZ and DAZ for the calling thread. */
void fpenv_flush_denormals(void);

/* 1 when the calling thread flushes denormals (both FTZ and DAZ), else 0; on a CPU
 * without the mode, -1. */
int fpenv_flushing(void);

#endif
