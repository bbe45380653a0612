/* The cost report against counts worked out by hand for specs/ptb.yaml and specs/txl-ptb.yaml
 * (and the adaptive softmax of specs/wt103.yaml), and a training step's bytes by part for them,
 * for ptb at fp32 with position: key, and for a tiny adaptive embedding and softmax with
 * projections. The arithmetic is in the comments; the expected values are literals, so a change
 * in the counting code cannot move both sides. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "spec.h"

static void load(const char *name, tt_spec *s)
{
    char path[1024], err[1024];
    snprintf(path, sizeof path, "%s/specs/%s", TT_SOURCE_DIR, name);
    if (tt_spec_load(path, s, err, sizeof err) != 0) fail_msg("%s", err);
}

static void assert_close(double got, double want, const char *what)
{
    if (fabs(got - want) > 1e-9 * fabs(want) + 1e-9)
        fail_msg("%s: got %.6f, want %.6f", what, got, want);
}

/* The bytes of a training step that specs/ptb.yaml and specs/txl-ptb.yaml share (the same D, F,
 * L, vocabulary, batch and precision): bf16 (e = 2), rows m = 1024. A linear layer in -> out
 * moves e(m in + in out + m out) forward, e(m out + out in + m in) for d x and e(m out + m in) +
 * 4 in out for d w (fp32): e(3 m in + 3 m out + 2 in out) + 4 in out. */
static void expect_ptb_bytes(const tt_costs *c)
{
    /* embedding: fp32 rows gathered and x0 written, back the same: 2*1024*256*(4+2) */
    assert_close(c->step_bytes[TT_PROF_EMBEDDING], 3145728, "bytes embedding");
    /* LayerNorm, twice a layer: 4 D-wide tensors forward (x, y read; out, sum written) and 4
     * back: 8*2*1024*256 = 4194304; mean and rstd written and read 4*4*1024 = 16384; gain and
     * bias read, gain read back, both gradients written 5*4*256 = 5120. 2*4215808*3 */
    assert_close(c->step_bytes[TT_PROF_LAYERNORM], 25294848, "bytes layernorm");
    /* FFN per layer: W1 and W2, each 2*(786432 + 6451200 + 1075200) + 4*537600 = 18776064; b2
     * 2*1024*256 + 8*256 = 526336; activation, z read and its output written, back d out and
     * the output read and d z written 5*2*1024*2100, b1 read and d b1 written 8*2100: 21520800.
     * 59599264 a layer. */
    assert_close(c->step_bytes[TT_PROF_FFN], 3 * 59599264.0, "bytes ffn");
    /* softmax (tied, full): 256 -> 10000 as a linear layer 2*(786432 + 30720000 + 5120000) +
     * 4*2560000 = 83492864; bias 2*1024*10000 + 8*10000 = 20560000; the loss reads the logits
     * and writes their gradient 2*2*1024*10000 = 40960000 */
    assert_close(c->step_bytes[TT_PROF_SOFTMAX], 145012864, "bytes softmax");
}

