// ttgen: needs mla_geom.cuh
// Multi-linear attention forward (MODEL.md section 1), fused: T is never written to memory.
//   Y[b,i,:] = sum_{j,k} T[b,i,j,k] Wo[:, j*N + k],  T[i,j,k] = sum_r A_j[i,r] V[k,r] m(i,j,k)
//   A_j[i,r] = g_r Q[i,r] K[j,r]                         (position: none)
//   A_j[i,r] = g_r ((Q+u)[i,r] K[j,r] + (Q+v)[i,r] P[j,r]) (position: key)
// A block owns TT_TI rows i of one sequence and TT_TD output features. For each visible j it forms
// A_j (TT_TI x R), and for each chunk of TT_TK keys k the T tile A_j V_chunk^T (TT_TI x TT_TK) in
// shared memory, then accumulates Y += T_tile Wo_chunk^T in registers. Under the causal mask a row
// tile needs only j, k <= its last row, so the loops stop there: masked tiles are never visited.
// Constants: TT_N, TT_R, TT_D, TT_CAUSAL, TT_POS_KEY, TT_TI, TT_TD, TT_TK, TT_THREADS.
// Layouts (row-major): qkv [B*N, 3R] (Q | K | V, the output of qkv_net), wo [D, N*N] (o_net.weight),
// p [N, R], y [B*N, D]; g, u, v [R] fp32.
// Tunable (ttgen --tune times them; the plan's heuristic otherwise): rows and features per block.
// ttgen: tunable mla_fwd TI 8 16 32
// ttgen: tunable mla_fwd TD 32 64 128
// ttgen: tunable mla_bwd_wo TI 8 16 32
// ttgen: tunable mla_bwd_wo TD 32 64 128
// ttgen: tunable mla_bwd_q TI 8 16 32
// and the threads of the sums of mla_bwd_q's partials (both paths'):
// ttgen: tunable mla_bwd_reduce THREADS 128 256 512 1024

#define TT_WARPS (TT_THREADS / 32)
#define TT_RPT (TT_TI / TT_WARPS) // rows of Y per thread
#define TT_CPT (TT_TD / 32)       // columns of Y per thread
// Odd strides keep the 32 lanes of a warp on 32 different banks.
#define TT_RP (TT_R % 2 ? TT_R : TT_R + 1)
#define TT_KP (TT_TK % 2 ? TT_TK : TT_TK + 1)


#ifdef TT_TK // the kernels that walk keys in tiles of TT_TK
// V rows k0 .. k0+TT_TK-1 of a sequence (zero from kend on) into s_v, by the whole block.
__device__ __forceinline__ void tt_mla_load_v(float (*s_v)[TT_RP], const TT_T *seq, int k0, int kend)
{
    for (int e = threadIdx.x; e < TT_TK * TT_R; e += TT_THREADS) {
        const int kk = e / TT_R, r = e % TT_R;
        s_v[kk][r] = (k0 + kk < kend) ? tt_float(seq[(size_t)(k0 + kk) * 3 * TT_R + 2 * TT_R + r]) : 0.f;
    }
}

// The T tile of key j: s_t[i][kk] = sum_r s_a[i][r] s_v[kk][r] for rows i0.. and keys k0..,
// zero where the causal mask hides (j, k) from row i. By the whole block.
__device__ __forceinline__ void tt_mla_t_tile(float (*s_t)[TT_KP], const float (*s_a)[TT_RP],
                                              const float (*s_v)[TT_RP], int i0, int k0, int j)
{
    for (int e = threadIdx.x; e < TT_TI * TT_TK; e += TT_THREADS) {
        const int i = e / TT_TK, kk = e % TT_TK;
        const int ig = i0 + i, k = k0 + kk;
        float t = 0.f;
        if (!TT_CAUSAL || (j <= ig && k <= ig)) {
#pragma unroll 8
            for (int r = 0; r < TT_R; r++) t += s_a[i][r] * s_v[kk][r];
        }
        s_t[i][kk] = t;
    }
}
#endif

