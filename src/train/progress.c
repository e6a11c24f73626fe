/* progress.c — see progress.h. */
#include "attnlab/train/progress.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_INTERVAL_S 60.0

double progress_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double progress_interval_s(void) {
    const char *s = getenv("ATTNLAB_PROGRESS_INTERVAL_S");
    if (!s || !*s) return DEFAULT_INTERVAL_S;
    char *end;
    double v = strtod(s, &end);
    return *end || !isfinite(v) || v < 0 ? DEFAULT_INTERVAL_S : v;
}

void progress_init(Progress *p, int quiet) {
    p->tty = isatty(fileno(stdout));
    p->quiet = quiet;
    p->last_draw = 0;
    p->line_open = 0;
    p->interval_s = progress_interval_s();
    p->last_status = progress_now();
    p->last = (ProgressInfo){ 0 };
    p->pace_t0 = 0;
    p->pace_step0 = -1;
}

void progress_format_eta(char *buf, size_t n, double s) {
    if (!(s >= 0) || s > 1e8) {
        snprintf(buf, n, "?");
        return;
    }
    long t = lround(s);
    snprintf(buf, n, "%02ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

/* Seconds left for the steps after `step`: the wall-clock pace of this sitting once
 * it has one, else the caller's training-step rate; −1 when neither is known. */
static double eta_s(const Progress *p, long step) {
    long left = p->last.total - step;
    double now = progress_now();
    if (p->pace_step0 >= 0 && step > p->pace_step0 && now > p->pace_t0)
        return left * (now - p->pace_t0) / (double)(step - p->pace_step0);
    return p->last.steps_per_s > 0 ? left / p->last.steps_per_s : -1;
}

/* 1234 steps/s, 85.3 steps/s, 0.42 steps/s: three significant digits without
 * an exponent. */
static void format_rate(char *buf, size_t n, double r) {
    snprintf(buf, n, "%.*f", r >= 100 ? 0 : r >= 10 ? 1 : 2, r);
}

/* "S/T (P%) | X steps/s | ETA hh:mm:ss" */
static void position_text(const Progress *p, long step, char *buf, size_t n) {
    char eta[32], rate[32];
    progress_format_eta(eta, sizeof eta, eta_s(p, step));
    format_rate(rate, sizeof rate, p->last.steps_per_s);
    long pct = p->last.total > 0 ? 100 * step / p->last.total : 0;   /* floor: 100% only when done */
    snprintf(buf, n, "%ld/%ld (%ld%%) | %s steps/s | ETA %s", step, p->last.total, pct, rate, eta);
}

/* "step S/T (P%) | … | loss L | test acc A | lr R": the one status line, redrawn in
 * place on a terminal (draw_live) or printed as a line of a log (print_status). */
static void status_text(const Progress *p, const ProgressInfo *in, char *buf, size_t n) {
    char pos[128], acc[32] = "-";
    position_text(p, in->step, pos, sizeof pos);
    if (in->test_acc >= 0) snprintf(acc, sizeof acc, "%.2f%%", 100 * in->test_acc);
    snprintf(buf, n, "step %s | loss %.4f | test acc %s | lr %.2e", pos, in->train_loss, acc, (double)in->lr);
}

/* 1 (and *last = now) when at least `interval` seconds passed since *last. */
static int due(double *last, double interval) {
    double now = progress_now();
    if (now - *last < interval) return 0;
    *last = now;
    return 1;
}

static void draw_live(Progress *p, const ProgressInfo *in) {
    if (!due(&p->last_draw, in->step == in->total ? 0.0 : 0.2)) return;
    char line[320];
    status_text(p, in, line, sizeof line);
    printf("\r\033[K %s", line);
    fflush(stdout);
    p->line_open = 1;
}

static void print_status(Progress *p, const ProgressInfo *in) {
    if (!due(&p->last_status, p->interval_s)) return;
    char line[320];
    status_text(p, in, line, sizeof line);
    printf("%s\n", line);
    fflush(stdout);
}

void progress_step(Progress *p, const ProgressInfo *in) {
    if (p->pace_step0 < 0) {
        p->pace_step0 = in->step;
        p->pace_t0 = progress_now();
    }
    p->last = *in;
    if (p->quiet) return;
    if (p->tty) draw_live(p, in);
    else print_status(p, in);
}

static void vline(Progress *p, const char *suffix, const char *fmt, va_list ap) {
    if (p->line_open) {
        printf("\r\033[K");
        p->line_open = 0;
    }
    vprintf(fmt, ap);
    fputs(suffix, stdout);
    fputc('\n', stdout);
    fflush(stdout);
}

void progress_line(Progress *p, const char *fmt, ...) {
    if (p->quiet) return;
    va_list ap;
    va_start(ap, fmt);
    vline(p, "", fmt, ap);
    va_end(ap);
}

void progress_eval(Progress *p, long step, const char *fmt, ...) {
    if (p->quiet) return;
    char suffix[160] = "";
    if (p->last.total > 0) {
        char pos[128];
        position_text(p, step, pos, sizeof pos);
        snprintf(suffix, sizeof suffix, " | %s", pos);
        p->last_status = progress_now();
    }
    va_list ap;
    va_start(ap, fmt);
    vline(p, suffix, fmt, ap);
    va_end(ap);
}
