/* anna.c — ANNA and EMA outputs through bucket sums (definitions in anna.h).
 *
 * Both reduce to one primitive: a map from a 64-bit key to a group holding the
 * sum of the values inserted under that key and their count.  ANNA keys are a
 * table's LSH codes (one map per table, reused); EMA keys are hashes of the raw
 * key vectors, with a full comparison on a hash match.  Open addressing with
 * linear probing over a power-of-two array at least twice the number of keys
 * (load ≤ 1/2), so a probe is O(1) expected and nothing is allocated per key.
 *
 * Causality costs nothing extra: walking positions in order and inserting key j
 * before reading query j makes every bucket hold exactly the keys j' ≤ j. */
#include "attnlab/anna/anna.h"

#include "attnlab/util/error.h"

#include "attnlab/util/fastmath.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the map --- */

typedef struct Slot {
    uint64_t key;
    int32_t  group;   /* −1: empty slot */
    int32_t  rep;     /* EMA: a key row of this group, compared on a hash match */
} Slot;

typedef struct GroupMap {
    Slot        *slots;
    uint64_t     mask;      /* capacity − 1 */
    int          shift;     /* 64 − log₂ capacity */
    float       *sums;      /* n_groups × dv */
    int         *counts;
    int          n_groups, dv;
    const float *rows;      /* EMA: the key vectors (dim wide); NULL for ANNA */
    int          dim;
} GroupMap;

/* Smallest power of two ≥ 2n (at least 8): keeps the load at most 1/2. */
static int map_log2_capacity(int n) {
    int b = 3;
    while ((1L << b) < 2L * n) b++;
    return b;
}

static void map_clear(GroupMap *m) {
    for (uint64_t i = 0; i <= m->mask; i++) m->slots[i].group = -1;
    m->n_groups = 0;
}

/* Float equality per coordinate: −0 == +0, NaN equals nothing. */
static int rows_equal(const float *a, const float *b, int d) {
    for (int c = 0; c < d; c++)
        if (!(a[c] == b[c])) return 0;
    return 1;
}

/* The slot holding key (and, for EMA, row x), or the empty slot where it goes.
 * Fibonacci hashing: the top bits of key·2⁶⁴/φ spread even the 2^z consecutive
 * codes of a hyperplane table over the whole array. */
static Slot *map_probe(const GroupMap *m, uint64_t key, const float *x) {
    uint64_t i = (key * 0x9E3779B97F4A7C15ull) >> m->shift;
    for (;; i = (i + 1) & m->mask) {
        Slot *s = &m->slots[i];
        if (s->group < 0) return s;
        if (s->key == key && (!m->rows || rows_equal(m->rows + (long)s->rep * m->dim, x, m->dim)))
            return s;
    }
}

/* Adds scale·v to key's group (created empty on first use); rep is the key's row.
 * The forwards pass scale 1, which is exact (1·v == v), so their sums are plain
 * sums; the backward adds dy_i / c_i through it. */
static void map_add(GroupMap *m, uint64_t key, const float *x, int rep, const float *v, float scale) {
    Slot *s = map_probe(m, key, x);
    if (s->group < 0) {
        s->key = key;
        s->rep = rep;
        s->group = m->n_groups++;
        memset(m->sums + (long)s->group * m->dv, 0, (size_t)m->dv * sizeof(float));
        m->counts[s->group] = 0;
    }
    float *sum = m->sums + (long)s->group * m->dv;
    for (int c = 0; c < m->dv; c++) sum[c] += scale * v[c];
    m->counts[s->group]++;
}

/* acc += key's group sum; returns its count (0 when the key has no group). */
static int map_read(const GroupMap *m, uint64_t key, const float *x, float *acc) {
    const Slot *s = map_probe(m, key, x);
    if (s->group < 0) return 0;
    const float *sum = m->sums + (long)s->group * m->dv;
    for (int c = 0; c < m->dv; c++) acc[c] += sum[c];
    return m->counts[s->group];
}

