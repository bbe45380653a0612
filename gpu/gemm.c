/* nn.Linear's products in cuBLAS's column-major terms (see gemm.h): a row-major [r, c] matrix is
 * a column-major [c, r] one, so y = x w^T is y^T = w x^T, computed as C = op(A) op(B) with
 * A = w (in x out, transposed), B = x (in x rows). */
#include "gemm.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"
#include "tune.h"
#include "util.h"

/* Distinct cuBLASLt products whose descriptors and algorithm are kept: the FFN's two and the
 * output layer's two per cluster, times the padded row counts of the tail clusters, which change
 * from batch to batch (the least recently used is replaced). */
#define TT_LT_PLANS 64

/* How many of cuBLASLt's heuristic candidates are timed for a product no run on this card has
 * chosen for yet, by default (TT_GEMM_TUNE=K: K; 0 keeps the heuristic's first, untimed and
 * unrecorded), and the runs each is timed over after one warm-up run. */
#define TT_LT_TUNE_DEFAULT 8
#define TT_LT_TUNE_MAX 32
#define TT_LT_TUNE_REPS 5

/* Everything cuBLASLt's choice of algorithm depends on within one tt_gemm (its types, compute
 * type and workspace are the tt_gemm's). Zeroed before it is filled, so that it compares with
 * memcmp. */
typedef struct {
    int32_t ta, tb, epi, dt;
    int64_t ar, ac, lda, br, bc, ldb, m, n, ldd;
    uint32_t align_a, align_b, align_d, align_bias;
} lt_key;

typedef struct {
    lt_key key;
    cublasLtMatmulDesc_t op; /* NULL: a free slot */
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulAlgo_t algo;
    unsigned long long used;
    bool gemmex;             /* cuBLASLt has no algorithm: cublasGemmEx's own choice (no epilogue) */
    bool distrust;           /* its recorded algorithm is not one cuBLASLt accepts: time again */
    int n_cand;              /* the heuristic's candidates, best first */
    cublasLtMatmulAlgo_t cand[TT_LT_TUNE_MAX];
} lt_plan;

/* An algorithm chosen for a product on this card: read from the tuning cache, or timed here. */
typedef struct {
    char sig[320];
    cublasLtMatmulAlgo_t algo;
    bool fresh; /* timed by this process */
} lt_choice;

struct tt_lt_cache {
    lt_plan plan[TT_LT_PLANS];
    unsigned long long clock;
    lt_choice *chosen;    /* this card's, from the tuning cache and from this process */
    int n_chosen, cap_chosen;
    int tune;             /* candidates timed per new product (TT_GEMM_TUNE; 0: the heuristic's) */
    bool log;             /* TT_GEMM_LOG=1: a line per product timed, on stderr */
    bool gemmex;          /* TT_GEMM_LT=0: cublasGemmEx for every product without an epilogue */
    char *path;           /* the tuning cache that records the choices; NULL: none, untimed */
    char card[256];
    int sms;
    bool retime;          /* tt_gemm_retime: time each product again, once */
    bool warned;          /* a tuning cache that cannot be read or written: said once */
    /* products met during a capture, their algorithm still to be chosen: the key and the bias
     * pointer of the call (a capture may meet more than TT_LT_PLANS, so not the plans) */
    struct { lt_key key; const void *bias; } *pending;
    int n_pending, cap_pending;
    long timed, recorded; /* products timed here; products that took a recorded choice */
    cudaEvent_t ev[2];    /* created on the first timing */
};

static void plan_destroy(tt_lt_cache *c, lt_plan *p)
{
    (void)c;
    if (!p->op) return;
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
    tt_lt_cache *c = g->lt_cache;
    c->tune = (int)tt_env_long("TT_GEMM_TUNE", 0, TT_LT_TUNE_MAX, TT_LT_TUNE_DEFAULT);
    const char *log = getenv("TT_GEMM_LOG");
    c->log = log && !strcmp(log, "1");
    const char *lt = getenv("TT_GEMM_LT");
    c->gemmex = lt && !strcmp(lt, "0");
    snprintf(c->card, sizeof c->card, "%s", gpu->name);
    c->sms = gpu->sm_count;
}

