/* The tensorized LM and Transformer-XL on the GPU (see gpu_model.h). Dropout sites as
 * cpu_model.c numbers them: 0 the embedding; tensorized 1 + 3 layer + {0 attention output, 1 FFN
 * hidden, 2 FFN output}; Transformer-XL 1 pos_emb, 2 + 4 layer + {0 attention output, 1 dropatt,
 * 2 FFN hidden, 3 FFN output}. */
#include "gpu_model.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "cpu_ops.h"
#include "cpu_txl.h"
#include "device.h"
#include "mla_mat.h"
#include "nccl_lib.h"
#include "optim.h"
#include "sum_parts.h"
#include "tune.h"
#include "util.h"

typedef struct {
    void *qkv, *y, *s1, *x1, *f, *s2, *x2; /* activations of the storage type, [rows, 3R or D] */
    void *hd;                              /* [rows, F] of the storage type, fp apart: W1 x1,
                                            * then dropout(relu(W1 x1 + b1)) over it */
    void *p;                               /* P = Wr pe [N, R], storage type */
    float *g;                              /* the core [R] */
    float *mean1, *rstd1, *mean2, *rstd2;
    /* Transformer-XL (heads head-major and padded to dp, see templates/txl.cu) */
    void *kvm;          /* [B*M, 2 HD] the memory rows' k, v */
    void *qu, *qv;      /* [H][rows][dp] q + u, q + v */
    void *tk, *tv;      /* [H][B*klen][dp] keys and values, memory rows first */
    void *rh;           /* [H][klen][dp] r = pe Wr^T */
    void *prob, *pdrop; /* [H*rows, klen] P and P after dropatt (unfused: templates/txl_softmax.cu) */
    void *oh;           /* [H][rows][dp] P' V (fused: templates/txl_flash.cu) */
    float *lse;         /* [H*rows] each row's log-sum-exp of its scores (fused) */
    void *om;           /* [rows, HD] P' V, heads side by side: o_net's input */
    /* the materialized attention's buffers: T and its factors this layer's own where kept
     * (lm->mat_keep), else the ones the layers share; the backward's the layers share */
    tt_mla_mat_bufs mat;
} layer_acts;

/* What the host routes for one batch (route_batch): the column of each row's target in the head,
 * and for each cluster the rows it takes, ascending, then -1 up to a multiple of
 * TT_ADAPTIVE_BUCKET. Laid out alike in host and device memory, and copied in one transfer with
 * the tokens. Without cutoffs only the head, whose column is the target itself. */
typedef struct {
    int32_t *head;                      /* [rows] */
    int32_t *rows[TT_MAX_CLUSTERS];     /* tail c >= 1: [pad] the rows whose target is in c */
    int32_t *target[TT_MAX_CLUSTERS];   /* [pad] their targets - lo[c] */
    float *weight[TT_MAX_CLUSTERS];     /* [pad] their weights; 0 for padding */
    int32_t *emb_rows[TT_MAX_CLUSTERS]; /* div_val > 1, each c: [pad] the rows whose token is in c */
    int32_t *emb_pos;                   /* [rows] each row's place in its emb_rows list */
} route;

/* The sizes a batch's kernels and products run at: the padded lengths of route's lists. A step
 * captured in a CUDA graph is valid for one tuple of them. */
typedef struct {
    int tail[TT_MAX_CLUSTERS], emb[TT_MAX_CLUSTERS];
} route_counts;

/* A weight the products read from a copy whose rows are padded to whole 16-byte groups
 * (tt_row_pitch: Transformer-XL's D and H d_head of 410 in rows of 416, the FFN's F of 2100 in
 * 2104), because cuBLASLt runs Hopper's kernels only on such rows: 4-byte aligned rows of 410
 * ran about two thirds of txl-wt103-base's step on sm_80 kernels. The master [blocks * rows,
 * cols] as [blocks][prow][pcol] of the storage type, zero between (the arena is zeroed once;
 * refresh_padded rewrites the rest after every write of wc). copy NULL: nothing is padded, and
 * the products read wc. The products run over the padded extents, so that what they write into
 * the padding of an activation is zero. The gradient's product writes the master's gradient
 * directly, unless its rows are not whole 16-byte groups of fp32, its blocks lie apart, or it is
 * the FFN's (scratch): then an fp32 scratch of the copy's shape, copied into the gradient after.
 * The FFN's gradients at F 2100 had run as 2100-wide products: W1's on an sm_80 kernel (36 us a
 * layer of lm1b's body on an H200), W2's as 2096 columns and 4 more (two products, each split). */
typedef struct {
    const float *w;
    float *g;
    void *copy;
    int blocks, rows, cols, prow, pcol; /* prow, pcol = rows, cols where nothing is padded */
    bool scratch;
    float *scr; /* that scratch (shared by the weights whose gradients run on the same stream) */
} padded;

/* A layer's padded weights: Transformer-XL's projections (qkv in three blocks, q, k, v), and
 * both kinds' FFN and its output bias. */
typedef struct {
    padded qkv, r, o, w1, w2, b2;
} layer_padded;

/* A captured training step and what it was captured for. */
typedef struct {
    cudaGraphExec_t exec; /* NULL: a free slot */
    tt_lm_opts opts;
    route_counts counts;
    int mlen, par;        /* Transformer-XL's memory length and buffer */
    unsigned long long used; /* when last launched: the least recent is replaced first */
} step_graph;

#define TT_MAX_GRAPHS 64

/* comm_ev's events after the layers' 2 L: the step's start, the backward's end (main stream),
 * the parts' end (comm_stream), and each output cluster's backward (TT_EV_OUTPUT + c), then the
 * whole output layer's (TT_EV_OUTPUT + TT_MAX_CLUSTERS). */
enum {
    TT_EV_START,
    TT_EV_BWD_END,
    TT_EV_COMM_DONE,
    TT_EV_OUTPUT,
    TT_COMM_EVENTS = TT_EV_OUTPUT + TT_MAX_CLUSTERS + 1
};

struct tt_gpu_lm {
    tt_gpu *gpu;
    const tt_cache *cache; /* the caller's, open while lm is (NULL: none) */
    const tt_spec *spec;
    const tt_layout *l;
    bool txl;  /* kind: transformer-xl */
    bool txl_fused; /* its attention by templates/txl_flash.cu (the plan's choice: tt_txl_fuses) */
    tt_gpu_program prog;
    tt_gemm gemm;
    const tt_gpu_side *side; /* for work beside the main stream's; NULL: all on one stream */
    tt_gemm gemm_side;       /* gemm's products on side's stream (the weight gradients) */
    cublasHandle_t blas;     /* the model's own, its workspace in the arena: another model on
                              * the same device cannot move it from under a captured step */
    cublasHandle_t side_blas;
    int batch, rows;
    int pad;   /* rows rounded up to TT_ADAPTIVE_BUCKET: the longest list of a cluster */
    size_t es; /* bytes per activation element */
    int fp;    /* elements from one row of the FFN's [rows, F] activations to the next: F padded to
                * whole 16-byte groups (tt_row_pitch), for cuBLAS's tensor-core kernels */
    int dl;    /* the same for the D-wide activations (x, y, the sums, the memories, their
                * gradients): Transformer-XL's D padded (410 -> 416); the tensorized model's D,
                * whose attention kernels take packed rows */
    int hl;    /* Transformer-XL: H d_head padded; a row of qkv holds q, k, v hl apart */
    char *arena;
    size_t bytes;
    float *w, *g, *m, *v; /* m, v: in one allocation (m's), v moment_stride(moment_floats) after m */
    size_t moment_floats; /* n_floats + TT_SHARD_SLACK, or a sharded optimizer's shard_len */
    void *wc; /* the weights in the storage type (bf16: a copy Adam keeps current; fp32: w) */
    layer_padded *pw;  /* [layers] */
    padded out[TT_MAX_CLUSTERS], cluster; /* the output layer's (div_val 1: no projections) */
    tt_view wv, gv;
    int32_t *tokens;
    float *weight;
    route host_route, dev_route; /* the last batch's; the host's in io_host, the device's in io */
    /* What goes between host and device every step, one block on each side (see IO_STEP): the
     * device's in the arena, the host's pinned, so that one copy takes it up and one brings the
     * optimizer's scalars and the sums back */
    char *io, *io_host;
    size_t io_route, io_bytes; /* the routes' offset in the block, the block's bytes */
    /* Training steps submitted and not yet waited for (tt_gpu_lm_train_submit): at most two, the
     * host's io blocks two (io_hosts; io_host is the one in use), each step's download landing in
     * its own while the host fills the other; io_done[k] is recorded after block k's download */
    char *io_hosts[2];
    int io_slot, npend;
    struct pending_step {
        int slot;
        double weights; /* the result's scored */
    } pend[2];
    cudaEvent_t io_done[2];
    tt_step_guard *guard; /* in the io block: the step's guard (halt, skip, first_bad) */
    unsigned *guard_last; /* whether the last guarded step skipped (the arena's) */
    long long first_bad;  /* the last result's (tt_gpu_lm_first_bad) */
    route_counts counts;         /* their padded lengths */
    void *x0, *pe, *ones;
    layer_acts *acts;
    void *logits;       /* the head's [rows, columns], then each tail's [count, its words], of
                         * the storage type; each part's dlogits overwrite its logits */
    /* out_beside (TT_OUTPUT_SIDE, on unless 0, with the side stream): the output layer's weight
     * and bias gradients run on the side stream beside its chain to dx, each cluster's as soon
     * as its dlogits are ready; the clusters alternate between two sets of buffers (logits_b,
     * tail_xb, tail_hb: slot 1 the second), so that cluster c + 1's run on the main stream while
     * c's gradients read c's, and cluster c + 2 waits for out_done[c] before writing them. */
    bool out_beside;
    /* tail_side (TT_TAIL_SIDE, on unless 0, with the side stream): the parameters' sums after
     * the layers' backward (cores, deferred column sums) beside the embedding's backward */
    bool tail_side;
    /* zero_side (TT_ZERO_SIDE, on unless 0, with the side stream): the gradients zeroed on the
     * side stream beside the forward */
    bool zero_side;
    void *logits_b, *tail_xb, *tail_hb;
    cudaEvent_t out_done[TT_MAX_CLUSTERS];
    float *loss, *nll;  /* per row of the head, then of each tail's list */
    double *sums;       /* the loss's and the nll's sums, and (several GPUs) the ranks' flags */
    bool slow_wait;     /* several GPUs: the next step's wait takes the slow limit (tt_nccl_wait) */
    void *comm;         /* several GPUs: the ranks' ncclComm_t (tt_gpu_lm_set_comm); else NULL */
    /* several GPUs with the optimizer sharded (tt_gpu_lm_shard): this rank clips and steps
     * elements shard_off .. shard_off + shard_len - 1 of the parameter arrays (the ranks' shards
     * tile them, past n_floats into TT_SHARD_SLACK zeros); shard_len 0: not sharded */
    size_t shard_off, shard_len;
    double flag;        /* this rank's flag for the next step (tt_gpu_lm_flag) */
    /* several GPUs, not sharded: the gradients all-reduced in parts on comm_stream beside the
     * backward (plan_buckets), each as soon as the backward has written it: the output layer's,
     * each layer's weight matrices, then the rest. With one table (div_val 1) the embedding's
     * backward runs on every rank over the whole batch (its rows' tokens and d x0 gathered:
     * gtokens, gkeys, gdx), so its table is not summed (tied: after the output layer's sum). */
    cudaStream_t comm_stream;
    cudaEvent_t *comm_ev; /* [2 L + TT_COMM_EVENTS]: a layer's end on the main and side streams */
    tt_sum_parts parts; /* the gradients' parts (gpu/sum_parts.h) */
    int rank, world;
    bool buckets;    /* the above are planned and used (TT_NCCL_BUCKETS=0: one all-reduce) */
    bool reduce_now; /* a training step's run, whose parts are reduced as it goes */
    bool emb_global; /* the embedding's backward over the whole batch */
    /* TT_NCCL_SUMS=bf16 on the bf16 path: the gradients summed in bf16 (half the bytes), each
     * part rounded into gh (n_floats + TT_SHARD_SLACK of the storage type), summed there and
     * widened back; NULL: in fp32 in place */
    void *gh;
    int32_t *gtokens;
    uint64_t *gkeys;
    void *gdx;
    void *tail_x, *tail_dx;  /* [pad, D] a tail's gathered rows of x, and their d x */
    void *tail_h, *tail_dh;  /* [pad, D] with projections: the input of a cluster's logits, its d */
    void *emb_e[TT_MAX_CLUSTERS]; /* div_val > 1: [pad, dim c] cluster c's gathered table rows */
    float *emb_y;                 /* [pad, D] their projection */
    void *emb_dy, *emb_de;        /* [pad, D] d of the projection, [pad, D] d of the rows */
    void *dx, *dres, *dy, *dqkv;
    void *dyf; /* d f of the FFN: its own buffer, read by dW2 on the side stream */
    /* Transformer-XL: shapes, the memories, and what its attention's steps share */
    int hd, dpad, kmax; /* H d_head; d_head padded to whole 16-byte groups; M + N */
    int mlen, par;     /* the memory the next run attends to: its length, and which of two */
    void **mem[2];     /* [2][L] -> [B, mlen, D] each layer's memory (inputs of the last segments) */
    float *pe_tab;     /* [kmax, D] sinusoids of distances kmax-1 .. 0, clamped */
    void *r;           /* [kmax, HD] pe Wr^T of one layer, before its heads are split */
    float *ac, *bd, *dpd;          /* [H*rows, kmax] fp32: AC, unshifted BD, d P' (unfused) */
    void *ds;                      /* [H*rows][klen rounded to 64] dS (fused, bf16) */
    float *uvpart;                 /* the fused backward's partial sums for du, dv */
    float *dr_part;                /* [H][splits][kmax][dp]: dR's split products (fused) */
    void *dac, *dbd;               /* [H*rows, kmax] */
    void *oh, *doh, *dquh, *dqvh;  /* [H][rows][dp] */
    void *dkh, *dvh;               /* [H][B*kmax][dp] */
    void *drh, *dr;                /* [H][kmax][dp], [kmax, HD] */
    void *dkvm, *dom;              /* [B*M, 2 HD], [rows, HD] */
    void *dff; /* [rows, F], fp apart */
    float *dg, *dp, *ln_part, *ffn_part, *mla_part;
    float *cluster_part; /* cluster_cols.cu's partials of the head's cluster weights' gradients */
    /* The LayerNorms' and the FFN's biases' gradients are column sums of their kernels'
     * partials (param_sums): with defer_sums (every layer's partials fit in
     * TT_DEFERRED_SUMS_BYTES, and TT_DEFER_SUMS is not 0) after the last layer's backward, one
     * launch a kind for every layer, ln_part holding layer k's LN1 partials in slot 2k and its
     * LN2's in 2k + 1, ffn_part layer k's in slot k; else right after each kernel, one slot each. */
    bool defer_sums;
    size_t ln_slot, ffn_slot; /* floats a slot */
    long long layer_stride;   /* floats from a layer's parameters to the next layer's */
    bool mla_mat;          /* the plan's attention is materialized (gpu/mla_mat.c) */
    bool ln_sums;          /* the attention's residual LayerNorm adds mla_fwd's parts itself */
    struct prof_marks *prof; /* tt_gpu_lm_profile's marks while it runs a step; else NULL */
    bool mat_keep;         /* each layer keeps its T for the backward (TT_MAT_KEEP, memory) */
    /* Parameter gradients a step writes whole without adding (the FFN's, the LayerNorms', the
     * tensorized attention's qkv_net and r_net, and o_net where materialized): offsets and
     * lengths in floats, ascending; zero_grads leaves them alone */
    size_t *written_at, *written_len;
    int n_written;
    size_t *zero_at, *zero_len; /* zero_grads' list: the clusters' ranges and those merged */
    void *dp_c; /* bf16: dP rounded for the bf16 products */
    uint64_t *keys;
    long long *copy_jobs; /* refresh_padded's table (copy_rows: a job a block of a padded copy) */
    int copy_njobs;
    long copy_rows_max;   /* its tallest job's rows */
    bool adam_pads;       /* Adam writes the padded copies (TT_ADAM_PADS, on unless 0, where its
                           * table holds the jobs): no copy_rows after it (but for the sharded
                           * step, whose copies follow the weights' all-gather) */
    float *emb_part; /* the embedding backward's span sums */
    double *norm_part;
    tt_adam_scalars *sc;
    unsigned long long *step; /* the dropout step the kernels read (device) */
    void *blas_ws;           /* cuBLAS's workspace, so that it allocates nothing in a capture */
    void *side_ws;           /* and gemm_side's */
    /* training steps as CUDA graphs, captured on first use for their options and counts */
    step_graph graph[TT_MAX_GRAPHS];
    int max_graphs;          /* TT_CUDA_GRAPHS=K keeps K (1 to 64; to test the eviction) */
    unsigned long long clock;
    long captured, replayed;
    bool graphs;             /* TT_CUDA_GRAPH=0 turns them off (to compare, or to debug) */
};

/* cuBLAS's recommended workspace on Hopper; more than enough before it. */
#define TT_BLAS_WORKSPACE ((size_t)32 << 20)

/* Two passes over the same list of buffers: the first adds up their sizes, the second, once the
 * one allocation exists, hands out pointers into it. */
typedef struct {
    char *base;
    size_t used;
} bump;

/* The io block (tt_gpu_lm's io and io_host): the dropout step, the optimizer's scalars and the
 * sums of a run (loss, nll, the ranks' flags) at its head, then the tokens from IO_TOKENS and
 * the routes from io_route. A run's or a step's upload copies the whole block, its download the
 * scalars and the sums. What goes up of the head besides the step is the mirror's last values,
 * written again before anything reads them: lr and the bias corrections by the host before every
 * Adam, norm and clip by tt_grad_norm_guarded, the loss's and nll's sums by tt_xent_sum, the
 * ranks' flag by the host before every step on several GPUs (and read only there). */
enum {
    IO_STEP = 0,
    IO_SC = 8,
    IO_SUMS = IO_SC + (int)sizeof(tt_adam_scalars),
    IO_GUARD = IO_SUMS + 3 * 8,
    IO_HEAD = IO_GUARD + (int)sizeof(tt_step_guard),
    IO_TOKENS = 256
};
_Static_assert(IO_HEAD <= IO_TOKENS && IO_SC % 8 == 0 && IO_SUMS % 8 == 0,
               "the io block's head: whole doubles, before the tokens");

static void *take(bump *b, size_t bytes)
{
    void *p = b->base ? b->base + b->used : NULL;
    b->used += (bytes + 255) & ~(size_t)255;
    return p;
}

static void *place(char *base, size_t *at, size_t n)
{
    void *p = base ? base + *at : NULL;
    *at += n * 4;
    return p;
}

