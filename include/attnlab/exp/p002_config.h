/* p002_config.h — the JSON config of `attnlab mc` (paper 002's Monte-Carlo sweeps).
 *
 *     {
 *       "setting": "self_identity",              toy | self_ones | self_identity | cross
 *       "title": "Fig. 4(b)",                    optional, the figure's title
 *       "defaults": {"n": 256, "d": 22, "m": "auto", "delta": 0.01,
 *                    "a0": 0.01, "a1": 1.2, "b": 0.2, "c": 0.8, "tau": "auto"},
 *       "sweep": {"param": "d", "values": [4, 6, 10, 18, 34, 66]},
 *       "repetitions": 100,                      default 100
 *       "seed": 1,                               default 1
 *       "out": "results/paper002/fig4_d"         required (the CLI's --out overrides it)
 *     }
 *
 * Every key of "defaults" may be left out; the defaults are the paper's:
 * toy n 1000; self n 200, d 22, a0 0.01, a1 1.2, b 0.2, c 0.8; cross n 200, d 11,
 * a0 0.01, a1 3; δ 0.01; m and τ "auto" (mc_auto_m, mc_auto_tau: the paper's
 * formulas, re-evaluated at every point of the sweep).  Keys a setting does not use
 * are errors (toy: only n, m, delta, tau; cross: not b, c), so a config never
 * sets something that silently has no effect.
 *
 * Errors (code 2) name the file and the key path, as the training config does:
 * "configs/x.json: defaults.d: expected an integer, got 2.5",
 * "configs/x.json: sweep.values[3]: d: must be in [3, 1024] for setting ...". */
#ifndef ATTNLAB_EXP_P002_CONFIG_H
#define ATTNLAB_EXP_P002_CONFIG_H

#include "attnlab/exp/p002_mc.h"

#include <stdint.h>

#define MC_MAX_VALUES 1000
#define MC_MAX_REPS 10000000

typedef enum { MCP_N, MCP_D, MCP_M, MCP_DELTA, MCP_A0, MCP_A1, MCP_B, MCP_C, MCP_TAU, MCP_COUNT } McParam;

typedef struct McConfig {
    McParams base;            /* the defaults; m and tau valid only when not auto */
    double delta;
    int m_auto, tau_auto;
    char title[256];
    McParam param;            /* the swept parameter */
    int n_values;
    double values[MC_MAX_VALUES];
    int reps;
    uint64_t seed;
    char out[1024];
} McConfig;

extern const char *const mc_param_names[MCP_COUNT + 1];   /* "n", "d", ..., NULL */

/* Reads and validates path; every point of the sweep is checked (mc_check) here,
 * before anything runs.  Returns 0 or err->code (1: unreadable file, 2: bad config). */
int mc_config_load(McConfig *c, const char *path, AlError *err);
/* Same from text in memory (`source` names it in messages). */
int mc_config_parse(McConfig *c, const char *json, const char *source, AlError *err);
/* The parameters of sweep point i (the defaults, the swept value, auto m and τ
 * resolved).  Points passed mc_check in mc_config_load. */
void mc_config_point(const McConfig *c, int i, McParams *p);

#endif
