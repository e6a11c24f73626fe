/* jsonl.c — see jsonl.h; the format is specified in data/README.md.
 *
 * Reading happens in two stages.  Lines are validated one at a time into a Store
 * (rows unpadded, side data, running maxima); only when every file is read are
 * the vocabulary, class count and pad id known, and the Stores are laid out as
 * padded Datasets.  This is what lets jsonl_read_pair give train and test one
 * vocabulary.
 *
 * Robustness: a line is never longer than max_line_bytes in memory (the file is
 * read in chunks), nesting is counted before cJSON sees the line (cJSON recurses
 * per level), and the Store never holds more than max_cells tokens, so the memory
 * a hostile file can claim is bounded by the options. */
#include "attnlab/data/jsonl.h"
#include "attnlab/io/atomic_file.h"
#include "attnlab/io/json_diag.h"
#include "attnlab/util/fsutil.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NESTING 4           /* a row is an object of flat arrays: depth 2 */
#define READ_CHUNK (64 << 10)

enum { K_TOKENS, K_LABELS, K_MASK, K_GROUP, K_PROMPT_LEN, K_ANSWER_START, K_ANSWER_LEN, N_KEYS };
static const char *const KEY_NAMES[N_KEYS] = {
    "tokens", "labels", "mask", "group", "prompt_len", "answer_start", "answer_len"
};

/* ---- the row store -------------------------------------------------------- */

typedef struct Store {
    const char *name;           /* file name for messages */
    JsonlOptions opt;           /* limits resolved (no zeros left) */
    long line;                  /* current line number, 1-based */
    int n, cap;                 /* rows */
    long long *start;           /* row r occupies tok/tgt[start[r] .. start[r] + len[r]) */
    int *len, *group, *prompt_len, *answer_start, *answer_len;
    int *tok, *tgt;
    long long used, room;       /* ints in tok/tgt */
    int has_group, has_cot;     /* decided by the first row */
    int max_token, max_label;   /* −1 while none; max_label over scored positions only */
    int max_len, min_len;
    long long n_scored;
} Store;

static void store_init(Store *s, const char *name, const JsonlOptions *opt) {
    memset(s, 0, sizeof *s);
    s->name = name;
    if (opt) s->opt = *opt;
    if (s->opt.max_len <= 0) s->opt.max_len = JSONL_MAX_ROW_LEN;
    if (s->opt.max_line_bytes == 0) s->opt.max_line_bytes = JSONL_MAX_LINE_BYTES;
    if (s->opt.max_line_bytes > (1u << 30)) s->opt.max_line_bytes = 1u << 30;  /* buffer sizes stay sane */
    if (s->opt.max_cells <= 0) s->opt.max_cells = JSONL_MAX_CELLS;
    if (s->opt.max_cells > (1LL << 30)) s->opt.max_cells = 1LL << 30;  /* row counts stay ints */
    s->max_token = s->max_label = -1;
}

static void store_free(Store *s) {
    free(s->start);
    free(s->len);
    free(s->group);
    free(s->prompt_len);
    free(s->answer_start);
    free(s->answer_len);
    free(s->tok);
    free(s->tgt);
    memset(s, 0, sizeof *s);
}

/* Room for one more row of n ints (the caller checked max_cells). */
static void store_reserve(Store *s, int n) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->start = al_realloc(s->start, (size_t)s->cap * sizeof *s->start);
        int **arrays[] = { &s->len, &s->group, &s->prompt_len, &s->answer_start, &s->answer_len };
        for (int i = 0; i < 5; i++) *arrays[i] = al_realloc(*arrays[i], (size_t)s->cap * sizeof(int));
    }
    if (s->used + n > s->room) {
        long long room = s->room ? 2 * s->room : 4096;
        while (room < s->used + n) room *= 2;
        if (room > s->opt.max_cells) room = s->opt.max_cells;
        s->tok = al_realloc(s->tok, (size_t)room * sizeof *s->tok);
        s->tgt = al_realloc(s->tgt, (size_t)room * sizeof *s->tgt);
        s->room = room;
    }
}