/* out_i = acc_i / cnt_i, or 0 for an empty row. */
static void divide_rows(float *out, const long *cnt, int n, int dv) {
    for (int i = 0; i < n; i++) {
        float *o = out + (long)i * dv;
        float inv = cnt[i] > 0 ? 1.0f / (float)cnt[i] : 0.0f;
        for (int c = 0; c < dv; c++) o[c] *= inv;
    }
}

/* --------------------------------------------------------------- scratch --- */

/* Rows hashed per call of lsh_hash_scratch.  Why blocks: hyperplane projections
 * are 2n × ℓ·z floats, while a block of 1024 rows stays small, is read back while
 * still in cache, and is still a GEMM large enough to run at full speed.  (A
 * cross-polytope Lsh needs one p-float vector whatever the block.) */
#define ANNA_HASH_ROWS 1024

typedef struct AnnaWork {
    float    *xhat;     /* 2n × dim: q̂ rows, then k̂ rows */
    float    *proj;     /* lsh_proj_floats(lsh, min(2n, ANNA_HASH_ROWS)) */
    uint64_t *codes;    /* 2n × ℓ */
    long     *cnt;      /* n: Σ_t |B_t(i)| */
    GroupMap  map;
} AnnaWork;

/* Carves base into w and returns the bytes used; with base NULL it only measures
 * (the pointers are then NULL). */
static size_t anna_layout(const Lsh *lsh, int n, int dv, char *base, AnnaWork *w) {
    size_t off = 0;
    int log2cap = map_log2_capacity(n);
    long rows = 2L * n, hash_rows = rows < ANNA_HASH_ROWS ? rows : ANNA_HASH_ROWS;
#define CARVE(ptr, count)                                                  \
    do {                                                                   \
        off = (off + 63) & ~(size_t)63;                                    \
        (ptr) = base ? (void *)(base + off) : NULL;                        \
        off += (size_t)(count) * sizeof *(ptr);                            \
    } while (0)
    CARVE(w->xhat, rows * lsh->dim);
    CARVE(w->proj, lsh_proj_floats(lsh, (int)hash_rows));
    CARVE(w->codes, rows * lsh->n_tables);
    CARVE(w->cnt, n);
    CARVE(w->map.slots, 1L << log2cap);
    CARVE(w->map.sums, (long)n * dv);
    CARVE(w->map.counts, n);
#undef CARVE
    w->map.mask = (1ull << log2cap) - 1;
    w->map.shift = 64 - log2cap;
    w->map.dv = dv;
    w->map.rows = NULL;
    w->map.dim = 0;
    return off;
}

size_t anna_scratch_bytes(const Lsh *lsh, int n, int dv) {
    AnnaWork w;
    return anna_layout(lsh, n, dv, NULL, &w);
}

/* ------------------------------------------------------------------ ANNA --- */

/* dst = src / max(‖src‖, 1e-12) per row (ad_l2norm's rule: a zero row stays zero). */
static void normalise_rows(float *dst, const float *src, int n, int d) {
    for (int i = 0; i < n; i++) {
        const float *x = src + (long)i * d;
        float inv = 1.0f / fmaxf(sqrtf(fm_dot(x, x, d)), 1e-12f);
        for (int c = 0; c < d; c++) dst[(long)i * d + c] = x[c] * inv;
    }
}

/* The codes of rows x (rows × dim), ANNA_HASH_ROWS at a time; proj holds
 * lsh_proj_floats(lsh, min(rows, ANNA_HASH_ROWS)) floats. */
static void hash_in_blocks(const Lsh *lsh, const float *x, long rows, uint64_t *codes, float *proj) {
    for (long r0 = 0; r0 < rows; r0 += ANNA_HASH_ROWS) {
        int nr = (int)(rows - r0 < ANNA_HASH_ROWS ? rows - r0 : ANNA_HASH_ROWS);
        lsh_hash_scratch(lsh, x + r0 * lsh->dim, nr, codes + r0 * lsh->n_tables, proj);
    }
}

