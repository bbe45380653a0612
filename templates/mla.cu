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

#define TT_WARPS (TT_THREADS / 32)
#define TT_RPT (TT_TI / TT_WARPS) // rows of Y per thread
#define TT_CPT (TT_TD / 32)       // columns of Y per thread
// Odd strides keep the 32 lanes of a warp on 32 different banks.
#define TT_RP (TT_R % 2 ? TT_R : TT_R + 1)
#define TT_KP (TT_TK % 2 ? TT_TK : TT_TK + 1)

#ifdef TT_OP_MLA_FWD
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ y, const TT_T *__restrict__ qkv, const float *__restrict__ g,
          const TT_T *__restrict__ wo, const TT_T *__restrict__ p, const float *__restrict__ u,
          const float *__restrict__ v)
{
    __shared__ float s_gq[TT_TI][TT_RP];  // g*(Q+u): the factor of K
#if TT_POS_KEY
    __shared__ float s_gqv[TT_TI][TT_RP]; // g*(Q+v): the factor of P
#endif
    __shared__ float s_a[TT_TI][TT_RP];   // A_j
    __shared__ float s_v[TT_TK][TT_RP];   // V rows of the chunk
    __shared__ float s_t[TT_TI][TT_KP];   // T tile
    __shared__ float s_w[TT_TD][TT_KP];   // Wo chunk, [feature][k]

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
            for (int e = tid; e < TT_TK * TT_R; e += TT_THREADS) {
                const int kk = e / TT_R, r = e % TT_R;
                s_v[kk][r] = (k0 + kk < jend) ? tt_float(seq[(size_t)(k0 + kk) * 3 * TT_R + 2 * TT_R + r]) : 0.f;
            }
            for (int e = tid; e < TT_TD * TT_TK; e += TT_THREADS) {
                const int dd = e / TT_TK, kk = e % TT_TK;
                const bool in = (d0 + dd < TT_D) && (k0 + kk < jend);
                s_w[dd][kk] = in ? tt_float(wo[(size_t)(d0 + dd) * TT_N * TT_N + (size_t)j * TT_N + k0 + kk]) : 0.f;
            }
            __syncthreads();
            for (int e = tid; e < TT_TI * TT_TK; e += TT_THREADS) {
                const int i = e / TT_TK, kk = e % TT_TK;
                const int ig = i0 + i, k = k0 + kk;
                float t = 0.f;
                if (!TT_CAUSAL || (j <= ig && k <= ig)) {
#pragma unroll 8
                    for (int r = 0; r < TT_R; r++) t += s_a[i][r] * s_v[kk][r];
                }
                s_t[i][kk] = t;
            }
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
