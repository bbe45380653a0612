/* Adam, clipping and schedules (see optim.h). */
#include "optim.h"

#include <math.h>

double tt_lr_at(const tt_train_spec *t, long s)
{
    if (t->schedule == TT_SCHED_INVSQRT) {
        const double a = (double)s / t->warmup, b = sqrt((double)t->warmup / s);
        return t->lr * (a < b ? a : b);
    }
    if (s <= t->warmup) return t->lr * s / t->warmup;
    const double span = (double)(t->steps - t->warmup);
    double p = span > 0 ? (s - t->warmup) / span : 1.0;
    if (p > 1) p = 1;
    return t->min_lr + (t->lr - t->min_lr) * 0.5 * (1.0 + cos(M_PI * p));
}

double tt_clip_grad_norm(float *g, size_t n, double clip)
{
    double ss = 0;
    for (size_t i = 0; i < n; i++) ss += (double)g[i] * g[i];
    const double norm = sqrt(ss);
    if (clip > 0 && norm > clip) {
        const float f = (float)(clip / (norm + 1e-6));
        for (size_t i = 0; i < n; i++) g[i] *= f;
    }
    return norm;
}

void tt_adam_bias_corrections(const tt_train_spec *t, long s, double *bc1, double *bc2)
{
    *bc1 = 1.0 - pow(t->beta1, (double)s);
    *bc2 = 1.0 - pow(t->beta2, (double)s);
}

void tt_adam_step(float *w, const float *g, float *m, float *v, size_t n, const tt_train_spec *t,
                  double lr, long s)
{
    double bc1, bc2;
    tt_adam_bias_corrections(t, s, &bc1, &bc2);
    /* templates/adam.cu does each of these operations in this order (its twin: keep them so) */
    const float step = (float)(lr / bc1), sbc2 = (float)sqrt(bc2);
    const float fb1 = (float)t->beta1, fb2 = (float)t->beta2, eps = (float)t->eps;
    const float wd = (float)t->weight_decay;
    for (size_t i = 0; i < n; i++) {
        const float gi = wd > 0 ? g[i] + wd * w[i] : g[i];
        m[i] = fb1 * m[i] + (1.f - fb1) * gi;
        v[i] = fb2 * v[i] + (1.f - fb2) * gi * gi;
        w[i] -= step * m[i] / (sqrtf(v[i]) / sbc2 + eps);
    }
}
