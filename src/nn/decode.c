/* decode.c — see decode.h.
 *
 * Each step runs training's own code (grad off, on a (B, 1, d) slice) for the parts
 * that see one position: model_embed, transformer_blocks — norms, projections,
 * residuals, MLP — and the head, so their numerics are training's.  Only the parts
 * that mix positions are here: the blocks' attention over the cache (or the
 * recurrent state), handed to transformer_blocks as its BlockMixer; a recurrent
 * architecture's step is its own (ModelArch.step, e.g. lstm.c), on a state kept here. */
#include "attnlab/nn/decode.h"
#include "model_internal.h"
#include "attnlab/util/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct Decoder {
    Model *m;
    int batch, B, pos, H, dh;
    Arena arena;
    Tape tape;
    const ModelArch *arch;
    /* Per layer, laid out [layer][b][h][position][dh] (softmax, sparse) or
     * [layer][b][h][dh][dh] + [layer][b][h][dh] (linear) or [layer][b][S]
     * (recurrent architectures, S = arch->state_floats). */
    float *k_cache, *v_cache;
    float *state_s, *state_z;
    float *rec_state;
    float *logits;        /* (batch, n_classes) */
};

static size_t layer_stride(const Decoder *d) { return (size_t)d->batch * d->H * d->m->max_len * d->dh; }

Decoder *decoder_create(Model *m, int batch) {
    Decoder *d = al_calloc(1, sizeof *d);
    d->m = m;
    d->arch = model_arch(m->cfg.type);
    AL_ASSERT(d->arch->step || m->cfg.attention.causal);
    d->batch = batch;
    int L = m->cfg.n_layers, dm = m->cfg.d_model;
    d->H = d->arch->step ? 1 : m->cfg.n_heads;
    d->dh = dm / d->H;
    arena_init(&d->arena, 1u << 20);
    tape_init(&d->tape, &d->arena);
    d->tape.grad_enabled = 0;
    if (d->arch->step) {
        d->rec_state = al_calloc((size_t)L * batch * d->arch->state_floats(m), sizeof(float));
    } else if (m->cfg.attention.type == ATTN_LINEAR) {
        d->state_s = al_calloc((size_t)L * batch * d->H * d->dh * d->dh, sizeof(float));
        d->state_z = al_calloc((size_t)L * batch * d->H * d->dh, sizeof(float));
    } else {
        d->k_cache = al_calloc((size_t)L * layer_stride(d), sizeof(float));
        d->v_cache = al_calloc((size_t)L * layer_stride(d), sizeof(float));
    }
    d->logits = al_calloc((size_t)batch * m->n_classes, sizeof(float));
    return d;
}

void decoder_free(Decoder *d) {
    if (!d) return;
    tape_free(&d->tape);
    arena_free(&d->arena);
    free(d->k_cache); free(d->v_cache);
    free(d->state_s); free(d->state_z);
    free(d->rec_state);
    free(d->logits);
    free(d);
}

void decoder_reset(Decoder *d, int B) {
    AL_ASSERT(B >= 1 && B <= d->batch);
    d->B = B;
    d->pos = 0;
    int L = d->m->cfg.n_layers;
    if (d->rec_state) memset(d->rec_state, 0, (size_t)L * d->batch * d->arch->state_floats(d->m) * sizeof(float));
    if (d->state_s) {
        memset(d->state_s, 0, (size_t)L * d->batch * d->H * d->dh * d->dh * sizeof(float));
        memset(d->state_z, 0, (size_t)L * d->batch * d->H * d->dh * sizeof(float));
    }
}

int decoder_position(const Decoder *d) { return d->pos; }

/* ---- attention of one new position ---------------------------------------------------- */

static float feature(AdFeature phi, float x) {
    if (phi == FEATURE_IDENTITY) return x;
    if (phi == FEATURE_RELU) return x > 0 ? x : 0;
    return x > 0 ? x + 1.0f : expf(x);        /* elu + 1 */
}

/* Is key j visible from query i under sparse attention (paper 004 eq. 6)? */
static int sparse_visible(int i, int j, int block, int k_local, int c) {
    return j <= i && (i - j < k_local * block || j % block >= block - c);
}

/* Softmax attention of query q (dh) over cached keys 0..s (those `visible`). */
static void attend_cache(const float *q, const float *K, const float *V, int s, int dh, float scale,
                         const Model *m, float *scores, float *out) {
    const CfgAttention *a = &m->cfg.attention;
    float mx = -INFINITY;
    for (int j = 0; j <= s; j++) {
        if (a->type == ATTN_SPARSE && !sparse_visible(s, j, m->sparse_block, a->local_blocks, a->summary)) {
            scores[j] = -INFINITY;
            continue;
        }
        float dot = 0;
        for (int e = 0; e < dh; e++) dot += q[e] * K[(size_t)j * dh + e];
        scores[j] = scale * dot;
        if (scores[j] > mx) mx = scores[j];
    }
    double sum = 0;
    for (int j = 0; j <= s; j++) sum += scores[j] = scores[j] == -INFINITY ? 0 : expf(scores[j] - mx);
    memset(out, 0, (size_t)dh * sizeof(float));
    for (int j = 0; j <= s; j++) {
        float p = (float)(scores[j] / sum);
        for (int e = 0; e < dh; e++) out[e] += p * V[(size_t)j * dh + e];
    }
}

