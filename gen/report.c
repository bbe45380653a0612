/* The cost model (see report.h; the README's "Cost model" states each formula). Counts are in
 * double: the largest (FLOPs of a big model) overflow nothing and print exactly below 2^53. */
#include "report.h"

#include <math.h>
#include <string.h>

#include "plan.h"
#include "util.h"

const char *tt_component_name(tt_component c)
{
    static const char *n[TT_C_COUNT] = {"embedding",       "attention.qkv", "attention.core",
                                        "attention.position", "attention.o", "ffn",
                                        "layernorm",       "softmax"};
    return n[c];
}

const char *tt_flop_part_name(tt_flop_part p)
{
    static const char *n[TT_F_COUNT] = {"embedding", "attention.proj", "attention.score",
                                        "attention.mix", "ffn", "softmax"};
    return n[p];
}

/* Share of tokens of rank [a, b) under Zipf's law over a vocabulary of v words. */
static double zipf_share(long a, long b, long v)
{
    double part = 0, all = 0;
    for (long r = v; r >= 1; r--) { /* smallest terms first */
        all += 1.0 / (double)r;
        if (r > a && r <= b) part += 1.0 / (double)r;
    }
    return part / all;
}

/* Device-memory traffic of a training step (tt_costs.step_bytes): what each part must move for
 * the algorithm its kernels run, not what their tiling re-reads through the caches.
 * Conventions: an activation (and its gradient) is e bytes an element, the spec's precision's
 * (2 at bf16, else 4); the products read a weight matrix in e bytes too (at bf16, its bf16 copy);
 * biases, LayerNorm's parameters, the cores and u, v are fp32, as is every parameter's gradient.
 * A product reads its operands and writes its result once (m k + k n + m n elements); an
 * elementwise or normalization kernel reads its inputs and writes its outputs once; a gradient
 * added into counts as written, not read. Layout copies (head-major tiles, gathers and scatters
 * of listed rows, padding, Transformer-XL's memory update) and token ids are not counted. */

/* y = x w^T over m rows (x [m, in], w [out, in]): the forward product, d w = d y^T x (written
 * fp32) and, with dx, d x = d y w. */
static double linear_bytes(double e, double m, double in, double out, int dx)
{
    const double fwd = e * (m * in + in * out + m * out);
    const double dw = e * (m * out + m * in) + 4 * in * out;
    return fwd + dw + (dx ? e * (m * out + out * in + m * in) : 0);
}

/* A bias of n over m rows: read in the forward; its gradient reads d y and writes n. */
static double bias_bytes(double e, double m, double n) { return e * m * n + 4 * 2 * n; }

/* Adaptive embedding and softmax as kimiyoung's AdaptiveEmbedding / ProjectedAdaptiveLogSoftmax
 * with d_embed = d_proj = D. Cluster i holds ranks [lo_i, hi_i) at width D / div_val^i. Their
 * traffic for a step of `rows` rows of e bytes: each cluster's products for the rows it serves,
 * as its FLOPs; the softmax's logits besides (the loss reads them, writes their gradient over
 * them). Without projections the embedding is one table: the gathered fp32 rows and the output,
 * and back, the output's gradient and the rows' (the gradient of a word's rows added in). */
