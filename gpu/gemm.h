/* The matrix products of the models, through cuBLAS, in PyTorch's nn.Linear layout (row-major,
 * weights [out, in]). Activations are of the storage type (fp32, or bf16 on the bf16 path);
 * weight gradients are always fp32 and accumulated (beta = 1), as the CPU reference adds them.
 * Compute is fp32 (tf32 tensor cores when the precision is tf32; bf16 tensor cores with fp32
 * accumulation on the bf16 path). */
#ifndef TT_GEMM_H
#define TT_GEMM_H

#include <stdbool.h>

#include "gpu.h"
#include "spec.h"

#include <cublasLt.h>

typedef struct tt_lt_cache tt_lt_cache;

typedef struct {
    cublasHandle_t h;
    cublasLtHandle_t lt;      /* the products with a fused epilogue */
    cudaStream_t stream;
    void *ws;                 /* cuBLASLt's workspace (may be cuBLAS's: one stream orders both) */
    size_t ws_bytes;
    cudaDataType_t act;       /* CUDA_R_32F or CUDA_R_16BF */
    cublasComputeType_t compute;
    tt_lt_cache *lt_cache;    /* cuBLASLt's descriptors and algorithm per distinct product */
} tt_gemm;

void tt_gemm_init(tt_gemm *g, const tt_gpu *gpu, tt_precision precision);
void tt_gemm_free(tt_gemm *g);
/* Device memory cuBLASLt may use: without it, it gets none (it allocates nothing itself, so that
 * a product can be captured in a CUDA graph). Its size is part of each product's key. */
void tt_gemm_set_workspace(tt_gemm *g, void *ws, size_t bytes);

/* side = g's products queued on another stream, with their own workspace (of g's size: the
 * algorithms are chosen for it) and cuBLAS handle h (for cublasGemmEx; its stream and workspace
 * set to the same): for products that run beside g's stream. It shares g's plans and chosen
 * algorithms (tt_gemm_settle on g chooses those it made too) and lives no longer than g; it
 * is not freed itself. */
void tt_gemm_beside(tt_gemm *side, const tt_gemm *g, cublasHandle_t h, cudaStream_t stream,
                    void *ws, size_t ws_bytes);

/* Where the products' algorithms are recorded: the tuning cache (gen/tune.h's tuning.tsv), a
 * line per product and card, under the same key rules as the kernels' (card, then a signature of
 * everything the choice depends on: shape, types, layouts, alignment, epilogue, workspace,
 * cuBLASLt's version, the card's SM count). A product's algorithm is, in this order:
 * - the one recorded for it on this card (every later run and every resume takes it: the same
 *   algorithm, the same bits);
 * - else the fastest of up to TT_GEMM_TUNE of cuBLASLt's heuristic candidates (default 8),
 *   timed once, before the product first runs, on operands of its shape in memory of its own
 *   (random, not zero), among those that give the same bits twice, and recorded; under the
 *   cache's lock, so that of two processes that meet a product at once the second takes the
 *   first's choice. A product first met while its stream is captured is timed by
 *   tt_gemm_settle after the capture, which the caller then discards and captures again;
 * - the heuristic's first, untimed and unrecorded, with TT_GEMM_TUNE=0 or without a tuning
 *   cache (tuning_path NULL). TT_GEMM_LOG=1 prints each timing on stderr. TT_GEMM_LT=0 sends
 *   every product without an epilogue to cublasGemmEx instead (its own choice, untimed).
 * Before the first product. */
void tt_gemm_record(tt_gemm *g, const char *tuning_path);
/* ttgen --tune: each product met from now on is timed again (once) and its record replaced. */
void tt_gemm_retime(tt_gemm *g);
/* Products made while g's stream (or its side's) was captured whose algorithm is still to be
 * chosen: a capture that made any must not run. */
int tt_gemm_pending(const tt_gemm *g);
/* Chooses their algorithms (outside a capture); returns how many. */
int tt_gemm_settle(tt_gemm *g);
/* Products this process timed, and products that took an algorithm recorded before. */
void tt_gemm_counts(const tt_gemm *g, long *timed, long *recorded);