static void anna_hash(const Lsh *lsh, AnnaWork *w, int rows) { hash_in_blocks(lsh, w->xhat, rows, w->codes, w->proj); }

/* Table t's contribution to every query's sum and count. */
static void anna_table(const Lsh *lsh, AnnaWork *w, int t, const float *v, int n, int dv, int causal,
                       float *out) {
    const int l = lsh->n_tables;
    const uint64_t *qc = w->codes + t, *kc = w->codes + (long)n * l + t;
    GroupMap *m = &w->map;
    map_clear(m);
    for (int j = 0; j < n; j++) {
        map_add(m, kc[(long)j * l], NULL, j, v + (long)j * dv, 1.0f);
        if (causal) w->cnt[j] += map_read(m, qc[(long)j * l], NULL, out + (long)j * dv);
    }
    if (!causal)
        for (int i = 0; i < n; i++) w->cnt[i] += map_read(m, qc[(long)i * l], NULL, out + (long)i * dv);
}

static void anna_fill_stats(const long *cnt, int n, AnnaStats *st) {
    long empty = 0, mx = 0;
    double total = 0;
    for (int i = 0; i < n; i++) {
        total += (double)cnt[i];
        empty += cnt[i] == 0;
        if (cnt[i] > mx) mx = cnt[i];
    }
    st->queries = n;
    st->mean_collisions = n ? total / n : 0.0;
    st->max_collisions = mx;
    st->empty_fraction = n ? (double)empty / n : 0.0;
}

void anna_attention(const Lsh *lsh, const float *q, const float *k, const float *v, int n, int dim,
                    int dv, int causal, float *out, void *scratch, AnnaStats *stats) {
    anna_attention_keep(lsh, q, k, v, n, dim, dv, causal, out, scratch, stats, NULL, NULL);
}

/* The outputs from the codes in w->codes: every table's bucket sums, then the mean. */
static void anna_buckets(const Lsh *lsh, AnnaWork *w, const float *v, int n, int dv, int causal, float *out,
                         AnnaStats *stats, long *counts) {
    memset(out, 0, (size_t)n * dv * sizeof(float));
    memset(w->cnt, 0, (size_t)n * sizeof(long));
    for (int t = 0; t < lsh->n_tables; t++) anna_table(lsh, w, t, v, n, dv, causal, out);
    divide_rows(out, w->cnt, n, dv);
    if (stats) anna_fill_stats(w->cnt, n, stats);
    if (counts) memcpy(counts, w->cnt, (size_t)n * sizeof *counts);
}

void anna_attention_keep(const Lsh *lsh, const float *q, const float *k, const float *v, int n, int dim,
                         int dv, int causal, float *out, void *scratch, AnnaStats *stats,
                         uint64_t *codes, long *counts) {
    AL_ASSERT((lsh->proj || lsh->signs) && lsh->dim == dim && n >= 0 && dv >= 1);
    if (stats) memset(stats, 0, sizeof *stats);
    if (n == 0) return;
    void *owned = scratch ? NULL : al_malloc(anna_scratch_bytes(lsh, n, dv));
    AnnaWork w;
    anna_layout(lsh, n, dv, scratch ? scratch : owned, &w);

    normalise_rows(w.xhat, q, n, dim);
    normalise_rows(w.xhat + (long)n * dim, k, n, dim);
    anna_hash(lsh, &w, 2 * n);
    anna_buckets(lsh, &w, v, n, dv, causal, out, stats, counts);
    if (codes) memcpy(codes, w.codes, (size_t)2 * n * lsh->n_tables * sizeof *codes);
    free(owned);
}

