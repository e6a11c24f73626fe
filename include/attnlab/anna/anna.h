/* anna.h — Approximate Nearest Neighbor Attention and Exact Match Attention
 * (paper 000: ANNA, Algorithm 1; EMA, Definition B.1).  Models train a softmax
 * surrogate and swap these in at evaluation time (paper 000, App. G).  ANNA also
 * has a backward with respect to the values only (anna_attention_backward, behind
 * the autodiff op ad_anna_attention), for fine-tuning the rest of a model with
 * ANNA in the loop; see there for why the queries and keys get no gradient.
 *
 * ANNA (docs/design.md, decision 1).  With the Lsh's ℓ tables g_1..g_ℓ and
 * q̂, k̂ the unit-normalised queries and keys,
 *   B_t(i) = { j : g_t(k̂_j) = g_t(q̂_i) }   (and j ≤ i when causal),
 *   y_i    = Σ_t Σ_{j∈B_t(i)} v_j / Σ_t |B_t(i)|,   y_i = 0 when every B_t(i) is empty:
 * the mean over all (table, key) collisions counted with multiplicity — paper 000
 * App. C's "sum of the values divided by the counts".  A key met in several tables
 * weighs more, which is what gives a true near neighbour its weight lower bound.
 * A zero vector normalises to zero (x / max(‖x‖, 1e-12), as ad_l2norm).
 *
 * Cost for hashing O(N·d·ℓ·z) (hyperplane: one GEMM per block of rows) or
 * O(N·ℓ·z·p log p) (cross-polytope, p = d padded to a power of two), plus O(ℓ·N·dv)
 * for the buckets: per table an open-addressing map from code to (value sum,
 * count).  Non-causal: insert every key, then read each query's bucket.  Causal:
 * in position order insert key j, then read query j, so the bucket already holds
 * exactly the keys j' ≤ j (j itself included).  No N×N matrix exists.
 *
 * EMA.  y_i = mean of v_j over { j : k_j = q_i } (and j ≤ i when causal), 0 if
 * none.  Equality is float equality of every coordinate of the raw vectors — no
 * normalisation — so −0 equals +0 and a vector holding a NaN equals nothing.  A
 * map keyed by a hash of the (canonicalised) bytes gives O(N·(d + dv)) expected. */
#ifndef ATTNLAB_ANNA_ANNA_H
#define ATTNLAB_ANNA_ANNA_H

#include "attnlab/anna/lsh.h"

#include <stddef.h>
#include <stdint.h>

/* What the hash tables retrieved, over the queries of one call (or of all heads
 * for anna_attention_heads).  Collisions count multiplicity: Σ_t |B_t(i)|. */
typedef struct AnnaStats {
    long   queries;
    double mean_collisions;    /* mean over queries of Σ_t |B_t(i)| */
    long   max_collisions;     /* its maximum */
    double empty_fraction;     /* fraction of queries with an empty union (y_i = 0) */
} AnnaStats;

/* Scratch for anna_attention at n positions with value width dv (bytes). */
size_t anna_scratch_bytes(const Lsh *lsh, int n, int dv);

/* q, k (n × dim), v (n × dv), out (n × dv), all row-major; dim == lsh->dim; out
 * must not overlap the inputs.  scratch: anna_scratch_bytes(lsh, n, dv) bytes, or NULL to allocate (once) here.
 * stats may be NULL. */
void anna_attention(const Lsh *lsh, const float *q, const float *k, const float *v, int n, int dim,
                    int dv, int causal, float *out, void *scratch, AnnaStats *stats);

/* anna_attention that also keeps what the backward needs: codes (2n × ℓ: row i's
 * ℓ table codes, the n query rows then the n key rows) and counts (n: c_i =
 * Σ_t |B_t(i)|).  Either may be NULL. */
void anna_attention_keep(const Lsh *lsh, const float *q, const float *k, const float *v, int n, int dim,
                         int dv, int causal, float *out, void *scratch, AnnaStats *stats,
                         uint64_t *codes, long *counts);

