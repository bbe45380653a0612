/* Adam as PyTorch's torch.optim.Adam (L2 weight decay added to the gradient, bias-corrected
 * moments, eps outside the square root), gradient-norm clipping as clip_grad_norm_, and the
 * learning-rate schedules of the spec. Over flat fp32 arrays: the CPU trainer's and the GPU
 * trainer's master weights alike. */
#ifndef TT_OPTIM_H
#define TT_OPTIM_H

#include <stddef.h>

#include "spec.h"

/* The learning rate of step s (1-based: the first update is step 1).
 *   cosine:       warmup: lr * s / warmup; then min_lr + (lr - min_lr) (1 + cos(pi t)) / 2 with
 *                 t = (s - warmup) / (steps - warmup)
 *   inverse-sqrt: lr * min(s / warmup, sqrt(warmup / s))   (the paper's schedule, peak lr) */
double tt_lr_at(const tt_train_spec *t, long s);

/* The L2 norm of g (accumulated in double); scales g so its norm is at most clip when clip > 0
 * (factor clip / (norm + 1e-6), as PyTorch). Returns the norm before clipping. */
double tt_clip_grad_norm(float *g, size_t n, double clip);

/* Adam's bias corrections of step s (1-based): 1 - beta1^s and 1 - beta2^s. */
void tt_adam_bias_corrections(const tt_train_spec *t, long s, double *bc1, double *bc2);

/* One Adam update of step s (1-based) on w with gradient g and moments m, v. */
void tt_adam_step(float *w, const float *g, float *m, float *v, size_t n, const tt_train_spec *t,
                  double lr, long s);

#endif