/* route's lists from base (NULL: sizes only); returns their bytes. */
static size_t route_at(route *rt, char *base, const tt_layout *l, size_t rows, size_t pad)
{
    size_t at = 0;
    memset(rt, 0, sizeof *rt);
    rt->head = place(base, &at, rows);
    for (int c = 1; c < l->n_clusters; c++) {
        rt->rows[c] = place(base, &at, pad);
        rt->target[c] = place(base, &at, pad);
        rt->weight[c] = place(base, &at, pad);
    }
    if (l->proj) {
        for (int c = 0; c < l->n_clusters; c++) rt->emb_rows[c] = place(base, &at, pad);
        rt->emb_pos = place(base, &at, rows);
    }
    return at;
}

/* The row stride of a block of logits `cols` wide (the head's 20003 columns of wt103, say): whole
 * 16-byte groups of fp32 or bf16 logits. */
static int logit_ld(long cols) { return (int)tt_row_pitch(cols); }

/* Logits at once: the head's for every row, or one tail's for as many rows as it may list. */
static size_t logit_elements(const tt_gpu_lm *lm)
{
    const tt_layout *l = lm->l;
    size_t most = (size_t)lm->rows * (size_t)logit_ld(l->hi[0] + l->n_clusters - 1);
    for (int c = 1; c < l->n_clusters; c++)
        if ((size_t)lm->pad * (size_t)logit_ld(l->hi[c] - l->lo[c]) > most)
            most = (size_t)lm->pad * (size_t)logit_ld(l->hi[c] - l->lo[c]);
    return most;
}

static bool pad_needed(const padded *pd) { return pd->prow != pd->rows || pd->pcol != pd->cols; }

static void pad_shape(padded *pd, int blocks, int rows, int cols, int prow, int pcol, bool ffn)
{
    if (!rows || !cols) prow = rows, pcol = cols; /* (nothing there) */
    *pd = (padded){.blocks = blocks, .rows = rows, .cols = cols, .prow = prow, .pcol = pcol};
    pd->scratch = pad_needed(pd) &&
                  (ffn || (cols % 4 && pcol != cols) || (blocks > 1 && prow != rows));
}

/* What is padded, and how (padded says why): Transformer-XL's D-wide and H d_head-wide weights,
 * the output layer's when it reads x itself (no projections), and the FFN's. */
static void pad_shapes(tt_gpu_lm *lm)
{
    const tt_layout *l = lm->l;
    const tt_model_spec *m = &l->m;
    const int d = m->d_model, dl = lm->dl, f = m->d_inner, fp = lm->fp;
    for (int k = 0; k < m->layers; k++) {
        layer_padded *lp = &lm->pw[k];
        const int hd = lm->txl ? lm->hd : 0, hl = lm->txl ? lm->hl : 0;
        pad_shape(&lp->qkv, 3, hd, d, hl, dl, false);
        pad_shape(&lp->r, 1, hd, d, hl, dl, false);
        pad_shape(&lp->o, 1, d, hd, dl, hl, false);
        pad_shape(&lp->w1, 1, f, d, fp, dl, true);
        pad_shape(&lp->w2, 1, d, f, dl, fp, true);
        pad_shape(&lp->b2, 1, 1, d, 1, dl, false);
    }
    const int nc = l->n_clusters - 1;
    for (int c = 0; c < TT_MAX_CLUSTERS; c++) { /* with projections the clusters read h, packed */
        const int vc = c < l->n_clusters ? (int)(l->hi[c] - l->lo[c]) : 0;
        const int dc = c < l->n_clusters ? l->dim[c] : d;
        pad_shape(&lm->out[c], 1, vc, dc, vc, l->proj ? dc : dl, false);
    }
    pad_shape(&lm->cluster, 1, nc, d, nc, l->proj ? d : dl, false);
}

/* The padded weights one after the other (NULL past the last): each layer's qkv, r, o, W1, W2, b2,
 * then the output layer's clusters and the cluster weights; *ffn: W1 or W2, whose gradients run
 * on the weight gradients' stream (the side stream's, for the tensorized model). */
static padded *pad_at(tt_gpu_lm *lm, int i, bool *ffn)
{
    const int layers = lm->l->m.layers;
    *ffn = i < 6 * layers && (i % 6 == 3 || i % 6 == 4);
    if (i < 6 * layers) {
        layer_padded *lp = &lm->pw[i / 6];
        padded *const all[6] = {&lp->qkv, &lp->r, &lp->o, &lp->w1, &lp->w2, &lp->b2};
        return all[i % 6];
    }
    i -= 6 * layers;
    return i < TT_MAX_CLUSTERS ? &lm->out[i] : i == TT_MAX_CLUSTERS ? &lm->cluster : NULL;
}

/* The masters and gradients of the padded weights, once their views exist. */
static void pad_bind(tt_gpu_lm *lm)
{
    const tt_layout *l = lm->l;
    for (int k = 0; k < l->m.layers; k++) {
        layer_padded *lp = &lm->pw[k];
        const tt_layer_view *w = &lm->wv.layer[k], *g = &lm->gv.layer[k];
        lp->qkv.w = w->qkv, lp->qkv.g = g->qkv;
        lp->r.w = w->r_net, lp->r.g = g->r_net;
        lp->o.w = w->o, lp->o.g = g->o;
        lp->w1.w = w->ff1_w, lp->w1.g = g->ff1_w;
        lp->w2.w = w->ff2_w, lp->w2.g = g->ff2_w;
        lp->b2.w = w->ff2_b, lp->b2.g = g->ff2_b;
    }
    for (int c = 0; c < l->n_clusters; c++) lm->out[c].w = lm->wv.out_w[c], lm->out[c].g = lm->gv.out_w[c];
    lm->cluster.w = lm->wv.cluster_w, lm->cluster.g = lm->gv.cluster_w;
}

/* The most device memory the partials of deferred column sums may take (see defer_sums in
 * tt_gpu_lm): lm1b's body keeps 60 MB of them. */
#define TT_DEFERRED_SUMS_BYTES ((size_t)96 << 20)

/* Floats from a layer's parameters to the next layer's: the layout lays every layer's block out
 * alike, and the launches that cover every layer at once (the cores, the deferred column sums)
 * step by it; checked for each parameter they touch (a layout that breaks it is a bug here). */
static long long layer_stride(const tt_layout *l)
{
    static const char *const names[] = {
        "layers.%d.dec_attn.layer_norm.weight", "layers.%d.dec_attn.layer_norm.bias",
        "layers.%d.pos_ff.layer_norm.weight",   "layers.%d.pos_ff.layer_norm.bias",
        "layers.%d.pos_ff.CoreNet.3.bias",      "layers.%d.pos_ff.CoreNet.0.bias",
        "layers.%d.dec_attn.core_value"}; /* (Transformer-XL has no core) */
    long long stride = -1;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        for (int k = 1; k < l->m.layers; k++) {
            char a[96], b[96];
            snprintf(a, sizeof a, names[i], k - 1);
            snprintf(b, sizeof b, names[i], k);
            const tt_param *pa = tt_layout_find(l, a), *pb = tt_layout_find(l, b);
            if (!pa) break;
            TT_ASSERT(pb);
            const long long s = (long long)(pb->offset - pa->offset);
            if (stride < 0) stride = s;
            if (s != stride)
                tt_panic(__FILE__, __LINE__, "%s is %lld floats after layer %d's, not %lld", b, s,
                         k - 1, stride);
        }
    return stride < 0 ? 0 : stride;
}

/* The zeros past the parameter arrays' ends, so that the shards of a sharded optimizer
 * (tt_gpu_lm_shard) can all be 4 x (n_floats / 4 ranks, rounded up) long: up to 1024 ranks. */
#define TT_SHARD_SLACK 4096

static size_t l_floats_slack(const tt_gpu_lm *lm) { return lm->l->n_floats + TT_SHARD_SLACK; }

/* Where v starts after m, in floats: moment_floats rounded up to 256 bytes, as take() rounds
 * every arena buffer. n_floats is a multiple of 16 floats, so n_floats + TT_SHARD_SLACK put v
 * 64 bytes past a 256-byte boundary: adam, reading w, g, m and v at the same index, took 0.81
 * ms a wt103 step against 0.74 with v on a boundary (s31, one H200), the same bits. */
static size_t moment_stride(size_t floats) { return (floats + 63) / 64 * 64; }

/* Adam's moments, moment_floats each, zero. */
static void alloc_moments(tt_gpu_lm *lm)
{
    const size_t stride = moment_stride(lm->moment_floats);
    TT_CUDA(cudaMalloc((void **)&lm->m, 2 * stride * 4));
    TT_CUDA(cudaMemset(lm->m, 0, 2 * stride * 4));
    lm->v = lm->m + stride;
}

static void carve(tt_gpu_lm *lm, bump *b)
{
    const tt_layout *l = lm->l;
    const tt_model_spec *m = &l->m;
    const size_t rows = (size_t)lm->rows, d = (size_t)lm->dl, fp = (size_t)lm->fp, r = m->rank;
    const size_t n = m->seq_len, es = lm->es, nf = l->n_floats, pad = (size_t)lm->pad;
    const size_t nc = (size_t)l->n_clusters - 1;
    lm->w = take(b, (nf + TT_SHARD_SLACK) * 4);
    lm->g = take(b, (nf + TT_SHARD_SLACK) * 4);
    lm->wc = es == 4 ? lm->w : take(b, (nf + TT_SHARD_SLACK) * es);
    /* the padded copies, and the gradients' scratch: one on each stream they run on */
    size_t most[2] = {0, 0}; /* floats: the main stream's, the FFN's */
    padded *pd;
    bool ffn;
    int jobs = 0;
    for (int i = 0; (pd = pad_at(lm, i, &ffn)); i++) {
        const size_t cnt = (size_t)pd->blocks * pd->prow * pd->pcol;
        pd->copy = pad_needed(pd) ? take(b, cnt * es) : NULL;
        if (pd->copy) jobs += pd->blocks;
        if (pd->scratch && cnt > most[ffn]) most[ffn] = cnt;
    }
    lm->copy_njobs = jobs;
    lm->adam_pads = tt_env_long("TT_ADAM_PADS", 0, 1, 1) && jobs <= TT_ADAM_PAD_JOBS;
    lm->copy_jobs = jobs ? take(b, (size_t)jobs * TT_COPY_FIELDS * sizeof(long long)) : NULL;
    float *scr[2] = {most[0] ? take(b, most[0] * 4) : NULL, most[1] ? take(b, most[1] * 4) : NULL};
    for (int i = 0; (pd = pad_at(lm, i, &ffn)); i++) pd->scr = pd->scratch ? scr[ffn] : NULL;
    char *io = take(b, lm->io_bytes);
    lm->io = io;
    lm->step = io ? (unsigned long long *)(io + IO_STEP) : NULL;
    lm->sc = io ? (tt_adam_scalars *)(io + IO_SC) : NULL;
    lm->sums = io ? (double *)(io + IO_SUMS) : NULL;
    lm->guard = io ? (tt_step_guard *)(io + IO_GUARD) : NULL;
    lm->guard_last = take(b, 8);
    lm->tokens = io ? (int32_t *)(io + IO_TOKENS) : NULL;
    route_at(&lm->dev_route, io ? io + lm->io_route : NULL, l, rows, pad);
    lm->weight = take(b, rows * 4);
    const bool txl = lm->txl;
    const size_t hd = (size_t)lm->hl, dp = (size_t)lm->dpad, heads = txl ? (size_t)m->n_head : 0;
    const size_t kmax = (size_t)lm->kmax, bm = (size_t)lm->batch * (txl ? m->mem_len : 0);
    const size_t bk = (size_t)lm->batch * kmax;
    /* Transformer-XL's head-major tiles ([H][rows][dp] of the queries and the output, [H][B*kmax]
     * [dp] of the keys and values, [H][kmax][dp] of r) and its probabilities' [H*rows, kmax]
     * elements: each gradient takes its value's size */
    const size_t q_tile = heads * rows * dp * es, k_tile = heads * bk * dp * es;
    const size_t r_tile = heads * kmax * dp * es, probs = heads * rows * kmax;
    lm->x0 = take(b, rows * d * es);
    lm->pe = take(b, (txl ? kmax : n) * d * es);
    lm->ones = take(b, pad * es);
    float *const core_g = txl ? NULL : take(b, (size_t)m->layers * r * 4); /* every layer's g */
    for (int k = 0; k < m->layers; k++) {
        layer_acts *a = &lm->acts[k];
        a->qkv = take(b, rows * 3 * (txl ? hd : r) * es);
        if (txl) {
            a->kvm = take(b, bm * 2 * hd * es);
            a->qu = take(b, q_tile);
            a->qv = take(b, q_tile);
            a->tk = take(b, k_tile);
            a->tv = take(b, k_tile);
            a->rh = take(b, r_tile);
            if (lm->txl_fused) {
                a->oh = take(b, q_tile);
                a->lse = take(b, heads * rows * 4);
            } else {
                a->prob = take(b, probs * es);
                a->pdrop = take(b, probs * es);
            }
            a->om = take(b, rows * hd * es);
        } else {
            a->g = core_g ? core_g + (size_t)k * r : NULL;
            a->p = take(b, n * r * es);
        }
        a->y = take(b, rows * d * es);
        a->s1 = take(b, rows * d * es);
        a->x1 = take(b, rows * d * es);
        a->hd = take(b, rows * fp * es);
        a->f = take(b, rows * d * es);
        a->s2 = take(b, rows * d * es);
        a->x2 = take(b, rows * d * es);
        a->mean1 = take(b, rows * 4);
        a->rstd1 = take(b, rows * 4);
        a->mean2 = take(b, rows * 4);
        a->rstd2 = take(b, rows * 4);
    }
    lm->logits = take(b, logit_elements(lm) * es);
    /* the second set of the output layer's buffers: only where a second cluster would use it */
    const bool second = lm->out_beside && nc;
    lm->logits_b = second ? take(b, logit_elements(lm) * es) : NULL;
    lm->loss = take(b, (rows + nc * pad) * 4);
    lm->nll = take(b, (rows + nc * pad) * 4);
    if (nc) {
        lm->tail_x = take(b, pad * d * es);
        lm->tail_dx = take(b, pad * d * es);
        lm->tail_xb = second ? take(b, pad * d * es) : NULL;
    }
    if (l->proj) {
        lm->tail_hb = second ? take(b, pad * d * es) : NULL;
        lm->tail_h = take(b, pad * d * es);
        lm->tail_dh = take(b, pad * d * es);
        for (int c = 0; c < l->n_clusters; c++) lm->emb_e[c] = take(b, pad * (size_t)l->dim[c] * es);
        lm->emb_y = take(b, pad * d * 4);
        lm->emb_dy = take(b, pad * d * es);
        lm->emb_de = take(b, pad * d * es);
    }
    lm->dx = take(b, rows * d * es);
    lm->dres = take(b, rows * d * es);
    lm->dy = take(b, rows * d * es);
    lm->dyf = take(b, rows * d * es);
    lm->dqkv = take(b, rows * 3 * (txl ? hd : r) * es);
    lm->dff = take(b, rows * fp * es);
    if (txl) {
        for (int par = 0; par < 2; par++)
            for (int k = 0; k < m->layers; k++) lm->mem[par][k] = take(b, bm * d * es);
        lm->pe_tab = take(b, kmax * (size_t)m->d_model * 4);
        lm->r = take(b, kmax * hd * es);
        if (lm->txl_fused) {
            lm->ds = take(b, heads * rows * tt_txl_ds_pitch((int)kmax) * es);
            lm->uvpart = take(b, tt_txl_uv_part_floats(&lm->prog, lm->batch, (int)heads, (int)n) * 4);
            lm->dr_part = take(b, heads * (size_t)tt_txl_dr_splits(lm->batch) * kmax * dp * 4);
        } else {
            lm->ac = take(b, probs * 4);
            lm->bd = take(b, probs * 4);
            lm->dpd = take(b, probs * 4);
            lm->dac = take(b, probs * es);
            /* the fused kernels keep P'V a layer (a->oh), write the projections' gradients
             * themselves and sum dR into dr directly */
            lm->oh = take(b, q_tile);
            lm->dquh = take(b, q_tile);
            lm->dqvh = take(b, q_tile);
            lm->dkh = take(b, k_tile);
            lm->dvh = take(b, k_tile);
            lm->drh = take(b, r_tile);
        }
        lm->dbd = take(b, probs * es); /* rows klen apart (txl_attn_bwd) */
        lm->doh = take(b, q_tile);
        lm->dr = take(b, kmax * hd * es);
        lm->dkvm = take(b, bm * 2 * hd * es);
        lm->dom = take(b, rows * hd * es);
    } else {
        lm->dg = take(b, (size_t)m->layers * r * 4); /* every layer's dg, r apart */
        lm->dp = take(b, n * r * 4);
    }
    lm->ln_part = take(b, lm->ln_slot * (lm->defer_sums ? 2 * (size_t)m->layers : 1) * 4);
    lm->ffn_part = take(b, lm->ffn_slot * (lm->defer_sums ? (size_t)m->layers : 1) * 4);
    lm->mla_part = txl ? NULL : take(b, tt_mla_scratch_floats(&lm->prog, lm->batch) * 4);
    if (lm->mla_mat) { /* the materialized attention's buffers, carved in place */
        const bool key = m->position == TT_POS_KEY;
        const int bt = lm->batch, ni = (int)n, ri = (int)r;
        const int di = tt_mla_mat_tiles(&lm->prog) > 1 ? (int)m->d_model : 0; /* rows: tiles only */
        tt_mla_mat_bufs shared;
        /* without T's factors, G, E and their parts where nothing forms or reads them */
        const bool lean = tt_mla_mat_forms_t(&lm->prog) && tt_mla_mat_dt_mem(&lm->prog);
        size_t bytes = tt_mla_mat_carve_part(&shared, NULL, bt, ni, ri, di, key, es, false, lean);
        tt_mla_mat_carve_part(&shared, take(b, bytes), bt, ni, ri, di, key, es, false, lean);
        bytes = tt_mla_mat_carve_part(&shared, NULL, bt, ni, ri, di, key, es, true, lean);
        for (int k = 0; k < m->layers; k++) {
            if (k == 0 || lm->mat_keep)
                tt_mla_mat_carve_part(&shared, take(b, bytes), bt, ni, ri, di, key, es, true, lean);
            lm->acts[k].mat = shared;
        }
    }
    lm->keys = take(b, tt_embedding_keys(&lm->prog) * 8);
    lm->emb_part = take(b, tt_embedding_part_floats(&lm->prog) * 4);
    lm->cluster_part = tt_cluster_cols(&lm->prog) ? take(b, tt_cluster_cols_part_floats(&lm->prog) * 4) : NULL;
    lm->norm_part = take(b, tt_grad_norm_parts(&lm->prog) * 8);
    lm->blas_ws = take(b, TT_BLAS_WORKSPACE);
    lm->side_ws = take(b, TT_BLAS_WORKSPACE);
    lm->dp_c = es == 4 || txl ? NULL : take(b, n * r * es);
}