static void forget_plans(tt_gemm *g)
{
    if (!g->lt_cache) return;
    for (int i = 0; i < TT_LT_PLANS; i++) plan_destroy(g->lt_cache, &g->lt_cache->plan[i]);
}

void tt_gemm_free(tt_gemm *g)
{
    forget_plans(g);
    tt_lt_cache *c = g->lt_cache;
    if (c && c->ev[0]) {
        cudaEventDestroy(c->ev[0]);
        cudaEventDestroy(c->ev[1]);
    }
    if (c) free(c->chosen), free(c->path), free(c->pending);
    free(c);
    g->lt_cache = NULL;
    if (g->lt) cublasLtDestroy(g->lt);
    g->lt = NULL;
}

void tt_gemm_set_workspace(tt_gemm *g, void *ws, size_t bytes)
{
    forget_plans(g); /* their algorithms were chosen for the last workspace's size */
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

/* --- the choices, as the tuning cache records them ------------------------------------------- */

static const char *type_name(cudaDataType_t t) { return t == CUDA_R_16BF ? "bf16" : "fp32"; }
static size_t type_bytes(cudaDataType_t t) { return t == CUDA_R_16BF ? 2 : 4; }

/* A product's signature in the tuning cache: what its algorithm depends on (shape, types,
 * layout, alignment, epilogue, workspace) and what else can change the bits or the timing (the
 * library's version, the card's SM count; the card's name is the entry's first field). */
static void signature(const tt_gemm *g, const lt_key *k, char *out, size_t n)
{
    snprintf(out, n,
             "gemm cublasLt %zu sm %d ws %zu compute %s ab %s d %s m %lld n %lld k %lld %c%c ld "
             "%lld %lld %lld align %u %u %u %u epilogue %d",
             cublasLtGetVersion(), g->lt_cache->sms, g->ws_bytes,
             g->compute == CUBLAS_COMPUTE_32F_FAST_TF32 ? "tf32" : "fp32", type_name(g->act),
             type_name((cudaDataType_t)k->dt), (long long)k->m, (long long)k->n,
             (long long)(k->ta == CUBLAS_OP_N ? k->ac : k->ar), k->ta == CUBLAS_OP_N ? 'N' : 'T',
             k->tb == CUBLAS_OP_N ? 'N' : 'T', (long long)k->lda, (long long)k->ldb,
             (long long)k->ldd, k->align_a, k->align_b, k->align_d, k->align_bias, k->epi);
}

static void algo_hex(const cublasLtMatmulAlgo_t *a, char out[129])
{
    tt_hex((const uint8_t *)a->data, sizeof a->data, out);
}

static bool algo_parse(const char *hex, cublasLtMatmulAlgo_t *a)
{
    uint8_t *b = (uint8_t *)a->data;
    if (strlen(hex) != 2 * sizeof a->data) return false;
    for (size_t i = 0; i < sizeof a->data; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1 || !isxdigit((unsigned char)hex[2 * i]) ||
            !isxdigit((unsigned char)hex[2 * i + 1]))
            return false;
        b[i] = (uint8_t)v;
    }
    return true;
}

static lt_choice *find_choice(tt_lt_cache *c, const char *sig)
{
    for (int i = 0; i < c->n_chosen; i++)
        if (!strcmp(c->chosen[i].sig, sig)) return &c->chosen[i];
    return NULL;
}

static lt_choice *add_choice(tt_lt_cache *c, const char *sig, const cublasLtMatmulAlgo_t *algo,
                             bool fresh)
{
    lt_choice *x = find_choice(c, sig);
    if (!x) {
        if (c->n_chosen == c->cap_chosen) {
            c->cap_chosen = c->cap_chosen ? 2 * c->cap_chosen : 64;
            c->chosen = tt_xrealloc(c->chosen, (size_t)c->cap_chosen * sizeof *c->chosen);
        }
        x = &c->chosen[c->n_chosen++];
        memset(x, 0, sizeof *x);
        snprintf(x->sig, sizeof x->sig, "%s", sig);
    }
    x->algo = *algo;
    x->fresh = x->fresh || fresh;
    return x;
}