void anna_attention_coded(const Lsh *lsh, const uint64_t *codes, const float *v, int n, int dv, int causal,
                          float *out, void *scratch, AnnaStats *stats, long *counts) {
    AL_ASSERT((lsh->proj || lsh->signs) && n >= 0 && dv >= 1);
    if (stats) memset(stats, 0, sizeof *stats);
    if (n == 0) return;
    void *owned = scratch ? NULL : al_malloc(anna_scratch_bytes(lsh, n, dv));
    AnnaWork w;
    anna_layout(lsh, n, dv, scratch ? scratch : owned, &w);
    w.codes = (uint64_t *)codes;   /* only read */
    anna_buckets(lsh, &w, v, n, dv, causal, out, stats, counts);
    free(owned);
}

/* ------------------------------------------------------- codes of a batch --- */

/* FNV-1a over the row's 32-bit words, then a final mix: equal bits, equal hash. */
static uint64_t row_bits_hash(const float *x, int d) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (int c = 0; c < d; c++) {
        uint32_t u;
        memcpy(&u, x + c, sizeof u);
        h = (h ^ u) * 0x100000001B3ull;
    }
    h ^= h >> 29;
    return h * 0xBF58476D1CE4E5B9ull;
}

/* Moves the distinct rows of x (rows × d, bitwise identity) to its front, in order
 * of first appearance, and sets id[r] to row r's index among them.  Returns how
 * many there are. */
static long dedup_rows(float *x, long rows, int d, int *id) {
    int log2cap = 3;
    while ((1L << log2cap) < 2 * rows) log2cap++;
    const uint64_t mask = (1ull << log2cap) - 1;
    uint64_t *key = al_malloc(((size_t)mask + 1) * sizeof *key);
    int32_t *slot = al_malloc(((size_t)mask + 1) * sizeof *slot);
    for (uint64_t i = 0; i <= mask; i++) slot[i] = -1;
    long n = 0;
    for (long r = 0; r < rows; r++) {
        const float *row = x + r * d;
        uint64_t h = row_bits_hash(row, d), i = h >> (64 - log2cap);
        while (slot[i] >= 0 && (key[i] != h || memcmp(x + (long)slot[i] * d, row, (size_t)d * sizeof(float))))
            i = (i + 1) & mask;
        if (slot[i] < 0) {
            if (n != r) memcpy(x + n * d, row, (size_t)d * sizeof(float));
            key[i] = h, slot[i] = (int32_t)n++;
        }
        id[r] = slot[i];
    }
    free(key);
    free(slot);
    return n;
}

/* Head h's codes for all B items into codes (the (b, h) layout of anna_codes_heads:
 * item b's at codes + b·per_item). */
static void codes_of_head(const Lsh *lsh, const float *q, const float *k, long item_stride, int B, int T,
                          uint64_t *codes, long per_item) {
    const int d = lsh->dim, l = lsh->n_tables;
    const long rows = 2L * B * T;
    float *x = al_malloc((size_t)rows * d * sizeof(float));
    for (int b = 0; b < B; b++) {
        normalise_rows(x + 2L * b * T * d, q + b * item_stride, T, d);
        normalise_rows(x + (2L * b + 1) * T * d, k + b * item_stride, T, d);
    }
    long block = rows < ANNA_HASH_ROWS ? rows : ANNA_HASH_ROWS;
    float *proj = al_malloc((size_t)lsh_proj_floats(lsh, (int)block) * sizeof(float));
    if (lsh->family != LSH_CROSSPOLYTOPE) {
        /* Hyperplane codes come from a GEMM whose rounding depends on the block it is
         * given, so a row's code is a function of its item's rows, not of the row
         * alone: each item is hashed as anna_attention hashes it (its 2T rows in
         * blocks of ANNA_HASH_ROWS), which keeps every code as it was. */
        for (int b = 0; b < B; b++) hash_in_blocks(lsh, x + 2L * b * T * d, 2L * T, codes + b * per_item, proj);
    } else {
        int *id = al_malloc((size_t)rows * sizeof(int));
        long n = dedup_rows(x, rows, d, id);
        uint64_t *unique = al_malloc((size_t)n * l * sizeof *unique);
        hash_in_blocks(lsh, x, n, unique, proj);
        for (long r = 0; r < rows; r++)
            memcpy(codes + (r / (2L * T)) * per_item + (r % (2L * T)) * l, unique + (long)id[r] * l,
                   (size_t)l * sizeof *codes);
        free(unique);
        free(id);
    }
    free(proj);
    free(x);
}

