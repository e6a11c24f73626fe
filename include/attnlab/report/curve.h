/* curve.h — a run's training curve as a figure.
 *
 * Reads RUN_DIR/metrics.jsonl (one evaluation per line, written by the trainer,
 * all sittings of a resumed run) and writes RUN_DIR/curve.svg: train loss and
 * test loss against the step, log-scale y (losses are positive), so a long run's
 * curve can be looked at and committed next to its numbers. */
#ifndef ATTNLAB_REPORT_CURVE_H
#define ATTNLAB_REPORT_CURVE_H

#include "attnlab/util/error.h"

#include <stddef.h>

/* 0, or 1 when metrics.jsonl cannot be read or curve.svg written (err names the
 * file).  Lines without the fields, or with non-positive losses, are skipped. */
int report_curve(const char *run_dir, AlError *err);

/* Several runs side by side: the test metric `metric` of metrics.jsonl ("token_acc",
 * "seq_acc", "answer_acc", or "test_loss") against the step, one series per run
 * named after its folder (a sweep cell as "SWEEP: CELL"), written to out_svg (e.g.
 * validation accuracy vs steps of a transformer and an LSTM at the same problem
 * size).  Accuracies get a fixed [0, 1] axis.  0; 1 when a metrics.jsonl cannot be
 * read or the file written; 2 for an unknown metric or a run without any value of
 * it (err names the run). */
int report_compare(const char *const *run_dirs, int n_runs, const char *metric, const char *out_svg,
                   AlError *err);

/* A series name for a folder, written into buf (len bytes) and returned: its last
 * component ("results/arith/" → "arith"); a sweep cell (".../SWEEP/cells/CELL") is
 * "SWEEP: CELL", so cells of two sweeps stay apart. */
const char *report_folder_name(const char *dir, char *buf, size_t len);

#endif
