/* progress.h — what a person watching a run sees.
 *
 * On a terminal: one line rewritten in place (step/total, loss, accuracy, lr,
 * steps/s, ETA), at most ~5 times a second.  Otherwise (a log file, Slurm, nohup,
 * CI): plain lines only — one per evaluation, and a status line "step S/T (P%) |
 * X steps/s | ETA hh:mm:ss | loss …" whenever no such line was printed for
 * progress_interval_s() seconds (60 by default), so a log never goes silent for
 * long and always says how far the run is.  Every line is flushed at once (stdout
 * to a file is fully buffered: a killed job would lose what it had not flushed).
 * --quiet: nothing.
 *
 * The ETA is the steps left at the wall-clock pace of this sitting so far
 * (evaluations and checkpoints included), not at the bare training-step rate. */
#ifndef ATTNLAB_TRAIN_PROGRESS_H
#define ATTNLAB_TRAIN_PROGRESS_H

#include <stddef.h>

typedef struct ProgressInfo {
    long step, total;
    double train_loss;        /* running mean since the last eval */
    double test_acc;          /* last eval's token accuracy (−1: none yet) */
    float lr;
    double steps_per_s;
} ProgressInfo;

typedef struct Progress {
    int tty, quiet;
    double last_draw;         /* seconds, monotonic: the live line's last redraw (tty) */
    int line_open;            /* a \r line is on screen and needs a newline */
    double interval_s;        /* off a terminal: a status line at least this often */
    double last_status;       /* when the last line with step/total and ETA was printed */
    ProgressInfo last;        /* the latest progress_step (last.total 0: none yet) */
    double pace_t0;           /* wall clock and step at the first progress_step, */
    long pace_step0;          /* for the ETA (pace_step0 −1: not yet) */
} Progress;

void progress_init(Progress *p, int quiet);
/* Every step: redraws the live line on a tty (throttled); off a terminal, prints a
 * status line when none was printed for interval_s. */
void progress_step(Progress *p, const ProgressInfo *info);
/* Prints a finished line (notes, messages) without garbling the live line. */
void progress_line(Progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An evaluation's line: fmt's text, then "| S/T (P%) | X steps/s | ETA hh:mm:ss"
 * for step (total and pace from the latest progress_step; nothing appended before
 * the first).  Counts as a status line for the interval. */
void progress_eval(Progress *p, long step, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
double progress_now(void);                                      /* monotonic seconds */

/* Seconds between status lines off a terminal: ATTNLAB_PROGRESS_INTERVAL_S when set
 * to a number >= 0 (0: every step; for tests, or a very chatty log), else 60.  Read at
 * every call, like the test hooks (util/testhook.h). */
double progress_interval_s(void);
/* "hh:mm:ss" (hours grow past 99 as needed), or "?" for a negative or absurd s. */
void progress_format_eta(char *buf, size_t n, double seconds);

#endif