#ifdef TT_OP_MLA_FWD
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ y, const TT_T *__restrict__ qkv, const float *__restrict__ g,
          const TT_T *__restrict__ wo, const TT_T *__restrict__ p, const float *__restrict__ u,
          const float *__restrict__ v)
{
    tt_pdl_begin();
    __shared__ float s_gq[TT_TI][TT_RP];  // g*(Q+u): the factor of K
#if TT_POS_KEY
    __shared__ float s_gqv[TT_TI][TT_RP]; // g*(Q+v): the factor of P
#endif
    __shared__ float s_a[TT_TI][TT_RP];   // A_j
    __shared__ float s_v[TT_TK][TT_RP];   // V rows of the chunk
    __shared__ float s_t[TT_TI][TT_KP];   // T tile
    __shared__ float s_w[TT_TD][TT_KP];   // Wo chunk, [feature][k]
    static_assert(sizeof s_gq + TT_POS_KEY * sizeof s_gq + sizeof s_a + sizeof s_v + sizeof s_t +
                          sizeof s_w == TT_SMEM,
                  "the shared memory the plan counted is what the block declares");

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int i0 = blockIdx.x * TT_TI, d0 = blockIdx.y * TT_TD, b = blockIdx.z;
    const TT_T *seq = qkv + (size_t)b * TT_N * 3 * TT_R;

#if !TT_POS_KEY
    (void)p, (void)u, (void)v;
#endif
    for (int e = tid; e < TT_TI * TT_R; e += TT_THREADS) {
        const int i = e / TT_R, r = e % TT_R;
        const float q = (i0 + i < TT_N) ? tt_float(seq[(size_t)(i0 + i) * 3 * TT_R + r]) : 0.f;
#if TT_POS_KEY
        s_gq[i][r] = g[r] * (q + u[r]);
        s_gqv[i][r] = g[r] * (q + v[r]);
#else
        s_gq[i][r] = g[r] * q;
#endif
    }

    float acc[TT_RPT][TT_CPT];
#pragma unroll
    for (int a = 0; a < TT_RPT; a++)
#pragma unroll
        for (int c = 0; c < TT_CPT; c++) acc[a][c] = 0.f;

    const int ilast = min(i0 + TT_TI, TT_N) - 1;
    const int jend = TT_CAUSAL ? ilast + 1 : TT_N; // j and k both stop here

    for (int j = 0; j < jend; j++) {
        __syncthreads(); // s_gq is ready; s_a of the previous j is no longer read
        const TT_T *kj = seq + (size_t)j * 3 * TT_R + TT_R;
        for (int e = tid; e < TT_TI * TT_R; e += TT_THREADS) {
            const int i = e / TT_R, r = e % TT_R;
            float a = s_gq[i][r] * tt_float(kj[r]);
#if TT_POS_KEY
            a += s_gqv[i][r] * tt_float(p[(size_t)j * TT_R + r]);
#endif
            s_a[i][r] = a;
        }
        for (int k0 = 0; k0 < jend; k0 += TT_TK) {
            tt_mla_load_v(s_v, seq, k0, jend);
            for (int e = tid; e < TT_TD * TT_TK; e += TT_THREADS) {
                const int dd = e / TT_TK, kk = e % TT_TK;
                const bool in = (d0 + dd < TT_D) && (k0 + kk < jend);
                s_w[dd][kk] = in ? tt_float(wo[(size_t)(d0 + dd) * TT_N * TT_N + (size_t)j * TT_N + k0 + kk]) : 0.f;
            }
            __syncthreads();
            tt_mla_t_tile(s_t, s_a, s_v, i0, k0, j);
            __syncthreads();
#pragma unroll 4
            for (int kk = 0; kk < TT_TK; kk++) {
                float w[TT_CPT];
#pragma unroll
                for (int c = 0; c < TT_CPT; c++) w[c] = s_w[lane + 32 * c][kk];
#pragma unroll
                for (int a = 0; a < TT_RPT; a++) {
                    const float t = s_t[warp + TT_WARPS * a][kk];
#pragma unroll
                    for (int c = 0; c < TT_CPT; c++) acc[a][c] += t * w[c];
                }
            }
            __syncthreads(); // s_v, s_w, s_t are refilled next
        }
    }

#pragma unroll
    for (int a = 0; a < TT_RPT; a++) {
        const int i = i0 + warp + TT_WARPS * a;
        if (i >= TT_N) continue;
#pragma unroll
        for (int c = 0; c < TT_CPT; c++) {
            const int d = d0 + lane + 32 * c;
            if (d < TT_D) y[((size_t)b * TT_N + i) * TT_D + d] = tt_store_as<TT_T>(acc[a][c]);
        }
    }
}
#endif

