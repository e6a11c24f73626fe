/* json_diag.c — see json_diag.h.
 *
 * Three parts, each used by several readers: the description of a value for
 * "expected ..., got X" (json_diag_describe and its text and number forms, which
 * the readers choose so that each keeps its messages), the did-you-mean search
 * (an edit distance with a tolerance that grows with the word), and the syntax
 * error recogniser.  The recogniser is a small hand-written JSON parser that runs
 * on the error path only, after cJSON has refused the text: it finds the first
 * error and says what was expected there ("expected ',' or '}' after the value of
 * \"d_model\", found '\"' (missing comma?)"), then json_diag_fail_at shows the line
 * with a caret. */
#include "attnlab/io/json_diag.h"
#include "attnlab/util/strbuf.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXCERPT_BYTES 40   /* of a string value or key shown in a message */

/* ---- what: a value as the user wrote it ---------------------------------- */

const char *json_diag_number(double v, char *buf, size_t n) {
    if (isfinite(v)) return al_fmt_double(v, buf, n);
    snprintf(buf, n, "%s", "a number too large for a double");
    return buf;
}

static char shown_byte(char ch, JsonTextStyle style) {
    unsigned char u = (unsigned char)ch;
    if (style == JSON_TEXT_NO_CONTROL) return u < 0x20 ? '?' : ch;
    if (style == JSON_TEXT_ASCII) return u >= 0x20 && u < 0x7f ? ch : '?';
    return ch;
}

const char *json_diag_excerpt(const char *s, JsonTextStyle style, char *buf, size_t n) {
    size_t i = 0;
    for (; s[i] && i < EXCERPT_BYTES && i + 4 < n; i++) buf[i] = shown_byte(s[i], style);
    if (s[i] && style != JSON_TEXT_RAW) memcpy(buf + i, "...", 3), i += 3;
    buf[i] = 0;
    return buf;
}

const char *json_diag_describe(const cJSON *v, JsonTextStyle style, JsonNumberFormat number, char *buf, size_t n) {
    char text[EXCERPT_BYTES + 8];
    if (cJSON_IsString(v))
        snprintf(buf, n, "a string (\"%s\")", json_diag_excerpt(v->valuestring, style, text, sizeof text));
    else if (cJSON_IsNumber(v)) (number ? number : json_diag_number)(v->valuedouble, buf, n);
    else if (cJSON_IsTrue(v))   snprintf(buf, n, "%s", "true");
    else if (cJSON_IsFalse(v))  snprintf(buf, n, "%s", "false");
    else if (cJSON_IsNull(v))   snprintf(buf, n, "%s", "null");
    else if (cJSON_IsObject(v)) snprintf(buf, n, "%s", "an object");
    else if (cJSON_IsArray(v))  snprintf(buf, n, "%s", "an array");
    else                        snprintf(buf, n, "%s", "an unsupported value");
    return buf;
}

const char *json_diag_as_written(const cJSON *v, char *buf, size_t n) {
    char *text = cJSON_PrintUnformatted(v);
    snprintf(buf, n, "%.60s%s", text ? text : "?", text && strlen(text) > 60 ? "..." : "");
    free(text);
    return buf;
}

/* ---- which: names and did-you-mean ---------------------------------------- */

int json_diag_name_index(const char *const *names, const char *s) {
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], s)) return i;
    return -1;
}

const char *json_diag_choices(const char *const *names, char *buf, size_t n) {
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; names[i] && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s\"%s\"", i ? ", " : "", names[i]);
    return buf;
}

/* The optimal-string-alignment (Damerau-Levenshtein) table: with JSON_EDITS_TYPO
 * "bta" -> "beta" is 1, "nheads" -> "n_heads" is 1, "lr" <-> "rl" is 1. */