/* n floats from the host into dst of the storage type. */
static void upload_storage(tt_gpu_lm *lm, void *dst, const float *src, size_t n)
{
    if (lm->es == 4) {
        TT_CUDA(cudaMemcpy(dst, src, n * 4, cudaMemcpyHostToDevice));
        return;
    }
    uint16_t *h = tt_xmalloc(n * 2);
    for (size_t i = 0; i < n; i++) h[i] = tt_bf16_from_float(src[i]);
    TT_CUDA(cudaMemcpy(dst, h, n * 2, cudaMemcpyHostToDevice));
    free(h);
}

static void find_written(tt_gpu_lm *lm);

static void copy_jobs_init(tt_gpu_lm *lm);

int tt_gpu_lm_open(tt_gpu_lm **out, tt_gpu *gpu, const tt_spec *spec, const tt_layout *layout,
                   int batch, const tt_cache *cache, char *err, size_t errlen)
{
    const tt_model_spec *m = &layout->m;
    if (batch > spec->train.batch)
        return tt_errf(err, errlen, "batch %d is more than the spec's train.batch %d, which the "
                       "kernels are planned for", batch, spec->train.batch);
    tt_gpu_lm *lm = tt_xcalloc(1, sizeof *lm);
    lm->gpu = gpu;
    lm->cache = cache;
    lm->spec = spec;
    lm->l = layout;
    lm->batch = batch;
    lm->rows = batch * m->seq_len;
    lm->pad = (lm->rows + TT_ADAPTIVE_BUCKET - 1) / TT_ADAPTIVE_BUCKET * TT_ADAPTIVE_BUCKET;
    lm->es = spec->train.precision == TT_PREC_BF16 ? 2 : 4;
    lm->fp = (int)tt_row_pitch(m->d_inner);
    lm->txl = m->kind == TT_KIND_TXL;
    lm->dl = lm->txl ? (int)tt_row_pitch(m->d_model) : m->d_model;
    if (lm->txl) {
        lm->hd = m->n_head * m->d_head;
        lm->hl = (int)tt_row_pitch(lm->hd);
        lm->dpad = (int)tt_row_pitch(m->d_head);
        lm->kmax = m->mem_len + m->seq_len;
        for (int par = 0; par < 2; par++) lm->mem[par] = tt_xcalloc((size_t)m->layers, sizeof(void *));
    }
    if (tt_gpu_program_load(&lm->prog, spec, gpu, cache, err, errlen) != 0) {
        free(lm->mem[0]), free(lm->mem[1]), free(lm);
        return -1;
    }
    lm->mla_mat = !lm->txl && tt_mla_materialized(&lm->prog);
    lm->ln_sums = !lm->txl && !lm->mla_mat && tt_mla_ln_sums(&lm->prog) &&
                  tt_env_long("TT_LN_SUMS", 0, 1, 1);
    /* a T a layer: the backward reads the forward's instead of forming it again (the same bits;
     * TT_MAT_KEEP=0 or too little device memory for it: one T the layers share) */
    lm->mat_keep = lm->mla_mat && tt_env_long("TT_MAT_KEEP", 0, 1, 1);
    lm->txl_fused = lm->txl && tt_txl_fused(&lm->prog);
    tt_gemm_init(&lm->gemm, gpu, spec->train.precision);
    char *tuning = cache ? tt_tuning_path(cache->dir) : NULL;
    tt_gemm_record(&lm->gemm, tuning);
    free(tuning);
    lm->acts = tt_xcalloc((size_t)m->layers, sizeof *lm->acts);
    lm->pw = tt_xcalloc((size_t)m->layers, sizeof *lm->pw);
    pad_shapes(lm);
    const size_t route_bytes = route_at(&lm->host_route, NULL, layout, (size_t)lm->rows, (size_t)lm->pad);
    lm->io_route = IO_TOKENS + ((size_t)lm->rows * 4 + 255) / 256 * 256;
    lm->io_bytes = (lm->io_route + route_bytes + 255) / 256 * 256;
    TT_CUDA(cudaMallocHost((void **)&lm->io_hosts[0], 2 * lm->io_bytes));
    memset(lm->io_hosts[0], 0, 2 * lm->io_bytes);
    lm->io_hosts[1] = lm->io_hosts[0] + lm->io_bytes;
    lm->io_host = lm->io_hosts[0];
    route_at(&lm->host_route, lm->io_host + lm->io_route, layout, (size_t)lm->rows, (size_t)lm->pad);
    for (int k = 0; k < 2; k++)
        TT_CUDA(cudaEventCreateWithFlags(&lm->io_done[k], cudaEventDisableTiming));
    lm->first_bad = -1;
    lm->layer_stride = layer_stride(layout);
    lm->ln_slot = 3 * (size_t)TT_LN_BWD_MAX_BLOCKS * lm->dl;
    lm->ffn_slot = tt_ffn_act_bwd_part_floats(&lm->prog);
    lm->defer_sums = tt_env_long("TT_DEFER_SUMS", 0, 1, 1) &&
                     (2 * lm->ln_slot + lm->ffn_slot) * (size_t)m->layers * 4 <= TT_DEFERRED_SUMS_BYTES;
    lm->side = tt_env_long("TT_CUDA_SIDE", 0, 1, 1) ? &gpu->side : NULL;
    lm->tail_side = tt_env_long("TT_TAIL_SIDE", 0, 1, 1);
    lm->zero_side = tt_env_long("TT_ZERO_SIDE", 0, 1, 1);
    lm->out_beside = lm->side && tt_env_long("TT_OUTPUT_SIDE", 0, 1, 1);
    bump b = {0};
    carve(lm, &b);
    size_t free_b = 0, total_b = 0;
    TT_CUDA(cudaMemGetInfo(&free_b, &total_b));
    if (lm->out_beside && b.used > free_b) { /* the second set of buffers does not fit: one set */
        lm->out_beside = false;
        b = (bump){0};
        carve(lm, &b);
    }
    if (lm->mat_keep && b.used > free_b) {
        lm->mat_keep = false;
        b = (bump){0};
        carve(lm, &b);
    }
    /* Adam's moments in an allocation of their own, which a sharded optimizer replaces by its
     * shards (tt_gpu_lm_shard) */
    lm->moment_floats = l_floats_slack(lm);
    lm->bytes = b.used + 2 * moment_stride(lm->moment_floats) * 4;
    if (lm->bytes > free_b) {
        tt_errf(err, errlen, "%s needs %.2f GiB of device memory for batch %d; %s has %.2f GiB free "
                "of %.2f: lower train.batch (or seq_len, d_inner, the vocabulary)", spec->path,
                lm->bytes / 1073741824.0, batch, gpu->name, free_b / 1073741824.0,
                total_b / 1073741824.0);
        tt_gpu_lm_close(lm);
        return -1;
    }
    TT_CUDA(cudaMalloc((void **)&lm->arena, b.used)); /* lm->bytes counts the moments too */
    /* zero: the padding of every copy and activation stays so (nothing writes it but the
     * products, with zeros: see padded) */
    TT_CUDA(cudaMemset(lm->arena, 0, b.used));
    alloc_moments(lm);
    b = (bump){lm->arena, 0};
    carve(lm, &b);
    TT_CUBLAS(cublasCreate(&lm->blas));
    TT_CUBLAS(cublasSetStream(lm->blas, gpu->stream));
    TT_CUBLAS(cublasSetWorkspace(lm->blas, lm->blas_ws, TT_BLAS_WORKSPACE));
    lm->gemm.h = lm->blas;
    tt_gemm_set_workspace(&lm->gemm, lm->blas_ws, TT_BLAS_WORKSPACE);
    const char *graphs = getenv("TT_CUDA_GRAPH");
    lm->graphs = !(graphs && !strcmp(graphs, "0"));
    lm->max_graphs = (int)tt_env_long("TT_CUDA_GRAPHS", 1, TT_MAX_GRAPHS, TT_MAX_GRAPHS);
    TT_CUBLAS(cublasCreate(&lm->side_blas));
    TT_CUBLAS(cublasSetStream(lm->side_blas, gpu->side.stream));
    TT_CUBLAS(cublasSetWorkspace(lm->side_blas, lm->side_ws, TT_BLAS_WORKSPACE));
    tt_gemm_beside(&lm->gemm_side, &lm->gemm, lm->side_blas, gpu->side.stream, lm->side_ws,
                   TT_BLAS_WORKSPACE);
    for (int c = 0; c < TT_MAX_CLUSTERS && lm->out_beside; c++)
        TT_CUDA(cudaEventCreateWithFlags(&lm->out_done[c], cudaEventDisableTiming));
    tt_view_make(layout, lm->w, &lm->wv);
    tt_view_make(layout, lm->g, &lm->gv);
    find_written(lm);
    pad_bind(lm);
    copy_jobs_init(lm); /* once the padded weights know their masters */
    /* constants in the storage type: ones (bias products), the sinusoids of positions N-1 .. 0 */
    const int n = m->seq_len, d = m->d_model;
    float *h = tt_xmalloc((size_t)(lm->pad > n * d ? lm->pad : n * d) * sizeof *h);
    for (int i = 0; i < lm->pad; i++) h[i] = 1.f;
    upload_storage(lm, lm->ones, h, (size_t)lm->pad);
    if (lm->txl) { /* the sinusoids of distances kmax-1 .. 0, clamped: each run reads a suffix */
        float *t = tt_xmalloc((size_t)lm->kmax * d * sizeof *t);
        cpu_txl_pos_emb(t, lm->kmax, d, m->clamp_len);
        TT_CUDA(cudaMemcpy(lm->pe_tab, t, (size_t)lm->kmax * d * 4, cudaMemcpyHostToDevice));
        free(t);
    } else {
        float *pos = tt_xmalloc((size_t)n * sizeof *pos);
        for (int j = 0; j < n; j++) pos[j] = (float)(n - 1 - j);
        cpu_sinusoid(h, pos, n, d);
        upload_storage(lm, lm->pe, h, (size_t)n * d);
        free(pos);
    }
    free(h);
    *out = lm;
    return 0;
}

/* Every captured step destroyed (its slot free for the next capture). */
static void drop_graphs(tt_gpu_lm *lm)
{
    for (int i = 0; i < TT_MAX_GRAPHS; i++)
        if (lm->graph[i].exec) {
            TT_CUDA(cudaGraphExecDestroy(lm->graph[i].exec));
            lm->graph[i].exec = NULL;
        }
}

void tt_gpu_lm_close(tt_gpu_lm *lm)
{
    if (!lm) return;
    if (lm->npend) TT_CUDA(cudaStreamSynchronize(lm->gpu->stream)); /* steps never waited for */
    drop_graphs(lm);
    if (lm->arena) {
        if (lm->blas) TT_CUBLAS(cublasDestroy(lm->blas)); /* its workspace goes with the arena */
        if (lm->side_blas) TT_CUBLAS(cublasDestroy(lm->side_blas));
        for (int c = 0; c < TT_MAX_CLUSTERS; c++)
            if (lm->out_done[c]) cudaEventDestroy(lm->out_done[c]);
        tt_gemm_set_workspace(&lm->gemm, NULL, 0);
        cudaFree(lm->arena);
        cudaFree(lm->m);
    }
    tt_gemm_free(&lm->gemm);
    tt_view_free(&lm->wv);
    tt_view_free(&lm->gv);
    tt_gpu_program_free(&lm->prog);
    free(lm->acts);
    free(lm->pw);
    if (lm->io_hosts[0]) cudaFreeHost(lm->io_hosts[0]);
    for (int k = 0; k < 2; k++)
        if (lm->io_done[k]) cudaEventDestroy(lm->io_done[k]);
    free(lm->written_at), free(lm->written_len), free(lm->zero_at), free(lm->zero_len);
    if (lm->comm_ev) {
        for (int e = 0; e < 2 * lm->l->m.layers + TT_COMM_EVENTS; e++) cudaEventDestroy(lm->comm_ev[e]);
        cudaStreamDestroy(lm->comm_stream);
        cudaFree(lm->gtokens), cudaFree(lm->gkeys), cudaFree(lm->gdx);
        cudaFree(lm->gh);
        tt_sum_parts_free(&lm->parts);
    }
    free(lm->comm_ev);
    free(lm->mem[0]);
    free(lm->mem[1]);
    free(lm);
}

float *tt_gpu_lm_weights(tt_gpu_lm *lm) { return lm->w; }

/* The storage-type copy of a parameter that the products and mla kernels read. */
static const void *wcp(const tt_gpu_lm *lm, const float *master)
{
    return (const char *)lm->wc + (size_t)(master - lm->w) * lm->es;
}

/* What the products read of a padded weight: [blocks][prow][pcol], pcol apart (the extent of
 * their contraction over its columns). */
static const void *pad_src(const tt_gpu_lm *lm, const padded *pd)
{
    return pd->copy ? pd->copy : wcp(lm, pd->w);
}
/* Block i of it. */
static const void *pad_block(const tt_gpu_lm *lm, const padded *pd, int i)
{
    return (const char *)pad_src(lm, pd) + (size_t)i * pd->prow * pd->pcol * lm->es;
}

/* refresh_padded's table, once the arena is carved: a job for each block of each padded copy,
 * its rows from wc's packed [rows, cols] to the copy's [prow][pcol] (the padding left zero). */
static void copy_jobs_init(tt_gpu_lm *lm)
{
    if (!lm->copy_njobs) return;
    const size_t es = lm->es;
    long long *t = tt_xmalloc((size_t)lm->copy_njobs * TT_COPY_FIELDS * sizeof *t);
    int j = 0;
    lm->copy_rows_max = 0;
    const padded *pd;
    bool ffn;
    for (int i = 0; (pd = pad_at(lm, i, &ffn)); i++) {
        if (!pd->copy) continue;
        for (int blk = 0; blk < pd->blocks; blk++, j++)
            tt_copy_job(t + (size_t)j * TT_COPY_FIELDS,
                        (char *)pd->copy + (size_t)blk * pd->prow * pd->pcol * es,
                        (size_t)pd->pcol * es,
                        (const char *)wcp(lm, pd->w) + (size_t)blk * pd->rows * pd->cols * es,
                        (size_t)pd->cols * es, (size_t)pd->cols * es, pd->rows);
        if (pd->rows > lm->copy_rows_max) lm->copy_rows_max = pd->rows;
    }
    TT_ASSERT(j == lm->copy_njobs);
    tt_copy_jobs_for_adam(t, j); /* copy_rows takes the jobs in any order, Adam in this one */
    TT_CUDA(cudaMemcpy(lm->copy_jobs, t, (size_t)j * TT_COPY_FIELDS * sizeof *t,
                       cudaMemcpyHostToDevice));
    free(t);
}

/* Every padded copy from wc, on the stream: after every write of wc (the host's weights cast,
 * each Adam step), so that the products never read a stale one. One copy_rows launch for all of
 * them (a memory copy node each had cost 80 nodes a txl-wt103-base step). */
static void refresh_padded(tt_gpu_lm *lm)
{
    if (lm->copy_njobs)
        tt_copy_rows(&lm->prog, lm->gpu->stream, lm->copy_jobs, lm->copy_njobs, lm->copy_rows_max);
}

/* The gradient of blocks [blk, blk + nb) of a padded weight from a product over `rows` rows:
 * dW = dy^T x (dy's columns the blocks' rows, x's the weight's columns, as the products see
 * them). Into the gradient itself (beta: 1 adds, as the gradients zeroed at the start of a step
 * expect; 0 for a first writer), or into its scratch (the first product of a weight writes it,
 * later ones add) for pad_commit to copy. */
static void pad_dw(const tt_gemm *g, const padded *pd, int blk, int nb, bool first, float beta,
                   const void *dy, int ldy, const void *x, int ldx, int rows)
{
    if (pd->scratch)
        tt_gemm_bwd_w_ld(g, pd->scr + (size_t)blk * pd->prow * pd->pcol, first ? 0.f : 1.f, dy, ldy,
                         x, ldx, rows, pd->pcol, nb * pd->prow);
    else
        tt_gemm_bwd_w_ld(g, pd->g + (size_t)blk * pd->rows * pd->cols, beta, dy, ldy, x, ldx, rows,
                         pd->cols, nb * pd->rows);
}

/* The scratch's gradient into the master's (overwriting it: the scratch holds the whole step's),
 * on g's stream, after the products pad_dw queued there. */
static void pad_commit(const tt_gemm *g, const padded *pd)
{
    if (!pd->scratch) return;
    for (int blk = 0; blk < pd->blocks; blk++)
        TT_CUDA(cudaMemcpy2DAsync(pd->g + (size_t)blk * pd->rows * pd->cols, (size_t)pd->cols * 4,
                                  pd->scr + (size_t)blk * pd->prow * pd->pcol, (size_t)pd->pcol * 4,
                                  (size_t)pd->cols * 4, (size_t)pd->rows, cudaMemcpyDeviceToDevice,
                                  g->stream));
}

void tt_gpu_lm_weights_changed(tt_gpu_lm *lm)
{
    if (lm->es != 4) tt_cast(&lm->prog, lm->gpu->stream, lm->wc, lm->w, (long)lm->l->n_floats);
    refresh_padded(lm);
    TT_CUDA(cudaStreamSynchronize(lm->gpu->stream));
}
float *tt_gpu_lm_grads(tt_gpu_lm *lm) { return lm->g; }
float *tt_gpu_lm_moments(tt_gpu_lm *lm, int which)
{
    TT_ASSERT(!lm->shard_len); /* a shard's are not the whole arrays: tt_gpu_lm_moments_io */
    return which ? lm->v : lm->m;
}
size_t tt_gpu_lm_bytes(const tt_gpu_lm *lm) { return lm->bytes; }
size_t tt_gpu_lm_moment_bytes(const tt_gpu_lm *lm) { return 2 * moment_stride(lm->moment_floats) * 4; }

/* Dropout site `site` of the run o at rate p, whose elements are `width` a position (the
 * numbering continues from where the batch's first sequence starts in the whole batch: seq0
 * sequences of seq_len positions; 0: a site the sequences share, pos_emb's). */
static tt_dropout drop_at(const tt_gpu_lm *lm, const tt_lm_opts *o, float p, uint32_t site,
                          unsigned long long width)
{
    return (tt_dropout){o->train ? p : 0.f, o->seed, lm->step, site,
                        (unsigned long long)o->seq0 * lm->l->m.seq_len * width};
}

/* tt_gpu_lm_profile's marks: mark i, a launch of templates/prof_mark.cu, writes the clock to
 * stamps[i] when the part of role[i] before it has completed (mark 0 starts the step). */
#define TT_PROF_MARKS 2048
struct prof_marks {
    tt_gpu_program prog; /* tt_plan_profile_marks's one kernel */
    unsigned long long *stamps; /* device, TT_PROF_MARKS */
    unsigned char role[TT_PROF_MARKS], bwd[TT_PROF_MARKS];
    int n;
    bool in_bwd;
};

/* The work queued on the main stream since the last mark was role's (nothing without a
 * profile). */