long anna_codes_heads(const Lsh *per_head, const float *q, const float *k, int B, int H, int T, int D,
                      uint64_t *codes) {
    long per_item = 0;
    for (int h = 0; h < H; h++) per_item += 2L * T * per_head[h].n_tables;
    if (!codes) return per_item;
    for (int h = 0, off = 0; h < H; off += 2 * T * per_head[h].n_tables, h++)
        codes_of_head(&per_head[h], q + (long)h * T * D, k + (long)h * T * D, (long)H * T * D, B, T, codes + off,
                      per_item);
    return per_item;
}

void anna_collision_counts(const Lsh *lsh, const float *q, const float *k, int n, int dim, int causal,
                           int *counts) {
    AL_ASSERT((lsh->proj || lsh->signs) && lsh->dim == dim && n >= 0);
    if (n == 0) return;
    void *scratch = al_malloc(anna_scratch_bytes(lsh, n, 1));
    AnnaWork w;
    anna_layout(lsh, n, 1, scratch, &w);
    normalise_rows(w.xhat, q, n, dim);
    normalise_rows(w.xhat + (long)n * dim, k, n, dim);
    anna_hash(lsh, &w, 2 * n);
    const int l = lsh->n_tables;
    const uint64_t *qc = w.codes, *kc = w.codes + (long)n * l;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            int c = 0;
            for (int t = 0; t < l && (!causal || j <= i); t++) c += qc[(long)i * l + t] == kc[(long)j * l + t];
            counts[(long)i * n + j] = c;
        }
    free(scratch);
}

/* The transpose of anna_table: table t's part of dv_j = Σ_{i: j∈B_t(i)} dy_i / c_i.
 * The map now holds queries: each query adds g_i = dy_i / c_i under its code, and
 * each key reads the sum of its code's group.  Causal: B_t(i) holds only j ≤ i,
 * so key j must see the queries i ≥ j — walking positions backwards, query j is
 * added before key j reads (the mirror of the forward's insert-then-read).  A
 * query with c_i = 0 has an empty union and a constant output: it adds nothing
 * (nor could it: every key it would reach is in none of its buckets). */
static void anna_table_backward(const Lsh *lsh, AnnaWork *w, int t, const uint64_t *codes,
                                const long *cnt, const float *dy, int n, int dv, int causal,
                                float *dvals) {
    const int l = lsh->n_tables;
    const uint64_t *qc = codes + t, *kc = codes + (long)n * l + t;
    GroupMap *m = &w->map;
    map_clear(m);
    for (int step = 0; step < n; step++) {
        int i = causal ? n - 1 - step : step;
        if (cnt[i] > 0) map_add(m, qc[(long)i * l], NULL, i, dy + (long)i * dv, 1.0f / (float)cnt[i]);
        if (causal) map_read(m, kc[(long)i * l], NULL, dvals + (long)i * dv);
    }
    if (!causal)
        for (int j = 0; j < n; j++) map_read(m, kc[(long)j * l], NULL, dvals + (long)j * dv);
}

void anna_attention_backward(const Lsh *lsh, const uint64_t *codes, const long *counts,
                             const float *dy, int n, int dv, int causal, float *dvals, void *scratch) {
    AL_ASSERT((lsh->proj || lsh->signs) && n >= 0 && dv >= 1);
    if (n == 0) return;
    void *owned = scratch ? NULL : al_malloc(anna_scratch_bytes(lsh, n, dv));
    AnnaWork w;
    anna_layout(lsh, n, dv, scratch ? scratch : owned, &w);
    for (int t = 0; t < lsh->n_tables; t++)
        anna_table_backward(lsh, &w, t, codes, counts, dy, n, dv, causal, dvals);
    free(owned);
}

