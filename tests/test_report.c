/* The cost report against counts worked out by hand for specs/ptb.yaml and specs/txl-ptb.yaml
 * (and the adaptive softmax of specs/wt103.yaml). The arithmetic is in the comments; the
 * expected values are literals, so a change in the counting code cannot move both sides. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ptb),
        cmocka_unit_test(test_txl_ptb),
        cmocka_unit_test(test_adaptive_wt103),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
