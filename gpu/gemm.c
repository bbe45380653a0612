/* nn.Linear's products in cuBLAS's column-major terms (see gemm.h): a row-major [r, c] matrix is
 * a column-major [c, r] one, so y = x w^T is y^T = w x^T, computed as C = op(A) op(B) with
 * A = w (in x out, transposed), B = x (in x rows). */
#include "gemm.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Distinct cuBLASLt products whose descriptors and algorithm are kept: the FFN's two and the
 * output layer's two per cluster, times the padded row counts of the tail clusters, which change
 * from batch to batch (the least recently used is replaced). */
#define TT_LT_PLANS 64

/* How many of cuBLASLt's heuristic candidates tt_gemm_tune times for a new product by default
 * (TT_GEMM_TUNE=K: K, 0 to keep the heuristic's first), and the runs each is timed over after
 * one warm-up run. */
#define TT_LT_TUNE_DEFAULT 8
#define TT_LT_TUNE_MAX 32
#define TT_LT_TUNE_REPS 5

/* Everything cuBLASLt's choice of algorithm depends on. Zeroed before it is filled, so that it
 * compares with memcmp. */
typedef struct {
    int32_t ta, tb, epi, dt;
    int64_t ar, ac, lda, br, bc, ldb, m, n, ldd;
    uint32_t align_a, align_b, align_d, align_bias;
} lt_key;

/* The operands of the call that made a plan: what tt_gemm_tune times it on. */
typedef struct {
    const void *a, *b, *bias;
    void *d;
    float beta;
} lt_operands;

typedef struct {
    lt_key key;
    cublasLtMatmulDesc_t op; /* NULL: a free slot */
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulAlgo_t algo;
    unsigned long long used;
    bool gemmex;             /* cuBLASLt has no algorithm: cublasGemmEx's own choice (no epilogue) */
    int n_cand;              /* the heuristic's candidates, best first; 0 once tuned */
    cublasLtMatmulAlgo_t cand[TT_LT_TUNE_MAX];
    lt_operands at;
} lt_plan;

/* An algorithm tt_gemm_tune chose, kept for the plan's key beyond the plan itself (the tail
 * clusters' row counts make more keys than plans are kept). */
typedef struct {
    lt_key key;
    cublasLtMatmulAlgo_t algo;
} lt_choice;

#define TT_LT_CHOICES 1024

struct tt_lt_cache {
    lt_plan plan[TT_LT_PLANS];
    unsigned long long clock;
    lt_choice chosen[TT_LT_CHOICES];
    int n_chosen;
    int tune;             /* candidates timed per new product (TT_GEMM_TUNE; 0: the heuristic's) */
    bool log;             /* TT_GEMM_LOG=1: a line per product tuned, on stderr */
    bool gemmex;          /* TT_GEMM_LT=0: cublasGemmEx for every product without an epilogue */
    cudaEvent_t ev[2];    /* created on the first tuning */
    int pending;          /* plans with candidates not timed yet */
};

static void plan_destroy(tt_lt_cache *c, lt_plan *p)
{
    if (!p->op) return;
    if (p->n_cand) c->pending--;
    cublasLtMatrixLayoutDestroy(p->la);
    cublasLtMatrixLayoutDestroy(p->lb);
    cublasLtMatrixLayoutDestroy(p->ld);
    cublasLtMatmulDescDestroy(p->op);
    memset(p, 0, sizeof *p);
}

void tt_gemm_init(tt_gemm *g, const tt_gpu *gpu, tt_precision precision)
{
    g->h = gpu->blas;
    g->stream = gpu->stream;
    TT_CUBLAS(cublasLtCreate(&g->lt));
    g->ws = NULL;
    g->ws_bytes = 0;
    g->act = precision == TT_PREC_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    g->compute = precision == TT_PREC_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    g->lt_cache = tt_xcalloc(1, sizeof *g->lt_cache);
    g->lt_cache->tune = (int)tt_env_long("TT_GEMM_TUNE", 0, TT_LT_TUNE_MAX, TT_LT_TUNE_DEFAULT);
    const char *log = getenv("TT_GEMM_LOG");
    g->lt_cache->log = log && !strcmp(log, "1");
    const char *lt = getenv("TT_GEMM_LT");
    g->lt_cache->gemmex = lt && !strcmp(lt, "0");
}

static void forget_plans(tt_gemm *g)
{
    if (!g->lt_cache) return;
    for (int i = 0; i < TT_LT_PLANS; i++) plan_destroy(g->lt_cache, &g->lt_cache->plan[i]);
}

