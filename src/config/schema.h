/* schema.h — inside the config module: the schema table and what its files share.
 *
 * Everything key-specific lives in cfg_keys[] (schema.c): the key path, its type,
 * where it is stored in Config, its range or allowed names, its default and a
 * one-line doc.  The reader (values.c, load.c, override.c), the printer, the
 * defaults, cfg_help() and cfg_first_difference() (print.c) are all loops over
 * that table, so adding a key is adding a row (and, if it constrains other keys,
 * a rule in rules.c).
 *
 * Reading is done in three passes so that the order of keys in a file never
 * matters:
 *   1. walk the JSON tree: reject unknown and duplicate keys, remember which row
 *      each JSON value belongs to (seen[]);
 *   2. apply the remembered values in schema order: type, range, store.  A row may
 *      apply only to some values of an earlier enum row (its "discriminator", e.g.
 *      task keys that exist for one task.type only), so discriminators precede
 *      their dependents in the table;
 *   3. check the rules that involve several keys (cfg_consistency), once, after
 *      the file and all --set overrides, so an override can fix a file.
 *
 * Every error is one message that starts with the source (file name, or
 * "--set key=value") and names the key path; err->code is 2.  docs/errors.md lists
 * them all; keep it in step.  Not a public header: only src/config includes it. */
#ifndef ATTNLAB_SRC_CONFIG_SCHEMA_H
#define ATTNLAB_SRC_CONFIG_SCHEMA_H

#include "attnlab/config/config.h"

#include <cJSON.h>
#include <stddef.h>

/* ---- the table (schema.c) --------------------------------------------------- */

typedef enum { CFG_OBJECT, CFG_INT, CFG_U64, CFG_FLOAT, CFG_BOOL, CFG_ENUM, CFG_STRING } CfgType;

typedef struct CfgKey {
    const char *path;              /* full key path: "model.attention.beta" */
    CfgType type;
    size_t off, size;              /* where the value lives in Config (not for objects) */
    double min, max;               /* numeric range; ±INFINITY = unbounded */
    unsigned char lo_open, hi_open;/* exclusive bounds: (min, ...  /  ..., max) */
    const char *const *names;      /* ENUM: names indexed by the C enum value;
                                      STRING: the allowed values, or NULL = any */
    double def;                    /* default of numeric, bool and enum keys */
    const char *def_str;           /* default of string keys */
    unsigned ident;                /* STRING: restricted to file-name-safe characters */
    const char *when;              /* the key exists only when this enum key ... */
    unsigned when_mask;            /* ... has one of these values (bit = enum value) */
    const char *doc;
} CfgKey;

#define CFG_KEYS_MAX 128   /* rows the table may grow to (the size of seen[] arrays) */
#define CFG_KEY_MAX 256    /* longest key path we handle (longer ones are typos) */
#define CFG_SRC_MAX 256    /* longest source name kept for messages */
#define CFG_SWEEP_SECTION "sweep"   /* read by ./train sweep (src/sweep), not part of Config */
/* Which build wrote a run's config.json (util/version.h); a run folder's config.json
 * is loaded again (./train distill, sweep cells), so it is accepted and ignored. */
#define CFG_PROVENANCE "provenance"

extern const CfgKey cfg_keys[];
extern const int cfg_nkeys;
/* Enum names the cross-key rules quote (indexed by the enum value). */
extern const char *const cfg_task_names[], *const cfg_model_names[], *const cfg_attn_names[],
    *const cfg_score_names[], *const cfg_family_names[];

int cfg_find(const char *path);                        /* row of a key path, or -1 */
const char *cfg_leaf(const char *path);                /* "beta" of "model.attention.beta" */
int cfg_is_child(const char *path, const char *parent);/* direct child ("" = the top level)? */
void *cfg_slot(Config *c, const CfgKey *k);
const void *cfg_cslot(const Config *c, const CfgKey *k);
/* Does key k exist for the current value of its discriminator (e.g. task.type)? */
int cfg_applies(const Config *c, const CfgKey *k);
/* "> 0", ">= 1", "<= 1", "in [0, 1)"; "" when unbounded. */
const char *cfg_range_text(const CfgKey *k, char *buf, size_t n);
/* A float in at most 9 digits that parses back to v. */
const char *cfg_fmt_float(float v, char *buf, size_t n);

/* ---- passes 1 and 2: JSON values into rows (values.c) ----------------------- */

/* Pass 1 over an object's members under `prefix` ("" = the top level). */
int cfg_walk(const cJSON *obj, const char *prefix, const cJSON **seen, const char *src, AlError *err);
/* Pass 1 for one value that belongs to row i (objects are descended). */
int cfg_visit(int i, const cJSON *v, const cJSON **seen, const char *src, AlError *err);
/* Pass 2: applies every value found by the walk, in schema order. */
int cfg_apply_seen(Config *c, const cJSON *const *seen, const char *src, AlError *err);
/* An unknown key path: how much of it is valid, then a suggestion or a list. */
int cfg_unknown(const char *path, const char *src, AlError *err);

/* ---- pass 3: rules that involve several keys (rules.c) ---------------------- */

/* A broken rule: the message, and the keys it involves (so cfg_set_all can blame
 * the --set override that touched one of them rather than the file). */
typedef struct CfgProblem {
    const char *keys[3];
    char msg[512];
} CfgProblem;

/* Returns 1 and fills *p on the first broken rule, else 0. */
int cfg_consistency(const Config *c, CfgProblem *p);

#endif
