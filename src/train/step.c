/* step.c — see step.h. */
#include "attnlab/train/step.h"
#include "attnlab/train/optim.h"

#include <string.h>

void step_next_batch(const TaskData *td, Sampler *s, Rng *stream, Batch *b) {
    if (td->streaming) taskgen_batch(&td->gen, SPLIT_TRAIN, stream, b);
    else sampler_next_batch(s, &td->train, b);
}

double step_gradients(Model *m, Tape *t, const Batch *b, const unsigned char *frozen, double *grad_norm) {
    ParamStore *ps = &m->params;
    t->training = 1;   /* dropout on; evaluate() switches it off for its own passes */
    tape_reset(t);
    params_zero_grad(ps);
    Tensor *logits = model_forward(m, t, b->tokens, b->batch, b->seq_len);
    Tensor *loss = ad_cross_entropy(t, logits, b->targets);
    tape_backward(t, loss);
    for (int k = 0; frozen && k < ps->n; k++)
        if (frozen[k]) memset(ps->p[k].t.grad, 0, (size_t)ps->p[k].t.n * sizeof(float));
    *grad_norm = optim_grad_norm(ps);
    return loss->data[0];
}

void step_update(Model *m, const CfgTrain *cfg, float lr, long t, double grad_norm, const unsigned char *frozen) {
    optim_clip(&m->params, grad_norm, cfg->grad_clip);
    optim_adam_step_except(&m->params, cfg, lr, t, frozen);
}
