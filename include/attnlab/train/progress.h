/* progress.h — what a person watching a run sees.
 *
 * On a terminal: one line rewritten in place (step/total, loss, accuracy, lr,
 * steps/s, ETA), at most ~5 times a second.  Otherwise (a log file, CI): one plain
 * line per evaluation.  --quiet: nothing. */
#ifndef ATTNLAB_TRAIN_PROGRESS_H
#define ATTNLAB_TRAIN_PROGRESS_H

typedef struct Progress {
    int tty, quiet;
    double last_draw;         /* seconds, monotonic */
    int line_open;            /* a \r line is on screen and needs a newline */
} Progress;

typedef struct ProgressInfo {
    long step, total;
    double train_loss;        /* running mean since the last eval */
    double test_acc;          /* last eval's token accuracy (−1: none yet) */
    float lr;
    double steps_per_s;
} ProgressInfo;

void progress_init(Progress *p, int quiet);
void progress_step(Progress *p, const ProgressInfo *info);    /* throttled on a tty */
/* Prints a finished line (evaluations, notes) without garbling the live line. */
void progress_line(Progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
double progress_now(void);                                      /* monotonic seconds */

#endif