static void mark(tt_gpu_lm *lm, tt_prof_role role)
{
    struct prof_marks *pm = lm->prof;
    if (!pm) return;
    TT_ASSERT(pm->n < TT_PROF_MARKS);
    pm->role[pm->n] = (unsigned char)role;
    pm->bwd[pm->n] = pm->in_bwd;
    int slot = pm->n++;
    void *args[] = {&pm->stamps, &slot};
    tt_gpu_launch(&pm->prog.kernels[0], (dim3){1, 1, 1}, args, lm->gpu->stream);
}

/* Pads a list of m rows (and, for a tail, their targets and weights) with -1 (and 0) up to the
 * next multiple of TT_ADAPTIVE_BUCKET; returns that length. */
static int pad_list(int32_t *rows, int32_t *target, float *weight, int m)
{
    const int len = (m + TT_ADAPTIVE_BUCKET - 1) / TT_ADAPTIVE_BUCKET * TT_ADAPTIVE_BUCKET;
    for (int i = m; i < len; i++) {
        rows[i] = -1;
        if (target) target[i] = 0, weight[i] = 0.f;
    }
    return len;
}

/* Routes a batch on the host, which has its tokens and targets before the step runs: each row's
 * target column in the head (cpu_model.c's: the word itself in cluster 0, else the column of its
 * tail cluster), the rows each tail cluster scores (a row of weight 0 is scored by none, as the CPU
 * skips it) and, with div_val > 1, the rows each cluster of the embedding takes (every row). */
static void route_batch(tt_gpu_lm *lm, const int32_t *inputs, const int32_t *targets,
                        const float *weight)
{
    const tt_layout *l = lm->l;
    const int nc = l->n_clusters - 1;
    route *h = &lm->host_route;
    int m[TT_MAX_CLUSTERS] = {0};
    for (int r = 0; r < lm->rows; r++) {
        const long t = targets[r];
        const int c = tt_cluster_of(l, t);
        h->head[r] = (int32_t)(c == 0 ? t : l->hi[0] + nc - c);
        if (c == 0 || (weight && weight[r] == 0)) continue;
        h->rows[c][m[c]] = r;
        h->target[c][m[c]] = (int32_t)(t - l->lo[c]);
        h->weight[c][m[c]++] = weight ? weight[r] : 1.f;
    }
    memset(&lm->counts, 0, sizeof lm->counts);
    for (int c = 1; c <= nc; c++)
        lm->counts.tail[c] = m[c] ? pad_list(h->rows[c], h->target[c], h->weight[c], m[c]) : 0;
    if (!l->proj) return;
    memset(m, 0, sizeof m);
    for (int r = 0; r < lm->rows; r++) {
        const int c = tt_cluster_of(l, inputs[r]);
        h->emb_pos[r] = m[c];
        h->emb_rows[c][m[c]++] = r;
    }
    for (int c = 0; c <= nc; c++)
        lm->counts.emb[c] = m[c] ? pad_list(h->emb_rows[c], NULL, NULL, m[c]) : 0;
}

/* The io block up, or its range [from, to) (see IO_STEP). The host writes io_host again only after
 * the stream has passed this copy: a run, Adam alone and tt_gpu_lm_profile wait for their stream
 * before they return; a submitted training step's block is written again only after its event
 * (tt_gpu_lm_train_submit fills the other block while one step is in flight). A new caller must
 * keep to one of the two. */
static void io_up(tt_gpu_lm *lm, size_t from, size_t to)
{
    TT_CUDA(cudaMemcpyAsync(lm->io + from, lm->io_host + from, to - from, cudaMemcpyHostToDevice,
                            lm->gpu->stream));
}

/* The batch into the io block's host side (its upload is the caller's: io_up); the weights, where
 * given, up. Returns the sum of the rows' weights. */
static double upload_inputs(tt_gpu_lm *lm, const int32_t *inputs, const int32_t *targets,
                            const tt_lm_opts *o)
{
    const cudaStream_t st = lm->gpu->stream;
    const int rows = lm->rows;
    memcpy(lm->io_host + IO_TOKENS, inputs, (size_t)rows * 4);
    route_batch(lm, inputs, targets, o->weight);
    if (o->weight)
        TT_CUDA(cudaMemcpyAsync(lm->weight, o->weight, (size_t)rows * 4, cudaMemcpyHostToDevice, st));
    const unsigned long long step = o->step;
    memcpy(lm->io_host + IO_STEP, &step, sizeof step);
    double weights = 0;
    for (int i = 0; i < rows; i++) weights += o->weight ? o->weight[i] : 1.0;
    return weights;
}

/* The embedding (MODEL.md section 2): x0 = dropout(embedding * sqrt(D)), or with bwd its backward
 * from dx = d loss / d x0 into the tables (and projections), each word's rows in row order. One
 * table (div_val 1), or cluster by cluster the table rows of the rows route_batch listed,
 * projected by cuBLAS and scattered into x0. */
static void enqueue_embedding(tt_gpu_lm *lm, const tt_lm_opts *o, bool bwd)
{
    const tt_layout *l = lm->l;
    const tt_gpu_program *p = &lm->prog;
    const cudaStream_t st = lm->gpu->stream;
    const tt_dropout drop = drop_at(lm, o, (float)l->m.dropout, 0, l->m.d_model);
    const int rows = lm->rows, d = l->m.d_model, dl = lm->dl;
    if (!l->proj) {
        if (bwd)
            tt_embedding_bwd(p, st, lm->gv.emb[0], lm->keys, lm->emb_part, lm->dx, rows, d, dl,
                             (int)l->vocab, drop);
        else
            tt_embedding_fwd(p, st, lm->x0, lm->wv.emb[0], lm->tokens, rows, d, dl, (int)l->vocab,
                             drop);
        return;
    }
    for (int c = 0; c < l->n_clusters; c++) {
        const int m = lm->counts.emb[c], dim = l->dim[c];
        const int32_t *listed = lm->dev_route.emb_rows[c];
        const long lo = l->lo[c], vc = l->hi[c] - l->lo[c];
        const void *proj = wcp(lm, lm->wv.emb_proj[c]);
        if (!m) continue;
        if (!bwd) { /* x0[listed] = dropout((E_c rows) P_c^T * sqrt(D)) */
            tt_adaptive_emb_gather(p, st, lm->emb_e[c], lm->wv.emb[c], lm->tokens, listed, m, lo,
                                   vc, dim);
            tt_gemm_fwd(&lm->gemm, lm->emb_y, true, lm->emb_e[c], proj, m, dim, d, 0.f);
            tt_adaptive_emb_scatter(p, st, lm->x0, lm->emb_y, listed, m, d, dl, drop);
            continue;
        }
        tt_adaptive_emb_grad(p, st, lm->emb_dy, lm->dx, listed, m, d, dl, drop);
        tt_gemm_bwd_w(&lm->gemm, lm->gv.emb_proj[c], lm->emb_dy, lm->emb_e[c], m, dim, d);
        tt_gemm_bwd_x(&lm->gemm, lm->emb_de, lm->emb_dy, proj, m, dim, d, 0.f);
        tt_adaptive_emb_bwd(p, st, lm->gv.emb[c], lm->keys, lm->emb_part, lm->emb_de,
                            lm->dev_route.emb_pos, rows, lo, vc, dim);
    }
}

/* logits y [rows, out] (the storage type, ld apart, from the start of a row) = x [rows, in] w^T +
 * 1 b^T, the bias (its storage-type copy) added in cuBLASLt's epilogue; w the cluster's padded
 * weight (in: its padded width), x's rows ldx apart. bf16 logits, as PyTorch's autocast leaves
 * them: half the bytes of fp32 to write and for tt_xent to read (the wt103 step's tail of
 * 160,000 words, 704 rows: 450 MB in fp32), while tt_xent's sums stay fp32. */
static void logits_fwd(tt_gpu_lm *lm, void *y, int ld, const void *x, int ldx, const padded *w,
                       const float *b, int rows, int out)
{
    tt_gemm_fwd_bias(&lm->gemm, y, false, ld, x, ldx, pad_src(lm, w), w->pcol, wcp(lm, b), rows,
                     w->pcol, out);
}

/* Its backward from dy (the storage type, ld apart): dw and db written, not added (the output
 * layer's weights are its first writer in a step: zero_grads leaves them out; the tied embedding's
 * backward adds into them later), by gw's products (see out_gemm); dx = dy w + beta dx (dx's rows
 * ldx apart, as x's) on the main stream. */
static void logits_bwd(tt_gpu_lm *lm, const tt_gemm *gw, void *dx, float beta, const void *dy,
                       int ld, const void *x, int ldx, const padded *w, float *db, int rows, int out)
{
    pad_dw(gw, w, 0, 1, true, 0.f, dy, ld, x, ldx, rows);
    pad_commit(gw, w);
    tt_gemm_bias_grad(gw, db, dy, ld, lm->ones, rows, out);
    tt_gemm_bwd_x_ld(&lm->gemm, dx, ldx, dy, ld, pad_src(lm, w), w->pcol, rows, w->pcol, out,
                     beta);
}

/* The head's cluster logits, one column per tail cluster after the shortlist's c0 columns: their
 * block starts c0 columns into a row, an address of any alignment (4 bytes for bf16 logits when
 * c0 = 50). Where the plan has them, cluster_cols.cu's kernels (one launch forward, two back,
 * the gradients added into); else cuBLAS's: the bias a rank-1 product with ones (the storage
 * type's, and the bias's storage-type copy), and so its gradient, added into, as cuBLASLt's
 * epilogues are not documented to have an algorithm for such an address. */
static void cluster_logits_fwd(tt_gpu_lm *lm, void *y, int ld, const void *x, int ldx, int rows)
{
    const padded *w = &lm->cluster;
    const int nc = lm->l->n_clusters - 1;
    if (lm->cluster_part) {
        tt_cluster_cols_fwd(&lm->prog, lm->gpu->stream, y, ld, x, ldx, pad_src(lm, w), w->pcol,
                            wcp(lm, lm->wv.cluster_b), rows, nc, lm->l->m.d_model);
        return;
    }
    tt_gemm_fwd_ld(&lm->gemm, y, false, ld, x, ldx, pad_src(lm, w), w->pcol, rows, w->pcol, nc,
                   0.f);
    tt_gemm_fwd_ld(&lm->gemm, y, false, ld, lm->ones, 1, wcp(lm, lm->wv.cluster_b), 1, rows, 1, nc,
                   1.f);
}
static void cluster_logits_bwd(tt_gpu_lm *lm, const tt_gemm *gw, void *dx, const void *dy, int ld,
                               const void *x, int ldx, int rows)
{
    const padded *w = &lm->cluster;
    const int nc = lm->l->n_clusters - 1;
    if (lm->cluster_part) { /* on the main stream, after the head's product wrote dx */
        tt_cluster_cols_bwd(&lm->prog, lm->gpu->stream, dx, ldx, lm->gv.cluster_w, lm->gv.cluster_b,
                            lm->cluster_part, dy, ld, x, pad_src(lm, w), w->pcol, rows, nc,
                            lm->l->m.d_model);
        return;
    }
    pad_dw(gw, w, 0, 1, true, 1.f, dy, ld, x, ldx, rows);
    pad_commit(gw, w);
    tt_gemm_bwd_w_ld(gw, lm->gv.cluster_b, 1.f, dy, ld, lm->ones, 1, rows, 1, nc);
    tt_gemm_bwd_x_ld(&lm->gemm, dx, ldx, dy, ld, pad_src(lm, w), w->pcol, rows, w->pcol, nc, 1.f);
}

/* h = x P (P [D, dc]: a cluster's projection, div_val > 1; cpu_model.c's cluster_input; x's rows
 * ldx apart, h packed), and its backward: dP += x^T dh, dx = dh P^T. */
static void proj_fwd(tt_gpu_lm *lm, void *h, const void *x, int ldx, const float *proj, int rows,
                     int dc)
{
    tt_gemm_bwd_x_ld(&lm->gemm, h, dc, x, ldx, wcp(lm, proj), dc, rows, dc, lm->l->m.d_model, 0.f);
}
static void proj_bwd(tt_gpu_lm *lm, void *dx, int ldx, float *dproj, const float *proj,
                     const void *x, const void *dh, int rows, int dc)
{
    const int d = lm->l->m.d_model;
    tt_gemm_bwd_w_ld(&lm->gemm, dproj, 1.f, x, ldx, dh, dc, rows, dc, d);
    tt_gemm_fwd_ld(&lm->gemm, dx, false, ldx, dh, dc, wcp(lm, proj), dc, rows, dc, d, 0.f);
}

static void reduce_cluster(tt_gpu_lm *lm, int c);

/* Where a weight of the output layer has its gradient's products: beside (on the side stream)
 * unless its gradient goes through a scratch, which the main stream's products share. */
static const tt_gemm *out_gemm(const tt_gpu_lm *lm, bool beside, const padded *w)
{
    return beside && !w->scratch ? &lm->gemm_side : &lm->gemm;
}

/* The output layer's buffers of cluster c: its slot's (see out_beside). Before cluster c writes
 * them, cluster c - 2's gradients (which read the same slot) have ended. */
static void out_slot(tt_gpu_lm *lm, bool beside, int c, void **logits, void **tail_x, void **tail_h)
{
    const int s = beside ? c % 2 : 0;
    *logits = s ? lm->logits_b : lm->logits;
    *tail_x = s ? lm->tail_xb : lm->tail_x;
    *tail_h = s ? lm->tail_hb : lm->tail_h;
    if (beside && c >= 2) TT_CUDA(cudaStreamWaitEvent(lm->gpu->stream, lm->out_done[c - 2], 0));
}

/* The output layer and the loss, as cpu_model.c's output_layer: the head (the shortlist and a
 * column per tail cluster; without cutoffs, the whole vocabulary) for every row, then each tail
 * cluster for the rows route_batch listed. With grads, each part's backward comes right after its
 * loss (so one logits buffer serves all), the head's writing dx and the tails' adding into it.
 * With parts (several GPUs), each cluster's weight gradients are summed over the ranks as soon as
 * its backward has written them (a cluster without rows in this rank's batch too, as the others
 * may have some: every rank makes the same calls in the same order). */
static void enqueue_output(tt_gpu_lm *lm, const tt_lm_opts *o, bool grads, bool parts,
                           float scale, const void *x)
{
    const tt_layout *l = lm->l;
    const tt_gpu_program *p = &lm->prog;
    const cudaStream_t st = lm->gpu->stream;
    const tt_view *w = &lm->wv, *g = &lm->gv;
    const route *rt = &lm->dev_route;
    const int rows = lm->rows, d = l->m.d_model, dl = lm->dl, nc = l->n_clusters - 1;
    const int c0 = (int)l->hi[0], cols = c0 + nc, ldh = logit_ld(cols);

    /* the clusters' weight gradients beside the chain to dx (not with parts: their sums wait on
     * the main stream; nor without the side stream, as tt_gpu_lm_profile's one stream runs) */
    const bool beside = grads && !parts && lm->side && lm->out_beside;
    void *logits, *tail_x, *tail_h;
    out_slot(lm, beside, 0, &logits, &tail_x, &tail_h);
    const void *h0 = x; /* the head's input, its rows ld0 apart */
    int ld0 = dl;
    if (l->proj) {
        proj_fwd(lm, tail_h, x, dl, w->out_proj[0], rows, d);
        h0 = tail_h, ld0 = d;
    }
    logits_fwd(lm, logits, ldh, h0, ld0, &lm->out[0], w->out_b[0], rows, c0);
    if (nc) cluster_logits_fwd(lm, (char *)logits + (size_t)c0 * lm->es, ldh, h0, ld0, rows);
    /* cpu_model.c smooths the head alone (and the spec allows no smoothing with cutoffs) */
    tt_xent(p, st, lm->loss, lm->nll, logits, rt->head, o->weight ? lm->weight : NULL, rows,
            cols, ldh, o->label_smoothing, scale, grads);
    if (grads) { /* tt_xent left dlogits over the logits */
        void *dh0 = l->proj ? lm->tail_dh : lm->dx;
        if (beside) tt_gpu_fork(lm->side, st);
        logits_bwd(lm, out_gemm(lm, beside, &lm->out[0]), dh0, 0.f, logits, ldh, h0, ld0,
                   &lm->out[0], g->out_b[0], rows, c0);
        if (nc)
            cluster_logits_bwd(lm, out_gemm(lm, beside, &lm->cluster), dh0,
                               (const char *)logits + (size_t)c0 * lm->es, ldh, h0, ld0, rows);
        if (beside) TT_CUDA(cudaEventRecord(lm->out_done[0], lm->side->stream));
        if (l->proj)
            proj_bwd(lm, lm->dx, dl, g->out_proj[0], w->out_proj[0], x, lm->tail_dh, rows, d);
        if (parts) reduce_cluster(lm, 0);
    }
    int scored = rows; /* per-row losses so far: the head's, then each tail's list */
    for (int c = 1; c <= nc; c++) {
        const int m = lm->counts.tail[c], dc = l->dim[c], vc = (int)(l->hi[c] - l->lo[c]);
        const int ldt = logit_ld(vc);
        if (!m) {
            if (beside) TT_CUDA(cudaEventRecord(lm->out_done[c], lm->side->stream));
            if (parts) reduce_cluster(lm, c);
            continue;
        }
        out_slot(lm, beside, c, &logits, &tail_x, &tail_h);
        tt_adaptive_gather(p, st, tail_x, x, rt->rows[c], m, d, dl);
        const void *hc = tail_x;
        int ldc = dl;
        if (l->proj) {
            proj_fwd(lm, tail_h, tail_x, dl, w->out_proj[c], m, dc);
            hc = tail_h, ldc = dc;
        }
        logits_fwd(lm, logits, ldt, hc, ldc, &lm->out[c], w->out_b[c], m, vc);
        tt_xent(p, st, lm->loss + scored, lm->nll + scored, logits, rt->target[c],
                rt->weight[c], m, vc, ldt, 0.f, scale, grads);
        scored += m;
        if (!grads) continue;
        void *dhc = l->proj ? lm->tail_dh : lm->tail_dx;
        if (beside) tt_gpu_fork(lm->side, st);
        logits_bwd(lm, out_gemm(lm, beside, &lm->out[c]), dhc, 0.f, logits, ldt, hc, ldc,
                   &lm->out[c], g->out_b[c], m, vc);
        if (beside) TT_CUDA(cudaEventRecord(lm->out_done[c], lm->side->stream));
        if (l->proj)
            proj_bwd(lm, lm->tail_dx, dl, g->out_proj[c], w->out_proj[c], tail_x, lm->tail_dh, m,
                     dc);
        tt_adaptive_scatter_add(p, st, lm->dx, lm->tail_dx, rt->rows[c], m, d, dl);
        if (parts) reduce_cluster(lm, c);
    }
    tt_xent_sum(p, st, lm->sums, lm->loss, lm->nll, scored);
}