static void test_ptb(void **state)
{
    (void)state;
    tt_spec s;
    load("ptb.yaml", &s);
    tt_costs c;
    tt_costs_compute(&s, s.model.vocab, &c);
    /* V 10000, D 256, L 3, R 40, h 2, N 32, F 2100, tied, full softmax */
    assert_close(c.params[TT_C_EMBEDDING], 2560000, "embedding");     /* 10000*256 */
    assert_close(c.params[TT_C_ATTN_QKV], 92160, "qkv");               /* 3 * 3*256*40 */
    assert_close(c.params[TT_C_ATTN_CORE], 240, "core");               /* 3 * 2*40 */
    assert_close(c.params[TT_C_ATTN_POS], 0, "position");
    assert_close(c.params[TT_C_ATTN_O], 786432, "o");                  /* 3 * 32^2*256 */
    assert_close(c.params[TT_C_FFN], 3232668, "ffn");                  /* 3 * (2*256*2100+2100+256) */
    assert_close(c.params[TT_C_LAYERNORM], 3072, "layernorm");         /* 3 * 2 * 2*256 */
    assert_close(c.params[TT_C_SOFTMAX], 10000, "softmax");            /* the bias; weight tied */
    assert_close(c.params_total, 6684572, "total");
    assert_close(c.attn_layer, 30720 + 80 + 262144, "attention layer");
    assert_close(c.paper_ratio, 61440.0 / 30800.0, "paper ratio");     /* 3*2*256*40/(3*256*40+40*2) */
    assert_close(c.mha_layer, 262144, "mha");                          /* 4*256^2 */

    /* FLOPs per token, forward. Causal: 528 visible (i,j) pairs = 32*33/2 and 11440 triples =
     * 32*33*65/6 per sequence of 32. */
    assert_close(c.fwd[TT_F_ATTN_PROJ], 184320, "proj");     /* 3 * 2*3*256*40 */
    assert_close(c.fwd[TT_F_ATTN_SCORE], 89760, "score");    /* 3 * 2*40*(528+11440)/32 */
    assert_close(c.fwd[TT_F_ATTN_MIX], 549120, "mix");       /* 3 * 2*256*11440/32 */
    assert_close(c.fwd[TT_F_FFN], 6451200, "ffn flops");     /* 3 * 2*2*256*2100 */
    assert_close(c.fwd[TT_F_SOFTMAX], 5120000, "softmax");   /* 2*256*10000 */
    assert_close(c.fwd[TT_F_EMBEDDING], 0, "embedding flops");
    assert_close(c.fwd_total, 12394400, "forward");
    assert_close(c.train_total, 37183200, "train");

    /* Activations, bf16, batch 32: rows = 1024. Embedding output 1024*256*2 = 524288. Per layer:
     * FFN hidden 1024*2100*2 = 4300800; three D-wide tensors 3*1024*256*2 = 1572864; LayerNorm
     * statistics 4*1024*4 = 16384; dropout masks 1024*(2100+3*256) = 2936832; layer input and
     * Q|K|V 1024*256*2 + 1024*120*2 = 770048: 9596928, times 3 = 28790784. bf16 logits
     * 1024*10000*2 = 20480000. */
    assert_close(c.act_bytes, 524288 + 28790784 + 20480000, "activations");
    assert_close(c.materialized_t_bytes, 32.0 * 32 * 32 * 32 * 2, "dense T"); /* B*N^3 bf16 */

    /* A training step's bytes (those it shares with txl-ptb in expect_ptb_bytes) */
    expect_ptb_bytes(&c);
    /* qkv, 256 -> 120: 2*(786432 + 368640 + 61440) + 122880 = 2555904, times 3 */
    assert_close(c.step_bytes[TT_PROF_QKV], 7667712, "bytes qkv");
    /* attention: Q|K|V 1024*120 read, cores 2*40 fp32, Wo 32^2*256 = 262144 read, Y 1024*256
     * written; back dY, Q|K|V, cores, Wo read, dQ|dK|dV, d cores and dWo (fp32) written:
     * 2*(3*122880 + 2*262144 + 2*262144) + 4*262144 + 3*4*80 = 3883968, times 3. No T. */
    assert_close(c.step_bytes[TT_PROF_ATTENTION], 11651904, "bytes attention");
    assert_close(c.step_bytes[TT_PROF_O], 0, "bytes o");
    /* Adam: w, g, m, v read, w, m, v written, g read by the norm, bf16 copy: 34 per parameter */
    assert_close(c.step_bytes[TT_PROF_OPTIMIZER], 6684572.0 * 34, "bytes optimizer");
    tt_spec_free(&s);
}

/* ptb at fp32 (e = 4) with position: key: P = Wr pe [32, 40] per layer joins the projections
 * (as its FLOPs do) and the attention reads P and u, v. */
static void test_bytes_fp32_key(void **state)
{
    (void)state;
    tt_spec s;
    load("ptb.yaml", &s);
    s.train.precision = TT_PREC_FP32;
    s.model.position = TT_POS_KEY;
    tt_costs c;
    tt_costs_compute(&s, s.model.vocab, &c);
    /* 2*1024*256*(4+4) */
    assert_close(c.step_bytes[TT_PROF_EMBEDDING], 4194304, "embedding");
    /* qkv 4*1216512 + 122880 = 4988928; P, no d x (pe is a constant): 4*(8192 + 10240 + 1280)
     * + 4*(1280 + 8192) + 4*10240 = 157696; per layer 5146624 */
    assert_close(c.step_bytes[TT_PROF_QKV], 3 * 5146624.0, "qkv");
    /* 4*1417216 + 1048576 + 960; P read twice and its gradient written 3*4*32*40 = 15360; u, v
     * read twice and written 6*4*40 = 960: 6734720 a layer */
    assert_close(c.step_bytes[TT_PROF_ATTENTION], 3 * 6734720.0, "attention");
    /* parameters with key: 6684572 + 3*40*256 + 2*40 = 6715372; fp32: no copy, 32 each */
    assert_close(c.step_bytes[TT_PROF_OPTIMIZER], 6715372.0 * 32, "optimizer");
    tt_spec_free(&s);
}