int json_diag_distance(const char *a, const char *b, JsonEdits edits) {
    enum { M = 64 };
    int la = (int)strlen(a), lb = (int)strlen(b), typo = edits == JSON_EDITS_TYPO;
    if (la > M || lb > M) return 1000;
    int d[M + 1][M + 1];
    for (int i = 0; i <= la; i++) d[i][0] = i;
    for (int j = 0; j <= lb; j++) d[0][j] = j;
    for (int i = 1; i <= la; i++) {
        for (int j = 1; j <= lb; j++) {
            int ca = (unsigned char)a[i - 1], cb = (unsigned char)b[j - 1];
            if (typo) ca = tolower(ca), cb = tolower(cb);
            int best = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (typo && i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

/* Case-insensitive substring test, for "warmup" -> "warmup_steps". */
static int contains(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == n) return 1;
    }
    return 0;
}

int json_diag_closeness(const char *typed, const char *cand) {
    int d = json_diag_distance(typed, cand, JSON_EDITS_TYPO);
    size_t n = strlen(typed) > strlen(cand) ? strlen(typed) : strlen(cand);
    int limit = n <= 4 ? 1 : n <= 8 ? 2 : 3;
    if (d <= limit) return d;
    if (strlen(typed) >= 3 && contains(cand, typed)) return 100 + d;
    return -1;
}

const char *json_diag_closest(const char *const *names, const char *typed) {
    const char *best = NULL;
    int best_d = INT_MAX;
    for (int i = 0; names[i]; i++) {
        int d = json_diag_closeness(typed, names[i]);
        if (d >= 0 && d < best_d) best_d = d, best = names[i];
    }
    return best;
}

/* ---- where: syntax errors ------------------------------------------------ */

const char *json_diag_skip_ws(const char *p, const char *end) {
    while (p < end && strchr(" \t\r\n", *p)) p++;
    return p;
}

typedef struct JsonLint {
    const char *text, *p, *end;
    const char *at;          /* the first error */
    char what[256];
} JsonLint;

static void line_col(const char *text, const char *at, int *line, int *col) {
    *line = 1, *col = 1;
    for (const char *p = text; p < at; p++) {
        if (*p == '\n') ++*line, *col = 1;
        else if (((unsigned char)*p & 0xC0) != 0x80) ++*col;   /* count UTF-8 characters */
    }
}

static int lint_fail(JsonLint *l, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int lint_fail(JsonLint *l, const char *at, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->what, sizeof l->what, fmt, ap);
    va_end(ap);
    l->at = at;
    return -1;
}

static void lint_ws(JsonLint *l) { l->p = json_diag_skip_ws(l->p, l->end); }

static int is_word(char ch) { return isalnum((unsigned char)ch) || ch == '_'; }

const char *json_diag_found(const char *at, const char *end, char *buf, size_t n) {
    if (at >= end) snprintf(buf, n, "the end of the file");
    else if (is_word(*at)) {
        int m = 0;
        while (at + m < end && is_word(at[m]) && m < 24) m++;
        snprintf(buf, n, "'%.*s'", m, at);
    } else if (*at == '\n' || *at == '\r') snprintf(buf, n, "the end of the line");
    else if (isprint((unsigned char)*at)) snprintf(buf, n, "'%c'", *at);
    else if ((unsigned char)*at >= 0xC0) {   /* a whole UTF-8 character */
        int m = 1;
        while (at + m < end && ((unsigned char)at[m] & 0xC0) == 0x80 && m < 4) m++;
        snprintf(buf, n, "'%.*s'", m, at);
    }
    else snprintf(buf, n, "byte 0x%02x", (unsigned char)*at);
    return buf;
}

static int lint_unclosed(JsonLint *l, const char *open) {
    int line, col;
    line_col(l->text, open, &line, &col);
    return lint_fail(l, l->end, "unexpected end of file: the '%c' at line %d, column %d is never closed",
                     *open, line, col);
}

static int lint_string(JsonLint *l) {
    const char *open = l->p++;
    while (l->p < l->end && *l->p != '\n') {
        char ch = *l->p;
        if (ch == '"') { l->p++; return 0; }
        if (ch == '\\') {
            if (l->p + 1 >= l->end || l->p[1] == '\n') break;
            if (!strchr("\"\\/bfnrtu", l->p[1]) || !isprint((unsigned char)l->p[1]))
                return lint_fail(l, l->p, "invalid escape '\\%c' in a string",
                                 isprint((unsigned char)l->p[1]) ? l->p[1] : '?');
            if (l->p[1] == 'u') {
                for (int i = 2; i < 6; i++)
                    if (l->p + i >= l->end || !isxdigit((unsigned char)l->p[i]))
                        return lint_fail(l, l->p, "invalid escape: \\u needs 4 hex digits");
                l->p += 4;
            }
            l->p++;
        }
        l->p++;
    }
    return lint_fail(l, open, "unterminated string (no closing '\"' on this line)");
}

static int lint_number(JsonLint *l) {
    const char *start = l->p;
    if (*l->p == '-') l->p++;
    int digits = 0;
    while (l->p < l->end && isdigit((unsigned char)*l->p)) l->p++, digits++;
    if (digits && l->p < l->end && *l->p == '.') {
        l->p++;
        while (l->p < l->end && isdigit((unsigned char)*l->p)) l->p++;
    }
    if (digits && l->p < l->end && (*l->p == 'e' || *l->p == 'E')) {
        l->p++;
        if (l->p < l->end && (*l->p == '+' || *l->p == '-')) l->p++;
        digits = 0;
        while (l->p < l->end && isdigit((unsigned char)*l->p)) l->p++, digits++;
    }
    if (!digits || (l->p < l->end && (is_word(*l->p) || *l->p == '.'))) {
        const char *e = l->p;
        while (e < l->end && (is_word(*e) || strchr(".+-", *e)) && e - start < 24) e++;
        return lint_fail(l, start, "invalid number '%.*s'", (int)(e - start), start);
    }
    return 0;
}

/* A value that starts with none of { [ " - 0-9: a literal, or a typical mistake. */
static int lint_word(JsonLint *l) {
    static const char *const lits[] = { "true", "false", "null", NULL };
    char word[32], found[64];
    int m = 0;
    while (l->p + m < l->end && is_word(l->p[m])) m++;
    snprintf(word, sizeof word, "%.*s", m, l->p);
    if (m && json_diag_name_index(lits, word) >= 0) { l->p += m; return 0; }
    if (*l->p == '/') return lint_fail(l, l->p, "comments are not allowed in JSON");
    if (*l->p == '\'') return lint_fail(l, l->p, "strings need double quotes (\"...\"), found '''");
    if (!strcmp(word, "NaN") || !strcmp(word, "Infinity") || !strcmp(word, "inf"))
        return lint_fail(l, l->p, "NaN and Infinity are not valid JSON numbers");
    const char *hint = "";
    const char *lit = json_diag_closest(lits, word);
    if (lit && json_diag_distance(word, lit, JSON_EDITS_TYPO) == 0) hint = " (true, false and null are lowercase in JSON)";
    else if (m && isalpha((unsigned char)*l->p) && !lit) hint = " (strings need double quotes)";
    return lint_fail(l, l->p, "expected a value (object, array, string, number, true, false or null), found %s%s",
                     json_diag_found(l->p, l->end, found, sizeof found), hint);
}

static int lint_value(JsonLint *l, int depth);

static int lint_key(JsonLint *l, const char *comma, char *key, size_t n) {
    char found[64];
    if (*l->p != '"') {
        if (*l->p == '}' && comma) return lint_fail(l, comma, "trailing comma before '}' (JSON does not allow one)");
        if (*l->p == '/') return lint_fail(l, l->p, "comments are not allowed in JSON");
        return lint_fail(l, l->p, "expected a key in double quotes, found %s%s",
                         json_diag_found(l->p, l->end, found, sizeof found), (*l->p == '\'' || is_word(*l->p)) ? " (keys need double quotes)" : "");
    }
    const char *start = l->p + 1;
    if (lint_string(l)) return -1;
    snprintf(key, n, "%.*s", (int)(l->p - 1 - start), start);
    return 0;
}

static int lint_object(JsonLint *l, int depth) {
    const char *open = l->p++, *comma = NULL;
    char key[64], found[64];
    lint_ws(l);
    if (l->p < l->end && *l->p == '}') { l->p++; return 0; }
    for (;;) {
        lint_ws(l);
        if (l->p >= l->end) return lint_unclosed(l, open);
        if (lint_key(l, comma, key, sizeof key)) return -1;
        lint_ws(l);
        if (l->p >= l->end) return lint_unclosed(l, open);
        if (*l->p != ':')
            return lint_fail(l, l->p, "expected ':' after the key \"%s\", found %s", key,
                             json_diag_found(l->p, l->end, found, sizeof found));
        l->p++;
        if (lint_value(l, depth + 1)) return -1;
        lint_ws(l);
        if (l->p >= l->end) return lint_unclosed(l, open);
        if (*l->p == '}') { l->p++; return 0; }
        if (*l->p != ',')
            return lint_fail(l, l->p, "expected ',' or '}' after the value of \"%s\", found %s%s", key,
                             json_diag_found(l->p, l->end, found, sizeof found), *l->p == '"' ? " (missing comma?)" : "");
        comma = l->p++;
    }
}

static int lint_array(JsonLint *l, int depth) {
    const char *open = l->p++;
    char found[64];
    lint_ws(l);
    if (l->p < l->end && *l->p == ']') { l->p++; return 0; }
    for (;;) {
        if (lint_value(l, depth + 1)) return -1;
        lint_ws(l);
        if (l->p >= l->end) return lint_unclosed(l, open);
        if (*l->p == ']') { l->p++; return 0; }
        if (*l->p != ',')
            return lint_fail(l, l->p, "expected ',' or ']' after an array element, found %s",
                             json_diag_found(l->p, l->end, found, sizeof found));
        const char *comma = l->p++;
        lint_ws(l);
        if (l->p < l->end && *l->p == ']') return lint_fail(l, comma, "trailing comma before ']' (JSON does not allow one)");
    }
}

static int lint_value(JsonLint *l, int depth) {
    lint_ws(l);
    if (depth > 64) return lint_fail(l, l->p, "nested deeper than 64 levels");
    if (l->p >= l->end) return lint_fail(l, l->p, "unexpected end of file: expected a value");
    char ch = *l->p;
    if (ch == '{') return lint_object(l, depth);
    if (ch == '[') return lint_array(l, depth);
    if (ch == '"') return lint_string(l);
    if (ch == '-' || isdigit((unsigned char)ch)) return lint_number(l);
    return lint_word(l);
}

int json_diag_fail_at(AlError *err, const char *src, const char *text, const char *end, const char *at,
                      const char *what) {
    enum { BEFORE = 40, WIDTH = 72 };
    if (at >= end) /* at end of file: point just after the last token, not at a blank line */
        while (at > text && strchr(" \t\r\n", at[-1])) at--;
    int line, col;
    line_col(text, at, &line, &col);
    const char *ls = at, *le = at;
    while (ls > text && ls[-1] != '\n') ls--;
    while (le < end && *le != '\n' && *le != '\r') le++;
    int line_chars, unused;
    line_col(ls, le, &unused, &line_chars);
    const char *from = ls;
    if (line_chars - 1 > WIDTH) /* a long line: show the part around the error */
        for (int chars = col - 1; chars > BEFORE; chars--)
            do from++; while (((unsigned char)*from & 0xC0) == 0x80);
    char shown[4 * WIDTH + 8], caret[4 * WIDTH + 8];
    size_t ns = 0, nc = 0;
    if (from > ls) memcpy(shown, "...", 3), memcpy(caret, "   ", 3), ns = nc = 3;
    int chars = 0;
    const char *q = from;
    /* Bytes are bounded too: invalid UTF-8 can have any number of continuation bytes. */
    for (; q < le && chars < WIDTH && ns < 3 + 4 * WIDTH; q++) {
        unsigned char ch = (unsigned char)*q;
        int starts_char = (ch & 0xC0) != 0x80;
        chars += starts_char;
        shown[ns++] = (ch < 0x20 && ch != '\t') || ch == 0x7f ? '?' : (char)ch;
        if (q < at && starts_char) caret[nc++] = ch == '\t' ? '\t' : ' ';
    }
    if (q < le) memcpy(shown + ns, "...", 3), ns += 3;
    shown[ns] = caret[nc] = 0;
    return al_fail(err, 2, "%s:%d:%d: %s\n%6d | %s\n       | %s^", src, line, col, what, line, shown, caret);
}

int json_diag_syntax_error(const char *text, const char *end, const char *cjson_at, const char *src,
                           AlError *err) {
    JsonLint l = { .text = text, .p = text, .end = end };
    if (lint_value(&l, 0) == 0) {
        /* The recognizer is happy but cJSON is not (e.g. a lone UTF-16 surrogate):
         * report cJSON's position rather than guessing. */
        return json_diag_fail_at(err, src, text, end, cjson_at ? cjson_at : text, "invalid JSON");
    }
    return json_diag_fail_at(err, src, text, end, l.at, l.what);
}

