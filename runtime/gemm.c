/* nn.Linear's products in cuBLAS's column-major terms (see gemm.h): a row-major [r, c] matrix is
 * a column-major [c, r] one, so y = x w^T is y^T = w x^T, computed as C = op(A) op(B) with
 * A = w (in x out, transposed), B = x (in x rows). */
#include "gemm.h"

void tt_gemm_init(tt_gemm *g, const tt_gpu *gpu, tt_precision precision)
{
    g->h = gpu->blas;
    g->act = precision == TT_PREC_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    g->compute = precision == TT_PREC_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

void tt_gemm_fwd_ld(const tt_gemm *g, void *y, bool y_f32, int ld, const void *x, const void *w,
                    int rows, int in, int out, float beta)
{
    const float one = 1.f;
    TT_CUBLAS(cublasGemmEx(g->h, CUBLAS_OP_T, CUBLAS_OP_N, out, rows, in, &one, w, g->act, in, x,
                           g->act, in, &beta, y, y_f32 ? CUDA_R_32F : g->act, ld, g->compute,
                           CUBLAS_GEMM_DEFAULT));
}

void tt_gemm_bwd_x_ld(const tt_gemm *g, void *dx, const void *dy, int ld, const void *w, int rows,
                      int in, int out, float beta)
{
    const float one = 1.f;
    TT_CUBLAS(cublasGemmEx(g->h, CUBLAS_OP_N, CUBLAS_OP_N, in, rows, out, &one, w, g->act, in, dy,
                           g->act, ld, &beta, dx, g->act, in, g->compute, CUBLAS_GEMM_DEFAULT));
}

void tt_gemm_bwd_w_ld(const tt_gemm *g, float *dw, const void *dy, int ld, const void *x, int rows,
                      int in, int out)
{
    const float one = 1.f;
    TT_CUBLAS(cublasGemmEx(g->h, CUBLAS_OP_N, CUBLAS_OP_T, in, out, rows, &one, x, g->act, in, dy,
                           g->act, ld, &one, dw, CUDA_R_32F, in, g->compute, CUBLAS_GEMM_DEFAULT));
}

void tt_gemm_fwd(const tt_gemm *g, void *y, bool y_f32, const void *x, const void *w, int rows,
                 int in, int out, float beta)
{
    tt_gemm_fwd_ld(g, y, y_f32, out, x, w, rows, in, out, beta);
}

void tt_gemm_bwd_x(const tt_gemm *g, void *dx, const void *dy, const void *w, int rows, int in,
                   int out, float beta)
{
    tt_gemm_bwd_x_ld(g, dx, dy, out, w, rows, in, out, beta);
}

void tt_gemm_bwd_w(const tt_gemm *g, float *dw, const void *dy, const void *x, int rows, int in,
                   int out)
{
    tt_gemm_bwd_w_ld(g, dw, dy, out, x, rows, in, out);
}
