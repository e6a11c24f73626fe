/* ops.h — every differentiable op.  Each returns a new arena tensor and, when an
 * input carries a gradient, records one tape entry whose backward adds into the
 * inputs' grads.  Shapes are checked with AL_ASSERT: a mismatch is a bug in the
 * caller (model code), never bad user input, which is validated earlier.
 *
 * Where each op lives:
 *   ops_linalg.c     matmul, linear
 *   ops_mlp.c        the fused MLP (linear → GeLU → linear)
 *   ops_pointwise.c  add, sub, mul, scale, sum, mean, gelu, elu, relu, silu, dropout
 *   ops_gather.c     embedding, reshape, split_heads, merge_heads
 *   ops_norm.c       layernorm, l2norm
 *   ops_softmax.c    softmax, cross_entropy, bce_multilabel
 *   ops_attention.c  fused attention (heads split or in place), causal mask
 *   ops_linear_attention.c, ops_sparse_attention.c   efficient attention (paper 004)
 *   ops_lstm.c       LSTM layer (paper 003's recurrent baseline)
 *   ops_dss.c        DSS-softmax kernel, causal depthwise convolution (DSS layer)
 *   ops_retnet.c     RetNet's retention (parallel form)
 *   ops_mamba.c      causal depthwise conv, selective scan (Mamba); its rmsnorm is
 *                    in ops_norm.c, its column split (columns) in ops_gather.c
 * OP_ANNA_ATTENTION (ops.def) is recorded by ad_anna_attention, which lives with
 * ANNA in src/anna/ops_anna.c (attnlab/anna/ops_anna.h): an op needs nothing of
 * autodiff's beyond tape_record and a backward function pointer. */
#ifndef ATTNLAB_AUTODIFF_OPS_H
#define ATTNLAB_AUTODIFF_OPS_H

#include "attnlab/autodiff/tape.h"

/* C = op(A)·op(B) through cblas_sgemm.
 * A is (…, M, K) — or (…, K, M) with trans_a.  B is (…, K, N) — or (…, N, K) with
 * trans_b — and either has the same leading (batch) dims as A or is 2-D and shared
 * by every batch item.  C is (…, M, N) with A's leading dims. */
Tensor *ad_matmul(Tape *t, Tensor *a, Tensor *b, int trans_a, int trans_b);

/* y = x·Wᵀ + b.  x (…, in), w (out, in) — PyTorch's nn.Linear layout — b (out) or NULL.
 * y (…, out).  One GEMM forward, two GEMMs backward. */
Tensor *ad_linear(Tape *t, Tensor *x, Tensor *w, Tensor *b);
/* y = x·Wᵀ + b + res, res NULL or y's shape (a residual stream): the add happens in
 * the GEMM's pass (y starts as res + b, sgemm adds with beta = 1).  Recorded as
 * OP_LINEAR; dres = dy. */
Tensor *ad_linear_residual(Tape *t, Tensor *x, Tensor *w, Tensor *b, Tensor *res);

/* Elementwise a ∘ b where b has a's shape, or b is one row (last dim of a; any
 * shape with that many elements) broadcast over all of a's rows. */
Tensor *ad_add(Tape *t, Tensor *a, Tensor *b);
Tensor *ad_sub(Tape *t, Tensor *a, Tensor *b);
Tensor *ad_mul(Tape *t, Tensor *a, Tensor *b);
Tensor *ad_scale(Tape *t, Tensor *a, float s);
Tensor *ad_sum(Tape *t, Tensor *a);    /* → shape (1) */
Tensor *ad_mean(Tape *t, Tensor *a);   /* → shape (1) */

typedef enum AdGelu { GELU_TANH, GELU_ERF } AdGelu;
Tensor *ad_gelu(Tape *t, Tensor *x, AdGelu kind);
/* A transformer block's MLP as one op: y = GELU(x·W1ᵀ + b1)·W2ᵀ + b2 + res.
 * x (…, D), w1 (Hd, D), b1 (Hd), w2 (O, Hd), b2 (O), res NULL or y's shape (a
 * residual stream, added inside the fc2 GEMM as in ad_linear_residual); y (…, O).
 * Equals ad_linear → ad_gelu → ad_linear(_residual) to 1e-5 but stores only
 * GELU(h) and GELU′(h) of the hidden layer h — 2·rows·Hd floats instead of 5 —
 * and its backward needs no scratch: it writes the hidden gradients over them, so
 * a tape holding it is walked backward once (tape.h).  Recorded as OP_MLP. */
Tensor *ad_mlp(Tape *t, Tensor *x, Tensor *w1, Tensor *b1, Tensor *w2, Tensor *b2, Tensor *res, AdGelu kind);
Tensor *ad_elu(Tape *t, Tensor *x);    /* alpha = 1 */
Tensor *ad_relu(Tape *t, Tensor *x);
/* SiLU (swish): y = x·σ(x), σ(x) = 1/(1 + e^−x).  x any shape → y like x;
 * dx = dy·σ(x)·(1 + x·(1 − σ(x))).  Recorded as OP_SILU. */