void tt_gemm_free(tt_gemm *g)
{
    forget_plans(g);
    if (g->lt_cache && g->lt_cache->ev[0]) {
        cudaEventDestroy(g->lt_cache->ev[0]);
        cudaEventDestroy(g->lt_cache->ev[1]);
    }
    free(g->lt_cache);
    g->lt_cache = NULL;
    if (g->lt) cublasLtDestroy(g->lt);
    g->lt = NULL;
}

void tt_gemm_set_workspace(tt_gemm *g, void *ws, size_t bytes)
{
    forget_plans(g); /* their algorithms were chosen for the last workspace's size */
    if (g->lt_cache) g->lt_cache->n_chosen = 0;
    g->ws = ws;
    g->ws_bytes = bytes;
}

void tt_gemm_beside(tt_gemm *side, const tt_gemm *g, cublasHandle_t h, cudaStream_t stream,
                    void *ws, size_t ws_bytes)
{
    TT_ASSERT(ws_bytes == g->ws_bytes);
    *side = *g;
    side->h = h;
    side->stream = stream;
    side->ws = ws;
}

/* The alignment cuBLASLt may count on for an operand: the largest power of two, up to 256, that
 * divides its address and the bytes of its leading dimension. Unless told, cuBLASLt's heuristic
 * assumes 256 for A, B, C and D; a weight inside the parameters, or rows whose width is not a
 * multiple of 16 bytes (an adaptive tail's narrow projection), have less. */
static uint32_t alignment(const void *p, size_t ld_bytes)
{
    const uintptr_t v = (uintptr_t)p | (uintptr_t)ld_bytes | 256;
    return (uint32_t)(v & (~v + 1));
}

static size_t type_bytes(cudaDataType_t t) { return t == CUDA_R_16BF ? 2 : 4; }

/* The descriptors and heuristic's algorithm for key, made on first use with the heuristic's
 * candidates for tt_gemm_tune and the operands at (at->bias: the pointer the heuristic sees, of
 * the alignment in key). */
static const lt_plan *plan_for(const tt_gemm *g, const lt_key *key, const lt_operands *at)
{
    const void *bias = at->bias;
    tt_lt_cache *c = g->lt_cache;
    lt_plan *slot = NULL;
    for (int i = 0; i < TT_LT_PLANS; i++) {
        lt_plan *p = &c->plan[i];
        if (p->op && !memcmp(&p->key, key, sizeof *key)) {
            p->used = ++c->clock;
            return p;
        }
        if (!slot || (slot->op && (!p->op || p->used < slot->used))) slot = p;
    }
    plan_destroy(c, slot);
    lt_plan *p = slot;
    p->key = *key;
    const cublasOperation_t ta = (cublasOperation_t)key->ta, tb = (cublasOperation_t)key->tb;
    const cublasLtEpilogue_t epi = (cublasLtEpilogue_t)key->epi;
    const cudaDataType_t dt = (cudaDataType_t)key->dt;
    TT_CUBLAS(cublasLtMatmulDescCreate(&p->op, g->compute, CUDA_R_32F));
    TT_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    TT_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    TT_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                             sizeof epi));
    /* the bias (or its gradient) of D's type, as cuBLASLt's default: said, not assumed */
    const int32_t bias_type = key->dt;
    TT_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                             sizeof bias_type));
    TT_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                             sizeof bias));
    TT_CUBLAS(cublasLtMatrixLayoutCreate(&p->la, g->act, (uint64_t)key->ar, (uint64_t)key->ac,
                                         key->lda));
    TT_CUBLAS(cublasLtMatrixLayoutCreate(&p->lb, g->act, (uint64_t)key->br, (uint64_t)key->bc,
                                         key->ldb));
    TT_CUBLAS(cublasLtMatrixLayoutCreate(&p->ld, dt, (uint64_t)key->m, (uint64_t)key->n, key->ldd));
    cublasLtMatmulPreference_t pref;
    TT_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    TT_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &g->ws_bytes, sizeof g->ws_bytes));
    const struct { cublasLtMatmulPreferenceAttributes_t attr; uint32_t bytes; } align[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key->align_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key->align_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key->align_d},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key->align_d}};
    for (size_t i = 0; i < sizeof align / sizeof *align; i++)
        TT_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, align[i].attr, &align[i].bytes,
                                                       sizeof align[i].bytes));
    cublasLtMatmulHeuristicResult_t heur[TT_LT_TUNE_MAX];
    int found = 0;
    const int want = c->tune > 1 ? c->tune : 1;
    TT_CUBLAS(cublasLtMatmulAlgoGetHeuristic(g->lt, p->op, p->la, p->lb, p->ld, p->ld, pref, want,
                                             heur, &found));
    cublasLtMatmulPreferenceDestroy(pref);
    p->gemmex = (found < 1 || c->gemmex) && epi == CUBLASLT_EPILOGUE_DEFAULT;
    if (found < 1 && !p->gemmex)
        tt_panic(__FILE__, __LINE__, "cuBLASLt has no algorithm for a %lldx%lldx%lld product with "
                 "epilogue %d, D of type %d (ld %lld), A ld %lld, B ld %lld, alignments A %u B %u "
                 "D %u bias %u", (long long)key->m, (long long)key->n,
                 (long long)(ta == CUBLAS_OP_N ? key->ac : key->ar), key->epi, key->dt,
                 (long long)key->ldd, (long long)key->lda, (long long)key->ldb, key->align_a,
                 key->align_b, key->align_d, key->align_bias);
    p->algo = heur[0].algo;
    p->n_cand = 0;
    for (int i = 0; i < found && !p->gemmex && c->tune > 1; i++)
        if (heur[i].state == CUBLAS_STATUS_SUCCESS) p->cand[p->n_cand++] = heur[i].algo;
    if (p->n_cand < 2) p->n_cand = 0; /* nothing to choose from */
    for (int i = 0; i < c->n_chosen && p->n_cand; i++)
        if (!memcmp(&c->chosen[i].key, key, sizeof *key)) { /* timed before */
            p->algo = c->chosen[i].algo;
            p->n_cand = 0;
        }
    if (p->n_cand) c->pending++;
    p->at = *at;
    p->used = ++c->clock;
    return p;
}