static void adaptive_costs(const tt_model_spec *m, long vocab, double rows, double e, tt_costs *c)
{
    const double d = m->d_model;
    const int nc = m->n_cutoffs; /* tail clusters */
    double emb = 0, out = 0, emb_flops = 0, out_flops = 0, tail = 0, emb_bytes = 0, out_bytes = 0;
    long lo = 0;
    for (int i = 0; i <= nc; i++) {
        const long hi = i < nc ? m->cutoffs[i] : vocab;
        const double vi = (double)(hi - lo);
        double di = d;
        for (int k = 0; k < i; k++) di = floor(di / m->div_val);
        const double share = nc ? zipf_share(lo, hi, vocab) : 1.0;
        const int proj = m->div_val > 1; /* div_val 1: no projections, as D = d_embed */
        emb += vi * di + (proj ? d * di : 0);
        emb_flops += proj ? share * 2 * d * di : 0;
        emb_bytes += proj ? linear_bytes(e, share * rows, di, d, 1) : 0;
        out += vi; /* biases */
        if (!m->tie_weights) out += vi * di + (proj ? d * di : 0);
        if (i == 0) {
            /* The head scores its own words and one logit per tail cluster, for every token. */
            out_flops += 2 * di * (vi + nc) + (proj ? 2 * d * di : 0);
        } else {
            /* A tail is computed only for the tokens whose target falls in it. */
            out_flops += share * (2 * di * vi + (proj ? 2 * d * di : 0));
            tail += share;
        }
        const double r = i ? share * rows : rows, cols = i ? vi : vi + nc;
        out_bytes += (proj ? linear_bytes(e, r, d, di, 1) : 0) + linear_bytes(e, r, di, cols, 1) +
                     bias_bytes(e, r, cols) + 2 * e * r * cols;
        lo = hi;
    }
    if (m->div_val <= 1) emb_bytes = 2 * rows * d * (4 + e);
    out += nc * (d + 1); /* cluster_weight, cluster_bias */
    c->params[TT_C_EMBEDDING] = emb;
    c->params[TT_C_SOFTMAX] = out;
    c->fwd[TT_F_EMBEDDING] = emb_flops;
    c->fwd[TT_F_SOFTMAX] = out_flops;
    c->tail_fraction = tail;
    c->step_bytes[TT_PROF_EMBEDDING] = emb_bytes;
    c->step_bytes[TT_PROF_SOFTMAX] = out_bytes;
}

/* The rest of the step's traffic (conventions above linear_bytes), for rows = B N; per layer:
 * - LayerNorm, twice: x and y read, the output and the sum x + dropout(y) that the backward reads
 *   written, with fp32 mean and rstd; back: d out, the sum, the statistics and the gain read,
 *   d x, d y and the parameters' gradients written.
 * - FFN: W1 and W2 as linear_bytes, b2, and the activation: z = x W1^T and b1 read, its output
 *   written; back, d out and the output (whose sign is the ReLU's) read, d z and d b1 written.
 * - Tensorized attention (MODEL.md section 1): Q|K|V, the cores and Wo read, Y written; back, dY,
 *   Q|K|V, the cores and Wo read, their gradients written; with position: key, P [N, R] and u, v
 *   too. Never T (B N^3), which the fused kernels keep on chip.
 * - Transformer-XL (MODEL.md section 3): the score-sized tensors (B H N (M+N) each) as the
 *   plan's strategy moves them. Unfused (fp32, or heads wider than the fused kernels take): AC
 *   and BD written fp32 and read by the softmax, which writes P and P' (after dropatt) in e;
 *   P' V; back, dP' = dO V^T (fp32), dV = P'^T dO, the softmax's backward (dP' and P read, dAC
 *   and dBD written in e), and dAC's and dBD's products with K, (q + u), r and (q + v). Fused
 *   (templates/txl_flash.cu): only dS and dBD, each written by the backward and read once (by
 *   txl_attn_bwd_q and dR's product), and a row's log-sum-exp in fp32; the rest stays on chip.
 * Optimizer: Adam reads the fp32 weights, gradients and moments and writes the weights and
 * moments (and at bf16 the weights' bf16 copy), after the gradient norm's read of the gradients. */
