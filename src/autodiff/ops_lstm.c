/* ops_lstm.c — one LSTM layer over a whole sequence (paper 003's recurrent baseline).
 *
 * x (B, T, In), w_ih (4H, In), w_hh (4H, H), b (4H) → h (B, T, H); gate order
 * (i, f, g, o) as in PyTorch, h0 = c0 = 0.  Per step t, on B rows at once:
 *   z_t = x_t·w_ihᵀ + b + h_{t−1}·w_hhᵀ                            (B, 4H)
 *   i, f, o = σ(z_i), σ(z_f), σ(z_o);   g = tanh(z_g)
 *   c_t = f∘c_{t−1} + i∘g;              h_t = o∘tanh(c_t)
 *
 * Forward: the x·w_ihᵀ part does not depend on the recurrence, so it is ONE GEMM
 * over all B·T rows; only the (B, H)·(H, 4H) product is left per step.  Everything
 * is stored batch-major (rows (b, t), like x and h), so the rows of one step are B
 * rows at a stride of T rows: sgemm takes them through its leading dimension,
 * nothing is copied into time-major order.
 *
 * Saved: the gate activations A (B, T, 4H) (written over z), c and tanh(c) (B, T, H).
 * Backward runs t = T−1 … 0 with dc and dh_rec (B, H) carried between steps:
 *   dh   = dout_t + dh_rec
 *   dc  += dh∘o∘(1 − tanh²c_t)
 *   dz_i = dc∘g∘i(1−i)   dz_f = dc∘c_{t−1}∘f(1−f)   dz_g = dc∘i∘(1−g²)
 *   dz_o = dh∘tanh(c_t)∘o(1−o)
 *   dc  ← dc∘f;  dh_rec = dz_t·w_hh                  (one GEMM per step)
 * dz of every step is kept (B, T, 4H), so after the loop each weight gradient is
 * one GEMM over all B·T rows: dW_ih += dzᵀ·x, dW_hh += dzᵀ·h_prev (h shifted one
 * step, zero at t = 0), dx += dz·w_ih; db += column sums of dz. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"

#include "attnlab/util/fastmath.h"
#include "record.h"

#include "attnlab/util/gemm.h"
#include <string.h>

/* C (m, n) = op(A)·op(B) + beta·C with explicit leading dimensions (row-major):
 * the per-step products read every T-th row of a batch-major buffer. */
static void sgemm(int ta, int tb, int m, int n, int k, const float *A, int lda, const float *B,
                  int ldb, float beta, float *C, int ldc) {
    al_sgemm(ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                m, n, k, 1.0f, A, lda, B, ldb, beta, C, ldc);
}

/* 1/(1 + e^−z): e^−z overflows to +inf for z < −88.7, giving exactly 0, and
 * flushes to 0 for z > 86.6, giving exactly 1 — no NaN at either end. */
static inline float sigmoid(float z) { return 1.0f / (1.0f + fm_exp(-z)); }

typedef struct LstmDims { int B, T, In, H; } LstmDims;

static LstmDims lstm_dims(const Tensor *x, const Tensor *w_ih, const Tensor *w_hh, const Tensor *b) {
    AL_ASSERT(x->ndim == 3 && w_ih->ndim == 2 && w_hh->ndim == 2 && b);
    LstmDims d = { x->shape[0], x->shape[1], x->shape[2], w_hh->shape[1] };
    AL_ASSERT(d.B > 0 && d.T > 0 && d.In > 0 && d.H > 0);
    AL_ASSERT(w_ih->shape[0] == 4 * d.H && w_ih->shape[1] == d.In);
    AL_ASSERT(w_hh->shape[0] == 4 * d.H && b->n == 4 * d.H);
    return d;
}

/* Arena buffers of one recorded call.  A struct because the entry has only three
 * input slots and the LSTM has four inputs: b travels here. */
typedef struct LstmSaved {
    Tensor *b;
    float *act;     /* (B, T, 4H) gate activations i, f, g, o */
    float *c, *tc;  /* (B, T, H) cell state and tanh of it */
    float *zero;    /* (H) zeros: c_{−1} */
    float *dz;      /* (B, T, 4H) pre-activation gate grads, all steps */
    float *dc, *dh_rec;  /* (B, H) carried backward through time */
    float *h_prev;  /* (B, T, H) h shifted one step; NULL unless w_hh has a grad */
} LstmSaved;

