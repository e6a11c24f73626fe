/* ops_gather.c — ops that only move data: embedding lookup, reshape, and the
 * head split/merge permutations around attention. */
#include "attnlab/autodiff/ops.h"
#include "attnlab/util/error.h"

#include "record.h"

#include <string.h>

/* ------------------------------------------------------------------------------ */
/* embedding: table is (V, D), ids has shape ids_shape (n ids); out is (ids_shape…, D). */

static void embedding_backward(TapeEntry *e) {
    Tensor *table = e->in[0], *out = e->out;
    const int *ids = e->saved[0];
    int D = tensor_cols(table);
    long n = tensor_rows(out);
    /* Scatter-add: a token that occurs several times gets the sum of its rows. */
    for (long r = 0; r < n; r++) {
        float *dst = table->grad + (long)ids[r] * D;
        const float *src = out->grad + r * D;
        for (int j = 0; j < D; j++) dst[j] += src[j];
    }
}

Tensor *ad_embedding(Tape *t, Tensor *table, const int *ids, int ids_ndim, const int *ids_shape) {
    AL_ASSERT(table->ndim == 2 && ids_ndim >= 1 && ids_ndim <= AD_MAX_DIMS - 1);
    int V = table->shape[0], D = table->shape[1];
    int shape[AD_MAX_DIMS];
    memcpy(shape, ids_shape, (size_t)ids_ndim * sizeof(int));
    shape[ids_ndim] = D;
    int needs_grad = tape_needs_grad(t, table, NULL, NULL);
    Tensor *out = tape_tensor(t, needs_grad, ids_ndim + 1, shape);
    long n = tensor_rows(out);
    for (long r = 0; r < n; r++) {
        AL_ASSERT(ids[r] >= 0 && ids[r] < V);
        memcpy(out->data + r * D, table->data + (long)ids[r] * D, (size_t)D * sizeof(float));
    }
    if (needs_grad)
        ad_record(t, (TapeEntry){ .op = OP_EMBEDDING, .backward = embedding_backward, .out = out, .in = { table },
                                  .saved = { ad_saved_copy(t, ids, (size_t)n * sizeof(int)) } });
    return out;
}

/* ------------------------------------------------------------------------------ */
/* reshape: x is any shape; the view has `shape` with the same element count. */

Tensor *ad_reshape(Tape *t, Tensor *x, int ndim, const int *shape) {
    Tensor *v = tape_scratch(t, sizeof *v);
    /* Sharing x's grad makes the view's backward a no-op: whatever flows into the
     * view's grad already is x's grad, so there is nothing to record. */
    tensor_view(v, x, t->grad_enabled, ndim, shape);
    return v;
}

/* ------------------------------------------------------------------------------ */
/* split_heads: x (B, T, H·D) → (B, H, T, D);  merge_heads: x (B, H, T, D) → (B, T, H·D).
 * Both are the swap of dims 1 and 2 of a (B, X, Y, D) array, so they share one
 * permutation, and each one's backward is the opposite swap. */

/* dst[b][y][x][:] = (or +=) src[b][x][y][:], src viewed as (B, X, Y, D). */
static void swap12(const float *src, float *dst, int B, int X, int Y, int D, int accumulate) {
    for (int b = 0; b < B; b++)
        for (int x = 0; x < X; x++)
            for (int y = 0; y < Y; y++) {
                const float *s = src + (((long)b * X + x) * Y + y) * D;
                float *d = dst + (((long)b * Y + y) * X + x) * D;
                if (accumulate)
                    for (int j = 0; j < D; j++) d[j] += s[j];
                else
                    for (int j = 0; j < D; j++) d[j] = s[j];
            }
}

static void heads_backward(TapeEntry *e) {
    /* Forward swapped (B, X, Y, D) → (B, Y, X, D); the gradient goes back the other
     * way, stored when this is the grad's first writer (tape.h). */
    swap12(e->out->grad, e->in[0]->grad, e->i[0], e->i[2], e->i[1], e->i[3], tape_grad_acc(e->in[0]));
}

static Tensor *heads_swap(Tape *t, OpKind op, Tensor *x, int B, int X, int Y, int D,
                          int ndim, const int *shape) {
    int needs_grad = tape_needs_grad(t, x, NULL, NULL);
    Tensor *out = tape_tensor(t, needs_grad, ndim, shape);
    swap12(x->data, out->data, B, X, Y, D, 0);
    if (needs_grad)
        ad_record(t, (TapeEntry){ .op = op, .backward = heads_backward, .out = out, .in = { x },
                                  .i = { B, X, Y, D }, .first_write = 1 });
    return out;
}

Tensor *ad_split_heads(Tape *t, Tensor *x, int n_heads) {
    AL_ASSERT(x->ndim == 3 && n_heads >= 1 && x->shape[2] % n_heads == 0);
    int B = x->shape[0], T = x->shape[1], H = n_heads, D = x->shape[2] / n_heads;
    return heads_swap(t, OP_SPLIT_HEADS, x, B, T, H, D, 4, (const int[]){ B, H, T, D });
}

Tensor *ad_merge_heads(Tape *t, Tensor *x) {
    AL_ASSERT(x->ndim == 4);
    int B = x->shape[0], H = x->shape[1], T = x->shape[2], D = x->shape[3];
    return heads_swap(t, OP_MERGE_HEADS, x, B, H, T, D, 3, (const int[]){ B, T, H * D });
}

/* ------------------------------------------------------------------------------ */
/* columns: x (…, K) → out (…, w) = x[…, c0 : c0 + w], a copy (Mamba's split of one
 * projection into its parts).  Backward adds dout into those columns of dx, so it is
 * not a first writer: the tape zeroes a fresh dx first, and the slices of one x
 * each add their part. */

static void columns_backward(TapeEntry *e) {
    Tensor *x = e->in[0], *out = e->out;
    int K = tensor_cols(x), w = tensor_cols(out), c0 = e->i[0];
    long R = tensor_rows(x);
    for (long r = 0; r < R; r++) {
        float *dst = x->grad + r * K + c0;
        const float *src = out->grad + r * w;
        for (int j = 0; j < w; j++) dst[j] += src[j];
    }
}

Tensor *ad_columns(Tape *t, Tensor *x, int c0, int w) {
    int K = tensor_cols(x);
    AL_ASSERT(c0 >= 0 && w >= 1 && c0 + w <= K);
    int shape[AD_MAX_DIMS];
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof(int));
    shape[x->ndim - 1] = w;
    int needs_grad = tape_needs_grad(t, x, NULL, NULL);
    Tensor *out = tape_tensor(t, needs_grad, x->ndim, shape);
    long R = tensor_rows(x);
    for (long r = 0; r < R; r++) memcpy(out->data + r * w, x->data + r * K + c0, (size_t)w * sizeof(float));
    if (needs_grad)
        ad_record(t, (TapeEntry){ .op = OP_COLUMNS, .backward = columns_backward, .out = out, .in = { x },
                                  .i = { c0 } });
    return out;
}