static void test_txl_ptb(void **state)
{
    (void)state;
    tt_spec s;
    load("txl-ptb.yaml", &s);
    tt_costs c;
    tt_costs_compute(&s, s.model.vocab, &c);
    /* V 10000, D 256, L 3, 8 heads x 32 (256), N 32, M 32, F 2100, batch 32 */
    assert_close(c.params[TT_C_EMBEDDING], 2560000, "embedding");
    assert_close(c.params[TT_C_ATTN_QKV], 589824, "qkv");      /* 3 * 3*256*256 */
    assert_close(c.params[TT_C_ATTN_POS], 197120, "position"); /* 3 * 256*256 + u, v: 2*256 */
    assert_close(c.params[TT_C_ATTN_O], 196608, "o");          /* 3 * 256*256 */
    assert_close(c.params[TT_C_ATTN_CORE], 0, "core");
    assert_close(c.params[TT_C_FFN], 3232668, "ffn");
    assert_close(c.params[TT_C_LAYERNORM], 3072, "layernorm");
    assert_close(c.params[TT_C_SOFTMAX], 10000, "softmax");
    assert_close(c.params_total, 6789292, "total");

    /* Per layer: q 2*256*256 = 131072; k, v over M+N = 64 rows per 32 tokens
     * 2*2*256*256*2 = 524288; r_net over 64 positions once per batch of 1024 tokens
     * 2*64*256*256/1024 = 8192: 663552, times 3 = 1990656. Visible keys per segment:
     * 32*32 + 32*33/2 = 1552. AC and BD: 2*2*256*1552/32 = 49664, times 3 = 148992. PV
     * 2*256*1552/32 = 24832 and Wo 2*256*256 = 131072: 155904, times 3 = 467712. */
    assert_close(c.fwd[TT_F_ATTN_PROJ], 1990656, "proj");
    assert_close(c.fwd[TT_F_ATTN_SCORE], 148992, "score");
    assert_close(c.fwd[TT_F_ATTN_MIX], 467712, "mix");
    assert_close(c.fwd[TT_F_FFN], 6451200, "ffn flops");
    assert_close(c.fwd[TT_F_SOFTMAX], 5120000, "softmax");
    assert_close(c.fwd_total, 14178560, "forward");
    assert_close(c.train_total, 3 * 14178560.0, "train");

    /* Bytes, bf16, rows 1024, A = 256, K = M + N = 64 keys. Projections per layer: qkv 256 ->
     * 768 on the segment 2*(786432 + 2359296 + 393216) + 4*196608 = 7864320; k, v on the
     * memory's 32*32 rows, no d x: 2*(262144 + 131072 + 524288) + 2*(524288 + 262144) +
     * 4*131072 = 3932160; r_net over 64 positions: 2*(16384 + 65536 + 16384) + 2*(16384 +
     * 16384) + 4*65536 = 524288. */
    assert_close(c.step_bytes[TT_PROF_QKV], 3 * 12320768.0, "bytes qkv");
    /* Scores S = B H N K = 32*8*32*64 = 524288 elements per tensor. At bf16 the attention is
     * fused (d_head 32): dS and dBD each written and read (4 e S = 4194304) and each of the
     * 8*1024 rows' log-sum-exp written and read (2 * 4 * 8192 = 65536). The rest: q+u, q+v
     * (1024*256 each), k, v (32*64*256 each), r (64*256) read and o written: 2*(9*262144 +
     * 6*524288 + 3*16384) = 11108352 */
    assert_close(c.step_bytes[TT_PROF_ATTENTION], 3 * (11108352.0 + 4194304 + 65536), "bytes attention");
    /* o_net 256 -> 256: 2*(3*262144 + 3*262144 + 2*65536) + 4*65536 */
    assert_close(c.step_bytes[TT_PROF_O], 3 * 3670016.0, "bytes o");
    expect_ptb_bytes(&c);
    assert_close(c.step_bytes[TT_PROF_OPTIMIZER], 6789292.0 * 34, "bytes optimizer");
    /* At fp32 the attention is unfused: AC, BD written fp32 and read (16 S), P, P' written and P'
     * read (3 e S); back dP' written and read fp32 (8 S), P' and P read, dAC, dBD written and
     * each read twice (8 e S): 68 S = 35651584; the rest 4*5554176 = 22216704. */
    s.train.precision = TT_PREC_FP32;
    tt_costs_compute(&s, s.model.vocab, &c);
    assert_close(c.step_bytes[TT_PROF_ATTENTION], 3 * (35651584.0 + 22216704), "bytes attention fp32");
    tt_spec_free(&s);
}

