// What the attention kernels of templates/mla.cu and templates/mla_tc.cu share: the layout of
// the partial sums mla_bwd_q writes and mla_bwd_reduce and mla_bwd_params add up.
// A row tile is TT_TI rows (IT = ceil(N / TT_TI) of them per sequence). mla_tc.cu's mla_bwd_q
// also splits the key positions j of a tile into parts of TT_JS (at most 16; TT_JP parts at
// most, 1 in mla.cu); a tile under the causal mask has only the parts up to its last row
// (TT_NPARTS).
// Partials, fp32, one region after the other (mla_tc.cu under the mask writes the rows of dK
// and dV of the keys and j a tile sees, below its last row, and mla_bwd_reduce reads no others):
//   dK  [B][IT][N][R]        each j of a tile written by the part that owns it
//   dV  [B][IT][JP][N][R]
//   dP  [B][IT][N][R]        (position: key)
//   vec [B][IT][JP][3][R]    dg, du, dv
//   dQ  [B][IT][JP][TI][R]   (mla_tc.cu only, TT_QP: the parts' sums of the tile's rows of dQ)
#ifdef TT_TI
#ifdef TT_JP
#define TT_QP 1 // mla_tc.cu's mla_bwd_q: dQ goes through the partials too
#ifndef TT_JS
#define TT_JS 16
#endif
#else
#define TT_JS 16
#define TT_JP 1
#define TT_QP 0
#endif
#define TT_IT ((TT_N + TT_TI - 1) / TT_TI)
#define TT_PART_NR ((size_t)TT_N * TT_R)
// (b, tile) pairs: the batch is a launch argument, so the macro reads `batch`.
#define TT_BATCH_PARTS ((size_t)batch * TT_IT)
#define TT_PART_BT(b, it) ((size_t)(b) * TT_IT + (it))
#define TT_PART_K(b, it) (part + TT_PART_BT(b, it) * TT_PART_NR)
#define TT_PART_V(b, it, jp) (part + (TT_BATCH_PARTS + TT_PART_BT(b, it) * TT_JP + (jp)) * TT_PART_NR)
#define TT_PART_P(b, it) (part + (TT_BATCH_PARTS * (1 + TT_JP) + TT_PART_BT(b, it)) * TT_PART_NR)
#define TT_PART_VEC0 (part + TT_BATCH_PARTS * (1 + TT_JP + TT_POS_KEY) * TT_PART_NR)
#define TT_PART_VEC(b, it, jp) (TT_PART_VEC0 + (TT_PART_BT(b, it) * TT_JP + (jp)) * 3 * TT_R)
#define TT_PART_Q(b, it, jp) \
    (TT_PART_VEC0 + TT_BATCH_PARTS * TT_JP * 3 * TT_R + (TT_PART_BT(b, it) * TT_JP + (jp)) * TT_TI * TT_R)
// The parts tile it has: its keys j stop at its last row under the mask.
#define TT_NPARTS(it) (!TT_QP ? 1 : TT_CAUSAL ? (min(((it) + 1) * TT_TI, TT_N) + TT_JS - 1) / TT_JS : TT_JP)
#endif
