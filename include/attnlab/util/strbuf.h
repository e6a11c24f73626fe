/* strbuf.h — a growable string and exact number text, for files written as text
 * (configs, CSV, JSON, Markdown). */
#ifndef ATTNLAB_UTIL_STRBUF_H
#define ATTNLAB_UTIL_STRBUF_H

#include <stddef.h>

/* s is NULL until the first append; the owner frees s. */
typedef struct StrBuf { char *s; size_t len, cap; } StrBuf;

/* Appends printf-formatted text, growing the buffer (aborts only when out of memory). */
void strbuf_printf(StrBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The shortest "%g" text that reads back as exactly v — 0.001 rather than
 * 0.00100000000000000002 — with whole numbers in full (1060, not 1.06e+03).
 * Writes into buf (n bytes; 32 is enough) and returns it. */
const char *al_fmt_double(double v, char *buf, size_t n);

/* Appends "\"key\": V, " with V as "%.6g" — or null when v is NaN or infinite,
 * which have no JSON spelling (a bare nan would make the whole line invalid JSON). */
void strbuf_json_number(StrBuf *b, const char *key, double v);

#endif
