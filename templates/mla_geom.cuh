// The geometry of the attention's kernels (templates/mla.cu and mla_tc.cu), in one place: how
// many (row tile, part of j) tasks the tensor-core kernels run and which task a block is, the
// layout of the partial sums and of the scratch the kernels share, and the shared memory each
// kernel declares. gen/plan.c sizes grids and shared memory with these functions and hands the
// results to the kernels as constants (TT_TASKS, TT_SMEM); gpu/launch.c sizes the scratch and the
// grids; the templates, which get this file pasted in front, index the partials with it and
// static_assert that their own shared arrays and task counts are what the plan computed.
// Valid C and CUDA C++ (as cpu/rng.h): the host includes it, NVRTC compiles it.
#ifndef TT_MLA_GEOM_CUH
#define TT_MLA_GEOM_CUH

#ifdef __CUDACC_RTC__
#define TT_GEOM static constexpr __host__ __device__ __forceinline__
#else
#include <stddef.h>
#define TT_GEOM static inline
#endif

TT_GEOM long tt_geom_cdiv(long a, long b) { return (a + b - 1) / b; }

// --- tasks ------------------------------------------------------------------------------------
// Rows come in tiles of ti; the key positions j of a tile in parts of js. A tile sees all
// ceil(n / js) parts, or under the causal mask those up to its last row.
TT_GEOM int tt_mla_parts(int it, int n, int causal, int ti, int js)
{
    const int last = (it + 1) * ti < n ? (it + 1) * ti : n;
    return causal ? (last + js - 1) / js : (n + js - 1) / js;
}

// The (tile of 16 rows, part of js) tasks of mla_tc.cu's mla_fwd (js 16) and mla_bwd_q: the x of
// their grid. Tasks are numbered from the last tile (the most parts) down.
TT_GEOM long tt_mla_tc_tasks(int n, int causal, int js)
{
    long tasks = 0;
    for (int it = 0; it < (n + 15) / 16; it++) tasks += tt_mla_parts(it, n, causal, 16, js);
    return tasks;
}

// Task x's tile and part, in the order tt_mla_tc_tasks counts them.
TT_GEOM void tt_mla_tc_task(int x, int n, int causal, int js, int *it, int *jp)
{
    int t = (n + 15) / 16 - 1;
    while (x >= tt_mla_parts(t, n, causal, 16, js)) {
        x -= tt_mla_parts(t, n, causal, 16, js);
        t--;
    }
    *it = t;
    *jp = x;
}

// --- the partial sums of mla_bwd_q ------------------------------------------------------------
// fp32, one region after the other, for `batch` sequences of n rows in tiles of ti (IT =
// ceil(n / ti) of them), jp parts of j a tile (1 in mla.cu), rank r:
//   dK  [B][IT][N][R]        each j of a tile written by the part that owns it
//   dV  [B][IT][JP][N][R]
//   dP  [B][IT][N][R]        (position: key)
//   vec [B][IT][JP][3][R]    dg, du, dv
//   dQ  [B][IT][JP][TI][R]   (qp: mla_tc.cu's mla_bwd_q, whose parts each sum a share of the
//                            tile's rows of dQ)
// mla_tc.cu under the mask writes the rows of dK and dV of the keys and j a tile sees, below its
// last row, and mla_bwd_reduce reads no others.
typedef struct {
    long batch, n, r, ti, jp, pos_key, qp;
} tt_mla_parts_layout;

TT_GEOM tt_mla_parts_layout tt_mla_parts_of(long batch, long n, long r, long ti, long jp,
                                            long pos_key, long qp)
{
    tt_mla_parts_layout l = {batch, n, r, ti, jp, pos_key, qp};
    return l;
}
TT_GEOM size_t tt_mla_part_tiles(tt_mla_parts_layout l) { return (size_t)l.batch * tt_geom_cdiv(l.n, l.ti); }
TT_GEOM size_t tt_mla_part_bt(tt_mla_parts_layout l, long b, long it)
{
    return (size_t)b * tt_geom_cdiv(l.n, l.ti) + (size_t)it;
}
TT_GEOM size_t tt_mla_part_k(tt_mla_parts_layout l, long b, long it)
{
    return tt_mla_part_bt(l, b, it) * (size_t)(l.n * l.r);
}
TT_GEOM size_t tt_mla_part_v(tt_mla_parts_layout l, long b, long it, long jp)
{
    return (tt_mla_part_tiles(l) + tt_mla_part_bt(l, b, it) * (size_t)l.jp + (size_t)jp) *
           (size_t)(l.n * l.r);
}
TT_GEOM size_t tt_mla_part_p(tt_mla_parts_layout l, long b, long it)
{
    return (tt_mla_part_tiles(l) * (size_t)(1 + l.jp) + tt_mla_part_bt(l, b, it)) * (size_t)(l.n * l.r);
}
TT_GEOM size_t tt_mla_part_vec0(tt_mla_parts_layout l)
{
    return tt_mla_part_tiles(l) * (size_t)(1 + l.jp + l.pos_key) * (size_t)(l.n * l.r);
}
TT_GEOM size_t tt_mla_part_vec(tt_mla_parts_layout l, long b, long it, long jp)
{
    return tt_mla_part_vec0(l) + (tt_mla_part_bt(l, b, it) * (size_t)l.jp + (size_t)jp) * 3 * (size_t)l.r;
}
TT_GEOM size_t tt_mla_part_q(tt_mla_parts_layout l, long b, long it, long jp)
{
    return tt_mla_part_vec0(l) + tt_mla_part_tiles(l) * (size_t)l.jp * 3 * (size_t)l.r +
           (tt_mla_part_bt(l, b, it) * (size_t)l.jp + (size_t)jp) * (size_t)(l.ti * l.r);
}
// Floats of all of them.
TT_GEOM size_t tt_mla_parts_floats(tt_mla_parts_layout l)
{
    return tt_mla_part_vec0(l) + tt_mla_part_tiles(l) * (size_t)l.jp * 3 * (size_t)l.r +
           (l.qp ? tt_mla_part_tiles(l) * (size_t)l.jp * (size_t)(l.ti * l.r) : 0);
}

