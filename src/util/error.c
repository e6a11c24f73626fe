/* error.c — AlError helpers and checked allocation. */
#include "attnlab/util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int al_fail(AlError *err, int code, const char *fmt, ...) {
    if (!err) return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
    return code;
}

void al_error_prefix(AlError *err, const char *fmt, ...) {
    if (!err) return;
    char head[AL_ERR_MAX], old[AL_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    al_msgf(err->msg, sizeof err->msg, "%s: %s", head, old);
}

char *al_msgf(char *buf, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);   /* a message longer than n - 1 bytes is cut: see error.h */
    va_end(ap);
    return buf;
}

void al_panic(const char *file, int line, const char *what) {
    fprintf(stderr, "attnlab: internal error at %s:%d: %s\n"
                    "  (this is a bug in attnlab, not in your input; please report it)\n",
            file, line, what);
    abort();
}

static void *oom(size_t n) {
    fprintf(stderr, "attnlab: out of memory allocating %zu bytes\n", n);
    exit(1);
}

void *al_malloc(size_t n) {
    void *p = malloc(n ? n : 1);
    return p ? p : oom(n);
}

void *al_calloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    return p ? p : oom(n * size);
}

void *al_realloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    return q ? q : oom(n);
}