static void warn_once(tt_lt_cache *c, const char *what)
{
    if (c->warned) return;
    c->warned = true;
    fprintf(stderr, "matrix products: %s; the heuristic's algorithm for the products not recorded "
            "(the runs may then differ in their last bits)\n", what);
}

/* This card's products in the tuning cache into c's choices (a product this process timed keeps
 * its own: after tt_gemm_retime it replaces the recorded one). */
static void load_choices(tt_lt_cache *c)
{
    tt_tune_entry *e;
    int n;
    char err[512];
    if (tt_tuning_load(c->path, &e, &n, err, sizeof err) != 0) {
        warn_once(c, err);
        return;
    }
    for (int i = 0; i < n; i++) {
        cublasLtMatmulAlgo_t a;
        if (strcmp(e[i].card, c->card) || strncmp(e[i].signature, "gemm ", 5)) continue;
        const lt_choice *x = find_choice(c, e[i].signature);
        if (x && x->fresh) continue;
        if (algo_parse(e[i].variant, &a)) add_choice(c, e[i].signature, &a, false);
    }
    free(e);
}

void tt_gemm_record(tt_gemm *g, const char *tuning_path)
{
    tt_lt_cache *c = g->lt_cache;
    free(c->path);
    c->path = tuning_path ? tt_xstrdup(tuning_path) : NULL;
    if (c->path && c->tune > 0) load_choices(c);
}

void tt_gemm_retime(tt_gemm *g) { g->lt_cache->retime = true; }

void tt_gemm_counts(const tt_gemm *g, long *timed, long *recorded)
{
    *timed = g->lt_cache->timed;
    *recorded = g->lt_cache->recorded;
}

/* --- timing ---------------------------------------------------------------------------------- */

/* Operands of a product's shape in memory of their own, filled with values that are not zero
 * (bf16 in [-1, -1/4] and [1/4, 1]: as fp32, the same values with random low bits), so that
 * timing needs nothing of a run's buffers and may happen at any point outside a capture. */
typedef struct {
    void *a, *b, *d, *bias;
    size_t d_bytes;
} lt_operands;

static void fill_random(void *dev, size_t bytes, cudaStream_t s)
{
    const size_t chunk = bytes < (1u << 20) ? bytes : (1u << 20);
    uint16_t *h = tt_xmalloc(chunk + 2);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < (chunk + 1) / 2; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        /* sign, exponent 125 or 126 (1/4 .. 1), 7 random mantissa bits */
        h[i] = (uint16_t)(((x >> 8) & 0x8000u) | ((125u + ((x >> 20) & 1u)) << 7) | (x & 0x7fu));
    }
    TT_CUDA(cudaMemcpyAsync(dev, h, chunk, cudaMemcpyHostToDevice, s));
    TT_CUDA(cudaStreamSynchronize(s));
    free(h);
    for (size_t have = chunk; have < bytes; have *= 2)
        TT_CUDA(cudaMemcpyAsync((char *)dev + have, dev, have < bytes - have ? have : bytes - have,
                                cudaMemcpyDeviceToDevice, s));
}

static void operands_free(lt_operands *o)
{
    void *p[] = {o->a, o->b, o->d, o->bias};
    for (int i = 0; i < 4; i++)
        if (p[i]) cudaFree(p[i]);
    memset(o, 0, sizeof *o);
}

static int operands_alloc(const tt_gemm *g, const lt_key *k, lt_operands *o)
{
    memset(o, 0, sizeof *o);
    const size_t es = type_bytes(g->act), ds = type_bytes((cudaDataType_t)k->dt);
    const size_t bytes[4] = {(size_t)k->lda * (size_t)k->ac * es, (size_t)k->ldb * (size_t)k->bc * es,
                             (size_t)k->ldd * (size_t)k->n * ds,
                             k->epi == CUBLASLT_EPILOGUE_DEFAULT ? 0 : (size_t)k->m * ds};
    void **p[4] = {&o->a, &o->b, &o->d, &o->bias};
    for (int i = 0; i < 4; i++) {
        if (!bytes[i]) continue;
        if (cudaMalloc(p[i], bytes[i]) != cudaSuccess) {
            (void)cudaGetLastError(); /* out of memory: not sticky */
            operands_free(o);
            return -1;
        }
        fill_random(*p[i], bytes[i], g->stream);
    }
    o->d_bytes = bytes[2];
    return 0;
}