// ---- backward ----------------------------------------------------------------------------------
// Given dY, with T recomputed tile by tile (never stored), in four kernels:
//   mla_bwd_wo     dWo[d, j*N+k] += sum_{b,i} T[b,i,j,k] dY[b,i,d]: a block owns (j, a chunk of k,
//                  a tile of d) and walks every row (b, i) in a fixed order: one writer per element.
//   mla_bwd_q      a block owns (b, a tile of rows i): for each visible j it forms dT = dY Wo_j^T
//                  (masked), da_j = dT V, and from da_j: dQ (its own rows, written once), and
//                  partial sums of dK[j], dV, dP[j], dg, du, dv for its tile, written to `part`.
//   mla_bwd_reduce adds the tiles' partials of dK and dV into dqkv (fixed order), and in the
//                  blocks after those the partials of dP (written) and dg, du, dv (added into),
//                  in fixed order: one launch for both sums.
// No float atomics anywhere: the result does not depend on scheduling. The layout of the
// partials is templates/mla_geom.cuh's (TT_TI = this kernel's row tile).

#ifdef TT_OP_MLA_BWD_WO
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(float *__restrict__ dwo, const TT_T *__restrict__ dy, const TT_T *__restrict__ qkv,
          const float *__restrict__ g, const TT_T *__restrict__ p, const float *__restrict__ u,
          const float *__restrict__ v, int batch)
{
    tt_pdl_begin();
    __shared__ float s_a[TT_TI][TT_RP];
    __shared__ float s_v[TT_TK][TT_RP];
    __shared__ float s_t[TT_TI][TT_KP];
    __shared__ float s_dy[TT_TI][TT_TD + 1];
    static_assert(sizeof s_a + sizeof s_v + sizeof s_t + sizeof s_dy == TT_SMEM,
                  "the shared memory the plan counted is what the block declares");
    static_assert(TT_TK == 32, "a lane owns one key k of a tile");
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int j = blockIdx.x, k0 = blockIdx.y * TT_TK, d0 = blockIdx.z * TT_TD;
#if !TT_POS_KEY
    (void)p, (void)u, (void)v;
#endif
    float acc[TT_TD / TT_WARPS];
#pragma unroll
    for (int a = 0; a < TT_TD / TT_WARPS; a++) acc[a] = 0.f;
    // Under the mask a row i sees (j, k) only when j <= i and k <= i: rows before
    // max(j, k0) contribute nothing, so the walk starts at the tile holding that row.
    const int ifirst = TT_CAUSAL ? (max(j, k0) / TT_TI) * TT_TI : 0;

    for (int b = 0; b < batch; b++) {
        const TT_T *seq = qkv + (size_t)b * TT_N * 3 * TT_R;
        for (int i0 = ifirst; i0 < TT_N; i0 += TT_TI) {
            __syncthreads(); // the previous tile's shared data is no longer read
            for (int e = tid; e < TT_TI * TT_R; e += TT_THREADS) {
                const int i = e / TT_R, r = e % TT_R;
                float a = 0.f;
                if (i0 + i < TT_N) {
                    const float q = tt_float(seq[(size_t)(i0 + i) * 3 * TT_R + r]);
                    const float kj = tt_float(seq[(size_t)j * 3 * TT_R + TT_R + r]);
#if TT_POS_KEY
                    a = g[r] * ((q + u[r]) * kj + (q + v[r]) * tt_float(p[(size_t)j * TT_R + r]));
#else
                    a = g[r] * q * kj;
#endif
                }
                s_a[i][r] = a;
            }
            tt_mla_load_v(s_v, seq, k0, TT_N);
            for (int e = tid; e < TT_TI * TT_TD; e += TT_THREADS) {
                const int i = e / TT_TD, dd = e % TT_TD;
                const bool in = i0 + i < TT_N && d0 + dd < TT_D;
                s_dy[i][dd] = in ? tt_float(dy[((size_t)b * TT_N + i0 + i) * TT_D + d0 + dd]) : 0.f;
            }
            __syncthreads();
            tt_mla_t_tile(s_t, s_a, s_v, i0, k0, j);
            __syncthreads();
            for (int i = 0; i < TT_TI; i++) {
                const float t = s_t[i][lane];
#pragma unroll
                for (int a = 0; a < TT_TD / TT_WARPS; a++) acc[a] += s_dy[i][warp + TT_WARPS * a] * t;
            }
        }
    }
    const int k = k0 + lane;
    if (k < TT_N)
#pragma unroll
        for (int a = 0; a < TT_TD / TT_WARPS; a++) {
            const int d = d0 + warp + TT_WARPS * a;
            if (d < TT_D) dwo[(size_t)d * TT_N * TT_N + (size_t)j * TT_N + k] += acc[a];
        }
}
#endif

