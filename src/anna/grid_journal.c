/* grid_journal.c — see grid_journal.h. */
#include "attnlab/anna/grid_journal.h"
#include "attnlab/io/atomic_file.h"
#include "attnlab/util/strbuf.h"
#include "attnlab/util/testhook.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAGIC "attnlab grid journal 1"

/* One complete cell line → *c and its values; 0, or −1 if it does not parse. */
static int parse_cell(const char *line, long cells, long *c, double *v) {
    char *end;
    if (strncmp(line, "cell ", 5)) return -1;
    *c = strtol(line + 5, &end, 10);
    if (end == line + 5 || *c < 0 || *c >= cells) return -1;
    for (int k = 0; k < JOURNAL_VALUES; k++) {
        const char *p = end;
        if (*p != ' ') return -1;
        v[k] = strtod(p + 1, &end);
        if (end == p + 1) return -1;
    }
    return *end == '\0' ? 0 : -1;
}

static long count_lines_with(const char *text, const char *prefix) {
    long n = 0;
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        n += !strncmp(p, prefix, strlen(prefix));
    return n;
}

/* Reads text (the journal, NUL-terminated) into done/vals.  Lines are cut in
 * place; *keep gets the length of the complete lines (a torn last one excluded). */
static int load(GridJournal *j, char *text, const char *key, long cells, unsigned char *done, double *vals,
                long *n_done, size_t *keep, int *other_grid, AlError *err) {
    char *torn = strrchr(text, '\n');
    torn = torn ? torn + 1 : text;
    *keep = (size_t)(torn - text);
    *torn = '\0';   /* a last line without its newline: a kill mid-append; dropped */
    long line_no = 0;
    for (char *line = text, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        *nl = '\0';
        line_no++;
        if (line_no == 1 && strcmp(line, MAGIC))
            return al_fail(err, 2, "%s:1: not a grid journal (expected \"%s\")", j->path, MAGIC);
        if (line_no == 2 && (strncmp(line, "key ", 4) || strcmp(line + 4, key)))
            return *other_grid = 1, al_fail(err, 2, "%s: the unfinished grid there is another grid than this one; its key:\n  %s\n"
                           "this grid's:\n  %s\nContinue it with the settings it was started with, or delete the "
                           "file to start this grid over", j->path, strncmp(line, "key ", 4) ? line : line + 4, key);
        if (line_no <= 2) continue;
        long c;
        double v[JOURNAL_VALUES];
        if (parse_cell(line, cells, &c, v))
            return al_fail(err, 2, "%s:%ld: expected \"cell INDEX\" (0..%ld) and %d numbers, got \"%.80s\"",
                           j->path, line_no, cells - 1, JOURNAL_VALUES, line);
        *n_done += !done[c];
        done[c] = 1;
        memcpy(vals + c * JOURNAL_VALUES, v, sizeof v);
    }
    if (line_no < 2)   /* the header is written atomically: this is not our file */
        return al_fail(err, 2, "%s: not a grid journal (no \"%s\" and key lines)", j->path, MAGIC);
    return 0;
}

/* The file (header, then the cell lines kept) written anew, then opened to append. */
static int start(GridJournal *j, const char *key, const char *kept, AlError *err) {
    StrBuf b = {0};
    strbuf_printf(&b, "%s\nkey %s\n%s", MAGIC, key, kept ? kept : "");
    int rc = write_text_atomic(j->path, b.s, err);
    free(b.s);
    if (rc) return rc;
    j->f = fopen(j->path, "a");
    if (!j->f) return al_fail(err, 1, "cannot write '%s': %s", j->path, strerror(errno));
    return 0;
}

int grid_journal_open(GridJournal *j, const char *dir, const char *key, long cells, JournalMode mode,
                      unsigned char *done, double *vals, long *n_done, AlError *err) {
    memset(j, 0, sizeof *j);
    memset(done, 0, (size_t)cells);
    *n_done = 0;
    if (al_path_fmt(j->path, sizeof j->path, err, "%s/anna_grid.journal", dir)) return err->code;
    size_t len = 0;
    char *text = al_read_file(j->path, &len);
    if (!text && errno != ENOENT) return al_fail(err, 1, "cannot read '%s': %s", j->path, strerror(errno));
    if (!text) return start(j, key, NULL, err);
    if (mode == JOURNAL_FRESH) {
        int rc = al_fail(err, 2, "%s holds an unfinished grid (%ld of %ld cells done): continue it with --resume, "
                         "or delete the file to start over", j->path, count_lines_with(text, "cell "), cells);
        free(text);
        return rc;
    }
    char *copy = al_malloc(len + 1);   /* load cuts its lines in place */
    memcpy(copy, text, len + 1);
    size_t keep = 0;
    int other_grid = 0;
    int rc = load(j, copy, key, cells, done, vals, n_done, &keep, &other_grid, err);
    free(copy);
    if (rc && other_grid && mode == JOURNAL_AUTO) {   /* another model's or grid's journal: stale */
        memset(done, 0, (size_t)cells);
        *n_done = 0;
        rc = start(j, key, NULL, err);
    } else if (!rc) {
        /* Written anew with its complete cell lines only, so that no append ever
         * follows a torn line. */
        text[keep] = '\0';
        const char *cell_lines = strchr(strchr(text, '\n') + 1, '\n') + 1;   /* load saw both header lines */
        rc = start(j, key, cell_lines, err);
    }
    free(text);
    return rc;
}

int grid_journal_add(GridJournal *j, long c, const double *vals, AlError *err) {
    char line[160];
    int n = snprintf(line, sizeof line, "cell %ld %.17g %.17g %.17g %.17g\n", c, vals[0], vals[1], vals[2], vals[3]);
    size_t half = testhook_boundaries_active() ? (size_t)n / 2 : 0;
    if (half) {   /* the fault tests may stop the process here: a torn line */
        fwrite(line, 1, half, j->f);
        fflush(j->f);
        testhook_write_boundary("partial", j->path);
    }
    if (fwrite(line + half, 1, (size_t)n - half, j->f) != (size_t)n - half || fflush(j->f) || fsync(fileno(j->f)))
        return al_fail(err, 1, "cannot write '%s': %s", j->path, strerror(errno));
    return 0;
}

void grid_journal_close(GridJournal *j, int remove_file) {
    if (j->f) fclose(j->f);
    j->f = NULL;
    if (remove_file && j->path[0]) unlink(j->path);
}
