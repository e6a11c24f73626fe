/* print.c — the table read the other way: the effective config as JSON (every
 * key that applies, in schema order, floats in the fewest digits that read back
 * the same), the key reference of `--help`, and the first key in which two
 * configs differ (round-trip tests, resume checks). */
#include "schema.h"
#include "attnlab/io/json_diag.h"
#include "attnlab/util/strbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------
 * Printing: the effective config, the schema, differences
 * ---------------------------------------------------------------------------- */

static void cfg_print_string(StrBuf *b, const char *s) {
    strbuf_printf(b, "\"");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') strbuf_printf(b, "\\%c", ch);
        else if (ch < 0x20) strbuf_printf(b, "\\u%04x", ch);
        else strbuf_printf(b, "%c", ch);
    }
    strbuf_printf(b, "\"");
}

static void cfg_print_value(StrBuf *b, const Config *c, const CfgKey *k) {
    char num[32];
    const void *p = cfg_cslot(c, k);
    switch (k->type) {
    case CFG_OBJECT: break;
    case CFG_INT:    strbuf_printf(b, "%d", *(const int *)p); break;
    case CFG_U64:    strbuf_printf(b, "%llu", (unsigned long long)*(const uint64_t *)p); break;
    case CFG_BOOL:   strbuf_printf(b, "%s", *(const int *)p ? "true" : "false"); break;
    case CFG_STRING: cfg_print_string(b, p); break;
    case CFG_FLOAT: {
        float f = *(const float *)p;   /* non-finite values only come from bypassing the loader */
        strbuf_printf(b, "%s", isfinite(f) ? cfg_fmt_float(f, num, sizeof num) : "null");
        break;
    }
    case CFG_ENUM: {
        int v = *(const int *)p;
        int n = 0;
        while (k->names[n]) n++;
        AL_ASSERT(v >= 0 && v < n);
        cfg_print_string(b, k->names[v]);
        break;
    }
    }
}

/* Whether the section at prefix has a setting that applies to c (a section with
 * none is not printed: "retnet": {} in a transformer's config says nothing, and
 * such a config would not parse as the section's own type). */
static int cfg_has_content(const Config *c, const char *prefix) {
    for (int i = 0; i < cfg_nkeys; i++) {
        const CfgKey *k = &cfg_keys[i];
        if (!cfg_is_child(k->path, prefix) || !cfg_applies(c, k)) continue;
        if (k->type != CFG_OBJECT || cfg_has_content(c, k->path)) return 1;
    }
    return 0;
}

static void cfg_print_object(StrBuf *b, const Config *c, const char *prefix, int depth) {
    int first = 1;
    strbuf_printf(b, "{");
    for (int i = 0; i < cfg_nkeys; i++) {
        const CfgKey *k = &cfg_keys[i];
        if (!cfg_is_child(k->path, prefix) || !cfg_applies(c, k)) continue;
        if (k->type == CFG_OBJECT && !cfg_has_content(c, k->path)) continue;
        strbuf_printf(b, "%s\n%*s\"%s\": ", first ? "" : ",", 2 * (depth + 1), "", cfg_leaf(k->path));
        first = 0;
        if (k->type == CFG_OBJECT) cfg_print_object(b, c, k->path, depth + 1);
        else cfg_print_value(b, c, k);
    }
    if (first) strbuf_printf(b, "}");
    else strbuf_printf(b, "\n%*s}", 2 * depth, "");
}

char *cfg_to_json(const Config *c) {
    StrBuf b = { 0 };
    cfg_print_object(&b, c, "", 0);
    strbuf_printf(&b, "\n");
    return b.s;
}

char *cfg_help(void) {
    StrBuf b = { 0 };
    Config def;
    cfg_defaults(&def);
    for (int i = 0; i < cfg_nkeys; i++) {
        const CfgKey *k = &cfg_keys[i];
        char type[192], range[64], names[160];
        if (k->type == CFG_OBJECT) {
            strbuf_printf(&b, "%s%s: %s\n", i ? "\n" : "", k->path, k->doc);
            continue;
        }
        if (k->names) snprintf(type, sizeof type, "one of %s", json_diag_choices(k->names, names, sizeof names));
        else if (k->type == CFG_BOOL) snprintf(type, sizeof type, "true | false");
        else if (k->type == CFG_STRING) snprintf(type, sizeof type, "string of 1-%zu characters%s", k->size - 1,
                                                 k->ident ? " A-Z a-z 0-9 . _ - +" : "");
        else snprintf(type, sizeof type, "%s %s", k->type == CFG_FLOAT ? "number" : k->type == CFG_STRING ? "string" : "integer",
                      cfg_range_text(k, range, sizeof range));
        StrBuf dv = { 0 };
        cfg_print_value(&dv, &def, k);
        strbuf_printf(&b, "  %-26s %s\n      %s (default %s)", k->path, k->doc, type, dv.s);
        free(dv.s);
        if (k->when) {
            const CfgKey *d = &cfg_keys[cfg_find(k->when)];
            const char *sep = "; only for ";
            for (int j = 0; d->names[j]; j++) {
                if (!((k->when_mask >> j) & 1u)) continue;
                strbuf_printf(&b, "%s%s \"%s\"", sep, d->path, d->names[j]);
                sep = ", ";
            }
        }
        strbuf_printf(&b, "\n");
    }
    return b.s;
}

const char *cfg_first_difference(const Config *a, const Config *b) {
    for (int i = 0; i < cfg_nkeys; i++) {
        const CfgKey *k = &cfg_keys[i];
        if (k->type == CFG_OBJECT || !cfg_applies(a, k)) continue;
        const void *pa = cfg_cslot(a, k), *pb = cfg_cslot(b, k);
        int same = k->type == CFG_STRING ? !strncmp(pa, pb, k->size) : !memcmp(pa, pb, k->size);
        if (!same) return k->path;
    }
    return NULL;
}