/* ------------------------------------------------------------------------------ */

/* One row (b, t): z (4H) in a becomes the activations; writes c, tanh c and h.
 * Straight-line body over j with fastmath's inlined exp/tanh, so it vectorises. */
static void cell_forward(float *restrict a, const float *restrict c_prev, float *restrict c,
                         float *restrict tc, float *restrict h, int H) {
    float *ai = a, *af = a + H, *ag = a + 2 * H, *ao = a + 3 * H;
    for (int j = 0; j < H; j++) {
        float i = sigmoid(ai[j]), f = sigmoid(af[j]), g = fm_tanh(ag[j]), o = sigmoid(ao[j]);
        float cj = f * c_prev[j] + i * g;
        float t = fm_tanh(cj);
        ai[j] = i;
        af[j] = f;
        ag[j] = g;
        ao[j] = o;
        c[j] = cj;
        tc[j] = t;
        h[j] = o * t;
    }
}

/* One row (b, t) backward: from dout_t, dh_rec and the carried dc (in: from step
 * t+1; out: the part flowing to c_{t−1}) to the gate pre-activation grads dz (4H). */
static void cell_backward(const float *restrict a, const float *restrict c_prev,
                          const float *restrict tc, const float *restrict dout,
                          const float *restrict dh_rec, float *restrict dc, float *restrict dz,
                          int H) {
    const float *ai = a, *af = a + H, *ag = a + 2 * H, *ao = a + 3 * H;
    for (int j = 0; j < H; j++) {
        float i = ai[j], f = af[j], g = ag[j], o = ao[j], t = tc[j];
        float dh = dout[j] + dh_rec[j];
        float dcj = dc[j] + dh * o * (1.0f - t * t);
        dz[j] = dcj * g * i * (1.0f - i);
        dz[H + j] = dcj * c_prev[j] * f * (1.0f - f);
        dz[2 * H + j] = dcj * i * (1.0f - g * g);
        dz[3 * H + j] = dh * t * o * (1.0f - o);
        dc[j] = dcj * f;
    }
}

/* ------------------------------------------------------------------------------ */

/* dz of every (b, t), walking time backward; dz·w_hh feeds h_{t−1}. */
static void backward_through_time(const LstmSaved *s, const float *dout, const float *w_hh,
                                  LstmDims d) {
    const int H = d.H, G = 4 * d.H;
    memset(s->dc, 0, (size_t)d.B * H * sizeof(float));
    memset(s->dh_rec, 0, (size_t)d.B * H * sizeof(float));
    for (int t = d.T - 1; t >= 0; t--) {
        for (int b = 0; b < d.B; b++) {
            long r = (long)b * d.T + t;   /* row (b, t) */
            cell_backward(s->act + r * G, t ? s->c + (r - 1) * H : s->zero, s->tc + r * H,
                          dout + r * H, s->dh_rec + (long)b * H, s->dc + (long)b * H,
                          s->dz + r * G, H);
        }
        /* h0 is a constant: nothing flows out of step 0. */
        if (t > 0)
            sgemm(0, 0, d.B, H, G, s->dz + (long)t * G, d.T * G, w_hh, H, 0.0f, s->dh_rec, H);
    }
}