// --- the other scratch -------------------------------------------------------------------------
// mla_tc.cu's mla_fwd with more than one part: each part's sums of Y, [JP][B][N][D] fp32, which
// mla_fwd_sum adds up in part order.
TT_GEOM size_t tt_mla_fwd_part(long batch, long n, long d, long jp, long b, long i)
{
    return (((size_t)jp * (size_t)batch + (size_t)b) * (size_t)n + (size_t)i) * (size_t)d;
}
// mla_tc.cu's mla_bwd_wo with s splits of the batch: each split's sums of dWo, [S][D][N*N] fp32,
// which mla_bwd_wo_sum adds into dWo in split order. They follow mla_bwd_q's partials in the
// same buffer (a layer's forward and backward never overlap, so the forward's parts share it).
TT_GEOM size_t tt_mla_wo_split(long n, long d, long split) { return (size_t)split * (size_t)(d * n * n); }

// --- shared memory, bytes ----------------------------------------------------------------------
// Row pitches: fp32 tiles of mla.cu odd (32 lanes on 32 banks), bf16 tiles of mla_tc.cu 8 more
// than a multiple of 16 (the 8 rows an ldmatrix touches on distinct banks).
TT_GEOM long tt_mla_odd(long x) { return x % 2 ? x : x + 1; }
TT_GEOM long tt_mla_tc_sr(long r) { return tt_geom_cdiv(r, 16) * 16 + 8; }

