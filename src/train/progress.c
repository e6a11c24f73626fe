/* progress.c — see progress.h. */
#include "attnlab/train/progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

double progress_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void progress_init(Progress *p, int quiet) {
    p->tty = isatty(fileno(stdout));
    p->quiet = quiet;
    p->last_draw = 0;
    p->line_open = 0;
}

static void format_eta(char *buf, size_t n, double s) {
    if (s < 0 || s > 1e7) snprintf(buf, n, "?");
    else if (s < 60) snprintf(buf, n, "%.0fs", s);
    else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

void progress_step(Progress *p, const ProgressInfo *in) {
    if (p->quiet || !p->tty) return;
    double now = progress_now();
    if (now - p->last_draw < 0.2 && in->step != in->total) return;
    p->last_draw = now;
    char eta[32], acc[32] = "-";
    format_eta(eta, sizeof eta, in->steps_per_s > 0 ? (in->total - in->step) / in->steps_per_s : -1);
    if (in->test_acc >= 0) snprintf(acc, sizeof acc, "%.2f%%", 100 * in->test_acc);
    printf("\r\033[K step %ld/%ld | loss %.4f | test acc %s | lr %.2e | %.0f steps/s | ETA %s",
           in->step, in->total, in->train_loss, acc, (double)in->lr, in->steps_per_s, eta);
    fflush(stdout);
    p->line_open = 1;
}

void progress_line(Progress *p, const char *fmt, ...) {
    if (p->quiet) return;
    if (p->line_open) {
        printf("\r\033[K");
        p->line_open = 0;
    }
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}