/* D = op(A) op(B) + beta C (C = D) with an epilogue, in cuBLASLt's column-major terms: A is
 * [ar, ac] and B [br, bc] as stored (of the activation type), lda and ldb apart, D [m, n] of type
 * dt, ldd apart; the bias (or bias gradient) of the epilogue, of D's type. No algorithm for it:
 * a broken invariant (cuBLASLt has these epilogues for the types the models use). */
static void lt_matmul(const tt_gemm *g, cublasOperation_t ta, cublasOperation_t tb, const void *a,
                      int ar, int ac, int lda, const void *b, int br, int bc, int ldb, void *d,
                      cudaDataType_t dt, int m, int n, int ldd, float beta, cublasLtEpilogue_t epi,
                      void *bias)
{
    const size_t es = type_bytes(g->act);
    lt_key key;
    memset(&key, 0, sizeof key);
    key.ta = ta, key.tb = tb, key.epi = (int32_t)epi, key.dt = dt;
    key.ar = ar, key.ac = ac, key.lda = lda, key.br = br, key.bc = bc, key.ldb = ldb;
    key.m = m, key.n = n, key.ldd = ldd;
    key.align_a = alignment(a, (size_t)lda * es);
    key.align_b = alignment(b, (size_t)ldb * es);
    key.align_d = alignment(d, (size_t)ldd * type_bytes(dt));
    key.align_bias = alignment(bias, 0);
    const lt_operands at = {.a = a, .b = b, .bias = bias, .d = d, .beta = beta};
    const lt_plan *p = plan_for(g, &key, &at);
    const float one = 1.f;
    if (p->gemmex) {
        TT_CUBLAS(cublasGemmEx(g->h, ta, tb, m, n, ta == CUBLAS_OP_N ? ac : ar, &one, a, g->act, lda,
                               b, g->act, ldb, &beta, d, dt, ldd, g->compute, CUBLAS_GEMM_DEFAULT));
        return;
    }
    TT_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                             sizeof bias));
    TT_CUBLAS(cublasLtMatmul(g->lt, p->op, &one, a, p->la, b, p->lb, &beta, d, p->ld, d, p->ld,
                             &p->algo, g->ws, g->ws_bytes, g->stream));
}

/* One candidate's mean time in ms over TT_LT_TUNE_REPS runs after a warm-up run, on the operands
 * that made the plan; INFINITY if cuBLASLt refuses it. */
static float time_algo(const tt_gemm *g, const lt_plan *p, const cublasLtMatmulAlgo_t *algo)
{
    const tt_lt_cache *c = g->lt_cache;
    const lt_operands *o = &p->at;
    const float one = 1.f;
    TT_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &o->bias,
                                             sizeof o->bias));
    for (int r = 0; r <= TT_LT_TUNE_REPS; r++) {
        if (r == 1) TT_CUDA(cudaEventRecord(c->ev[0], g->stream));
        if (cublasLtMatmul(g->lt, p->op, &one, o->a, p->la, o->b, p->lb, &o->beta, o->d, p->ld,
                           o->d, p->ld, algo, g->ws, g->ws_bytes, g->stream) !=
            CUBLAS_STATUS_SUCCESS) {
            TT_CUDA(cudaStreamSynchronize(g->stream));
            return INFINITY;
        }
    }
    TT_CUDA(cudaEventRecord(c->ev[1], g->stream));
    TT_CUDA(cudaEventSynchronize(c->ev[1]));
    float ms = 0.f;
    TT_CUDA(cudaEventElapsedTime(&ms, c->ev[0], c->ev[1]));
    return ms / TT_LT_TUNE_REPS;
}

