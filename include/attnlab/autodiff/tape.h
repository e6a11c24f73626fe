/* tape.h — the reverse-mode autodiff tape (one per model context, ggml-style).
 *
 * Forward: every op computes its output at once and, when any input carries a
 * gradient, appends one TapeEntry (op kind, inputs, output, saved data) in
 * forward order.  Backward: tape_backward() seeds d(loss) = 1 and walks the
 * entries in reverse, each entry's backward *adding* into its inputs' grads.
 *
 * Memory: outputs, their grads (zeroed when created) and saved buffers come from
 * the tape's arena; tape_reset() frees them all at once.  The entry array keeps
 * its capacity across resets, so a steady-state step does no malloc. */
#ifndef ATTNLAB_AUTODIFF_TAPE_H
#define ATTNLAB_AUTODIFF_TAPE_H

#include "attnlab/autodiff/arena.h"
#include "attnlab/autodiff/tensor.h"
#include "attnlab/util/rng.h"

typedef enum OpKind {
    OP_MATMUL,        /* (batched) A·B, A·Bᵀ, Aᵀ·B through cblas_sgemm */
    OP_LINEAR,        /* x·Wᵀ + b (fused matmul + bias) */
    OP_ADD,           /* a + b, b same shape or one row broadcast over a's rows */
    OP_SUB,           /* a − b, same broadcast rule */
    OP_MUL,           /* a ∘ b, same broadcast rule */
    OP_SCALE,         /* s·a */
    OP_SUM,           /* Σ a → scalar */
    OP_MEAN,          /* mean a → scalar */
    OP_EMBEDDING,     /* rows of a table gathered by integer ids */
    OP_LAYERNORM,     /* per-row normalisation with gain and bias */
    OP_GELU,          /* tanh approximation or exact erf (AdGelu) */
    OP_ELU,           /* elu, alpha = 1 */
    OP_RELU,
    OP_SOFTMAX,       /* row softmax with optional additive mask (−inf allowed) */
    OP_L2NORM,        /* rows scaled to unit L2 norm */
    OP_RESHAPE,       /* a view: shares data and grad, records nothing */
    OP_SPLIT_HEADS,   /* (B,T,H·D) → (B,H,T,D) */
    OP_MERGE_HEADS,   /* (B,H,T,D) → (B,T,H·D) */
    OP_CROSS_ENTROPY, /* mean over counted positions of −log softmax(logits)[target] */
    OP_DROPOUT,       /* inverted dropout, seeded by the tape's rng */
    OP_ATTENTION,     /* fused softmax(scale·Q·Kᵀ + mask)·V */
    OP_ATTENTION_HEADS, /* the same on (B,T,H·D) heads read in place, causal or not */
    OP_LINEAR_ATTENTION, /* φ(q)ᵀΣφ(k)vᵀ / (φ(q)ᵀΣφ(k) + ε), causal by prefix sums */
    OP_SPARSE_ATTENTION, /* causal softmax over a local window + block summaries */
    OP_LSTM,          /* a whole LSTM layer over a sequence */
    OP_ANNA_ATTENTION, /* LSH attention with fixed hashes; gradient w.r.t. v only */
    OP_COUNT
} OpKind;

const char *op_name(OpKind op);

typedef struct TapeEntry TapeEntry;
typedef void (*AdBackwardFn)(TapeEntry *e);

struct TapeEntry {
    OpKind       op;
    AdBackwardFn backward;
    Tensor      *out;
    Tensor      *in[3];      /* unused slots NULL */
    void        *saved[3];   /* op-specific arena buffers (probabilities, mean/rstd, ids, mask) */
    float        f[4];       /* op-specific scalars */
    int          i[4];       /* op-specific integers */
};

typedef struct Tape {
    Arena     *arena;
    TapeEntry *entries;
    int        n, cap;
    int        grad_enabled;  /* 0: ops record nothing and give outputs no grad (evaluation) */
    int        training;      /* 1: dropout active */
    Rng        rng;           /* dropout masks; part of the training state a checkpoint saves */
    /* Test-only fault injection: when fault_op >= 0, the backward of entries of that
     * kind sees its output gradient scaled by fault_scale, so a gradient check can
     * prove it catches a wrong backward.  Never set outside tests. */
    int        fault_op;
    float      fault_scale;
} Tape;

void tape_init(Tape *t, Arena *arena);
void tape_reset(Tape *t);        /* drops entries and resets the arena */
void tape_free(Tape *t);         /* frees the entry array (not the arena) */

/* A new arena tensor (data uninitialised).  with_grad: allocate a zeroed grad
 * (ignored — no grad — when t->grad_enabled is 0). */
Tensor *tape_tensor(Tape *t, int with_grad, int ndim, const int *shape);
/* A zero-filled arena tensor. */
Tensor *tape_zeros(Tape *t, int with_grad, int ndim, const int *shape);
/* Arena scratch memory for ops (saved data), uninitialised. */
void   *tape_scratch(Tape *t, size_t bytes);

/* 1 if any of the (non-NULL) inputs has a gradient and grad mode is on. */
int tape_needs_grad(const Tape *t, const Tensor *a, const Tensor *b, const Tensor *c);
/* Appends an entry for `out` (inputs/saved filled in by the caller). */
TapeEntry *tape_record(Tape *t, OpKind op, AdBackwardFn fn, Tensor *out,
                       Tensor *a, Tensor *b, Tensor *c);

/* loss must be a scalar with a grad: seeds it with 1 and runs every entry's backward
 * in reverse order.  Parameter grads accumulate (zero them before the step). */
void tape_backward(Tape *t, Tensor *loss);
/* The same from any output: out->grad is set to dout (out->n values) first. */
void tape_backward_from(Tape *t, Tensor *out, const float *dout);

#endif