static void step_bytes(const tt_spec *spec, double rows, double e, tt_costs *c)
{
    const tt_model_spec *m = &spec->model;
    const double d = m->d_model, l = m->layers, n = m->seq_len, f = m->d_inner;
    double *b = c->step_bytes;
    b[TT_PROF_LAYERNORM] = l * 2 * (8 * e * rows * d + 16 * rows + 20 * d);
    b[TT_PROF_FFN] = l * (linear_bytes(e, rows, d, f, 1) + linear_bytes(e, rows, f, d, 1) +
                       bias_bytes(e, rows, d) + 5 * e * rows * f + 8 * f);
    if (m->kind == TT_KIND_TENSORIZED) {
        const double r = m->rank, h = m->cores;
        const int key = m->position == TT_POS_KEY;
        b[TT_PROF_QKV] =
            l * (linear_bytes(e, rows, d, 3 * r, 1) + (key ? linear_bytes(e, n, d, r, 0) : 0));
        b[TT_PROF_ATTENTION] = l * (e * (9 * rows * r + 2 * rows * d + 2 * n * n * d) + 4 * n * n * d +
                            12 * h * r + (key ? 3 * e * n * r + 24 * r : 0));
    } else {
        const double a = (double)m->n_head * m->d_head, mem = m->mem_len, keys = mem + n;
        const double batch = spec->train.batch, scores = batch * m->n_head * n * keys;
        b[TT_PROF_QKV] = l * (linear_bytes(e, rows, d, 3 * a, 1) +
                                (mem > 0 ? linear_bytes(e, batch * mem, d, 2 * a, 0) : 0) +
                                linear_bytes(e, keys, d, a, 0));
        /* the scores' traffic: unfused, every [B H N K] tensor between the products; fused
         * (templates/txl_flash.cu), only dS (written by txl_attn_bwd_kv, read by
         * txl_attn_bwd_q) and dBD (written for dR's product and read by it), and each row's
         * log-sum-exp (written once, read once) */
        const double score_bytes = tt_txl_fuses(spec) ? scores * 4 * e + batch * m->n_head * n * 4 * 2
                                                      : scores * (24 + 11 * e);
        b[TT_PROF_ATTENTION] = l * (e * (9 * rows * a + 6 * batch * keys * a + 3 * keys * a) + score_bytes);
        b[TT_PROF_O] = l * linear_bytes(e, rows, a, d, 1);
    }
    b[TT_PROF_OPTIMIZER] = c->params_total * (4 * 4 + 3 * 4 + 4 + (e == 2 ? 2 : 0));
}

