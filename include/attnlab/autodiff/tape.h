/* tape.h — the reverse-mode autodiff tape (one per model context, ggml-style).
 *
 * Forward: every op computes its output at once and, when any input carries a
 * gradient, appends one TapeEntry (op kind, inputs, output, saved data) in
 * forward order.  Backward: tape_backward() seeds d(loss) = 1 and walks the
 * entries in reverse, each entry's backward adding into its inputs' grads —
 * or storing, when it is a grad's first writer (below).
 *
 * Memory: outputs, their grads and saved buffers come from the tape's arena;
 * tape_reset() frees them all at once.  The entry array keeps its capacity across
 * resets, so a steady-state step does no malloc.
 *
 * First writer assigns.  A grad the tape allocates is not zeroed: it starts
 * *fresh* (Tensor.grad_fresh; its memory holds garbage) and the first backward
 * that writes it stores its contribution, later ones add.  Most activation grads
 * have one consumer, so no step zeroes them in forward only to read the zeros back
 * in backward.  The rules:
 *  - An entry with first_write set has a backward that asks tape_grad_acc(x) just
 *    before it writes ALL of input x's grad (a store includes the zeros where it
 *    has nothing to give), and stores when the answer is 0, adds when 1.  Asking
 *    again for the same tensor (a·a, or a view of it) answers 1.
 *  - Before an entry without first_write runs, tape_backward zeroes its inputs'
 *    fresh grads: an op whose backward only adds needs no change.
 *  - An entry whose output grad is still fresh when its turn comes received
 *    nothing (no consumer had a grad to give): it would add zeros, so it is skipped.
 *  - When tape_backward returns, every grad of an entry's input or output holds a
 *    value (those still fresh are zeroed), as if all had started at zero.
 *  - A view (tensor_view, ad_reshape) keeps its state in the tensor it views.
 *  - tensor_init makes a grad that is not fresh: parameters and other caller-owned
 *    grads accumulate as always (zero them before the step), unless the caller
 *    declares them fresh with tape_grad_fresh() — then their first writer stores,
 *    and tape_grad_settle() zeroes any that no entry wrote.
 *
 * One backward per forward.  A backward may consume its entry's saved data (the
 * fused MLP's backward writes its hidden gradients over the saved activations),
 * so a tape is walked backward at most once between tape_reset()s: a second
 * tape_backward on the same entries is an AL_ASSERT failure.  Record again (reset,
 * forward) for another backward. */
#ifndef ATTNLAB_AUTODIFF_TAPE_H
#define ATTNLAB_AUTODIFF_TAPE_H

#include "attnlab/autodiff/arena.h"
#include "attnlab/autodiff/tensor.h"
#include "attnlab/util/rng.h"

/* The ops, generated from ops.def (one line per op: its kind, name and meaning). */
typedef enum OpKind {
#define AD_OP(kind, name, what) kind,
#include "attnlab/autodiff/ops.def"
#undef AD_OP
    OP_COUNT
} OpKind;

const char *op_name(OpKind op);

#define TAPE_MAX_IN 6   /* inputs of one entry: the fused MLP's x, w1, b1, w2, b2, res */

typedef struct TapeEntry TapeEntry;
typedef void (*AdBackwardFn)(TapeEntry *e);

struct TapeEntry {
    OpKind       op;
    AdBackwardFn backward;
    Tensor      *out;
    Tensor      *in[TAPE_MAX_IN]; /* unused slots NULL; tape_record fills the first three */
    void        *saved[3];   /* op-specific arena buffers (probabilities, mean/rstd, ids, mask) */
    float        f[4];       /* op-specific scalars */
    int          i[4];       /* op-specific integers */
    int          first_write; /* 1: backward follows first writer assigns (tape_grad_acc) */
};

typedef struct Tape {
    Arena     *arena;
    TapeEntry *entries;
    int        n, cap;
    int        grad_enabled;  /* 0: ops record nothing and give outputs no grad (evaluation) */
    int        training;      /* 1: dropout active */
    Rng        rng;           /* dropout masks; part of the training state a checkpoint saves */
    /* Data-parallel shards (train/step.h): the index, in the whole batch, of this
     * tape's first row (0 otherwise).  Dropout draws the same key as the whole
     * batch's tape would and takes that batch's mask at this offset, so the masks
     * do not depend on how the batch is split. */
    long       batch_row0;
    /* Test-only fault injection: when fault_op >= 0, the backward of entries of that
     * kind sees its output gradient scaled by fault_scale, so a gradient check can
     * prove it catches a wrong backward.  Never set outside tests. */
    int        fault_op;
    float      fault_scale;
    int        walked;        /* 1 once tape_backward ran; tape_reset clears it (see the top) */
} Tape;

void tape_init(Tape *t, Arena *arena);
void tape_reset(Tape *t);        /* drops entries and resets the arena */
void tape_free(Tape *t);         /* frees the entry array (not the arena) */

/* A new arena tensor (data uninitialised).  with_grad: allocate a fresh grad
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

/* First writer assigns (see the top): for the backward about to write all of x's
 * grad, 0 when x's grad is fresh — store, and it is fresh no more — else 1: add. */
int  tape_grad_acc(Tensor *x);
/* Declares x's grad to hold no value: its first writer will store (x has a grad). */
void tape_grad_fresh(Tensor *x);
/* Zeroes x's grad if it is still fresh (nothing wrote it); NULL or no grad: nothing. */
void tape_grad_settle(Tensor *x);

/* loss must be a scalar with a grad: seeds it with 1 and runs every entry's backward
 * in reverse order, once per forward (see the top).  Parameter grads accumulate
 * (zero them before the step), or are stored by their first writer when declared
 * fresh. */
void tape_backward(Tape *t, Tensor *loss);
/* The same from any output: out->grad is set to dout (out->n values) first. */
void tape_backward_from(Tape *t, Tensor *out, const float *dout);

#endif
