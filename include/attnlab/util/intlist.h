/* intlist.h — integer lists written as text in configs: "1..16", "32..96/8",
 * "1,2,4,8" or any comma-separated mix ("1..4,8,16..32/8").  Why text: the config
 * schema holds scalars, and a range is what a researcher types anyway. */
#ifndef ATTNLAB_UTIL_INTLIST_H
#define ATTNLAB_UTIL_INTLIST_H

#include <stddef.h>

/* Parses spec into out[0..*n) (at most max values, each in [lo, hi]).  Returns 0, or
 * −1 with a reason such as "'0' is below 1" or "expected a number at '..x'" in why. */
int intlist_parse(const char *spec, int lo, int hi, int *out, int max, int *n, char *why, size_t why_len);

/* Splits "A;B;C" into per-item lists: item i of spec (or the only item, repeated)
 * goes to lists[i].  Returns 0 or −1 with why, like intlist_parse. */
int intlist_parse_per(const char *spec, int items, int lo, int hi, int *lists, int max, int *counts,
                      char *why, size_t why_len);

#endif