/* Into at/len (n of them, ascending by offset), the range [off, off + count). */
static void add_range(size_t *at, size_t *len, int *n, size_t off, size_t count)
{
    int i = (*n)++; /* insertion sort by offset */
    for (; i > 0 && at[i - 1] > off; i--) at[i] = at[i - 1], len[i] = len[i - 1];
    at[i] = off;
    len[i] = count;
}

/* lm->written_*: the parameter gradients whose only writer in a step writes them whole (beta 0
 * products, colsum's sums, pad_commit's copies): every layer's FFN weights and biases and
 * LayerNorms; of the tensorized attention qkv_net, r_net, and o_net where materialized
 * (Transformer-XL's qkv_net adds its memory rows' part, and the fused kernels add into o_net).
 * Also zero_grads' list, room for those and the clusters'. */
static void find_written(tt_gpu_lm *lm)
{
    const tt_layout *l = lm->l;
    enum { ALL, TENSORIZED, MATERIALIZED };
    static const struct {
        const char *name;
        int where;
    } kinds[] = {{"pos_ff.CoreNet.0.weight", ALL},     {"pos_ff.CoreNet.0.bias", ALL},
                 {"pos_ff.CoreNet.3.weight", ALL},     {"pos_ff.CoreNet.3.bias", ALL},
                 {"pos_ff.layer_norm.weight", ALL},    {"pos_ff.layer_norm.bias", ALL},
                 {"dec_attn.layer_norm.weight", ALL},  {"dec_attn.layer_norm.bias", ALL},
                 {"dec_attn.qkv_net.weight", TENSORIZED}, {"dec_attn.r_net.weight", TENSORIZED},
                 {"dec_attn.o_net.weight", MATERIALIZED}};
    const int nk = (int)(sizeof kinds / sizeof *kinds), most = l->m.layers * nk;
    lm->written_at = tt_xmalloc((size_t)most * sizeof *lm->written_at);
    lm->written_len = tt_xmalloc((size_t)most * sizeof *lm->written_len);
    lm->zero_at = tt_xmalloc((size_t)(most + TT_MAX_CLUSTERS) * sizeof *lm->zero_at);
    lm->zero_len = tt_xmalloc((size_t)(most + TT_MAX_CLUSTERS) * sizeof *lm->zero_len);
    lm->n_written = 0;
    for (int k = 0; k < l->m.layers; k++)
        for (int i = 0; i < nk; i++) {
            if ((kinds[i].where == TENSORIZED && lm->txl) ||
                (kinds[i].where == MATERIALIZED && !lm->mla_mat))
                continue;
            char name[96];
            snprintf(name, sizeof name, "layers.%d.%s", k, kinds[i].name);
            const tt_param *p = tt_layout_find(l, name); /* (r_net: position: key only) */
            if (p) add_range(lm->written_at, lm->written_len, &lm->n_written, p->offset, p->numel);
        }
}

/* The gradients are added into from the output layer on (whose backward runs in its forward),
 * and zeroed first, except the output layer's weights of the clusters that have rows in this batch
 * (most of a large vocabulary's parameters: 68.5M of wt103's 85M), which logits_bwd writes
 * without adding, and the gradients find_written lists: neither this memset nor their writer
 * touches them twice. */
static void zero_grads(tt_gpu_lm *lm, cudaStream_t st)
{
    const tt_layout *l = lm->l;
    size_t *at = lm->zero_at, *len = lm->zero_len;
    int n = 0;
    for (int c = 0; c < l->n_clusters; c++)
        if (c == 0 || lm->counts.tail[c] > 0)
            add_range(at, len, &n, (size_t)(lm->gv.out_w[c] - lm->g),
                      (size_t)(l->hi[c] - l->lo[c]) * (size_t)l->dim[c]);
    for (int i = 0; i < lm->n_written; i++) add_range(at, len, &n, lm->written_at[i], lm->written_len[i]);
    size_t from = 0;
    for (int i = 0; i <= n; i++) {
        const size_t to = i < n ? at[i] : l->n_floats;
        if (to > from)
            TT_CUDA(cudaMemsetAsync(lm->g + from, 0, (to - from) * 4, st));
        if (i < n && at[i] + len[i] > from) from = at[i] + len[i];
    }
}

/* Layer k's dropout site of the attention output (which 0), the FFN hidden (1) or output (2). */
static uint32_t tail_site(const tt_gpu_lm *lm, int k, int which)
{
    return lm->txl ? (uint32_t)(2 + 4 * k + (which ? which + 1 : 0)) : (uint32_t)(1 + 3 * k + which);
}

/* What follows the attention in layer k (MODEL.md sections 1 and 3 alike): x1 = LN(x +
 * drop(y)), the FFN, x2 = LN(x1 + drop(FFN(x1))). */
static void layer_tail_fwd(tt_gpu_lm *lm, const tt_lm_opts *o, int k, const void *x)
{
    const tt_model_spec *m = &lm->l->m;
    const tt_gpu_program *p = &lm->prog;
    const cudaStream_t st = lm->gpu->stream;
    const tt_layer_view *lw = &lm->wv.layer[k];
    const layer_padded *lp = &lm->pw[k];
    layer_acts *a = &lm->acts[k];
    const int rows = lm->rows, d = m->d_model, dl = lm->dl, f = m->d_inner, fp = lm->fp;
    const float drop = (float)m->dropout;
    const tt_dropout d1 = drop_at(lm, o, drop, tail_site(lm, k, 0), d);
    if (lm->ln_sums)
        tt_mla_residual_ln_fwd(p, st, a->x1, a->s1, a->mean1, a->rstd1, x, lm->mla_part, lm->batch,
                               lw->ln1_w, lw->ln1_b, rows, d, dl, d1);
    else
        tt_residual_ln_fwd(p, st, a->x1, a->s1, a->mean1, a->rstd1, x, a->y, lw->ln1_w, lw->ln1_b,
                           rows, d, dl, d1);
    mark(lm, TT_PROF_LAYERNORM);
    /* the FFN's [rows, F] activations are fp apart, and its products run over all fp columns
     * (F = 2100 at bf16 took cuBLAS 40% longer than 2104 on an H200): the padding is W1's zero
     * rows and W2's zero columns in their copies, so hd's and dff's padding is written with
     * zeros by the products, and adds nothing. The kernels between them leave the padding
     * alone. */
    tt_gemm_fwd_ld(&lm->gemm, a->hd, false, fp, a->x1, dl, pad_src(lm, &lp->w1), lp->w1.pcol, rows,
                   lp->w1.pcol, fp, 0.f);
    tt_ffn_act_fwd(p, st, a->hd, a->hd, lw->ff1_b, rows, f, fp,
                   drop_at(lm, o, drop, tail_site(lm, k, 1), f));
    tt_gemm_fwd_bias(&lm->gemm, a->f, false, dl, a->hd, fp, pad_src(lm, &lp->w2), lp->w2.pcol,
                     pad_src(lm, &lp->b2), rows, fp, lp->w2.prow);
    mark(lm, TT_PROF_FFN);
    tt_residual_ln_fwd(p, st, a->x2, a->s2, a->mean2, a->rstd2, a->x1, a->f, lw->ln2_w, lw->ln2_b,
                       rows, d, dl, drop_at(lm, o, drop, tail_site(lm, k, 2), d));
    mark(lm, TT_PROF_LAYERNORM);
}

/* The column sums of the tail's parameter gradients: LN1's dgamma and dbeta, LN2's with the
 * FFN's second bias (summed beside it), the FFN's first bias. */
enum { SUMS_LN1, SUMS_LN2, SUMS_FFN };

/* Where layer k's partials of that kind go. */
static float *sums_part(const tt_gpu_lm *lm, int kind, int k)
{
    if (kind == SUMS_FFN) return lm->ffn_part + (lm->defer_sums ? (size_t)k * lm->ffn_slot : 0);
    return lm->ln_part + (lm->defer_sums ? (size_t)(2 * k + (kind == SUMS_LN2)) * lm->ln_slot : 0);
}

/* That kind's sums into the gradients of `layers` layers from layer k on, in one launch, on
 * stream st. */
static void param_sums_on(tt_gpu_lm *lm, cudaStream_t st, int kind, int k, int layers)
{
    const tt_model_spec *m = &lm->l->m;
    const tt_layer_view *g = &lm->gv.layer[k];
    const bool ffn = kind == SUMS_FFN;
    tt_colsum_jobs j = {.in = sums_part(lm, kind, k),
                        .in_stride = ffn ? (long long)lm->ffn_slot : 2 * (long long)lm->ln_slot,
                        .out_stride = lm->layer_stride,
                        .jobs = layers};
    if (ffn) {
        j.out[0] = g->ff1_b, j.sets = 1;
        j.parts = (int)(lm->ffn_slot / (size_t)m->d_inner);
    } else {
        j.out[0] = kind == SUMS_LN1 ? g->ln1_w : g->ln2_w;
        j.out[1] = kind == SUMS_LN1 ? g->ln1_b : g->ln2_b;
        j.out[2] = kind == SUMS_LN1 ? NULL : g->ff2_b;
        j.sets = kind == SUMS_LN1 ? 2 : 3;
        j.parts = tt_layernorm_bwd_parts(&lm->prog, lm->rows);
    }
    tt_colsums(&lm->prog, st, ffn ? "bias_colsum" : "colsum", &j, ffn ? m->d_inner : m->d_model);
}

/* The same on the main stream. */
static void param_sums(tt_gpu_lm *lm, int kind, int k, int layers)
{
    param_sums_on(lm, lm->gpu->stream, kind, k, layers);
}

/* Its backward, from lm->dx = d x2: lm->dx = d x through the residual alone and lm->dy = d y.
 * The weight gradients' products go to gw (the side stream's, or the main one's). */
static void layer_tail_bwd(tt_gpu_lm *lm, const tt_lm_opts *o, int k, const tt_gemm *gw)
{
    const tt_model_spec *m = &lm->l->m;
    const tt_gpu_program *p = &lm->prog;
    const cudaStream_t st = lm->gpu->stream;
    const tt_gemm *gm = &lm->gemm;
    const tt_layer_view *lw = &lm->wv.layer[k];
    const layer_padded *lp = &lm->pw[k];
    layer_acts *a = &lm->acts[k];
    const int rows = lm->rows, d = m->d_model, dl = lm->dl, f = m->d_inner, fp = lm->fp;
    const float drop = (float)m->dropout;
    /* x2 = LN(x1 + drop(W2 hd + b2)): dres = d x1 (residual), dyf = d f, and db2 = dyf's sum */
    tt_residual_ln_bwd_parts(p, st, lm->dres, lm->dyf, sums_part(lm, SUMS_LN2, k), lm->dx, a->s2,
                             a->mean2, a->rstd2, lw->ln2_w, rows, d, dl,
                             drop_at(lm, o, drop, tail_site(lm, k, 2), d));
    if (!lm->defer_sums) param_sums(lm, SUMS_LN2, k, 1);
    mark(lm, TT_PROF_LAYERNORM);
    if (gw != gm) tt_gpu_fork(lm->side, st);
    pad_dw(gw, &lp->w2, 0, 1, true, 0.f, lm->dyf, dl, a->hd, fp, rows); /* written (find_written) */
    pad_commit(gw, &lp->w2);
    tt_gemm_bwd_x_ld(gm, lm->dff, fp, lm->dyf, dl, pad_src(lm, &lp->w2), lp->w2.pcol, rows, fp,
                     lp->w2.prow, 0.f);
    tt_ffn_act_bwd_parts(p, st, lm->dff, sums_part(lm, SUMS_FFN, k), lm->dff, a->hd, rows, f, fp,
                         drop_at(lm, o, drop, tail_site(lm, k, 1), f).p);
    if (!lm->defer_sums) param_sums(lm, SUMS_FFN, k, 1);
    if (gw != gm) tt_gpu_fork(lm->side, st);
    pad_dw(gw, &lp->w1, 0, 1, true, 0.f, lm->dff, fp, a->x1, dl, rows);
    pad_commit(gw, &lp->w1);
    tt_gemm_bwd_x_ld(gm, lm->dres, dl, lm->dff, fp, pad_src(lm, &lp->w1), lp->w1.pcol, rows,
                     lp->w1.pcol, fp, 1.f); /* d x1 in full */
    mark(lm, TT_PROF_FFN);
    /* x1 = LN(x + drop(attention(x))): dx = d x (residual), dy = d y */
    tt_residual_ln_bwd_parts(p, st, lm->dx, lm->dy, sums_part(lm, SUMS_LN1, k), lm->dres, a->s1,
                             a->mean1, a->rstd1, lw->ln1_w, rows, d, dl,
                             drop_at(lm, o, drop, tail_site(lm, k, 0), d));
    if (!lm->defer_sums) param_sums(lm, SUMS_LN1, k, 1);
    mark(lm, TT_PROF_LAYERNORM);
}

/* Every layer's core g (the forward), in one launch. */
static void cores_fwd(tt_gpu_lm *lm)
{
    const tt_model_spec *m = &lm->l->m;
    tt_core_fwd(&lm->prog, lm->gpu->stream, lm->acts[0].g, lm->wv.layer[0].core, m->cores,
                m->rank, m->layers, m->rank, lm->layer_stride);
}

/* The parameters' sums after every layer's backward, on stream st: the cores' backward from
 * every layer's dg and the deferred column sums of the LayerNorms' and the FFN's biases, each in
 * one launch; the profile's marks where st is the main stream. */
static void tail_sums(tt_gpu_lm *lm, cudaStream_t st)
{
    const tt_model_spec *m = &lm->l->m;
    const bool marks = st == lm->gpu->stream;
    if (!lm->txl) {
        tt_core_bwd(&lm->prog, st, lm->gv.layer[0].core, lm->dg, lm->wv.layer[0].core, m->cores,
                    m->rank, m->layers, m->rank, lm->layer_stride);
        if (marks) mark(lm, TT_PROF_ATTENTION);
    }
    if (lm->defer_sums) {
        param_sums_on(lm, st, SUMS_LN2, 0, m->layers);
        param_sums_on(lm, st, SUMS_LN1, 0, m->layers);
        if (marks) mark(lm, TT_PROF_LAYERNORM);
        param_sums_on(lm, st, SUMS_FFN, 0, m->layers);
        if (marks) mark(lm, TT_PROF_FFN);
    }
}

/* The tensorized layer's attention (MODEL.md section 1): y = MLA(x). */
static void mla_attn_fwd(tt_gpu_lm *lm, int k, const void *x)
{
    const tt_model_spec *m = &lm->l->m;
    const tt_gpu_program *p = &lm->prog;
    const cudaStream_t st = lm->gpu->stream;
    const tt_layer_view *lw = &lm->wv.layer[k];
    layer_acts *a = &lm->acts[k];
    const int rows = lm->rows, d = m->d_model, r = m->rank, n = m->seq_len;
    const int key = m->position == TT_POS_KEY;
    tt_gemm_fwd(&lm->gemm, a->qkv, false, x, wcp(lm, lw->qkv), rows, d, 3 * r, 0.f);
    mark(lm, TT_PROF_QKV);
    if (key) tt_gemm_fwd(&lm->gemm, a->p, false, lm->pe, wcp(lm, lw->r_net), n, d, r, 0.f);
    if (lm->mla_mat)
        tt_mla_mat_fwd(p, &lm->gemm, st, a->y, a->qkv, a->g, wcp(lm, lw->o), key ? a->p : NULL,
                       key ? lm->wv.u : NULL, key ? lm->wv.v : NULL, &a->mat, lm->batch, n, r, d,
                       &(tt_mla_mat_side){lm->side, &lm->gemm_side});
    else if (lm->ln_sums) /* the parts stay in mla_part for layer_tail_fwd's LayerNorm */
        tt_mla_fwd_parts(p, st, a->qkv, a->g, wcp(lm, lw->o), key ? a->p : NULL, lm->wv.u,
                         lm->wv.v, lm->mla_part, lm->batch, n, r, d);
    else
        tt_mla_fwd(p, st, a->y, a->qkv, a->g, wcp(lm, lw->o), key ? a->p : NULL, lm->wv.u,
                   lm->wv.v, lm->mla_part, lm->batch, n, r, d);
    mark(lm, TT_PROF_ATTENTION);
}

/* Its backward from lm->dy: the parameters' gradients, and d x added into lm->dx. */
static void mla_attn_bwd(tt_gpu_lm *lm, int k, const void *xin, const tt_gemm *gw)
{
    const tt_model_spec *m = &lm->l->m;
    const tt_gpu_program *p = &lm->prog;
    const cudaStream_t st = lm->gpu->stream;
    const tt_gemm *gm = &lm->gemm;
    const tt_view *w = &lm->wv, *g = &lm->gv;
    const tt_layer_view *lw = &w->layer[k], *lg = &g->layer[k];
    layer_acts *a = &lm->acts[k];
    const int rows = lm->rows, d = m->d_model, r = m->rank, n = m->seq_len;
    const int key = m->position == TT_POS_KEY;
    if (gw != gm) tt_gpu_join(lm->side, st);
    if (lm->mla_mat)
        tt_mla_mat_bwd(p, gm, st, lm->dqkv, lg->o, key ? lm->dp : NULL, lm->dg + (size_t)k * r,
                       key ? g->u : NULL, key ? g->v : NULL, lm->dy, a->qkv, a->g, wcp(lm, lw->o),
                       key ? a->p : NULL, key ? w->u : NULL, key ? w->v : NULL, &a->mat,
                       lm->mla_part, lm->mat_keep, lm->batch, n, r, d,
                       &(tt_mla_mat_side){lm->side, &lm->gemm_side});
    else
        tt_mla_bwd(p, st, lm->side, lm->dqkv, lg->o, key ? lm->dp : NULL, lm->dg + (size_t)k * r,
                   key ? g->u : NULL, key ? g->v : NULL, lm->mla_part, lm->dy, a->qkv, a->g,
                   wcp(lm, lw->o), key ? a->p : NULL, w->u, w->v, lm->batch, n, r, d);
    if (key) {
        const void *dp = lm->dp;
        if (lm->dp_c) {
            tt_cast(p, st, lm->dp_c, lm->dp, (long)n * r);
            dp = lm->dp_c;
        }
        tt_gemm_bwd_w_ld(gm, lg->r_net, 0.f, dp, r, lm->pe, d, n, d, r); /* written */
    }
    mark(lm, TT_PROF_ATTENTION);
    if (gw != gm) tt_gpu_fork(lm->side, st);
    tt_gemm_bwd_w_ld(gw, lg->qkv, 0.f, lm->dqkv, 3 * r, xin, d, rows, d, 3 * r); /* written */
    tt_gemm_bwd_x(gm, lm->dx, lm->dqkv, wcp(lm, lw->qkv), rows, d, 3 * r, 1.f);
    mark(lm, TT_PROF_QKV);
}

/* The rows of lm->pe (and of its table) before the current run's position embeddings: they
 * are the last mlen + N of the kmax rows, distances mlen + N - 1 .. 0. */
static size_t txl_pe_skip(const tt_gpu_lm *lm)
{
    return (size_t)(lm->kmax - lm->mlen - lm->l->m.seq_len);
}

