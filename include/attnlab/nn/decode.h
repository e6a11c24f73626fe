/* decode.h — incremental inference: one position at a time, with state.
 *
 * For greedy generation (chain-of-thought evaluation) the model runs position by
 * position on a batch of B sequences in lockstep, keeping per layer
 *   softmax / sparse attention: a KV cache of every earlier position;
 *   linear attention: the recurrent state S = Σ φ(k)vᵀ and z = Σ φ(k);
 *   LSTM: (h, c).
 * The logits at position s equal model_forward's at s (a test checks it), at
 * O(s) cost per step instead of O(s²) — O(1) for linear attention and the LSTM.
 * Causal models only: a bidirectional model's earlier outputs depend on later tokens. */
#ifndef ATTNLAB_NN_DECODE_H
#define ATTNLAB_NN_DECODE_H

#include "attnlab/nn/model.h"

typedef struct Decoder Decoder;

/* A decoder for up to `batch` sequences of up to m->max_len positions. */
Decoder *decoder_create(Model *m, int batch);
void     decoder_free(Decoder *d);
/* Starts B ≤ batch new sequences at position 0. */
void     decoder_reset(Decoder *d, int B);
/* Feeds tokens[b] at the next position of each sequence; returns the logits
 * (B, n_classes) for the position after it (valid until the next call). */
const float *decoder_step(Decoder *d, const int *tokens);
int      decoder_position(const Decoder *d);   /* positions fed so far */

/* Greedy completion of B prompts in lockstep: row b of `tokens` (stride max_len)
 * holds prompt_len[b] tokens; generation appends argmax tokens until eos_id or
 * max_len.  Writes the completed rows into `tokens` and their lengths into len[b]. */
void decoder_greedy(Decoder *d, int B, int *tokens, const int *prompt_len, int eos_id, int *len);

#endif