Tensor *ad_silu(Tape *t, Tensor *x);
/* GLU (Dauphin et al. 2017, "Language Modeling with Gated Convolutional Networks";
 * torch nn.GLU(dim=-1)): x (…, 2C) = (a | b), its last dim halved → y (…, C) = a·σ(b);
 * da = dy·σ(b), db = dy·a·σ(b)·(1 − σ(b)).  Recorded as OP_GLU. */
Tensor *ad_glu(Tape *t, Tensor *x);
/* Inverted dropout: zero with probability p, scale kept entries by 1/(1−p).  Only
 * when t->training and p > 0; otherwise returns x itself.  Mask from t->rng. */
Tensor *ad_dropout(Tape *t, Tensor *x, float p);
/* The same on x (n, …) holding rows rows[0..n) of a grid (x's row r is grid row
 * rows[r]), with the mask ad_dropout would draw for the whole grid at those
 * elements — so dropping after a gather equals gathering after a dropout
 * (model_forward_rows).  grid_rows_per_item: grid rows per batch item (T), for a
 * shard's offset (Tape.batch_row0).  Recorded as OP_DROPOUT. */
Tensor *ad_dropout_rows(Tape *t, Tensor *x, float p, const int *rows, int grid_rows_per_item);

/* out[…, :] = table[ids[…], :].  table (V, D); ids has `n_ids` entries laid out with
 * shape ids_shape (ids_ndim ≤ 3); each id in [0, V).  out (ids_shape…, D).
 * Backward scatter-adds into the table's grad. */
Tensor *ad_embedding(Tape *t, Tensor *table, const int *ids, int ids_ndim, const int *ids_shape);

/* A view with a new shape (same number of elements): shares data and grad. */
Tensor *ad_reshape(Tape *t, Tensor *x, int ndim, const int *shape);
/* (B, T, H·D) → (B, H, T, D) and back. */
Tensor *ad_split_heads(Tape *t, Tensor *x, int n_heads);
Tensor *ad_merge_heads(Tape *t, Tensor *x);

/* Per row of the last dim: (x − mean)/sqrt(var + eps)·gain + bias (biased variance,
 * as PyTorch).  gain, bias (C). */
Tensor *ad_layernorm(Tape *t, Tensor *x, Tensor *gain, Tensor *bias, float eps);
/* Per row: x / max(‖x‖₂, eps) (PyTorch's F.normalize). */
Tensor *ad_l2norm(Tape *t, Tensor *x, float eps);

/* Row softmax over the last dim of x + mask.  mask NULL or (R, C) with x (…, R, C),
 * broadcast over leading dims; entries may be −INFINITY.  A row whose entries are
 * all −inf gives all zeros (not NaN). */
Tensor *ad_softmax(Tape *t, Tensor *x, const Tensor *mask);
/* Mean over counted rows of −log softmax(logits_row)[target].  logits (…, C);
 * targets has one entry per row; a target < 0 is ignored.  → shape (1); 0 when
 * nothing is counted. */
Tensor *ad_cross_entropy(Tape *t, Tensor *logits, const int *targets);
/* Multi-label loss of next-character prediction (paper 003, App. H.2 "Eq-ncp": a
 * set of valid continuations per prefix): one sigmoid per class and binary
 * cross-entropy against a k-hot target, summed over the C classes (the negative
 * log-likelihood of the whole set, as cross_entropy is of one class) and averaged
 * over counted rows.  logits (…, C); targets one per row: < 0 ignored, t in
 * [0, C) the one valid class, t == C every class valid (data/dataset.h).  With
 * BCE(z, y) = softplus(z) − y·z:  loss = (1/n) Σ_rows Σ_c softplus(z_c) − y_c·z_c;
 * dz_c = (σ(z_c) − y_c)/n.  → shape (1); 0 when nothing is counted.  Recorded as
 * OP_BCE_MULTILABEL. */
Tensor *ad_bce_multilabel(Tape *t, Tensor *logits, const int *targets);

/* Fused attention: softmax(scale·Q·Kᵀ + mask)·V per (batch, head).
 * q (B, H, Tq, D), k (B, H, Tk, D), v (B, H, Tk, Dv), mask NULL or (Tq, Tk) additive
 * (−inf allowed; a fully masked row gives zeros) → (B, H, Tq, Dv).  Backward
 * recomputes the probabilities block by block instead of saving them; it agrees
 * with the composition matmul → scale → softmax → matmul to 1e-5. */