/* One run of algo on o (beta 0); false if cuBLASLt refuses it. */
static bool run_algo(const tt_gemm *g, const lt_plan *p, const cublasLtMatmulAlgo_t *algo,
                     const lt_operands *o)
{
    const float one = 1.f, zero = 0.f;
    TT_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &o->bias,
                                             sizeof o->bias));
    return cublasLtMatmul(g->lt, p->op, &one, o->a, p->la, o->b, p->lb, &zero, o->d, p->ld, o->d,
                          p->ld, algo, g->ws, g->ws_bytes, g->stream) == CUBLAS_STATUS_SUCCESS;
}

/* A candidate's mean time in ms over TT_LT_TUNE_REPS runs after a warm-up run; INFINITY if
 * cuBLASLt refuses it. */
static float time_algo(const tt_gemm *g, const lt_plan *p, const cublasLtMatmulAlgo_t *algo,
                       const lt_operands *o)
{
    const tt_lt_cache *c = g->lt_cache;
    for (int r = 0; r <= TT_LT_TUNE_REPS; r++) {
        if (r == 1) TT_CUDA(cudaEventRecord(c->ev[0], g->stream));
        if (!run_algo(g, p, algo, o)) {
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

/* Whether algo gives the same bits twice on the same operands: an algorithm whose sums depend on
 * scheduling (atomics) would not; cuBLASLt documents none among its reduction schemes (split-K
 * sums in place behind counters that keep their order, or in the workspace), and this checks. */
static bool same_twice(const tt_gemm *g, const lt_plan *p, const cublasLtMatmulAlgo_t *algo,
                       const lt_operands *o)
{
    unsigned char *h[2];
    for (int i = 0; i < 2; i++) {
        h[i] = tt_xmalloc(o->d_bytes);
        if (!run_algo(g, p, algo, o)) TT_ASSERT(!"an algorithm that ran refuses to run again");
        TT_CUDA(cudaMemcpyAsync(h[i], o->d, o->d_bytes, cudaMemcpyDeviceToHost, g->stream));
        TT_CUDA(cudaStreamSynchronize(g->stream));
    }
    const bool same = memcmp(h[0], h[1], o->d_bytes) == 0;
    free(h[0]), free(h[1]);
    return same;
}

/* "cublasLt algo 21 tile 18 splitK 1 reduction 0": what the hex of an entry stands for */
static void algo_label(const cublasLtMatmulAlgo_t *a, char *out, size_t n)
{
    int32_t v[4] = {0};
    const cublasLtMatmulAlgoConfigAttributes_t at[4] = {
        CUBLASLT_ALGO_CONFIG_ID, CUBLASLT_ALGO_CONFIG_TILE_ID, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
        CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME};
    for (int i = 0; i < 4; i++) {
        size_t w = 0;
        uint32_t u = 0;
        if (cublasLtMatmulAlgoConfigGetAttribute(a, at[i], &u, sizeof u, &w) == CUBLAS_STATUS_SUCCESS)
            v[i] = (int32_t)u;
    }
    snprintf(out, n, "cublasLt algo %d tile %d splitK %d reduction %d", v[0], v[1], v[2], v[3]);
}

/* Whether a recorded algorithm is one cuBLASLt accepts for p (an entry edited by hand, or of
 * another library build under the same version, may not be). */
static bool usable(const tt_gemm *g, const lt_plan *p, const cublasLtMatmulAlgo_t *a)
{
    cublasLtMatmulHeuristicResult_t r;
    return cublasLtMatmulAlgoCheck(g->lt, p->op, p->la, p->lb, p->ld, p->ld, a, &r) ==
               CUBLAS_STATUS_SUCCESS && r.state == CUBLAS_STATUS_SUCCESS;
}

/* Times p's candidates on operands of its shape and records the fastest whose results do not
 * depend on scheduling; under the tuning cache's lock, after reading it again, so that of two
 * processes that meet the same product the second takes the first's choice. Keeps the
 * heuristic's first, unrecorded, when the cache cannot be locked or there is no memory to time
 * in. */
static void choose(const tt_gemm *g, lt_plan *p)
{
    tt_lt_cache *c = g->lt_cache;
    char sig[320], err[512];
    signature(g, &p->key, sig, sizeof sig);
    const int lock = tt_tuning_lock(c->path, err, sizeof err);
    if (lock < 0) {
        warn_once(c, err);
        add_choice(c, sig, &p->algo, true); /* this process's, unrecorded: not asked again */
        return;
    }
    load_choices(c);
    const lt_choice *x = find_choice(c, sig);
    if (x && (!c->retime || x->fresh) && !p->distrust && usable(g, p, &x->algo)) {
        p->algo = x->algo;
        c->recorded++;
        tt_tuning_unlock(lock);
        return;
    }
    lt_operands o;
    if (operands_alloc(g, &p->key, &o) != 0) {
        tt_tuning_unlock(lock);
        warn_once(c, "no device memory to time a product in");
        add_choice(c, sig, &p->algo, true);
        return;
    }
    if (!c->ev[0]) {
        TT_CUDA(cudaEventCreate(&c->ev[0]));
        TT_CUDA(cudaEventCreate(&c->ev[1]));
    }
    float t[TT_LT_TUNE_MAX];
    int order[TT_LT_TUNE_MAX];
    for (int i = 0; i < p->n_cand; i++) {
        t[i] = time_algo(g, p, &p->cand[i], &o);
        order[i] = i;
        for (int j = i; j > 0 && t[order[j]] < t[order[j - 1]]; j--) {
            const int s = order[j];
            order[j] = order[j - 1], order[j - 1] = s;
        }
    }
    int best = -1, skipped = 0;
    for (int i = 0; i < p->n_cand && best < 0 && isfinite(t[order[i]]); i++) {
        if (same_twice(g, p, &p->cand[order[i]], &o)) best = order[i];
        else skipped++;
    }
    operands_free(&o);
    c->timed++;
    if (best < 0) {
        tt_tuning_unlock(lock);
        warn_once(c, "no algorithm of a product ran twice to the same bits");
        add_choice(c, sig, &p->algo, true);
        return;
    }
    p->algo = p->cand[best];
    add_choice(c, sig, &p->algo, true);
    tt_tune_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.card, sizeof e.card, "%s", c->card);
    snprintf(e.signature, sizeof e.signature, "%s", sig);
    algo_hex(&p->cand[best], e.variant);
    algo_hex(&p->cand[0], e.default_variant);
    e.best_ms = t[best];
    e.default_ms = t[0];
    algo_label(&p->algo, e.unit, sizeof e.unit);
    tt_tune_today(e.date);
    if (tt_tuning_store_locked(c->path, &e, err, sizeof err) != 0) warn_once(c, err);
    tt_tuning_unlock(lock);
    if (c->log)
        fprintf(stderr, "gemm tune: %s: heuristic's first %.2f us, candidate %d of %d %.2f us "
                "(%.2fx)%s\n", sig, 1e3 * (double)t[0], best + 1, p->n_cand, 1e3 * (double)t[best],
                (double)(t[0] / t[best]), skipped ? ", faster ones gave other bits twice" : "");
}

/* --- plans ----------------------------------------------------------------------------------- */

/* The alignment cuBLASLt may count on for an operand: the largest power of two, up to 256, that
 * divides its address and the bytes of its leading dimension. Unless told, cuBLASLt's heuristic
 * assumes 256 for A, B, C and D; a weight inside the parameters, or rows whose width is not a
 * multiple of 16 bytes (an adaptive tail's narrow projection), have less. */
static uint32_t alignment(const void *p, size_t ld_bytes)
{
    const uintptr_t v = (uintptr_t)p | (uintptr_t)ld_bytes | 256;
    return (uint32_t)(v & (~v + 1));
}

/* The algorithm of a new plan: the one recorded for its product on this card; else, with a
 * tuning cache to record in, the fastest (timed now, or when the capture that made it is over:
 * tt_gemm_settle); else the heuristic's first. */
static void algorithm_for(const tt_gemm *g, lt_plan *p, const void *bias)
{
    tt_lt_cache *c = g->lt_cache;
    if (p->gemmex || c->tune == 0 || !c->path) return;
    char sig[320];
    signature(g, &p->key, sig, sizeof sig);
    const lt_choice *x = find_choice(c, sig);
    if (x && (!c->retime || x->fresh)) {
        if (usable(g, p, &x->algo)) {
            p->algo = x->algo;
            c->recorded++;
            return;
        }
        fprintf(stderr, "matrix products: the algorithm recorded for '%s' is not one cuBLASLt "
                "accepts here: timing it again\n", sig);
        p->distrust = true;
    }
    enum cudaStreamCaptureStatus capturing;
    TT_CUDA(cudaStreamIsCapturing(g->stream, &capturing));
    if (capturing != cudaStreamCaptureStatusNone) {
        if (c->n_pending == c->cap_pending) {
            c->cap_pending = c->cap_pending ? 2 * c->cap_pending : 16;
            c->pending = tt_xrealloc(c->pending, (size_t)c->cap_pending * sizeof *c->pending);
        }
        c->pending[c->n_pending].key = p->key;
        c->pending[c->n_pending++].bias = bias;
        return;
    }
    choose(g, p);
}

/* The descriptors and algorithm for key, made on first use (bias: the pointer the heuristic
 * sees, of the alignment in key). */
static const lt_plan *plan_for(const tt_gemm *g, const lt_key *key, const void *bias)
{
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
    for (int i = 0; i < found && !p->gemmex; i++)
        if (heur[i].state == CUBLAS_STATUS_SUCCESS) p->cand[p->n_cand++] = heur[i].algo;
    algorithm_for(g, p, bias);
    p->used = ++c->clock;
    return p;
}

int tt_gemm_pending(const tt_gemm *g) { return g->lt_cache ? g->lt_cache->n_pending : 0; }

int tt_gemm_settle(tt_gemm *g)
{
    tt_lt_cache *c = g->lt_cache;
    const int n = c->n_pending;
    c->n_pending = 0;
    for (int i = 0; i < n; i++) {
        const lt_key *key = &c->pending[i].key;
        lt_plan *p = NULL;
        for (int j = 0; j < TT_LT_PLANS && !p; j++)
            if (c->plan[j].op && !memcmp(&c->plan[j].key, key, sizeof *key)) p = &c->plan[j];
        if (p) choose(g, p);                           /* made in the capture: time it now */
        else (void)plan_for(g, key, c->pending[i].bias); /* evicted since: made and timed anew */
    }
    return n;
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
    const lt_plan *p = plan_for(g, &key, bias);
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

/* The part of a contiguous width n that is whole groups of 8 elements (n itself when it is, or
 * when it is 8 or less): cuBLAS keeps its aligned kernels for that part of a product, and the
 * callers run the rest as a second, small product (see tt_gemm_fwd_bias). */
static int whole_eights(int n) { return n > 8 && n % 8 ? n / 8 * 8 : n; }

void tt_gemm_fwd_bias(const tt_gemm *g, void *y, bool y_f32, int ldy, const void *x, int ldx,
                      const void *w, int ldw, const void *b, int rows, int in, int out)
{
    /* y^T [out, rows] = w (stored [in, out], transposed) x^T [in, rows] + b broadcast. An out that
     * is not whole groups of 8 (wt103's last tail: 67,735 words) leaves cuBLAS only kernels for
     * rows of 2-byte alignment, several times slower (121 us against about 25 for 192 rows on an
     * H200): the first out / 8 * 8 columns in one product, the rest in a second. */
    const cudaDataType_t dt = y_f32 ? CUDA_R_32F : g->act;
    const int bulk = whole_eights(out);
    lt_matmul(g, CUBLAS_OP_T, CUBLAS_OP_N, w, in, bulk, ldw, x, in, rows, ldx, y, dt, bulk, rows,
              ldy, 0.f, CUBLASLT_EPILOGUE_BIAS, (void *)b);
    if (bulk == out) return;
    const size_t es = type_bytes(g->act), ds = type_bytes(dt);
    lt_matmul(g, CUBLAS_OP_T, CUBLAS_OP_N, (const char *)w + (size_t)bulk * ldw * es, in,
              out - bulk, ldw, x, in, rows, ldx, (char *)y + (size_t)bulk * ds, dt, out - bulk, rows,
              ldy, 0.f, CUBLASLT_EPILOGUE_BIAS, (char *)b + (size_t)bulk * ds);
}

/* dw^T [in, out] = x^T [in, rows] (dy^T [out, rows], transposed) + beta dw^T. An in that is not
 * whole groups of 8 (W2's d_inner of 2100, whose gradient is written in place) is x's contiguous
 * dimension and dw's: split as tt_gemm_fwd_bias's out (dW2 at the wt103 shapes ran on an sm_80
 * kernel of 4-byte alignment, about 100 us a layer in Nsight Compute). (Splitting an out that is
 * not whole eights the same way, wt103's last tail of 67,735 words, changed a wt103 step by
 * nothing measurable on an H200: 1.2045M tok/s against 1.2047M unsplit.) */
static void bwd_w(const tt_gemm *g, float *dw, int ldw, const void *dy, int ldy, const void *x,
                  int ldx, int rows, int in, int out, float beta)
{
    const int bulk = whole_eights(in);
    lt_matmul(g, CUBLAS_OP_N, CUBLAS_OP_T, x, bulk, rows, ldx, dy, out, rows, ldy, dw, CUDA_R_32F,
              bulk, out, ldw, beta, CUBLASLT_EPILOGUE_DEFAULT, NULL);
    if (bulk == in) return;
    lt_matmul(g, CUBLAS_OP_N, CUBLAS_OP_T, (const char *)x + (size_t)bulk * type_bytes(g->act),
              in - bulk, rows, ldx, dy, out, rows, ldy, dw + bulk, CUDA_R_32F, in - bulk, out, ldw,
              beta, CUBLASLT_EPILOGUE_DEFAULT, NULL);
}

void tt_gemm_bwd_w_bias(const tt_gemm *g, float *dw, float beta, float *db, const void *dy,
                        int ldy, const void *x, int ldx, const void *ones, int rows, int in,
                        int out)
{
    bwd_w(g, dw, in, dy, ldy, x, ldx, rows, in, out, beta);
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
    /* dx^T [in, rows] = w [in, out] dy^T [out, rows] + beta dx^T. The sum over out is dy's
     * contiguous dimension: an out that is not whole groups of 8 (wt103's last tail, 67,735
     * words) leaves cuBLAS only kernels of 2-byte alignment (121 us for its 128 rows on an H200),
     * as tt_gemm_fwd_bias's: the first out / 8 * 8 terms in one product, the rest added by a
     * second. */
    const int bulk = whole_eights(out);
    lt_matmul(g, CUBLAS_OP_N, CUBLAS_OP_N, w, in, bulk, ldw, dy, bulk, rows, ldy, dx, g->act, in,
              rows, ldx, beta, CUBLASLT_EPILOGUE_DEFAULT, NULL);
    if (bulk == out) return;
    const size_t es = type_bytes(g->act);
    lt_matmul(g, CUBLAS_OP_N, CUBLAS_OP_N, (const char *)w + (size_t)bulk * ldw * es, in,
              out - bulk, ldw, (const char *)dy + (size_t)bulk * es, out - bulk, rows, ldy, dx,
              g->act, in, rows, ldx, 1.f, CUBLASLT_EPILOGUE_DEFAULT, NULL);
}

void tt_gemm_bwd_w_ld(const tt_gemm *g, float *dw, float beta, const void *dy, int ldy,
                      const void *x, int ldx, int rows, int in, int out)
{
    bwd_w(g, dw, in, dy, ldy, x, ldx, rows, in, out, beta);
}

void tt_gemm_bwd_w_ldw(const tt_gemm *g, float *dw, int ldw, float beta, const void *dy, int ldy,
                       const void *x, int ldx, int rows, int in, int out)
{
    bwd_w(g, dw, ldw, dy, ldy, x, ldx, rows, in, out, beta);
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
