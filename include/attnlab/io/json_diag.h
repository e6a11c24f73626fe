/* json_diag.h — messages about JSON that a user wrote: where a document is
 * malformed, what a value is, and which name was probably meant.
 *
 * Every reader of hand-written JSON (the run config, the sweep section, paper
 * 002's experiment files, JSONL datasets) reports its errors in the same words;
 * the pieces of those words live here once.  All of them only format text: they
 * never decide what is valid. */
#ifndef ATTNLAB_IO_JSON_DIAG_H
#define ATTNLAB_IO_JSON_DIAG_H

#include "attnlab/util/error.h"

#include <cJSON.h>
#include <stddef.h>

/* ---- where: syntax errors ------------------------------------------------ */

/* cJSON only says *that* text[0..end) is malformed and roughly where it gave up
 * (cjson_at, may be NULL).  This re-reads the text to find the first error and say
 * what was expected there, as "src:L:C: what" with the line and a caret under the
 * column (json_diag_fail_at).  Returns err->code (2). */
int json_diag_syntax_error(const char *text, const char *end, const char *cjson_at, const char *src,
                           AlError *err);
/* Fails with "src:L:C: what" about the byte `at` of text[0..end), then the line
 * with a caret under the column:
 *
 *     configs/x.json:4:5: expected ',' or '}' after the value of "d_model", found '"' (missing comma?)
 *         4 |     "n_heads": 2
 *           |     ^
 */
int json_diag_fail_at(AlError *err, const char *src, const char *text, const char *end, const char *at,
                      const char *what);
/* What sits at `at` (before end), for "found ...": 'word', ',', the end of the
 * line, the end of the file, byte 0x01. */
const char *json_diag_found(const char *at, const char *end, char *buf, size_t n);
/* Skips JSON white space. */
const char *json_diag_skip_ws(const char *p, const char *end);

/* ---- what: a value as the user wrote it ---------------------------------- */

/* How a string's text is shown: its first 40 bytes, ... */
typedef enum {
    JSON_TEXT_RAW,          /* ... as they are */
    JSON_TEXT_NO_CONTROL,   /* ... control characters as '?', and "..." when cut */
    JSON_TEXT_ASCII,        /* ... every byte outside printable ASCII as '?', and "..." when cut */
} JsonTextStyle;

/* Formats a number, finite or not (1e999 parses to infinity). */
typedef const char *(*JsonNumberFormat)(double v, char *buf, size_t n);

/* al_fmt_double (exact and shortest); "a number too large for a double" when not finite. */
const char *json_diag_number(double v, char *buf, size_t n);
/* s shortened and made safe to print, as `style` says. */
const char *json_diag_excerpt(const char *s, JsonTextStyle style, char *buf, size_t n);
/* What the user wrote, for "got ...": `a string ("64")`, `1.5`, `true`, `null`,
 * `an object`, `an array`.  number NULL: json_diag_number. */
const char *json_diag_describe(const cJSON *v, JsonTextStyle style, JsonNumberFormat number, char *buf, size_t n);
/* The value as JSON text, cut after 60 bytes ("..."): `[16, 32]` reads better
 * than "an array" where a list was expected. */
const char *json_diag_as_written(const cJSON *v, char *buf, size_t n);

/* ---- which: names and did-you-mean ---------------------------------------- */

/* Index of s in the NULL-terminated names, or -1. */
int json_diag_name_index(const char *const *names, const char *s);
/* `"gelu_tanh", "gelu_erf"` */
const char *json_diag_choices(const char *const *names, char *buf, size_t n);

typedef enum {
    JSON_EDITS_EXACT,       /* Levenshtein: insert, delete, replace; case counts */
    JSON_EDITS_TYPO,        /* case-insensitive, and swapping two neighbours is one edit */
} JsonEdits;
/* Edit distance of a and b; 1000 when either is longer than 64 bytes. */
int json_diag_distance(const char *a, const char *b, JsonEdits edits);
/* How far `typed` is from `cand` for a suggestion, or -1 when too far: short words
 * tolerate one typo edit, longer ones two or three; a typed word of 3+ letters
 * that is part of the candidate also counts (ranked behind real near-misses, at
 * 100 + distance). */
int json_diag_closeness(const char *typed, const char *cand);
/* The closest of names[0..] to `typed` by json_diag_closeness, or NULL. */
const char *json_diag_closest(const char *const *names, const char *typed);

#endif