#ifdef TT_OP_MLA_BWD_Q
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ dqkv, float *__restrict__ part, const TT_T *__restrict__ dy,
          const TT_T *__restrict__ qkv, const float *__restrict__ g, const TT_T *__restrict__ wo,
          const TT_T *__restrict__ p, const float *__restrict__ u, const float *__restrict__ v,
          int batch)
{
    tt_pdl_begin();
    __shared__ float s_qu[TT_TI][TT_RP]; // Q + u (Q without position: key)
#if TT_POS_KEY
    __shared__ float s_qv[TT_TI][TT_RP]; // Q + v
#endif
    __shared__ float s_a[TT_TI][TT_RP];  // a_j
    __shared__ float s_da[TT_TI][TT_RP]; // da_j
    __shared__ float s_dq[TT_TI][TT_RP];
    __shared__ float s_v[TT_TK][TT_RP];
    __shared__ float s_dy[TT_TI][TT_DC + 1];
    __shared__ float s_w[TT_DC][TT_KP];
    __shared__ float s_dt[TT_TI][TT_KP];
    static_assert(sizeof s_qu * (4 + TT_POS_KEY) + sizeof s_v + sizeof s_dy + sizeof s_w +
                          sizeof s_dt == TT_SMEM,
                  "the shared memory the plan counted is what the block declares");
    static_assert(TT_TK == 32, "a lane owns one key k of a tile (dT's columns, s_w[dd][lane])");
    static_assert(TT_R <= TT_THREADS, "a thread per rank sums dK, dP, dg, du, dv");
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int it = blockIdx.x, i0 = it * TT_TI, b = blockIdx.y;
    const TT_T *seq = qkv + (size_t)b * TT_N * 3 * TT_R;
    float *pk = TT_PART_K(b, it), *pv = TT_PART_V(b, it, 0);
#if TT_POS_KEY
    float *pp = TT_PART_P(b, it);
#else
    (void)p, (void)u, (void)v;
#endif

    for (int e = tid; e < TT_TI * TT_R; e += TT_THREADS) {
        const int i = e / TT_R, r = e % TT_R;
        const float q = (i0 + i < TT_N) ? tt_float(seq[(size_t)(i0 + i) * 3 * TT_R + r]) : 0.f;
#if TT_POS_KEY
        s_qu[i][r] = q + u[r];
        s_qv[i][r] = q + v[r];
#else
        s_qu[i][r] = q;
#endif
        s_da[i][r] = 0.f;
        s_dq[i][r] = 0.f;
    }
    // This block's partials: rows of dK and dP are written once per j; dV accumulates over j.
    for (size_t e = tid; e < TT_PART_NR; e += TT_THREADS) pk[e] = pv[e] = 0.f;
#if TT_POS_KEY
    for (size_t e = tid; e < TT_PART_NR; e += TT_THREADS) pp[e] = 0.f;
#endif
    float vg = 0.f, vu = 0.f, vv = 0.f; // thread r < R: its share of dg, du, dv

    const int ilast = min(i0 + TT_TI, TT_N) - 1;
    const int jend = TT_CAUSAL ? ilast + 1 : TT_N;
    for (int j = 0; j < jend; j++) {
        const TT_T *kj = seq + (size_t)j * 3 * TT_R + TT_R;
        __syncthreads(); // s_qu ready; s_a, s_da of the previous j done with
        for (int e = tid; e < TT_TI * TT_R; e += TT_THREADS) {
            const int i = e / TT_R, r = e % TT_R;
            float a = s_qu[i][r] * tt_float(kj[r]);
#if TT_POS_KEY
            a += s_qv[i][r] * tt_float(p[(size_t)j * TT_R + r]);
#endif
            s_a[i][r] = g[r] * a;
        }
        for (int k0 = 0; k0 < jend; k0 += TT_TK) {
            // dT tile = dY[i0.., :] Wo[:, j*N + k0..]^T over chunks of TT_DC features
            float dt[TT_TI / TT_WARPS];
#pragma unroll
            for (int a = 0; a < TT_TI / TT_WARPS; a++) dt[a] = 0.f;
            for (int dc = 0; dc < TT_D; dc += TT_DC) {
                __syncthreads();
                for (int e = tid; e < TT_TI * TT_DC; e += TT_THREADS) {
                    const int i = e / TT_DC, dd = e % TT_DC;
                    const bool in = i0 + i < TT_N && dc + dd < TT_D;
                    s_dy[i][dd] = in ? tt_float(dy[((size_t)b * TT_N + i0 + i) * TT_D + dc + dd]) : 0.f;
                }
                for (int e = tid; e < TT_DC * TT_TK; e += TT_THREADS) {
                    const int dd = e / TT_TK, kk = e % TT_TK;
                    const bool in = dc + dd < TT_D && k0 + kk < jend;
                    s_w[dd][kk] = in ? tt_float(wo[(size_t)(dc + dd) * TT_N * TT_N + (size_t)j * TT_N + k0 + kk]) : 0.f;
                }
                __syncthreads();
#pragma unroll 4
                for (int dd = 0; dd < TT_DC; dd++) {
                    const float w = s_w[dd][lane];
#pragma unroll
                    for (int a = 0; a < TT_TI / TT_WARPS; a++) dt[a] += s_dy[warp + TT_WARPS * a][dd] * w;
                }
            }
            tt_mla_load_v(s_v, seq, k0, jend);
#pragma unroll
            for (int a = 0; a < TT_TI / TT_WARPS; a++) {
                const int i = warp + TT_WARPS * a, ig = i0 + i, k = k0 + lane;
                const bool vis = ig < TT_N && k < jend && (!TT_CAUSAL || (j <= ig && k <= ig));
                s_dt[i][lane] = vis ? dt[a] : 0.f;
            }
            __syncthreads();
            // da_j[i, r] += sum_k dT[i, k] V[k, r]   (one owner per element)
            for (int e = tid; e < TT_TI * TT_R; e += TT_THREADS) {
                const int i = e / TT_R, r = e % TT_R;
                float s = 0.f;
#pragma unroll 8
                for (int kk = 0; kk < TT_TK; kk++) s += s_dt[i][kk] * s_v[kk][r];
                s_da[i][r] += s;
            }
            // dV[k, r] += sum_i dT[i, k] a_j[i, r]   (this block's partial, one owner)
            for (int e = tid; e < TT_TK * TT_R; e += TT_THREADS) {
                const int kk = e / TT_R, r = e % TT_R;
                if (k0 + kk >= jend) continue;
                float s = 0.f;
#pragma unroll 8
                for (int i = 0; i < TT_TI; i++) s += s_dt[i][kk] * s_a[i][r];
                pv[(size_t)(k0 + kk) * TT_R + r] += s;
            }
        }
        __syncthreads(); // s_da complete for this j
        // a_j[i, r] = g_r ((Q+u)[i,r] K[j,r] + (Q+v)[i,r] P[j,r])
        for (int e = tid; e < TT_TI * TT_R; e += TT_THREADS) {
            const int i = e / TT_R, r = e % TT_R;
            float f = tt_float(kj[r]);
#if TT_POS_KEY
            f += tt_float(p[(size_t)j * TT_R + r]);
#endif
            s_dq[i][r] += g[r] * s_da[i][r] * f;
        }
        if (tid < TT_R) {
            const int r = tid;
            const float kr = tt_float(kj[r]);
#if TT_POS_KEY
            const float pr = tt_float(p[(size_t)j * TT_R + r]);
#endif
            float sk = 0.f, sp = 0.f, sg = 0.f;
            for (int i = 0; i < TT_TI; i++) {
                const float da = s_da[i][r];
                sk += da * s_qu[i][r];
#if TT_POS_KEY
                sp += da * s_qv[i][r];
                sg += da * (s_qu[i][r] * kr + s_qv[i][r] * pr);
#else
                sg += da * s_qu[i][r] * kr;
#endif
            }
            pk[(size_t)j * TT_R + r] = g[r] * sk;
            vg += sg;
#if TT_POS_KEY
            pp[(size_t)j * TT_R + r] = g[r] * sp;
#else
            (void)sp;
#endif
        }
        // du = sum_i g da K_j and dv = sum_i g da P_j: per r, the row sums of da times K_j, P_j
        if (tid < TT_R) {
            const int r = tid;
            float sd = 0.f;
            for (int i = 0; i < TT_TI; i++) sd += s_da[i][r];
            vu += g[r] * sd * tt_float(kj[r]);
#if TT_POS_KEY
            vv += g[r] * sd * tt_float(p[(size_t)j * TT_R + r]);
#endif
        }
        __syncthreads(); // s_da is read above; clear it for the next j
        for (int e = tid; e < TT_TI * TT_R; e += TT_THREADS) s_da[e / TT_R][e % TT_R] = 0.f;
    }
    __syncthreads();
    for (int e = tid; e < TT_TI * TT_R; e += TT_THREADS) {
        const int i = e / TT_R, r = e % TT_R;
        if (i0 + i < TT_N) dqkv[((size_t)b * TT_N + i0 + i) * 3 * TT_R + r] = tt_store_as<TT_T>(s_dq[i][r]);
    }
    if (tid < TT_R) {
        float *vec = TT_PART_VEC(b, it, 0);
        vec[tid] = vg;
        vec[TT_R + tid] = vu;
        vec[2 * TT_R + tid] = vv;
    }
}
#endif