static void test_adaptive_wt103(void **state)
{
    (void)state;
    tt_spec s;
    load("wt103.yaml", &s);
    tt_costs c;
    tt_costs_compute(&s, s.model.vocab, &c);
    /* div_val 1: one 267735 x 256 embedding, no projections; tied, so the softmax holds the
     * biases (267735) and the cluster weights and biases 3*(256+1). */
    assert_close(c.params[TT_C_EMBEDDING], 267735.0 * 256, "embedding");
    assert_close(c.params[TT_C_SOFTMAX], 267735 + 3 * 257, "softmax");
    /* Zipf share of the tails: (H(267735) - H(20000)) / H(267735), H(n) ~ ln n + 0.5772 */
    const double h = log(267735.0) + 0.5772156649, h20 = log(20000.0) + 0.5772156649;
    if (fabs(c.tail_fraction - (h - h20) / h) > 1e-4) fail_msg("tail share %f", c.tail_fraction);
    /* head: 2*256*(20000+3) for every token; tails: 2*256*|cluster| for their share */
    const double head = 2.0 * 256 * 20003;
    if (!(c.fwd[TT_F_SOFTMAX] > head && c.fwd[TT_F_SOFTMAX] < head + 2.0 * 256 * 247735))
        fail_msg("softmax flops %f", c.fwd[TT_F_SOFTMAX]);
    tt_spec_free(&s);
}

/* An adaptive embedding and softmax with projections, small enough to count by hand: vocabulary
 * 4, cutoffs [2], div_val 2, D 8, rows 4*25 = 100, bf16. Zipf's shares: H_4 = 25/12, ranks 1-2
 * 3/2 of it (0.72), ranks 3-4 7/12 (0.28). */
static void test_bytes_adaptive(void **state)
{
    (void)state;
    tt_spec s;
    load("ptb.yaml", &s);
    tt_model_spec *m = &s.model;
    m->d_model = 8, m->seq_len = 25, m->n_cutoffs = 1, m->cutoffs[0] = 2, m->div_val = 2;
    s.train.batch = 4;
    tt_costs c;
    tt_costs_compute(&s, 4, &c);
    /* the embedding's clusters, each a linear layer from its width to D for its tokens' rows:
     * 72 rows 8 -> 8: 2*(3*72*8 + 3*72*8 + 2*64) + 4*64 = 7424; 28 rows 4 -> 8: 2*(3*28*4 +
     * 3*28*8 + 2*32) + 4*32 = 2272 */
    assert_close(c.step_bytes[TT_PROF_EMBEDDING], 9696, "embedding");
    /* the head on all 100 rows: its projection 8 -> 8 2*(2400 + 2400 + 128) + 256 = 10112, its
     * logits 8 -> 2 words + 1 cluster 2*(2400 + 900 + 48) + 96 = 6792, their bias 2*300 + 24 =
     * 624, the loss 2*2*300 = 1200: 18728. The tail on its 28 rows: projection 8 -> 4 2*(672 +
     * 336 + 64) + 128 = 2272, logits 4 -> 2 2*(336 + 168 + 16) + 32 = 1072, bias 2*56 + 16 =
     * 128, loss 2*2*56 = 224: 3696. */
    assert_close(c.step_bytes[TT_PROF_SOFTMAX], 18728 + 3696, "softmax");
    tt_spec_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ptb),
        cmocka_unit_test(test_txl_ptb),
        cmocka_unit_test(test_adaptive_wt103),
        cmocka_unit_test(test_bytes_fp32_key),
        cmocka_unit_test(test_bytes_adaptive),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
