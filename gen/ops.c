/* The kernel ops (see ops.h), in the order a plan lists them. */
#include "ops.h"

#include <string.h>

#define GPU_TEST(fn) "tests/test_gpu_kernels.c:" fn
#define STEP_TEST(fn) "tests/test_gpu_model.c:" fn

const tt_op tt_ops[] = {
    /* LayerNorm (the final one of Transformer-XL's memory-free models, and the tests'); the
     * residual sum fused in front of each post-LN; the column sums of their parameter gradients */
    {"layernorm_fwd", {"layernorm.cu"}, "tt_layernorm_fwd", "cpu_layernorm_fwd", GPU_TEST("test_layernorm")},
    {"layernorm_bwd", {"layernorm.cu"}, "tt_layernorm_bwd", "cpu_layernorm_bwd", GPU_TEST("test_layernorm")},
    {"colsum", {"colsum.cu"}, "tt_layernorm_bwd, tt_residual_ln_bwd", "cpu_layernorm_bwd", "unit"},
    /* the attention: SIMT fp32 math, or bf16 tensor cores */
    {"mla_fwd", {"mla.cu", "mla_tc.cu"}, "tt_mla_fwd", "cpu_mla_fwd", "unit"},
    {"mla_fwd_sum", {NULL, "mla_tc.cu"}, "tt_mla_fwd", "cpu_mla_fwd", "unit"},
    {"mla_bwd_wo", {"mla.cu", "mla_tc.cu"}, "tt_mla_bwd", "cpu_mla_bwd", "unit"},
    {"mla_bwd_wo_sum", {NULL, "mla_tc.cu"}, "tt_mla_bwd", "cpu_mla_bwd", "unit"},
    {"mla_bwd_q", {"mla.cu", "mla_tc.cu"}, "tt_mla_bwd", "cpu_mla_bwd", "unit"},
    {"mla_bwd_reduce", {"mla.cu"}, "tt_mla_bwd", "cpu_mla_bwd", "unit"},
    /* the attention with T materialized (large D): its kernels between cuBLAS's products */
    {"mla_mat_prep", {"mla_mat.cu"}, "tt_mla_mat_fwd, tt_mla_mat_bwd", "cpu_mla_fwd (through T)", "unit"},
    {"mla_mat_t", {NULL, "mla_tc.cu"}, "tt_mla_mat_fwd, tt_mla_mat_bwd", "cpu_mla_fwd (through T)", "unit"},
    {"mla_mat_mask", {"mla_mat.cu"}, "tt_mla_mat_fwd, tt_mla_mat_bwd", "cpu_mla_fwd (through T)", "unit"},
    {"mla_mat_rows", {"mla_mat.cu"}, "tt_mla_mat_fwd, tt_mla_mat_bwd", "cpu_mla_fwd, cpu_mla_bwd (through T)", "unit"},
    {"mla_mat_grads", {"mla_mat.cu"}, "tt_mla_mat_bwd", "cpu_mla_bwd", "unit"},
    {"mla_mat_params", {"mla_mat.cu"}, "tt_mla_mat_bwd", "cpu_mla_bwd", "unit"},
    {"core_fwd", {"core.cu"}, "tt_core_fwd", "cpu_core_fwd", GPU_TEST("test_core")},
    {"core_bwd", {"core.cu"}, "tt_core_bwd", "cpu_core_bwd", GPU_TEST("test_core")},
    /* Transformer-XL's attention between its products */
    {"txl_softmax_fwd", {"txl_softmax.cu"}, "tt_txl_softmax_fwd", "cpu_txl_probs", "unit"},
    {"txl_softmax_bwd", {"txl_softmax.cu"}, "tt_txl_softmax_bwd", "cpu_txl_probs_bwd", "unit"},
    {"txl_attn_fwd", {NULL, "txl_flash.cu"}, "tt_txl_attn_fwd", "cpu_txl_probs, P' V", "unit"},
    {"txl_attn_bwd_q", {NULL, "txl_flash.cu"}, "tt_txl_attn_bwd", "cpu_txl_probs_bwd, dS K, dBD R", "unit"},
    {"txl_attn_bwd_kv", {NULL, "txl_flash.cu"}, "tt_txl_attn_bwd", "P'^T dO, dS^T (q + u)", "unit"},
    {"txl_uv_sum", {NULL, "txl_flash.cu"}, "tt_txl_attn_bwd", "cpu_txl_attn_bwd (du, dv)", "unit"},
    {"txl_pe", {"txl.cu"}, "tt_txl_pe", "cpu_txl_pos_emb, cpu_dropout_fwd", STEP_TEST("test_txl")},
    {"txl_heads_qkv", {"txl.cu"}, "tt_txl_heads_qkv", "cpu_txl_attn_fwd (its heads)", "unit"},
    {"txl_heads", {"txl.cu"}, "tt_txl_heads", "cpu_txl_attn_fwd (its heads)", STEP_TEST("test_txl")},
    {"txl_unheads", {"txl.cu"}, "tt_txl_unheads", "cpu_txl_attn_fwd (its heads)", STEP_TEST("test_txl")},
    {"txl_heads_bwd", {"txl.cu"}, "tt_txl_heads_bwd", "cpu_txl_attn_bwd (its heads)", STEP_TEST("test_txl")},
    {"txl_uv_bwd", {"txl.cu"}, "tt_txl_uv_bwd", "cpu_txl_attn_bwd (du, dv)", STEP_TEST("test_txl")},
    {"txl_dr_sum", {"txl.cu"}, "tt_txl_dr_sum", "cpu_txl_attn_bwd (r_net's gradient)", STEP_TEST("test_txl")},
    /* the word embedding, its sort of (token, row) keys for a deterministic backward */
    {"embedding_fwd", {"embedding.cu"}, "tt_embedding_fwd", "cpu_embedding_row, cpu_dropout_fwd", "unit"},
    {"embedding_sort", {"embedding.cu"}, "tt_embedding_sort", "qsort of the keys", GPU_TEST("test_embedding")},
    {"embedding_bwd", {"embedding.cu"}, "tt_embedding_bwd", "cpu_embedding_row_bwd", GPU_TEST("test_embedding")},
    {"embedding_bwd_sum", {"embedding.cu"}, "tt_embedding_bwd, tt_adaptive_emb_bwd", "cpu_embedding_row_bwd", GPU_TEST("test_embedding")},
    {"residual_ln_fwd", {"layernorm.cu"}, "tt_residual_ln_fwd", "cpu_dropout_fwd, cpu_layernorm_fwd", "unit"},
    {"mla_residual_ln_fwd", {"layernorm.cu"}, "tt_mla_residual_ln_fwd", "the parts' sum rounded, cpu_dropout_fwd, cpu_layernorm_fwd", "unit"},
    {"residual_ln_bwd", {"layernorm.cu"}, "tt_residual_ln_bwd", "cpu_layernorm_bwd, cpu_dropout_bwd", "unit"},
    {"ffn_act_fwd", {"ffn_act.cu"}, "tt_ffn_act_fwd", "cpu_relu_fwd, cpu_dropout_fwd", "unit"},
    {"ffn_act_bwd", {"ffn_act.cu"}, "tt_ffn_act_bwd", "cpu_dropout_bwd, cpu_relu_bwd", "unit"},
    {"bias_colsum", {"colsum.cu"}, "tt_ffn_act_bwd", "cpu_linear_bwd (db1)", "unit"},
    {"xent", {"xent.cu"}, "tt_xent", "cpu_cross_entropy", "unit"},
    {"xent_long", {"xent.cu"}, "tt_xent", "cpu_cross_entropy", GPU_TEST("test_xent")},
    {"xent_sum", {"xent.cu"}, "tt_xent_sum", "the sum in double", GPU_TEST("test_xent")},
    /* the adaptive softmax's tails and the adaptive embedding's clusters */
    {"cluster_cols_fwd", {"cluster_cols.cu"}, "tt_cluster_cols_fwd", "cpu_model.c's output_layer (the head's cluster logits)", "unit"},
    {"cluster_cols_bwd", {"cluster_cols.cu"}, "tt_cluster_cols_bwd", "cpu_model.c's output_layer (their backward)", "unit"},
    {"cluster_cols_sum", {"cluster_cols.cu"}, "tt_cluster_cols_bwd", "the sums in double", "unit"},
    {"adaptive_gather", {"adaptive.cu"}, "tt_adaptive_gather", "a row copy", "unit"},
    {"adaptive_scatter_add", {"adaptive.cu"}, "tt_adaptive_scatter_add", "a row sum", GPU_TEST("test_adaptive")},
    {"adaptive_emb_scatter", {"embedding.cu"}, "tt_adaptive_emb_scatter", "cpu_model.c's embed (adaptive)", GPU_TEST("test_adaptive")},
    {"adaptive_emb_grad", {"embedding.cu"}, "tt_adaptive_emb_grad", "cpu_model.c's embed_bwd (adaptive)", GPU_TEST("test_adaptive")},
    {"adaptive_emb_gather", {"embedding.cu"}, "tt_adaptive_emb_gather", "cpu_model.c's embed (adaptive)", GPU_TEST("test_adaptive")},
    {"adaptive_emb_bwd", {"embedding.cu"}, "tt_adaptive_emb_bwd", "cpu_model.c's embed_bwd (adaptive)", GPU_TEST("test_adaptive")},
    /* the optimizer */
    {"adam", {"adam.cu"}, "tt_adam", "tt_adam_step", "unit"},
    {"grad_norm", {"adam.cu"}, "tt_grad_norm", "tt_clip_grad_norm", GPU_TEST("test_adam")},
    {"cast", {"cast.cu"}, "tt_cast", "tt_bf16_from_float", "unit"},
    {"cast_widen", {"cast.cu"}, "tt_cast_widen", "tt_bf16_to_float", "unit"},
    /* the padded copies of the weights the products read, after every write of the masters */
    {"copy_rows", {"copy.cu"}, "tt_copy_rows", "memcpy of each row", "unit"},
    /* tt-bench --profile's clock readings between the parts of a step (tt_plan_profile_marks) */
    {"prof_mark", {"prof_mark.cu"}, "tt_gpu_lm_profile", "none: a clock reading", "tests/test_bench_cli.c:test_profile"},
};
const int tt_n_ops = (int)(sizeof tt_ops / sizeof *tt_ops);

const tt_op *tt_op_find(const char *op)
{
    for (int i = 0; i < tt_n_ops; i++)
        if (!strcmp(tt_ops[i].op, op)) return &tt_ops[i];
    return NULL;
}