#ifdef TT_OP_MLA_BWD_REDUCE
// dp[j, r] = sum_{b,it} dP partials (written); dg, du, dv [R] += sums of their partials; output e
// of (dP's when position: key, then dg's, du's, dv's), a warp each: lane l adds the partials of
// sequences l, l + 32, ... in order, then the lanes' sums meet in a fixed butterfly: the same bits
// on every run.
__device__ __forceinline__ void tt_mla_bwd_params(float *dp, float *dg, float *du, float *dv,
                                                  const float *__restrict__ part, int batch, int e)
{
    const int lane = threadIdx.x % 32;
#if TT_POS_KEY
    if (e < (int)TT_PART_NR) {
        float s = 0.f;
        for (int b = lane; b < batch; b += 32)
#pragma unroll
            for (int it = 0; it < TT_IT; it++) s += TT_PART_P(b, it)[e];
        s = tt_group_sum<32>(s);
        if (lane == 0) dp[e] = s;
        return;
    }
    e -= (int)TT_PART_NR;
#else
    (void)dp;
#endif
    if (e >= 3 * TT_R) return;
    float s = 0.f;
    for (int b = lane; b < batch; b += 32)
        // (tiles and parts have compile-time bounds: unrolled, the loads are all in flight at once)
#pragma unroll
        for (int it = 0; it < TT_IT; it++)
#pragma unroll
            for (int jp = 0; jp < TT_NPARTS(it); jp++) s += TT_PART_VEC(b, it, jp)[e];
    s = tt_group_sum<32>(s);
    if (lane != 0) return;
    const int which = e / TT_R, r = e % TT_R;
    if (which == 0) dg[r] += s;
#if TT_POS_KEY
    else if (which == 1) du[r] += s;
    else dv[r] += s;
#else
    (void)du, (void)dv;
#endif
}