/* The memory the run after this one attends to: the last min(mlen + N, M) rows. */
static int txl_next_mlen(const tt_gpu_lm *lm)
{
    const tt_model_spec *m = &lm->l->m;
    return lm->mlen + m->seq_len < m->mem_len ? lm->mlen + m->seq_len : m->mem_len;
}

/* Where qkv's and kvm's rows hold q, k, v: blocks hl apart (templates/txl.cu). */
static tt_qkv_rows qkv_rows(const tt_gpu_lm *lm) { return (tt_qkv_rows){3 * lm->hl, 2 * lm->hl, lm->hl}; }

/* Transformer-XL's layer k attention (MODEL.md section 3) over the memory of mlen rows a sequence
 * and the segment x: y = o_net(P' V) with P = softmax of the shifted, masked (q + u) k^T +
 * (q + v) r^T. Its heads are head-major and padded (templates/txl.cu), so that each product is
 * one strided batch: AC and P'V over (head, sequence), BD over heads with every sequence's rows.
 * The projections' rows are padded too (dl, hl; see padded), their weights' copies with them. */
static void txl_attn_fwd(tt_gpu_lm *lm, const tt_lm_opts *o, int k, const void *x)
{
    const tt_model_spec *m = &lm->l->m;
    const tt_gpu_program *p = &lm->prog;
    const cudaStream_t st = lm->gpu->stream;
    const tt_gemm *gm = &lm->gemm;
    const layer_padded *lp = &lm->pw[k];
    layer_acts *a = &lm->acts[k];
    const int rows = lm->rows, dl = lm->dl, hl = lm->hl, dp = lm->dpad, H = m->n_head;
    const int B = lm->batch, n = m->seq_len, ml = lm->mlen, klen = ml + n;
    const void *pe = (const char *)lm->pe + txl_pe_skip(lm) * dl * lm->es;
    tt_gemm_fwd_ld(gm, a->qkv, false, 3 * hl, x, dl, pad_src(lm, &lp->qkv), dl, rows, dl, 3 * hl, 0.f);
    if (ml) /* the memory rows' k and v: W_kv is W_qkv's blocks from the second on */
        tt_gemm_fwd_ld(gm, a->kvm, false, 2 * hl, lm->mem[lm->par][k], dl, pad_block(lm, &lp->qkv, 1),
                       dl, B * ml, dl, 2 * hl, 0.f);
    tt_gemm_fwd_ld(gm, lm->r, false, hl, pe, dl, pad_src(lm, &lp->r), dl, klen, dl, hl, 0.f);
    mark(lm, TT_PROF_QKV);
    tt_txl_heads(p, st, a->rh, lm->r, klen, hl, 0);
    tt_txl_heads_qkv(p, st, a->qu, a->qv, a->tk, a->tv, a->qkv, ml ? a->kvm : NULL, lm->wv.u,
                     lm->wv.v, B, n, ml, qkv_rows(lm));
    const float scale = (float)(1.0 / sqrt((double)m->d_head));
    const tt_dropout dropatt = drop_at(lm, o, (float)m->dropatt, (uint32_t)(3 + 4 * k),
                                       (unsigned long long)m->n_head * klen);
    void *oh; /* P' V [H*B][n, dp] */
    if (lm->txl_fused) { /* scores, softmax, dropatt and P' V in one kernel */
        oh = a->oh;
        tt_txl_attn_fwd(p, st, oh, a->lse, a->qu, a->qv, a->tk, a->tv, a->rh, B, H, n, ml, scale,
                        dropatt);
    } else {
        oh = lm->oh;
        /* AC [H*B][n, klen] = (q + u) k^T; BD [H][B*n, klen] = (q + v) r^T */
        tt_gemm_batched(gm, lm->ac, true, klen, (long long)n * klen, a->qu, false, dp,
                        (long long)n * dp, a->tk, true, dp, (long long)klen * dp, n, klen, dp, H * B,
                        0.f);
        tt_gemm_batched(gm, lm->bd, true, klen, (long long)rows * klen, a->qv, false, dp,
                        (long long)rows * dp, a->rh, true, dp, (long long)klen * dp, rows, klen, dp, H,
                        0.f);
        tt_txl_softmax_fwd(p, st, a->prob, a->pdrop, lm->ac, lm->bd, B, H, n, ml, scale, dropatt);
        tt_gemm_batched(gm, oh, false, dp, (long long)n * dp, a->pdrop, false, klen,
                        (long long)n * klen, a->tv, false, dp, (long long)klen * dp, n, dp, klen, H * B,
                        0.f);
    }
    /* heads merged into rows, o_net */
    tt_txl_unheads(p, st, a->om, oh, rows, hl, 0);
    mark(lm, TT_PROF_ATTENTION);
    tt_gemm_fwd_ld(gm, a->y, false, dl, a->om, hl, pad_src(lm, &lp->o), hl, rows, hl, dl, 0.f);
    mark(lm, TT_PROF_O);
}

/* The unfused backward between d(P' V) (lm->doh) and the gradients of q + u, q + v, k, v and
 * dBD: cuBLAS's products around templates/txl_softmax.cu's backward. */
static void txl_attn_bwd_unfused(tt_gpu_lm *lm, const layer_acts *a, float scale, tt_dropout dropatt)
{
    const tt_model_spec *m = &lm->l->m;
    const tt_gpu_program *p = &lm->prog;
    const cudaStream_t st = lm->gpu->stream;
    const tt_gemm *gm = &lm->gemm;
    const int rows = lm->rows, dp = lm->dpad, H = m->n_head;
    const int B = lm->batch, n = m->seq_len, ml = lm->mlen, klen = ml + n;
    /* d P' [H*B][n, klen] = dO V^T (fp32); dV [H*B][klen, dp] = P'^T dO */
    tt_gemm_batched(gm, lm->dpd, true, klen, (long long)n * klen, lm->doh, false, dp,
                    (long long)n * dp, a->tv, true, dp, (long long)klen * dp, n, klen, dp, H * B, 0.f);
    tt_gemm_batched(gm, lm->dvh, false, dp, (long long)klen * dp, a->pdrop, true, klen,
                    (long long)n * klen, lm->doh, false, dp, (long long)n * dp, klen, dp, n, H * B, 0.f);
    tt_txl_softmax_bwd(p, st, lm->dac, lm->dbd, lm->dpd, a->prob, B, H, n, ml, scale, dropatt);
    /* dQu = dAC K, dK = dAC^T Qu [H*B]; dQv = dBD R [H] */
    tt_gemm_batched(gm, lm->dquh, false, dp, (long long)n * dp, lm->dac, false, klen,
                    (long long)n * klen, a->tk, false, dp, (long long)klen * dp, n, dp, klen, H * B, 0.f);
    tt_gemm_batched(gm, lm->dkh, false, dp, (long long)klen * dp, lm->dac, true, klen,
                    (long long)n * klen, a->qu, false, dp, (long long)n * dp, klen, dp, n, H * B, 0.f);
    tt_gemm_batched(gm, lm->dqvh, false, dp, (long long)rows * dp, lm->dbd, false, klen,
                    (long long)rows * klen, a->rh, false, dp, (long long)klen * dp, rows, dp, klen, H, 0.f);
}

/* Its backward from lm->dy: the parameters' gradients (u and v shared by every layer), and d x
 * added into lm->dx; the memory is detached. */
static void txl_attn_bwd(tt_gpu_lm *lm, const tt_lm_opts *o, int k, const void *xin)
{
    const tt_model_spec *m = &lm->l->m;
    const tt_gpu_program *p = &lm->prog;
    const cudaStream_t st = lm->gpu->stream;
    const tt_gemm *gm = &lm->gemm;
    const layer_padded *lp = &lm->pw[k];
    const int rows = lm->rows, dl = lm->dl, hl = lm->hl, dp = lm->dpad, H = m->n_head;
    const int B = lm->batch, n = m->seq_len, ml = lm->mlen, klen = ml + n;
    layer_acts *a = &lm->acts[k];
    const void *pe = (const char *)lm->pe + txl_pe_skip(lm) * dl * lm->es;
    /* o_net */
    pad_dw(gm, &lp->o, 0, 1, true, 1.f, lm->dy, dl, a->om, hl, rows);
    pad_commit(gm, &lp->o);
    tt_gemm_bwd_x_ld(gm, lm->dom, hl, lm->dy, dl, pad_src(lm, &lp->o), hl, rows, hl, dl, 0.f);
    mark(lm, TT_PROF_O);
    tt_txl_heads(p, st, lm->doh, lm->dom, rows, hl, 0);
    const float scale = (float)(1.0 / sqrt((double)m->d_head));
    const tt_dropout dropatt = drop_at(lm, o, (float)m->dropatt, (uint32_t)(3 + 4 * k),
                                       (unsigned long long)m->n_head * klen);
    /* dBD's rows klen apart: padded to whole 16-byte groups (tt_row_pitch), dR's product ran
     * slower on H200 (290k against 320k tok/s at txl-wt103-base, one call each) */
    const int ldb = klen;
    if (lm->txl_fused) {
        /* everything but dR = dBD^T Qv, whose dBD the kernels write; dq, dk, dv straight into
         * the projections' rows, du and dv added */
        tt_txl_attn_bwd(p, st, lm->dqkv, ml ? lm->dkvm : NULL, qkv_rows(lm), lm->gv.u, lm->gv.v,
                        lm->uvpart, lm->dbd, ldb, lm->ds, a->qu, a->qv, a->tk, a->tv, a->rh, a->oh,
                        lm->doh, a->lse, B, H, n, ml, scale, dropatt);
        /* dR as `splits` products over whole sequences each (one product with K = B n ran on a
         * few dozen blocks), summed in a fixed order into r_net's rows */
        const int splits = tt_txl_dr_splits(B), chunk = rows / splits;
        tt_gemm_batched(gm, lm->dr_part, true, dp, (long long)klen * dp, lm->dbd, true, ldb,
                        (long long)chunk * ldb, a->qv, false, dp, (long long)chunk * dp, klen, dp,
                        chunk, H * splits, 0.f);
        tt_txl_dr_sum(p, st, lm->dr, hl, lm->dr_part, klen, splits);
    } else {
        txl_attn_bwd_unfused(lm, a, scale, dropatt);
        tt_txl_uv_bwd(p, st, lm->gv.u, lm->gv.v, lm->dquh, lm->dqvh, rows);
        tt_txl_heads_bwd(p, st, lm->dqkv, ml ? lm->dkvm : NULL, lm->dquh, lm->dqvh, lm->dkh, lm->dvh,
                         B, n, ml, qkv_rows(lm));
        tt_gemm_batched(gm, lm->drh, false, dp, (long long)klen * dp, lm->dbd, true, ldb,
                        (long long)rows * ldb, a->qv, false, dp, (long long)rows * dp, klen, dp, rows,
                        H, 0.f);
        tt_txl_unheads(p, st, lm->dr, lm->drh, klen, hl, 0);
    }
    /* r_net, then qkv_net over the segment's rows and the memory's */
    pad_dw(gm, &lp->r, 0, 1, true, 1.f, lm->dr, hl, pe, dl, klen);
    pad_commit(gm, &lp->r);
    mark(lm, TT_PROF_ATTENTION);
    pad_dw(gm, &lp->qkv, 0, 3, true, 1.f, lm->dqkv, 3 * hl, xin, dl, rows);
    if (ml)
        pad_dw(gm, &lp->qkv, 1, 2, false, 1.f, lm->dkvm, 2 * hl, lm->mem[lm->par][k], dl,
               B * ml);
    pad_commit(gm, &lp->qkv);
    tt_gemm_bwd_x_ld(gm, lm->dx, dl, lm->dqkv, 3 * hl, pad_src(lm, &lp->qkv), dl, rows, dl, 3 * hl,
                     1.f);
    mark(lm, TT_PROF_QKV);
}

/* Transformer-XL's memories for the next segment: layer k's = the last min(mlen + N, M) rows of
 * concat(its memory, its input) a sequence, into the other of the two buffers (two copies a
 * layer, each row once: no concatenation). */
static void txl_update_memory(tt_gpu_lm *lm)
{
    const tt_model_spec *m = &lm->l->m;
    const cudaStream_t st = lm->gpu->stream;
    const int n = m->seq_len, ml = lm->mlen, keep = txl_next_mlen(lm);
    const size_t row = (size_t)lm->dl * lm->es;
    const int old = keep > n ? keep - n : 0, cur = keep - old; /* rows from each */
    for (int k = 0; k < m->layers; k++) {
        const char *in = k ? lm->acts[k - 1].x2 : lm->x0;
        char *dst = lm->mem[lm->par ^ 1][k];
        if (old)
            TT_CUDA(cudaMemcpy2DAsync(dst, keep * row, (const char *)lm->mem[lm->par][k] + (ml - old) * row,
                                      ml * row, old * row, (size_t)lm->batch, cudaMemcpyDeviceToDevice, st));
        if (cur)
            TT_CUDA(cudaMemcpy2DAsync(dst + old * row, keep * row, in + (n - cur) * row, n * row,
                                      cur * row, (size_t)lm->batch, cudaMemcpyDeviceToDevice, st));
    }
}

static void gather_tokens(tt_gpu_lm *lm);
static void reduce_output(tt_gpu_lm *lm);
static void reduce_bucket(tt_gpu_lm *lm, int k);
static void reduce_rest(tt_gpu_lm *lm, const tt_lm_opts *o);

/* Forward, and with grads the backward, as kernels on the stream: no host copy, no
 * synchronization, nothing that changes from one training step to the next but device memory,
 * the batch's padded counts and Transformer-XL's memory length and buffer (so that it can be
 * captured for each tuple of them). */
static void enqueue_run(tt_gpu_lm *lm, const tt_lm_opts *o, bool grads, double weights)
{
    const tt_model_spec *m = &lm->l->m;
    const double norm = o->norm > 0 ? o->norm : weights; /* a rank's share: the whole batch's */
    const float scale = norm > 0 ? (float)(1.0 / norm) : 0.f;

    /* several GPUs: the gradients summed in parts as the backward writes them */
    const bool parts = grads && lm->reduce_now && lm->buckets;
    const bool local_emb = !parts || !lm->emb_global; /* the embedding's backward, this rank's */

    /* The gradients' zeroing (a memset for each stretch between the gradients written whole:
     * 32 at the wt103 shapes) beside the forward on the side stream where there is one,
     * joined before the output layer's backward, the first to touch a gradient
     * (TT_ZERO_SIDE=0: on the main stream first, as without the side stream) */
    const bool zero_side = grads && lm->side && lm->zero_side;
    if (grads && !zero_side) zero_grads(lm, lm->gpu->stream);
    if (parts) gather_tokens(lm);
    if (grads && lm->side) {
        /* the order the embedding's backward adds rows in, known from the tokens alone: sorted
         * beside the forward (one block), joined before the embedding's backward */
        tt_gpu_fork(lm->side, lm->gpu->stream);
        if (zero_side) zero_grads(lm, lm->side->stream);
        if (local_emb) tt_embedding_sort(&lm->prog, lm->side->stream, lm->keys, lm->tokens, lm->rows);
    }
    mark(lm, TT_PROF_OPTIMIZER);
    /* forward */
    enqueue_embedding(lm, o, false);
    mark(lm, TT_PROF_EMBEDDING);
    if (lm->txl) { /* pos_emb of distances klen-1 .. 0 with its dropout, for every layer */
        const size_t skip = txl_pe_skip(lm);
        tt_txl_pe(&lm->prog, lm->gpu->stream, (char *)lm->pe + skip * lm->dl * lm->es,
                  lm->pe_tab + skip * m->d_model, lm->mlen + m->seq_len, m->d_model, lm->dl,
                  drop_at(lm, o, (float)m->dropout, 1, 0));
        mark(lm, TT_PROF_ATTENTION);
    }
    const void *x = lm->x0;
    if (!lm->txl) {
        cores_fwd(lm);
        mark(lm, TT_PROF_ATTENTION);
    }
    for (int k = 0; k < m->layers; k++) {
        if (lm->txl)
            txl_attn_fwd(lm, o, k, x);
        else
            mla_attn_fwd(lm, k, x);
        layer_tail_fwd(lm, o, k, x);
        x = lm->acts[k].x2;
    }
    if (lm->txl) txl_update_memory(lm);
    mark(lm, TT_PROF_ATTENTION);
    if (zero_side) tt_gpu_join(lm->side, lm->gpu->stream); /* the zeroed gradients */
    enqueue_output(lm, o, grads, parts, scale, x); /* and its backward: dx = d loss / d x */
    if (parts) reduce_output(lm);
    mark(lm, TT_PROF_SOFTMAX);
    if (lm->prof) lm->prof->in_bwd = true;

    if (grads) {
        /* The weight gradients' products run on the side stream beside the chain to dx (they
         * are small products that leave most of the card idle). What they read is not written
         * again before the join ahead of each layer's attention: dW2's dY (dyf, a buffer of its
         * own) and dW1's dFF, the next layer's; dWqkv's dqkv, that layer's mla_bwd_reduce.
         * (Transformer-XL's products all stay on the main stream.) */
        const tt_gemm *gw = lm->side && !lm->txl ? &lm->gemm_side : &lm->gemm;
        if (!lm->txl) /* every layer's dg, added into by its attention's backward */
            TT_CUDA(cudaMemsetAsync(lm->dg, 0, (size_t)m->layers * m->rank * 4, lm->gpu->stream));
        for (int k = m->layers - 1; k >= 0; k--) {
            const void *xin = k ? lm->acts[k - 1].x2 : lm->x0;
            layer_tail_bwd(lm, o, k, gw);
            if (lm->txl)
                txl_attn_bwd(lm, o, k, xin);
            else
                mla_attn_bwd(lm, k, xin, gw);
            if (parts) reduce_bucket(lm, k);
        }
        /* The parameters' sums after the layers (the cores' gradients, and the deferred column
         * sums of the LayerNorms' and the FFN's biases): on the side stream beside the
         * embedding's backward, which writes none of what they read or write (TT_TAIL_SIDE=0,
         * and one stream: in order on the main stream, before it). The same bits either way. */
        const bool tail_side = lm->side && lm->tail_side;
        if (!tail_side) tail_sums(lm, lm->gpu->stream);
        if (lm->side)
            tt_gpu_join(lm->side, lm->gpu->stream); /* the keys, and the weights' products */
        else if (local_emb)
            tt_embedding_sort(&lm->prog, lm->gpu->stream, lm->keys, lm->tokens, lm->rows);
        if (tail_side) { /* after every layer's backward (the fork), beside the embedding's */
            tt_gpu_fork(lm->side, lm->gpu->stream);
            tail_sums(lm, lm->side->stream);
        }
        if (local_emb) enqueue_embedding(lm, o, true);
        if (gw != &lm->gemm || tail_side) tt_gpu_join(lm->side, lm->gpu->stream);
        mark(lm, TT_PROF_EMBEDDING);
        if (parts) reduce_rest(lm, o);
    }
}

