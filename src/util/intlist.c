/* intlist.c — see intlist.h. */
#include "attnlab/util/intlist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int number(const char **p, long *v, char *why, size_t why_len) {
    char *end;
    while (**p == ' ') (*p)++;
    *v = strtol(*p, &end, 10);
    if (end == *p) {
        snprintf(why, why_len, "expected a number at '%.20s'", *p);
        return -1;
    }
    *p = end;
    while (**p == ' ') (*p)++;
    return 0;
}

static int in_range(long v, int lo, int hi, char *why, size_t why_len) {
    if (v >= lo && v <= hi) return 0;
    snprintf(why, why_len, "%ld is outside [%d, %d]", v, lo, hi);
    return -1;
}

int intlist_parse(const char *spec, int lo, int hi, int *out, int max, int *n, char *why, size_t why_len) {
    const char *p = spec;
    *n = 0;
    if (!*spec) {
        snprintf(why, why_len, "empty list");
        return -1;
    }
    for (;;) {
        long a, b, step = 1;
        if (number(&p, &a, why, why_len) || in_range(a, lo, hi, why, why_len)) return -1;
        b = a;
        if (!strncmp(p, "..", 2)) {
            p += 2;
            if (number(&p, &b, why, why_len) || in_range(b, lo, hi, why, why_len)) return -1;
            if (*p == '/') {
                p++;
                if (number(&p, &step, why, why_len)) return -1;
            }
            if (b < a || step < 1) {
                snprintf(why, why_len, "range %ld..%ld/%ld is empty (write low..high/step)", a, b, step);
                return -1;
            }
        }
        for (long v = a; v <= b; v += step) {
            if (*n == max) {
                snprintf(why, why_len, "more than %d values", max);
                return -1;
            }
            out[(*n)++] = (int)v;
        }
        if (*p == '\0') return 0;
        if (*p != ',') {
            snprintf(why, why_len, "unexpected '%c' (write e.g. 1..16, 32..96/8 or 1,2,4)", *p);
            return -1;
        }
        p++;
    }
}

int intlist_parse_per(const char *spec, int items, int lo, int hi, int *lists, int max, int *counts,
                      char *why, size_t why_len) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", spec);
    int parts = 1;
    for (const char *c = buf; *c; c++) parts += *c == ';';
    if (parts != 1 && parts != items) {
        snprintf(why, why_len, "%d ';'-separated lists for %d layers (give one, or one per layer)", parts, items);
        return -1;
    }
    char *save = NULL, *tok = strtok_r(buf, ";", &save);
    for (int i = 0; i < items; i++) {
        if (!tok) tok = buf;   /* one list for every item: reuse the first */
        if (intlist_parse(tok, lo, hi, lists + (size_t)i * max, max, &counts[i], why, why_len)) return -1;
        if (parts > 1) tok = strtok_r(NULL, ";", &save);
    }
    return 0;
}
