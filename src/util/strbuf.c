/* strbuf.c — see strbuf.h. */
#include "attnlab/util/strbuf.h"
#include "attnlab/util/error.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void strbuf_printf(StrBuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->len + (size_t)n + 1 > b->cap) {
        b->cap = 2 * (b->len + (size_t)n + 1);
        b->s = al_realloc(b->s, b->cap);
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

const char *al_fmt_double(double v, char *buf, size_t n) {
    if (!buf || !n) return buf;   /* (the sanitizer build's -Wformat-truncation sees a NULL buf otherwise) */
    if (v == floor(v) && fabs(v) < 1e16) {
        snprintf(buf, n, "%.0f", v);
        return buf;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, n, "%.*g", p, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

void strbuf_json_number(StrBuf *b, const char *key, double v) {
    if (isfinite(v)) strbuf_printf(b, "\"%s\": %.6g, ", key, v);
    else strbuf_printf(b, "\"%s\": null, ", key);
}
