/* fuzz_config.c — the config reader and validator (src/config).
 *
 * Input: a config file, optionally followed by command-line overrides, each
 * introduced by a line "--set " (so "{...}\n--set train.lr=3" is a file plus one
 * --set).  Checks:
 *   - a rejected config has code 2 and a message that starts with the file name or
 *     "--set ..." (every config error names its source);
 *   - an accepted one prints (cfg_to_json) as JSON that parses back to the same
 *     Config — the effective config in a run folder is the run's config. */
#include "fuzz.h"
#include "attnlab/config/config.h"

#include <stdlib.h>
#include <string.h>

#define MAX_SETS 8
#define SET_MARK "\n--set "

/* The first SET_MARK in s[0..n), or NULL (memmem is not POSIX). */
static char *find_mark(char *s, size_t n) {
    size_t m = strlen(SET_MARK);
    for (size_t i = 0; i + m <= n; i++)
        if (!memcmp(s + i, SET_MARK, m)) return s + i;
    return NULL;
}

static void check_round_trip(const Config *c) {
    char *json = cfg_to_json(c);
    Config back;
    AlError err = {0};
    if (cfg_parse(&back, json, "effective config", &err))
        fuzz_fail("the effective config does not parse back: %s\n%s", err.msg, json);
    const char *diff = cfg_first_difference(c, &back);
    if (diff) fuzz_fail("the effective config parses back different at '%s'\n%s", diff, json);
    free(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (size) memcpy(text, data, size);
    text[size] = '\0';
    /* Cut the overrides off: each one runs to the next mark (or its first NUL). */
    const char *sets[MAX_SETS];
    int n_sets = 0;
    size_t file_len = size;
    char *mark = find_mark(text, size);
    if (mark) file_len = (size_t)(mark - text);
    while (mark && n_sets < MAX_SETS) {
        *mark = '\0';
        sets[n_sets++] = mark + strlen(SET_MARK);
        mark = find_mark(mark + 1, size - (size_t)(mark + 1 - text));
    }
    if (mark) *mark = '\0';
    const char *path = fuzz_write("config.json", text, file_len);
    Config c;
    AlError err = {0};
    int rc = cfg_load(&c, path, sets, n_sets, &err);
    if (rc) {
        if (rc != 2 || err.code != 2) fuzz_fail("config error with code %d (rc %d): %s", err.code, rc, err.msg);
        if (!fuzz_starts_with(err.msg, path) && !fuzz_starts_with(err.msg, "--set "))
            fuzz_fail("config error does not name its source: %s", err.msg);
    } else {
        check_round_trip(&c);
    }
    free(text);
    return 0;
}