// mla.cu's mla_fwd: g(Q+u), g(Q+v) (position: key), A_j [ti][r]; V [tk][r]; T [ti][tk]; Wo [td][tk].
TT_GEOM long tt_mla_fwd_smem(long ti, long td, long tk, long r, long pos_key)
{
    return 4 * (ti * tt_mla_odd(r) * (pos_key ? 3 : 2) + tk * tt_mla_odd(r) + ti * tt_mla_odd(tk) +
                td * tt_mla_odd(tk));
}
// mla.cu's mla_bwd_wo: A_j [ti][r]; V [tk][r]; T [ti][tk]; dY [ti][td + 1].
TT_GEOM long tt_mla_bwd_wo_smem(long ti, long td, long tk, long r)
{
    return 4 * (ti * tt_mla_odd(r) + tk * tt_mla_odd(r) + ti * tt_mla_odd(tk) + ti * (td + 1));
}
// mla.cu's mla_bwd_q: Q+u, Q+v (position: key), a_j, da_j, dQ [ti][r]; V [tk][r]; dY [ti][dc + 1];
// Wo [dc][tk]; dT [ti][tk].
TT_GEOM long tt_mla_bwd_q_smem(long ti, long tk, long dc, long r, long pos_key)
{
    return 4 * ((4 + pos_key) * ti * tt_mla_odd(r) + tk * tt_mla_odd(r) + ti * (dc + 1) +
                dc * tt_mla_odd(tk) + ti * tt_mla_odd(tk));
}
// mla_tc.cu's mla_fwd (dynamic): V rows [g][npad][sr] and the part's 16 K rows [g][16][sr] of its
// g sequences, then ns slabs of Wo [td][npad + 8].
TT_GEOM long tt_mla_tc_fwd_smem(long n, long r, long g, long td, long ns)
{
    const long npad = tt_geom_cdiv(n, 16) * 16;
    return 2 * (g * (npad + 16) * tt_mla_tc_sr(r) + ns * td * (npad + 8));
}
// mla_tc.cu's mla_fwd on wgmma (WG): the same V and K rows, then, from the next 1024-byte
// boundary, ns slabs of Wo [npad / 16][td][16] (the tensor memory accelerator's boxes) and an
// mbarrier a slab; and 1024 bytes to move the start to such a boundary.
TT_GEOM long tt_mla_wg_fwd_rows_bytes(long n, long r, long g)
{
    const long npad = tt_geom_cdiv(n, 16) * 16;
    return tt_geom_cdiv(2 * g * (npad + 16) * tt_mla_tc_sr(r), 1024) * 1024;
}
TT_GEOM long tt_mla_wg_fwd_smem(long n, long r, long g, long td, long ns)
{
    return tt_mla_wg_fwd_rows_bytes(n, r, g) + 2 * ns * td * (tt_geom_cdiv(n, 16) * 16) + 8 * ns + 1024;
}
// mla_tc.cu's mla_bwd_wo on wgmma (WG, dynamic): three buffers of the tile's dY boxes [td / 64]
// [32][64], then three of its Q [32][sr], V [16][sr] and K [w][sr] rows, three mbarriers, and
// 1024 bytes to move the start to the swizzle's boundary.
TT_GEOM long tt_mla_wg_bwd_wo_smem(long r, long w, long td)
{
    return 1024 + 3 * 2 * (td / 64 * 32 * 64 + (32 + 16 + w) * tt_mla_tc_sr(r)) + 3 * 8;
}
// mla_tc.cu's mla_bwd_wo (static): three buffers of the tile's 32 Q rows [sr], 32 dY rows
// [td + 8], 16 V rows and the block's w K rows [sr].
TT_GEOM long tt_mla_tc_bwd_wo_smem(long r, long w, long td)
{
    return 3 * 2 * ((32 + 16 + w) * tt_mla_tc_sr(r) + 32 * (td + 8));
}
// mla_tc.cu's mla_bwd_q (dynamic): three slabs of Wo [dpad][24]; per warp g K_j and dK~ of the
// part's js key positions [js][rpad] fp32 and two tiles of V rows [16][sr].
TT_GEOM long tt_mla_tc_bwd_q_slabs(long d) { return 3 * 2 * tt_geom_cdiv(d, 16) * 16 * 24; }
TT_GEOM long tt_mla_tc_bwd_q_warp(long r, long js)
{
    return 2 * js * tt_geom_cdiv(r, 16) * 16 * 4 + 2 * 16 * tt_mla_tc_sr(r) * 2;
}
TT_GEOM long tt_mla_tc_bwd_q_smem(long r, long d, long js, long g)
{
    return tt_mla_tc_bwd_q_slabs(d) + g * tt_mla_tc_bwd_q_warp(r, js);
}
// Its wgmma variant (WG): three slabs [dpad][16] (the tensor memory accelerator's boxes, no
// padding) from a 1024-byte boundary, the same per warp, three mbarriers, and 1024 bytes to move
// the start to the boundary.
TT_GEOM long tt_mla_wg_bwd_q_slabs(long d) { return 3 * 2 * tt_geom_cdiv(d, 16) * 16 * 16; }
TT_GEOM long tt_mla_wg_bwd_q_smem(long r, long d, long js, long g)
{
    return 1024 + tt_mla_wg_bwd_q_slabs(d) + g * tt_mla_tc_bwd_q_warp(r, js) + 3 * 8;
}

// --- in the kernels: the partials of this instance -----------------------------------------------
// A row tile is TT_TI rows (TT_IT tiles a sequence). mla_tc.cu's mla_bwd_q also splits the key
// positions j of a tile into parts of TT_JS (TT_JP parts at most; TT_NPARTS(it) of tile it) and
// sums dQ through the partials (TT_QP); mla.cu's kernels have one part a tile. The batch is a
// launch argument: the macros read `batch`.
#if defined(__CUDACC_RTC__) && defined(TT_TI)
#ifdef TT_JP
#define TT_QP 1
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
#define TT_PARTS tt_mla_parts_of(batch, TT_N, TT_R, TT_TI, TT_JP, TT_POS_KEY, TT_QP)
#define TT_PART_K(b, it) (part + tt_mla_part_k(TT_PARTS, b, it))
#define TT_PART_V(b, it, jp) (part + tt_mla_part_v(TT_PARTS, b, it, jp))
#define TT_PART_P(b, it) (part + tt_mla_part_p(TT_PARTS, b, it))
#define TT_PART_VEC(b, it, jp) (part + tt_mla_part_vec(TT_PARTS, b, it, jp))
#define TT_PART_Q(b, it, jp) (part + tt_mla_part_q(TT_PARTS, b, it, jp))
#define TT_NPARTS(it) (TT_QP ? tt_mla_parts(it, TT_N, TT_CAUSAL, TT_TI, TT_JS) : 1)
#endif

#endif