void tt_costs_compute(const tt_spec *spec, long vocab, tt_costs *c)
{
    const tt_model_spec *m = &spec->model;
    memset(c, 0, sizeof *c);
    c->vocab = vocab;
    const double d = m->d_model, l = m->layers, n = m->seq_len, f = m->d_inner;
    const double batch = spec->train.batch, rows = batch * n;
    const double bytes = spec->train.precision == TT_PREC_BF16 ? 2 : 4;
    adaptive_costs(m, vocab, rows, bytes, c);

    c->params[TT_C_FFN] = l * (d * f + f + f * d + d);
    c->params[TT_C_LAYERNORM] = l * 2 * (2 * d);
    c->fwd[TT_F_FFN] = l * 2 * 2 * d * f;

    /* Activations every layer keeps for the backward pass, in elements of the storage type, plus
     * fp32 LayerNorm statistics and one byte per element for each dropout mask. */
    const double drop = m->dropout > 0 ? 1 : 0;
    double act = rows * d * bytes; /* embedding output */
    act += l * (rows * f * bytes + 3 * rows * d * bytes + 4 * rows * 4 + drop * rows * (f + 3 * d));

    if (m->kind == TT_KIND_TENSORIZED) {
        const double r = m->rank, h = m->cores;
        const int key = m->position == TT_POS_KEY;
        /* visible (i,j) pairs and (i,j,k) triples per sequence */
        const double pairs = m->causal ? n * (n + 1) / 2 : n * n;
        const double triples = m->causal ? n * (n + 1) * (2 * n + 1) / 6 : n * n * n;
        c->params[TT_C_ATTN_QKV] = l * 3 * d * r;
        c->params[TT_C_ATTN_CORE] = l * h * r;
        c->params[TT_C_ATTN_POS] = key ? l * r * d + 2 * r : 0;
        c->params[TT_C_ATTN_O] = l * n * n * d;
        c->attn_layer_no_o = 3 * d * r + h * r + (key ? r * d : 0);
        c->attn_layer = c->attn_layer_no_o + n * n * d;
        c->paper_ratio = 3 * h * d * r / (3 * d * r + r * h);
        /* P = Wr pe is computed once per layer and step, shared by the batch */
        c->fwd[TT_F_ATTN_PROJ] = l * (2 * 3 * d * r + (key ? 2 * n * d * r / rows : 0));
        c->fwd[TT_F_ATTN_SCORE] = l * 2 * r * ((key ? 2 : 1) * pairs + triples) / n;
        c->fwd[TT_F_ATTN_MIX] = l * 2 * d * triples / n;
        act += l * (rows * d * bytes + rows * 3 * r * bytes); /* layer input, Q|K|V */
        c->materialized_t_bytes = batch * n * n * n * bytes;
    } else {
        const double hd = (double)m->n_head * m->d_head, mem = m->mem_len;
        c->params[TT_C_ATTN_QKV] = l * 3 * d * hd;
        c->params[TT_C_ATTN_POS] = l * hd * d + 2 * hd;
        c->params[TT_C_ATTN_O] = l * hd * d;
        c->attn_layer_no_o = 3 * d * hd + hd * d;
        c->attn_layer = c->attn_layer_no_o + hd * d;
        /* query i sees the memory and keys 0..i: M + i + 1 of them */
        const double visible = n * mem + n * (n + 1) / 2;
        c->fwd[TT_F_ATTN_PROJ] =
            l * (2 * d * hd + 2 * 2 * d * hd * (mem + n) / n + 2 * (mem + n) * d * hd / rows);
        c->fwd[TT_F_ATTN_SCORE] = l * 2 * 2 * hd * visible / n;
        c->fwd[TT_F_ATTN_MIX] = l * (2 * hd * visible / n + 2 * hd * d);
        const double keys = mem + n, heads = m->n_head;
        act += l * (batch * keys * d * bytes + batch * keys * 3 * hd * bytes /* cat(mem,h), qkv */
                    /* P, fp32, and the dropatt mask; fused: a row's log-sum-exp */
                    + batch * heads * n * (tt_txl_fuses(spec) ? 4 : keys * (4 + (m->dropatt > 0 ? 1 : 0)))
                    + rows * hd * bytes);
        act += l * batch * mem * d * bytes; /* the memory itself */
    }
    c->mha_layer = 4 * d * d;
    /* softmax: logits of the storage type (their gradient overwrites them) of the head for every
     * row, tails for their tokens only */
    const long head = m->n_cutoffs ? m->cutoffs[0] + m->n_cutoffs : vocab;
    act += rows * bytes * ((double)head + c->tail_fraction * (double)(vocab - head + m->n_cutoffs));
    c->act_bytes = act;

    for (int i = 0; i < TT_C_COUNT; i++) c->params_total += c->params[i];
    for (int i = 0; i < TT_F_COUNT; i++) c->fwd_total += c->fwd[i];
    c->train_total = 3 * c->fwd_total;
    /* fp32 weights, gradients, two Adam moments; bf16 adds a working copy of the weights */
    c->state_bytes = c->params_total * (4 * 4 + (bytes == 2 ? 2 : 0));
    step_bytes(spec, rows, bytes, c);
}

const char *tt_prof_role_name(tt_prof_role r)
{
    static const char *const names[TT_PROF_ROLES] = {
        "embedding", "qkv", "attention", "o", "layernorm", "ffn", "softmax", "optimizer"};
    return r < TT_PROF_ROLES ? names[r] : "?";
}

void tt_report_number(double v, char *out, size_t n)
{
    const char *u[] = {"", "K", "M", "G", "T", "P"};
    int i = 0;
    while (fabs(v) >= 1000 && i < 5) {
        v /= 1000;
        i++;
    }
    snprintf(out, n, i ? "%.2f%s" : "%.0f%s", v, u[i]);
}

static double mib(double b) { return b / (1024.0 * 1024.0); }