/* The io block's [from, IO_HEAD) back into io_host (the scalars from IO_SC, the sums from IO_SUMS),
 * and the wait for it: the one synchronization of a run or of Adam alone (a training step's
 * download waits on its own event: tt_gpu_lm_train_result). */
static void download_io(tt_gpu_lm *lm, size_t from)
{
    TT_CUDA(cudaMemcpyAsync(lm->io_host + from, lm->io + from, IO_HEAD - from,
                            cudaMemcpyDeviceToHost, lm->gpu->stream));
    TT_CUDA(cudaStreamSynchronize(lm->gpu->stream));
}

/* A run's sums as a host io block holds them after its download. reduced: a training step's on
 * several GPUs, summed over the ranks (weights: the whole batch's). */
static void io_sums(const char *io, double weights, bool reduced, tt_lm_result *res)
{
    double sums[3];
    memcpy(sums, io + IO_SUMS, sizeof sums);
    res->loss_sum = sums[0];
    res->nll_sum = sums[1];
    res->scored = weights;
    res->flags = reduced ? sums[2] : 0;
}

/* Several GPUs: the ranks' gradients and sums (and flags) summed over comm, in place, on the
 * stream (so in the step's graph): every rank then clips and steps from the same gradient. */
static void enqueue_reduce(tt_gpu_lm *lm)
{
#if TT_HAVE_NCCL
    const tt_nccl *nc = tt_nccl_get();
    const cudaStream_t st = lm->gpu->stream;
    ncclComm_t comm = lm->comm;
    TT_ASSERT(nc);
    /* the elements summed (sharded: every rank's shard, the zero slack past n_floats among them),
     * and the ones this rank then holds the sums of */
    const size_t n = lm->shard_len ? lm->shard_len * (size_t)lm->world : lm->l->n_floats;
    const size_t off = lm->shard_len ? lm->shard_off : 0, len = lm->shard_len ? lm->shard_len : n;
    void *g = lm->g;
    ncclDataType_t type = ncclFloat32;
    size_t es = 4;
    if (lm->gh) {
        tt_cast(&lm->prog, st, lm->gh, lm->g, (long)n);
        g = lm->gh, type = ncclBfloat16, es = 2;
    }
    ncclResult_t r = nc->group_start();
    if (r == ncclSuccess && lm->shard_len) /* in place: this rank's shard of the sums */
        r = nc->reduce_scatter(g, (char *)g + off * es, len, type, ncclSum, comm, st);
    else if (r == ncclSuccess)
        r = nc->all_reduce(g, g, n, type, ncclSum, comm, st);
    if (r == ncclSuccess) r = nc->all_reduce(lm->sums, lm->sums, 3, ncclFloat64, ncclSum, comm, st);
    const ncclResult_t e = nc->group_end();
    if (r == ncclSuccess) r = e;
    if (r != ncclSuccess)
        tt_panic(__FILE__, __LINE__, "NCCL: the gradients' all-reduce: %s", nc->get_error_string(r));
    if (lm->gh)
        tt_cast_widen(&lm->prog, st, lm->g + off, (const char *)lm->gh + off * 2, (long)len);
#else
    (void)lm;
    TT_ASSERT(!"built without NCCL");
#endif
}

/* --- the gradients' all-reduce in parts beside the backward ---------------------------------- */

/* The parts, the stream and events they run with, and the embedding's whole-batch buffers. */
static void plan_buckets(tt_gpu_lm *lm)
{
    const tt_layout *l = lm->l;
    const int layers = l->m.layers;
    lm->emb_global = !l->proj && tt_env_long("TT_NCCL_EMB_GLOBAL", 0, 1, 1);
    tt_sum_parts_plan(&lm->parts, l, &lm->gv, lm->g, lm->txl, lm->emb_global);
    /* The sums' kernels at the card's greatest stream priority (TT_NCCL_PRIORITY=0: the
     * default's), so that the block scheduler gives them SMs as soon as their turn comes instead
     * of after the backward's queued blocks; a captured kernel keeps its stream's priority, which
     * the step's graph runs with (cudaGraphInstantiateFlagUseNodePriority). */
    int least = 0, greatest = 0;
    TT_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    TT_CUDA(cudaStreamCreateWithPriority(&lm->comm_stream, cudaStreamNonBlocking,
                                         tt_env_long("TT_NCCL_PRIORITY", 0, 1, 1) ? greatest : 0));
    (void)least;
    const int ne = 2 * layers + TT_COMM_EVENTS;
    lm->comm_ev = tt_xcalloc((size_t)ne, sizeof *lm->comm_ev);
    for (int e = 0; e < ne; e++)
        TT_CUDA(cudaEventCreateWithFlags(&lm->comm_ev[e], cudaEventDisableTiming));
    if (lm->emb_global) {
        const size_t rows = (size_t)lm->rows * (size_t)lm->world;
        TT_CUDA(cudaMalloc((void **)&lm->gtokens, rows * sizeof *lm->gtokens));
        TT_CUDA(cudaMalloc((void **)&lm->gkeys, tt_embedding_keys(&lm->prog) * sizeof *lm->gkeys));
        TT_CUDA(cudaMalloc(&lm->gdx, rows * (size_t)lm->dl * lm->es));
    }
}

/* comm_stream waits for what stream st has queued so far (event e of comm_ev). */
static void comm_wait(tt_gpu_lm *lm, cudaStream_t st, int e)
{
    TT_CUDA(cudaEventRecord(lm->comm_ev[e], st));
    TT_CUDA(cudaStreamWaitEvent(lm->comm_stream, lm->comm_ev[e], 0));
}

#if TT_HAVE_NCCL
static void nccl_check(ncclResult_t r, const char *what)
{
    if (r != ncclSuccess)
        tt_panic(__FILE__, __LINE__, "NCCL: %s: %s", what, tt_nccl_get()->get_error_string(r));
}
#endif

/* The spans of the gradient (and with sums the loss sums and flags) summed over the ranks on
 * comm_stream, in one group. Every NCCL call of a step goes to comm_stream, so the ranks' calls
 * run in the order they were made, which is the same on every rank. */
static void reduce_spans(tt_gpu_lm *lm, const tt_spans *s, bool sums)
{
#if TT_HAVE_NCCL
    const tt_nccl *nc = tt_nccl_get();
    ncclComm_t comm = lm->comm;
    const cudaStream_t st = lm->comm_stream;
    char *gh = lm->gh; /* bf16 sums: each span rounded there, summed, widened back */
    for (int i = 0; i < s->n && gh; i++)
        tt_cast(&lm->prog, st, gh + s->at[i] * 2, lm->g + s->at[i], (long)s->len[i]);
    ncclResult_t r = nc->group_start();
    for (int i = 0; i < s->n && r == ncclSuccess; i++)
        r = gh ? nc->all_reduce(gh + s->at[i] * 2, gh + s->at[i] * 2, s->len[i], ncclBfloat16,
                                ncclSum, comm, st)
               : nc->all_reduce(lm->g + s->at[i], lm->g + s->at[i], s->len[i], ncclFloat32,
                                ncclSum, comm, st);
    if (r == ncclSuccess && sums)
        r = nc->all_reduce(lm->sums, lm->sums, 3, ncclFloat64, ncclSum, comm, st);
    const ncclResult_t e = nc->group_end();
    nccl_check(r == ncclSuccess ? e : r, "the gradients' all-reduce");
    for (int i = 0; i < s->n && gh; i++)
        tt_cast_widen(&lm->prog, st, lm->g + s->at[i], gh + s->at[i] * 2, (long)s->len[i]);
#else
    (void)lm, (void)s, (void)sums;
    TT_ASSERT(!"built without NCCL");
#endif
}

/* At the step's start, with the embedding's backward over the whole batch: every rank's tokens
 * gathered (rank r's rows r-th: the whole batch's order) and sorted, beside the forward. */
static void gather_tokens(tt_gpu_lm *lm)
{
    comm_wait(lm, lm->gpu->stream, 2 * lm->l->m.layers + TT_EV_START);
    if (!lm->emb_global) return;
#if TT_HAVE_NCCL
    nccl_check(tt_nccl_get()->all_gather(lm->tokens, lm->gtokens, (size_t)lm->rows, ncclInt32,
                                         lm->comm, lm->comm_stream),
               "the batch's tokens");
#endif
    tt_embedding_sort(&lm->prog, lm->comm_stream, lm->gkeys, lm->gtokens, lm->rows * lm->world);
}

/* After output cluster c's backward: its part summed. */
static void reduce_cluster(tt_gpu_lm *lm, int c)
{
    if (!lm->parts.cluster[c].n) return;
    comm_wait(lm, lm->gpu->stream, 2 * lm->l->m.layers + TT_EV_OUTPUT + c);
    reduce_spans(lm, &lm->parts.cluster[c], false);
}

/* After the output layer's backward: what the clusters' parts left of its gradients summed. */
static void reduce_output(tt_gpu_lm *lm)
{
    if (!lm->parts.early.n) return;
    comm_wait(lm, lm->gpu->stream, 2 * lm->l->m.layers + TT_EV_OUTPUT + TT_MAX_CLUSTERS);
    reduce_spans(lm, &lm->parts.early, false);
}

/* After layer k's backward: its bucket summed, once both streams have written it. */
static void reduce_bucket(tt_gpu_lm *lm, int k)
{
    comm_wait(lm, lm->gpu->stream, 2 * k);
    if (lm->side && !lm->txl) comm_wait(lm, lm->side->stream, 2 * k + 1);
    reduce_spans(lm, &lm->parts.bucket[k], false);
}

/* After the backward (both streams joined): the embedding's backward over the whole batch (d x0
 * gathered) on comm_stream, into a table every rank then holds the same, and the rest and the
 * sums; the main stream then waits for all of it. */
static void reduce_rest(tt_gpu_lm *lm, const tt_lm_opts *o)
{
    const int layers = lm->l->m.layers;
    comm_wait(lm, lm->gpu->stream, 2 * layers + TT_EV_BWD_END);
    if (lm->emb_global) {
#if TT_HAVE_NCCL
        nccl_check(tt_nccl_get()->all_gather(lm->dx, lm->gdx, (size_t)lm->rows * lm->dl * lm->es,
                                             ncclInt8, lm->comm, lm->comm_stream),
                   "the embedding's d x0");
#endif
        const tt_layout *l = lm->l;
        tt_lm_opts whole = *o;
        whole.seq0 = 0; /* rank r's rows start at its seq0 = r x its sequences */
        TT_ASSERT(o->seq0 == lm->rank * lm->batch);
        tt_embedding_bwd(&lm->prog, lm->comm_stream, lm->gv.emb[0], lm->gkeys, lm->emb_part,
                         lm->gdx, lm->rows * lm->world, l->m.d_model, lm->dl, (int)l->vocab,
                         drop_at(lm, &whole, (float)l->m.dropout, 0, l->m.d_model));
    }
    reduce_spans(lm, &lm->parts.rest, true);
    TT_CUDA(cudaEventRecord(lm->comm_ev[2 * layers + TT_EV_COMM_DONE], lm->comm_stream));
    TT_CUDA(cudaStreamWaitEvent(lm->gpu->stream, lm->comm_ev[2 * layers + TT_EV_COMM_DONE], 0));
}

/* The sharded optimizer's step after the gradients' reduce-scatter: the norm of the whole
 * gradient from the ranks' sums of squares of their shards, Adam on this rank's shard (the
 * clip factor of the whole), and every rank's new weights (and their storage-type copy)
 * gathered into every rank. */
static void enqueue_adam_shard(tt_gpu_lm *lm)
{
#if TT_HAVE_NCCL
    const tt_train_spec *t = &lm->spec->train;
    const cudaStream_t st = lm->gpu->stream;
    const tt_nccl *nc = tt_nccl_get();
    ncclComm_t comm = lm->comm;
    const size_t off = lm->shard_off, len = lm->shard_len, es = lm->es;
    tt_grad_norm_ex(&lm->prog, st, lm->sc, lm->norm_part, lm->g + off, len, t->clip, 1, NULL);
    ncclResult_t r = nc->all_reduce(&lm->sc->norm, &lm->sc->norm, 1, ncclFloat64, ncclSum, comm, st);
    tt_grad_norm_ex(&lm->prog, st, lm->sc, lm->norm_part, lm->g, 0, t->clip, 0, &lm->sc->norm);
    char *wc = es == 4 ? NULL : (char *)lm->wc;
    tt_adam(&lm->prog, st, lm->w + off, lm->m, lm->v, wc ? wc + off * es : NULL,
            lm->g + off, lm->sc, lm->sums, len, t, NULL, 0); /* the copies after the gather */
    if (r == ncclSuccess) r = nc->group_start();
    if (r == ncclSuccess) r = nc->all_gather(lm->w + off, lm->w, len, ncclFloat32, comm, st);
    if (r == ncclSuccess && wc)
        r = nc->all_gather(wc + off * es, wc, len, ncclBfloat16, comm, st);
    const ncclResult_t e = nc->group_end();
    if (r == ncclSuccess) r = e;
    if (r != ncclSuccess)
        tt_panic(__FILE__, __LINE__, "NCCL: the sharded optimizer's step: %s", nc->get_error_string(r));
    refresh_padded(lm);
#else
    (void)lm;
    TT_ASSERT(!"built without NCCL");
#endif
}

void tt_gpu_lm_shard(tt_gpu_lm *lm, int rank, int world)
{
    TT_ASSERT(lm->comm && world > 1 && rank >= 0 && rank < world);
    TT_ASSERT(lm->es == 4 || lm->es == 2); /* fp32, or bf16 copies */
    const size_t nf = lm->l->n_floats, len = (nf + 4 * (size_t)world - 1) / (4 * (size_t)world) * 4;
    TT_ASSERT(len * (size_t)world <= nf + TT_SHARD_SLACK);
    lm->shard_len = len;
    lm->shard_off = len * (size_t)rank;
    lm->buckets = false; /* the reduce-scatter takes the whole array at once */
    /* the moments of this rank's shard alone (the arrays' zero slack past n_floats included) */
    float *whole_m = lm->m, *whole_v = lm->v;
    const size_t was = tt_gpu_lm_moment_bytes(lm);
    lm->moment_floats = len;
    alloc_moments(lm);
    TT_CUDA(cudaMemcpy(lm->m, whole_m + lm->shard_off, len * 4, cudaMemcpyDeviceToDevice));
    TT_CUDA(cudaMemcpy(lm->v, whole_v + lm->shard_off, len * 4, cudaMemcpyDeviceToDevice));
    TT_CUDA(cudaFree(whole_m));
    lm->bytes -= was - tt_gpu_lm_moment_bytes(lm);
}

void tt_gpu_lm_moments_io(tt_gpu_lm *lm, float *m, float *v, bool upload)
{
    const size_t nf = lm->l->n_floats, off = lm->shard_off, len = lm->shard_len;
    float *host[2] = {m, v}, *dev[2] = {lm->m, lm->v};
    for (int i = 0; i < 2; i++) {
        if (!len) {
            TT_CUDA(cudaMemcpy(upload ? (void *)dev[i] : host[i], upload ? (void *)host[i] : dev[i],
                               nf * 4, upload ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost));
            continue;
        }
        if (upload) { /* this rank's shard, zero past n_floats */
            TT_CUDA(cudaMemset(dev[i], 0, len * 4));
            if (off < nf)
                TT_CUDA(cudaMemcpy(dev[i], host[i] + off, (nf - off < len ? nf - off : len) * 4,
                                   cudaMemcpyHostToDevice));
            continue;
        }
#if TT_HAVE_NCCL
        /* every rank's shard gathered into the gradients' array (n_floats + TT_SHARD_SLACK
         * floats, scratch between steps) */
        const tt_nccl *nc = tt_nccl_get();
        nccl_check(nc->all_gather(dev[i], lm->g, len, ncclFloat32, lm->comm, lm->gpu->stream),
                   "the moments' all-gather");
        tt_nccl_wait(lm->comm, lm->gpu->stream, true, lm->rank, lm->world,
                     "the moments' all-gather");
        TT_CUDA(cudaMemcpyAsync(host[i], lm->g, nf * 4, cudaMemcpyDeviceToHost, lm->gpu->stream));
        TT_CUDA(cudaStreamSynchronize(lm->gpu->stream));
#else
        TT_ASSERT(!"built without NCCL");
#endif
    }
}

void tt_gpu_lm_set_comm(tt_gpu_lm *lm, void *comm, int rank, int world)
{
    lm->comm = comm;
    lm->rank = rank;
    lm->world = world;
    lm->slow_wait = true; /* the first step: every rank captures it and times its products */
    static const char *const sums[] = {"fp32", "bf16", NULL};
    if (comm && !lm->gh && tt_env_choice("TT_NCCL_SUMS", sums, 0) == 1) {
        if (lm->es == 2) {
            TT_CUDA(cudaMalloc(&lm->gh, l_floats_slack(lm) * 2));
            lm->bytes += l_floats_slack(lm) * 2;
        } else if (rank == 0) {
            fprintf(stderr, "note: TT_NCCL_SUMS=bf16: this run is not bf16; the sums stay fp32\n");
        }
    }
    if (comm && !lm->comm_ev && tt_env_long("TT_NCCL_BUCKETS", 0, 1, 1)) {
        plan_buckets(lm);
        lm->buckets = true;
    }
}
void tt_gpu_lm_flag(tt_gpu_lm *lm, double flag) { lm->flag = flag; }
void tt_gpu_lm_slow_wait(tt_gpu_lm *lm) { lm->slow_wait = true; }

/* After a Transformer-XL run: the memories it wrote are the next run's. */
static void txl_advance(tt_gpu_lm *lm)
{
    if (!lm->txl) return;
    lm->mlen = txl_next_mlen(lm);
    lm->par ^= 1;
}

void tt_gpu_lm_continue(tt_gpu_lm *lm, bool continues)
{
    if (!continues) lm->mlen = 0;
}

int tt_gpu_lm_memory(const tt_gpu_lm *lm) { return lm->mlen; }

/* rows rows of width d at pitch dl of device memory src in the storage type (es bytes) into
 * out, fp32, rows of d. */
static void rows_to_host(const tt_gpu_lm *lm, const void *src, size_t rows, float *out)
{
    const size_t d = (size_t)lm->l->m.d_model, dl = (size_t)lm->dl;
    void *buf = tt_xmalloc(rows * dl * lm->es);
    TT_CUDA(cudaMemcpy(buf, src, rows * dl * lm->es, cudaMemcpyDeviceToHost));
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < d; c++)
            out[r * d + c] = lm->es == 4 ? ((const float *)buf)[r * dl + c]
                                         : tt_bf16_to_float(((const uint16_t *)buf)[r * dl + c]);
    free(buf);
}