Tensor *ad_attention(Tape *t, Tensor *q, Tensor *k, Tensor *v, const Tensor *mask, float scale);
/* The same kernel on the projections' layout, heads read in place (no split or
 * merge copies): q (B, Tq, H·D), k (B, Tk, H·D), v (B, Tk, H·Dv) → (B, Tq, H·Dv),
 * head h being columns h·D … (h+1)·D − 1 of every row.  causal: query i sees keys
 * j ≤ i (top-left aligned when Tq ≠ Tk); keys no row of a 32-row block sees are
 * not scored.
 * For unit-norm scores pass ad_l2norm'ed q, k (rows of D: reshape to (…, D)) and
 * scale = β.  Equals split_heads → ad_attention → merge_heads to 1e-5. */
Tensor *ad_attention_heads(Tape *t, Tensor *q, Tensor *k, Tensor *v, int n_heads, int causal, float scale);
/* Arena bytes either op takes with grad besides its output and the output's grad
 * (alignment aside): two blocks of min(Tq, 32) × Tk floats, plus a copy of the mask
 * (Tq·Tk floats) when there is one.  Without grad, one block. */
size_t ad_attention_saved_bytes(int Tq, int Tk, int with_mask);

/* Linear attention (Katharopoulos et al.; paper 004 eq. 8):
 *   out_i = φ(q_i)ᵀ S_i / (φ(q_i)ᵀ z_i + eps),  S_i = Σ_j φ(k_j) v_jᵀ,  z_i = Σ_j φ(k_j)
 * over j ≤ i (causal: prefix sums, O(T·D·Dv) forward AND backward) or all j.
 * q, k (B, H, T, D), v (B, H, T, Dv) → (B, H, T, Dv). */
/* φ: elu(x) + 1, x, or max(x, 0).  The one definition of these values: the run
 * config's model.attention.feature (CfgFeature) is this type. */
typedef enum AdFeature { FEATURE_ELU1, FEATURE_IDENTITY, FEATURE_RELU } AdFeature;
Tensor *ad_linear_attention(Tape *t, Tensor *q, Tensor *k, Tensor *v, AdFeature phi, int causal, float eps);

/* Sparse attention (paper 004 eq. 6), always causal: query i sees key j iff j ≤ i and
 * (i − j < k_local·block or j mod block ≥ block − c), positions 0-based.  Softmax of
 * scale·q·k over the visible keys only, computed over gathered key lists in
 * O(T·(k_local·block + c·T/block)·D), never a T×T matrix.  q, k, v (B, H, T, D). */
Tensor *ad_sparse_attention(Tape *t, Tensor *q, Tensor *k, Tensor *v, int block, int k_local, int c,
                            float scale);
/* The number of (query, key) pairs it scores over T positions: Σ_i |visible keys of i|
 * (for FLOP counts). */
long ad_sparse_attention_pairs(int T, int block, int k_local, int c);

/* One LSTM layer over a whole sequence, PyTorch gate order (i, f, g, o), h0 = c0 = 0:
 * x (B, T, In), w_ih (4H, In), w_hh (4H, H), b (4H) (PyTorch's b_ih + b_hh folded into
 * one) → h (B, T, H).  Input projections of all steps in one GEMM; backward through
 * time with GEMMs per step. */
Tensor *ad_lstm(Tape *t, Tensor *x, Tensor *w_ih, Tensor *w_hh, Tensor *b);

/* Retention (Sun et al. 2023, "Retentive Network", eq. 5 with §2.2's three
 * normalisations; the full definition in ops_retnet.c): every head of a layer,
 * heads read in place.  q, k (B, T, H·Dk), v (B, T, H·Dv) → (B, T, H·Dv), Dk
 * even; head h decays by γ_h = ad_retention_decay(h); q and k are rotated by
 * position (pairs turned by n·θ_i), k scaled by 1/√Dk;
 *   o_n = Σ_{m≤n} R_nm v_m / max(|Σ_{m≤n} R_nm|, 1),  R_nm = q̃_n·k̃_m γ^(n−m) c_n,
 *   c_n = ad_retention_row_scale(γ, n).  Recorded as OP_RETENTION. */
Tensor *ad_retention(Tape *t, Tensor *q, Tensor *k, Tensor *v, int n_heads);
/* γ_h = 1 − 2^(−5−h) (eq. 8). */
double  ad_retention_decay(int head);
/* c_n = 1/√(Σ_{i=0}^{n} γ^i), D's row normalisation (§2.2). */
double  ad_retention_row_scale(double gamma, int n);
/* y = scale·Θ_pos x for one Dk-wide row (Dk even): what ad_retention does to q
 * (scale 1) and k (scale 1/√Dk) at position pos, for a recurrent decoder. */
void    ad_retention_rotate(const float *x, float *y, int Dk, int pos, float scale);

/* Fills a (T, T) mask: 0 where j ≤ i, −inf above the diagonal. */
void ad_causal_mask(Tensor *mask);