/* Linear attention: S += φ(k)vᵀ, z += φ(k); out = φ(q)ᵀS / (φ(q)ᵀz + eps). */
static void attend_state(const float *q, const float *k, const float *v, float *S, float *z, int dh,
                         AdFeature phi, float eps, float *out) {
    for (int a = 0; a < dh; a++) {
        float fk = feature(phi, k[a]);
        z[a] += fk;
        for (int e = 0; e < dh; e++) S[a * dh + e] += fk * v[e];
    }
    float den = eps;
    memset(out, 0, (size_t)dh * sizeof(float));
    for (int a = 0; a < dh; a++) {
        float fq = feature(phi, q[a]);
        den += fq * z[a];
        for (int e = 0; e < dh; e++) out[e] += fq * S[a * dh + e];
    }
    for (int e = 0; e < dh; e++) out[e] /= den;
}

static void unit_norm(float *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += (double)x[i] * x[i];
    float inv = 1.0f / fmaxf((float)sqrt(s), 1e-12f);
    for (int i = 0; i < n; i++) x[i] *= inv;
}

/* The decoder's BlockMixer: q, k, v (B, 1, d) of layer l → y (B, 1, d), the new
 * position attending over the cache (extended by its k, v) or the state. */
static Tensor *attention_step(void *ctx, const Model *m, Tape *t, int l, Tensor *q, Tensor *k, Tensor *v) {
    Decoder *d = ctx;
    const CfgAttention *a = &m->cfg.attention;
    int H = d->H, dh = d->dh, s = d->pos, dm = m->cfg.d_model;
    float scale = a->score == SCORE_UNIT_NORM ? a->beta : 1.0f / sqrtf((float)dh);
    Tensor *y = tape_tensor(t, 0, 3, q->shape);
    float *scores = tape_scratch(t, (size_t)(s + 1) * sizeof(float));
    float *scratch_q = tape_scratch(t, (size_t)dh * sizeof(float));
    for (int b = 0; b < d->B; b++) {
        for (int h = 0; h < H; h++) {
            size_t row = (size_t)b * dm + (size_t)h * dh;
            float *out = y->data + row;
            if (a->type == ATTN_LINEAR) {
                size_t bh = ((size_t)l * d->batch + b) * H + h;
                attend_state(q->data + row, k->data + row, v->data + row, d->state_s + bh * dh * dh,
                             d->state_z + bh * dh, dh, a->feature, a->eps, out);
                continue;
            }
            size_t base = (size_t)l * layer_stride(d) + (((size_t)b * H + h) * m->max_len) * dh;
            float *K = d->k_cache + base, *V = d->v_cache + base, *qn = scratch_q;
            memcpy(K + (size_t)s * dh, k->data + row, (size_t)dh * sizeof(float));
            memcpy(V + (size_t)s * dh, v->data + row, (size_t)dh * sizeof(float));
            memcpy(qn, q->data + row, (size_t)dh * sizeof(float));
            if (a->score == SCORE_UNIT_NORM) {
                unit_norm(K + (size_t)s * dh, dh);
                unit_norm(qn, dh);
            }
            attend_cache(qn, K, V, s, dh, scale, m, scores, out);
        }
    }
    return y;
}

/* ---- one step through the network ------------------------------------------------------ */

const float *decoder_step(Decoder *d, const int *tokens) {
    Model *m = d->m;
    Tape *t = &d->tape;
    AL_ASSERT(d->pos < m->max_len);
    tape_reset(t);
    Tensor *x = model_embed(m, t, tokens, d->B, 1, d->pos);
    if (d->arch->step) x = d->arch->step(m, t, x, d->rec_state, d->batch);
    else x = transformer_blocks(m, t, x, &(BlockMixer){ attention_step, d });   /* training's blocks */
    Tensor *logits = ad_linear(t, x, m->head.w, m->head.b);
    memcpy(d->logits, logits->data, (size_t)d->B * m->n_classes * sizeof(float));
    d->pos++;
    return d->logits;
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

void decoder_greedy(Decoder *d, int B, int *tokens, const int *prompt_len, int eos_id, int *len) {
    int T = d->m->max_len, C = d->m->n_classes, *feed = al_malloc((size_t)B * sizeof(int)), active = B;
    decoder_reset(d, B);
    for (int b = 0; b < B; b++) len[b] = prompt_len[b];
    for (int s = 0; s < T - 1 && active; s++) {
        /* A finished row is fed anything (its outputs are ignored). */
        for (int b = 0; b < B; b++) feed[b] = tokens[(size_t)b * T + (s < len[b] ? s : 0)];
        const float *logits = decoder_step(d, feed);
        active = 0;
        for (int b = 0; b < B; b++) {
            int done = len[b] > prompt_len[b] && tokens[(size_t)b * T + len[b] - 1] == eos_id;
            /* Row b generates once its prompt is consumed, until <eos> or the cap. */
            if (!done && s + 1 == len[b] && len[b] < T) {
                tokens[(size_t)b * T + len[b]] = argmax(logits + (size_t)b * C, C);
                len[b]++;
                done = tokens[(size_t)b * T + len[b] - 1] == eos_id;
            }
            active += !done && len[b] < T;
        }
    }
    free(feed);
}