/* A layer's memory is [B][mlen][dl] in the storage type; the host's is [L][B][mlen][D] fp32. */
int tt_gpu_lm_memory_get(tt_gpu_lm *lm, float *out)
{
    if (!lm->txl || !lm->mlen || !out) return lm->txl ? lm->mlen : 0;
    const tt_model_spec *m = &lm->l->m;
    const size_t n = (size_t)lm->batch * lm->mlen;
    TT_CUDA(cudaStreamSynchronize(lm->gpu->stream));
    for (int k = 0; k < m->layers; k++)
        rows_to_host(lm, lm->mem[lm->par][k], n, out + (size_t)k * n * (size_t)m->d_model);
    return lm->mlen;
}

void tt_gpu_lm_memory_set(tt_gpu_lm *lm, const float *mems, int mlen)
{
    const tt_model_spec *m = &lm->l->m;
    TT_ASSERT(lm->txl && mlen >= 0 && mlen <= m->mem_len);
    lm->mlen = mlen;
    if (!mlen) return;
    const size_t d = (size_t)m->d_model, dl = (size_t)lm->dl, n = (size_t)lm->batch * mlen;
    void *buf = tt_xcalloc(n * dl, lm->es); /* the padding columns zero, as the runs leave them */
    for (int k = 0; k < m->layers; k++) {
        const float *x = mems + (size_t)k * n * d;
        for (size_t r = 0; r < n; r++)
            for (size_t c = 0; c < d; c++) {
                if (lm->es == 4) ((float *)buf)[r * dl + c] = x[r * d + c];
                else ((uint16_t *)buf)[r * dl + c] = tt_bf16_from_float(x[r * d + c]);
            }
        TT_CUDA(cudaMemcpy(lm->mem[lm->par][k], buf, n * dl * lm->es, cudaMemcpyHostToDevice));
    }
    free(buf);
}

void tt_gpu_lm_hidden(tt_gpu_lm *lm, float *out)
{
    TT_CUDA(cudaStreamSynchronize(lm->gpu->stream));
    rows_to_host(lm, lm->acts[lm->l->m.layers - 1].x2, (size_t)lm->rows, out);
}

void tt_gpu_lm_run(tt_gpu_lm *lm, const int32_t *inputs, const int32_t *targets,
                   const tt_lm_opts *o, bool grads, tt_lm_result *res)
{
    TT_ASSERT(!lm->npend);
    const double weights = upload_inputs(lm, inputs, targets, o);
    io_up(lm, 0, lm->io_bytes);
    enqueue_run(lm, o, grads, weights);
    txl_advance(lm);
    download_io(lm, IO_SUMS);
    io_sums(lm->io_host, weights, false, res);
}

/* The host owns lr and the bias corrections of step s; tt_grad_norm_guarded writes norm and
 * clip after them, in device memory. Into the io block's host side (its upload is the caller's). */
static void adam_scalars_host(tt_gpu_lm *lm, long s)
{
    const tt_train_spec *t = &lm->spec->train;
    tt_adam_scalars host = {0}; /* norm and clip: tt_grad_norm_guarded's to write */
    tt_adam_scalars_at(&host, t, tt_lr_at(t, s), s);
    memcpy(lm->io_host + IO_SC, &host, sizeof host);
}

/* The gradient's norm the last step's download brought (tt_grad_norm_guarded's). */
static double io_norm(const char *io)
{
    tt_adam_scalars host;
    memcpy(&host, io + IO_SC, sizeof host);
    return host.norm;
}

/* guarded: a training step's, under the io block's step guard (tt_gpu_lm_train_submit's halt) */
static void enqueue_adam(tt_gpu_lm *lm, bool guarded)
{
    const tt_train_spec *t = &lm->spec->train;
    const cudaStream_t st = lm->gpu->stream;
    tt_step_guard *guard = guarded ? lm->guard : NULL;
    tt_grad_norm_guarded(&lm->prog, st, lm->sc, lm->norm_part, lm->g, lm->l->n_floats, t->clip,
                         guard, lm->sums, lm->guard_last);
    const bool pads = lm->adam_pads;
    tt_adam_guarded(&lm->prog, st, lm->w, lm->m, lm->v, lm->es == 4 ? NULL : lm->wc, lm->g,
                    lm->sc, lm->sums, lm->l->n_floats, t, pads ? lm->copy_jobs : NULL,
                    pads ? lm->copy_njobs : 0, guard, 0);
    if (!pads) refresh_padded(lm);
}

double tt_gpu_lm_adam(tt_gpu_lm *lm, long s)
{
    adam_scalars_host(lm, s);
    TT_ASSERT(!lm->npend);
    io_up(lm, IO_SC, IO_SUMS);
    enqueue_adam(lm, false);
    download_io(lm, IO_SC);
    return io_norm(lm->io_host);
}

/* A captured step is valid for the options and the padded counts it was captured with (a rank's
 * seq0 and norm are kernel arguments, as the seed is); the step number is read from device
 * memory, and so are the inputs, the routing and the optimizer's scalars. */
/* What follows a training step's run: several GPUs' reduce, then Adam (sharded or not). */
static void enqueue_step_end(tt_gpu_lm *lm)
{
    if (lm->comm && !lm->buckets) enqueue_reduce(lm); /* else enqueue_run's reduce_rest */
    if (lm->shard_len) enqueue_adam_shard(lm);
    else enqueue_adam(lm, true);
}

static bool same_step_opts(const tt_lm_opts *a, const tt_lm_opts *b)
{
    return a->train == b->train && a->seed == b->seed && a->label_smoothing == b->label_smoothing &&
           a->seq0 == b->seq0 && a->norm == b->norm && !a->weight && !b->weight;
}

/* The graph captured for o and the last batch's counts (*hit), else the slot to capture it into:
 * a free one, or the least recently launched, whose graph the caller destroys. */
static step_graph *graph_for(tt_gpu_lm *lm, const tt_lm_opts *o, bool *hit)
{
    step_graph *lru = NULL;
    for (int i = 0; i < lm->max_graphs; i++) {
        step_graph *sg = &lm->graph[i];
        if (sg->exec && same_step_opts(&sg->opts, o) &&
            !memcmp(&sg->counts, &lm->counts, sizeof lm->counts) && sg->mlen == lm->mlen &&
            sg->par == lm->par) {
            *hit = true;
            return sg;
        }
        if (!lru || (lru->exec && (!sg->exec || sg->used < lru->used))) lru = sg;
    }
    *hit = false;
    return lru;
}

void tt_gpu_lm_train_submit(tt_gpu_lm *lm, const int32_t *inputs, const int32_t *targets,
                            const tt_lm_opts *o, long s, bool halt)
{
    const cudaStream_t st = lm->gpu->stream;
    TT_ASSERT(lm->npend < 2 && (!lm->npend || (!lm->comm && !lm->txl)));
    if (lm->npend) { /* the pending step's download lands in the block in use: fill the other */
        lm->io_slot ^= 1;
        lm->io_host = lm->io_hosts[lm->io_slot];
        route_at(&lm->host_route, lm->io_host + lm->io_route, lm->l, (size_t)lm->rows,
                 (size_t)lm->pad);
    }
    const double weights = upload_inputs(lm, inputs, targets, o);
    adam_scalars_host(lm, s);
    if (lm->comm) /* summed over the ranks after the backward: device memory the graph reads */
        memcpy(lm->io_host + IO_SUMS + 2 * 8, &lm->flag, sizeof lm->flag);
    const tt_step_guard guard = {.halt = halt, .skip = 0, .first_bad = LLONG_MAX};
    memcpy(lm->io_host + IO_GUARD, &guard, sizeof guard);
    io_up(lm, 0, lm->io_bytes);
    if (!lm->graphs || o->weight) {
        lm->reduce_now = true;
        enqueue_run(lm, o, true, weights);
        lm->reduce_now = false;
        enqueue_step_end(lm);
    } else {
        bool hit;
        step_graph *sg = graph_for(lm, o, &hit);
        if (hit) {
            lm->replayed++;
        } else {
            if (sg->exec) TT_CUDA(cudaGraphExecDestroy(sg->exec));
            sg->exec = NULL;
            cudaGraph_t g;
            for (int attempt = 0;; attempt++) {
                TT_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
                lm->reduce_now = true;
                enqueue_run(lm, o, true, weights);
                lm->reduce_now = false;
                enqueue_step_end(lm);
                TT_CUDA(cudaStreamEndCapture(st, &g));
                /* a product met for the first time in the capture has no algorithm yet: the
                 * capture never runs, the products get theirs, and the step is captured again */
                if (!tt_gemm_pending(&lm->gemm)) break;
                TT_ASSERT(attempt < 2); /* settled, every product has its algorithm */
                TT_CUDA(cudaGraphDestroy(g));
                tt_gemm_settle(&lm->gemm);
            }
            TT_CUDA(cudaGraphInstantiate(&sg->exec, g, cudaGraphInstantiateFlagUseNodePriority));
            TT_CUDA(cudaGraphDestroy(g));
            sg->opts = *o;
            sg->counts = lm->counts;
            sg->mlen = lm->mlen;
            sg->par = lm->par;
            lm->captured++;
        }
        sg->used = ++lm->clock;
        TT_CUDA(cudaGraphLaunch(sg->exec, st));
    }
    txl_advance(lm);
#if TT_HAVE_NCCL
    if (lm->comm) { /* a rank that hangs or died ends this one too, in one line */
        char what[48];
        snprintf(what, sizeof what, "step %ld", s);
        tt_nccl_wait(lm->comm, st, lm->slow_wait,
                     lm->rank, lm->world, what);
        lm->slow_wait = false;
    }
#endif
    /* the scalars, the sums and the guard back into this step's block, then its event */
    TT_CUDA(cudaMemcpyAsync(lm->io_host + IO_SC, lm->io + IO_SC, IO_HEAD - IO_SC,
                            cudaMemcpyDeviceToHost, st));
    TT_CUDA(cudaEventRecord(lm->io_done[lm->io_slot], st));
    lm->pend[lm->npend++] = (struct pending_step){
        .slot = lm->io_slot,
        .weights = lm->comm && o->norm > 0 ? o->norm : weights,
    };
}

double tt_gpu_lm_train_result(tt_gpu_lm *lm, tt_lm_result *res)
{
    TT_ASSERT(lm->npend > 0);
    const struct pending_step p = lm->pend[0];
    lm->pend[0] = lm->pend[1];
    lm->npend--;
    TT_CUDA(cudaEventSynchronize(lm->io_done[p.slot]));
    const char *io = lm->io_hosts[p.slot];
    io_sums(io, p.weights, lm->comm != NULL, res);
    tt_step_guard guard;
    memcpy(&guard, io + IO_GUARD, sizeof guard);
    lm->first_bad = guard.first_bad == LLONG_MAX ? -1 : guard.first_bad;
    return io_norm(io);
}

double tt_gpu_lm_train_step(tt_gpu_lm *lm, const int32_t *inputs, const int32_t *targets,
                            const tt_lm_opts *o, long s, tt_lm_result *res)
{
    TT_ASSERT(!lm->npend);
    tt_gpu_lm_train_submit(lm, inputs, targets, o, s, false);
    return tt_gpu_lm_train_result(lm, res);
}

long long tt_gpu_lm_first_bad(const tt_gpu_lm *lm) { return lm->first_bad; }

void tt_gpu_lm_graph_counts(const tt_gpu_lm *lm, long *captured, long *replayed)
{
    *captured = lm->captured;
    *replayed = lm->replayed;
}

void tt_gpu_lm_products(const tt_gpu_lm *lm, long *timed, long *recorded)
{
    tt_gemm_counts(&lm->gemm, timed, recorded);
}

void tt_gpu_lm_retime_products(tt_gpu_lm *lm) { tt_gemm_retime(&lm->gemm); }

/* One step with the profile's marks (enqueue_run's and enqueue_adam's work between them). */
static void profiled_step(tt_gpu_lm *lm, struct prof_marks *pm, const tt_lm_opts *o, double weights)
{
    pm->n = 0;
    pm->in_bwd = false;
    lm->prof = pm;
    mark(lm, TT_PROF_EMBEDDING); /* the start */
    enqueue_run(lm, o, true, weights);
    enqueue_adam(lm, false);
    mark(lm, TT_PROF_OPTIMIZER);
    lm->prof = NULL;
}

/* The op of kernel node `node`: the plan's, where it launches one of the program's kernels (by
 * handle, else by name, both from the driver), else "cuBLAS and others". */
static const char *node_op(const tt_gpu_lm *lm, cudaGraphNode_t node)
{
    static const char other[] = "cuBLAS and others";
    const void *kernel;
    const char *name;
    if (tt_device_kernel_node(node, &kernel, &name) != 0) return other;
    const tt_gpu_program *p = &lm->prog;
    for (int i = 0; i < p->plan.n; i++)
        if (kernel && (const void *)p->kernels[i].fn == kernel) return p->kernels[i].k->op;
    for (int i = 0; name && i < p->plan.n; i++)
        if (!strcmp(name, p->kernels[i].k->name)) return p->kernels[i].k->op;
    return other;
}

/* the most launched first; ties by name */
static int by_count(const void *a, const void *b)
{
    const tt_prof_op *x = a, *y = b;
    return x->n != y->n ? (y->n > x->n) - (y->n < x->n) : strcmp(x->op, y->op);
}

/* A step's graph nodes by kind, and its kernels by op (tt_step_profile). */
static void count_nodes(const tt_gpu_lm *lm, cudaGraph_t g, tt_step_profile *out)
{
    size_t n = 0;
    TT_CUDA(cudaGraphGetNodes(g, NULL, &n));
    cudaGraphNode_t *nodes = tt_xcalloc(n ? n : 1, sizeof *nodes);
    TT_CUDA(cudaGraphGetNodes(g, nodes, &n));
    for (size_t i = 0; i < n; i++) {
        enum cudaGraphNodeType t;
        TT_CUDA(cudaGraphNodeGetType(nodes[i], &t));
        out->kernels += t == cudaGraphNodeTypeKernel;
        out->memsets += t == cudaGraphNodeTypeMemset;
        out->copies += t == cudaGraphNodeTypeMemcpy;
        if (t != cudaGraphNodeTypeKernel) continue;
        const char *op = node_op(lm, nodes[i]);
        int k = 0;
        while (k < out->n_ops && strcmp(out->ops[k].op, op)) k++;
        if (k == out->n_ops) {
            if (k == TT_PROF_MAX_OPS) continue; /* (more ops than a plan has) */
            snprintf(out->ops[k].op, sizeof out->ops[k].op, "%s", op);
            out->n_ops++;
        }
        out->ops[k].n++;
    }
    free(nodes);
    qsort(out->ops, (size_t)out->n_ops, sizeof out->ops[0], by_count);
}

/* one replay of a step's graph, for tt_gpu_median_ms */
typedef struct {
    cudaGraphExec_t exec;
    cudaStream_t stream;
} graph_launch;

static void launch_graph(const void *arg)
{
    const graph_launch *g = arg;
    TT_CUDA(cudaGraphLaunch(g->exec, g->stream));
}

double tt_gpu_lm_replay_ms(tt_gpu_lm *lm, long reps)
{
    const step_graph *last = NULL;
    for (int i = 0; i < lm->max_graphs; i++)
        if (lm->graph[i].exec && (!last || lm->graph[i].used > last->used)) last = &lm->graph[i];
    if (!last) return NAN;
    const graph_launch gl = {last->exec, lm->gpu->stream};
    launch_graph(&gl); /* the first after the host's last step, uncounted */
    return tt_gpu_median_ms(lm->gpu->stream, reps, launch_graph, &gl);
}

void tt_gpu_lm_profile(tt_gpu_lm *lm, const int32_t *inputs, const int32_t *targets,
                       const tt_lm_opts *o, long s, int reps, tt_step_profile *out)
{
    memset(out, 0, sizeof *out);
    struct prof_marks *pm = tt_xcalloc(1, sizeof *pm);
    tt_plan plan;
    char err[1024] = "";
    if (tt_plan_profile_marks(lm->gpu->arch, &plan) != 0 ||
        tt_gpu_program_load_plan(&pm->prog, &plan, lm->gpu, lm->cache, err, sizeof err) != 0)
        tt_panic(__FILE__, __LINE__, "the profile's marks: %s", err);
    TT_CUDA(cudaMalloc((void **)&pm->stamps, TT_PROF_MARKS * sizeof *pm->stamps));
    unsigned long long *stamps = tt_xcalloc(TT_PROF_MARKS, sizeof *stamps);
    const tt_gpu_side *side = lm->side;
    lm->side = NULL; /* one stream: the parts tile the step */
    const cudaStream_t st = lm->gpu->stream;
    const int mlen = lm->mlen, par = lm->par;
    TT_ASSERT(!lm->npend);
    const double weights = upload_inputs(lm, inputs, targets, o);
    adam_scalars_host(lm, s);
    io_up(lm, 0, lm->io_bytes);
    /* once kernel by kernel (a product not met yet is timed then), then captured with the
     * marks and replayed: no launch gaps in the parts */
    profiled_step(lm, pm, o, weights);
    cudaGraph_t g;
    cudaGraphExec_t exec;
    TT_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    profiled_step(lm, pm, o, weights);
    TT_CUDA(cudaStreamEndCapture(st, &g));
    TT_ASSERT(!tt_gemm_pending(&lm->gemm));
    TT_CUDA(cudaGraphInstantiate(&exec, g, 0));
    TT_CUDA(cudaGraphDestroy(g));
    for (int rep = 0; rep <= reps; rep++) { /* the first warms the graph up, uncounted */
        TT_CUDA(cudaGraphLaunch(exec, st));
        TT_CUDA(cudaMemcpyAsync(stamps, pm->stamps, (size_t)pm->n * sizeof *stamps,
                                cudaMemcpyDeviceToHost, st));
        TT_CUDA(cudaStreamSynchronize(st));
        for (int i = 1; rep > 0 && i < pm->n; i++) {
            const double ms = (double)(stamps[i] - stamps[i - 1]) * 1e-6;
            out->ms[pm->role[i]][pm->bwd[i]] += ms / reps;
            out->sum_ms += ms / reps;
        }
    }
    out->parts = pm->n - 1;
    TT_CUDA(cudaGraphExecDestroy(exec));
    /* the same step on one stream without the marks: the parts' sum against it shows what the
     * marks cost (the step as trained differs from both by the side stream's overlap too) */
    TT_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    enqueue_run(lm, o, true, weights);
    enqueue_adam(lm, false);
    TT_CUDA(cudaStreamEndCapture(st, &g));
    TT_ASSERT(!tt_gemm_pending(&lm->gemm));
    count_nodes(lm, g, out);
    TT_CUDA(cudaGraphInstantiate(&exec, g, 0));
    TT_CUDA(cudaGraphDestroy(g));
    const graph_launch gl = {exec, st};
    launch_graph(&gl); /* warms the graph up, uncounted */
    out->one_stream_ms = tt_gpu_median_ms(st, reps, launch_graph, &gl);
    TT_CUDA(cudaGraphExecDestroy(exec));
    lm->mlen = mlen, lm->par = par;
    lm->side = side;
    TT_CUDA(cudaFree(pm->stamps));
    tt_gpu_program_free(&pm->prog);
    free(stamps);
    free(pm);
}