/* DSS (Gupta, Gu & Berant 2022, "Diagonal State Spaces are as Effective as
 * Structured State Spaces", §3.3 DSS-softmax; the formulas in ops_dss.c).
 * lambda (N, 2): Λ's real and imaginary parts, shared by the channels; log_dt (d, 2):
 * per feature log Δ of Re Λ and of Im Λ; w (C, d, N, 2): C kernels per feature → the
 * kernel K (T, C·d), K[l, c] = Re Σ_n W[c,n]·Λ_n⁻¹·softmax_{k<L}(ΔΛ_n·k)[l] with Δ of
 * feature c % d, normalised over L ≥ T positions (computed in double).  Recorded as
 * OP_DSS_KERNEL. */
Tensor *ad_dss_kernel(Tape *t, Tensor *lambda, Tensor *log_dt, Tensor *w, int T, int L);
/* The same kernel as a recurrence, for decoding and tests: per kernel column c < C·d
 * and mode n (index c·N + n, complex as (re, im) pairs) z = e^{ΔΛ} and C with
 * K[l, c] = Re Σ_n C·z^l, i.e. x_l = z·x_{l−1} + u_l, y_l = Re Σ_n C·x_l; z depends
 * on the feature c % d only, so a feature's C columns can share one state x. */
void    ad_dss_modes(const Tensor *lambda, const Tensor *log_dt, const Tensor *w, int L, double *z, double *C);
/* Causal depthwise convolution: u (B, T, d), k (T', C·d) with T' ≥ T (rows from T
 * on unread, their gradient 0), D (C·d) or NULL → y (B, T, C·d),
 * y[b,t,c] = D[c]·u[b,t,h] + Σ_{s≤t} k[s,c]·u[b,t−s,h], h = c % d: C kernels per
 * feature (direct, O(T²·C·d) per row).  Recorded as OP_CAUSAL_CONV. */
Tensor *ad_causal_conv(Tape *t, Tensor *u, Tensor *k, Tensor *D);
/* ---- Mamba (Gu & Dao 2023, "Mamba: Linear-Time Sequence Modeling with Selective
 * State Spaces"; ops_norm.c, ops_gather.c, ops_mamba.c) ---------------------------- */

/* RMSNorm per row of the last dim: y = x·g/√(mean(x²) + eps).  x (…, C), gain (C). */
Tensor *ad_rmsnorm(Tape *t, Tensor *x, Tensor *gain, float eps);
/* x (…, K) → x[…, c0 : c0 + w] (…, w), a copy; backward adds into those columns. */
Tensor *ad_columns(Tape *t, Tensor *x, int c0, int w);
/* Causal depthwise conv over time: x (B, T, E), w (E, 1, K) (nn.Conv1d groups=E
 * layout), b (E) → (B, T, E), y_t = b + Σ_k w[·,k]∘x_{t−K+1+k}, zeros before t = 0. */
Tensor *ad_causal_conv1d(Tape *t, Tensor *x, Tensor *w, Tensor *b);
/* The same for one new position x (E) of one sequence: window (K−1, E) holds the
 * K−1 previous inputs, oldest first (zeros at the start), and slides by x.  work:
 * K·E floats. */
void    ad_causal_conv1d_step(float *window, const float *x, const float *w, const float *b, float *y, int E,
                              int K, float *work);
/* Mamba's selective scan (S6, Algorithm 2), one op with a hand-written reverse scan:
 *   Δ = softplus(delta),  h_t = exp(Δ_t·A)∘h_{t−1} + (Δ_t∘u_t)⊗B_t,  h_{−1} = 0,
 *   y_t = C_t·h_t + D∘u_t,  out = y∘SiLU(z)  (z NULL: out = y),  A = −exp(A_log).
 * u, delta, z (B, T, E); A_log (E, N); Bm, Cm (B, T, N); D (E) → (B, T, E).
 * O(B·T·E·N) forward and backward; keeps the state of every AD_SCAN_CHUNK-th step
 * (B·T·N·E / AD_SCAN_CHUNK floats) and recomputes the others in backward. */
enum { AD_SCAN_CHUNK = 16 };
Tensor *ad_selective_scan(Tape *t, Tensor *u, Tensor *delta, Tensor *A_log, Tensor *Bm, Tensor *Cm, Tensor *D,
                          Tensor *z);
/* One step of it for one sequence (decoding): h (N, E) state in place; u, delta, z
 * (E) (z may be NULL), Bv, Cv (N) → out (E).  work: N·E + 2·E floats.  Same
 * arithmetic as the op's forward, so decoding reproduces training's outputs. */
void    ad_selective_scan_step(float *h, const float *u, const float *delta, const float *A_log, const float *Bv,
                               const float *Cv, const float *D, const float *z, float *out, int E, int N,
                               float *work);

#endif