static void lstm_backward(TapeEntry *e) {
    Tensor *x = e->in[0], *w_ih = e->in[1], *w_hh = e->in[2], *h = e->out;
    const LstmSaved *s = e->saved[0];
    Tensor *bias = s->b;
    const LstmDims d = lstm_dims(x, w_ih, w_hh, bias);
    const int H = d.H, G = 4 * d.H, rows = d.B * d.T;

    backward_through_time(s, h->grad, w_hh->data, d);

    if (x->grad) sgemm(0, 0, rows, d.In, G, s->dz, G, w_ih->data, d.In, 1.0f, x->grad, d.In);
    if (w_ih->grad) sgemm(1, 0, G, d.In, rows, s->dz, G, x->data, d.In, 1.0f, w_ih->grad, d.In);
    if (w_hh->grad) {
        /* h_prev[b, 0] = 0 and h_prev[b, 1..T−1] = h[b, 0..T−2]: one contiguous copy
         * per sequence, and then Σ_t dz_tᵀ·h_{t−1} is a single GEMM over B·T rows. */
        for (int b = 0; b < d.B; b++) {
            float *dst = s->h_prev + (long)b * d.T * H;
            memset(dst, 0, (size_t)H * sizeof(float));
            memcpy(dst + H, h->data + (long)b * d.T * H, (size_t)(d.T - 1) * H * sizeof(float));
        }
        sgemm(1, 0, G, H, rows, s->dz, G, s->h_prev, H, 1.0f, w_hh->grad, H);
    }
    if (bias->grad) {
        /* Row by row so the inner loop runs over contiguous columns and vectorises. */
        for (long r = 0; r < rows; r++) {
            const float *dzr = s->dz + r * G;
            for (int j = 0; j < G; j++) bias->grad[j] += dzr[j];
        }
    }
}

Tensor *ad_lstm(Tape *t, Tensor *x, Tensor *w_ih, Tensor *w_hh, Tensor *b) {
    const LstmDims d = lstm_dims(x, w_ih, w_hh, b);
    const int H = d.H, G = 4 * d.H, rows = d.B * d.T;
    int needs_grad = tape_needs_grad(t, x, w_ih, w_hh) || tape_needs_grad(t, b, NULL, NULL);
    Tensor *h = tape_tensor(t, needs_grad, 3, (const int[]){ d.B, d.T, H });

    /* Without grad, c and tanh c could be one row each; the full buffers keep one
     * code path and cost half of what z (needed by the big GEMM) costs anyway. */
    LstmSaved s = { .b = b };
    s.act = tape_scratch(t, (size_t)rows * G * sizeof(float));
    s.c = tape_scratch(t, (size_t)rows * H * sizeof(float));
    s.tc = tape_scratch(t, (size_t)rows * H * sizeof(float));
    s.zero = tape_scratch(t, (size_t)H * sizeof(float));
    memset(s.zero, 0, (size_t)H * sizeof(float));

    /* z = b + x·w_ihᵀ for all B·T rows: the bias rows first, the GEMM adds (beta 1). */
    for (long r = 0; r < rows; r++) memcpy(s.act + r * G, b->data, (size_t)G * sizeof(float));
    sgemm(0, 1, rows, G, d.In, x->data, d.In, w_ih->data, d.In, 1.0f, s.act, G);

    for (int step = 0; step < d.T; step++) {
        /* z_t += h_{t−1}·w_hhᵀ; h0 = 0 contributes nothing at step 0. */
        if (step > 0)
            sgemm(0, 1, d.B, G, H, h->data + (long)(step - 1) * H, d.T * H, w_hh->data, H, 1.0f,
                  s.act + (long)step * G, d.T * G);
        for (int bi = 0; bi < d.B; bi++) {
            long r = (long)bi * d.T + step;
            cell_forward(s.act + r * G, step ? s.c + (r - 1) * H : s.zero, s.c + r * H,
                         s.tc + r * H, h->data + r * H, H);
        }
    }

    if (needs_grad) {
        /* Backward cannot allocate (the entry has no tape), so its buffers come now. */
        s.dz = tape_scratch(t, (size_t)rows * G * sizeof(float));
        s.dc = tape_scratch(t, (size_t)d.B * H * sizeof(float));
        s.dh_rec = tape_scratch(t, (size_t)d.B * H * sizeof(float));
        s.h_prev = w_hh->grad ? tape_scratch(t, (size_t)rows * H * sizeof(float)) : NULL;
        LstmSaved *saved = tape_scratch(t, sizeof *saved);
        *saved = s;
        ad_record(t, (TapeEntry){ .op = OP_LSTM, .backward = lstm_backward, .out = h, .in = { x, w_ih, w_hh },
                                  .saved = { saved } });
    }
    return h;
}