/* A leading dimension (ld) is the number of elements from one row of a row-major operand to the
 * next, at least its width: the adaptive softmax's head is one row of logits per token, its
 * shortlist's and its clusters' columns side by side, and the FFN's activations and its W2 copy
 * have rows padded to whole 16-byte groups (tt_row_pitch). */

/* y[rows, out] = x[rows, in] w[out, in]^T + 1 b^T, the bias added in cuBLASLt's epilogue (an out
 * not a multiple of 8 in two products: the aligned bulk, then the rest). y_f32: y and b are fp32;
 * else both of the activation type (the logits, with the bias's copy). */
void tt_gemm_fwd_bias(const tt_gemm *g, void *y, bool y_f32, int ldy, const void *x, int ldx,
                      const void *w, int ldw, const void *b, int rows, int in, int out);
/* dw[out, in] = dy[rows, out]^T x[rows, in] + beta dw and db[out] = sum over rows of dy (written,
 * not added): dw (packed) and db fp32; ones: rows ones of the activation type. Two products, not
 * cuBLASLt's BGRADB epilogue: measured on an H200 (wt103, bf16), BGRADB with an fp32 dw ran as
 * magma_sgemmEx_kernel (298 us against 20 us for the plain product), and for the logits as a
 * separate pass (94 us) slower than the product with ones (66 us). */
void tt_gemm_bwd_w_bias(const tt_gemm *g, float *dw, float beta, float *db, const void *dy,
                        int ldy, const void *x, int ldx, const void *ones, int rows, int in,
                        int out);

/* y[rows, out] = x[rows, in] w[out, in]^T + beta y  (w of the activation type: the bf16 copy on
 * bf16); y is fp32 when y_f32 (logits), else of the activation type. */
void tt_gemm_fwd(const tt_gemm *g, void *y, bool y_f32, const void *x, const void *w, int rows,
                 int in, int out, float beta);
/* dx[rows, in] = dy[rows, out] w[out, in] + beta dx */
void tt_gemm_bwd_x(const tt_gemm *g, void *dx, const void *dy, const void *w, int rows, int in,
                   int out, float beta);
/* dw[out, in] += dy[rows, out]^T x[rows, in]   (dw fp32) */
void tt_gemm_bwd_w(const tt_gemm *g, float *dw, const void *dy, const void *x, int rows, int in,
                   int out);

/* A batch of products with strides between the items (Transformer-XL's heads): item i's
 * c [m, n] (ldc; fp32 when c_f32, else the activation type) = op(a) op(b) + beta c, all
 * row-major, op(a) [m, k] (ta: a is stored [k, m], lda apart, and transposed), op(b) [k, n] (tb:
 * stored [n, k]); item i's operands start sa, sb, sc elements after the first's.
 * cublasGemmStridedBatchedEx on g's cuBLAS handle (whose stream is g's). */
void tt_gemm_batched(const tt_gemm *g, void *c, bool c_f32, int ldc, long long sc, const void *a,
                     bool ta, int lda, long long sa, const void *b, bool tb, int ldb, long long sb,
                     int m, int n, int k, int batch, float beta);

/* db[out] = sum over rows of dy (written, not added; fp32) as a product with ones (rows ones of
 * the activation type), as tt_gemm_bwd_w_bias computes it. */
void tt_gemm_bias_grad(const tt_gemm *g, float *db, const void *dy, int ldy, const void *ones,
                       int rows, int out);

/* The same three with each operand's leading dimension (dw stays packed, and is added into with
 * beta: 1 adds, 0 writes). */
void tt_gemm_fwd_ld(const tt_gemm *g, void *y, bool y_f32, int ldy, const void *x, int ldx,
                    const void *w, int ldw, int rows, int in, int out, float beta);
void tt_gemm_bwd_x_ld(const tt_gemm *g, void *dx, int ldx, const void *dy, int ldy, const void *w,
                      int ldw, int rows, int in, int out, float beta);
void tt_gemm_bwd_w_ld(const tt_gemm *g, float *dw, float beta, const void *dy, int ldy,
                      const void *x, int ldx, int rows, int in, int out);
/* The same into columns of a wider dw: its rows ldw apart. */
void tt_gemm_bwd_w_ldw(const tt_gemm *g, float *dw, int ldw, float beta, const void *dy, int ldy,
                       const void *x, int ldx, int rows, int in, int out);

#endif
