// What the attention kernels of templates/mla.cu and templates/mla_tc.cu share: the layout of
// the partial sums mla_bwd_q writes and mla_bwd_reduce and mla_bwd_params add up.
// Partials, fp32: [B][IT][N][R] for dK, for dV, and (position: key) for dP, then [B][IT][3][R]
// for dg, du, dv, where IT = ceil(N / TT_TI) row tiles.
#ifdef TT_TI
#define TT_IT ((TT_N + TT_TI - 1) / TT_TI)
#define TT_PART_NR ((size_t)TT_N * TT_R)
#define TT_PART_K(b, it) (part + ((size_t)(b) * TT_IT + (it)) * TT_PART_NR)
#define TT_PART_V(b, it) (part + ((size_t)TT_BATCH_PARTS + (size_t)(b) * TT_IT + (it)) * TT_PART_NR)
#define TT_PART_P(b, it) (part + ((size_t)2 * TT_BATCH_PARTS + (size_t)(b) * TT_IT + (it)) * TT_PART_NR)
#define TT_PART_VEC(b, it) (part + (size_t)(2 + TT_POS_KEY) * TT_BATCH_PARTS * TT_PART_NR + ((size_t)(b) * TT_IT + (it)) * 3 * TT_R)
// TT_BATCH_PARTS is batch * IT; the batch is a launch argument, so the macro reads `batch`.
#define TT_BATCH_PARTS ((size_t)batch * TT_IT)
#endif
