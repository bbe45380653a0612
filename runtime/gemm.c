/* nn.Linear's products in cuBLAS's column-major terms (see gemm.h): a row-major [r, c] matrix is
 * a column-major [c, r] one, so y = x w^T is y^T = w x^T, computed as C = op(A) op(B) with
 * A = w (in x out, transposed), B = x (in x rows). */
#include "gemm.h"

#include "util.h"

void tt_gemm_init(tt_gemm *g, const tt_gpu *gpu, tt_precision precision)
{
    g->h = gpu->blas;
    g->stream = gpu->stream;
    TT_CUBLAS(cublasLtCreate(&g->lt));
    g->ws = NULL;
    g->ws_bytes = 0;
    g->act = precision == TT_PREC_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    g->compute = precision == TT_PREC_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

void tt_gemm_free(tt_gemm *g)
{
    if (g->lt) cublasLtDestroy(g->lt);
    g->lt = NULL;
}

void tt_gemm_set_workspace(tt_gemm *g, void *ws, size_t bytes)
{
    g->ws = ws;
    g->ws_bytes = bytes;
}

/* D = op(A) op(B) + beta C (C = D) with an epilogue, in cuBLASLt's column-major terms: A is
 * [ar, ac] and B [br, bc] as stored, D [m, n] with n's leading dimension ldd; the bias (or
 * bias gradient) pointer of the epilogue. No algorithm for it: a broken invariant (cuBLASLt has
 * these epilogues for every type and shape the models use). */
static void lt_matmul(const tt_gemm *g, cublasOperation_t ta, cublasOperation_t tb, const void *a,
                      int ar, int ac, const void *b, int br, int bc, void *d, cudaDataType_t dt,
                      int m, int n, float beta, cublasLtEpilogue_t epi, void *bias)
{
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, ld;
    TT_CUBLAS(cublasLtMatmulDescCreate(&op, g->compute, CUDA_R_32F));
    TT_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    TT_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    TT_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    TT_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    TT_CUBLAS(cublasLtMatrixLayoutCreate(&la, g->act, (uint64_t)ar, (uint64_t)ac, ar));
    TT_CUBLAS(cublasLtMatrixLayoutCreate(&lb, g->act, (uint64_t)br, (uint64_t)bc, br));
    TT_CUBLAS(cublasLtMatrixLayoutCreate(&ld, dt, (uint64_t)m, (uint64_t)n, m));
    cublasLtMatmulPreference_t pref;
    TT_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    TT_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &g->ws_bytes, sizeof g->ws_bytes));
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    TT_CUBLAS(cublasLtMatmulAlgoGetHeuristic(g->lt, op, la, lb, ld, ld, pref, 1, &heur, &found));
    if (found < 1)
        tt_panic(__FILE__, __LINE__, "cuBLASLt has no algorithm for a %dx%dx%d product with epilogue %d",
                 m, n, ta == CUBLAS_OP_N ? ac : ar, (int)epi);
    const float one = 1.f;
    TT_CUBLAS(cublasLtMatmul(g->lt, op, &one, a, la, b, lb, &beta, d, ld, d, ld, &heur.algo, g->ws,
                             g->ws_bytes, g->stream));
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(op);
}

void tt_gemm_fwd_bias(const tt_gemm *g, void *y, const void *x, const void *w, const void *b,
                      int rows, int in, int out)
{
    /* y^T [out, rows] = w (stored [in, out], transposed) x^T [in, rows] + b broadcast */
    lt_matmul(g, CUBLAS_OP_T, CUBLAS_OP_N, w, in, out, x, in, rows, y, g->act, out, rows, 0.f,
              CUBLASLT_EPILOGUE_BIAS, (void *)b);
}

void tt_gemm_bwd_w_bias(const tt_gemm *g, float *dw, float *db, const void *dy, const void *x,
                        int rows, int in, int out)
{
    /* dw^T [in, out] += x^T [in, rows] dy [rows, out] (dy stored [out, rows], transposed); the
     * bias gradient of B: a sum over the product's k (rows) per column of D (out) */
    lt_matmul(g, CUBLAS_OP_N, CUBLAS_OP_T, x, in, rows, dy, out, rows, dw, CUDA_R_32F, in, out, 1.f,
              CUBLASLT_EPILOGUE_BGRADB, db);
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
