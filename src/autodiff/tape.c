/* tape.c — entry recording and the reverse walk. */
#include "attnlab/autodiff/tape.h"
#include "attnlab/util/error.h"

#include <stdlib.h>
#include <string.h>

static const char *const OP_NAMES[] = {
#define AD_OP(kind, name, what) [kind] = #name,
#include "attnlab/autodiff/ops.def"
#undef AD_OP
};
_Static_assert(sizeof OP_NAMES / sizeof OP_NAMES[0] == OP_COUNT, "ops.def: every OpKind has one name");

const char *op_name(OpKind op) {
    return (op >= 0 && op < OP_COUNT) ? OP_NAMES[op] : "?";
}

void tape_init(Tape *t, Arena *arena) {
    memset(t, 0, sizeof *t);
    t->arena = arena;
    t->grad_enabled = 1;
    t->fault_op = -1;
    t->fault_scale = 1.0f;
    rng_seed(&t->rng, 0);
}

void tape_reset(Tape *t) {
    t->n = 0;
    t->walked = 0;
    arena_reset(t->arena);
}

void tape_free(Tape *t) {
    free(t->entries);
    t->entries = NULL;
    t->n = t->cap = 0;
}

Tensor *tape_tensor(Tape *t, int with_grad, int ndim, const int *shape) {
    Tensor *x = arena_alloc(t->arena, sizeof *x);
    long n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    float *data = arena_alloc(t->arena, (size_t)n * sizeof(float));
    float *grad = (with_grad && t->grad_enabled) ? arena_alloc(t->arena, (size_t)n * sizeof(float)) : NULL;
    tensor_init(x, data, grad, ndim, shape);
    x->grad_fresh = grad != NULL;   /* its first writer stores: no zeroing here */
    return x;
}

Tensor *tape_zeros(Tape *t, int with_grad, int ndim, const int *shape) {
    Tensor *x = tape_tensor(t, with_grad, ndim, shape);
    memset(x->data, 0, (size_t)x->n * sizeof(float));
    return x;
}

void *tape_scratch(Tape *t, size_t bytes) { return arena_alloc(t->arena, bytes); }

int tape_needs_grad(const Tape *t, const Tensor *a, const Tensor *b, const Tensor *c) {
    if (!t->grad_enabled) return 0;
    return (a && a->grad) || (b && b->grad) || (c && c->grad);
}

TapeEntry *tape_record(Tape *t, OpKind op, AdBackwardFn fn, Tensor *out,
                       Tensor *a, Tensor *b, Tensor *c) {
    AL_ASSERT(t->grad_enabled && out->grad);
    if (t->n == t->cap) {
        /* Happens during the first step only: the capacity is kept across resets. */
        t->cap = t->cap ? 2 * t->cap : 256;
        t->entries = al_realloc(t->entries, (size_t)t->cap * sizeof *t->entries);
    }
    TapeEntry *e = &t->entries[t->n++];
    memset(e, 0, sizeof *e);
    e->op = op;
    e->backward = fn;
    e->out = out;
    e->in[0] = a;
    e->in[1] = b;
    e->in[2] = c;
    return e;
}

/* ------------------------------------------------------------------------------ */
/* First writer assigns: a view's state lives in the tensor it views. */

static Tensor *grad_base(Tensor *x) { return x->grad_base ? x->grad_base : x; }

int tape_grad_acc(Tensor *x) {
    Tensor *b = grad_base(x);
    if (!b->grad_fresh) return 1;
    /* Written only when fresh: tapes on several threads may share parameter
     * headers (grads not fresh), and then only read them. */
    b->grad_fresh = 0;
    return 0;
}

void tape_grad_fresh(Tensor *x) {
    AL_ASSERT(x->grad);
    grad_base(x)->grad_fresh = 1;
}

void tape_grad_settle(Tensor *x) {
    if (x && x->grad && !tape_grad_acc(x)) memset(x->grad, 0, (size_t)x->n * sizeof(float));
}

/* ------------------------------------------------------------------------------ */

static void scale_grad(Tensor *x, float s) {
    for (long i = 0; i < x->n; i++) x->grad[i] *= s;
}

void tape_backward(Tape *t, Tensor *loss) {
    AL_ASSERT(loss->n == 1);
    const float one = 1.0f;
    tape_backward_from(t, loss, &one);
}

void tape_backward_from(Tape *t, Tensor *out, const float *dout) {
    AL_ASSERT(out->grad);
    AL_ASSERT(!t->walked);   /* one backward per forward: a backward may consume saved data */
    t->walked = 1;
    memcpy(out->grad, dout, (size_t)out->n * sizeof(float));
    grad_base(out)->grad_fresh = 0;
    for (int k = t->n - 1; k >= 0; k--) {
        TapeEntry *e = &t->entries[k];
        if (grad_base(e->out)->grad_fresh) continue;   /* no gradient reached it */
        if (!e->first_write)
            for (int i = 0; i < TAPE_MAX_IN; i++) tape_grad_settle(e->in[i]);
        int fault = (int)e->op == t->fault_op;
        if (fault) scale_grad(e->out, t->fault_scale);
        e->backward(e);
        if (fault) scale_grad(e->out, 1.0f / t->fault_scale);
    }
    /* Grads no entry wrote (an output nothing consumed, an input of skipped entries) read as 0. */
    for (int k = 0; k < t->n; k++) {
        TapeEntry *e = &t->entries[k];
        tape_grad_settle(e->out);
        for (int i = 0; i < TAPE_MAX_IN; i++) tape_grad_settle(e->in[i]);
    }
}