void tt_report_text(const tt_spec *spec, const tt_costs *c, FILE *f)
{
    const tt_model_spec *m = &spec->model;
    char a[32], b[32];
    if (m->kind == TT_KIND_TENSORIZED)
        fprintf(f, "model: tensorized, %d layers, D %d, R %d, %d core%s, N %d, F %d, vocab %ld%s%s\n",
                m->layers, m->d_model, m->rank, m->cores, m->cores == 1 ? "" : "s", m->seq_len,
                m->d_inner, c->vocab, m->causal ? ", causal" : ", NOT causal",
                m->position == TT_POS_KEY ? ", position: key" : "");
    else
        fprintf(f, "model: transformer-xl, %d layers, D %d, %d heads x %d, N %d, M %d, F %d, vocab %ld\n",
                m->layers, m->d_model, m->n_head, m->d_head, m->seq_len, m->mem_len, m->d_inner,
                c->vocab);
    fprintf(f, "\nparameters\n");
    for (int i = 0; i < TT_C_COUNT; i++) {
        if (c->params[i] == 0) continue;
        fprintf(f, "  %-20s %14.0f  %5.1f%%\n", tt_component_name(i), c->params[i],
                100 * c->params[i] / c->params_total);
    }
    fprintf(f, "  %-20s %14.0f\n", "total", c->params_total);
    tt_report_number(c->attn_layer, a, sizeof a);
    tt_report_number(c->attn_layer_no_o, b, sizeof b);
    fprintf(f, "\nattention, one layer: %s parameters (%s without Wo)", a, b);
    tt_report_number(c->mha_layer, a, sizeof a);
    fprintf(f, "; multi-head attention of width %d: %s\n", m->d_model, a);
    if (m->kind == TT_KIND_TENSORIZED)
        fprintf(f, "  paper's compression ratio 3hDd/(3Dd+Rh), d = R: %.2f (leaves out Wo); "
                   "real ratio with Wo: %.2f\n",
                c->paper_ratio, c->mha_layer / c->attn_layer);
    fprintf(f, "\nFLOPs per token (useful: 2 per multiply-add, masked products not counted)\n");
    for (int i = 0; i < TT_F_COUNT; i++) {
        if (c->fwd[i] == 0) continue;
        tt_report_number(c->fwd[i], a, sizeof a);
        fprintf(f, "  %-20s %10s\n", tt_flop_part_name(i), a);
    }
    tt_report_number(c->fwd_total, a, sizeof a);
    tt_report_number(c->train_total, b, sizeof b);
    fprintf(f, "  %-20s %10s\n  %-20s %10s  (3 x forward)\n", "forward", a, "training step", b);
    if (m->n_cutoffs)
        fprintf(f, "  adaptive softmax tails counted for %.1f%% of tokens (Zipf's law)\n",
                100 * c->tail_fraction);
    fprintf(f, "\nmemory, batch %d (%s)\n", spec->train.batch, tt_precision_name(spec->train.precision));
    fprintf(f, "  activations kept for backward  %10.1f MiB\n", mib(c->act_bytes));
    fprintf(f, "  weights, gradients, Adam       %10.1f MiB\n", mib(c->state_bytes));
    if (m->kind == TT_KIND_TENSORIZED)
        fprintf(f, "  dense T of one layer (N^3 per sequence; the fused kernel writes none) %.1f MiB\n",
                mib(c->materialized_t_bytes));
}

void tt_report_json(const tt_spec *spec, const tt_costs *c, FILE *f)
{
    fprintf(f, "{\"kind\":\"%s\",\"vocab\":%ld,\"batch\":%d,\"precision\":\"%s\",\"parameters\":{",
            tt_kind_name(spec->model.kind), c->vocab, spec->train.batch,
            tt_precision_name(spec->train.precision));
    for (int i = 0; i < TT_C_COUNT; i++) fprintf(f, "\"%s\":%.0f,", tt_component_name(i), c->params[i]);
    fprintf(f, "\"total\":%.0f},\"attention_layer\":{\"params\":%.0f,\"params_without_o\":%.0f,"
               "\"mha_same_width\":%.0f",
            c->params_total, c->attn_layer, c->attn_layer_no_o, c->mha_layer);
    if (spec->model.kind == TT_KIND_TENSORIZED) fprintf(f, ",\"paper_ratio\":%.6g", c->paper_ratio);
    fprintf(f, "},\"flops_per_token\":{");
    for (int i = 0; i < TT_F_COUNT; i++) fprintf(f, "\"%s\":%.17g,", tt_flop_part_name(i), c->fwd[i]);
    fprintf(f, "\"forward\":%.17g,\"train_step\":%.17g,\"adaptive_tail_fraction\":%.6g},",
            c->fwd_total, c->train_total, c->tail_fraction);
    fprintf(f, "\"memory_bytes\":{\"activations\":%.0f,\"state\":%.0f,\"dense_t_one_layer\":%.0f}}",
            c->act_bytes, c->state_bytes, c->materialized_t_bytes);
}