/* anna_attention from codes already computed (2n × ℓ, as anna_attention_keep
 * writes them): the same outputs, stats and counts (either may be NULL), bit for
 * bit, given the codes of the same q and k. */
void anna_attention_coded(const Lsh *lsh, const uint64_t *codes, const float *v, int n, int dv, int causal,
                          float *out, void *scratch, AnnaStats *stats, long *counts);

/* Every (batch, head)'s codes of q, k (B, H, T, D), normalised and hashed as
 * anna_attention does, head h with per_head[h], into codes in (b, h) order, each
 * 2T × ℓ_h (queries, then keys) as anna_attention_keep writes them.  Returns the
 * codes per batch item (Σ_h 2T·ℓ_h); codes NULL: only that.  Why a batch at once:
 * rows repeat across items — a first layer's queries and keys depend only on the
 * token and its position, so a batch of 32 sequences of 100 positions over 4
 * symbols has at most 400 distinct query rows among its 3 200 — and a
 * cross-polytope code is a function of the row alone, so each distinct row
 * (bitwise) is hashed once.  Hyperplane codes come from a GEMM whose rounding
 * depends on the rows hashed with it, so that family hashes each item's 2T rows as
 * anna_attention does (no sharing).  Either way the codes are anna_attention's,
 * bit for bit. */
long anna_codes_heads(const Lsh *per_head, const float *q, const float *k, int B, int H, int T, int D,
                      uint64_t *codes);

/* dvals += ∂L/∂v given dy = ∂L/∂out, for the buckets anna_attention_keep found.
 * The output is linear in v: y_i = Σ_t Σ_{j∈B_t(i)} v_j / c_i, so
 *   ∂L/∂v_j = Σ_t Σ_{i: j∈B_t(i)} dy_i / c_i,
 * per table a bucket sum of dy_i / c_i over the queries sharing key j's code (and
 * i ≥ j when causal, by a reverse running sum).  O(ℓ·n·dv), no n × n matrix.
 * Queries and keys: the output is piecewise constant in them (it depends on q, k
 * only through the codes), so ∂y/∂q = ∂y/∂k = 0 wherever it exists — everywhere
 * but on bucket boundaries, where y jumps.  No gradient flows to them.
 * scratch: anna_scratch_bytes(lsh, n, dv) bytes, or NULL. */
void anna_attention_backward(const Lsh *lsh, const uint64_t *codes, const long *counts,
                             const float *dy, int n, int dv, int causal, float *dvals, void *scratch);

/* The collision map behind anna_attention, for looking inside a model (`./train
 * inspect --anna`): counts[i·n + j] = |{ t : g_t(k̂_j) = g_t(q̂_i) }|, the number of
 * the ℓ tables in which key j lands in query i's bucket (0 for j > i when causal),
 * with q, k normalised and hashed exactly as anna_attention does.  So anna_attention's
 * y_i = Σ_j counts[i·n + j]·v_j / Σ_j counts[i·n + j] (0 for an all-zero row).
 * O(n²·ℓ) with an n × n output: inspection only, never the attention itself. */
void anna_collision_counts(const Lsh *lsh, const float *q, const float *k, int n, int dim, int causal,
                           int *counts);

/* Every (batch, head) of q, k (B, H, T, D), v and out (B, H, T, Dv): head h uses
 * per_head[h] for every batch item (the hash belongs to the layer's head, not to
 * a sample).  Seeds: lsh_head_seed(base, layer, h).  scratch as above for n = T,
 * or NULL; stats (may be NULL) cover all B·H·T queries. */
void anna_attention_heads(const Lsh *per_head, const float *q, const float *k, const float *v,
                          int B, int H, int T, int D, int Dv, int causal, float *out,
                          void *scratch, AnnaStats *stats);

/* q, k (n × dim), v (n × dv) → out (n × dv).  Allocates its map once per call. */
void ema_attention(const float *q, const float *k, const float *v, int n, int dim, int dv,
                   int causal, float *out);

#endif