void anna_attention_heads(const Lsh *per_head, const float *q, const float *k, const float *v,
                          int B, int H, int T, int D, int Dv, int causal, float *out,
                          void *scratch, AnnaStats *stats) {
    size_t bytes = 0;
    for (int h = 0; h < H; h++) {
        size_t b = anna_scratch_bytes(&per_head[h], T, Dv);
        if (b > bytes) bytes = b;
    }
    void *owned = scratch ? NULL : al_malloc(bytes);
    uint64_t *codes = al_malloc((size_t)B * anna_codes_heads(per_head, q, k, B, H, T, D, NULL) * sizeof *codes);
    anna_codes_heads(per_head, q, k, B, H, T, D, codes);
    double total = 0, empty = 0;
    long mx = 0;
    const uint64_t *c = codes;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            long head = (long)b * H + h;
            AnnaStats st;
            anna_attention_coded(&per_head[h], c, v + head * T * Dv, T, Dv, causal, out + head * T * Dv,
                                 scratch ? scratch : owned, &st, NULL);
            c += 2L * T * per_head[h].n_tables;
            total += st.mean_collisions * T;
            empty += st.empty_fraction * T;
            if (st.max_collisions > mx) mx = st.max_collisions;
        }
    if (stats) {
        long nq = (long)B * H * T;
        *stats = (AnnaStats){ nq, nq ? total / nq : 0.0, mx, nq ? empty / nq : 0.0 };
    }
    free(codes);
    free(owned);
}

/* ------------------------------------------------------------------- EMA --- */

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A hash of x's bits that agrees with float equality: −0 is first turned into +0
 * (x + 0 does that in round-to-nearest).  Returns 0 when x holds a NaN: such a row
 * equals no row, so it is neither inserted nor looked up. */
static int row_hash(const float *x, int d, uint64_t *h) {
    uint64_t acc = 0x243F6A8885A308D3ull;
    for (int c = 0; c < d; c++) {
        float y = x[c] + 0.0f;
        if (y != y) return 0;
        acc = (acc ^ fm_bits(y)) * 0x100000001B3ull;
        acc ^= acc >> 29;
    }
    *h = mix64(acc ^ (uint64_t)d);
    return 1;
}

void ema_attention(const float *q, const float *k, const float *v, int n, int dim, int dv,
                   int causal, float *out) {
    AL_ASSERT(n >= 0 && dim >= 1 && dv >= 1);
    if (n == 0) return;
    int log2cap = map_log2_capacity(n);
    size_t cap = (size_t)1 << log2cap;
    /* One allocation, largest alignment first: slots, per-query counts, group
     * sums, group counts. */
    char *mem = al_malloc(cap * sizeof(Slot) + (size_t)n * (sizeof(long) + sizeof(int)) +
                          (size_t)n * dv * sizeof(float));
    long *cnt = (long *)(mem + cap * sizeof(Slot));
    float *sums = (float *)(cnt + n);
    GroupMap m = { (Slot *)mem, cap - 1, 64 - log2cap, sums, (int *)(sums + (long)n * dv), 0, dv,
                   k, dim };
    map_clear(&m);
    memset(out, 0, (size_t)n * dv * sizeof(float));

    uint64_t h;
    for (int j = 0; j < n; j++) {
        const float *kj = k + (long)j * dim, *qj = q + (long)j * dim;
        if (row_hash(kj, dim, &h)) map_add(&m, h, kj, j, v + (long)j * dv, 1.0f);
        if (causal) cnt[j] = row_hash(qj, dim, &h) ? map_read(&m, h, qj, out + (long)j * dv) : 0;
    }
    if (!causal)
        for (int i = 0; i < n; i++) {
            const float *qi = q + (long)i * dim;
            cnt[i] = row_hash(qi, dim, &h) ? map_read(&m, h, qi, out + (long)i * dv) : 0;
        }
    divide_rows(out, cnt, n, dv);
    free(mem);
}
