/* curve.h — a run's training curve as a figure.
 *
 * Reads RUN_DIR/metrics.jsonl (one evaluation per line, written by the trainer,
 * all sittings of a resumed run) and writes RUN_DIR/curve.svg: train loss and
 * test loss against the step, log-scale y (losses are positive), so a long run's
 * curve can be looked at and committed next to its numbers. */
#ifndef ATTNLAB_REPORT_CURVE_H
#define ATTNLAB_REPORT_CURVE_H

#include "attnlab/util/error.h"

/* 0, or 1 when metrics.jsonl cannot be read or curve.svg written (err names the
 * file).  Lines without the fields, or with non-positive losses, are skipped. */
int report_curve(const char *run_dir, AlError *err);

#endif