/* ---- messages ------------------------------------------------------------- */

/* "PATH:LINE: " + message, code 2. */
static int line_fail(const Store *s, AlError *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int line_fail(const Store *s, AlError *err, const char *fmt, ...) {
    char msg[AL_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return al_fail(err, 2, "%s:%ld: %s", s->name, s->line, msg);
}

/* Numbers as this reader has always shown them (json_diag_describe's form). */
static const char *format_number(double x, char *out, size_t cap) {
    if (!isfinite(x)) snprintf(out, cap, "a number too large for a double");
    else if (x == floor(x) && fabs(x) < 1e18) snprintf(out, cap, "%lld", (long long)x);
    else snprintf(out, cap, "%.15g", x);
    return out;
}

/* What a JSON value is, for "expected ..., got X": text from the file at most 40
 * bytes, control and non-ASCII bytes shown as '?'. */
static void describe(const cJSON *v, char *out, size_t cap) {
    json_diag_describe(v, JSON_TEXT_ASCII, format_number, out, cap);
}

static int unknown_key(const Store *s, const char *key, AlError *err) {
    char text[64];
    json_diag_excerpt(key, JSON_TEXT_ASCII, text, sizeof text);
    for (int k = 0; k < N_KEYS; k++)
        if (json_diag_distance(key, KEY_NAMES[k], JSON_EDITS_EXACT) <= 2)
            return line_fail(s, err, "unknown key \"%s\" (did you mean \"%s\"?)", text, KEY_NAMES[k]);
    return line_fail(s, err, "unknown key \"%s\" (valid keys: tokens, labels, mask, group, "
                     "prompt_len, answer_start, answer_len)", text);
}

/* ---- one line ------------------------------------------------------------- */

/* Nesting depth outside strings, so cJSON never recurses deeply.  Returns the
 * 0-based byte offset where MAX_NESTING is exceeded, or −1. */
static long too_deep(const char *p, size_t n) {
    int depth = 0, in_string = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (in_string) {
            if (c == '\\') i++;
            else if (c == '"') in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '{' || c == '[') {
            if (++depth > MAX_NESTING) return (long)i;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return -1;
}

/* The integer value of v: 0, or 1 when v is not a JSON number with an integral
 * value (huge integral values are clamped; the range checks then reject them). */
static int json_int(const cJSON *v, long long *out) {
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return 1;
    double x = v->valuedouble;
    if (x != floor(x)) return 1;
    *out = x > 1e18 ? (long long)1e18 : x < -1e18 ? (long long)-1e18 : (long long)x;
    return 0;
}

/* An integer from an array element or a key, checked against [lo, hi]. */
static int get_int(const Store *s, const cJSON *v, const char *what, long long lo, long long hi,
                   const char *hi_why, int *out, AlError *err) {
    long long x;
    char got[96];
    describe(v, got, sizeof got);
    if (json_int(v, &x)) return line_fail(s, err, "%s: expected an integer, got %s", what, got);
    if (x < lo) return line_fail(s, err, "%s: must be >= %lld, got %s", what, lo, got);
    if (x > hi) return line_fail(s, err, "%s: must be <= %lld%s, got %s", what, hi, hi_why, got);
    *out = (int)x;
    return 0;
}

/* The three per-position arrays: present, arrays, same non-zero length ≤ max_len. */
static int check_arrays(const Store *s, const cJSON *const *key, int *n, AlError *err) {
    for (int k = K_TOKENS; k <= K_MASK; k++) {
        char got[96];
        if (!key[k])
            return line_fail(s, err, "missing key \"%s\" (every line needs \"tokens\", \"labels\" "
                             "and \"mask\")", KEY_NAMES[k]);
        if (!cJSON_IsArray(key[k])) {
            describe(key[k], got, sizeof got);
            return line_fail(s, err, "%s: expected an array of integers, got %s", KEY_NAMES[k], got);
        }
    }
    int len = cJSON_GetArraySize(key[K_TOKENS]);
    if (len == 0) return line_fail(s, err, "tokens: empty (a row needs at least one token)");
    if (len > s->opt.max_len)
        return line_fail(s, err, "tokens: %d entries, more than the limit of %d per row", len, s->opt.max_len);
    for (int k = K_LABELS; k <= K_MASK; k++) {
        int m = cJSON_GetArraySize(key[k]);
        if (m != len)
            return line_fail(s, err, "%s has %d entries but tokens has %d (one per token)", KEY_NAMES[k], m, len);
    }
    if (s->used + len > s->opt.max_cells)
        return line_fail(s, err, "more than %lld tokens in the file (the limit)", s->opt.max_cells);
    *n = len;
    return 0;
}

/* Copies the row's positions into the store (row index s->n, not yet counted). */
static int read_positions(Store *s, const cJSON *const *key, int n, AlError *err) {
    const cJSON *t = key[K_TOKENS]->child, *l = key[K_LABELS]->child, *m = key[K_MASK]->child;
    long long vocab_hi = s->opt.vocab_size > 0 ? s->opt.vocab_size - 1 : JSONL_MAX_ID;
    long long class_hi = s->opt.n_classes > 0 ? s->opt.n_classes - 1 : JSONL_MAX_ID;
    char vocab_why[48] = "", class_why[48] = "";
    if (s->opt.vocab_size > 0) snprintf(vocab_why, sizeof vocab_why, " (vocab_size is %d)", s->opt.vocab_size);
    if (s->opt.n_classes > 0) snprintf(class_why, sizeof class_why, " (n_classes is %d)", s->opt.n_classes);
    int *tok = s->tok + s->used, *tgt = s->tgt + s->used;
    for (int i = 0; i < n; i++, t = t->next, l = l->next, m = m->next) {
        char what[64];   /* "labels[I] (scored: mask[I] is 1)" for any int I */
        int mask, label;
        snprintf(what, sizeof what, "tokens[%d]", i);
        if (get_int(s, t, what, 0, vocab_hi, vocab_why, &tok[i], err)) return 2;
        snprintf(what, sizeof what, "mask[%d]", i);
        long long mv;
        if (json_int(m, &mv) || (mv != 0 && mv != 1)) {
            char got[96];
            describe(m, got, sizeof got);
            return line_fail(s, err, "mask[%d]: must be 0 or 1, got %s", i, got);
        }
        mask = (int)mv;
        snprintf(what, sizeof what, "labels[%d]", i);
        if (mask) {
            snprintf(what, sizeof what, "labels[%d] (scored: mask[%d] is 1)", i, i);
            if (get_int(s, l, what, 0, class_hi, class_why, &label, err)) return 2;
            if (label > s->max_label) s->max_label = label;
            s->n_scored++;
        } else if (get_int(s, l, what, -1, JSONL_MAX_ID, "", &label, err)) {
            return 2;
        }
        if (tok[i] > s->max_token) s->max_token = tok[i];
        tgt[i] = mask ? label : DATASET_IGNORE;
    }
    return 0;
}

/* NULL when the chain-of-thought fields fit a row of length len, else why not.
 * Shared by the reader and the writer, so whatever is written reads back. */
static const char *cot_problem(int len, int prompt_len, int answer_start, int answer_len) {
    if (prompt_len < 0 || prompt_len > len) return "prompt_len must be in [0, row length]";
    if (answer_start < -1 || answer_start >= len) return "answer_start must be -1 or in [0, row length)";
    if (answer_start == -1 && answer_len != 0) return "answer_len must be 0 when answer_start is -1";
    if (answer_len < 0 || (answer_start >= 0 && answer_len > len - answer_start))
        return "answer_len must be in [0, row length - answer_start]";
    return NULL;
}

/* "group" and the chain-of-thought keys: on every line or on none. */
static int read_side_data(Store *s, const cJSON *const *key, int len, AlError *err) {
    int has_group = key[K_GROUP] != NULL;
    int n_cot = (key[K_PROMPT_LEN] != NULL) + (key[K_ANSWER_START] != NULL) + (key[K_ANSWER_LEN] != NULL);
    if (n_cot == 1 || n_cot == 2) {
        for (int k = K_PROMPT_LEN; k <= K_ANSWER_LEN; k++)
            if (!key[k]) return line_fail(s, err, "missing key \"%s\" (prompt_len, answer_start and "
                                          "answer_len go together: all three or none)", KEY_NAMES[k]);
    }
    int has_cot = n_cot == 3;
    if (s->n == 0) {
        s->has_group = has_group;
        s->has_cot = has_cot;
    }
    if (has_group != s->has_group)
        return line_fail(s, err, "%s \"group\" but the first line %s (give it on every line or on none)",
                         has_group ? "has" : "has no", has_group ? "has none" : "has one");
    if (has_cot != s->has_cot)
        return line_fail(s, err, "%s prompt_len/answer_start/answer_len but the first line %s (give them "
                         "on every line or on none)", has_cot ? "has" : "has no", has_cot ? "has none" : "has them");
    int r = s->n;
    s->group[r] = 0;
    s->prompt_len[r] = 0, s->answer_start[r] = -1, s->answer_len[r] = 0;
    if (has_group && get_int(s, key[K_GROUP], "group", 0, JSONL_MAX_GROUP, "", &s->group[r], err)) return 2;
    if (!has_cot) return 0;
    if (get_int(s, key[K_PROMPT_LEN], "prompt_len", 0, len, " (the row length)", &s->prompt_len[r], err) ||
        get_int(s, key[K_ANSWER_START], "answer_start", -1, len - 1, " (the row length - 1)", &s->answer_start[r], err) ||
        get_int(s, key[K_ANSWER_LEN], "answer_len", 0, len, " (the row length)", &s->answer_len[r], err))
        return 2;
    const char *why = cot_problem(len, s->prompt_len[r], s->answer_start[r], s->answer_len[r]);
    return why ? line_fail(s, err, "%s (row length %d, answer_start %d, answer_len %d)", why, len,
                           s->answer_start[r], s->answer_len[r]) : 0;
}

/* Members of the row object by key; unknown and repeated keys are errors. */
static int collect_keys(const Store *s, const cJSON *root, const cJSON **key, AlError *err) {
    for (const cJSON *c = root->child; c; c = c->next) {
        int k = 0;
        while (k < N_KEYS && strcmp(c->string, KEY_NAMES[k]) != 0) k++;
        if (k == N_KEYS) return unknown_key(s, c->string, err);
        if (key[k]) return line_fail(s, err, "duplicate key \"%s\"", KEY_NAMES[k]);
        key[k] = c;
    }
    return 0;
}

static int store_object(Store *s, const cJSON *root, AlError *err) {
    const cJSON *key[N_KEYS] = { 0 };
    int len = 0;
    if (collect_keys(s, root, key, err) || check_arrays(s, key, &len, err)) return 2;
    store_reserve(s, len);
    if (read_positions(s, key, len, err) || read_side_data(s, key, len, err)) return 2;
    s->start[s->n] = s->used;
    s->len[s->n] = len;
    s->used += len;
    if (len > s->max_len) s->max_len = len;
    if (s->n == 0 || len < s->min_len) s->min_len = len;
    s->n++;
    return 0;
}

static const char *json_type_name(const cJSON *v) {
    return cJSON_IsArray(v) ? "an array" : cJSON_IsString(v) ? "a string" : cJSON_IsNumber(v) ? "a number"
         : cJSON_IsBool(v) ? "a boolean" : "null";
}

/* One line: p[0..n) with p[n] == 0 (writable).  The '\n' is already removed. */
static int store_line(Store *s, char *p, size_t n, AlError *err) {
    if (n > 0 && p[n - 1] == '\r') p[--n] = 0;
    const char *nul = memchr(p, 0, n);
    if (nul) return line_fail(s, err, "contains a NUL byte at column %ld (is this a text file?)", (long)(nul - p) + 1);
    size_t blank = strspn(p, " \t\r");
    if (blank == n) return line_fail(s, err, "empty line (one JSON object per line; remove blank lines)");
    long deep = too_deep(p, n);
    if (deep >= 0)
        return line_fail(s, err, "column %ld: nested deeper than %d levels (a row is one object of "
                         "flat arrays)", deep + 1, MAX_NESTING);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(p, n + 1, &end, 1);
    if (!root) {
        long col = end && end >= p && end <= p + n ? (long)(end - p) + 1 : 1;
        if (col > (long)n)
            return line_fail(s, err, "not valid JSON: the line ends inside a value (unclosed '{', '[' "
                             "or string?)");
        char c = p[col - 1];
        return line_fail(s, err, "column %ld: not valid JSON (at '%c')", col, c >= 0x20 && c < 0x7f ? c : '?');
    }
    int rc = cJSON_IsObject(root) ? store_object(s, root, err)
           : line_fail(s, err, "expected a JSON object {\"tokens\": [...], ...}, got %s", json_type_name(root));
    cJSON_Delete(root);
    return rc;
}

/* ---- feeding lines ---------------------------------------------------------- */

static int line_too_long(const Store *s, AlError *err) {
    return line_fail(s, err, "line longer than %zu bytes (the limit; is this a JSONL file?)",
                     s->opt.max_line_bytes);
}

/* Skips a UTF-8 byte-order mark at the very start. */
static size_t bom_length(const char *p, size_t n) {
    return n >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
}

static int feed_buffer(Store *s, const char *text, size_t len, AlError *err) {
    size_t pos = bom_length(text, len);
    char *line = NULL;
    int rc = 0;
    while (pos < len && rc == 0) {
        s->line++;
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        if (n > s->opt.max_line_bytes) {
            rc = line_too_long(s, err);
            break;
        }
        line = al_realloc(line, n + 1);
        memcpy(line, text + pos, n);
        line[n] = 0;
        rc = store_line(s, line, n, err);
        pos += n + 1;
    }
    free(line);
    return rc;
}

/* Reads until buf holds n bytes or the file ends; returns 0 or 1 on a read error. */
static int fill(FILE *f, char *buf, size_t *have, size_t want, int *eof) {
    while (*have < want && !*eof) {
        size_t got = fread(buf + *have, 1, want - *have, f);
        *have += got;
        if (got == 0) {
            if (ferror(f)) return 1;
            *eof = 1;
        }
    }
    return 0;
}

static int read_failed(const Store *s, AlError *err) {
    return al_fail(err, 2, "cannot read '%s': %s", s->name, strerror(errno ? errno : EIO));
}

/* Reads in chunks; buf[start, have) is the unprocessed text, of which [start, seen)
 * is known to hold no '\n' (so a long line is scanned once).  The buffer grows only
 * while a line is longer than one chunk, and never much past the line limit. */
static int feed_file(Store *s, FILE *f, AlError *err) {
    size_t cap = READ_CHUNK + 1, have = 0, start, seen;
    size_t max_cap = s->opt.max_line_bytes + READ_CHUNK + 2;
    char *buf = al_malloc(cap);
    int rc = 0, eof = 0;
    errno = 0;
    if (fill(f, buf, &have, 3, &eof)) rc = read_failed(s, err);
    start = seen = bom_length(buf, have);
    while (rc == 0) {
        char *nl = memchr(buf + seen, '\n', have - seen);
        if (nl) {
            s->line++;
            size_t n = (size_t)(nl - (buf + start));
            if (n > s->opt.max_line_bytes) { rc = line_too_long(s, err); break; }
            *nl = 0;
            rc = store_line(s, buf + start, n, err);
            start = seen = start + n + 1;
            continue;
        }
        if (have - start > s->opt.max_line_bytes) { s->line++; rc = line_too_long(s, err); break; }
        if (eof) {
            if (have > start) {  /* the last line has no '\n' */
                s->line++;
                buf[have] = 0;
                rc = store_line(s, buf + start, have - start, err);
            }
            break;
        }
        memmove(buf, buf + start, have - start);  /* keep the partial line */
        have -= start;
        start = 0;
        seen = have;
        if (cap - have - 1 < READ_CHUNK && cap < max_cap) {
            cap = cap * 2 < max_cap ? cap * 2 : max_cap;
            buf = al_realloc(buf, cap);
        }
        if (fill(f, buf, &have, cap - 1, &eof)) rc = read_failed(s, err);
    }
    free(buf);
    return rc;
}

static int store_from_file(Store *s, const char *path, AlError *err) {
    FILE *f = al_open_regular(path, 2, err);   /* a FIFO or device is refused unread */
    if (!f) return err->code;
    int rc = feed_file(s, f, err);
    fclose(f);
    return rc;
}

/* ---- from stores to datasets ------------------------------------------------- */

static int check_options(const JsonlOptions *o, AlError *err) {
    if (!o) return 0;
    if (o->vocab_size < 0 || o->n_classes < 0 || o->max_len < 0 || o->max_cells < 0)
        return al_fail(err, 2, "jsonl: vocab_size, n_classes, max_len and max_cells must be >= 0");
    if (o->pad_id_set && (o->pad_id < 0 || (o->vocab_size > 0 && o->pad_id >= o->vocab_size)))
        return al_fail(err, 2, "jsonl: pad_id %d must be >= 0 and < vocab_size %d", o->pad_id, o->vocab_size);
    return 0;
}

/* Whole-file checks once every line is read. */
static int store_finish(const Store *s, AlError *err) {
    if (s->n == 0) return al_fail(err, 2, "%s: no rows (the file is empty)", s->name);
    if (s->n_scored == 0)
        return al_fail(err, 2, "%s: no position is scored (every mask entry is 0)", s->name);
    if ((long long)s->n * s->max_len > s->opt.max_cells)
        return al_fail(err, 2, "%s: %d rows padded to the longest row (%d tokens) make %lld cells, "
                       "more than the limit of %lld", s->name, s->n, s->max_len,
                       (long long)s->n * s->max_len, s->opt.max_cells);
    return 0;
}

static void store_to_dataset(const Store *s, int vocab, int n_classes, int pad, Dataset *out,
                             JsonlStats *stats) {
    dataset_alloc(out, s->n, s->max_len, vocab, n_classes);
    dataset_alloc_info(out);
    out->pad_id = pad;
    for (int r = 0; r < s->n; r++) {
        int *tok = dataset_tokens(out, r), *tgt = dataset_targets(out, r);
        memcpy(tok, s->tok + s->start[r], (size_t)s->len[r] * sizeof *tok);
        memcpy(tgt, s->tgt + s->start[r], (size_t)s->len[r] * sizeof *tgt);
        for (int i = s->len[r]; i < s->max_len; i++) {
            tok[i] = pad;
            tgt[i] = DATASET_IGNORE;
        }
        out->info[r] = (RowInfo){ .len = s->len[r], .prompt_len = s->prompt_len[r],
                                  .answer_start = s->answer_start[r], .answer_len = s->answer_len[r],
                                  .group = s->group[r] };
    }
    if (stats)
        *stats = (JsonlStats){ .fields = (s->has_group ? JSONL_GROUP : 0) | (s->has_cot ? JSONL_COT : 0),
                               .min_len = s->min_len, .n_scored = s->n_scored };
}

/* One vocabulary, class count and pad id for n_stores stores; fills out[i]. */
static void stores_to_datasets(const Store *st, int n_stores, const JsonlOptions *o, Dataset *out,
                               JsonlStats *stats) {
    int max_token = -1, max_label = -1, padded = 0;
    for (int i = 0; i < n_stores; i++) {
        if (st[i].max_token > max_token) max_token = st[i].max_token;
        if (st[i].max_label > max_label) max_label = st[i].max_label;
        padded |= st[i].min_len < st[i].max_len;
    }
    int vocab = o && o->vocab_size > 0 ? o->vocab_size : max_token + 1;
    int n_classes = o && o->n_classes > 0 ? o->n_classes : max_label + 1;
    int pad = -1;
    if (padded && o && o->pad_id_set) {
        pad = o->pad_id;
        if (pad >= vocab) vocab = pad + 1;  /* only when vocab is inferred (checked) */
    } else if (padded) {
        pad = vocab++;
    }
    for (int i = 0; i < n_stores; i++)
        store_to_dataset(&st[i], vocab, n_classes, pad, &out[i], stats ? &stats[i] : NULL);
}

/* ---- public reading ---------------------------------------------------------- */

int jsonl_parse(const char *name, const char *text, size_t len, const JsonlOptions *opt,
                Dataset *out, JsonlStats *stats, AlError *err) {
    memset(out, 0, sizeof *out);
    if (check_options(opt, err)) return 2;
    Store s;
    store_init(&s, name, opt);
    int rc = feed_buffer(&s, text, len, err);
    if (!rc) rc = store_finish(&s, err);
    if (!rc) stores_to_datasets(&s, 1, opt, out, stats);
    store_free(&s);
    return rc;
}

int jsonl_read(const char *path, const JsonlOptions *opt, Dataset *out, JsonlStats *stats, AlError *err) {
    memset(out, 0, sizeof *out);
    if (check_options(opt, err)) return 2;
    Store s;
    store_init(&s, path, opt);
    int rc = store_from_file(&s, path, err);
    if (!rc) rc = store_finish(&s, err);
    if (!rc) stores_to_datasets(&s, 1, opt, out, stats);
    store_free(&s);
    return rc;
}

int jsonl_read_pair(const char *train_path, const char *test_path, const JsonlOptions *opt,
                    Dataset *train, Dataset *test, JsonlStats *stats, AlError *err) {
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    if (check_options(opt, err)) return 2;
    Store s[2];
    store_init(&s[0], train_path, opt);
    store_init(&s[1], test_path, opt);
    int rc = store_from_file(&s[0], train_path, err);
    if (!rc) rc = store_finish(&s[0], err);
    if (!rc) rc = store_from_file(&s[1], test_path, err);
    if (!rc) rc = store_finish(&s[1], err);
    if (!rc) {
        Dataset out[2];
        stores_to_datasets(s, 2, opt, out, stats);
        *train = out[0];
        *test = out[1];
    }
    store_free(&s[0]);
    store_free(&s[1]);
    return rc;
}

/* ---- writing ------------------------------------------------------------------ */

typedef struct Text { char *p; size_t n, cap; } Text;

static void text_reserve(Text *t, size_t extra) {
    if (t->n + extra + 1 <= t->cap) return;
    while (t->n + extra + 1 > t->cap) t->cap = t->cap ? 2 * t->cap : 1 << 16;
    t->p = al_realloc(t->p, t->cap);
}

static void text_str(Text *t, const char *s) {
    size_t n = strlen(s);
    text_reserve(t, n);
    memcpy(t->p + t->n, s, n + 1);
    t->n += n;
}

static void text_int(Text *t, int v) {
    text_reserve(t, 12);
    t->n += (size_t)snprintf(t->p + t->n, 13, "%d", v);
}

static void text_array(Text *t, const char *key, const int *v, int n, int what) {
    text_str(t, key);
    for (int i = 0; i < n; i++) {
        if (i) text_str(t, ",");
        text_int(t, what == K_MASK ? v[i] >= 0 : v[i] < 0 ? -1 : v[i]);
    }
    text_str(t, "]");
}

/* Rows must read back: the checks the reader would make, with row numbers. */
static int write_check_row(const char *path, const Dataset *d, int fields, int r, int len, AlError *err) {
    if (len < 1 || len > d->seq_len)
        return al_fail(err, 2, "jsonl_write '%s': row %d: length %d not in [1, %d]", path, r, len, d->seq_len);
    if (len > JSONL_MAX_ROW_LEN)
        return al_fail(err, 2, "jsonl_write '%s': row %d: length %d above the reader's limit %d", path, r,
                       len, JSONL_MAX_ROW_LEN);
    const int *tok = dataset_tokens(d, r), *tgt = dataset_targets(d, r);
    for (int i = 0; i < len; i++) {
        if (tok[i] < 0 || tok[i] > JSONL_MAX_ID)
            return al_fail(err, 2, "jsonl_write '%s': row %d: token %d at position %d not in [0, %d]",
                           path, r, tok[i], i, JSONL_MAX_ID);
        if (tgt[i] < DATASET_IGNORE || tgt[i] > JSONL_MAX_ID)
            return al_fail(err, 2, "jsonl_write '%s': row %d: target %d at position %d not in [-1, %d]",
                           path, r, tgt[i], i, JSONL_MAX_ID);
    }
    const RowInfo *x = d->info ? &d->info[r] : NULL;
    if ((fields & JSONL_GROUP) && (x->group < 0 || x->group > JSONL_MAX_GROUP))
        return al_fail(err, 2, "jsonl_write '%s': row %d: group %d not in [0, %d]", path, r, x->group,
                       JSONL_MAX_GROUP);
    const char *why = fields & JSONL_COT ? cot_problem(len, x->prompt_len, x->answer_start, x->answer_len) : NULL;
    if (why) return al_fail(err, 2, "jsonl_write '%s': row %d: %s", path, r, why);
    return 0;
}

static void write_row(Text *t, const Dataset *d, int fields, int r, int len) {
    text_array(t, "{\"tokens\":[", dataset_tokens(d, r), len, K_TOKENS);
    text_array(t, ",\"labels\":[", dataset_targets(d, r), len, K_LABELS);
    text_array(t, ",\"mask\":[", dataset_targets(d, r), len, K_MASK);
    if (fields & JSONL_GROUP) {
        text_str(t, ",\"group\":");
        text_int(t, d->info[r].group);
    }
    if (fields & JSONL_COT) {
        text_str(t, ",\"prompt_len\":");
        text_int(t, d->info[r].prompt_len);
        text_str(t, ",\"answer_start\":");
        text_int(t, d->info[r].answer_start);
        text_str(t, ",\"answer_len\":");
        text_int(t, d->info[r].answer_len);
    }
    text_str(t, "}\n");
}

int jsonl_write(const char *path, const Dataset *d, int fields, AlError *err) {
    if (d->n < 1 || d->seq_len < 1)
        return al_fail(err, 2, "jsonl_write '%s': the dataset has no rows", path);
    if (fields & ~(JSONL_GROUP | JSONL_COT))
        return al_fail(err, 2, "jsonl_write '%s': unknown field flags %#x", path, (unsigned)fields);
    if (fields && !d->info)
        return al_fail(err, 2, "jsonl_write '%s': group or chain-of-thought fields need the dataset's "
                       "row info", path);
    long long scored = 0;
    Text t = { 0 };
    int rc = 0;
    for (int r = 0; r < d->n && rc == 0; r++) {
        int len = d->info ? d->info[r].len : d->seq_len;
        rc = write_check_row(path, d, fields, r, len, err);
        if (rc) break;
        for (int i = 0; i < len; i++) scored += dataset_targets(d, r)[i] >= 0;
        write_row(&t, d, fields, r, len);
    }
    if (rc == 0 && scored == 0)
        rc = al_fail(err, 2, "jsonl_write '%s': no position is scored (every target is -1)", path);
    if (rc == 0) {
        const void *chunk = t.p;
        rc = atomic_write(path, &chunk, &t.n, 1, err);
    }
    free(t.p);
    return rc;
}
