/* tensor.h — a float tensor: shape (up to 4 dims) over contiguous row-major data.
 *
 * A Tensor does not own memory.  Activations point into the step arena, parameters
 * into the model's flat parameter block.  `grad` is NULL when no gradient flows into
 * the tensor (data, masks, anything computed only from those): ops skip such
 * tensors in backward, so they cost nothing there.
 *
 * grad_fresh and grad_base belong to the tape's "first writer assigns" rule
 * (tape.h): tensor_init leaves a grad that is not fresh, i.e. the caller's buffer
 * holds a value that backward adds to, as always. */
#ifndef ATTNLAB_AUTODIFF_TENSOR_H
#define ATTNLAB_AUTODIFF_TENSOR_H

#define AD_MAX_DIMS 4

typedef struct Tensor {
    float *data;
    float *grad;                 /* same size as data, or NULL */
    int    ndim;
    int    shape[AD_MAX_DIMS];
    long   n;                    /* number of elements */
    int    grad_fresh;           /* 1: grad holds no value yet (uninitialised memory) */
    struct Tensor *grad_base;    /* a view: the tensor whose grad (and state) it shares */
} Tensor;

/* Fills in a header over existing storage (grad may be NULL). */
void tensor_init(Tensor *t, float *data, float *grad, int ndim, const int *shape);
/* v = a view of x with a new shape (same element count): x's data, and x's grad
 * when with_grad (else none), sharing x's gradient state. */
void tensor_view(Tensor *v, Tensor *x, int with_grad, int ndim, const int *shape);
/* Product of all but the last dim ("rows"), and the last dim ("cols"). */
long tensor_rows(const Tensor *t);
int  tensor_cols(const Tensor *t);
int  tensor_same_shape(const Tensor *a, const Tensor *b);
/* "(2,3,4)" into buf, for error messages; returns buf. */
const char *tensor_shape_str(const Tensor *t, char *buf, int bufsz);

#endif
