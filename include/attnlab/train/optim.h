/* optim.h — Adam / AdamW over a flat ParamStore, the learning-rate schedule and
 * gradient clipping by global norm. */
#ifndef ATTNLAB_TRAIN_OPTIM_H
#define ATTNLAB_TRAIN_OPTIM_H

#include "attnlab/nn/params.h"
#include "attnlab/config/config.h"

/* Learning rate for 0-based `step` of `cfg->steps`:
 *   constant        lr
 *   warmup_linear   lr·(step+1)/warmup, then linear from lr down to min_lr at the last step
 *   warmup_cosine   lr·(step+1)/warmup, then cosine from lr down to min_lr
 * The decay's last step is decay_steps − 1 (train.steps − 1 when decay_steps is 0);
 * min_lr holds from there on. */
float optim_lr(const CfgTrain *cfg, int step);

/* Global L2 norm of all gradients (accumulated in double). */
double optim_grad_norm(const ParamStore *ps);
/* Scales all gradients by max_norm/norm when norm > max_norm > 0. */
void optim_clip(ParamStore *ps, double norm, double max_norm);

/* One Adam step (1-based t for the bias correction).  "adam": weight decay, if any,
 * is added to the gradient (L2, as torch.optim.Adam); "adamw": decoupled
 * (p −= lr·wd·p, as torch.optim.AdamW).  Decay applies only to params with decay=1
 * (weight matrices), never to biases, LayerNorm or embeddings.  lr is the schedule's
 * rate for cfg->lr; a parameter with its own base rate (Param.lr > 0) steps with
 * lr·Param.lr/cfg->lr, as torch's schedulers scale every parameter group alike. */
void optim_adam_step(ParamStore *ps, const CfgTrain *cfg, float lr, long t);
/* The same, leaving the parameters k with frozen[k] set (values and moments)
 * untouched — even by weight decay, which would move them without a gradient.
 * frozen NULL: none. */
void optim_adam_step_except(ParamStore *ps, const CfgTrain *cfg, float lr, long t, const unsigned char *frozen);

#endif