int tt_gemm_tune(tt_gemm *g, int *timed)
{
    *timed = 0;
    tt_lt_cache *c = g->lt_cache;
    if (!c || c->pending == 0) return 0; /* every step asks: most have nothing to time */
    enum cudaStreamCaptureStatus capturing;
    TT_CUDA(cudaStreamIsCapturing(g->stream, &capturing));
    if (capturing != cudaStreamCaptureStatusNone) return 0;
    if (!c->ev[0]) {
        TT_CUDA(cudaEventCreate(&c->ev[0]));
        TT_CUDA(cudaEventCreate(&c->ev[1]));
    }
    TT_CUDA(cudaStreamSynchronize(g->stream)); /* the last run's work off the card first */
    int changed = 0;
    for (int i = 0; i < TT_LT_PLANS; i++) {
        lt_plan *p = &c->plan[i];
        if (!p->op || p->n_cand == 0) continue;
        /* Candidate 0, the heuristic's first, is timed before the loop: t[best] is always set. */
        const int n = p->n_cand;
        float t[TT_LT_TUNE_MAX];
        t[0] = time_algo(g, p, &p->cand[0]);
        int best = 0;
        for (int k = 1; k < n; k++) {
            t[k] = time_algo(g, p, &p->cand[k]);
            if (t[k] < t[best]) best = k;
        }
        ++*timed;
        if (isfinite(t[best])) {
            if (memcmp(&p->algo, &p->cand[best], sizeof p->algo)) changed++;
            p->algo = p->cand[best];
            if (c->n_chosen < TT_LT_CHOICES)
                c->chosen[c->n_chosen++] = (lt_choice){.key = p->key, .algo = p->algo};
        }
        if (c->log) {
            const lt_key *k = &p->key;
            fprintf(stderr, "gemm tune: m %lld n %lld k %lld (%c%c, D %s, ld %lld/%lld/%lld, epilogue "
                    "%d): heuristic's first %.2f us, candidate %d of %d %.2f us (%.2fx)\n",
                    (long long)k->m, (long long)k->n,
                    (long long)(k->ta == CUBLAS_OP_N ? k->ac : k->ar), k->ta == CUBLAS_OP_N ? 'N' : 'T',
                    k->tb == CUBLAS_OP_N ? 'N' : 'T', k->dt == CUDA_R_32F ? "fp32" : "bf16",
                    (long long)k->lda, (long long)k->ldb, (long long)k->ldd, k->epi,
                    1e3 * (double)t[0], best + 1, n, 1e3 * (double)t[best],
                    (double)(t[0] / t[best]));
        }
        p->n_cand = 0;
        c->pending--;
    }
    return changed;
}

void tt_gemm_fwd_bias(const tt_gemm *g, void *y, bool y_f32, int ldy, const void *x, int ldx,
                      const void *w, int ldw, const void *b, int rows, int in, int out)
{
    /* y^T [out, rows] = w (stored [in, out], transposed) x^T [in, rows] + b broadcast. An out that
     * is not whole groups of 8 (wt103's last tail: 67,735 words) leaves cuBLAS only kernels for
     * rows of 2-byte alignment, several times slower (121 us against about 25 for 192 rows on an
     * H200): the first out / 8 * 8 columns in one product, the rest in a second. */
    const cudaDataType_t dt = y_f32 ? CUDA_R_32F : g->act;
    const int bulk = out > 8 && out % 8 ? out / 8 * 8 : out;
    lt_matmul(g, CUBLAS_OP_T, CUBLAS_OP_N, w, in, bulk, ldw, x, in, rows, ldx, y, dt, bulk, rows,
              ldy, 0.f, CUBLASLT_EPILOGUE_BIAS, (void *)b);
    if (bulk == out) return;
    const size_t es = type_bytes(g->act), ds = type_bytes(dt);
    lt_matmul(g, CUBLAS_OP_T, CUBLAS_OP_N, (const char *)w + (size_t)bulk * ldw * es, in,
              out - bulk, ldw, x, in, rows, ldx, (char *)y + (size_t)bulk * ds, dt, out - bulk, rows,
              ldy, 0.f, CUBLASLT_EPILOGUE_BIAS, (char *)b + (size_t)bulk * ds);
}

