/* distill_cells.c — see distill_cells.h.
 *
 * distill.finetune_cells is a comma-separated list of cells, each one "LxZ" for
 * every distilled layer or one per layer joined by '+'.  The parser only reads
 * text and checks the ranges that distill.tables and distill.funcs have; whether
 * the cells fit an LSH table at the model's head width is the loader's cross-key
 * rule (rules.c), as it needs the rest of the config. */
#include "attnlab/config/distill_cells.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "LxZ" at *p: ℓ in [1, 4096], z in [1, 64] (distill.tables' and distill.funcs' ranges). */
static int parse_pair(const char **p, int *tables, int *funcs, char *why, size_t why_len) {
    char *end;
    long l = strtol(*p, &end, 10), z = 0;
    int ok = end != *p && *end == 'x';
    if (ok) {
        const char *at = end + 1;
        z = strtol(at, &end, 10);
        ok = end != at;
    }
    if (!ok) {
        snprintf(why, why_len, "expected tables x functions such as 8x1 at '%.20s'", *p);
        return -1;
    }
    if (l < 1 || l > 4096 || z < 1 || z > 64) {
        snprintf(why, why_len, "%ldx%ld: tables must be in [1, 4096] and functions in [1, 64]", l, z);
        return -1;
    }
    *tables = (int)l;
    *funcs = (int)z;
    *p = end;
    return 0;
}

int finetune_parse_cells(const char *spec, int n_layers, AnnaCell *cells, int max, int *count, char *why,
                        size_t why_len) {
    const char *p = spec;
    *count = 0;
    if (!*p) {
        snprintf(why, why_len, "empty list (write e.g. 8x1, or auto)");
        return -1;
    }
    for (;;) {
        if (*count == max) {
            snprintf(why, why_len, "more than %d cells", max);
            return -1;
        }
        int tables[DISTILL_MAX_LAYERS], funcs[DISTILL_MAX_LAYERS], parts = 0;
        for (;;) {
            if (parts == DISTILL_MAX_LAYERS) {
                snprintf(why, why_len, "more than %d '+'-joined layers in cell %d", DISTILL_MAX_LAYERS, *count + 1);
                return -1;
            }
            if (parse_pair(&p, &tables[parts], &funcs[parts], why, why_len)) return -1;
            parts++;
            if (*p != '+') break;
            p++;
        }
        if (parts != 1 && parts != n_layers) {
            snprintf(why, why_len, "cell %d has %d '+'-joined layers for %d distilled layers (give one, or one per layer)",
                     *count + 1, parts, n_layers);
            return -1;
        }
        AnnaCell *c = &cells[(*count)++];
        memset(c, 0, sizeof *c);
        c->n = n_layers;
        for (int i = 0; i < n_layers; i++) {
            c->tables[i] = tables[parts == 1 ? 0 : i];
            c->funcs[i] = funcs[parts == 1 ? 0 : i];
        }
        if (*p == '\0') return 0;
        if (*p != ',') {
            snprintf(why, why_len, "unexpected '%c' (write e.g. 8x1 or 1x1,2x1; 8x1+4x2 for two layers)", *p);
            return -1;
        }
        p++;
    }
}

