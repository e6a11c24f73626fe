/* ops_anna.c — ANNA as an autodiff op, for fine-tuning a model with ANNA in the
 * loop (src/anna/finetune.c).
 *
 * Forward: each head's codes for the whole batch (anna_codes_heads: a distinct
 * row hashed once), then anna_attention_coded per (batch, head), head h with
 * per_head[h] — the same arithmetic as anna_attention_heads, so evaluating through
 * this op gives the distillation grid's numbers bit for bit.
 *
 * Backward: with respect to v only, through the buckets the forward found
 * (anna_attention_backward: per table, bucket sums of dy_i / c_i; causal by a
 * reverse running sum; O(ℓ·T·Dv) per head, no T × T matrix).  q and k get no
 * gradient, and that is not an approximation we hide: the output depends on them
 * only through the hash codes, which are piecewise constant, so ∂y/∂q = ∂y/∂k = 0
 * wherever the derivative exists.  What the gradient cannot see is a token moving
 * into another bucket — "buckets fixed".  A model trained through this op thus
 * learns nothing through its queries and keys; fine-tuning freezes their
 * projections explicitly (they define the buckets).
 *
 * Saved (arena): per (batch, head) the codes of the T queries and T keys (2T·ℓ
 * uint64) and the counts c_i (T longs) — 16·ℓ + 8 bytes per position, 1 MB for
 * B = 32, T = 128, ℓ = 16 — plus the forward's scratch, reused by the backward. */
#include "attnlab/anna/anna.h"
#include "attnlab/anna/ops_anna.h"
#include "attnlab/util/error.h"

typedef struct AnnaSaved {
    const Lsh *per_head;   /* the caller's: must outlive the tape's backward */
    uint64_t  *codes;      /* per (b, h) in order: 2T × ℓ_h */
    long      *counts;     /* per (b, h): T */
    void      *scratch;
} AnnaSaved;

static void anna_backward(TapeEntry *e) {
    const AnnaSaved *s = e->saved[0];
    Tensor *v = e->in[2];
    int B = v->shape[0], H = v->shape[1], T = v->shape[2], Dv = v->shape[3], causal = e->i[0];
    const uint64_t *codes = s->codes;
    const long *counts = s->counts;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            long head = ((long)b * H + h) * T * Dv;
            anna_attention_backward(&s->per_head[h], codes, counts, e->out->grad + head, T, Dv, causal,
                                    v->grad + head, s->scratch);
            codes += 2L * T * s->per_head[h].n_tables;
            counts += T;
        }
}

Tensor *ad_anna_attention(Tape *t, Tensor *q, Tensor *k, Tensor *v, const struct Lsh *per_head, int causal) {
    AL_ASSERT(q->ndim == 4 && k->ndim == 4 && v->ndim == 4);
    for (int a = 0; a < 4; a++) AL_ASSERT(k->shape[a] == q->shape[a]);
    for (int a = 0; a < 3; a++) AL_ASSERT(v->shape[a] == q->shape[a]);
    int B = q->shape[0], H = q->shape[1], T = q->shape[2], D = q->shape[3], Dv = v->shape[3];
    size_t need = 0;
    long codes_per_item = 0;
    for (int h = 0; h < H; h++) {
        AL_ASSERT(per_head[h].dim == D);
        size_t n = anna_scratch_bytes(&per_head[h], T, Dv);
        if (n > need) need = n;
        codes_per_item += 2L * T * per_head[h].n_tables;
    }
    int rec = tape_needs_grad(t, v, NULL, NULL);
    Tensor *out = tape_tensor(t, rec, 4, (int[]){ B, H, T, Dv });
    void *scratch = tape_scratch(t, need);
    if (!rec) {
        anna_attention_heads(per_head, q->data, k->data, v->data, B, H, T, D, Dv, causal, out->data, scratch, NULL);
        return out;
    }
    AnnaSaved *s = tape_scratch(t, sizeof *s);
    s->per_head = per_head;
    s->codes = tape_scratch(t, (size_t)B * codes_per_item * sizeof *s->codes);
    s->counts = tape_scratch(t, (size_t)B * H * T * sizeof *s->counts);
    s->scratch = scratch;
    anna_codes_heads(per_head, q->data, k->data, B, H, T, D, s->codes);
    const uint64_t *codes = s->codes;
    long *counts = s->counts;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            long head = (long)b * H + h;
            anna_attention_coded(&per_head[h], codes, v->data + head * T * Dv, T, Dv, causal,
                                 out->data + head * T * Dv, scratch, NULL, counts);
            codes += 2L * T * per_head[h].n_tables;
            counts += T;
        }
    /* q and k are recorded for the record only: the backward writes v's gradient alone. */
    TapeEntry *e = tape_record(t, OP_ANNA_ATTENTION, anna_backward, out, q, k, v);
    e->saved[0] = s;
    e->i[0] = causal;
    return out;
}