/* dw^T [in, out] = x^T [in, rows] (dy^T [out, rows], transposed) + beta dw^T */
static void bwd_w(const tt_gemm *g, float *dw, const void *dy, int ldy, const void *x, int ldx,
                  int rows, int in, int out, float beta)
{
    lt_matmul(g, CUBLAS_OP_N, CUBLAS_OP_T, x, in, rows, ldx, dy, out, rows, ldy, dw, CUDA_R_32F, in,
              out, in, beta, CUBLASLT_EPILOGUE_DEFAULT, NULL);
}

void tt_gemm_bwd_w_bias(const tt_gemm *g, float *dw, float beta, float *db, const void *dy,
                        int ldy, const void *x, int ldx, const void *ones, int rows, int in,
                        int out)
{
    bwd_w(g, dw, dy, ldy, x, ldx, rows, in, out, beta);
    tt_gemm_bias_grad(g, db, dy, ldy, ones, rows, out);
}

void tt_gemm_bias_grad(const tt_gemm *g, float *db, const void *dy, int ldy, const void *ones,
                       int rows, int out)
{
    /* db [out, 1] = dy^T [out, rows] ones [rows, 1] (dy stored [rows, out]: [out, rows] here) */
    lt_matmul(g, CUBLAS_OP_N, CUBLAS_OP_N, dy, out, rows, ldy, ones, rows, 1, rows, db, CUDA_R_32F,
              out, 1, out, 0.f, CUBLASLT_EPILOGUE_DEFAULT, NULL);
}

void tt_gemm_fwd_ld(const tt_gemm *g, void *y, bool y_f32, int ldy, const void *x, int ldx,
                    const void *w, int ldw, int rows, int in, int out, float beta)
{
    /* y^T [out, rows] = w (stored [in, out], transposed) x^T [in, rows] + beta y^T */
    lt_matmul(g, CUBLAS_OP_T, CUBLAS_OP_N, w, in, out, ldw, x, in, rows, ldx, y,
              y_f32 ? CUDA_R_32F : g->act, out, rows, ldy, beta, CUBLASLT_EPILOGUE_DEFAULT, NULL);
}

void tt_gemm_bwd_x_ld(const tt_gemm *g, void *dx, int ldx, const void *dy, int ldy, const void *w,
                      int ldw, int rows, int in, int out, float beta)
{
    /* dx^T [in, rows] = w [in, out] dy^T [out, rows] + beta dx^T */
    lt_matmul(g, CUBLAS_OP_N, CUBLAS_OP_N, w, in, out, ldw, dy, out, rows, ldy, dx, g->act, in, rows,
              ldx, beta, CUBLASLT_EPILOGUE_DEFAULT, NULL);
}

void tt_gemm_bwd_w_ld(const tt_gemm *g, float *dw, float beta, const void *dy, int ldy,
                      const void *x, int ldx, int rows, int in, int out)
{
    bwd_w(g, dw, dy, ldy, x, ldx, rows, in, out, beta);
}

void tt_gemm_fwd(const tt_gemm *g, void *y, bool y_f32, const void *x, const void *w, int rows,
                 int in, int out, float beta)
{
    tt_gemm_fwd_ld(g, y, y_f32, out, x, in, w, in, rows, in, out, beta);
}

void tt_gemm_bwd_x(const tt_gemm *g, void *dx, const void *dy, const void *w, int rows, int in,
                   int out, float beta)
{
    tt_gemm_bwd_x_ld(g, dx, in, dy, out, w, in, rows, in, out, beta);
}

void tt_gemm_bwd_w(const tt_gemm *g, float *dw, const void *dy, const void *x, int rows, int in,
                   int out)
{
    tt_gemm_bwd_w_ld(g, dw, 1.f, dy, out, x, in, rows, in, out);
}

void tt_gemm_batched(const tt_gemm *g, void *c, bool c_f32, int ldc, long long sc, const void *a,
                     bool ta, int lda, long long sa, const void *b, bool tb, int ldb, long long sb,
                     int m, int n, int k, int batch, float beta)
{
    /* column-major, c^T [n, m] = op(b)^T op(a)^T: b's row-major storage is its transpose */
    const float one = 1.f;
    TT_CUBLAS(cublasGemmStridedBatchedEx(g->h, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                         ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one, b, g->act,
                                         ldb, sb, a, g->act, lda, sa, &beta, c,
                                         c_f32 ? CUDA_R_32F : g->act, ldc, sc, batch, g->compute,
                                         CUBLAS_GEMM_DEFAULT));
}