// dqkv[b, j, R + r] = sum over tiles of the dK partials; dqkv[b, k, 2R + r] = sum over tiles and
// parts of the dV partials; with parts (mla_tc.cu), dqkv[b, i, r] = sum over i's tile's parts
// of the dQ partials. Fixed order. A thread per TT_VEC consecutive r of a row (R a multiple of
// TT_VEC: whole vectors of the partials and of dqkv's rows).
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ dqkv, float *__restrict__ dp, float *__restrict__ dg,
          float *__restrict__ du, float *__restrict__ dv, const float *__restrict__ part, int batch,
          int reduce_blocks)
{
    tt_pdl_begin();
    static_assert(TT_R % TT_VEC == 0, "vectors within a row");
    if ((int)blockIdx.x >= reduce_blocks) { // the parameters' sums, a warp an output
        tt_mla_bwd_params(dp, dg, du, dv, part, batch,
                          (int)(((blockIdx.x - reduce_blocks) * (size_t)TT_THREADS + threadIdx.x) / 32));
        return;
    }
    const size_t e = ((size_t)blockIdx.x * TT_THREADS + threadIdx.x) * TT_VEC;
    if (e >= (size_t)batch * TT_PART_NR) return;
    const int b = (int)(e / TT_PART_NR);
    const size_t jr = e % TT_PART_NR;
    float sk[TT_VEC] = {}, sv[TT_VEC] = {}, x[TT_VEC];
    // mla_tc.cu's tiles under the mask see the keys and j below their last row only, and leave
    // their partials of the others unwritten: key (and j) jr / R is in tiles from it0 on
    const int it0 = TT_QP && TT_CAUSAL ? (int)(jr / TT_R) / TT_TI : 0;
#pragma unroll // (compile-time bounds: the loads are in flight together)
    for (int it = 0; it < TT_IT; it++) {
        if (it < it0) continue;
        tt_load<TT_VEC>(x, TT_PART_K(b, it) + jr);
#pragma unroll
        for (int q = 0; q < TT_VEC; q++) sk[q] += x[q];
#pragma unroll
        for (int jp = 0; jp < TT_NPARTS(it); jp++) {
            tt_load<TT_VEC>(x, TT_PART_V(b, it, jp) + jr);
#pragma unroll
            for (int q = 0; q < TT_VEC; q++) sv[q] += x[q];
        }
    }
    const size_t row = (size_t)b * TT_N + jr / TT_R;
    tt_store<TT_VEC>(dqkv + row * 3 * TT_R + TT_R + jr % TT_R, sk);
    tt_store<TT_VEC>(dqkv + row * 3 * TT_R + 2 * TT_R + jr % TT_R, sv);
#if TT_QP
    const int i = (int)(jr / TT_R), it = i / TT_TI;
    float sq[TT_VEC] = {};
#pragma unroll 4
    for (int jp = 0; jp < TT_NPARTS(it); jp++) {
        tt_load<TT_VEC>(x, TT_PART_Q(b, it, jp) + (size_t)(i % TT_TI) * TT_R + jr % TT_R);
#pragma unroll
        for (int q = 0; q < TT_VEC; q++) sq[q] += x[q];
    }
    tt_store<TT_VEC>(dqkv + row * 3 * TT_R + jr % TT_R, sq);
#endif
}
#endif
