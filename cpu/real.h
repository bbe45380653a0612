/* The number type of the CPU reference: float in the runtime. The gradient tests compile the same
 * sources with -DTT_REAL=double, so that central differences check the backward passes to about
 * 1e-8 instead of the 1e-3 that float32 rounding would allow. */
#ifndef TT_REAL_H
#define TT_REAL_H

#ifndef TT_REAL
#define TT_REAL float
#endif
typedef TT_REAL tt_real;

#endif
